"""The SageMaker job as the platform runs it, on one machine (`codefu_helpers.launch.simulate`): per-host disks, the
SDK's driver script as PID 1 of each host's PID namespace, checkpoints synced to a local S3 (moto) the way SageMaker
syncs them, interruptions and restarts.

The spot run is the issue's acceptance command: 2 hosts, ci_tiny, 4 steps, SIGTERM to every host once step 2 is
logged, restart on fresh disks restored from S3; every step is logged once (the stop saved the step in progress) and
the model SageMaker would upload loads. The upload run loses the job while a checkpoint uploads (its completeness
marker in S3, its files not): the restart passes over that checkpoint for the last complete one. Hosts have no
bubblewrap (the stock DLC has none): the job's `CODEFU_JUDGE_ISOLATION=auto` takes the container tier. The
SIGTERM control runs the SDK's own driver template in a PID namespace with and without `exec`: without it, the
shell that is PID 1 drops SIGTERM and nothing would save.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CI_TINY = str(REPO / "configs" / "ci_tiny.yaml")


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
    path.write_text(json.dumps({"current_host": "algo-1", "hosts": ["algo-1", "algo-2"],
                                "network_interface_name": "eth0"}))
    assert read_resource_config(path).interface == "eth0"
    args = parse_args(["--config", CI_TINY, "--output-dir", str(tmp_path), "--checkpoint-dir", str(tmp_path / "ck"),
                       "--set", "trainer.nnodes=2"])
    with pytest.raises(SystemExit, match="trainer.nnodes=2 but the job has 1 host"):
        training_config(args, n_hosts=1)
    cfg = training_config(args, n_hosts=2)
    assert cfg.trainer.output_dir == str(tmp_path) and cfg.checkpoint.dir == str(tmp_path / "ck")


def test_the_interface_sagemaker_names_is_pinned_for_nccl_and_gloo(monkeypatch):
    from codefu_helpers.launch.entrypoint import pin_interface

    monkeypatch.delenv("NCCL_SOCKET_IFNAME", raising=False)
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "custom0")  # the job's own setting wins
    assert pin_interface("lo", log=lambda m: None) == {"NCCL_SOCKET_IFNAME": "lo"}
    import os

    assert os.environ["NCCL_SOCKET_IFNAME"] == "lo" and os.environ["GLOO_SOCKET_IFNAME"] == "custom0"
    with pytest.raises(SystemExit, match="names network interface 'ens999', which this host does not have"):
        pin_interface("ens999")


def test_a_host_still_sees_the_environment_it_runs_from_when_that_lives_under_tmp(tmp_path, monkeypatch):
    """A clone under /tmp (CI may put one there): the host's own /tmp would hide its Python and the repository
    ('exec: python: not found' on every host), so those folders are bound back in; one inside another once."""
    from codefu_helpers.launch import simulate

    assert str(tmp_path).startswith("/tmp/")
    clone, cache = tmp_path / "clone", tmp_path / "cache"
    (clone / ".venv").mkdir(parents=True)
    cache.mkdir()
    monkeypatch.setattr(simulate, "ROOT", clone)
    monkeypatch.setattr(simulate.sys, "prefix", str(clone / ".venv"))
    assert simulate._kept_under_tmp({"CODEFU_CACHE": str(cache), "HF_HOME": "/root/.cache/hf"}) == \
        [str(cache), str(clone)]
    monkeypatch.setattr(simulate, "ROOT", Path("/work/repo"))
    assert simulate._kept_under_tmp({}) == [str(clone / ".venv")]


def test_caches_go_to_the_candidate_with_the_most_room_and_a_set_variable_is_kept(tmp_path):
    """On a host, the candidate folders are the job's volume and the root disk's /tmp and HOME; here a 4 MiB tmpfs
    stands for the small root disk beside this machine's disk."""
    from codefu_helpers.launch.disks import CACHE_VARIABLES, place_caches

    small, volume = tmp_path / "small", tmp_path / "volume"
    small.mkdir(), volume.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(small)], check=True)
    try:
        env = {"HF_HOME": "/elsewhere/hf"}
        placed = place_caches((str(small), str(volume), str(tmp_path / "missing")), environ=env, log=lambda m: None)
    finally:
        subprocess.run(["umount", str(small)], check=True)
    root = volume / "codefu-cache"
    assert placed["root"] == str(root) and placed["kept"] == {"HF_HOME": "/elsewhere/hf"}
    assert env["HF_HOME"] == "/elsewhere/hf" and set(placed["set"]) == set(CACHE_VARIABLES) - {"HF_HOME"}
    assert all(Path(env[name]).is_dir() and Path(env[name]).parent == root for name in placed["set"])
    assert placed["free_gb_by_candidate"][str(small)] <= 0.01 and placed["free_gb_by_candidate"][str(tmp_path / "missing")] == 0
    with pytest.raises(SystemExit, match="no place for the job's caches"):
        place_caches((str(tmp_path / "missing"),), environ={}, log=lambda m: None)


