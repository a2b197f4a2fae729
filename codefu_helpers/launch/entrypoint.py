"""The SageMaker training job's entry point: runs on every host, forms one Ray cluster, trains on the head.

    exec python -m codefu_helpers.launch.entrypoint --config /opt/ml/input/data/config/config.yaml

Every flag defaults to SageMaker's paths, so the job's command is just the line above. What happens:

0. as the container's PID 1 (the job's command `exec`s it from the SDK's driver script, itself PID 1 until then) it
   stays PID 1 as a small init: it runs the entry point proper as its child, passes SIGTERM/SIGINT on to it and
   reaps orphaned processes. SageMaker stops a job (StopTrainingJob, max_run, a Spot reclaim) with SIGTERM to PID 1
   and SIGKILL after a grace period (120 s); a shell as PID 1 drops it, so without this nothing would save;
1. every host puts its caches (Hugging Face, vLLM, Triton, torch.compile, FlashInfer, pip, Ray's session and
   spilling) on the volume SageMaker provisions rather than the small root disk (`disks.place_caches`), then checks
   that the judge can isolate model-written programs here (`sandbox.require_isolation`) and prints the tier (on a
   host without Landlock it first closes /opt/ml and the caches to the judged programs' uids, which the judge checks
   with canaries: `sandbox.protect`); NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME are pinned to the interface
   SageMaker names in resourceconfig.json (`network_interface_name`), unless already set; host names are resolved
   with retries until --dns-timeout (the cluster's DNS can lag a host's start);
2. the first host of `resourceconfig.json` ("hosts"[0]) starts the Ray head (dashboard on --dashboard-port,
   Prometheus metrics on --metrics-export-port); every other host waits for the head's port and joins;
3. the head waits until a live Ray node carries every host's name; past --join-timeout it exits non-zero
   and writes the failure file naming the hosts that never joined;
4. the head trains: trainer.engine=native runs `codefu_helpers.train.run`, whose controller (on the head)
   places trainer.nnodes x trainer.gpus_per_node FSDP2 workers on the cluster's nodes through $RAY_ADDRESS
   (workers on other hosts ship their checkpoint shards to the head, whose checkpoint dir SageMaker
   uploads); trainer.engine=verl runs `python -m verl.trainer.main_ppo <overrides>` against the cluster, first
   pointing it at the newest complete checkpoint (`verl_engine.resume_step`), and then has the host where rank 0
   saved the last checkpoint's HF model (any host: verl orders ranks by address) copy it into its own model
   directory (`place_verl_model`); the other hosts prune old verl steps on their own disks. Checkpoints go to
   --checkpoint-dir (SageMaker syncs it with S3, so a restarted or Spot-interrupted job
   resumes), metrics/config/MLflow to --output-dir, the final model to --model-dir (uploaded by SageMaker);
5. on SIGTERM the native trainer drops a step still in its rollout (generation, judging: nothing of it reached the
   weights; the restarted job redoes it) or finishes one in its update, saves the last whole step unless it is
   saved already, and stops (exit 143, no failure file);
   the other hosts keep their Ray nodes up until the head is done, since the head's checkpoint needs their
   shards. verl is sent SIGTERM too; it keeps the checkpoints it already saved (it has no save-on-signal);
6. the head stops its Ray node; worker hosts see the head's port close and leave with exit code 0.

Any error ends with the failure file written (SageMaker shows its text as the job's failure reason) and a
non-zero exit. `python -m codefu_helpers.launch.simulate` runs the same job on one machine: each host its own disk,
the SDK's driver as PID 1 of its own PID namespace; it passes per-host flags (ports) in $CODEFU_ENTRYPOINT_ARGS.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from ..config import ConfigError, ExperimentConfig

__all__ = ["main", "HostInfo", "read_resource_config", "training_config"]

FAILURE_LIMIT = 1000  # SageMaker keeps the first 1 KiB of the failure file as the job's failure reason
EXTRA_ARGS_ENV = "CODEFU_ENTRYPOINT_ARGS"   # more flags, from the environment (the simulation's per-host ports)
CHILD_ENV = "CODEFU_ENTRYPOINT_CHILD"       # set in the entry point that PID 1 runs
STOPPED_EXIT = 128 + signal.SIGTERM
STOP_SIGNAL = signal.SIGUSR1                # how PID 1 passes SIGTERM on to the entry point (Ray leaves it alone)
STOP = threading.Event()                    # set by SIGTERM
_TRAINING = threading.Event()               # set once the cluster is up: from then on SIGTERM lets the step finish


@dataclass
class HostInfo:
    current: str
    hosts: list[str]
    interface: str | None = None    # network_interface_name: the interface the hosts reach each other on

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
    return HostInfo(current=current, hosts=hosts, interface=raw.get("network_interface_name"))


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
    p.add_argument("--ray-temp-dir", default=None,
                   help="head only: Ray's session directory, for every node (default: under the cache root, see disks)")
    p.add_argument("--ray-start-arg", action="append", default=[], metavar="ARG",
                   help="extra argument for this host's `ray start` (repeatable), e.g. --ray-start-arg=--num-gpus=0")
    p.add_argument("--ray-autogroup-nice", type=int, default=0,
                   help="CPU share of this host's Ray session against other sessions (simulated hosts on one machine)")
    p.add_argument("--verl-python", default=sys.executable, help="interpreter with verl installed (engine=verl)")
    p.add_argument("--poll", type=float, default=2.0, help="seconds between checks of the head (worker hosts)")
    p.add_argument("--dns-timeout", type=float, default=300.0,
                   help="seconds to keep retrying the resolution of a host name before failing")
    extra = shlex.split(os.environ.get(EXTRA_ARGS_ENV, ""))
    return p.parse_args((list(sys.argv[1:]) if argv is None else list(argv)) + extra)


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


def resolve_host(host: str, mapping: dict[str, str], timeout: float, log=print, poll: float = 1.0) -> str:
    """The address of `host`: from --host-ip, else DNS, retried until `timeout` seconds passed (SageMaker registers
    the algo-N names as the hosts come up, so a fast host may ask before a slow one exists)."""
    if host in mapping:
        return mapping[host]
    deadline = time.monotonic() + timeout
    attempt = 0
    while True:
        attempt += 1
        try:
            return socket.gethostbyname(host)
        except OSError as exc:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SystemExit(f"cannot resolve host {host!r} after {attempt} attempts in {timeout:.0f} s ({exc}); "
                                 f"the cluster's DNS never knew it: pass --host-ip {host}=ADDRESS, or raise "
                                 "--dns-timeout") from None
            if attempt == 1:
                log(f"host {host!r} does not resolve yet ({exc}); retrying for up to {timeout:.0f} s")
            time.sleep(min(poll, remaining))
            poll = min(poll * 1.5, 5.0)


def pin_interface(interface: str | None, log=print) -> dict[str, str]:
    """NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME = the interface resourceconfig.json names, unless already set (NCCL
    and gloo otherwise pick one themselves, and a wrong pick hangs the first collective between hosts). Set in this
    process's environment, so the Ray nodes started afterwards (and their workers) inherit it. Returns what it set."""
    if not interface:
        return {}
    names = {name for _, name in socket.if_nameindex()}
    if interface not in names:
        raise SystemExit(f"resourceconfig.json names network interface {interface!r}, which this host does not have "
                         f"(it has {', '.join(sorted(names))}); set NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME in the "
                         "job's environment to the right one")
    pinned = {}
    for name in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"):
        if not os.environ.get(name):
            os.environ[name] = pinned[name] = interface
    if pinned:
        log(f"network interface {interface}: " + ", ".join(f"{k}={v}" for k, v in pinned.items()))
    return pinned


