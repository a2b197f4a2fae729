"""The fork server that runs inside each judge sandbox (one per worker). Standard library, plus libseccomp's own
Python bindings (Debian's python3-seccomp) to write the seccomp filter.

The host starts this file with the system interpreter (`/usr/bin/python3 -I`), in a bubblewrap sandbox (fresh
network, PID, IPC and UTS namespaces; read-only /usr; no host files; empty environment) or, in the container
tier, directly as root, and talks to it over stdin/stdout with length-prefixed JSON headers plus raw byte blobs
(see `read_message`). The server never runs model code itself and never sees expected outputs: output checking
happens on the host.

Per program run it forks a child that sets rlimits, drops to a non-root uid with no capabilities, arms a CPU
timer (ITIMER_PROF: the exact time-limit kill) and then either execs a compiled binary or runs the model's
Python *in this already-started interpreter* -- no interpreter start-up per test, which is what makes a Python
test cost milliseconds. stdin, stdout and stderr are memfds; RLIMIT_FSIZE caps what the program can write.

Modes (argv[1] JSON "mode"):
  "root"      bwrap tier, the host runs as root (CI, a root shell). bubblewrap makes no user namespace. Each
              worker has its own uid for programs. The seccomp filter (below) is installed once, in the server,
              so every run inherits it for free. After each run the server (root, pid 2 of the sandbox's PID
              namespace) calls kill(-1, SIGKILL) -- atomically every process in the sandbox except bubblewrap's
              init and itself, so a daemon cannot outlive its test -- and wipes /tmp and /dev/shm.
  "userns"    bwrap tier, an ordinary user: bubblewrap made a user namespace in which every process is the same
              host uid, so the server protects itself with a PID namespace per run instead: a monitor (pid 1
              there, with a fresh /tmp, /dev/shm and /proc) forks the program, which enters a nested user
              namespace as uid 1000 and installs the seccomp filter; when the monitor exits the kernel kills
              everything left.
  "container" container tier, for root in a container that may not create namespaces (Docker's default
              seccomp profile refuses them; SageMaker training jobs run so). No namespace at all: each worker
              (slot) runs its programs as its own unprivileged uid, in its own 0700 scratch directory (home,
              temporary files, the working directory), with the seccomp filter (which also keeps sockets off the
              network) and, where the kernel has Landlock, a ruleset limiting files to the system, the judge's
              binaries and that scratch directory. The server is a child subreaper: after each run it kills
              every process of the slot's uid (see `_kill_slot_processes`) and empties the scratch directory --
              and, without Landlock, whatever the uid left in the world-writable temporary directories. A server
              that dies mid-run leaves that clean-up to the next server of its slot, which kills every process
              of the uid before it serves (and to the judge, which does the same when it closes).
  "none"      explicitly unisolated: no namespaces, no uid change; process-group kill and a temp directory.
"""

import ctypes
import errno
import functools
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
LIBC.syscall.restype = ctypes.c_long
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID = 0x00020000, 0x08000000, 0x10000000, 0x20000000
CLONE_NEWUTS, CLONE_NEWNET, CLONE_NEWCGROUP = 0x04000000, 0x40000000, 0x02000000
MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP = 4, 24, 38, 22
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
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
# seccomp: a deny list on top of the namespaces (bwrap tier) or standing in for them (container tier). It removes
# the kernel interfaces that sandbox escapes usually go through (new namespaces, mounts, ptrace, keyrings, bpf,
# io_uring, modules), the SysV / POSIX IPC objects that would otherwise outlive a run, and every way a socket
# could reach something: only AF_UNIX sockets can be created, and none of them can connect, bind, listen or send
# to an address, which leaves socketpair(). No contest solution needs any of it.
#
# The filter is written by libseccomp through its own Python bindings (Debian's python3-seccomp, importable by
# /usr/bin/python3, installed by scripts/setup_system.sh): it resolves the names for this machine, compares
# 64-bit arguments correctly and kills calls made through another ABI (x32 and i386 on x86_64). The server asks
# it for the BPF program once; each run then loads those bytes with one prctl, so a run that installs the
# filter after its fork (userns mode) does not pay for building it.

try:
    import seccomp
except ImportError:  # reported by the server's hello, and by the judge as a start-up error
    seccomp = None

