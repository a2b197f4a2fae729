"""One Ray node per host, started with `ray start --block` and stopped without touching any other Ray.

Key idea: each node is one `ray start --block` process that leads its own process group (Ray makes it
the group leader and starts a reaper in it), so stopping a node is SIGTERM to that group, then SIGKILL
after a grace period. `ray stop` is never used: it kills every Ray process of the user on the machine,
including other clusters (a simulation's other hosts, or someone else's).

    node = RayNode(host="algo-1", ip="10.0.0.1", port=6379, head=True, log_path=...)
    node.start(timeout=120)
    joined, missing = wait_for_hosts(node.address, ["algo-1", "algo-2"], timeout=300)
    node.stop()

Node names are the SageMaker host names (`--node-name`), and each node carries a custom resource
`host:<name>` = 1, so the head can tell which hosts joined and work can be pinned to a host.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..sandbox.isolation import private_directory

__all__ = ["RayNode", "RayStartError", "port_open", "wait_for_port", "wait_for_hosts", "ray_executable", "run_on_hosts"]

STARTED_MARKER = "Ray runtime started"
# The raylet gives its dashboard/runtime-env agents a fixed 15 s to write their port files and exits when they
# are late (ray-project/ray#65983): a loaded host can miss that, so a failed start is retried.
START_ATTEMPTS = 5


class RayStartError(RuntimeError):
    """`ray start` did not bring a node up."""


def ray_executable() -> str:
    """The `ray` CLI of this interpreter's environment (falls back to PATH)."""
    beside = Path(sys.executable).with_name("ray")
    if beside.exists():
        return str(beside)
    found = shutil.which("ray")
    if not found:
        raise RayStartError("the `ray` command is not installed: pip install 'ray[default]'")
    return found


