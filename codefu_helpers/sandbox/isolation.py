"""Starting one sandboxed fork server and talking to it: the isolation tiers, the bubblewrap command line and
the pipe protocol.

Tiers (`Judge(isolation=...)`; "auto" takes the first that works here):

  bwrap      bubblewrap namespaces, which need no privileged container: as root bubblewrap uses the kernel's
             namespaces directly, as an ordinary user it first creates a user namespace. Each server gets
                 fresh network (loopback only), PID, mount, IPC and UTS namespaces; --new-session (no terminal);
                 a root file system holding only read-only /usr (+ the /bin, /lib symlinks), the dynamic-linker
                 cache, the server script, the compiled binaries (a directory only root may enter) and the judge
                 cache (precompiled header), all read-only; an empty environment (nothing like AWS_* or HF_TOKEN
                 reaches a program); --die-with-parent;
             plus a size-limited /tmp (the compiler's build space) and /dev/shm that programs cannot write. Inside,
             `_server.py` adds a non-root uid, rlimits, seccomp filters, a CPU timer, one process per program and a
             fresh fork of a request-free zygote per sample (see its docstring). Root without the capabilities
             bubblewrap needs is handled by `Judge`: it starts the sandboxes as `nobody` instead, which bubblewrap
             isolates with a user namespace like any ordinary user.
  container  for root inside a container that may create no namespace at all (Docker's default seccomp profile:
             SageMaker training jobs). The server runs as root without bubblewrap and every program as its slot's
             own unprivileged uid, with the same rlimits and seccomp filters (which there also keep sockets off
             the network), Landlock file rules, an empty environment, and every process of the slot's uid killed
             when its server starts. Chosen by "auto" only as root, when bubblewrap cannot start a sandbox
             (namespaces refused, as under Docker's default seccomp profile) or is not installed at all (the stock
             PyTorch images), and said loudly (`Judge.info()["isolation_line"]`). On a kernel without Landlock
             (before 5.13) nothing would keep programs from reading the host's world-readable files -- the data
             channels, checkpoints, the repository with its dataset: the judge refuses to start there unless
             asked with `programs_may_read_host_files=True` ($CODEFU_JUDGE_PROGRAMS_MAY_READ_HOST_FILES=1).
  landlock   for an ordinary user who may create no namespaces (a SageMaker Studio space: a non-root user under
             Docker's seccomp profile; Ubuntu 23.10+ restricting user namespaces with AppArmor). No bubblewrap, no
             uid change: programs run as that user, so what keeps them from the user's files and the judge's
             processes is Landlock (the system's files and the program's own binary only; each run a domain of
             its own, which from ABI 6 scopes signals and abstract sockets to the run) and seccomp (no new
             process, ptrace, socket or namespace; no signal at all before Landlock ABI 6); the judge's processes
             are not dumpable, and a run is cleaned up by its process group, never by uid. Chosen by "auto" for a
             non-root user when bubblewrap cannot start (or is not installed) and Landlock is there; without
             Landlock the judge refuses, naming the three ways out (`no_tier_message`).
  none       runs programs as the calling user: only for machines where no tier can work, only when asked for by
             name, and it says so loudly.

`python -m codefu_helpers.sandbox.doctor` (`make doctor`) says which tier "auto" takes on a machine and why not a
better one.
"""

from __future__ import annotations

import json
import logging
import os
import select
import shutil
import stat
import struct
import subprocess
import sys
import time
import warnings
from pathlib import Path

log = logging.getLogger(__name__)

ISOLATION_CHOICES = ("auto", "bwrap", "container", "landlock", "none")
TIER_OF_MODE = {"root": "bwrap", "userns": "bwrap", "container": "container", "landlock": "landlock",
                "none": "none"}  # how -> which tier
SERVER_SCRIPT = Path(__file__).with_name("_server.py")
DEFAULT_PYTHON = "/usr/bin/python3"
TMP_SIZE_BYTES = 256 << 20  # the compiler's /tmp in a sandbox (tmpfs: only what is used costs memory)
INSTALL_HINT = ("install it with `sudo scripts/setup_system.sh` (Debian/Ubuntu: `apt-get install bubblewrap`); as root "
                "in a container that may not create namespaces, pass isolation='container' (environment: "
                "CODEFU_JUDGE_ISOLATION=container); or, only on a machine where you accept running model-written "
                "code unisolated, pass isolation='none'")


class SandboxUnavailableError(RuntimeError):
    """The judge cannot isolate programs on this machine (and running them unisolated was not asked for)."""


class WorkerCrashed(RuntimeError):
    """A sandboxed server died, hung or broke the protocol: a judge failure, not a program verdict."""


