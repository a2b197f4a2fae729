"""The SageMaker training job's entry point: runs on every host, forms one Ray cluster, trains on the head.

    python -m codefu_helpers.launch.entrypoint --config /opt/ml/input/data/config/config.yaml

Every flag defaults to SageMaker's paths, so the job's command is just the line above. What happens:

1. every host checks that the judge can isolate model-written programs here (`sandbox.require_isolation`)
   and prints the tier;
2. the first host of `resourceconfig.json` ("hosts"[0]) starts the Ray head (dashboard on --dashboard-port,
   Prometheus metrics on --metrics-export-port); every other host waits for the head's port and joins;
3. the head waits until a live Ray node carries every host's name; past --join-timeout it exits non-zero
   and writes the failure file naming the hosts that never joined;
4. the head trains: trainer.engine=native runs `codefu_helpers.train.run`, whose controller (on the head)
   places trainer.nnodes x trainer.gpus_per_node FSDP2 workers on the cluster's nodes through $RAY_ADDRESS
   (workers on other hosts ship their checkpoint shards to the head, whose checkpoint dir SageMaker
   uploads); trainer.engine=verl runs `python -m verl.trainer.main_ppo <overrides>` against the cluster
   and then merges verl's last checkpoint into an HF model. Checkpoints go to --checkpoint-dir (SageMaker
   syncs it with S3, so a restarted or Spot-interrupted job resumes), metrics/config/MLflow to --output-dir,
   the final model to --model-dir (uploaded as model.tar.gz);
5. the head stops its Ray node; worker hosts see the head's port close and leave with exit code 0.

Any error ends with the failure file written (SageMaker shows its text as the job's failure reason) and a
non-zero exit. `python -m codefu_helpers.launch.simulate` runs this same module as N hosts on one machine.
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
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from ..config import ExperimentConfig

__all__ = ["main", "HostInfo", "read_resource_config", "training_config"]

FAILURE_LIMIT = 1000  # SageMaker keeps the first 1 KiB of the failure file as the job's failure reason


@dataclass
class HostInfo:
    current: str
    hosts: list[str]

    @property
    def is_head(self) -> bool:
        return self.current == self.hosts[0]


def read_resource_config(path: str | Path) -> HostInfo:
    """SageMaker's /opt/ml/input/config/resourceconfig.json: which host this is and all hosts in order."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise SystemExit(f"--resource-config {path} does not exist: outside SageMaker, pass a JSON file like "
                         '{"current_host": "algo-1", "hosts": ["algo-1", "algo-2"]}') from None
    hosts, current = raw.get("hosts"), raw.get("current_host")
    if not isinstance(hosts, list) or not hosts or current not in hosts:
        raise SystemExit(f"{path} must name current_host and list it in hosts; got current_host={current!r}, "
                         f"hosts={hosts!r}")
    return HostInfo(current=current, hosts=hosts)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m codefu_helpers.launch.entrypoint", description=__doc__.splitlines()[0])
    p.add_argument("--config", required=True, help="experiment YAML (the job's `config` channel)")
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="config overrides")
    p.add_argument("--resource-config", default="/opt/ml/input/config/resourceconfig.json")
    p.add_argument("--model-dir", default="/opt/ml/model", help="final HF model (SageMaker uploads it)")
    p.add_argument("--checkpoint-dir", default="/opt/ml/checkpoints", help="checkpoints (synced with S3)")
    p.add_argument("--output-dir", default="/opt/ml/output/data", help="config.yaml, metrics.jsonl, MLflow db")
    p.add_argument("--failure-file", default="/opt/ml/output/failure")
    p.add_argument("--join-timeout", type=float, default=600.0, help="seconds the head waits for every host")
    p.add_argument("--ray-port", type=int, default=6379, help="the head's GCS port")
    p.add_argument("--dashboard-port", type=int, default=8265)
    p.add_argument("--dashboard-host", default="0.0.0.0", help="address the Ray dashboard binds (head)")
    p.add_argument("--no-dashboard", action="store_true", help="head: no Ray dashboard (metrics export stays on)")
    p.add_argument("--metrics-export-port", type=int, default=8080)
    p.add_argument("--host-ip", action="append", default=[], metavar="HOST=IP",
                   help="address of a host (default: DNS, which SageMaker sets up for algo-N)")
    p.add_argument("--ray-temp-dir", default=None, help="head only: Ray's session directory")
    p.add_argument("--ray-start-arg", action="append", default=[], metavar="ARG",
                   help="extra argument for this host's `ray start` (repeatable), e.g. --ray-start-arg=--num-gpus=0")
    p.add_argument("--ray-autogroup-nice", type=int, default=0,
                   help="CPU share of this host's Ray session against other sessions (simulated hosts on one machine)")
    p.add_argument("--verl-python", default=sys.executable, help="interpreter with verl installed (engine=verl)")
    p.add_argument("--poll", type=float, default=2.0, help="seconds between checks of the head (worker hosts)")
    return p.parse_args(argv)