def test_host_names_are_resolved_with_retries_until_a_deadline(tmp_path):
    """A host whose name the cluster's DNS learns late is waited for; one that never appears fails with the wait."""
    from codefu_helpers.launch.entrypoint import resolve_host

    started = time.monotonic()
    with pytest.raises(SystemExit, match=r"cannot resolve host 'algo-9.invalid' after \d+ attempts in 2 s"):
        resolve_host("algo-9.invalid", {}, timeout=2, log=lambda m: None, poll=0.3)
    assert 1.5 < time.monotonic() - started < 15
    # a name that appears after 1.5 s, in a mount namespace whose /etc/hosts this test writes
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 localhost\n")
    script = (f"import threading, time, sys; sys.path.insert(0, {str(REPO)!r})\n"
              "from codefu_helpers.launch.entrypoint import resolve_host\n"
              f"threading.Timer(1.5, lambda: open({str(hosts)!r}, 'a').write('127.0.0.7 algo-7\\n')).start()\n"
              "t = time.monotonic(); ip = resolve_host('algo-7', {}, timeout=30, poll=0.2)\n"
              "print(ip, round(time.monotonic() - t, 1))\n")
    out = subprocess.run(["unshare", "--mount", "--propagation", "private", "--", "bash", "-c",
                          f"mount --bind {hosts} /etc/hosts && exec {sys.executable} -c \"$0\"", script],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    ip, waited = out.stdout.split()[-2:]
    assert ip == "127.0.0.7" and float(waited) >= 1.4


@pytest.mark.parametrize("command, reaches", [("python3 -c \"$PROBE\"", False), ("exec python3 -c \"$PROBE\"", True)],
                         ids=["sdk-driver-as-pid-1-drops-it", "exec-makes-the-entry-point-pid-1"])
def test_sigterm_to_pid_1_reaches_the_command_only_when_it_is_execd(tmp_path, command, reaches):
    """The SDK's own driver template (sagemaker.train.templates) run as SageMaker runs it: ContainerEntrypoint +
    ContainerArguments (`bash -c "chmod +x sm_train.sh && sm_train.sh"`) as PID 1 of a new PID namespace."""
    from sagemaker.train.constants import DEFAULT_CONTAINER_ARGUMENTS, DEFAULT_CONTAINER_ENTRYPOINT
    from sagemaker.train.templates import EXECUTE_BASE_COMMANDS

    script = tmp_path / "sm_train.sh"
    script.write_text("\n#!/bin/bash\nset -e\n" + EXECUTE_BASE_COMMANDS.format(base_command=command))
    argv = DEFAULT_CONTAINER_ENTRYPOINT + [DEFAULT_CONTAINER_ARGUMENTS[0],
                                           DEFAULT_CONTAINER_ARGUMENTS[1].replace(
                                               "/opt/ml/input/data/sm_drivers/sm_train.sh", str(script))]
    probe = ("import signal, sys, time\n"
             "signal.signal(signal.SIGTERM, lambda *a: (print('got SIGTERM', flush=True), sys.exit(0)))\n"
             "print('ready', flush=True); time.sleep(6); print('no signal', flush=True)")
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "PROBE": probe}
    log = tmp_path / "out.log"
    with open(log, "w") as sink:
        proc = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", *argv], stdout=sink,
                                stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 60
        while "ready" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        pid1 = int(Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()[0])
        started = time.monotonic()
        os.kill(pid1, signal.SIGTERM)  # what the platform sends: SIGTERM to the container's PID 1
        proc.wait(timeout=40)
    finally:
        if proc.poll() is None:
            proc.kill()
    out = log.read_text()
    assert ("got SIGTERM" in out) == reaches, out
    if not reaches:
        assert "no signal" in out and time.monotonic() - started > 4, "PID 1 bash dropped SIGTERM"