def write_failure(path: str | Path, message: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(message[:FAILURE_LIMIT])


def check_judge_isolation(host: str, cache_root: str | None = None) -> str:
    """The judge must isolate model-written code on this host (bwrap or container tier), or the job stops. On a host
    without Landlock the job protects its answers first: /opt/ml and the caches closed to others (the judged
    programs' uids), which the judge checks with canaries before it accepts the container tier."""
    from ..sandbox import require_isolation
    from ..sandbox.isolation import host_landlock_abi
    from ..sandbox.protect import PROTECTED_PATHS_ENV, job_paths, protect_host_files

    if os.geteuid() == 0 and host_landlock_abi() is None and not os.environ.get(PROTECTED_PATHS_ENV):
        paths = protect_host_files(job_paths(extra=[cache_root] if cache_root else []))
        os.environ[PROTECTED_PATHS_ENV] = os.pathsep.join(paths)  # every judge of this job checks them
        print(f"[{host}] no Landlock on this host: {', '.join(paths) or 'nothing'} closed to judged programs "
              "(permissions for others removed)", flush=True)
    info = require_isolation()
    line = info.get("isolation_line") or f"judge isolation: {info.get('isolation')}"
    print(f"[{host}] {line}", flush=True)
    return str(info.get("isolation"))


def run_training(cfg: ExperimentConfig, args: argparse.Namespace) -> int:
    """Trains on the head; returns the exit code (STOPPED_EXIT when SIGTERM stopped it after a save)."""
    model_dir, produced = Path(args.model_dir), Path(cfg.trainer.output_dir) / "model"
    if cfg.trainer.engine == "verl":
        from .verl_engine import prune_steps, resume_step, verl_command, write_selected_train_rows

        if cfg.trainer.strategy != "fsdp":  # launch() refuses it before a job starts; a hand-made job stops here
            raise ConfigError([f"trainer.strategy={cfg.trainer.strategy!r}: this entry point checks, prunes and "
                               "exports verl's FSDP checkpoints only; run Megatron workers with verl.trainer.main_ppo"])
        write_selected_train_rows(cfg)
        resume_step(cfg.checkpoint_dir())
        train = verl_command(cfg, python=args.verl_python)
        print("$ " + " ".join(train[:3]) + f" ... ({len(train) - 3} overrides)", flush=True)
        verl = subprocess.Popen(train)
        while verl.poll() is None:
            if STOP.is_set():  # verl has no save-on-signal: pass SIGTERM on, its saved checkpoints stand
                verl.send_signal(signal.SIGTERM)
                verl.wait()
                return STOPPED_EXIT
            time.sleep(1.0)
        if verl.returncode:
            raise subprocess.CalledProcessError(verl.returncode, train)
        prune_steps(cfg.checkpoint_dir(), cfg.checkpoint.keep_last)
        place_verl_model(cfg, args, model_dir)
        return 0
    from ..checkpoint import TRAINING_RECORD
    from ..train import run

    run(cfg, should_stop=_stop_requested)
    if STOP.is_set() and not produced.exists():
        print("stopped on SIGTERM after saving the last step; the restarted job resumes from it", flush=True)
        return STOPPED_EXIT
    record_path = produced / TRAINING_RECORD
    if record_path.exists() and job_identity():  # where a job-side start model came from, for evaluation elsewhere
        record_path.write_text(json.dumps({**json.loads(record_path.read_text()), **job_identity()}, indent=1))
    if produced.resolve() != model_dir.resolve():  # SageMaker uploads --model-dir; the trainer writes <output>/model
        model_dir.mkdir(parents=True, exist_ok=True)
        for item in produced.iterdir():
            target = model_dir / item.name
            if target.is_dir():
                shutil.rmtree(target)  # a restarted job writes the model again
            shutil.move(str(item), target)
        produced.rmdir()
    return 0


def job_identity() -> dict[str, str]:
    """{"training_job_arn": ...} from the container's environment (SageMaker sets TRAINING_JOB_ARN): with it an
    evaluation elsewhere finds what a job-side path of the training record (the `model` channel's
    /opt/ml/input/data/model) was, from the job's own description (`evaluate.base_and_trained`)."""
    arn = os.environ.get("TRAINING_JOB_ARN")
    return {"training_job_arn": arn} if arn else {}


def place_verl_model(cfg: ExperimentConfig, args: argparse.Namespace, model_dir: Path) -> str:
    """Puts the HF model of verl's last step into the model directory of the one host that holds it; returns that
    host. verl gives rank 0 (which writes the HF model) to the host whose address sorts first as text, and its driver
    (which records the step) runs wherever Ray placed it: either may be a host other than the head. Every host is
    asked what its disk holds (a Ray task pinned to it, while the cluster is still up), and the holder copies the
    model into its own --model-dir (the same path on every host): SageMaker merges every host's /opt/ml/model into
    the job's one model artifact."""
    from .cluster import run_on_hosts
    from .verl_engine import export_model, final_model_host, host_holdings, training_record

    hosts = read_resource_config(args.resource_config).hosts
    address = os.environ["RAY_ADDRESS"]
    holdings = run_on_hosts(address, {h: (host_holdings, cfg.checkpoint_dir()) for h in hosts})
    step, holder = final_model_host(holdings, head=hosts[0])
    record = {**training_record(cfg, step), **job_identity()}
    run_on_hosts(address, {holder: (export_model, cfg.checkpoint_dir(), model_dir, step, record)})
    where = "this host" if holder == hosts[0] else f"host {holder} (rank 0 ran there)"
    print(f"verl's model of step {step} copied into {model_dir} on {where}", flush=True)
    return holder


def run_head(args, host: HostInfo, ips: dict[str, str], node) -> int:
    from .cluster import wait_for_hosts

    cfg = training_config(args, len(host.hosts))
    if STOP.is_set():
        return STOPPED_EXIT
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
    _TRAINING.set()
    if STOP.is_set():
        return STOPPED_EXIT
    return run_training(cfg, args)


def run_worker(args, host: HostInfo, ips: dict[str, str], node) -> int:
    from .cluster import port_open, wait_for_port

    cfg = training_config(args, len(host.hosts))  # a bad config fails every host at once, not only the head
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
    _TRAINING.set()  # from now on the head may need this host's workers to save: SIGTERM does not end it
    print(f"[{host.current}] joined the Ray head at {node.address}", flush=True)
    prune = None
    if cfg.trainer.engine == "verl":  # verl prunes old steps on rank 0's host only; this host's shards are ours to prune
        from .verl_engine import prune_steps

        prune = lambda: prune_steps(cfg.checkpoint_dir(), cfg.checkpoint.keep_last)  # noqa: E731
    said_stop = False
    while port_open(head_ip, args.ray_port):  # the head closes its port when training is over
        if STOP.is_set() and not said_stop:  # the head needs this host's workers for its last save: stay up
            print(f"[{host.current}] SIGTERM: keeping this Ray node up until the head has saved", flush=True)
            said_stop = True
        if not node.alive():
            time.sleep(args.poll)  # our node may die because the head just went away: look once more
            if not port_open(head_ip, args.ray_port):
                break
            raise RuntimeError(f"the Ray node on {host.current} exited while the head is still up; see "
                               f"{node.log_path}")
        if prune is not None:
            for removed in prune():
                print(f"[{host.current}] pruned {removed.name} (checkpoint.keep_last={cfg.checkpoint.keep_last})",
                      flush=True)
        time.sleep(args.poll)
    if prune is not None:
        prune()
    print(f"[{host.current}] the head is done; leaving", flush=True)
    return 0


def _on_sigterm(signum, frame):
    first = not STOP.is_set()
    STOP.set()
    if first:
        via = "" if signum == signal.SIGTERM else f" (passed on by PID 1 as {signal.Signals(signum).name})"
        print(f"SIGTERM{via}: SageMaker is stopping the job (StopTrainingJob, max_run or a Spot reclaim); a step in "
              "its rollout is dropped, one in its update is finished, and the last whole step is saved", flush=True)
    if not _TRAINING.is_set():
        raise SystemExit(STOPPED_EXIT)  # nothing to save yet: leave now (the finally stops this host's Ray node)
    from ..workers.interrupt import INTERRUPTS

    INTERRUPTS.interrupt()  # a generation running in this process (one local worker) ends with StepAbandoned


def run_as_init(argv: list[str]) -> int:
    """PID 1's part: runs the entry point as a child, passes a stop on to it, reaps every orphan (PID 1 adopts them;
    nothing else would), and exits with the child's code once the child is gone. SIGTERM goes on as STOP_SIGNAL:
    ray.init() in the child replaces any SIGTERM handler with one that exits at once, mid-step."""
    child = subprocess.Popen([sys.executable, "-m", "codefu_helpers.launch.entrypoint", *argv],
                             env=dict(os.environ, **{CHILD_ENV: "1"}))

    def forward(signum, frame):
        try:
            child.send_signal(STOP_SIGNAL if signum == signal.SIGTERM else signum)
        except ProcessLookupError:
            pass

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    print(f"entry point: PID 1 here; running the entry point as PID {child.pid}, passing SIGTERM on", flush=True)
    code = None
    while code is None:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if pid == child.pid:
            code = os.waitstatus_to_exitcode(status)
            child.returncode = code
    code = 128 - code if code is not None and code < 0 else (code or 0)
    print(f"entry point: PID {child.pid} exited with {code}", flush=True)
    return code


def _stop_requested() -> bool:
    """Whether a stop arrived (the trainer asks after every step). Also puts the SIGTERM handler back in place:
    ray.init() in this process replaced it with one that exits at once, mid-step."""
    if signal.getsignal(signal.SIGTERM) is not _on_sigterm:
        signal.signal(signal.SIGTERM, _on_sigterm)
    return STOP.is_set()


def main(argv=None) -> int:
    argv = list(sys.argv[1:]) if argv is None else list(argv)
    if os.getpid() == 1 and not os.environ.get(CHILD_ENV):
        return run_as_init(argv)
    args = parse_args(argv)
    from .cluster import RayNode
    from .disks import place_caches

    signal.signal(signal.SIGTERM, _on_sigterm)
    signal.signal(STOP_SIGNAL, _on_sigterm)

    node = None
    host = None
    try:
        host = read_resource_config(args.resource_config)
        log = lambda m: print(f"[{host.current}] {m}", flush=True)  # noqa: E731
        pin_interface(host.interface, log=log)
        mapping = dict(item.split("=", 1) for item in args.host_ip)
        ips = {h: resolve_host(h, mapping, args.dns_timeout, log=log) for h in dict.fromkeys((host.hosts[0],
                                                                                               host.current))}
        caches = place_caches(log=log)  # before anything downloads, compiles or starts Ray
        if args.ray_temp_dir is None:
            args.ray_temp_dir = str(Path(caches["root"]) / "ray")
        check_judge_isolation(host.current, caches["root"])
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
        if isinstance(exc, SystemExit) and exc.code == STOPPED_EXIT:
            return STOPPED_EXIT  # stopped before there was anything to save: not a failure
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
        if "ray" in sys.modules and sys.modules["ray"].is_initialized():
            sys.modules["ray"].shutdown()  # disconnect this driver before its cluster goes away under it
        if node is not None:
            node.stop()


if __name__ == "__main__":
    sys.exit(main())