DENIED_SYSCALLS = (
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen",
    "fsconfig", "fsmount", "fspick", "mount_setattr",
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "perf_event_open",
    "keyctl", "add_key", "request_key", "bpf", "userfaultfd", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "reboot", "swapon", "swapoff", "acct", "quotactl", "syslog", "open_by_handle_at", "name_to_handle_at",
    "shmget", "shmat", "shmctl", "shmdt", "semget", "semop", "semctl", "semtimedop", "msgget", "msgsnd",
    "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
    "connect", "bind", "listen", "sendmsg", "sendmmsg",
)
AF_UNIX = 1
CLONE_NEW_FLAGS = (CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWUTS, CLONE_NEWNET, CLONE_NEWCGROUP)
_CLONE_FLAGS_ARG = {"s390": 1, "s390x": 1}  # clone(flags, ...) everywhere but s390, where the stack comes first


def seccomp_program():
    """The filter as the bytes of a `struct sock_filter` array, built by libseccomp for this machine.

    Returns (program, names libseccomp does not know on this machine: not filtered, reported in the hello)."""
    if seccomp is None:
        raise RuntimeError("libseccomp's Python bindings are missing for /usr/bin/python3: install them with "
                           "`apt-get install python3-seccomp` (scripts/setup_system.sh does), or start the judge "
                           "with seccomp=False")
    eperm = seccomp.ERRNO(errno.EPERM)
    filt = seccomp.SyscallFilter(seccomp.ALLOW)
    filt.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.KILL_PROCESS)
    unknown = []
    for name in DENIED_SYSCALLS:
        try:
            filt.add_rule(eperm, name)
        except (RuntimeError, ValueError, OSError):  # a name this libseccomp does not know for this machine
            unknown.append(name)
    clone_arg = _CLONE_FLAGS_ARG.get(os.uname().machine, 0)
    for flag in CLONE_NEW_FLAGS:  # rules for one syscall are alternatives: any namespace flag -> EPERM
        filt.add_rule(eperm, "clone", seccomp.Arg(clone_arg, seccomp.MASKED_EQ, flag, flag))
    filt.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")  # its flags sit in memory, out of a filter's reach:
    # ENOSYS makes the C library fall back to clone, which is checked above
    for name in ("socket", "socketpair"):
        filt.add_rule(eperm, name, seccomp.Arg(0, seccomp.NE, AF_UNIX))
    filt.add_rule(eperm, "sendto", seccomp.Arg(4, seccomp.NE, 0))  # send() is sendto(..., NULL, 0): allowed
    fd = os.memfd_create("seccomp", os.MFD_CLOEXEC)
    try:
        with open(fd, "wb", closefd=False) as fh:
            filt.export_bpf(fh)
        return os.pread(fd, 1 << 20, 0), unknown
    finally:
        os.close(fd)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install_seccomp(program):
    """Loads a program from seccomp_program() on the calling process (inherited by everything it forks or execs)."""
    buf = ctypes.create_string_buffer(program, len(program))
    prog = _SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    _check(LIBC.prctl(ctypes.c_int(PR_SET_SECCOMP), ctypes.c_ulong(2), ctypes.byref(prog), ctypes.c_ulong(0),
                      ctypes.c_ulong(0)), "prctl(PR_SET_SECCOMP)")


# ---------------------------------------------------------------------------------------------------------
# Landlock (container tier): which files a run may touch, enforced by the kernel (Linux 5.13+, when the Landlock
# LSM is enabled), without namespaces or privileges. Read and execute: the system (/usr and the root's links into
# it), the dynamic-linker cache, the judge's binaries and precompiled header; read and write: a few devices
# (/dev/null ...); everything but execute: the slot's own scratch directory. Nothing else, not even /proc (no
# other process's command line) or /tmp. From ABI 4 no TCP bind or connect either, from ABI 6 no abstract AF_UNIX
# socket and no signal outside the run (both on top of seccomp and the uid).
#
# A small ctypes wrapper rather than the `landlock` package: this file runs under /usr/bin/python3, which cannot
# import the project's virtual environment, and Debian packages no binding. Three system calls, two structs.