def resolve_isolation(isolation: str) -> tuple[str, str | None]:
    """('root', 'userns', 'container' or 'none', why when it is not the first choice): how the servers will run
    first (`Judge` may fall back from 'root' to 'userns', and with "auto" to 'container'). Raises when what is asked
    for cannot work here."""
    if isolation not in ISOLATION_CHOICES:
        raise ValueError(f"isolation must be one of {ISOLATION_CHOICES}, got {isolation!r}")
    if isolation == "container":
        if os.geteuid() != 0:
            raise SandboxUnavailableError(
                f"isolation='container' runs each worker's programs as its own uid, which needs root (this process "
                f"runs as uid {os.geteuid()}): use it as root in a container (SageMaker jobs run as root), or use "
                f"isolation='bwrap'")
        return "container", None
    if isolation == "landlock":
        if os.geteuid() == 0:
            raise SandboxUnavailableError(
                "isolation='landlock' runs programs as this very user, for users who may neither create namespaces "
                "nor switch uids; as root use isolation='container' (a uid per worker) or 'bwrap'")
        if host_landlock_abi() is None:
            raise SandboxUnavailableError(no_tier_message("isolation='landlock' was asked for"))
        return "landlock", None
    if isolation == "none":
        message = ("CODEFU JUDGE RUNS MODEL-WRITTEN CODE UNISOLATED (isolation='none'): programs run as your "
                   "user, can read and write your files, reach the network and leave processes behind. Use "
                   "this only where neither the bwrap nor the container tier can run.")
        warnings.warn(message, RuntimeWarning, stacklevel=3)
        log.warning(message)
        print(f"WARNING: {message}", file=sys.stderr)
        return "none", None
    if shutil.which("bwrap") is None:
        if isolation == "auto" and os.geteuid() == 0:  # a stock image (SageMaker's PyTorch DLC) has none
            return "container", "bubblewrap (bwrap) is not installed here"
        if isolation == "auto" and host_landlock_abi() is not None:  # an ordinary user: the landlock tier
            return "landlock", "bubblewrap (bwrap) is not installed here"
        if isolation == "auto":
            raise SandboxUnavailableError(no_tier_message("bubblewrap (bwrap) is not installed here"))
        raise SandboxUnavailableError(f"bubblewrap (bwrap) is not on PATH, so the judge cannot isolate "
                                      f"programs: {INSTALL_HINT}")
    return ("root" if os.geteuid() == 0 else "userns"), None


def no_tier_message(why: str) -> str:
    """Why no tier can protect the host's files for this user here, and the three ways out."""
    return (f"the judge cannot isolate programs here: {why}, and this kernel ({os.uname().release}) has no Landlock "
            "for the landlock tier, which an ordinary user without namespaces needs. Three ways out: (1) let this "
            "user create user namespaces for the bwrap tier -- Ubuntu 23.10+: `sudo sysctl -w "
            "kernel.apparmor_restrict_unprivileged_userns=0`, Docker: `--security-opt seccomp=unconfined "
            "--security-opt apparmor=unconfined`, and install bubblewrap; (2) a kernel with Landlock (Linux 5.13+ "
            "with `landlock` in /sys/kernel/security/lsm; not refused by a seccomp profile); (3) run the judge as "
            "root (`sudo`, or a container's root), which gives the container tier. `make doctor` says which "
            "applies here")


def private_directory(path: str | os.PathLike) -> Path:
    """`path` as a directory only this user may enter (0700), made if missing: for the project's own temporary
    directories, which judged programs (other uids in the container tier) must not reach. Ray, for one, makes its
    temp dir and the session, socket and log directories in it 0777; behind a private parent nobody else gets to
    them. Refuses a path that is a symlink or belongs to another user (on a shared /tmp someone may have made it
    first)."""
    path = Path(path)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise PermissionError(f"{path} is not a directory of uid {os.geteuid()} (a symlink, or another user's): "
                              f"remove it, or choose another directory")
    os.chmod(path, 0o700)
    return path


def check_python(python: str) -> str:
    path = Path(python)
    if not path.is_absolute() or not path.exists():
        raise SandboxUnavailableError(
            f"the sandbox interpreter {python!r} does not exist: the judge runs Python submissions with the "
            f"system interpreter (Debian/Ubuntu: apt-get install python3), or pass python=/usr/bin/python3.X")
    real = os.path.realpath(path)
    if not real.startswith("/usr/"):
        raise SandboxUnavailableError(
            f"the sandbox interpreter {python!r} resolves to {real}, outside /usr: only /usr is mounted in the "
            f"sandbox, so use a system interpreter such as /usr/bin/python3")
    return python


