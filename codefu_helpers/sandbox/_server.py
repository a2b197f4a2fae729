"""The fork server that runs inside each judge sandbox (one per worker). Standard library only.

The host starts this file with the system interpreter (`/usr/bin/python3 -I`) inside a bubblewrap sandbox
(fresh network, PID, IPC and UTS namespaces; read-only /usr; no host files; empty environment) and talks to it
over stdin/stdout with length-prefixed JSON headers plus raw byte blobs (see `read_message`). The server never
runs model code itself and never sees expected outputs: output checking happens on the host.

Per program run it forks a child that sets rlimits, drops to a non-root uid with no capabilities, arms a CPU
timer (ITIMER_PROF: the exact time-limit kill) and then either execs a compiled binary or runs the model's
Python *in this already-started interpreter* -- no interpreter start-up per test, which is what makes a Python
test cost milliseconds. stdin, stdout and stderr are memfds; RLIMIT_FSIZE caps what the program can write.

Modes (argv[1] JSON "mode"):
  "root"   the host runs as root (SageMaker, CI). bubblewrap makes no user namespace. Each worker has its own
           uid for programs. A seccomp filter (below) is installed once, in the server, so every run inherits
           it for free. After each run the server (root, pid 2 of the sandbox's PID namespace) calls
           kill(-1, SIGKILL) -- atomically every process in the sandbox except bubblewrap's init and itself,
           so a daemon cannot outlive its test -- and wipes /tmp and /dev/shm.
  "userns" an ordinary user: bubblewrap made a user namespace in which every process is the same host uid,
           so the server protects itself with a PID namespace per run instead: a monitor (pid 1 there, with
           a fresh /tmp, /dev/shm and /proc) forks the program, which enters a nested user namespace as uid
           1000 and installs the seccomp filter; when the monitor exits the kernel kills everything left.
  "none"   explicitly unisolated: no namespaces, no uid change; process-group kill and a temp directory.
"""

import ctypes
import errno
import json
import os
import resource
import select
import shutil
import signal
import stat
import struct
import sys
import time

# Modules model-written solutions commonly import, loaded once here so that a test does not pay for them. Not
# `threading` (nor `queue`, which imports it) and not `random`: both register fork hooks that would run in every
# child (together ~0.8 ms of a ~1 ms fork); the few programs that use them import them fresh, and `random` then
# seeds itself from the kernel (`statistics` imports `random`, so it is left out too).
PRELOAD = ("array", "bisect", "cmath", "collections", "copy", "dataclasses", "decimal", "enum", "fractions",
           "functools", "heapq", "io", "itertools", "math", "operator", "re", "string", "traceback",
           "types", "typing", "atexit", "builtins")
for _name in PRELOAD:
    __import__(_name)
import atexit  # noqa: E402
import builtins  # noqa: E402
import gc  # noqa: E402
import io  # noqa: E402
import traceback  # noqa: E402
import types  # noqa: E402

LIBC = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID = 0x00020000, 0x08000000, 0x10000000, 0x20000000
CLONE_NEWUTS, CLONE_NEWNET, CLONE_NEWCGROUP = 0x04000000, 0x40000000, 0x02000000
MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP = 4, 24, 38, 22
SANDBOX_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp", "TMPDIR": "/tmp"}
NESTED_UID = 1000  # the uid model code sees in "userns" mode
STATUS_READY = b"R"  # child -> monitor: set-up done, model code starts now


