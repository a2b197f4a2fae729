"""A SageMaker training job on one machine: the platform minus the hardware.

    python -m codefu_helpers.launch.simulate --hosts 2 --config configs/ci_tiny.yaml --output-dir runs/sim \\
        --set trainer.nnodes=2 trainer.total_steps=4 --spot-interrupt-after-step 2

The job is rendered by the real launcher (`sagemaker_job.launch`, instance type "local") and then played the way
SageMaker plays it:

- a local S3 (a `moto_server` on 127.0.0.1) receives the channels the SDK would upload, and holds the checkpoints;
- every host gets its own disk, OUTPUT_DIR/hosts/algo-N: mounted as /opt/ml in the host's own mount namespace, with
  input/config/{resourceconfig,inputdataconfig,hyperparameters}.json, the channels downloaded from S3 into
  input/data/CHANNEL, the checkpoints restored from S3 into checkpoints/, and model/, output/; the host also gets its
  own /tmp (the Python environment and repository bound back in when they live under this machine's /tmp), /dev/shm
  and /etc/hosts (algo-N resolve through it, as SageMaker's DNS makes them), and no bubblewrap
  (the stock image has none: `bwrap` is masked, so the judge must use its container tier);
- `--small-root-hosts algo-1 ...`: those hosts' root disk (/tmp and HOME) is a tmpfs of `--small-root-mb` (8 MiB),
  and they get none of this machine's caches: the job must put its caches, downloads and Ray's session on its volume
  (/opt/ml), or a write fails there;
- `--no-landlock-hosts algo-2 ...`: those hosts run as on a kernel without Landlock (a seccomp filter answers its
  calls with ENOSYS, as such a kernel does): their entry point closes /opt/ml and the caches to the judged
  programs' uids, and the judge checks that with canaries before it takes the container tier;
- every host runs the request's ContainerEntrypoint + ContainerArguments (the SDK's `bash -c ... sm_train.sh`, its
  own driver script, which runs `exec python -m codefu_helpers.launch.entrypoint ...`) as PID 1 of its own PID
  namespace, with the request's Environment; SIGTERM goes to that PID 1, as the platform sends it;
- an uploader per host mirrors /opt/ml/checkpoints to the job's checkpoint S3 prefix the way SageMaker does: files
  as they appear or change (a file still being written may be uploaded part-way), deletions mirrored;
- `--spot-interrupt-after-step K`: once the head logged step K (with `--spot-interrupt-in-rollout`: once the head's
  trainer reports step K+1 in its rollout, in output/data/status.json), SIGTERM to every host's PID 1, SIGKILL after
  `--grace-seconds` (SageMaker's is 120 s), the uploads finished, then the job starts again on fresh disks restored
  from S3; `--interrupt-upload-at-step K`: a harder stop while step K's checkpoint uploads: the uploader puts its
  completeness marker into S3 first (a legal order), then the whole job is killed before any other file of it
  arrives, and the job restarts from what S3 holds.

OUTPUT_DIR/metrics.jsonl holds the job's metrics (the head's rows of every attempt, each with "attempt"),
OUTPUT_DIR/model the model SageMaker would upload (every host's /opt/ml/model), OUTPUT_DIR/simulation.json what
happened (per attempt: exit codes, failure files, when the interruption came, uploads and deletions), and
OUTPUT_DIR/attempts/N the disks of each earlier attempt. Hosts share the network namespace: they differ by
loopback address (127.0.0.2, 127.0.0.3, ...; Ray keeps 127.x.y.z other than 127.0.0.1 as given) and by every port,
passed to each host's entry point in $CODEFU_ENTRYPOINT_ARGS. Needs root (mount and PID namespaces; `unshare`) and
`moto_server`.

What the simulation cannot show: NCCL, EFA and GPUs (workers are CPU processes over gloo), real network latency and
bandwidth between hosts, image pulls and the pip install at start (the hosts run this environment's packages), and
S3's own consistency timing.
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
import threading
import time
from pathlib import Path

__all__ = ["simulate", "main", "LocalS3", "CheckpointUploader", "host_addresses"]

ROOT = Path(__file__).resolve().parents[2]
SIM_ROLE = "arn:aws:iam::123456789012:role/CodefuSimulation"
SIM_BUCKET = "codefu-simulation"
SIM_IMAGE = "codefu-simulated-host:local"
REGION = "us-east-1"
SMALL_ROOT_HOME = "/home/root"  # HOME of a small-root host: on the size-limited tmpfs over /home
COMPLETE_MARKER = "checkpoint_complete.json"  # codefu_helpers.checkpoint's (imported there by the hosts)


_GIVEN_PORTS: set[int] = set()  # every port handed out by this process: the kernel may offer a closed one again


def _free_port() -> int:
    """A port free now and never handed out before by this process (two Ray components given one port fail)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _GIVEN_PORTS:
            _GIVEN_PORTS.add(port)
            return port