# ------------------------------------------------------------------------------------------------------------
# whole jobs


def _data(python_split) -> list[str]:
    return [f"data.train_path={python_split['train']}", f"data.val_path={python_split['test']}"]


def _log(out: Path, host: str, attempt: int | None = None) -> str:
    base = out / "hosts" if attempt is None else out / "attempts" / str(attempt)
    return (base / f"{host}.log").read_text()


@pytest.fixture(scope="module")
def spot_run(tmp_path_factory, python_split):
    """launch.simulate --hosts 2 --config configs/ci_tiny.yaml --set trainer.nnodes=2 trainer.total_steps=4
    --spot-interrupt-after-step 2 --spot-interrupt-in-rollout --no-landlock-hosts algo-2 --rank0-host algo-2
    --small-root-hosts algo-1 algo-2 (SIGTERM while step 3 generates or is judged; the worker host runs as on a
    kernel without Landlock and has the address that sorts first; both hosts have an 8 MiB root disk for /tmp and
    HOME and none of this machine's caches)"""
    from codefu_helpers.launch.simulate import simulate

    out = tmp_path_factory.mktemp("spot") / "sim"
    summary = simulate(CI_TINY, out, hosts=2, overrides=_data(python_split) + ["trainer.nnodes=2",
                                                                               "trainer.total_steps=4"],
                       spot_interrupt_after_step=2, grace_seconds=120, dashboard=False, join_timeout=420,
                       timeout=1500, no_landlock_hosts=["algo-2"], rank0_host="algo-2",
                       small_root_hosts=["algo-1", "algo-2"], spot_in_rollout=True)
    print(f"spot run: {summary['seconds']} s, attempts {[(a['steps'], a['exit_codes']) for a in summary['attempts']]}")
    return out, summary


@pytest.mark.slow
def test_a_spot_interrupted_job_logs_every_step_once_and_leaves_a_loadable_model(spot_run):
    from transformers import AutoModelForCausalLM

    out, summary = spot_run
    first, second = summary["attempts"]
    assert first["interrupted"] == "spot" and first["interrupted_after_step"] == 2
    assert first["steps"] == [1, 2] and second["steps"] == [3, 4], "step 3 was dropped mid-rollout and redone"
    assert second["interrupted"] is None and second["exit_codes"] == {"algo-1": 0, "algo-2": 0}, summary
    assert summary["failures"] == {} and first["failures"] == {}
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2, 3, 4], "nothing redone, nothing lost"
    assert {(r["world_size"], r["ray_nodes"]) for r in rows} == {(2, 2)}
    # the stop saved the step in progress: the restart resumes exactly after the last step the first attempt logged
    last = first["steps"][-1]
    assert f"resumed from /opt/ml/checkpoints/step_{last:06d}" in _log(out, "algo-1")
    assert second["restored_checkpoint_files"] > 0
    model = AutoModelForCausalLM.from_pretrained(out / "model")
    # algo-2 had the address that sorts first; the native trainer's rank 0 stays on the head, which writes the model
    assert summary["addresses"]["algo-2"] < summary["addresses"]["algo-1"]
    assert "rank 0 on algo-1" in _log(out, "algo-1")
    assert model.config.model_type == "qwen2" and summary["model_from"] == ["algo-1"]
    record = json.loads((out / "model" / "codefu_training.json").read_text())
    assert record["steps"] == 4 and record["training_job_arn"].endswith(f"training-job/{summary['job_name']}")