def training_config(args: argparse.Namespace, n_hosts: int) -> ExperimentConfig:
    """The experiment config with SageMaker's directories; checks the trainer fits on the hosts there are."""
    cfg = ExperimentConfig.from_yaml(args.config)
    overrides = list(args.set) + [f"trainer.output_dir={args.output_dir}", f"checkpoint.dir={args.checkpoint_dir}"]
    cfg = cfg.with_overrides(overrides).validate()
    if cfg.trainer.nnodes > n_hosts:
        raise SystemExit(f"trainer.nnodes={cfg.trainer.nnodes} but the job has {n_hosts} host(s): launch with "
                         f"instance_count={cfg.trainer.nnodes} or set trainer.nnodes={n_hosts}")
    if cfg.trainer.nnodes < n_hosts:
        print(f"note: trainer.nnodes={cfg.trainer.nnodes} uses fewer than the job's {n_hosts} hosts; the others "
              "hold an idle Ray node (and are billed)", flush=True)
    return cfg


def _host_ip(host: str, mapping: dict[str, str]) -> str:
    if host in mapping:
        return mapping[host]
    try:
        return socket.gethostbyname(host)
    except OSError as exc:
        raise SystemExit(f"cannot resolve host {host!r} ({exc}); pass --host-ip {host}=ADDRESS") from None