def port_open(ip: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((ip, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_for_port(ip: str, port: int, timeout: float, poll: float = 1.0) -> bool:
    """True once something accepts connections on ip:port, False after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if port_open(ip, port):
            return True
        time.sleep(poll)
    return False


@dataclass
class RayNode:
    host: str                   # SageMaker host name, e.g. algo-1: the Ray node name
    ip: str                     # the address this node binds and advertises
    port: int                   # the head's GCS port (the head listens on it; others join it)
    head: bool
    log_path: Path
    head_ip: str | None = None  # workers: where the head is (default: ip)
    dashboard_port: int = 8265
    dashboard_host: str = "0.0.0.0"     # reachable from the instance (SSM port forward); loopback in a simulation
    dashboard: bool = True                # head: serve the Ray dashboard
    metrics_export_port: int = 8080
    temp_dir: str | None = None          # head only: holds Ray's session files (short path: unix sockets live there)
    extra_args: list[str] = field(default_factory=list)  # e.g. fixed ports, --num-gpus, --object-store-memory
    env: dict[str, str] | None = None
    # The node runs in its own session, which Linux schedules as one group against other sessions
    # (sched_autogroup); a negative value raises that group's share (root only), see `start`.
    autogroup_nice: int = 0
    process: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        return f"{self.head_ip or self.ip}:{self.port}"

    def command(self) -> list[str]:
        argv = [ray_executable(), "start", "--block", "--disable-usage-stats", "--node-ip-address", self.ip,
                "--node-name", self.host, "--resources", f'{{"host:{self.host}": 1}}']
        if self.head:
            # a fixed-size cluster: no autoscaler monitor
            argv += ["--head", "--port", str(self.port), "--no-monitor",
                     "--include-dashboard", str(self.dashboard).lower(),
                     "--dashboard-host", self.dashboard_host, "--dashboard-port", str(self.dashboard_port),
                     "--metrics-export-port", str(self.metrics_export_port)]
            if self.temp_dir:  # Ray makes its temp dir 0777: it gets one inside the given, private, directory
                argv += ["--temp-dir", os.path.join(self.temp_dir, "ray")]
        else:
            argv += ["--address", self.address]
        return argv + list(self.extra_args)

    def start(self, timeout: float = 180.0, attempts: int = START_ATTEMPTS, until: float | None = None) -> None:
        """Starts the node and returns once Ray reports it running; retries `attempts` times, or until the
        time.monotonic() deadline `until` when given (a joining host whose head is still coming up).
        RayStartError with the log tail when it never came up."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        if self.head and self.temp_dir:
            private_directory(self.temp_dir)
        attempt = 0
        while True:
            attempt += 1
            offset = self.log_path.stat().st_size if self.log_path.exists() else 0
            env = dict(os.environ if self.env is None else self.env)
            # no drain on stop: these nodes hold no Serve replicas, and a stopping SageMaker host's grace period
            # (120 s) is for the checkpoint save, not for a 30 s idle drain
            env.setdefault("RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S", "0")
            with open(self.log_path, "ab") as log:
                self.process = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                                start_new_session=True, env=env)
            self._set_autogroup_nice()
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if STARTED_MARKER in self._log_since(offset):
                    return
                if self.process.poll() is not None:
                    break
                time.sleep(0.5)
            self.stop(grace=10)
            more = time.monotonic() < until if until is not None else attempt < attempts
            if not more:
                break
            print(f"[{self.host}] ray start failed (attempt {attempt}); retrying", flush=True)
            time.sleep(2.0)
        raise RayStartError(f"ray start on {self.host} did not start a node ({attempt} attempts); command: "
                            f"{' '.join(self.command())}; last output:\n{self._log_since(0)[-2000:]}")

    def _set_autogroup_nice(self) -> None:
        if not self.autogroup_nice:
            return
        try:
            Path(f"/proc/{self.process.pid}/autogroup").write_text(str(self.autogroup_nice))
        except OSError:
            pass  # no autogroup scheduling here, or not root: the node keeps the default share

    def _log_since(self, offset: int) -> str:
        with open(self.log_path, "rb") as f:
            f.seek(offset)
            return f.read().decode("utf-8", "replace")

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, grace: float = 30.0) -> None:
        """SIGTERM this node's process group (Ray drains and shuts its processes down), SIGKILL after `grace`."""
        if self.process is None:
            return
        group = self.process.pid  # leader of its own session (start_new_session), so pgid == pid
        try:
            os.killpg(group, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(group, signal.SIGKILL)  # anything of this node still running (workers, agents)
        except ProcessLookupError:
            pass
        self.process.wait()


def wait_for_hosts(address: str, hosts: list[str], timeout: float, poll: float = 2.0,
                   log=print) -> tuple[list[str], list[str]]:
    """Connects to the cluster at `address` as a driver and waits until a live Ray node is named after every
    host; returns (joined, missing) when all joined or `timeout` seconds passed. Disconnects before returning."""
    import ray

    deadline = time.monotonic() + timeout
    ray.init(address=address, logging_level="ERROR", log_to_driver=False, configure_logging=False)
    try:
        last = None
        while True:
            joined = sorted({n["NodeName"] for n in ray.nodes() if n["Alive"]} & set(hosts))
            missing = [h for h in hosts if h not in joined]
            if joined != last:
                log(f"Ray nodes up: {len(joined)}/{len(hosts)} ({', '.join(joined)})")
                last = joined
            if not missing or time.monotonic() >= deadline:
                return joined, missing
            time.sleep(poll)
    finally:
        ray.shutdown()


def run_on_hosts(address: str, calls: dict[str, tuple], timeout: float = 600.0) -> dict[str, object]:
    """Runs `fn(*args)` on each named host of the cluster at `address` ({host: (fn, *args)}), pinned there by the
    `host:<name>` resource its node carries, and returns {host: result}; what `fn` does to files happens on that
    host's own disk. Uses no CPU of the node's (num_cpus=0): it runs even while training holds every CPU. A host
    without a live node, or a call past `timeout` seconds, is an error naming the host. Connects as a driver only
    when this process is not one yet, and then disconnects."""
    import ray

    connected = ray.is_initialized()
    if not connected:
        ray.init(address=address, logging_level="ERROR", log_to_driver=False, configure_logging=False)
    try:
        live = {n["NodeName"] for n in ray.nodes() if n["Alive"]}
        absent = [h for h in calls if h not in live]
        if absent:
            raise RuntimeError(f"no live Ray node for host(s) {', '.join(absent)} (live: {', '.join(sorted(live))})")
        refs = {host: ray.remote(fn).options(num_cpus=0, resources={f"host:{host}": 0.001}, max_retries=0)
                .remote(*args) for host, (fn, *args) in calls.items()}
        out = {}
        for host, ref in refs.items():
            try:
                out[host] = ray.get(ref, timeout=timeout)
            except ray.exceptions.GetTimeoutError:
                raise RuntimeError(f"{getattr(calls[host][0], '__name__', 'the call')} on host {host} did not "
                                   f"finish in {timeout:.0f} s") from None
        return out
    finally:
        if not connected:
            ray.shutdown()