@pytest.mark.slow
def test_a_verl_job_whose_rank_0_ran_on_algo_2_leaves_the_model_in_the_artifact(tmp_path, python_split):
    """trainer.engine=verl on 2 hosts, algo-2 with the address that sorts first: verl's rank 0, which writes the HF
    model, runs there. verl cannot train on this CPU machine, so tests/verl_standin.py stands in for
    `python -m verl.trainer.main_ppo` (real Ray actors, verl's rank order and file layout); the entry point's part
    is the real one. Before, the head exported from its own disk and the job failed with /opt/ml/model empty."""
    from transformers import AutoModelForCausalLM

    from codefu_helpers.launch.simulate import simulate
    from codefu_helpers.tiny_model import resolve_model_path

    out = tmp_path / "sim"
    summary = simulate(CI_TINY, out, hosts=2, dashboard=False, join_timeout=420, timeout=900, rank0_host="algo-2",
                       overrides=_data(python_split) + [
                           "trainer.engine=verl", "rollout.backend=vllm", "trainer.nnodes=2", "trainer.total_steps=4",
                           "checkpoint.save_every=2", f"model.path={resolve_model_path('tiny://qwen2')}",
                           "model.dtype=bfloat16", "model.device=auto"],
                       job_environment={"CODEFU_ENTRYPOINT_ARGS": f"--verl-python {REPO / 'tests' / 'verl_standin.py'}"})
    assert summary["exit_codes"] == {"algo-1": 0, "algo-2": 0} and summary["failures"] == {}, summary
    assert "ranks {0: 'algo-2', 1: 'algo-1'}" in _log(out, "algo-1")
    assert "verl's model of step 4 copied into /opt/ml/model on host algo-2" in _log(out, "algo-1")
    assert summary["model_from"] == ["algo-2"] and "model_clashes" not in summary
    assert AutoModelForCausalLM.from_pretrained(out / "model").config.model_type == "qwen2"
    # the training record notebook 05 reads: the job-side start model and the job that had it as its channel
    record = json.loads((out / "model" / "codefu_training.json").read_text())
    assert record["start_model"] == "/opt/ml/input/data/model" and record["steps"] == 4 and record["engine"] == "verl"
    assert record["training_job_arn"].endswith(f"training-job/{summary['job_name']}") and record["train_problems"]


@pytest.mark.slow
def test_sigterm_went_through_the_sdk_driver_to_the_entry_point_which_saved(spot_run):
    out, summary = spot_run
    first = summary["attempts"][0]
    head, other = _log(out, "algo-1", attempt=1), _log(out, "algo-2", attempt=1)
    assert "+++ exec python -m codefu_helpers.launch.entrypoint" in head  # the SDK's sm_train.sh ran it (set -x)
    assert "entry point: PID 1 here" in head and "passed on by PID 1 as SIGUSR1" in head
    # the stop came during step 3's rollout: the step was dropped; step 2's checkpoint (save_every=1) stood
    assert "stop requested during step 3's rollout" in head and "already saved: step 2" in head
    assert first["exit_codes"]["algo-1"] == 143 and "killed_after_grace" not in first, first
    # the worker host stays up until the head is done (when the head saves after the stop, it says so first)
    assert "the head is done; leaving" in other and first["exit_codes"]["algo-2"] == 0


@pytest.mark.slow
def test_each_host_had_its_own_disk_no_bubblewrap_and_s3_mirrored_the_checkpoints(spot_run):
    out, summary = spot_run
    first = out / "attempts" / "1"
    # the worker host's disk never held the head's checkpoints in the first attempt (no shared disk)
    assert not list((first / "algo-2" / "checkpoints").iterdir())
    assert list((first / "algo-1" / "checkpoints").glob("step_*/checkpoint_complete.json"))
    for host in ("algo-1", "algo-2"):
        assert "judge isolation: CONTAINER tier" in _log(out, host, attempt=1), "no bwrap on the stock image"
    # algo-2 has no Landlock: its entry point closed /opt/ml to the judged programs, the judge checked it with
    # canaries and took the container tier on those terms; algo-1 kept Landlock
    for attempt in (1, None):
        worker, head = _log(out, "algo-2", attempt=attempt), _log(out, "algo-1", attempt=attempt)
        assert "[algo-2] no Landlock on this host: /opt/ml" in worker and "closed to judged programs" in worker
        assert "closed to programs by their modes (checked with canaries)" in worker, worker[-3000:]
        assert "Landlock ABI" in head and "no Landlock on this host" not in head
        resource = json.loads((first / host / "input/config/resourceconfig.json").read_text())
        assert resource["current_host"] == host and f"[{host}] network interface lo: NCCL_SOCKET_IFNAME=lo" in \
            _log(out, host, attempt=1)
    # uploads as files appear, deletions mirrored: S3 ends with the newest keep_last=2 complete checkpoints
    steps = sorted({key.split("/")[-2] for key in summary["s3_checkpoints"] if key.endswith("checkpoint_complete.json")})
    assert steps == ["step_000003", "step_000004"], summary["s3_checkpoints"]
    assert not any("/step_000001/" in key or "/.tmp_" in key for key in summary["s3_checkpoints"])
    assert sum(a["deletes"]["algo-1"] for a in summary["attempts"]) > 0