def _root_links() -> list[str]:
    """/bin, /lib, ... as on the host: symlinks into /usr on merged-/usr systems, else read-only binds."""
    args = []
    for name in ("bin", "sbin", "lib", "lib64", "lib32", "libx32"):
        host = Path("/") / name
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), f"/{name}"]
        elif host.is_dir():
            args += ["--ro-bind", str(host), f"/{name}"]
    return args


def compile_server(python: str, folder: Path) -> Path:
    """`_server.py` compiled by the sandbox's interpreter into `folder`/server.pyc (0644), which servers run.

    Compiled here, once per judge: compiling 1,600 lines at each server's start leaves its heap a few MB larger
    (the compiler's peak, fragmented), and every page there is one more for each run's fork to copy."""
    target = folder / "server.pyc"
    code = ("import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], dfile='/judge/server.py', "
            "doraise=True)")
    proc = subprocess.run([python, "-I", "-c", code, str(SERVER_SCRIPT), str(target)], capture_output=True,
                          text=True, timeout=120)
    if proc.returncode != 0:
        raise SandboxUnavailableError(f"{python} could not compile the judge's server: {proc.stderr[-2000:]}")
    target.chmod(0o644)
    return target


def server_command(mode: str, python: str, config: dict, bin_dir: Path, cache_root: Path,
                   server: Path = SERVER_SCRIPT) -> list[str]:
    """The argv that starts one server: bwrap ... python3 -I -B /judge/server.pyc CONFIG (or the bare server);
    `server` is `_server.py` or what `compile_server` made of it."""
    if mode in ("none", "container", "landlock"):
        return [python, "-I", "-B", str(server), json.dumps(config)]
    args = ["bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session", "--hostname", "judge"]
    if mode == "userns":
        args += ["--unshare-user", "--uid", "0", "--gid", "0", "--cap-add", "ALL"]
    # as root, bwrap makes no user namespace and keeps the capabilities the server needs (not --unshare-all:
    # that would add a user namespace mapping only uid 0, and the per-worker uid could not be used)
    args += ["--ro-bind", "/usr", "/usr", *_root_links(),
             "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
             "--ro-bind-try", "/etc/alternatives", "/etc/alternatives",
             "--proc", "/proc", "--dev", "/dev",
             # root's alone: programs create no files (the server makes the compiler a build directory in /tmp)
             "--perms", "0755", "--size", str(TMP_SIZE_BYTES), "--tmpfs", "/tmp",
             "--perms", "0755", "--size", "4096", "--tmpfs", "/dev/shm",
             "--dir", "/judge",
             "--ro-bind", str(server), f"/judge/server{server.suffix}",
             "--ro-bind", str(bin_dir), "/judge/bin",
             "--ro-bind", str(cache_root), "/judge/cache"]
    args += ["--chdir", "/tmp", "--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "LANG", "C.UTF-8",
             "--setenv", "HOME", "/tmp", python, "-I", "-B", f"/judge/server{server.suffix}", json.dumps(config)]
    return args


def host_landlock_abi() -> int | None:
    """The Landlock ABI this process (and so the container tier's servers it starts) can use; None: none."""
    from ._server import landlock_abi  # the server's own code, shared

    return landlock_abi()


def remove_tree(path, keep_top: bool = False) -> None:
    """Deletes a directory tree whatever a program made of it (depth, names, modes); see `_server.remove_tree`."""
    from ._server import remove_tree as remove

    remove(os.fspath(path), keep_top)


def kill_processes_of_uids(uids, timeout: float = 10.0) -> list[int]:
    """Container tier, when a judge closes: kills every process of its workers' uids (stopped first, so that none
    escapes by forking: see `_server.stop_then_kill`); returns the pids still alive after `timeout` (normally
    none). Each server already does this after every run; this catches what a server that died mid-run left."""
    from ._server import processes_of_uids, stop_then_kill  # the server's own code, shared

    deadline = time.monotonic() + timeout
    try:
        while stop_then_kill(set(uids), deadline):
            time.sleep(0.01)
    except RuntimeError:
        pass
    return sorted(processes_of_uids(set(uids)))