_LANDLOCK_CREATE_RULESET, _LANDLOCK_ADD_RULE, _LANDLOCK_RESTRICT_SELF = 444, 445, 446  # one number on every arch
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1
LL_EXECUTE, LL_WRITE_FILE, LL_READ_FILE, LL_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
LL_MAKE_CHAR, LL_MAKE_SOCK, LL_MAKE_BLOCK, LL_TRUNCATE, LL_IOCTL_DEV = 1 << 6, 1 << 9, 1 << 11, 1 << 14, 1 << 15
_LL_FILE_RIGHTS = LL_EXECUTE | LL_WRITE_FILE | LL_READ_FILE | LL_TRUNCATE | LL_IOCTL_DEV  # all a file rule may hold
_LL_FS_BITS = {1: 13, 2: 14, 3: 15, 4: 15}  # how many filesystem rights each ABI knows (16 from ABI 5 on)
LANDLOCK_SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")
LANDLOCK_READ_PATHS = ("/etc/ld.so.cache", "/etc/alternatives")
LANDLOCK_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_abi():
    """The kernel's Landlock ABI version, or None where there is none (too old, disabled, or refused by a
    seccomp profile such as an older Docker's)."""
    abi = LIBC.syscall(ctypes.c_long(_LANDLOCK_CREATE_RULESET), None, ctypes.c_size_t(0),
                       ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION))
    return abi if abi > 0 else None


def landlock_ruleset(abi, read_exec, read, devices, read_write):
    """A ruleset fd (close-on-exec) granting only the listed paths; landlock_restrict_self(fd) enforces it.

    Paths that do not exist are left out (a system without /lib32); everything else must work."""
    handled_fs = (1 << _LL_FS_BITS.get(abi, 16)) - 1
    attr = _RulesetAttr(handled_fs, 0, 0)
    size = 8
    if abi >= 4:
        attr.handled_access_net, size = 0b11, 16  # TCP bind and connect, with no rule allowing either
    if abi >= 6:
        attr.scoped, size = 0b11, 24  # abstract AF_UNIX sockets and signals stay inside the run
    ruleset = LIBC.syscall(ctypes.c_long(_LANDLOCK_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(size),
                           ctypes.c_uint32(0))
    if ruleset < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"landlock_create_ruleset: {os.strerror(err)}")
    os.set_inheritable(ruleset, False)
    read_only = LL_READ_FILE | LL_READ_DIR
    grants = [(p, read_only | LL_EXECUTE) for p in read_exec] + [(p, read_only) for p in read]
    grants += [(p, LL_READ_FILE | LL_WRITE_FILE | LL_TRUNCATE) for p in devices]
    grants += [(p, handled_fs & ~(LL_EXECUTE | LL_MAKE_CHAR | LL_MAKE_BLOCK | LL_MAKE_SOCK)) for p in read_write]
    try:
        for path, access in grants:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
            try:
                if not stat.S_ISDIR(os.fstat(fd).st_mode):
                    access &= _LL_FILE_RIGHTS
                rule = _PathBeneathAttr(access & handled_fs, fd)
                _check(LIBC.syscall(ctypes.c_long(_LANDLOCK_ADD_RULE), ctypes.c_int(ruleset),
                                    ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH), ctypes.byref(rule), ctypes.c_uint32(0)),
                       f"landlock_add_rule({path})")
            finally:
                os.close(fd)
    except BaseException:
        os.close(ruleset)
        raise
    return ruleset


def landlock_restrictor(ruleset):
    """A call that enforces the ruleset on the calling process and everything it starts (no-new-privs must be set).

    Its arguments are built here, once: in a forked child every Python object created or touched costs a
    copy-on-write page fault."""
    call = functools.partial(LIBC.syscall, ctypes.c_long(_LANDLOCK_RESTRICT_SELF), ctypes.c_int(ruleset),
                             ctypes.c_uint32(0))

    def restrict_self():
        _check(call(), "landlock_restrict_self")
    return restrict_self


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


