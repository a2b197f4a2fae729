"""N SageMaker hosts on one machine: each runs the real entry point, and their Ray nodes form one cluster.

    python -m codefu_helpers.launch.simulate --hosts 2 --config configs/ci_tiny.yaml --output-dir runs/sim \\
        --set trainer.total_steps=1
    python -m codefu_helpers.launch.simulate --hosts 2 --start-hosts 1 ...   # a host that never comes up

Each host gets what SageMaker gives a host: its own `resourceconfig.json` (current_host, hosts), SM_* variables,
a failure file, and one `python -m codefu_helpers.launch.entrypoint` process. Hosts differ by node name
(algo-1, algo-2, ...), by a `host:<name>` Ray resource, by address and by every port. The addresses are
loopback addresses other than 127.0.0.1 (127.0.0.2, 127.0.0.3, ...): Ray swaps 127.0.0.1 for the machine's
outward address whenever a node joins, while any 127.x.y.z address routes through the loopback interface
and is left alone, so nothing leaves the machine.

All hosts share OUTPUT_DIR as SageMaker's output, model and checkpoint directories (only the head writes
them): OUTPUT_DIR/model, metrics.jsonl, cluster.json, checkpoints/; per host OUTPUT_DIR/hosts/<host>/
holds its resourceconfig.json, failure file and log. OUTPUT_DIR/simulation.json records each host's exit
code and failure text and the timings. Every Ray process started here is stopped by its own process group.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["simulate", "main"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def host_ip(index: int) -> str:
    """Loopback address of simulated host `index` (0-based): 127.0.0.2, 127.0.0.3, ..."""
    return f"127.0.0.{index + 2}"


def _node_args(head: bool) -> list[str]:
    """`ray start` arguments that keep simulated nodes apart on one machine: every port distinct, small."""
    ports = ["--node-manager-port", "--object-manager-port", "--dashboard-agent-listen-port",
             "--dashboard-agent-grpc-port", "--runtime-env-agent-port"]
    if not head:
        ports.append("--metrics-export-port")  # the head's comes from the entry point's own flag
    else:
        ports.append("--ray-client-server-port")  # Ray's default (10001) may belong to another Ray here
    args = [f"{flag}={_free_port()}" for flag in ports]
    return args + ["--num-cpus=1", "--num-gpus=0", f"--object-store-memory={96 << 20}",
                   "--min-worker-port=0", "--max-worker-port=0", "--include-log-monitor=false"]


def simulate(config: str, output_dir: str | Path, hosts: int = 2, overrides: list[str] | None = None,
             start_hosts: int | None = None, join_timeout: float = 300.0, timeout: float = 1800.0,
             dashboard: bool = True) -> dict:
    """Runs the entry point as `hosts` hosts (only the first `start_hosts` are started) and returns the
    summary written to OUTPUT_DIR/simulation.json."""
    out = Path(output_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    names = [f"algo-{i + 1}" for i in range(hosts)]
    start_hosts = hosts if start_hosts is None else start_hosts
    ray_port, dashboard_port, metrics_port = _free_port(), _free_port(), _free_port()
    temp_dir = tempfile.mkdtemp(prefix="cfray-", dir="/tmp")  # short: Ray's unix socket paths live under it
    host_ips = [f"--host-ip={name}={host_ip(i)}" for i, name in enumerate(names)]
    procs: dict[str, subprocess.Popen] = {}
    started = time.monotonic()
    try:
        for i, name in enumerate(names[:start_hosts]):
            host_dir = out / "hosts" / name
            host_dir.mkdir(parents=True, exist_ok=True)
            (host_dir / "resourceconfig.json").write_text(json.dumps(
                {"current_host": name, "current_instance_type": "local", "hosts": names,
                 "network_interface_name": "lo"}))
            failure = host_dir / "failure"
            failure.unlink(missing_ok=True)
            env = dict(os.environ, SM_CURRENT_HOST=name, SM_HOSTS=json.dumps(names), SM_NUM_GPUS="0",
                       SM_MODEL_DIR=str(out / "model"), SM_OUTPUT_DATA_DIR=str(out),
                       RAY_USAGE_STATS_ENABLED="0", PYTHONUNBUFFERED="1",
                       RAY_AUTH_MODE="disabled",  # a token file of another Ray on this machine must not apply
                       GLOO_SOCKET_IFNAME="lo")  # the workers' process group stays on the loopback interface
            argv = [sys.executable, "-m", "codefu_helpers.launch.entrypoint", "--config", str(Path(config).resolve()),
                    "--resource-config", str(host_dir / "resourceconfig.json"), "--model-dir", str(out / "model"),
                    "--checkpoint-dir", str(out / "checkpoints"), "--output-dir", str(out),
                    "--failure-file", str(failure), "--join-timeout", str(join_timeout),
                    "--ray-port", str(ray_port), "--dashboard-port", str(dashboard_port),
                    "--metrics-export-port", str(metrics_port), *host_ips,
                    *[f"--ray-start-arg={a}" for a in _node_args(head=i == 0)]]
            if i == 0:
                argv += ["--ray-temp-dir", temp_dir, "--dashboard-host", host_ip(0)]
                if not dashboard:
                    argv += ["--no-dashboard"]
            if os.geteuid() == 0:
                # Simulated hosts share this machine's cores with everything else running on it, but the raylet
                # gives its agents a fixed 15 s to start (ray-project/ray#65983): their Ray sessions get a larger
                # CPU share, which matters only while they start (idle Ray daemons use next to nothing).
                argv += ["--ray-autogroup-nice=-10"]
            if overrides:
                argv += ["--set", *overrides]
            with open(host_dir / "entrypoint.log", "wb") as log:
                procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                                               start_new_session=True)
        deadline = started + timeout
        finished: dict[str, float] = {}
        while len(finished) < len(procs) and time.monotonic() < deadline:
            for name, proc in procs.items():
                if name not in finished and proc.poll() is not None:
                    finished[name] = time.monotonic() - started
            time.sleep(0.5)
    finally:
        for name, proc in procs.items():  # still running past the timeout: SIGTERM lets it stop its Ray node
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for name, proc in procs.items():
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        shutil.rmtree(temp_dir, ignore_errors=True)
    summary = {"hosts": names, "started_hosts": names[:start_hosts], "seconds": round(time.monotonic() - started, 1),
               "exit_codes": {n: p.returncode for n, p in procs.items()},
               "host_seconds": {n: round(s, 1) for n, s in finished.items()},
               "failures": {n: (out / "hosts" / n / "failure").read_text() for n in procs
                            if (out / "hosts" / n / "failure").exists()}}
    cluster = out / "cluster.json"
    if cluster.exists():
        summary["cluster"] = json.loads(cluster.read_text())
    (out / "simulation.json").write_text(json.dumps(summary, indent=1))
    return summary


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m codefu_helpers.launch.simulate", description=__doc__.splitlines()[0])
    p.add_argument("--hosts", type=int, default=2)
    p.add_argument("--config", required=True)
    p.add_argument("--output-dir", required=True)
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE")
    p.add_argument("--start-hosts", type=int, default=None, help="start only the first N hosts (failure drill)")
    p.add_argument("--join-timeout", type=float, default=300.0)
    p.add_argument("--timeout", type=float, default=1800.0)
    p.add_argument("--no-dashboard", action="store_true",
                   help="no Ray dashboard on the head: a lighter start on a small machine")
    args = p.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))  # stop the hosts on the way out
    summary = simulate(args.config, args.output_dir, args.hosts, args.set, args.start_hosts, args.join_timeout,
                       args.timeout, dashboard=not args.no_dashboard)
    print(json.dumps(summary, indent=1))
    return 0 if summary["exit_codes"] and all(c == 0 for c in summary["exit_codes"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