def host_addresses(names: list[str], rank0_host: str | None = None) -> dict[str, str]:
    """{host: loopback address}: 127.0.0.2, 127.0.0.3, ... in host order, or with `rank0_host` given the address
    that sorts first as text swapped to that host. verl orders its workers by their host's address as text, so
    its rank 0 (which writes the HF model) then runs there, as on a SageMaker cluster whose algo-1 drew a higher
    address than another host (the native trainer puts its rank 0 on the head whatever the addresses)."""
    ordered = sorted((f"127.0.0.{i + 2}" for i in range(len(names))))
    addresses = dict(zip(names, ordered))
    if rank0_host is not None:
        if rank0_host not in addresses:
            raise SystemExit(f"--rank0-host {rank0_host!r}: this job's hosts are {names}")
        first = min(addresses.values())
        holder = next(h for h, a in addresses.items() if a == first)
        addresses[holder], addresses[rank0_host] = addresses[rank0_host], first
    return addresses


# ----------------------------------------------------------------------------------------------------------------
# S3


class LocalS3:
    """A moto_server on 127.0.0.1 with one bucket, and a boto3 S3 client for it (dummy credentials)."""

    def __init__(self, workdir: Path, bucket: str = SIM_BUCKET):
        import boto3

        self.bucket = bucket
        port = _free_port()
        self.endpoint = f"http://127.0.0.1:{port}"
        moto = Path(sys.executable).with_name("moto_server")
        if not moto.exists():
            raise SystemExit(f"{moto} does not exist: the simulation's S3 is moto's server (pip install 'moto[server]')")
        workdir.mkdir(parents=True, exist_ok=True)
        self.log = open(workdir / "moto.log", "wb")
        self.process = subprocess.Popen([str(moto), "-H", "127.0.0.1", "-p", str(port)], stdout=self.log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto_server did not start; see {workdir / 'moto.log'}") from None
                time.sleep(0.2)
        self.client = boto3.session.Session().client(
            "s3", endpoint_url=self.endpoint, region_name=REGION, aws_access_key_id="simulation",
            aws_secret_access_key="simulation")
        self.client.create_bucket(Bucket=bucket)

    def keys(self, prefix: str) -> dict[str, int]:
        out = {}
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            out.update({item["Key"]: item["Size"] for item in page.get("Contents", [])})
        return out

    def download_prefix(self, prefix: str, target: Path) -> int:
        """Every object under `prefix` into `target` (relative paths kept); returns how many."""
        keys = self.keys(prefix)
        for key in keys:
            rel = key[len(prefix):].lstrip("/")
            if not rel:
                continue
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            self.client.download_file(self.bucket, key, str(target / rel))
        return len(keys)

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


def _split(uri: str) -> tuple[str, str]:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return bucket, key


class CheckpointUploader(threading.Thread):
    """SageMaker's checkpoint sync for one host: every `interval` seconds, files under `local` that are new or changed
    since their last upload go to s3://bucket/`prefix`/<relative path> (oldest first; a file still being written
    goes up as it is now), and keys whose files this host uploaded and then deleted are deleted.

    `crash_at_step`: the files of step_{crash_at_step:06d} are held back until its completeness marker is there; then
    that marker alone goes up (first: a legal order), `crashed` is set and the uploader stops, and the job is killed
    before the rest of that checkpoint reaches S3."""

    def __init__(self, s3: LocalS3, local: Path, prefix: str, interval: float = 0.5,
                 crash_at_step: int | None = None):
        super().__init__(daemon=True)
        self.s3, self.local, self.prefix, self.interval = s3, local, prefix.rstrip("/"), interval
        self.crash_folder = f"step_{crash_at_step:06d}" if crash_at_step is not None else None
        # relative path -> (size, mtime_ns) when uploaded; what was restored from S3 onto this disk counts as there
        self.uploaded: dict[str, tuple[int, int]] = {
            str(f.relative_to(local)): (f.stat().st_size, f.stat().st_mtime_ns) for f in local.rglob("*") if f.is_file()}
        self.uploads = self.deletes = 0
        self.crashed = threading.Event()
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set() and not self.crashed.is_set():
            self.sync_once()
            self._halt.wait(self.interval)

    def stop(self, final_sync: bool = True) -> None:
        self._halt.set()
        self.join(timeout=60)
        if final_sync and not self.crashed.is_set():
            self.sync_once()

    def sync_once(self) -> None:
        seen = {}
        for path in self.local.rglob("*"):
            try:
                if path.is_file():
                    st = path.stat()
                    seen[str(path.relative_to(self.local))] = (st.st_size, st.st_mtime_ns)
            except FileNotFoundError:  # deleted while listing (a pruned checkpoint)
                continue
        if self.crash_folder and f"{self.crash_folder}/{COMPLETE_MARKER}" in seen:
            self._put(f"{self.crash_folder}/{COMPLETE_MARKER}", seen[f"{self.crash_folder}/{COMPLETE_MARKER}"])
            self.crashed.set()
            return
        for rel, stamp in sorted(seen.items(), key=lambda item: item[1][1]):
            if self.crash_folder and rel.startswith(self.crash_folder + "/"):
                continue  # that checkpoint's files are still "in flight" when the job is lost
            if self.uploaded.get(rel) != stamp:
                self._put(rel, stamp)
        for rel in [r for r in self.uploaded if r not in seen]:
            self.s3.client.delete_object(Bucket=self.s3.bucket, Key=f"{self.prefix}/{rel}")
            del self.uploaded[rel]
            self.deletes += 1

    def _put(self, rel: str, stamp: tuple[int, int]) -> None:
        try:
            self.s3.client.upload_file(str(self.local / rel), self.s3.bucket, f"{self.prefix}/{rel}")
        except (FileNotFoundError, OSError):
            return  # gone meanwhile (renamed or pruned): the next pass sees what replaced it
        self.uploaded[rel] = stamp
        self.uploads += 1


# ----------------------------------------------------------------------------------------------------------------
# hosts


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


def _prepare_disk(disk: Path, name: str, names: list[str], request: dict, s3: LocalS3,
                  addresses: dict[str, str]) -> dict[str, int]:
    """A fresh /opt/ml for host `name`: SageMaker's config files, the channels from S3, the checkpoints restored."""
    for sub in ("input/config", "input/data", "model", "output/data", "checkpoints", "tmp"):
        (disk / sub).mkdir(parents=True, exist_ok=True)
    (disk / "tmp").chmod(0o1777)
    (disk / "input/config/resourceconfig.json").write_text(json.dumps(
        {"current_host": name, "current_instance_type": request["ResourceConfig"]["InstanceType"], "hosts": names,
         "network_interface_name": "lo", "current_group_name": "homogeneousCluster",
         "instance_groups": [{"instance_group_name": "homogeneousCluster", "hosts": names,
                              "instance_type": request["ResourceConfig"]["InstanceType"]}]}))
    channels = {c["ChannelName"]: c for c in request["InputDataConfig"]}
    (disk / "input/config/inputdataconfig.json").write_text(json.dumps(
        {name: {"TrainingInputMode": "File", "S3DistributionType": "FullyReplicated", "RecordWrapperType": "None"}
         for name in channels}))
    (disk / "input/config/hyperparameters.json").write_text(json.dumps(request.get("HyperParameters", {})))
    counts = {}
    for channel, spec in channels.items():
        bucket, prefix = _split(spec["DataSource"]["S3DataSource"]["S3Uri"])
        if bucket != s3.bucket:
            raise SystemExit(f"channel {channel} reads s3://{bucket}/{prefix}, outside the simulation's bucket")
        counts[channel] = s3.download_prefix(prefix, disk / "input/data" / channel)
    bucket, prefix = _split(request["CheckpointConfig"]["S3Uri"])
    counts["checkpoints"] = s3.download_prefix(prefix.rstrip("/") + "/", disk / "checkpoints")
    (disk.parent / f"{name}.hosts").write_text(
        "127.0.0.1 localhost\n" + "".join(f"{addresses[h]} {h}\n" for h in names))
    return counts


BOOT = """\
import os, shutil, subprocess, sys, json
spec = json.loads(sys.argv[1])
def mount(*args):
    subprocess.run(["mount", *args], check=True)
disk, tmp, hosts_file = spec["disk"], spec["disk"] + "/tmp", spec["hosts_file"]
if not os.path.isdir("/opt/ml"):
    # no trace on this machine's /opt: a tmpfs over it, with its entries bound back and ml added
    stash = spec["stash"]
    os.makedirs(stash, exist_ok=True)
    mount("--bind", "/opt", stash)
    mount("-t", "tmpfs", "tmpfs", "/opt")
    for entry in os.listdir(stash):
        os.makedirs("/opt/" + entry, exist_ok=True)
        mount("--rbind", stash + "/" + entry, "/opt/" + entry)
    os.makedirs("/opt/ml")
mount("--bind", disk, "/opt/ml")
mount("--bind", hosts_file, "/etc/hosts")
mount("-t", "tmpfs", "-o", "size=1g", "tmpfs", "/dev/shm")
for path in spec["mask"]:
    mount("--bind", spec["masker"], path)
machine_tmp = os.open("/tmp", os.O_RDONLY | os.O_DIRECTORY)  # still reachable once the host's /tmp covers it
if spec["small_root_mb"]:  # the root disk's /tmp and HOME: size-limited, a write past the limit fails (ENOSPC)
    size = "size=%dm" % spec["small_root_mb"]
    mount("-t", "tmpfs", "-o", size, "tmpfs", "/tmp")
    mount("-t", "tmpfs", "-o", size, "tmpfs", "/home")
    os.makedirs(spec["env"]["HOME"], exist_ok=True)
else:
    mount("--bind", tmp, "/tmp")
for path in spec["keep"]:  # what the host runs from, when it lives under this machine's /tmp (a clone there)
    os.makedirs(path, exist_ok=True)
    source = "/proc/%d/fd/%d/%s" % (os.getpid(), machine_tmp, os.path.relpath(path, "/tmp"))
    mount("--no-canonicalize", "--rbind", source, path)
os.close(machine_tmp)
os.chdir("/")
os.execvpe(spec["argv"][0], spec["argv"], spec["env"])
"""


NO_LANDLOCK = """\
import errno, os, sys
import seccomp
nosys = seccomp.SyscallFilter(seccomp.ALLOW)
for name in ("landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self"):
    nosys.add_rule(seccomp.ERRNO(errno.ENOSYS), name)
nosys.load()
os.execv(sys.argv[1], sys.argv[1:])
"""


def _kept_under_tmp(env: dict[str, str]) -> list[str]:
    """The folders under this machine's /tmp that a host must still see under its own /tmp: the Python environment
    it runs, the repository (an editable install points there) and the caches passed to it; a folder inside
    another one kept is visible through it."""
    candidates = [sys.prefix, os.path.realpath(sys.prefix), str(ROOT), env.get("CODEFU_CACHE"), env.get("HF_HOME")]
    found = sorted({os.path.normpath(c) for c in candidates
                    if c and c.startswith("/tmp/") and os.path.isdir(c)}, key=lambda p: (len(p), p))
    keep = []
    for path in found:
        if not any(path == k or path.startswith(k + "/") for k in keep):
            keep.append(path)
    return keep


def _bwrap_paths(path_env: str) -> list[str]:
    found = []
    for folder in path_env.split(os.pathsep) + ["/usr/bin", "/bin", "/usr/local/bin"]:
        candidate = Path(folder) / "bwrap"
        if candidate.exists() and str(candidate.resolve()) not in found:
            found.append(str(candidate.resolve()))
    return found


class SimulatedHost:
    """One host of one attempt: its disk, its checkpoint uploader and its PID namespace (PID 1: the SDK's driver)."""

    def __init__(self, name: str, index: int, disk: Path, request: dict, env: dict[str, str], s3: LocalS3,
                 bwrap: bool, crash_at_step: int | None, landlock: bool = True, small_root_mb: int = 0):
        self.name, self.index, self.disk = name, index, disk
        argv = request["AlgorithmSpecification"]["ContainerEntrypoint"] + \
            request["AlgorithmSpecification"]["ContainerArguments"]
        masker = disk.parent / ".not-here"
        masker.write_text("")
        masker.chmod(0o644)  # not executable: shutil.which("bwrap") finds nothing
        spec = {"disk": str(disk), "hosts_file": str(disk.parent / f"{name}.hosts"),
                "stash": str(disk.parent / f".{name}-opt"), "argv": argv, "env": env, "masker": str(masker),
                "mask": [] if bwrap else _bwrap_paths(env["PATH"]), "keep": _kept_under_tmp(env),
                "small_root_mb": small_root_mb}
        _, prefix = _split(request["CheckpointConfig"]["S3Uri"])
        self.uploader = CheckpointUploader(s3, disk / "checkpoints", prefix, crash_at_step=crash_at_step)
        self.uploader.start()
        self.log = open(disk.parent / f"{name}.log", "ab")
        boot_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONNOUSERSITE": "1"}
        # a kernel without Landlock: every process of the host gets ENOSYS for its calls (libseccomp's bindings
        # exist for the system interpreter, which installs the filter and execs the host's boot)
        no_landlock = [] if landlock else ["/usr/bin/python3", "-I", "-c", NO_LANDLOCK]
        self.process = subprocess.Popen(
            ["unshare", "--pid", "--fork", "--mount", "--mount-proc", "--propagation", "private", "--",
             *no_landlock, sys.executable, "-I", "-c", BOOT, json.dumps(spec)],
            stdout=self.log, stderr=subprocess.STDOUT, env=boot_env, start_new_session=True)
        self.started = time.monotonic()
        self.finished: float | None = None

    def pid1(self) -> int | None:
        """The host PID of this host's PID 1 (unshare's child), or None once it is gone."""
        try:
            children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text().split()
        except OSError:
            return None
        return int(children[0]) if children else None

    def signal(self, signum: int) -> None:
        pid = self.pid1()
        if pid is not None:
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

    def poll(self) -> int | None:
        code = self.process.poll()
        if code is not None and self.finished is None:
            self.finished = time.monotonic() - self.started
        return code

    def close(self) -> None:
        if self.process.poll() is None:
            self.signal(signal.SIGKILL)  # PID 1 gone: the kernel kills the rest of its namespace
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.log.close()


def _host_env(request: dict, name: str, index: int, addresses: dict[str, str], ports: dict[str, int],
              dashboard: bool, job_name: str, small_root: bool = False) -> dict[str, str]:
    """The container's environment: an image's base variables, the request's Environment, what the platform sets,
    and this host's flags for the entry point (ports, on a machine whose network all hosts share). A small-root host
    has its HOME on the small disk and none of this machine's caches: it builds what it needs where the job puts it."""
    venv_bin = str(Path(sys.executable).parent)
    env = {"PATH": f"{venv_bin}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
           "HOME": SMALL_ROOT_HOME if small_root else "/root",
           "LANG": "C.UTF-8", "TRAINING_JOB_NAME": job_name,
           "TRAINING_JOB_ARN": f"arn:aws:sagemaker:{REGION}:123456789012:training-job/{job_name}",
           "RAY_AUTH_MODE": "disabled"}  # a token file of another Ray on this machine must not apply
    for passed in () if small_root else ("CODEFU_CACHE", "HF_HOME", "HF_HUB_OFFLINE"):  # the image's caches: built
        if passed in os.environ:                                                          # once, not per host
            env[passed] = os.environ[passed]
    env.update(request.get("Environment", {}))
    extra = ["--ray-port", str(ports["ray"]), "--dashboard-port", str(ports["dashboard"]),
             "--metrics-export-port", str(ports["metrics"]), "--poll", "1",
             *[f"--ray-start-arg={a}" for a in _node_args(head=index == 0)]]
    if index == 0:
        extra += ["--dashboard-host", addresses[name]] + ([] if dashboard else ["--no-dashboard"])
    if os.geteuid() == 0:
        # Simulated hosts share this machine's cores with everything else running on it, but the raylet gives its
        # agents a fixed 15 s to start (ray-project/ray#65983): their Ray sessions get a larger CPU share, which
        # matters only while they start (idle Ray daemons use next to nothing).
        extra += ["--ray-autogroup-nice=-10"]
    # the job's own extra flags (LaunchConfig.environment) after this host's
    env["CODEFU_ENTRYPOINT_ARGS"] = " ".join(extra + [env.get("CODEFU_ENTRYPOINT_ARGS", "")]).strip()
    return env


def _status(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            pass  # a line being written
    return rows


# ----------------------------------------------------------------------------------------------------------------
# the job


def simulate(config: str, output_dir: str | Path, hosts: int = 2, overrides: list[str] | None = None,
             start_hosts: int | None = None, join_timeout: float = 300.0, timeout: float = 1800.0,
             dashboard: bool = True, spot_interrupt_after_step: int | None = None,
             interrupt_upload_at_step: int | None = None, grace_seconds: float = 120.0, bwrap: bool = False,
             job_environment: dict[str, str] | None = None, no_landlock_hosts: list[str] | None = None,
             rank0_host: str | None = None, small_root_hosts: list[str] | None = None,
             small_root_mb: int = 8, spot_in_rollout: bool = False) -> dict:
    """Runs the job for `config` as `hosts` simulated hosts (only the first `start_hosts` start) and returns the
    summary also written to OUTPUT_DIR/simulation.json."""
    from ..config import ExperimentConfig
    from .sagemaker_job import LaunchConfig, launch

    if os.geteuid() != 0:
        raise SystemExit("the simulation needs root: each host gets mount and PID namespaces (unshare)")
    out = Path(output_dir).resolve()
    if out.exists() and any(out.iterdir()):
        if not ((out / "request.json").exists() or (out / "simulation.json").exists()):
            raise SystemExit(f"--output-dir {out} holds files that are not a simulation's: give an empty or new folder")
        shutil.rmtree(out)  # an earlier simulation's: replaced
    out.mkdir(parents=True, exist_ok=True)
    cfg = ExperimentConfig.from_yaml(config).with_overrides(list(overrides or [])).validate()
    plan = launch(cfg, LaunchConfig(role=SIM_ROLE, bucket=SIM_BUCKET, region=REGION, instance_type="local",
                                    instance_count=hosts, image=SIM_IMAGE, join_timeout_seconds=int(join_timeout),
                                    run_name="simulation", environment=dict(job_environment or {}),
                                    remote_debug=False, check_data=False), work_dir=out / "launch")
    request = plan.request
    (out / "request.json").write_text(json.dumps(request, indent=1))
    names = [f"algo-{i + 1}" for i in range(hosts)]
    for flag, given in (("--no-landlock-hosts", no_landlock_hosts), ("--small-root-hosts", small_root_hosts)):
        unknown = sorted(set(given or ()) - set(names))
        if unknown:
            raise SystemExit(f"{flag} {unknown}: this job's hosts are {names}")
    addresses = host_addresses(names, rank0_host)
    start_hosts = hosts if start_hosts is None else start_hosts
    s3 = LocalS3(out / "s3")
    summary: dict = {"hosts": names, "addresses": addresses, "started_hosts": names[:start_hosts], "job_name": request["TrainingJobName"],
                     "checkpoint_uri": plan.checkpoint_uri, "command": plan.command, "attempts": []}
    started = time.monotonic()
    try:
        for upload in plan.uploads:  # what the SDK uploads before CreateTrainingJob
            bucket, key = _split(upload["s3"])
            s3.client.upload_file(upload["local"], bucket, key)
        pending_spot, pending_crash = spot_interrupt_after_step, interrupt_upload_at_step
        while True:
            attempt = len(summary["attempts"]) + 1
            record = _run_attempt(out, attempt, names[:start_hosts], names, request, s3, dashboard, join_timeout,
                                  started + timeout, pending_spot, pending_crash, grace_seconds, bwrap,
                                  set(no_landlock_hosts or ()), addresses,
                                  {h: small_root_mb for h in small_root_hosts or ()},
                                  spot_in_rollout and pending_spot is not None)
            summary["attempts"].append(record)
            if record["interrupted"] == "spot":
                pending_spot = None
            elif record["interrupted"] == "upload":
                pending_crash = None
            else:
                break
            if time.monotonic() > started + timeout:
                break
        _, prefix = _split(plan.checkpoint_uri)
        summary["s3_checkpoints"] = sorted(s3.keys(prefix.rstrip("/") + "/"))
    finally:
        s3.close()
    last = summary["attempts"][-1] if summary["attempts"] else {}
    summary.update({"seconds": round(time.monotonic() - started, 1), "exit_codes": last.get("exit_codes", {}),
                    "failures": last.get("failures", {}), "host_seconds": last.get("host_seconds", {})})
    cluster = out / "hosts" / names[0] / "output/data/cluster.json"
    if cluster.exists():
        summary["cluster"] = json.loads(cluster.read_text())
    model = out / "model"
    for name in names:  # SageMaker merges every host's /opt/ml/model into one artifact
        host_model = out / "hosts" / name / "model"
        if host_model.is_dir() and any(host_model.iterdir()):
            clashes = sorted(str(p.relative_to(host_model)) for p in host_model.rglob("*")
                             if p.is_file() and (model / p.relative_to(host_model)).exists())
            if clashes:  # two hosts wrote the same file: which one the artifact keeps is not defined
                summary.setdefault("model_clashes", {})[name] = clashes
            shutil.copytree(host_model, model, dirs_exist_ok=True)
            summary.setdefault("model_from", []).append(name)
    (out / "simulation.json").write_text(json.dumps(summary, indent=1))
    return summary


def _run_attempt(out: Path, attempt: int, started_names: list[str], names: list[str], request: dict, s3: LocalS3,
                 dashboard: bool, join_timeout: float, deadline: float, spot_at: int | None, crash_at: int | None,
                 grace: float, bwrap: bool, no_landlock: set[str] = frozenset(),
                 addresses: dict[str, str] | None = None, small_root: dict[str, int] | None = None,
                 spot_in_rollout: bool = False) -> dict:
    """One start of the job on fresh disks; returns its record for simulation.json."""
    hosts_dir = out / "hosts"
    if hosts_dir.exists():  # the previous attempt's disks: kept for inspection, never seen by this one
        (out / "attempts").mkdir(exist_ok=True)
        hosts_dir.rename(out / "attempts" / str(attempt - 1))
    hosts_dir.mkdir()
    addresses = addresses or host_addresses(names)
    ports = {"ray": _free_port(), "dashboard": _free_port(), "metrics": _free_port()}
    restored, hosts = {}, []
    record: dict = {"attempt": attempt, "interrupted": None}
    try:
        for i, name in enumerate(started_names):
            disk = hosts_dir / name
            restored[name] = _prepare_disk(disk, name, names, request, s3, addresses)
            small = (small_root or {}).get(name, 0)
            env = _host_env(request, name, i, addresses, ports, dashboard, request["TrainingJobName"], bool(small))
            hosts.append(SimulatedHost(name, i, disk, request, env, s3, bwrap,
                                       crash_at_step=crash_at if i == 0 else None, landlock=name not in no_landlock,
                                       small_root_mb=small))
        record["restored_checkpoint_files"] = restored[started_names[0]]["checkpoints"] if started_names else 0
        metrics = hosts_dir / names[0] / "output/data/metrics.jsonl"
        t0 = time.monotonic()
        stop_sent = None
        while any(h.poll() is None for h in hosts) and time.monotonic() < deadline:
            steps = [r.get("step") for r in _rows(metrics)]
            if spot_in_rollout:  # the trainer's status: step spot_at + 1 generating or being judged
                status = _status(hosts_dir / names[0] / "output/data/status.json")
                reached = status.get("step") == (spot_at or 0) + 1 and status.get("phase") == "rollout"
            else:
                reached = bool(steps) and max(steps) >= (spot_at or 0)
            if spot_at is not None and stop_sent is None and reached:
                record.update(interrupted="spot", interrupted_after_step=max(steps),
                              interrupted_at=round(time.monotonic() - t0, 1))
                for h in hosts:  # the platform's stop: SIGTERM to every container's PID 1
                    h.signal(signal.SIGTERM)
                stop_sent = time.monotonic()
            if crash_at is not None and hosts and hosts[0].uploader.crashed.is_set() and record["interrupted"] is None:
                record.update(interrupted="upload", interrupted_after_step=max(steps or [0]),
                              interrupted_at=round(time.monotonic() - t0, 1))
                for h in hosts:  # lost mid-upload: no grace
                    h.signal(signal.SIGKILL)
            if stop_sent is not None and time.monotonic() - stop_sent > grace:
                record["killed_after_grace"] = [h.name for h in hosts if h.poll() is None]
                for h in hosts:
                    h.signal(signal.SIGKILL)
            time.sleep(0.05 if spot_in_rollout and stop_sent is None else 0.3)
        record["timed_out"] = any(h.poll() is None for h in hosts)
        if stop_sent is not None:
            record["stop_seconds"] = round(time.monotonic() - stop_sent, 1)
    finally:
        for h in hosts:
            h.close()
        for h in hosts:  # what is still on disk reaches S3, unless the upload itself was cut
            h.uploader.stop(final_sync=record["interrupted"] != "upload")
    record["exit_codes"] = {h.name: h.process.returncode for h in hosts}
    record["host_seconds"] = {h.name: round(h.finished, 1) for h in hosts if h.finished is not None}
    record["uploads"] = {h.name: h.uploader.uploads for h in hosts}
    record["deletes"] = {h.name: h.uploader.deletes for h in hosts}
    record["failures"] = {h.name: (hosts_dir / h.name / "output/failure").read_text() for h in hosts
                          if (hosts_dir / h.name / "output/failure").exists()}
    rows = _rows(hosts_dir / names[0] / "output/data/metrics.jsonl")
    record["steps"] = [r.get("step") for r in rows]
    with open(out / "metrics.jsonl", "a") as f:
        for row in rows:
            f.write(json.dumps({**row, "attempt": attempt}) + "\n")
    return record


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m codefu_helpers.launch.simulate", description=__doc__.splitlines()[0])
    p.add_argument("--hosts", type=int, default=2)
    p.add_argument("--config", required=True)
    p.add_argument("--output-dir", required=True)
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE")
    p.add_argument("--start-hosts", type=int, default=None, help="start only the first N hosts (failure drill)")
    p.add_argument("--join-timeout", type=float, default=300.0)
    p.add_argument("--timeout", type=float, default=1800.0)
    p.add_argument("--spot-interrupt-after-step", type=int, default=None,
                   help="once the head logged this step: SIGTERM every host, SIGKILL after --grace-seconds, restart")
    p.add_argument("--spot-interrupt-in-rollout", action="store_true",
                   help="with --spot-interrupt-after-step K: the SIGTERM comes while step K+1 generates or is judged "
                        "(the head's status.json), not once step K is logged")
    p.add_argument("--interrupt-upload-at-step", type=int, default=None,
                   help="kill the job while this step's checkpoint uploads (its marker only in S3), restart")
    p.add_argument("--grace-seconds", type=float, default=120.0, help="SIGTERM to SIGKILL (SageMaker: 120)")
    p.add_argument("--with-bwrap", action="store_true", help="leave bubblewrap on the hosts' PATH (the stock image "
                   "has none)")
    p.add_argument("--job-env", nargs="*", default=[], metavar="KEY=VALUE", help="LaunchConfig.environment")
    p.add_argument("--no-landlock-hosts", nargs="*", default=[], metavar="HOST",
                   help="hosts (algo-N) that run as on a kernel without Landlock")
    p.add_argument("--no-dashboard", action="store_true",
                   help="no Ray dashboard on the head: a lighter start on a small machine")
    p.add_argument("--small-root-hosts", nargs="*", default=[], metavar="HOST",
                   help="hosts whose root disk (/tmp and HOME) is a tmpfs of --small-root-mb: the job must keep its big "
                        "files on the job's volume")
    p.add_argument("--small-root-mb", type=int, default=8)
    p.add_argument("--rank0-host", default=None, metavar="HOST",
                   help="give this host the address that sorts first, where verl puts its rank 0 (default: algo-1)")
    args = p.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))  # stop the hosts on the way out
    summary = simulate(args.config, args.output_dir, args.hosts, args.set, args.start_hosts, args.join_timeout,
                       args.timeout, dashboard=not args.no_dashboard,
                       spot_interrupt_after_step=args.spot_interrupt_after_step,
                       interrupt_upload_at_step=args.interrupt_upload_at_step, grace_seconds=args.grace_seconds,
                       bwrap=args.with_bwrap, job_environment=dict(item.split("=", 1) for item in args.job_env),
                       no_landlock_hosts=args.no_landlock_hosts, rank0_host=args.rank0_host,
                       small_root_hosts=args.small_root_hosts, small_root_mb=args.small_root_mb,
                       spot_in_rollout=args.spot_interrupt_in_rollout)
    print(json.dumps({k: v for k, v in summary.items() if k != "s3_checkpoints"}, indent=1))
    return 0 if summary["exit_codes"] and all(c == 0 for c in summary["exit_codes"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