def processes_of_uids(uids):
    """{pid: start time} of the live processes (zombies are dead already) whose real uid is in `uids`, from /proc."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", "rb") as fh:
                status = fh.read(4096)
            fields = dict(line.split(b":", 1) for line in status.splitlines() if b":" in line)
            uid = fields.get(b"Uid", b"").split()[:1]
            if not uid or int(uid[0]) not in uids:
                continue
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat_fields = fh.read(4096).rsplit(b")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if stat_fields[0] not in (b"Z", b"X"):
            found[int(entry)] = int(stat_fields[19])  # start time: tells a reused pid from the one we saw
    return found


def stop_then_kill(uids, deadline):
    """SIGKILL to every live process whose real uid is in `uids`, with none escaping by forking meanwhile.

    Killing what a scan of /proc found is not enough against a fork bomb: processes forked during the scan live
    on, and the slots of the killed ones free up for more. So first every process found gets SIGSTOP -- with
    SIGSTOP pending a process cannot complete a fork, and stopped processes still count against RLIMIT_NPROC --
    and /proc is scanned again until a scan finds none that was not stopped already; then all of them get
    SIGKILL. Returns the pids killed. Signals come from the caller (root), never from the uid itself."""
    stopped = {}
    while True:
        found = processes_of_uids(uids)
        new = [pid for pid, start in found.items() if stopped.get(pid) != start]
        if not new:
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"processes of uid {sorted(uids)} kept appearing for 10 s: {sorted(found)[:20]}")
        for pid in new:
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass
            stopped[pid] = found[pid]
    for pid in found:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return list(found)


def _reap_children():
    """Reaps every child that has exited; False when no child is left at all."""
    while True:
        try:
            done, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if not done:
            return True


def _world_writable_dirs():
    """Where any user may create files, besides what Landlock would guard: the usual temporary directories."""
    found = []
    for path in ("/tmp", "/var/tmp", "/dev/shm", "/dev/mqueue", "/run/lock", "/var/lock"):
        real = os.path.realpath(path)
        try:
            info = os.stat(real)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_IWOTH and real not in found:
            found.append(real)
    return found


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


def _copy_artifact(path, out_fd, limit, owner=None):
    """Copies a file the run wrote (the compiled binary) to out_fd. Only a regular file with one link, and owned
    by `owner` when given: this server may be root, and a hard link to someone else's file is not an artifact."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1 or (owner is not None and info.st_uid != owner):
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
        if self.mode not in ("root", "userns", "container", "none"):
            raise ValueError(f"unknown mode {self.mode!r}")
        self.uid, self.gid = config.get("uid"), config.get("gid")
        self.tmp_size = int(config.get("tmp_size", 256 << 20))
        self.scratch = config.get("scratch", "/tmp")
        # "none" and "container" modes have no /judge mounts: where the host keeps what programs see under /judge/
        self.path_map = dict(config.get("path_map") or {})
        # the control channel moves off fds 0/1 so that nothing forked later can reach it by accident
        self.ctl_in, self.ctl_out = os.dup(0), os.dup(1)
        null = os.open("/dev/null", os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.close(null)
        self.own_pidns = None
        self.landlock = None           # container mode: the kernel's Landlock ABI, when it has one
        self.landlock_ruleset = None   # ... the ruleset fd every run enforces on itself
        self.enter_landlock = None     # ... and the call that does it
        self.sweep_dirs = []           # container mode without Landlock: world-writable directories to clean
        self._code = (None, None)  # (source, code object) of the sample being judged: compiled once, not per test
        self.seccomp_program, self.seccomp_unknown = None, []
        if self.mode != "none" and config.get("seccomp", True):
            self.seccomp_program, self.seccomp_unknown = seccomp_program()
        # What every run shares is set up here, once, and inherited by each forked child.
        self.env = dict(SANDBOX_ENV)
        if self.mode == "container":  # no private /tmp: home and temporary files go to the slot's scratch
            self.env.update(HOME=self.scratch, TMPDIR=self.scratch)
        os.environ.clear()
        os.environ.update(self.env)
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
            if self.seccomp_program:
                install_seccomp(self.seccomp_program)  # once, here: every run inherits it without paying for it
        elif self.mode == "userns":
            self.own_pidns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
            prctl(PR_SET_DUMPABLE, 0)
        elif self.mode == "container":
            self._init_container()
        gc.collect()
        gc.freeze()  # forked children then leave the preloaded objects' pages shared

    def _init_container(self):
        """Container mode: no namespaces. The server stays root (it must setuid, kill and clean up) and each run
        drops to the slot's own uid; see _child and _kill_run."""
        if os.geteuid() != 0:
            raise RuntimeError(f"container mode runs programs as the slot's uid {self.uid} and needs root to do so "
                               f"(running as uid {os.geteuid()})")
        if not self.uid or not self.gid:
            raise RuntimeError(f"container mode needs a non-root uid and gid per slot, got {self.uid}/{self.gid}")
        if not self.seccomp_program:
            raise RuntimeError("container mode needs the seccomp filter (Judge(seccomp=True)): without namespaces it "
                               "is what keeps programs off the network")
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # the host's worker thread went away: so do we
        prctl(PR_SET_CHILD_SUBREAPER, 1)  # everything a run starts stays our descendant, however it detaches
        prctl(PR_SET_DUMPABLE, 0)
        _drop_capability_bounding_set()
        self._kill_leftovers()  # what an earlier server of this slot may have left (it crashed mid-run)
        _wipe(self.scratch)
        self.landlock = landlock_abi()
        if self.landlock is not None:
            host_dirs = list(self.path_map.values())
            self.landlock_ruleset = landlock_ruleset(
                self.landlock, read_exec=[*LANDLOCK_SYSTEM_PATHS, *host_dirs], read=LANDLOCK_READ_PATHS,
                devices=LANDLOCK_DEVICES, read_write=[self.scratch])
            self.enter_landlock = landlock_restrictor(self.landlock_ruleset)
        else:  # no kernel rule keeps programs out of /tmp and the like: clean up what the slot's uid left there
            self.sweep_dirs = _world_writable_dirs()
            self._sweep()
        prctl(PR_SET_NO_NEW_PRIVS, 1)  # Landlock needs it; nothing a run executes can gain privileges
        if self.seccomp_program:
            install_seccomp(self.seccomp_program)  # the server needs none of what it denies

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
        return {"ready": True, "python": sys.version.split()[0], "mode": self.mode,
                "seccomp": self.seccomp_program is not None, "seccomp_unknown": self.seccomp_unknown,
                "landlock": self.landlock, "sweep_dirs": self.sweep_dirs,
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
        """root, container and none modes: one fork per run."""
        if self.mode == "root":
            workdir = "/tmp"
        elif self.mode == "container":
            workdir = self.scratch
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
                               int(req.get("collect_limit", 0)), self.uid if self.mode == "container" else None)
        finally:
            if self.mode == "root":
                _wipe("/tmp")
                _wipe("/dev/shm")
            elif self.mode == "container":
                _wipe(self.scratch)
                os.chmod(self.scratch, 0o700)  # its owner, the program, may have opened it up
                self._sweep()
            else:
                shutil.rmtree(workdir, ignore_errors=True)
        return report, wall

    def _signal_all(self, pid):
        """SIGKILL to the run: root mode, every process here but bubblewrap's init and this server; container
        mode, the program (_kill_run then finds the rest by uid); none mode, its process group."""
        if self.mode == "none":
            _killpg(pid)
            return True
        if self.mode == "container":
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            return True
        try:
            os.kill(-1, signal.SIGKILL)
            return True
        except ProcessLookupError:
            return False

    def _kill_run(self, pid):
        """After the program was reaped: kills what it left behind and waits until all of it is gone."""
        if self.mode == "container":
            self._kill_slot_processes()
            return
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

    def _kill_slot_processes(self):
        """Container mode: kills every process of the slot's uid and reaps it; returns when none is left.

        This server is a child subreaper, so whatever a run started (double forks and setsid included) stays its
        descendant and, once its parent dies, becomes its child: no child left to wait for means no process of
        the run left, which makes the usual case (nothing left behind) one wait call. Otherwise the processes are
        found by their real uid in /proc and stopped, then killed, from here (see stop_then_kill): a signal sent
        *as* the slot's uid (kill(-1)) could be answered in kind by a leftover spinning on kill(-1) itself."""
        deadline = time.monotonic() + 10.0
        while _reap_children():  # the killed ones, as they die (their orphans become our children)
            if time.monotonic() > deadline:
                raise RuntimeError(f"processes of uid {self.uid} survived SIGKILL for 10 s")
            if not stop_then_kill({self.uid}, deadline):  # again if one slipped through (one it had stopped
                time.sleep(0.0005)                         # may have been sent SIGCONT by one it had not yet)

    def _kill_leftovers(self):
        """At start-up: kills processes of the slot's uid that are not ours (an earlier server of this slot died
        with a run in progress), until none is left alive."""
        deadline = time.monotonic() + 10.0
        while stop_then_kill({self.uid}, deadline):
            time.sleep(0.001)  # until a scan finds none: SIGKILL takes a moment

    def _sweep(self):
        """Container mode without Landlock: removes what the slot's uid created in world-writable directories."""
        for directory in self.sweep_dirs:
            try:
                with os.scandir(directory) as it:
                    entries = list(it)
            except OSError:
                continue
            for entry in entries:
                try:
                    if entry.stat(follow_symlinks=False).st_uid != self.uid:
                        continue
                except OSError:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    try:
                        os.unlink(entry.path)
                    except OSError:
                        pass

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
    # capability bounding set, seccomp in root and container modes, the Landlock ruleset) was done once in the
    # server: a forked child pays for each Python object it touches (copy-on-write), so this path is kept short.
    try:
        os.dup2(fds["stdin"], 0)
        os.dup2(fds["stdout"], 1)
        os.dup2(fds["stderr"], 2)
        if server.enter_landlock is not None:
            server.enter_landlock()  # before the ruleset's fd is closed below
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
                os.execve(argv[0], argv, server.env)
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
    if server.mode in ("root", "container"):
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
        if server.seccomp_program:
            install_seccomp(server.seccomp_program)
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