def _check(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def unshare(flags):
    _check(LIBC.unshare(ctypes.c_int(flags)), f"unshare({flags:#x})")


def setns(fd, nstype):
    _check(LIBC.setns(ctypes.c_int(fd), ctypes.c_int(nstype)), "setns")


def mount(source, target, fstype, flags, data):
    _check(LIBC.mount(source.encode(), target.encode(), fstype.encode(), ctypes.c_ulong(flags),
                      data.encode() if data else None), f"mount {fstype} on {target}")


def prctl(option, arg2=0):
    _check(LIBC.prctl(ctypes.c_int(option), ctypes.c_ulong(arg2), ctypes.c_ulong(0), ctypes.c_ulong(0),
                      ctypes.c_ulong(0)), f"prctl({option})")


# ---------------------------------------------------------------------------------------------------------
# seccomp: a small deny list on top of the namespaces and the uid. It removes the kernel interfaces that sandbox
# escapes usually go through (new namespaces, ptrace, keyrings, bpf, io_uring, mounting, modules) and the
# SysV / POSIX IPC objects that would otherwise outlive a run. No contest solution needs any of them.

_SECCOMP = {
    # machine: (AUDIT_ARCH, x32 bit or None, clone nr, clone3 nr, denied syscall numbers)
    "x86_64": (0xC000003E, 0x40000000, 56, 435, (
        101, 165, 166, 155, 161, 308, 272, 250, 248, 249, 321, 298, 323, 425, 426, 427, 246, 320, 175, 313,
        176, 167, 168, 169, 163, 310, 311, 304, 303, 428, 429, 430, 431, 432, 433, 442, 179, 103,
        29, 30, 31, 64, 65, 66, 67, 68, 69, 70, 71, 220, 240, 241, 242, 243, 244, 245)),
    "aarch64": (0xC00000B7, None, 220, 435, (
        117, 40, 39, 41, 51, 268, 97, 219, 217, 218, 280, 241, 282, 425, 426, 427, 104, 294, 105, 273,
        106, 224, 225, 142, 89, 270, 271, 265, 264, 428, 429, 430, 431, 432, 433, 442, 60, 116,
        186, 187, 188, 189, 190, 191, 192, 193, 194, 195, 196, 197, 180, 181, 182, 183, 184, 185)),
}
_NS_FLAGS = CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWNET | CLONE_NEWCGROUP


def _seccomp_program(machine):
    """Classic BPF: wrong ABI -> kill; denied syscall -> EPERM; clone3 -> ENOSYS; clone with a namespace flag
    -> EPERM; everything else allowed. Returns the bytes of a struct sock_filter array."""
    arch, x32, clone_nr, clone3_nr, denied = _SECCOMP[machine]
    LD_W_ABS, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
    ALLOW, KILL = 0x7FFF0000, 0x80000000
    EPERM, ENOSYS = 0x00050000 | errno.EPERM, 0x00050000 | errno.ENOSYS
    checks = [(JGE, x32, "eperm")] if x32 is not None else []  # x32 ABI numbers alias the x86_64 ones
    checks += [(JEQ, nr, "eperm") for nr in denied]
    checks += [(JEQ, clone3_nr, "enosys"), (JEQ, clone_nr, "clone")]  # clone3's flags are out of BPF's reach
    # seccomp_data: nr at offset 0, arch at 4, args[0] at 16 (its low half on little-endian machines)
    prog = [(LD_W_ABS, 0, 0, 4), (JEQ, 1, 0, arch), (RET, 0, 0, KILL), (LD_W_ABS, 0, 0, 0)]
    base = len(prog) + len(checks)
    labels = {"clone": base + 1, "eperm": base + 3, "enosys": base + 5}
    for op, k, target in checks:
        offset = labels[target] - (len(prog) + 1)
        if not 0 <= offset < 256:
            raise RuntimeError("seccomp program too long for 8-bit jumps")
        prog.append((op, offset, 0, k))
    prog += [(RET, 0, 0, ALLOW),
             (LD_W_ABS, 0, 0, 16), (JSET, 0, 1, _NS_FLAGS),  # clone: a namespace flag -> EPERM, else allow
             (RET, 0, 0, EPERM), (RET, 0, 0, ALLOW), (RET, 0, 0, ENOSYS)]
    return b"".join(struct.pack("<HBBI", *ins) for ins in prog)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


_SECCOMP_CODE = _seccomp_program(os.uname().machine) if os.uname().machine in _SECCOMP else None
_SECCOMP_BUF = ctypes.create_string_buffer(_SECCOMP_CODE, len(_SECCOMP_CODE)) if _SECCOMP_CODE else None


def install_seccomp():
    """Installs the filter on the calling process (inherited by everything it forks or execs)."""
    prog = _SockFprog(len(_SECCOMP_CODE) // 8, ctypes.cast(_SECCOMP_BUF, ctypes.c_void_p))
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    _check(LIBC.prctl(ctypes.c_int(PR_SET_SECCOMP), ctypes.c_ulong(2), ctypes.byref(prog), ctypes.c_ulong(0),
                      ctypes.c_ulong(0)), "prctl(PR_SET_SECCOMP)")


# ---------------------------------------------------------------------------------------------------------
# framing: <u32 header length><u32 blob count><header JSON>{<u64 length><bytes>}*


def _read_exact(fd, n):
    chunks, left = [], n
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise EOFError("control pipe closed")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_message(fd):
    hlen, nblobs = struct.unpack("<II", _read_exact(fd, 8))
    header = json.loads(_read_exact(fd, hlen))
    blobs = []
    for _ in range(nblobs):
        (blen,) = struct.unpack("<Q", _read_exact(fd, 8))
        blobs.append(_read_exact(fd, blen))
    return header, blobs


def write_message(fd, header, blobs=()):
    head = json.dumps(header).encode()
    parts = [struct.pack("<II", len(head), len(blobs)), head]
    for blob in blobs:
        parts += [struct.pack("<Q", len(blob)), blob]
    _write_all(fd, b"".join(parts))


# ---------------------------------------------------------------------------------------------------------


def _memfd(name, data=b""):
    fd = os.memfd_create(name, os.MFD_CLOEXEC)  # no MFD_ALLOW_SEALING: the program cannot seal it either
    if data:
        _write_all(fd, data)
        os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _read_fd(fd, limit, tail=False):
    size = os.fstat(fd).st_size
    start = max(0, size - limit) if tail else 0
    return os.pread(fd, min(size, limit), start), size


def _read_pipe(fd):
    data = b""
    while True:
        chunk = os.read(fd, 256)
        if not chunk:
            return data
        data += chunk


def _proc_status():
    out = {}
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                parts = value.split()
                if len(parts) == 2 and parts[1] == "kB":
                    out[key] = int(parts[0]) * 1024
    except OSError:
        pass
    return out


def _killpg(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def _wipe(path):
    """Empties a directory the program could write to (root mode: everything of the run's uid is dead)."""
    with os.scandir(path) as it:
        entries = list(it)
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)


def _wait_with_deadline(pid, deadline):
    """Waits for a child until `deadline`; returns (status, rusage) or None when the deadline passed first."""
    pidfd = None
    if hasattr(os, "pidfd_open"):
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            pidfd = None
    try:
        delay = 0.0005
        while True:
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                return status, usage
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if pidfd is not None:
                select.select([pidfd], [], [], left)  # readable when the child exits
            else:
                time.sleep(min(delay, left))
                delay = min(delay * 2, 0.02)
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _report(status, usage, said):
    """The run's outcome from the child's wait status, rusage and what it wrote on the status pipe."""
    report = {"cpu": usage.ru_utime + usage.ru_stime, "maxrss": usage.ru_maxrss * 1024}
    if os.WIFSIGNALED(status):
        report.update(status="signaled", signal=os.WTERMSIG(status), exit_code=None)
    else:
        report.update(status="exited", exit_code=os.WEXITSTATUS(status), signal=None)
    if not said.startswith(STATUS_READY):
        report.update(status="setup_error", error="the child died before the program started")
    elif said.startswith(STATUS_READY + b"E"):
        report.update(status="exec_error", exec_errno=int(said[2:] or 0))
    return report


def _write_files(workdir, req, blobs):
    for name, index in (req.get("files") or {}).items():
        fd = os.open(os.path.join(workdir, os.path.basename(name)), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        _write_all(fd, blobs[index])
        os.close(fd)


def _copy_artifact(path, out_fd, limit):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return
        left = limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            _write_all(out_fd, chunk)
            left -= len(chunk)
    finally:
        os.close(fd)


class Server:
    def __init__(self, config):
        self.mode = config["mode"]
        if self.mode not in ("root", "userns", "none"):
            raise ValueError(f"unknown mode {self.mode!r}")
        self.uid, self.gid = config.get("uid"), config.get("gid")
        self.seccomp = self.mode != "none" and bool(config.get("seccomp", True)) and _SECCOMP_CODE is not None
        self.tmp_size = int(config.get("tmp_size", 256 << 20))
        self.scratch = config.get("scratch", "/tmp")
        # "none" mode has no /judge mounts: where the host keeps what the sandbox sees under /judge/...
        self.path_map = dict(config.get("path_map") or {})
        # the control channel moves off fds 0/1 so that nothing forked later can reach it by accident
        self.ctl_in, self.ctl_out = os.dup(0), os.dup(1)
        null = os.open("/dev/null", os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.close(null)
        self.own_pidns = None
        self._code = (None, None)  # (source, code object) of the sample being judged: compiled once, not per test
        # What every run shares is set up here, once, and inherited by each forked child.
        os.environ.clear()
        os.environ.update(SANDBOX_ENV)
        for sig in (signal.SIGPROF, signal.SIGXCPU, signal.SIGTERM, signal.SIGINT, signal.SIGALRM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        _apply_limits([(resource.RLIMIT_CORE, 0), (resource.RLIMIT_MEMLOCK, 0), (resource.RLIMIT_MSGQUEUE, 0),
                       (resource.RLIMIT_NOFILE, 256)])
        if self.mode == "root":
            # kill(-1) must only ever reach this sandbox: refuse unless we are pid 2 of a fresh PID namespace
            others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid())]
            if os.getpid() > 3 or others:
                raise RuntimeError(f"root mode needs a fresh PID namespace (pid {os.getpid()}, others {others})")
            prctl(PR_SET_DUMPABLE, 0)
            # The bounding set only limits what an exec can grant: emptying it here keeps the server's own
            # capabilities (it still needs setuid, kill and the wipe) and leaves the children nothing to gain.
            _drop_capability_bounding_set()
            if self.seccomp:
                install_seccomp()  # once, here: every run inherits it without paying for it
        elif self.mode == "userns":
            self.own_pidns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
            prctl(PR_SET_DUMPABLE, 0)
        gc.collect()
        gc.freeze()  # forked children then leave the preloaded objects' pages shared

    def host_path(self, arg):
        for sandbox_prefix, host_prefix in self.path_map.items():
            arg = arg.replace(sandbox_prefix, host_prefix)
        return arg

    def code_for(self, source):
        """The compiled program. Only the current sample's code is kept: a child can inspect the memory it
        inherits, so it must not find other samples' programs there."""
        cached_source, code = self._code
        if cached_source != source:
            code = compile(source, "solution.py", "exec")
            self._code = (source, code)
        return code

    def hello(self):
        status = _proc_status()
        return {"ready": True, "python": sys.version.split()[0], "mode": self.mode, "seccomp": self.seccomp,
                "baseline_vm": status.get("VmSize", 0), "baseline_rss": status.get("VmRSS", 0),
                "machine": os.uname().machine}

    def serve(self):
        write_message(self.ctl_out, self.hello())
        while True:
            try:
                header, blobs = read_message(self.ctl_in)
            except EOFError:
                return
            op = header.get("op")
            if op == "exit":
                return
            if op == "ping":
                write_message(self.ctl_out, {"ok": True})
                continue
            try:
                reply, out_blobs = self.run(header, blobs)
            except Exception as exc:  # a failure of the judge, never of the program
                reply, out_blobs = {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                                    "traceback": traceback.format_exc()[-2000:]}, []
            write_message(self.ctl_out, reply, out_blobs)

    # --- one program run -------------------------------------------------------------------------------------

    def run(self, req, blobs):
        if req["kind"] == "python":
            try:
                self.code_for(blobs[1])  # here, before the fork (the host checked the syntax in a sandbox first)
            except Exception:
                pass  # the child compiles it again and reports the failure
        fds = {"stdin": _memfd("stdin", blobs[0]), "stdout": _memfd("stdout"), "stderr": _memfd("stderr"),
               "artifact": _memfd("artifact")}
        try:
            if self.mode == "userns":
                report, wall = self._run_in_pid_namespace(req, blobs, fds)
            else:
                report, wall = self._run_direct(req, blobs, fds)
            stdout, stdout_size = _read_fd(fds["stdout"], int(req["stdout_limit"]))
            stderr, stderr_size = _read_fd(fds["stderr"], int(req.get("stderr_limit", 4096)), tail=True)
            artifact, _ = _read_fd(fds["artifact"], int(req.get("collect_limit", 0)))
        finally:
            for fd in fds.values():
                os.close(fd)
        reply = {"ok": True, "wall": wall, "stdout_size": stdout_size, "stderr_size": stderr_size, **report}
        return reply, [stdout, stderr, artifact]

    def _run_direct(self, req, blobs, fds):
        """root and none modes: one fork per run."""
        if self.mode == "root":
            workdir = "/tmp"
        else:
            import tempfile
            workdir = tempfile.mkdtemp(prefix="run-", dir=self.scratch)
            os.chmod(workdir, 0o1777)
        try:
            _write_files(workdir, req, blobs)
            status_r, status_w = os.pipe()  # O_CLOEXEC: an exec'd program cannot write "ready" itself
            started = time.monotonic()
            pid = os.fork()
            if pid == 0:
                os.close(status_r)
                _child(self, req, blobs, fds, status_w, workdir)  # never returns
            os.close(status_w)
            waited = _wait_with_deadline(pid, started + float(req["wall"]))
            timed_out = waited is None
            if timed_out:  # the wall-clock backstop
                self._signal_all(pid)
                waited = os.wait4(pid, 0)[1:]
            wall = time.monotonic() - started
            said = _read_pipe(status_r)
            os.close(status_r)
            self._kill_run(pid)  # whatever the program left behind (a daemon, a forked child)
            report = {"status": "wall", "cpu": None, "maxrss": None} if timed_out else _report(*waited, said)
            if req.get("collect") and report["status"] in ("exited", "signaled"):
                _copy_artifact(os.path.join(workdir, os.path.basename(req["collect"])), fds["artifact"],
                               int(req.get("collect_limit", 0)))
        finally:
            if self.mode == "root":
                _wipe("/tmp")
                _wipe("/dev/shm")
            else:
                shutil.rmtree(workdir, ignore_errors=True)
        return report, wall

    def _signal_all(self, pid):
        """SIGKILL to the run: root mode, every process here but bubblewrap's init and this server."""
        if self.mode == "none":
            _killpg(pid)
            return True
        try:
            os.kill(-1, signal.SIGKILL)
            return True
        except ProcessLookupError:
            return False

    def _kill_run(self, pid):
        """After the program was reaped: kills what it left behind and waits until all of it is gone."""
        if not self._signal_all(pid) or self.mode == "none":
            return  # nothing was left: the usual case
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:  # bubblewrap's init reaps them; wait until it has
            try:
                os.kill(-1, 0)
            except ProcessLookupError:
                return
            time.sleep(0.001)
        raise RuntimeError("processes of a finished run survived SIGKILL for 10 s")

    def _run_in_pid_namespace(self, req, blobs, fds):
        """userns mode: a monitor as pid 1 of a fresh PID namespace; two forks per run."""
        result_r, result_w = os.pipe()
        started = time.monotonic()
        try:
            unshare(CLONE_NEWPID)  # the next fork becomes pid 1 of a fresh PID namespace
            try:
                pid = os.fork()
            finally:
                if os.getpid() == SERVER_PID:
                    setns(self.own_pidns, CLONE_NEWPID)  # back to our own, so that the next run can unshare
            if pid == 0:
                os.close(result_r)
                _monitor(self, req, blobs, fds, result_w)  # never returns
            os.close(result_w)
            os.set_blocking(result_r, False)
            waited = _wait_with_deadline(pid, started + float(req["wall"]))
            if waited is None:
                os.kill(pid, signal.SIGKILL)  # pid 1 of the run's namespace: takes every process with it
                os.waitpid(pid, 0)
                return {"status": "wall", "cpu": None, "maxrss": None}, time.monotonic() - started
            wall = time.monotonic() - started
            try:
                text = os.read(result_r, 65536)
            except BlockingIOError:
                text = b""
        finally:
            os.close(result_r)
        report = json.loads(text) if text.startswith(b"{") else \
            {"status": "setup_error", "error": "the monitor process died without a report"}
        return report, wall


def _monitor(server, req, blobs, fds, result_w):
    """userns mode: pid 1 of the run's PID namespace; its exit kills every process left in there."""
    try:
        os.close(server.ctl_in)
        os.close(server.ctl_out)
        unshare(CLONE_NEWNS | CLONE_NEWIPC)
        opts = MS_NOSUID | MS_NODEV
        mount("tmpfs", "/tmp", "tmpfs", opts, f"size={server.tmp_size},mode=1777")
        mount("tmpfs", "/dev/shm", "tmpfs", opts | MS_NOEXEC, f"size={server.tmp_size},mode=1777")
        mount("proc", "/proc", "proc", opts | MS_NOEXEC, None)  # shows only this run's processes
        _write_files("/tmp", req, blobs)
        status_r, status_w = os.pipe()
        child = os.fork()
        if child == 0:
            os.close(status_r)
            os.close(result_w)
            _child(server, req, blobs, fds, status_w, "/tmp")  # never returns
        os.close(status_w)
        _, status, usage = os.wait4(child, 0)
        report = _report(status, usage, _read_pipe(status_r))
        if req.get("collect") and report["status"] in ("exited", "signaled"):
            _copy_artifact(os.path.join("/tmp", os.path.basename(req["collect"])), fds["artifact"],
                           int(req.get("collect_limit", 0)))
        _write_all(result_w, json.dumps(report).encode())
        os._exit(0)
    except BaseException as exc:
        try:
            msg = {"status": "setup_error", "error": f"monitor: {type(exc).__name__}: {exc}"}
            _write_all(result_w, json.dumps(msg).encode())
        finally:
            os._exit(1)


# ---------------------------------------------------------------------------------------------------------
# the child: becomes the program


def _child(server, req, blobs, fds, status_w, workdir):
    # Everything that is the same for every run (environment, signal dispositions, fixed rlimits, the
    # capability bounding set, seccomp in root mode) was done once in the server: a forked child pays for each
    # Python object it touches (copy-on-write), so this path is kept short.
    try:
        os.dup2(fds["stdin"], 0)
        os.dup2(fds["stdout"], 1)
        os.dup2(fds["stderr"], 2)
        os.closerange(3, status_w)
        os.closerange(status_w + 1, 1 << 16)
        os.chdir(workdir)
        if server.mode == "none":
            os.setpgid(0, 0)  # "none" mode: the process group is all we can kill
        kind = req["kind"]
        _set_limits(req)
        _drop_privileges(server)
        if kind == "python_compile":
            _compile_only(blobs[1], status_w)
        code = server.code_for(blobs[1]) if kind == "python" else None
        signal.setitimer(signal.ITIMER_PROF, float(req["cpu"]))  # CPU time; survives exec: the exact TLE kill
        if kind == "exec":
            for sig in (signal.SIGPIPE, signal.SIGXFSZ):
                signal.signal(sig, signal.SIG_DFL)  # Python ignores these; a C++ program must not inherit that
            argv = [server.host_path(str(a)) for a in req["argv"]]
            os.write(status_w, STATUS_READY)
            try:
                os.execve(argv[0], argv, SANDBOX_ENV)
            except OSError as exc:
                os.write(status_w, b"E%d" % exc.errno)
                os._exit(127)
        os.write(status_w, STATUS_READY)
        os.close(status_w)
        _run_python(code)
    except BaseException as exc:
        try:
            os.write(2, f"\njudge: setting up the program failed: {type(exc).__name__}: {exc}\n".encode())
        finally:
            os._exit(126)


def _set_limits(req):
    cpu = float(req["cpu"])
    soft = int(cpu) + 1  # RLIMIT_CPU is whole seconds: a backstop behind the exact ITIMER_PROF
    limits = [(resource.RLIMIT_CPU, soft, soft + 1), (resource.RLIMIT_FSIZE, int(req["fsize"])),
              (resource.RLIMIT_NPROC, int(req["nproc"]))]
    if req.get("as"):
        limits.append((resource.RLIMIT_AS, int(req["as"])))
    if req.get("stack"):
        limits.append((resource.RLIMIT_STACK, int(req["stack"])))
    _apply_limits(limits)


def _apply_limits(limits):
    for item in limits:
        which, soft_value = item[0], item[1]
        hard_value = item[2] if len(item) > 2 else soft_value
        _, old_hard = resource.getrlimit(which)
        if old_hard != resource.RLIM_INFINITY:
            soft_value, hard_value = min(soft_value, old_hard), min(hard_value, old_hard)
        resource.setrlimit(which, (soft_value, hard_value))


def _drop_capability_bounding_set():
    for cap in range(64):
        if LIBC.prctl(ctypes.c_int(PR_CAPBSET_DROP), ctypes.c_ulong(cap), ctypes.c_ulong(0), ctypes.c_ulong(0),
                      ctypes.c_ulong(0)) != 0:
            if ctypes.get_errno() == errno.EINVAL:  # past the last capability this kernel knows
                break
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _drop_privileges(server):
    if server.mode == "root":
        os.setgroups([])
        os.setresgid(server.gid, server.gid, server.gid)
        os.setresuid(server.uid, server.uid, server.uid)  # leaving uid 0 clears every capability
        # (the bounding set was emptied in the server; no-new-privs and seccomp are inherited from it)
    elif server.mode == "userns":
        # bubblewrap's user namespace maps only the host user (as uid 0 here); a nested namespace lets the
        # program run as a non-zero uid without capabilities, and RLIMIT_NPROC count only this run's processes
        unshare(CLONE_NEWUSER)
        for name, text in (("setgroups", "deny"), ("uid_map", f"{NESTED_UID} 0 1"),
                           ("gid_map", f"{NESTED_UID} 0 1")):
            with open(f"/proc/self/{name}", "w") as fh:
                fh.write(text)
        _drop_capability_bounding_set()  # a new user namespace starts with a full one
        os.setresgid(NESTED_UID, NESTED_UID, NESTED_UID)
        os.setresuid(NESTED_UID, NESTED_UID, NESTED_UID)
        if server.seccomp:
            install_seccomp()
    if server.mode != "none" and (os.getuid() == 0 or os.geteuid() == 0):
        raise RuntimeError("still uid 0 after dropping privileges")


def _compile_only(source, status_w):
    os.write(status_w, STATUS_READY)
    try:
        compile(source, "solution.py", "exec")
    except BaseException as exc:  # SyntaxError, ValueError (NUL bytes), RecursionError, MemoryError
        text = "".join(traceback.format_exception_only(type(exc), exc))
        os.write(2, text.encode("utf-8", "replace"))
        os._exit(1)
    os._exit(0)


def _exit_status(code):
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write(f"{code}\n")
    except BaseException:
        pass
    return 1


def _run_python(code):
    """Runs the program as `__main__` in this forked interpreter, the way `python3 solution.py` would."""
    sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False), 1 << 16), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False), 1 << 16),
                                  encoding="utf-8")
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                  errors="backslashreplace", line_buffering=True)
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
    sys.argv = ["solution.py"]
    main = types.ModuleType("__main__")
    main.__dict__.update({"__file__": "solution.py", "__builtins__": builtins})
    sys.modules["__main__"] = main  # the server's own module is not the program's business
    status = 0
    try:
        exec(code, main.__dict__)
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except BaseException:
        traceback.print_exc()
        status = 1
    try:
        if "threading" in sys.modules:
            sys.modules["threading"]._shutdown()  # wait for non-daemon threads, as interpreter exit does
        atexit._run_exitfuncs()
    except BaseException:
        traceback.print_exc()
        status = status or 1
    try:
        sys.stdout.flush()
    except BaseException:  # EFBIG past the output limit, or a closed stdout
        traceback.print_exc()
        status = status or 1
    try:
        sys.stderr.flush()
    except BaseException:
        pass
    os._exit(status)


SERVER_PID = os.getpid()

if __name__ == "__main__":
    Server(json.loads(sys.argv[1])).serve()
