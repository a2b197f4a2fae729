"""The SageMaker entry point as two hosts on one machine: real Ray nodes, real entry point processes.

`codefu_helpers.launch.simulate` gives each host SageMaker's files (resourceconfig.json, a failure file) and runs
`python -m codefu_helpers.launch.entrypoint` for it; the hosts' Ray nodes listen on loopback addresses with ports
of their own and are stopped by process group, so no other Ray on the machine is touched. These tests check the
bootstrap (both hosts are live Ray nodes before training starts), training with the controller on the head and an
FSDP2 worker on each host (rows carry `ray_nodes` = 2), the worker host's checkpoint shard reaching the head, a
restarted job resuming from that checkpoint, the worker host leaving when the head is done, and the failure of a
host that never comes up.
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


def _logs(out: Path, summary: dict) -> dict[str, str]:
    return {h: (out / "hosts" / h / "entrypoint.log").read_text() for h in summary["started_hosts"]}


@pytest.fixture(scope="module")
def two_hosts(tmp_path_factory, easy_python_rows):
    """A 2-host job that trains one step with a worker on each host, then the same job restarted (as SageMaker restarts
    a Spot-interrupted job) with two steps to go: it resumes from the first job's checkpoint."""
    from codefu_helpers.launch.simulate import simulate

    _, train_path = easy_python_rows
    out = tmp_path_factory.mktemp("sim")
    common = dict(hosts=2, join_timeout=420, timeout=1500,
                  dashboard=False)  # a lighter head start on a small CI machine; SageMaker's head serves it
    overrides = [f"data.train_path={train_path}", "data.val_path=null", "trainer.test_freq=0",
                 "data.max_response_length=32", "rollout.n=2", "algorithm.ppo_micro_batch_size=1",
                 "tracking.backend=none", "trainer.nnodes=2", "trainer.gpus_per_node=1"]
    first = simulate(str(REPO / "configs" / "ci_tiny.yaml"), out, overrides=overrides + ["trainer.total_steps=1"],
                     **common)
    first_logs = _logs(out, first)
    second = simulate(str(REPO / "configs" / "ci_tiny.yaml"), out, overrides=overrides + ["trainer.total_steps=2"],
                      **common)
    return out, (first, first_logs), (second, _logs(out, second))


@pytest.mark.slow
def test_two_hosts_form_one_ray_cluster_and_train_with_a_worker_on_each(two_hosts):
    out, (summary, logs), _ = two_hosts
    tails = {h: text[-3000:] for h, text in logs.items()}
    assert summary["exit_codes"] == {"algo-1": 0, "algo-2": 0}, (summary, tails)
    assert summary["failures"] == {}
    assert summary["cluster"]["joined"] == ["algo-1", "algo-2"] and summary["cluster"]["head"] == "algo-1"
    # the controller runs on the head; Ray placed one FSDP2 worker on each host's node
    assert "workers: rank 0 on algo-1, rank 1 on algo-2" in logs["algo-1"], tails["algo-1"]
    assert "step 1/1" in logs["algo-1"] and "the head is done; leaving" in logs["algo-2"]
    checkpoint = out / "checkpoints" / "step_000001"
    # rank 1 wrote its shard on algo-2 and shipped it to the head (no disk is shared between SageMaker hosts)
    assert sorted(p.name for p in (checkpoint / "dcp").iterdir()) == [".metadata", "__0_0.distcp", "__1_0.distcp"]
    assert sorted(p.name for p in (checkpoint / "rng").iterdir()) == ["rank_00000.pt", "rank_00001.pt"]
    assert json.loads((checkpoint / "trainer_state.json").read_text())["world_size"] == 2


@pytest.mark.slow
def test_a_restarted_two_host_job_resumes_from_its_checkpoint(two_hosts):
    out, (first, _), (summary, logs) = two_hosts
    tails = {h: text[-3000:] for h, text in logs.items()}
    assert summary["exit_codes"] == {"algo-1": 0, "algo-2": 0}, (summary, tails)
    assert "saved by 2 worker(s), continuing on 2" in logs["algo-1"] and "step 2/2" in logs["algo-1"], tails["algo-1"]
    assert "step 1/2" not in logs["algo-1"]
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [(r["step"], r["world_size"], r["ray_nodes"]) for r in rows] == [(1, 2, 2), (2, 2, 2)]
    # ray_nodes is the number of hosts the workers were placed on, as the head's placement line names them
    placement = next(line for line in logs["algo-1"].splitlines() if line.startswith("workers: "))
    assert rows[-1]["ray_nodes"] == len({part.rsplit(" on ", 1)[1] for part in placement[9:].split(", ")})
    assert (out / "model" / "config.json").exists() and any((out / "model").glob("*.safetensors"))
    print(f"2 simulated hosts: joined in {first['cluster']['join_seconds']} s and {summary['cluster']['join_seconds']} "
          f"s; whole jobs {first['seconds']} s (1 step) and {summary['seconds']} s (resume + 1 step)")


@pytest.mark.slow
def test_the_simulation_leaves_no_ray_process_behind(two_hosts):
    out, (first, _), (second, _) = two_hosts
    assert first["exit_codes"] and second["exit_codes"], (first, second)
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