class SandboxProcess:
    """One running server and its pipes. Not thread-safe: exactly one judge worker thread owns it.

    Start it from the thread that will own it for its whole life: bwrap's --die-with-parent ties the sandbox to
    the *thread* that spawned it (PR_SET_PDEATHSIG), so a sandbox started from a short-lived thread would die
    with that thread.
    """

    def __init__(self, argv: list[str], log_path: Path, startup_timeout: float = 30.0,
                 run_as: tuple[int, int] | None = None):
        self.argv = argv
        self.log_path = log_path
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}  # nothing else leaves
        # the log holds the server's own errors; in the container tier programs share the file system with it
        self._log = open(os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab")
        ids = {"user": run_as[0], "group": run_as[1], "extra_groups": []} if run_as else {}
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                                     env=env, close_fds=True, start_new_session=True, bufsize=0, **ids)
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        os.set_blocking(self._in, False)
        try:
            self.hello, _ = self._read_message(time.monotonic() + startup_timeout)
        except WorkerCrashed as exc:
            self.close()
            tail = self.stderr_tail().strip()
            stderr = "" if tail in str(exc) else f"its stderr:\n{tail}\n"
            raise SandboxUnavailableError(
                f"the judge sandbox did not start: {exc}\ncommand: {' '.join(argv[:40])} ...\n"
                f"{stderr}If bubblewrap cannot create namespaces here: containers "
                f"need unprivileged user namespaces allowed (or CAP_SYS_ADMIN for root), and as root the judge "
                f"falls back to its container tier with isolation='auto'; Ubuntu 24.04+ restricts user namespaces "
                f"with AppArmor (sysctl kernel.apparmor_restrict_unprivileged_userns=0, or a bwrap AppArmor "
                f"profile); otherwise {INSTALL_HINT}") from None

    def stderr_tail(self, limit: int = 3000) -> str:
        try:
            data = self.log_path.read_bytes()
        except OSError:
            return ""
        return data[-limit:].decode("utf-8", "replace")

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def request(self, header: dict, blobs: list[bytes], timeout: float) -> tuple[dict, list[bytes]]:
        deadline = time.monotonic() + timeout
        head = json.dumps(header).encode()
        parts = [struct.pack("<II", len(head), len(blobs)), head]
        for blob in blobs:
            parts += [struct.pack("<Q", len(blob)), blob]
        self._write_all(b"".join(parts), deadline)
        return self._read_message(deadline)

    def _write_all(self, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        while view:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkerCrashed("timed out sending a request to the judge sandbox")
            _, writable, _ = select.select([], [self._in], [], left)
            if not writable:
                continue
            try:
                view = view[os.write(self._in, view):]
            except BlockingIOError:
                continue
            except (BrokenPipeError, OSError) as exc:
                raise WorkerCrashed(f"the judge sandbox is gone ({exc}); its stderr:\n{self.stderr_tail()}") from None

    def _read_exact(self, n: int, deadline: float) -> bytes:
        chunks, left = [], n
        while left:
            wait = deadline - time.monotonic()
            if wait <= 0:
                raise WorkerCrashed("timed out waiting for the judge sandbox to answer")
            ready, _, _ = select.select([self._out], [], [], wait)
            if not ready:
                continue
            chunk = os.read(self._out, min(left, 1 << 20))
            if not chunk:
                try:
                    self.proc.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    pass
                raise WorkerCrashed(f"the judge sandbox exited (status {self.proc.returncode}); its stderr:\n"
                                    f"{self.stderr_tail()}")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _read_message(self, deadline: float) -> tuple[dict, list[bytes]]:
        hlen, nblobs = struct.unpack("<II", self._read_exact(8, deadline))
        if hlen > (16 << 20) or nblobs > 16:
            raise WorkerCrashed(f"judge sandbox protocol error (header {hlen} bytes, {nblobs} blobs)")
        try:
            header = json.loads(self._read_exact(hlen, deadline))
        except ValueError as exc:
            raise WorkerCrashed(f"judge sandbox protocol error: {exc}") from None
        blobs = []
        for _ in range(nblobs):
            (blen,) = struct.unpack("<Q", self._read_exact(8, deadline))
            if blen > (1 << 30):
                raise WorkerCrashed(f"judge sandbox protocol error (a {blen}-byte blob)")
            blobs.append(self._read_exact(blen, deadline))
        return header, blobs

    def close(self, grace: float = 1.0) -> None:
        """Asks the server to exit, then kills the sandbox's whole process group."""
        if self.proc.poll() is None:
            try:
                self._write_all(struct.pack("<II", 13, 0) + b'{"op":"exit"}', time.monotonic() + 0.2)
            except WorkerCrashed:
                pass
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, 9)
            except OSError:
                pass
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                log.error("judge sandbox %d did not die", self.proc.pid)
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self._log.close()

    def forget(self) -> None:
        """In a forked child: drop the inherited pipes without touching the parent's sandbox."""
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        try:
            self._log.close()
        except OSError:
            pass
