"""The SageMaker entry point as two hosts on one machine: real Ray nodes, real entry point processes.

`codefu_helpers.launch.simulate` gives each host SageMaker's files (resourceconfig.json, a failure file) and runs
`python -m codefu_helpers.launch.entrypoint` for it; the hosts' Ray nodes listen on loopback addresses with ports
of their own and are stopped by process group, so no other Ray on the machine is touched. Until the distributed
trainer exists the head trains in one process (trainer.nnodes=1): these tests check the bootstrap (both hosts are
live Ray nodes before training starts), the head's training output, the worker leaving when the head is done,
and the failure of a host that never comes up.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _ray_processes_of(temp_marker: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if temp_marker in line]


def test_head_and_worker_ray_commands(tmp_path):
    from codefu_helpers.launch.cluster import RayNode

    head = RayNode(host="algo-1", ip="10.0.0.1", port=6379, head=True, log_path=tmp_path / "h.log")
    worker = RayNode(host="algo-2", ip="10.0.0.2", port=6379, head=False, head_ip="10.0.0.1", log_path=tmp_path / "w.log")
    h, w = head.command(), worker.command()
    assert h[1:3] == ["start", "--block"] and "--head" in h and "--address" not in h
    assert h[h.index("--include-dashboard") + 1] == "true" and h[h.index("--metrics-export-port") + 1] == "8080"
    assert w[w.index("--address") + 1] == "10.0.0.1:6379" and "--head" not in w
    assert w[w.index("--node-name") + 1] == "algo-2" and '{"host:algo-2": 1}' in w


def test_resource_config_and_host_count_errors_are_clear(tmp_path):
    from codefu_helpers.launch.entrypoint import parse_args, read_resource_config, training_config

    path = tmp_path / "resourceconfig.json"
    path.write_text(json.dumps({"current_host": "algo-3", "hosts": ["algo-1", "algo-2"]}))
    with pytest.raises(SystemExit, match="current_host='algo-3'"):
        read_resource_config(path)
    args = parse_args(["--config", str(REPO / "configs" / "ci_tiny.yaml"), "--output-dir", str(tmp_path),
                       "--checkpoint-dir", str(tmp_path / "ck"), "--set", "trainer.nnodes=2"])
    with pytest.raises(SystemExit, match="trainer.nnodes=2 but the job has 1 host"):
        training_config(args, n_hosts=1)
    cfg = training_config(args, n_hosts=2)
    assert cfg.trainer.output_dir == str(tmp_path) and cfg.checkpoint.dir == str(tmp_path / "ck")


@pytest.fixture(scope="module")
def two_hosts(tmp_path_factory, easy_python_rows):
    from codefu_helpers.launch.simulate import simulate

    _, train_path = easy_python_rows
    out = tmp_path_factory.mktemp("sim")
    summary = simulate(str(REPO / "configs" / "ci_tiny.yaml"), out, hosts=2, join_timeout=420, timeout=1500,
                       dashboard=False,  # a lighter head start on a small CI machine; SageMaker's head serves it
                       overrides=[f"data.train_path={train_path}", "data.val_path=null", "trainer.test_freq=0",
                                  "trainer.total_steps=1", "data.max_response_length=32", "rollout.n=2",
                                  "tracking.backend=none", "trainer.nnodes=1"])
    return out, summary


@pytest.mark.slow
def test_two_hosts_form_one_ray_cluster_and_the_head_trains(two_hosts):
    out, summary = two_hosts
    logs = {h: (out / "hosts" / h / "entrypoint.log").read_text()[-3000:] for h in summary["started_hosts"]}
    assert summary["exit_codes"] == {"algo-1": 0, "algo-2": 0}, (summary, logs)
    assert summary["failures"] == {}
    cluster = json.loads((out / "cluster.json").read_text())
    assert cluster["joined"] == ["algo-1", "algo-2"] and cluster["head"] == "algo-1"
    assert (out / "model" / "config.json").exists() and any((out / "model").glob("*.safetensors"))
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1]
    assert "the head is done; leaving" in logs["algo-2"]


@pytest.mark.slow
def test_the_simulation_leaves_no_ray_process_behind(two_hosts):
    out, summary = two_hosts
    assert summary["exit_codes"], summary
    leftovers = _ray_processes_of(str(out)) + _ray_processes_of("cfray-")
    assert leftovers == [], leftovers


@pytest.mark.slow
def test_a_host_that_never_starts_fails_the_job_naming_it(tmp_path):
    from codefu_helpers.launch.simulate import simulate

    join_timeout = 45
    summary = simulate(str(REPO / "configs" / "ci_tiny.yaml"), tmp_path, hosts=2, start_hosts=1,
                       join_timeout=join_timeout, timeout=600, dashboard=False)
    assert summary["exit_codes"] == {"algo-1": 2}, summary
    failure = summary["failures"]["algo-1"]
    assert "algo-2 never joined" in failure and f"after {join_timeout} s" in failure
    # the head gives up at the join timeout (plus its own start-up), not at some later default
    assert summary["host_seconds"]["algo-1"] < join_timeout + 400
    assert not (tmp_path / "model").exists()