@pytest.mark.slow
def test_hosts_with_a_small_root_disk_kept_their_caches_and_rays_session_on_the_jobs_volume(spot_run):
    """/tmp and HOME were 8 MiB tmpfs on both hosts (a write past that fails the job); the tiny model (9 MiB) was built
    and Ray's session written under /opt/ml/input/data/codefu-cache, on the volume, in each attempt."""
    out, summary = spot_run
    assert all(a["exit_codes"] for a in summary["attempts"]) and summary["exit_codes"] == {"algo-1": 0, "algo-2": 0}
    for attempt in (1, None):
        for host in ("algo-1", "algo-2"):
            assert "caches under /opt/ml/input/data/codefu-cache" in _log(out, host, attempt)
    disk = out / "hosts" / "algo-1" / "input" / "data" / "codefu-cache"
    assert list((disk / "codefu" / "tiny-models").glob("*/model.safetensors")), "the model was built on the volume"
    assert list((disk / "ray" / "ray").glob("session_*/logs")), "Ray's session lived on the volume"
    assert not (out / "hosts" / "algo-1" / "checkpoints" / "codefu-cache").exists()


@pytest.mark.slow
def test_the_simulation_leaves_no_process_behind(spot_run):
    out, _ = spot_run
    listing = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert [line for line in listing.splitlines() if str(out) in line] == []


@pytest.mark.slow
def test_a_restart_after_a_lost_upload_resumes_from_the_last_complete_checkpoint(tmp_path, python_split):
    """The job is lost while step 2's checkpoint uploads: S3 holds step 2's completeness marker but not its files.
    The restart restores that onto a fresh disk, passes over step 2 (files missing), resumes from step 1 and redoes
    step 2: the one step whose checkpoint never fully reached S3."""
    from codefu_helpers.launch.simulate import simulate

    summary = simulate(CI_TINY, tmp_path, hosts=1, overrides=_data(python_split) + ["trainer.total_steps=2",
                                                                                   "trainer.test_freq=0",
                                                                                   "data.val_path=null"],
                       interrupt_upload_at_step=2, dashboard=False, join_timeout=300, timeout=1200)
    first, second = summary["attempts"]
    assert first["interrupted"] == "upload" and first["steps"] == [1, 2]
    assert second["exit_codes"] == {"algo-1": 0} and second["steps"] == [2], summary
    log = _log(tmp_path, "algo-1")
    assert "not resuming from /opt/ml/checkpoints/step_000002: incomplete" in log and "is missing" in log
    assert "resumed from /opt/ml/checkpoints/step_000001" in log
    print(f"upload run: {summary['seconds']} s")


@pytest.mark.slow
def test_a_host_that_never_starts_fails_the_job_naming_it(tmp_path, python_split):
    from codefu_helpers.launch.simulate import simulate

    join_timeout = 30
    summary = simulate(CI_TINY, tmp_path, hosts=2, start_hosts=1, join_timeout=join_timeout, timeout=600,
                       dashboard=False, overrides=_data(python_split) + ["trainer.nnodes=2"])
    assert summary["exit_codes"] == {"algo-1": 2}, summary
    failure = summary["failures"]["algo-1"]
    assert "algo-2 never joined" in failure and f"after {join_timeout} s" in failure
    # the head gives up at the join timeout (plus its own start-up), not at some later default
    assert summary["host_seconds"]["algo-1"] < join_timeout + 400
    assert not (tmp_path / "model").exists()