def write_failure(path: str | Path, message: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(message[:FAILURE_LIMIT])


def check_judge_isolation(host: str) -> str:
    """The judge must isolate model-written code on this host (bwrap or container tier), or the job stops."""
    from ..sandbox import require_isolation

    info = require_isolation()
    line = info.get("isolation_line") or f"judge isolation: {info.get('isolation')}"
    print(f"[{host}] {line}", flush=True)
    return str(info.get("isolation"))


def run_training(cfg: ExperimentConfig, args: argparse.Namespace) -> None:
    model_dir, produced = Path(args.model_dir), Path(cfg.trainer.output_dir) / "model"
    if cfg.trainer.engine == "verl":
        from .verl_engine import merge_command, verl_command, write_selected_train_rows

        write_selected_train_rows(cfg)
        train = verl_command(cfg, python=args.verl_python)
        print("$ " + " ".join(train[:3]) + f" ... ({len(train) - 3} overrides)", flush=True)
        subprocess.run(train, check=True)
        # after training: the merge reads which step verl saved last
        subprocess.run(merge_command(cfg.checkpoint_dir(), model_dir, python=args.verl_python), check=True)
        return
    from ..train import run

    run(cfg)
    if produced.resolve() != model_dir.resolve():  # SageMaker uploads --model-dir; the trainer writes <output>/model
        model_dir.mkdir(parents=True, exist_ok=True)
        for item in produced.iterdir():
            target = model_dir / item.name
            if target.is_dir():
                shutil.rmtree(target)  # a restarted job writes the model again
            shutil.move(str(item), target)
        produced.rmdir()


def run_head(args, host: HostInfo, ips: dict[str, str], node) -> int:
    from .cluster import wait_for_hosts

    cfg = training_config(args, len(host.hosts))
    node.start()
    dashboard = "no dashboard" if args.no_dashboard else f"dashboard on port {args.dashboard_port}"
    print(f"[{host.current}] Ray head at {node.address}; {dashboard}, Prometheus metrics on port "
          f"{args.metrics_export_port}", flush=True)
    started = time.monotonic()
    joined, missing = wait_for_hosts(node.address, host.hosts, args.join_timeout,
                                     log=lambda m: print(f"[{host.current}] {m}", flush=True))
    if missing:
        message = (f"Ray cluster incomplete after {args.join_timeout:.0f} s: host(s) {', '.join(missing)} never "
                   f"joined the head {host.current} at {node.address} (joined: {', '.join(joined)}). Check those "
                   "hosts' logs (CloudWatch stream <job>/<host>) for their entry point's error.")
        print(f"[{host.current}] {message}", flush=True)
        write_failure(args.failure_file, message)
        return 2
    join_seconds = time.monotonic() - started
    print(f"[{host.current}] all {len(host.hosts)} hosts joined in {join_seconds:.1f} s", flush=True)
    Path(args.output_dir).mkdir(parents=True, exist_ok=True)
    (Path(args.output_dir) / "cluster.json").write_text(json.dumps(
        {"head": host.current, "hosts": host.hosts, "joined": joined, "ray_address": node.address,
         "join_seconds": round(join_seconds, 2), "engine": cfg.trainer.engine}, indent=1))
    os.environ["RAY_ADDRESS"] = node.address  # what ray.init() in the trainer (or verl) connects to
    run_training(cfg, args)
    return 0


def run_worker(args, host: HostInfo, ips: dict[str, str], node) -> int:
    from .cluster import port_open, wait_for_port

    training_config(args, len(host.hosts))  # a bad config fails every host at once, not only the head
    head_ip = ips[host.hosts[0]]
    deadline = time.monotonic() + args.join_timeout
    # the head's GCS port opens first; its metrics port once its own node (agents included) is up: joining
    # before that only competes with the head's start-up
    ready = all(wait_for_port(head_ip, port, deadline - time.monotonic())
                for port in (args.ray_port, args.metrics_export_port))
    if not ready:
        message = (f"host {host.current} could not reach the Ray head {host.hosts[0]} at {head_ip} (ports "
                   f"{args.ray_port}, {args.metrics_export_port}) within {args.join_timeout:.0f} s")
        print(f"[{host.current}] {message}", flush=True)
        write_failure(args.failure_file, message)
        return 2
    node.start(until=deadline)
    print(f"[{host.current}] joined the Ray head at {node.address}", flush=True)
    while port_open(head_ip, args.ray_port):  # the head closes its port when training is over
        if not node.alive():
            time.sleep(args.poll)  # our node may die because the head just went away: look once more
            if not port_open(head_ip, args.ray_port):
                break
            raise RuntimeError(f"the Ray node on {host.current} exited while the head is still up; see "
                               f"{node.log_path}")
        time.sleep(args.poll)
    print(f"[{host.current}] the head is done; leaving", flush=True)
    return 0


def _exit_on_sigterm(signum, frame):
    raise SystemExit(f"stopped by signal {signum} (SageMaker stops a job with SIGTERM: max_run, Spot, StopTrainingJob)")


def main(argv=None) -> int:
    args = parse_args(argv)
    from .cluster import RayNode

    signal.signal(signal.SIGTERM, _exit_on_sigterm)  # so `finally` stops this host's Ray node

    node = None
    host = None
    try:
        host = read_resource_config(args.resource_config)
        mapping = dict(item.split("=", 1) for item in args.host_ip)
        ips = {h: _host_ip(h, mapping) for h in (host.hosts[0], host.current)}
        check_judge_isolation(host.current)
        log_dir = Path(args.output_dir) / "ray-logs"
        node = RayNode(host=host.current, ip=ips[host.current], port=args.ray_port, head=host.is_head,
                       head_ip=ips[host.hosts[0]], log_path=log_dir / f"ray-start-{host.current}.log",
                       dashboard_port=args.dashboard_port, dashboard_host=args.dashboard_host,
                       dashboard=not args.no_dashboard,
                       metrics_export_port=args.metrics_export_port,
                       temp_dir=args.ray_temp_dir, extra_args=list(args.ray_start_arg),
                       autogroup_nice=args.ray_autogroup_nice)
        return (run_head if host.is_head else run_worker)(args, host, ips, node)
    except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt must leave a reason too
        if isinstance(exc, SystemExit) and exc.code in (0, None):
            return 0
        who = host.current if host else "this host"
        if isinstance(exc, SystemExit):
            message = f"{who}: {exc.code}"
        elif isinstance(exc, subprocess.CalledProcessError):
            message = f"{who}: command exited with {exc.returncode}: {' '.join(map(str, exc.cmd[:4]))} ..."
        else:
            message = f"{who}: {type(exc).__name__}: {exc}"
        traceback.print_exc()
        write_failure(args.failure_file, message)
        return 1
    finally:
        if node is not None:
            node.stop()


if __name__ == "__main__":
    sys.exit(main())
