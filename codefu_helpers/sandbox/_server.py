"""The fork server that runs inside each judge sandbox (one per worker). Standard library, plus libseccomp's own
Python bindings (Debian's python3-seccomp) to write the seccomp filters.

The host starts this file with the system interpreter (`/usr/bin/python3 -I`), in a bubblewrap sandbox (fresh
network, PID, IPC and UTS namespaces; read-only /usr; no host files; empty environment) or, in the container
tier, directly as root, and talks to it over stdin/stdout with length-prefixed JSON headers plus raw byte blobs
(see `read_header`). The server never runs model code itself and never sees expected outputs: output checking
happens on the host.

Processes, so that no program starts from memory that ever held another sample's data:

  zygote   the server as it is once set up (filters, rulesets, memfds, preloaded modules), before it reads any
           request. It says hello and then only forks sample processes, one at a time, and waits for each.
  sample   one per sample (the host numbers its requests): a fresh fork of the zygote that serves the host's
  process  requests for that sample directly -- the syntax check or compilation, then the tests -- compiles the
           Python program once, and forks one child per test that becomes the program. At the first request of
           the next sample it hands that request's header back to the zygote and exits; the zygote forks a fresh
           one, which reads on. So a program finds in its memory only its own sample (its input, its source, its
           earlier tests' outputs), never a sibling's.
  referee  root and container modes: a child the server forks before any filter (see the seccomp section). Its
           state (which callers may fork) lives in its own memory only; no program maps or holds any of it.
  checker  harness runs only (`Judge.run_harness`): forked by the sample process before the candidate, as the
           slot's checker uid, with the program's filters; it runs the checks and questions the candidate over
           two pipes, plain data both ways (`plain_encode`), and reports its outcome on a third the candidate never
           holds. Neither process can signal, trace or read the other (different uids, not dumpable).

Per test the sample process forks a child that sets rlimits, drops to a non-root uid with no capabilities, keeps
the seccomp filters it inherited (userns mode: attaches its own), arms a CPU timer (ITIMER_PROF: the exact
time-limit kill) and then either execs a compiled binary or runs the model's Python *in this already-started
interpreter* -- no interpreter start-up per test, which is what makes a Python test cost milliseconds. A C++ test
execs its binary through a descriptor the sample process opened: the binary directory is closed to programs, which
see their own binary only.

Accounting. A program is one process: fork, vfork and clone without CLONE_THREAD are refused (threads stay allowed:
they share the process's ITIMER_PROF, RLIMIT_CPU, RLIMIT_AS and rusage, so all of a program's CPU time and memory
count against its limits), and so is memfd_create; it creates no files (below), so nothing it stores escapes its
address-space limit either. The compiler (g++, a trusted program on untrusted input) may fork: it waits for its
children, whose time is counted. No cgroup is used: a judge cannot enable controllers under a cgroup that holds
processes (the trainer's own), and containers usually mount /sys/fs/cgroup read-only.

Files. Programs create none: in "root" mode their working directory and /dev/shm belong to root (the compiler
gets a build directory of its own, made for a compile and removed after it); in "userns" mode /tmp and /dev/shm
are mounted read-only for them; in "container" mode Landlock grants them no write access, or, on a kernel
without Landlock, their filter refuses every open for writing and every call that creates, removes or renames a
file. stdout is a memfd capped by RLIMIT_FSIZE (the output limit: WA past it); stderr is a pipe drained while the
program runs, keeping its tail, so that any amount of debugging output leaves a verdict alone. The program opens
stdin (read-only) and stdout (write-only) afresh, so flags it sets on them (O_APPEND, O_NONBLOCK) stay its own;
every other descriptor of the server is closed before its code runs. After a compile the
build directory is emptied by `remove_tree`, which copes with any tree, and checked; a clean-up or check that fails
marks the reply "unhealthy" (the run's verdict stands) and the host replaces this server before the next request.

Modes (argv[1] JSON "mode"):
  "root"      bwrap tier, the host runs as root (CI, a root shell). bubblewrap makes no user namespace. Each
              worker has three uids of its own: programs, the compiler, a harness's checker.
  "userns"    bwrap tier, an ordinary user: bubblewrap made a user namespace in which every process is the same
              host uid, so each run gets a PID namespace of its own: a monitor (pid 1 there, with a fresh /tmp,
              /dev/shm and /proc, and the binary directory hidden) forks the program, which enters a nested user
              namespace as uid 1000, drops every capability and attaches its filter; when the monitor exits the
              kernel kills everything left.
  "container" container tier, for root in a container that may not create namespaces (Docker's default
              seccomp profile refuses them; SageMaker training jobs run so). No namespace at all: each worker
              (slot) runs its programs, compiler and checker as three unprivileged uids of its own, with the
              seccomp filters (which also refuse sockets) and, where the kernel has Landlock, a ruleset limiting
              files to the system, the program's own binary and (compiler only) the slot's build directory.
  In both root and container modes the sample process is a child subreaper: after each run it kills every
  process of the slot's uids -- a process counts as alive while any of its threads is, and the clean-up returns
  only when none is left (the usual case, nothing left, is one wait call). A server that dies mid-run leaves
  that clean-up to the next server of its slot, which kills every process of its uids before it serves (and to
  the judge, which does the same when it closes).
  "landlock"  landlock tier, an ordinary user who may create no namespaces: no bubblewrap, no uid change, no
              referee. Each run attaches its own whole filter ("program", plus "no_signals" before Landlock ABI 6;
              "base" for the compiler) and a Landlock ruleset (a C++ program's: with its one binary file), and is a
              process group of its own, which is what the clean-up kills (see `_init_landlock`).
  "none"      explicitly unisolated: no namespaces, no uid change, no filter; process-group kill and a temp
              directory.
"""

import ctypes
import errno
import fcntl
import functools
import json
import os
import resource
import select
import signal
import socket
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
CLONE_THREAD = 0x00010000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP = 4, 24, 38, 22
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
SANDBOX_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}  # + HOME and TMPDIR: the run's working directory
NESTED_UID = 1000  # the uid model code sees in "userns" mode
STATUS_READY = b"R"  # child -> server: set-up done, model code starts now
PROGRAM_NOFILE = 64  # descriptors a program may hold: enough for any solution, few pipe or socket buffers
STDERR_RING = 64 << 10  # stderr is kept as its last 64-128 KiB


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


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_all_capabilities():
    """Empties the effective, permitted and inheritable sets (the ambient set follows). Needed where a uid change
    does not do it: inside a user namespace the program is not leaving uid 0 of that namespace's view."""
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3: two 32-bit words per set
    data = (_CapData * 2)()
    _check(LIBC.capset(ctypes.byref(header), data), "capset")


# ---------------------------------------------------------------------------------------------------------
# seccomp: a deny list on top of the namespaces (bwrap tier) or standing in for them (container tier). It removes
# the kernel interfaces that sandbox escapes usually go through (new namespaces, mounts, ptrace, keyrings, bpf,
# io_uring, modules), the SysV / POSIX IPC objects that would otherwise outlive a run, and sockets of every kind
# (socket() and socketpair() are refused, so nothing can reach a network or another process's socket). No contest
# solution needs any of it.
#
# Memory outside the address space. A program's RLIMIT_AS bounds what it maps; what the kernel holds for it
# elsewhere is bounded here: memfd_create and memfd_secret are refused (a memfd holds memory outside every limit),
# so are vmsplice (a pipe holding references to pages the program then unmaps, huge pages included) and
# fcntl(F_SETPIPE_SZ) (a pipe grown to 1 MiB): with at most PROGRAM_NOFILE descriptors a program keeps at most
# PROGRAM_NOFILE / 2 pipes of 16 pages each (2 MiB with 4 KiB pages) outside its limit. Its stdin is a
# descriptor it may only read and its stdout one it may only write, of memfds whose modes (0400, 0200, the
# judge's uid) let it open them no other way, so neither can be used as storage.
#
# Scheduling. setsid and setpgid are refused: a program stays in its server's session, and so in the worker's
# autogroup, whose CPU share it cannot multiply.
#
# New processes. A program must not start one: a child would run outside its CPU timer and memory limit. The
# compiler may (g++ runs cc1plus and as, and waits for them). Attaching a filter per run to tell the two apart
# costs the kernel some 0.3 ms -- a tenth of a Python test -- so in the root and container modes no run attaches
# one: the server forks a *referee* and takes out a seccomp user notification for it: the server (the zygote to
# be) attaches, once, a notifier that hands every fork, vfork and clone without CLONE_THREAD to the referee, and
# then the deny list ("base", EPERM). The referee lets a fork proceed when the caller's real uid is root (the
# zygote, a sample process) or the slot's compile uid (the compiler runs as a uid of its own), and answers EPERM
# otherwise: programs and harness checkers run as other uids. The decision rests on what the kernel says of the
# caller, never on memory a program could share or write. Threads never reach it. Every run inherits both
# filters. In "userns" mode the server must create namespaces for each run, which the deny list refuses, so
# there each run attaches one whole filter itself: "program" (base + no new process + no chmod of the judge's
# memfds, which the program's uid owns there) or "base" for the compiler. "no_writes" (the container tier without
# Landlock) is attached by each program run on top: no open for writing, no call that creates, removes or
# renames a file or changes its owner, mode or times.
#
# The filters are written by libseccomp through its own Python bindings (Debian's python3-seccomp, importable by
# /usr/bin/python3, installed by scripts/setup_system.sh): it resolves the names for this machine, compares
# 64-bit arguments correctly and kills calls made through another ABI (x32 and i386 on x86_64). The server asks
# it for the BPF programs once; a run attaches one with a single prebuilt call (see `seccomp_attacher`).

seccomp = None  # libseccomp's bindings: imported by the short-lived process that writes the filters (below)

DENIED_SYSCALLS = (
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen",
    "fsconfig", "fsmount", "fspick", "mount_setattr",
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "perf_event_open",
    "keyctl", "add_key", "request_key", "bpf", "userfaultfd", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "reboot", "swapon", "swapoff", "acct", "quotactl", "syslog", "open_by_handle_at", "name_to_handle_at",
    "shmget", "shmat", "shmctl", "shmdt", "semget", "semop", "semctl", "semtimedop", "msgget", "msgsnd",
    "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
    "connect", "bind", "listen", "sendmsg", "sendmmsg", "socket", "socketpair",
    "setsid", "setpgid",
)
MEMORY_DENIED = ("memfd_create", "memfd_secret", "vmsplice")
F_SETPIPE_SZ = 1031
MODE_CHANGES = ("chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat")
PROCESS_CALLS = ("fork", "vfork")  # + clone without CLONE_THREAD
FILE_WRITE_DENIED = ("creat", "mkdir", "mkdirat", "mknod", "mknodat", "link", "linkat", "symlink", "symlinkat",
                     "unlink", "unlinkat", "rmdir", "rename", "renameat", "renameat2", "truncate", "chmod",
                     "fchmodat", "fchmodat2", "chown", "lchown", "fchownat", "utime", "utimes", "utimensat",
                     "futimesat", "setxattr", "lsetxattr", "removexattr", "lremovexattr")
CLONE_NEW_FLAGS = (CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWUTS, CLONE_NEWNET, CLONE_NEWCGROUP)
_CLONE_FLAGS_ARG = {"s390": 1, "s390x": 1}  # clone(flags, ...) everywhere but s390, where the stack comes first
SIGNAL_CALLS = ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open", "pidfd_send_signal")
FILTER_ROLES = ("base", "program", "no_writes", "no_signals", "notifier")


def seccomp_programs():
    """The filters of FILTER_ROLES as the bytes of `struct sock_filter` arrays, built by libseccomp for this
    machine. Returns ({role: program}, names libseccomp does not know on this machine: not filtered, reported in
    the hello).

    libseccomp works in a child process that exits when done: what it allocates (and the library itself) never
    weighs on the server, whose every page each run's fork copies."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            global seccomp
            import seccomp
            unknown, programs = [], {}
            for role in FILTER_ROLES:
                filt = _notifier() if role == "notifier" else _filter(role, unknown)
                fd = os.memfd_create("seccomp", os.MFD_CLOEXEC)
                with open(fd, "wb", closefd=False) as fh:
                    filt.export_bpf(fh)
                programs[role] = os.pread(fd, 1 << 20, 0).hex()
            answer = {"programs": programs, "unknown": sorted(set(unknown))}
        except ImportError:
            answer = {"error": "libseccomp's Python bindings are missing for /usr/bin/python3: install them with "
                               "`apt-get install python3-seccomp` (scripts/setup_system.sh does), or start the "
                               "judge with seccomp=False"}
        except BaseException as exc:
            answer = {"error": f"building the seccomp filters failed: {type(exc).__name__}: {exc}"}
        _write_all(write_end, json.dumps(answer).encode())
        os._exit(0)
    os.close(write_end)
    text = b""
    while True:
        chunk = os.read(read_end, 1 << 16)
        if not chunk:
            break
        text += chunk
    os.close(read_end)
    os.waitpid(pid, 0)
    answer = json.loads(text or b'{"error": "the process building the seccomp filters died"}')
    if "error" in answer:
        raise RuntimeError(answer["error"])
    return {role: bytes.fromhex(hexed) for role, hexed in answer["programs"].items()}, answer["unknown"]


def _add(filt, action, name, unknown, *args):
    try:
        filt.add_rule(action, name, *args)
    except (RuntimeError, ValueError, OSError):  # a name this libseccomp does not know for this machine
        unknown.append(name)


def _filter(role, unknown):
    eperm = seccomp.ERRNO(errno.EPERM)
    filt = seccomp.SyscallFilter(seccomp.ALLOW)
    clone_arg = _CLONE_FLAGS_ARG.get(os.uname().machine, 0)
    if role == "no_writes":  # on top of the others, which kill other ABIs already
        filt.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.ALLOW)
        for name, flags_arg in (("open", 1), ("openat", 2)):
            for bit in (os.O_WRONLY, os.O_RDWR, os.O_CREAT, os.O_TRUNC, os.O_APPEND):
                try:
                    filt.add_rule(eperm, name, seccomp.Arg(flags_arg, seccomp.MASKED_EQ, bit, bit))
                except (RuntimeError, ValueError, OSError):  # no open() on this architecture (aarch64)
                    unknown.append(name)
                    break
        _add(filt, seccomp.ERRNO(errno.ENOSYS), "openat2", unknown)  # flags in memory again: back to openat
        for name in FILE_WRITE_DENIED:
            _add(filt, eperm, name, unknown)
        return filt
    if role == "no_signals":  # on top of the others; kill(0, ...) is the run's own process group, itself
        filt.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.ALLOW)
        for name in SIGNAL_CALLS:
            if name == "kill":
                filt.add_rule(eperm, "kill", seccomp.Arg(0, seccomp.NE, 0))
            else:
                _add(filt, eperm, name, unknown)
        return filt
    filt.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.KILL_PROCESS)
    for name in DENIED_SYSCALLS + MEMORY_DENIED + ((PROCESS_CALLS + MODE_CHANGES) if role == "program" else ()):
        _add(filt, eperm, name, unknown)
    filt.add_rule(eperm, "fcntl", seccomp.Arg(1, seccomp.EQ, F_SETPIPE_SZ))
    for flag in CLONE_NEW_FLAGS:  # rules for one syscall are alternatives: any namespace flag -> EPERM
        filt.add_rule(eperm, "clone", seccomp.Arg(clone_arg, seccomp.MASKED_EQ, flag, flag))
    if role == "program":  # a new process, not a thread: it would run outside the program's timer and limits
        filt.add_rule(eperm, "clone", seccomp.Arg(clone_arg, seccomp.MASKED_EQ, CLONE_THREAD, 0))
    filt.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")  # its flags sit in memory, out of a filter's reach:
    # ENOSYS makes the C library fall back to clone, which is checked above
    return filt


def _notifier():
    """The notifier (see above): fork, vfork and clone without CLONE_THREAD go to whoever holds its descriptor."""
    filt = seccomp.SyscallFilter(seccomp.ALLOW)
    filt.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.KILL_PROCESS)
    for name in PROCESS_CALLS:
        _add(filt, seccomp.NOTIFY, name, [])  # no fork or vfork on aarch64: clone covers them there
    filt.add_rule(seccomp.NOTIFY, "clone",
                  seccomp.Arg(_CLONE_FLAGS_ARG.get(os.uname().machine, 0), seccomp.MASKED_EQ, CLONE_THREAD, 0))
    return filt


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def seccomp_attacher(program):
    """A call that attaches `program` (from seccomp_programs) to the calling process, everything it forks or execs
    inherits it. Built once, here: in a forked child every Python object created or touched costs a copy-on-write
    page fault, so a run makes one prebuilt foreign call. The caller must have set no-new-privs."""
    buf = ctypes.create_string_buffer(program, len(program))
    prog = _SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    call = functools.partial(LIBC.prctl, ctypes.c_int(PR_SET_SECCOMP), ctypes.c_ulong(2), ctypes.byref(prog),
                             ctypes.c_ulong(0), ctypes.c_ulong(0))

    def attach():
        _check(call(), "prctl(PR_SET_SECCOMP)")
    attach.keep = (buf, prog)  # alive as long as the call
    return attach


_SYS_SECCOMP = {"x86_64": 317, "aarch64": 277}
SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER = 1, 8


def attach_notifier(program):
    """Attaches the notifier filter to the calling process; returns the descriptor its notifications arrive on."""
    number = _SYS_SECCOMP.get(os.uname().machine)
    if number is None:
        raise RuntimeError(f"the fork notifier knows the seccomp system call's number on x86_64 and aarch64 only, "
                           f"not on {os.uname().machine}")
    buf = ctypes.create_string_buffer(program, len(program))
    prog = _SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    fd = LIBC.syscall(ctypes.c_long(number), ctypes.c_uint(SECCOMP_SET_MODE_FILTER),
                      ctypes.c_uint(SECCOMP_FILTER_FLAG_NEW_LISTENER), ctypes.byref(prog))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER): {os.strerror(err)}")
    return fd


# ---------------------------------------------------------------------------------------------------------
# Landlock (container tier): which files a run may touch, enforced by the kernel (Linux 5.13+, when the Landlock
# LSM is enabled), without namespaces or privileges. Two rulesets per slot. A program's: read and execute the
# system (/usr and the root's links into it) and the judge's binaries (only through the descriptor the server
# opened: the directory itself is root's alone), read the dynamic-linker cache and its own empty working
# directory, read and write a few devices (/dev/null ...); no write or create right anywhere. The compiler's:
# the same without the binaries, plus the precompiled header, and everything but execute in the slot's build
# directory. Nothing else, not even /proc (no other process's command line) or /tmp. From ABI 4 no TCP bind or
# connect either, from ABI 6 no abstract AF_UNIX socket and no signal outside the run (both on top of seccomp and
# the uid).
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


def landlock_abi(at_most=None):
    """The kernel's Landlock ABI version (or `at_most`, when lower), or None where there is none (too old,
    disabled, or refused by a seccomp profile such as an older Docker's)."""
    abi = LIBC.syscall(ctypes.c_long(_LANDLOCK_CREATE_RULESET), None, ctypes.c_size_t(0),
                       ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION))
    return (min(abi, at_most) if at_most else abi) if abi > 0 else None


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
# framing with the host: <u32 header length><u32 blob count><header JSON>{<u64 length><bytes>}*
#
# The server reads a request's header into its memory and nothing else: each blob goes from the pipe straight
# into the memfd or file it is for (splice), and a reply's blobs go from their memfds or files straight into the
# pipe (sendfile). So no sample's bytes are ever in this process's memory, where the next program would inherit
# them.


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


def read_header(fd):
    """(header, number of blobs that follow): read them with `receive_blob`, in order."""
    hlen, nblobs = struct.unpack("<II", _read_exact(fd, 8))
    return json.loads(_read_exact(fd, hlen)), nblobs


def receive_blob(fd, target):
    """Moves the next blob from the pipe `fd` into the file descriptor `target` (None: discard); its length."""
    (size,) = struct.unpack("<Q", _read_exact(fd, 8))
    left = size
    sink = target
    if target is None:
        sink = os.open("/dev/null", os.O_WRONLY | os.O_CLOEXEC)
    try:
        while left:
            moved = os.splice(fd, sink, left)
            if not moved:
                raise EOFError("control pipe closed inside a blob")
            left -= moved
    finally:
        if target is None:
            os.close(sink)
    return size


def write_message(fd, header, blobs=()):
    """A reply: the header, then each blob, given as bytes or as [(file descriptor, offset, length), ...] parts
    (small ones are read and written with the rest, large ones moved by sendfile)."""
    head = json.dumps(header).encode()
    pending = struct.pack("<II", len(head), len(blobs)) + head  # written together with what follows it
    for blob in blobs:
        if isinstance(blob, (bytes, bytearray)):
            pending += struct.pack("<Q", len(blob)) + blob
            continue
        pending += struct.pack("<Q", sum(length for _, _, length in blob))
        for source, offset, length in blob:
            if length <= 1 << 16:  # small: one write with the rest
                pending += os.pread(source, length, offset)
                continue
            if pending:
                _write_all(fd, pending)
                pending = b""
            while length:
                sent = os.sendfile(fd, source, offset, length)
                if not sent:
                    raise RuntimeError("a file shrank while it was being sent")
                offset, length = offset + sent, length - sent
    if pending:
        _write_all(fd, pending)


# ---------------------------------------------------------------------------------------------------------
# small helpers


def _memfd(name):
    # no MFD_ALLOW_SEALING: a program handed one cannot seal it either
    return os.memfd_create(name, os.MFD_CLOEXEC)


def _empty(fd):
    """A memfd reused for the next run: emptied (its last user, a finished run, is dead)."""
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _size(fd):
    return os.fstat(fd).st_size


class _StderrTail:
    """A program's stderr: a pipe the server drains while it runs, into two memfds used in turn, so that the last
    STDERR_RING..2*STDERR_RING bytes are kept whatever the program writes, and none passes through this process."""

    def __init__(self, parts, used):
        self.read_end, self.write_end = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self.parts = [_empty(fd) for fd in parts] if used else list(parts)  # the server's, reused run after run
        self.total = 0

    def drain(self):
        """Moves what the pipe holds; False once every writer is gone."""
        while True:
            try:
                moved = os.splice(self.read_end, self.parts[1], 1 << 16)
            except BlockingIOError:
                return True
            if not moved:
                return False
            self.total += moved
            if _size(self.parts[1]) >= STDERR_RING:  # the older part goes, the full one becomes the older
                os.ftruncate(self.parts[0], 0)
                os.lseek(self.parts[0], 0, os.SEEK_SET)
                self.parts.reverse()

    def tail(self, limit):
        """The last `limit` bytes, as sendfile parts."""
        sizes = [_size(fd) for fd in self.parts]
        skip = max(0, sum(sizes) - limit)
        parts = []
        for fd, size in zip(self.parts, sizes):
            take_from = min(skip, size)
            skip -= take_from
            if size > take_from:
                parts.append((fd, take_from, size - take_from))
        return parts

    def close(self):
        for fd in (self.read_end, self.write_end):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass


def _read_all(fd):
    data = b""
    while True:
        chunk = os.read(fd, 1 << 16)
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


def _tasks_on_machine():
    """Every task (thread) on the machine, from /proc/loadavg: at least as many as this user has."""
    with open("/proc/loadavg", "rb") as fh:
        return int(fh.read().split()[3].split(b"/")[1])


def _both(first, second):
    """One call that makes two (attaching two filters, say)."""
    def call():
        first()
        second()
    return call


def _killpg(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def processes_of_uids(uids):
    """{pid: start time} of the live processes whose real uid is in `uids`, from /proc.

    A process is alive while any of its threads is: one whose main thread has exited while another thread runs
    shows its main thread's state, Z, in /proc/PID/stat, and is found here all the same (its other threads are
    listed under /proc/PID/task). A process that is only a zombie is dead already."""
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
            alive = stat_fields[0] not in (b"Z", b"X") or len(os.listdir(f"/proc/{entry}/task")) > 1
        except OSError:  # gone meanwhile
            continue
        if alive:
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


def _real_uid(pid):
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"Uid:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reap_children():
    """Reaps every child that has exited; False when no child is left at all."""
    while True:
        try:
            done, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if not done:
            return True


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


def remove_tree(path, keep_top=False):
    """Deletes the directory `path` and everything in it (only what is in it, with keep_top).

    Works on any tree a program could build: any depth (it holds two descriptors at a time and never a path longer
    than one name, so neither EMFILE nor ENAMETOOLONG can stop it), any names, modes that forbid reading, searching
    or writing (the owner's rights are restored where the caller is not root), and symlinks (removed, never
    followed). A directory is entered by descriptor and left through "..", whose identity is checked, so a tree
    changed underneath cannot redirect it elsewhere. A mount point inside is not entered. Raises OSError when
    something could not be removed."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        top = os.open(path, flags)
    except PermissionError:  # mode 000 and we are not root: its owner (us) may give itself its rights back
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            raise
        os.chmod(path, 0o700)
        top = os.open(path, flags)
    top_stat = os.fstat(top)
    cur = top
    stack = [(None, top_stat.st_dev, top_stat.st_ino, os.listdir(top))]  # (name in parent, dev, ino, to do)
    try:
        while True:
            _, dev, _, pending = stack[-1]
            entered = False
            while pending:
                name = pending.pop()
                try:
                    info = os.stat(name, dir_fd=cur, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if not stat.S_ISDIR(info.st_mode):
                    _unlink(name, cur)
                    continue
                if info.st_dev != dev:
                    raise OSError(errno.EXDEV, f"a file system is mounted inside the tree at {name!r}")
                try:
                    os.rmdir(name, dir_fd=cur)  # empty already
                    continue
                except OSError as exc:
                    if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.EACCES, errno.EPERM):
                        raise
                child = _open_dir(name, cur, flags, info)
                if cur != top:
                    os.close(cur)
                cur = child
                stack.append((name, info.st_dev, info.st_ino, os.listdir(cur)))
                entered = True
                break
            if entered:
                continue
            if len(stack) == 1:
                break
            name = stack.pop()[0]
            _, parent_dev, parent_ino, _ = stack[-1]
            parent = os.open("..", flags, dir_fd=cur)
            parent_stat = os.fstat(parent)
            if (parent_stat.st_dev, parent_stat.st_ino) != (parent_dev, parent_ino):
                os.close(parent)
                raise OSError(errno.ESTALE, "the tree was moved while it was being removed")
            if cur != top:
                os.close(cur)
            if (parent_dev, parent_ino) == (top_stat.st_dev, top_stat.st_ino):
                os.close(parent)
                cur = top
            else:
                cur = parent
            _rmdir(name, cur)
    finally:
        if cur != top:
            os.close(cur)
        os.close(top)
    if not keep_top:
        os.rmdir(path)


def _unlink(name, dir_fd):
    try:
        os.unlink(name, dir_fd=dir_fd)
    except PermissionError:  # a directory without write permission, and we are not root: its owner may fix that
        os.fchmod(dir_fd, 0o700)
        os.unlink(name, dir_fd=dir_fd)


def _rmdir(name, dir_fd):
    try:
        os.rmdir(name, dir_fd=dir_fd)
    except PermissionError:
        os.fchmod(dir_fd, 0o700)
        os.rmdir(name, dir_fd=dir_fd)


def _open_dir(name, dir_fd, flags, expected):
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except PermissionError:  # mode 000 and we are not root: give the owner (us) its rights back first
        os.fchmod(dir_fd, 0o700)
        os.chmod(name, 0o700, dir_fd=dir_fd)
        fd = os.open(name, flags, dir_fd=dir_fd)
    info = os.fstat(fd)
    if (info.st_dev, info.st_ino) != (expected.st_dev, expected.st_ino):
        os.close(fd)
        raise OSError(errno.ESTALE, f"{name!r} was replaced while the tree was being removed")
    if not info.st_mode & stat.S_IRWXU == stat.S_IRWXU and os.geteuid() != 0:
        os.fchmod(fd, 0o700)
    return fd


def _open_artifact(path, limit, owner=None):
    """(descriptor, size) of a file the run wrote (the compiled binary), to be sent without reading it here;
    descriptor None when it is over `limit` (size says how large), or when it is not a regular file with one
    link, owned by `owner` when given (this server may be root, and a hard link to someone else's file is not an
    artifact)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None, 0
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1 or (owner is not None and info.st_uid != owner) \
            or info.st_size > limit:
        os.close(fd)
        return None, info.st_size if stat.S_ISREG(info.st_mode) else 0
    return fd, info.st_size


def _write_file(directory, name):
    """Creates `name` in `directory` for the compiler (never following a link a program may have planted)."""
    return os.open(os.path.join(directory, os.path.basename(name)),
                   os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)


def _wait_draining(pid, deadline, stderr):
    """Waits for child `pid` until `deadline`, draining its stderr meanwhile; (status, rusage), or None when the
    deadline passed first."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    watch_stderr = True
    try:
        while True:
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                return status, usage
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            watch = ([pidfd] if pidfd is not None else []) + ([stderr.read_end] if watch_stderr else [])
            timeout = left if pidfd is not None else min(left, 0.005)
            ready = select.select(watch, [], [], timeout)[0] if watch else time.sleep(timeout)
            if ready and stderr.read_end in ready:
                watch_stderr = stderr.drain()  # False: every writer closed it; the child may still run
    finally:
        if pidfd is not None:
            os.close(pidfd)


# ---------------------------------------------------------------------------------------------------------


class Server:
    def __init__(self, config):
        self.mode = config["mode"]
        if self.mode not in ("root", "userns", "container", "landlock", "none"):
            raise ValueError(f"unknown mode {self.mode!r}")
        # root and container modes: the slot's uids (each its own group too): programs run as `uid`, the compiler
        # as `compile_uid` (the only one besides root whose forks the referee allows), a harness's checker as
        # `checker_uid` (so that the program it questions cannot signal or inspect it)
        self.uid, self.gid = config.get("uid"), config.get("gid")
        self.compile_uid = config.get("compile_uid", self.uid)
        self.checker_uid = config.get("checker_uid", self.uid)
        self.slot_uids = {self.uid, self.compile_uid, self.checker_uid}
        self.tmp_size = int(config.get("tmp_size", 256 << 20))
        self.scratch = config.get("scratch", "/tmp")   # container: the slot's build directory; none: a temp root
        self.run_dir = config.get("run_dir", "/tmp")   # container: programs' (empty, root-owned) working directory
        self.writes_refused = False                     # container without Landlock: no writes at all
        # "none" and "container" modes have no /judge mounts: where the host keeps what programs see under /judge/
        self.path_map = dict(config.get("path_map") or {})
        # the control channel moves off fds 0/1 so that nothing forked later can reach it by accident
        self.ctl_in, self.ctl_out = os.dup(0), os.dup(1)
        null = os.open("/dev/null", os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.close(null)
        self.own_pidns = None
        self.landlock = None     # container and landlock modes: the Landlock ABI in use, when the kernel has one
        # at most this ABI (None: the kernel's): how an older kernel's judge behaves, tested on a newer one
        self.landlock_max_abi = config.get("landlock_max_abi")
        self.restrictors = {}    # ... and per role the call that enforces that role's ruleset
        self.filters, self.seccomp_unknown = {}, []
        if self.mode != "none" and config.get("seccomp", True):
            self.filters, self.seccomp_unknown = seccomp_programs()
        self.attachers = {}      # per role the filter a run attaches itself
        self.referee = None      # root and container modes: the pid of the process that referees forks
        self.source, self.compiled = None, None  # a sample process: its program, compiled once
        self.stderr_used = False  # the last run wrote to stderr: its memfds need emptying
        # memfds every run reuses (emptied first): its stdin and stdout, the Python source, a harness's checks, the
        # two halves of stderr (the program writes a pipe the server drains into them). A program holds none of
        # these descriptors: it gets its own, read-only for stdin and write-only for stdout, and their modes
        # (0400 and 0200, of the judge's uid) let no program open them again otherwise through /proc (see _Run).
        self.memfds = {name: _memfd(name) for name in ("stdin", "stdout", "source", "check", "stderr", "stderr2")}
        os.fchmod(self.memfds["stdin"], 0o400)
        os.fchmod(self.memfds["stdout"], 0o200)
        os.environ.clear()  # what a Python program sees; an exec'd one gets its own
        os.environ.update(SANDBOX_ENV, HOME=self.program_dir(), TMPDIR=self.program_dir())
        for sig in (signal.SIGPROF, signal.SIGXCPU, signal.SIGTERM, signal.SIGINT, signal.SIGALRM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        _apply_limits([(resource.RLIMIT_CORE, 0), (resource.RLIMIT_MEMLOCK, 0), (resource.RLIMIT_MSGQUEUE, 0),
                       (resource.RLIMIT_NOFILE, 256)])
        if self.mode == "root":
            # programs run in this PID namespace: make sure it is a fresh one, holding only bubblewrap's init, the
            # referee and this server
            mine = (1, os.getpid(), os.getppid())
            others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in mine]
            if os.getpid() > 3 or others:
                raise RuntimeError(f"root mode needs a fresh PID namespace (pid {os.getpid()}, others {others})")
            prctl(PR_SET_DUMPABLE, 0)
            # The bounding set only limits what an exec can grant: emptying it here keeps the server's own
            # capabilities (it still needs setuid, kill and the clean-up) and leaves the children nothing to gain.
            _drop_capability_bounding_set()
        elif self.mode == "userns":
            self.own_pidns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
            prctl(PR_SET_DUMPABLE, 0)
        elif self.mode == "container":
            self._init_container()
        elif self.mode == "landlock":
            self._init_landlock()
        if self.filters:
            prctl(PR_SET_NO_NEW_PRIVS, 1)  # nothing a run executes can gain privileges; lets a run attach filters
            if self.mode in ("userns", "landlock"):  # each run attaches a whole filter (userns: its set-up needs
                # what "base" refuses; landlock: no uid tells the compiler from a program, for a referee to see)
                self.attachers = {"program": seccomp_attacher(self.filters["program"]),
                                  "compiler": seccomp_attacher(self.filters["base"])}
                if self.mode == "landlock" and self.landlock < 6:  # no Landlock signal scope: no signals at all
                    self.attachers["program"] = _both(self.attachers["program"],
                                                      seccomp_attacher(self.filters["no_signals"]))
            else:
                self._start_referee()
                seccomp_attacher(self.filters["base"])()  # the server needs none of it; every run inherits it
                if self.writes_refused:
                    self.attachers = {"program": seccomp_attacher(self.filters["no_writes"])}
        gc.collect()
        gc.freeze()  # forked children then leave the preloaded objects' pages shared
        LIBC.malloc_trim(0)  # what set-up freed goes back: every fork copies fewer page-table entries

    def _init_container(self):
        """Container mode: no namespaces. The server stays root (it must setuid, kill and clean up) and each run
        drops to the slot's own uid; see _child and _kill_run."""
        if os.geteuid() != 0:
            raise RuntimeError(f"container mode runs programs as the slot's uid {self.uid} and needs root to do so "
                               f"(running as uid {os.geteuid()})")
        if not all(self.slot_uids) or not self.gid or len(self.slot_uids) != 3:
            raise RuntimeError(f"container mode needs three distinct non-root uids per slot (programs, compiler, "
                               f"checker), got {self.uid}/{self.compile_uid}/{self.checker_uid}")
        if not self.filters:
            raise RuntimeError("container mode needs the seccomp filter (Judge(seccomp=True)): without namespaces it "
                               "is what keeps programs off the network")
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # the host's worker thread went away: so do we
        prctl(PR_SET_DUMPABLE, 0)
        _drop_capability_bounding_set()
        self._kill_leftovers()  # what an earlier server of this slot may have left (it crashed mid-run)
        remove_tree(self.scratch, keep_top=True)
        self.landlock = landlock_abi(self.landlock_max_abi)
        if self.landlock is not None:
            system = list(LANDLOCK_SYSTEM_PATHS)
            binaries = [p for key, p in self.path_map.items() if key == "/judge/bin"]
            header = [p for key, p in self.path_map.items() if key == "/judge/cache"]
            rulesets = {
                "program": landlock_ruleset(self.landlock, read_exec=system + binaries,
                                            read=[*LANDLOCK_READ_PATHS, self.run_dir], devices=LANDLOCK_DEVICES,
                                            read_write=[]),
                "compiler": landlock_ruleset(self.landlock, read_exec=system + header, read=LANDLOCK_READ_PATHS,
                                             devices=LANDLOCK_DEVICES, read_write=[self.scratch])}
            self.restrictors = {role: landlock_restrictor(fd) for role, fd in rulesets.items()}
        else:  # nothing keeps programs out of world-writable directories: their filter refuses every write
            self.writes_refused = True

    def _init_landlock(self):
        """Landlock mode: an ordinary user without namespaces (a SageMaker Studio space, Ubuntu 24.04 with user
        namespaces restricted). Programs run as this very user, so nothing here may rest on a uid: Landlock keeps
        them to the system's files (and each run is a Landlock domain of its own, which -- ABI 6 and later --
        scopes its signals and abstract sockets to itself), seccomp refuses new processes, ptrace and the rest
        (signals too, before ABI 6), and this server, like every process of the judge, is not dumpable, so that
        no program of the same uid may read its memory or environment. Clean-up is by process group (a run is
        one process group; programs cannot leave it), never by uid: that would kill the user's own processes."""
        if os.geteuid() == 0:
            raise RuntimeError("landlock mode runs programs as this user; as root use the container tier")
        if not self.filters:
            raise RuntimeError("landlock mode needs the seccomp filter (Judge(seccomp=True)): without namespaces or "
                               "a uid of their own it is what keeps programs off processes, sockets and the network")
        self.landlock = landlock_abi(self.landlock_max_abi)
        if self.landlock is None:
            raise RuntimeError(f"landlock mode needs Landlock, which this kernel ({os.uname().release}) does not "
                               f"offer")
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        prctl(PR_SET_DUMPABLE, 0)
        remove_tree(self.scratch, keep_top=True)
        system = list(LANDLOCK_SYSTEM_PATHS)
        header = [p for key, p in self.path_map.items() if key == "/judge/cache"]
        self.program_rules = dict(read_exec=system, read=[*LANDLOCK_READ_PATHS, self.run_dir],
                                  devices=LANDLOCK_DEVICES, read_write=[])
        rulesets = {"program": landlock_ruleset(self.landlock, **self.program_rules),
                    "compiler": landlock_ruleset(self.landlock, read_exec=system + header, read=LANDLOCK_READ_PATHS,
                                                 devices=LANDLOCK_DEVICES, read_write=[self.scratch])}
        self.restrictors = {role: landlock_restrictor(fd) for role, fd in rulesets.items()}

    def _start_referee(self):
        """Forks the referee (before any filter: its own forks must not need it), attaches the fork notifier and
        hands the referee the notifier's descriptor. Nothing is shared with it afterwards: it decides from the
        caller's uid, which it reads from the kernel."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:
            theirs.close()
            try:
                _referee(mine, {0, self.compile_uid})
            finally:
                os._exit(1)
        mine.close()
        listener = attach_notifier(self.filters["notifier"])
        socket.send_fds(theirs, [struct.pack("<i", os.getpid())], [listener])  # before "base" refuses sendmsg
        os.close(listener)
        theirs.close()
        self.referee = pid

    def program_dir(self):
        """A program's working, home and temporary directory (empty, and not writable for it)."""
        return {"container": self.run_dir, "landlock": self.run_dir, "none": self.scratch}.get(self.mode, "/tmp")

    def host_path(self, arg):
        for sandbox_prefix, host_prefix in self.path_map.items():
            arg = arg.replace(sandbox_prefix, host_prefix)
        return arg

    def hello(self):
        status = _proc_status()
        return {"ready": True, "python": sys.version.split()[0], "mode": self.mode,
                "seccomp": bool(self.filters), "seccomp_unknown": self.seccomp_unknown,
                "landlock": self.landlock, "writes_refused": self.writes_refused,
                "baseline_vm": status.get("VmSize", 0), "baseline_rss": status.get("VmRSS", 0),
                "machine": os.uname().machine}

    def serve(self):
        """The zygote: says hello, then forks one sample process at a time, each a fresh copy of this process as it
        is now -- before any request -- and waits for it to finish its sample (or the host to stop)."""
        write_message(self.ctl_out, self.hello())
        handoff_r, handoff_w = os.pipe2(os.O_CLOEXEC)
        os.set_blocking(handoff_r, False)
        first = None  # the header the last sample process read but left to the next one
        while True:
            pid = os.fork()
            if pid == 0:
                os.close(handoff_r)
                try:
                    self._serve_sample(handoff_w, first)
                finally:
                    os._exit(1)
            os.waitpid(pid, 0)
            try:
                handed = os.read(handoff_r, 1 << 20)
            except BlockingIOError:
                handed = b""
            if not handed:  # the host is gone or said "exit"
                return
            (nblobs,) = struct.unpack_from("<I", handed)
            first = json.loads(handed[4:]), nblobs

    def _serve_sample(self, handoff, first):
        """A sample process: serves the host's requests for one sample (numbered by the host), each run a fork of
        this process; hands the first request of the next sample back to the zygote and exits. Its memory holds
        its own sample only: what its programs can find there is theirs."""
        if self.mode != "none":
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # the zygote gone: so are we
        if self.mode in ("root", "container", "landlock"):
            prctl(PR_SET_CHILD_SUBREAPER, 1)  # everything a run starts stays our descendant (see _kill_run)
        self.stderr_used = True  # the memfds are the zygote's: the last sample process's stderr may be there
        sample = None
        while True:
            if first is not None:
                (header, nblobs), first = first, None
            else:
                try:
                    header, nblobs = read_header(self.ctl_in)
                except EOFError:
                    os._exit(0)
            op = header.get("op")
            if op == "exit":
                os._exit(0)
            if op == "run":
                if sample is not None and (header.get("sample") is None or header["sample"] != sample):
                    _write_all(handoff, struct.pack("<I", nblobs) + json.dumps(header).encode())
                    os._exit(0)  # the next sample starts in a fresh process
                sample = header.get("sample", "")
            self._serve_one(header, nblobs)

    def _serve_one(self, header, nblobs):
        op = header.get("op")
        run, error = None, None
        if op == "run":
            try:
                run = _Run(self, header)
            except Exception as exc:
                error = exc
        for index in range(nblobs):  # every blob is consumed, whatever happens: the pipe stays in step
            receive_blob(self.ctl_in, run.target(index) if run is not None else None)
        if op == "ping":
            write_message(self.ctl_out, {"ok": True})
            return
        try:
            if error is not None:
                raise error
            reply, out_blobs = run.execute()
        except Exception as exc:  # a failure of the judge, never of the program: the host replaces us
            reply, out_blobs = {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                                "traceback": traceback.format_exc()[-2000:]}, []
        try:
            write_message(self.ctl_out, reply, out_blobs)
        finally:
            if run is not None:
                run.close()

    def code(self, source_fd):
        """The sample's Python program, compiled once per sample (this process serves one sample only)."""
        source = os.pread(source_fd, _size(source_fd), 0)
        if self.source != source:
            self.source, self.compiled = source, None
            try:
                self.compiled = compile(source, "solution.py", "exec")
            except Exception:
                pass  # the child compiles it again and reports the failure as the program's
        return self.source, self.compiled

    # --- after a run ---------------------------------------------------------------------------------------

    def _signal_all(self, pid):
        """SIGKILL to the run: the program (_kill_run then finds the rest by uid); none and landlock modes, its
        process group."""
        if self.mode in ("none", "landlock"):
            _killpg(pid)
            return
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def _kill_run(self, pid):
        """After the program was reaped: kills what it left behind (only a compiler can start processes) and
        waits until all of it is gone."""
        if self.mode == "none":
            _killpg(pid)
        elif self.mode == "landlock":
            self._kill_process_group(pid)
        elif self.mode != "userns":
            self._kill_slot_processes()

    def _kill_process_group(self, pgid):
        """Landlock mode: kills the run's process group (only a compiler starts processes, and none can leave its
        group) and reaps until this subreaper has no child left; raises RuntimeError after 10 s."""
        deadline = time.monotonic() + 10.0
        while True:
            _killpg(pgid)
            if not _reap_children():
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"processes of the run's group {pgid} survived SIGKILL for 10 s")
            time.sleep(0.0005)

    def _kill_slot_processes(self):
        """Root and container modes: kills every process of the slot's uids and reaps it; returns when none is left,
        raises RuntimeError when some survive 10 s (the run's program is charged with it: see _Run._run_direct).

        This server is a child subreaper, so whatever a run started (double forks and setsid included) stays its
        descendant and, once its parent dies, becomes its child: no child left to wait for means no process of
        the run left, which makes the usual case (nothing left behind) one wait call. Otherwise the processes are
        found by their real uid in /proc and stopped, then killed, from here (see stop_then_kill): a signal sent
        *as* the slot's uid (kill(-1)) could be answered in kind by a leftover spinning on kill(-1) itself."""
        deadline = time.monotonic() + 10.0
        while _reap_children():  # the killed ones, as they die (their orphans become our children)
            if time.monotonic() > deadline:
                raise RuntimeError(f"processes of uids {sorted(self.slot_uids)} survived SIGKILL for 10 s")
            if not stop_then_kill(self.slot_uids, deadline):  # again if one slipped through (one it had stopped
                time.sleep(0.0005)                         # may have been sent SIGCONT by one it had not yet)

    def _kill_leftovers(self):
        """At start-up: kills processes of the slot's uids that are not ours (an earlier server of this slot died
        with a run in progress), until none is left alive."""
        deadline = time.monotonic() + 10.0
        while stop_then_kill(self.slot_uids, deadline):
            time.sleep(0.001)  # until a scan finds none: SIGKILL takes a moment

    def clean_up(self, files_dir, compile_run):
        """After a run: removes the compiler's files and checks that nothing else was left. Returns why this
        server should be replaced (a clean-up or check that failed), or None; the run's verdict stands either way."""
        try:
            # a program cannot create files (see the module docstring): the check runs after a compile
            if self.mode == "root" and compile_run:
                remove_tree(files_dir)
                left = os.listdir("/tmp") + os.listdir("/dev/shm")
                if left:
                    return f"files left in /tmp or /dev/shm after the run: {left[:5]}"
            elif self.mode in ("container", "landlock") and compile_run:
                remove_tree(files_dir, keep_top=True)
                os.chmod(files_dir, 0o700)
                left = os.listdir(self.scratch) + os.listdir(self.run_dir)
                if left:
                    return f"files left in the slot's directories after the run: {left[:5]}"
            elif self.mode == "none" and files_dir:
                remove_tree(files_dir)
        except OSError as exc:
            return f"cleaning up after the run failed: {exc}"
        return None


class _Run:
    """One program run: its descriptors (input, source, output, the compiler's files, a harness's channel), the
    fork(s), the wait, the reply. Made before the request's blobs are read, so that they go straight where they
    belong.

    Descriptors. `fds` holds what the run's processes get, `owned` everything of this run alone (closed with it).
    The program gets open file descriptions of its own of the server's stdin and stdout memfds, stdin read-only and
    stdout write-only, and their modes (0400 and 0200 of the judge's uid; chmod refused) let it open neither
    otherwise through /proc/self/fd: no flag a program sets reaches the server's descriptors, it cannot write its
    input, and it cannot read back what it wrote, so neither memfd serves as storage. A harness run (kind
    "harness") has two processes: the
    *candidate* (the program: its code, then its function answering calls) and the *checker* (the checks, which
    call it through a pipe pair and compare), each with descriptors of its own (see `_checker`)."""

    def __init__(self, server, req):
        self.server, self.req = server, req
        self.kind, self.compile_run = req["kind"], bool(req.get("compile"))
        self.files_dir = None  # where the server writes the compiler's files (all but userns mode)
        self.stderr = None
        self.owned = []  # descriptors of this run alone, closed with it
        self.fds = {}  # name -> descriptor, for the program (and the userns monitor)
        self.checker_fds = {}  # harness: the checker's
        memfds = server.memfds
        try:
            self.stdin, self.stdout = _empty(memfds["stdin"]), _empty(memfds["stdout"])
            self.fds["stdout"] = self._keep(os.open(f"/proc/self/fd/{self.stdout}", os.O_WRONLY | os.O_CLOEXEC))
            self.targets = {0: self.stdin}  # blob index -> where it goes
            if self.kind in ("python", "python_compile", "harness"):
                self.source = self.targets[1] = _empty(memfds["source"])
            if self.kind == "harness":
                self.checker_fds["check"] = self.targets[2] = _empty(memfds["check"])
            self.workdir = server.program_dir()
            if self.compile_run:
                self._prepare_compile()
            elif server.mode == "none":
                import tempfile
                self.files_dir = self.workdir = tempfile.mkdtemp(prefix="run-", dir=server.scratch)
            if self.kind == "exec" and not self.compile_run:  # the binary, through a descriptor: its directory
                self._own("binary", os.open(server.host_path(req["argv"][0]), os.O_RDONLY | os.O_CLOEXEC))  # is shut
            self.stderr = _StderrTail([memfds["stderr"], memfds["stderr2"]], server.stderr_used)
            self.fds["stderr"] = self.stderr.write_end
        except BaseException:
            self.close()
            raise

    def _keep(self, fd):
        self.owned.append(fd)
        return fd

    def _own(self, name, fd):
        self.fds[name] = self._keep(fd)
        return fd

    def _prepare_compile(self):
        server = self.server
        files = self.req.get("files") or {}
        if server.mode == "userns":  # the monitor writes them into its own /tmp
            for name, index in files.items():
                self.targets[index] = self._own(f"file:{os.path.basename(name)}", _memfd("file"))
            self._own("artifact", _memfd("artifact"))
            self.workdir = "/tmp"
            return
        if server.mode == "root":
            os.mkdir("/tmp/build", 0o700)
            os.chown("/tmp/build", server.compile_uid, server.compile_uid)
            self.files_dir = "/tmp/build"
        elif server.mode in ("container", "landlock"):
            self.files_dir = server.scratch
        else:
            import tempfile
            self.files_dir = tempfile.mkdtemp(prefix="build-", dir=server.scratch)
        self.workdir = self.files_dir
        for name, index in files.items():
            self.targets[index] = self._own(f"file:{name}", _write_file(self.files_dir, name))

    def target(self, index):
        return self.targets.get(index)

    def execute(self):
        server, req = self.server, self.req
        if server.mode == "landlock":  # RLIMIT_NPROC counts every task of this user, programs' or not: the
            req["nproc"] = int(req["nproc"]) + _tasks_on_machine()  # run's share comes on top of them all
        # the input is in: the program's descriptor of it is a read-only one of its own, at offset 0
        self.fds["stdin"] = self._keep(os.open(f"/proc/self/fd/{self.stdin}", os.O_RDONLY | os.O_CLOEXEC))
        self.program = (None, None)  # (source, compiled code) for a Python run
        if self.kind in ("python", "harness"):
            self.program = server.code(self.source)
        elif self.kind == "python_compile":  # the syntax check: compiled by the sandboxed child only
            self.program = (os.pread(self.source, _size(self.source), 0), None)
        for name in [n for n in self.fds if n.startswith("file:") and server.mode != "userns"]:
            fd = self.fds.pop(name)  # written: the compiler opens it by name
            self.owned.remove(fd)
            os.close(fd)
        if self.kind == "harness":
            self._harness_channel()
        if server.mode == "userns":
            report = self._run_in_pid_namespace()
        else:
            report = self._run_direct()
        server.stderr_used = self.stderr.total > 0
        stdout_size = _size(self.stdout)
        blobs = [[(self.stdout, 0, min(stdout_size, int(req["stdout_limit"])))],
                 self.stderr.tail(int(req.get("stderr_limit", 4096)))]
        artifact, artifact_size = None, 0
        if self.compile_run and report["status"] in ("exited", "signaled"):
            if server.mode == "userns":  # the monitor copied it, or only said how large it was
                artifact_size = int(report.get("artifact_size", 0))
                if report.get("artifact_copied"):
                    artifact = self.fds["artifact"]
            else:
                artifact, artifact_size = _open_artifact(
                    os.path.join(self.files_dir, os.path.basename(req.get("collect") or "solution")),
                    int(req.get("collect_limit", 0)), None if server.mode == "none" else server.compile_uid)
                if artifact is not None:
                    self._own("artifact", artifact)
        blobs.append([(artifact, 0, artifact_size)] if artifact is not None else [])
        # the compiler's files go now (an open artifact stays readable), and the server checks it is clean
        unhealthy = server.clean_up(self.files_dir, self.compile_run) if server.mode != "userns" else None
        if report.get("cleanup_failed"):  # the program made its own clean-up fail: a fresh server takes over
            unhealthy = f"{unhealthy}; " if unhealthy else ""
            unhealthy += f"processes of the run survived its clean-up: {report['cleanup_failed']}"
        reply = {"ok": True, "unhealthy": unhealthy, "stdout_size": stdout_size, "stderr_size": self.stderr.total,
                 "artifact_size": artifact_size, "artifact_too_large": self.compile_run and artifact is None and
                 artifact_size > int(req.get("collect_limit", 0)), **report}
        return reply, blobs

    def _harness_channel(self):
        """The pipes between the checker and the candidate: calls one way, answers the other, and the checker's
        report to this process. Each end belongs to one process only."""
        calls_r, calls_w = os.pipe2(os.O_CLOEXEC)
        answers_r, answers_w = os.pipe2(os.O_CLOEXEC)
        report_r, report_w = os.pipe2(os.O_CLOEXEC)
        for fd in (calls_r, calls_w, answers_r, answers_w, report_r, report_w):
            self._keep(fd)
        self.fds.update(calls=calls_r, answers=answers_w)
        self.checker_fds.update(calls=calls_w, answers=answers_r, report=report_w)
        self.report_r = report_r

    def _close_ends(self, fds):
        """In this process, once the process they are for is forked: its ends of the run's pipes (so that each
        process sees the end of its peer's stream when the peer is gone, and holds no end of another's)."""
        for name in ("calls", "answers", "report"):
            fd = fds.get(name)
            if fd is not None and fd in self.owned:
                self.owned.remove(fd)
                os.close(fd)
        if fds is self.fds:
            os.close(self.stderr.write_end)  # the program has it: its end is the end of the program's stderr
            self.stderr.write_end = None

    def _start_checker(self):
        """harness: forks the checker first (from this process, so that it holds nothing of the candidate's), and
        lets go of its ends here before anything else is forked."""
        pid = os.fork()
        if pid == 0:
            _checker(self.server, self.req, self.checker_fds, self.workdir)  # never returns
        self._close_ends(self.checker_fds)
        return pid

    def _finish_checker(self, pid, deadline, report):
        """harness: waits for the checker (the candidate is done) and adds its outcome to the report."""
        waited = _wait_draining(pid, deadline, self.stderr)
        if waited is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            report["checker"] = {"status": "wall"}
            return
        checker = _report(waited[0], waited[1], STATUS_READY)
        text = _read_all(self.report_r)[:1 << 16]
        try:
            outcome = json.loads(text) if text else {}
        except ValueError:
            outcome = {"outcome": "setup_error", "message": f"an unreadable report: {text[:200]!r}"}
        checker.update(outcome if isinstance(outcome, dict) else {})
        report["checker"] = checker

    def close(self):
        """After the reply is sent: the descriptors of this run alone (the server's memfds stay)."""
        for fd in self.owned:
            try:
                os.close(fd)
            except OSError:
                pass
        self.owned, self.fds, self.checker_fds = [], {}, {}
        if self.stderr is not None:
            self.stderr.close()
            self.stderr = None

    def _drain_rest(self):
        """What is left in the stderr pipe once the run is over. Every writer is dead by now (none mode: a process
        that left the run's group may still hold it, so this waits a moment, not for ever)."""
        deadline = time.monotonic() + 1.0
        while self.stderr.drain() and time.monotonic() < deadline:
            time.sleep(0.001)

    def _run_direct(self):
        """root, container and none modes: one fork per run (two for a harness: the checker and the candidate)."""
        server, req = self.server, self.req
        status_r, status_w = os.pipe2(os.O_CLOEXEC)  # an exec'd program cannot write "ready" itself
        started = time.monotonic()
        deadline = started + float(req["wall"])
        checker = self._start_checker() if self.kind == "harness" else None
        pid = os.fork()
        if pid == 0:
            os.close(status_r)
            _child(server, req, self.fds, status_w, self.workdir, *self.program)  # never returns
        os.close(status_w)
        self._close_ends(self.fds)
        waited = _wait_draining(pid, deadline, self.stderr)
        timed_out = waited is None
        if timed_out:  # the wall-clock backstop
            server._signal_all(pid)
            if checker is not None:
                os.kill(checker, signal.SIGKILL)
            waited = os.wait4(pid, 0)[1:]
        wall = time.monotonic() - started
        said = _read_all(status_r)
        os.close(status_r)
        report = {"status": "wall", "cpu": None, "maxrss": None} if timed_out else _report(*waited, said)
        if checker is not None:
            self._finish_checker(checker, deadline, report)
        try:
            server._kill_run(pid)  # whatever the run left behind (only a compiler's processes can be there)
        except RuntimeError as exc:  # survived SIGKILL: the program's doing, never a judge failure
            report["cleanup_failed"] = str(exc)
        self._drain_rest()
        report["wall"] = wall
        return report

    def _run_in_pid_namespace(self):
        """userns mode: a monitor as pid 1 of a fresh PID namespace; two forks per run. A harness's checker is
        forked first, into this process's PID namespace: the candidate, in the run's, cannot see it."""
        server, req = self.server, self.req
        result_r, result_w = os.pipe2(os.O_CLOEXEC)
        started = time.monotonic()
        deadline = started + float(req["wall"])
        checker = self._start_checker() if self.kind == "harness" else None
        try:
            unshare(CLONE_NEWPID)  # the next fork becomes pid 1 of a fresh PID namespace
            pid = None
            try:
                pid = os.fork()
            finally:
                if pid != 0:
                    setns(server.own_pidns, CLONE_NEWPID)  # back to our own, so that the next run can unshare
            if pid == 0:
                os.close(result_r)
                _monitor(server, req, self.fds, result_w, self.program)  # never returns
            os.close(result_w)
            self._close_ends(self.fds)
            waited = _wait_draining(pid, deadline, self.stderr)
            if waited is None:
                os.kill(pid, signal.SIGKILL)  # pid 1 of the run's namespace: takes every process with it
                if checker is not None:
                    os.kill(checker, signal.SIGKILL)
                os.waitpid(pid, 0)
                report = {"status": "wall", "cpu": None, "maxrss": None}
            else:
                text = _read_all(result_r)
                report = json.loads(text) if text.startswith(b"{") else \
                    {"status": "setup_error", "error": "the monitor process died without a report"}
            if checker is not None:
                self._finish_checker(checker, deadline, report)
        finally:
            os.close(result_r)
        self._drain_rest()
        report["wall"] = time.monotonic() - started
        return report


def _monitor(server, req, fds, result_w, program):
    """userns mode: pid 1 of the run's PID namespace; its exit kills every process left in there."""
    try:
        compile_run = req.get("compile", False)
        unshare(CLONE_NEWNS | CLONE_NEWIPC)
        opts = MS_NOSUID | MS_NODEV
        # the compiler gets a writable /tmp; a program a read-only one, and a read-only /dev/shm: it stores nothing
        mount("tmpfs", "/tmp", "tmpfs", opts | (0 if compile_run else MS_RDONLY),
              f"size={server.tmp_size},mode={'700' if compile_run else '755'}")
        mount("tmpfs", "/dev/shm", "tmpfs", opts | MS_NOEXEC | MS_RDONLY, "size=4096,mode=755")
        mount("tmpfs", "/judge/bin", "tmpfs", opts | MS_NOEXEC | MS_RDONLY, "size=4096,mode=755")  # siblings' binaries
        mount("proc", "/proc", "proc", opts | MS_NOEXEC, None)  # shows only this run's processes
        for name in [n for n in fds if n.startswith("file:")]:
            target = _write_file("/tmp", name[5:])
            source = fds.pop(name)
            os.lseek(source, 0, os.SEEK_SET)
            os.sendfile(target, source, 0, _size(source))  # a few KB of source: one call
            os.close(target)
        status_r, status_w = os.pipe2(os.O_CLOEXEC)
        child = os.fork()
        if child == 0:
            os.close(status_r)
            os.close(result_w)
            _child(server, req, fds, status_w, "/tmp", *program)  # never returns
        os.close(status_w)
        for name in ("stderr", "calls", "answers"):  # the program's streams end with the program
            if name in fds:
                os.close(fds.pop(name))
        _, status, usage = os.wait4(child, 0)
        report = _report(status, usage, _read_all(status_r))
        if compile_run and report["status"] in ("exited", "signaled") and "artifact" in fds:
            artifact, size = _open_artifact(os.path.join("/tmp", os.path.basename(req.get("collect") or "solution")),
                                            int(req.get("collect_limit", 0)))
            report["artifact_size"], report["artifact_copied"] = size, artifact is not None
            if artifact is not None:
                os.sendfile(fds["artifact"], artifact, 0, size)
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


def _close_all_but(keep):
    """Closes every descriptor from 3 up, but those in `keep`."""
    low = 3
    for x in sorted(keep):
        os.closerange(low, x)
        low = x + 1
    os.closerange(low, 1 << 16)


def _child(server, req, fds, status_w, workdir, source, code):
    # Everything that is the same for every run (signal dispositions, fixed rlimits, the capability bounding set,
    # the seccomp programs, the Landlock rulesets) was done once in the server: a forked child pays for each
    # Python object it touches (copy-on-write), so this path is kept short.
    try:
        role = "compiler" if req.get("compile") else "program"
        os.dup2(fds["stdin"], 0)
        os.dup2(fds["stdout"], 1)
        os.dup2(fds["stderr"], 2)
        binary = fds.get("binary")
        channel = (fds["calls"], fds["answers"]) if req["kind"] == "harness" else None
        if binary is not None and server.mode == "landlock":  # its own binary may run, and no other: the binary
            # directory is this user's, so a rule for this one file (an exec through the descriptor needs it)
            landlock_restrictor(landlock_ruleset(server.landlock, **dict(
                server.program_rules, read_exec=[*server.program_rules["read_exec"],
                                                 server.host_path(req["argv"][0])])))()
        elif role in server.restrictors:
            server.restrictors[role]()  # before the ruleset's fd is closed below
        _close_all_but([x for x in (status_w, binary, *(channel or ())) if x is not None])
        os.chdir(workdir)
        if workdir != os.environ.get("HOME"):
            os.environ.update(HOME=workdir, TMPDIR=workdir)
        if server.mode in ("none", "landlock"):
            os.setpgid(0, 0)  # the run's own process group: what the clean-up kills (no uid of its own)
        kind = req["kind"]
        _set_limits(req, role)
        _drop_privileges(server, role)
        if role in server.attachers:
            server.attachers[role]()  # the program's accounting rules (userns: its whole filter)
        if kind == "python_compile":
            _compile_only(source, status_w)
        signal.setitimer(signal.ITIMER_PROF, float(req["cpu"]))  # CPU time; survives exec: the exact TLE kill
        if kind == "exec":
            for sig in (signal.SIGPIPE, signal.SIGXFSZ):
                signal.signal(sig, signal.SIG_DFL)  # Python ignores these; a C++ program must not inherit that
            env = dict(SANDBOX_ENV, HOME=workdir, TMPDIR=workdir)
            os.write(status_w, STATUS_READY)
            try:
                if binary is not None:
                    os.execve(binary, ["solution"], env)  # fexecve: the program never names its binary's path
                argv = [server.host_path(str(a)) for a in req["argv"]]
                os.execve(argv[0], argv, env)
            except OSError as exc:
                os.write(status_w, b"E%d" % exc.errno)
                os._exit(127)
        os.write(status_w, STATUS_READY)
        os.close(status_w)
        _run_python(source, code, (req["call"], *channel) if channel else None)
    except BaseException as exc:
        try:
            os.write(2, f"\njudge: setting up the program failed: {type(exc).__name__}: {exc}\n".encode())
        finally:
            os._exit(126)


def _set_limits(req, role):
    cpu = float(req["cpu"])
    soft = int(cpu) + 1  # RLIMIT_CPU is whole seconds: a backstop behind the exact ITIMER_PROF
    limits = [(resource.RLIMIT_CPU, soft, soft + 1), (resource.RLIMIT_FSIZE, int(req["fsize"])),
              (resource.RLIMIT_NPROC, int(req["nproc"])), (resource.RLIMIT_RTPRIO, 0), (resource.RLIMIT_NICE, 0)]
    if role != "compiler":
        limits.append((resource.RLIMIT_NOFILE, PROGRAM_NOFILE))
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


def _drop_privileges(server, role):
    """To the role's uid: root and container modes, the slot's uid for the role; userns mode, a uid of a nested
    user namespace (the checker's differs from the program's). Non-dumpable in every mode."""
    if server.mode in ("root", "container"):
        uid = {"compiler": server.compile_uid, "checker": server.checker_uid}.get(role, server.uid)
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)  # leaving uid 0 clears every capability
        # (the bounding set was emptied in the server; no-new-privs comes with the seccomp filter)
    elif server.mode == "userns":
        # bubblewrap's user namespace maps only the host user (as uid 0 here); a nested namespace lets the
        # program run as a non-zero uid, and RLIMIT_NPROC count only this run's processes
        uid = NESTED_UID + (role == "checker")
        unshare(CLONE_NEWUSER)
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} 0 1"), ("gid_map", f"{uid} 0 1")):
            with open(f"/proc/self/{name}", "w") as fh:
                fh.write(text)
        _drop_capability_bounding_set()  # a new user namespace starts with a full one
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        # the creator of a user namespace holds every capability in it, and mapping its own uid there is no
        # change of uid that would clear them: empty the sets explicitly
        drop_all_capabilities()
    if server.mode != "none":
        prctl(PR_SET_DUMPABLE, 0)  # a uid change may set it from fs.suid_dumpable: no /proc/PID/mem, no core
        if os.getuid() == 0 or os.geteuid() == 0:
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


def _run_python(source, code, harness=None):
    """Runs the program (compiled by the sample process, or here if that failed) as `__main__` in this forked
    interpreter, the way `python3 solution.py` would. A harness's candidate (`harness` = (call, calls fd, answers
    fd)) then answers the checker's calls (see `_answer_calls`) and exits once the checker is done."""
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
        exec(code if code is not None else compile(source, "solution.py", "exec"), main.__dict__)
        if harness is not None:
            _answer_calls(main.__dict__, *harness)
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except BaseException:
        traceback.print_exc()
        status = 1
    if harness is None:  # a candidate is done when its checker is: what it left running does not matter
        try:
            if "threading" in sys.modules:
                sys.modules["threading"]._shutdown()  # wait for non-daemon threads, as interpreter exit does
            atexit._run_exitfuncs()
        except BaseException:
            traceback.print_exc()
            status = status or 1
    try:
        sys.stdout.flush()
    except BaseException:  # a closed stdout
        traceback.print_exc()
        status = status or 1
    try:
        sys.stderr.flush()
    except BaseException:
        pass
    os._exit(status)


# ---------------------------------------------------------------------------------------------------------
# function-call harnesses (HumanEval, LiveCodeBench's functional problems): the verdict never lives in the
# candidate's process
#
# The candidate runs the program and then answers calls: each call's arguments arrive as plain data, the function
# runs, and its value goes back as plain data. The checker, a process of its own (another uid, or another PID and
# user namespace), runs the checks with `candidate` bound to a stub that makes those calls, and compares. Expected
# values, the check code and the verdict exist only in the checker, which the candidate can neither see nor
# signal, so nothing a program does to its own interpreter (its builtins, json, a trace function, its frames, an
# object whose __eq__ is always true, an early os._exit) reaches a comparison.
#
# Plain data travels as JSON in which every value keeps its Python type (tuple and list differ, as they do for
# HumanEval's `==`): null, true, false and strings as themselves, everything else as a tagged array -- ["i", hex]
# int (no digit limit), ["f", float.hex()] float (exact, inf and nan included), ["c", re, im] complex,
# ["b", hex] bytes, ["ba", hex] bytearray, ["l", [...]] list, ["t", [...]] tuple, ["s", [...]] set,
# ["fs", [...]] frozenset, ["d", [[key, value], ...]] dict. Subclasses travel as their base type (a namedtuple as
# a tuple, a Counter as a dict), which is how they compare. Anything else (a generator, a custom object, a
# structure too deep or cyclic) does not travel: the answer is wrong. The checker decodes strictly: what is not
# this format is a wrong answer too.
#
# Frames on both pipes: <u32 length><JSON>. Calls: ["call", args (a tuple), kwargs (a dict)]. Answers:
# ["ok", value] | ["raised", "Type: message"] | ["not_plain", "what"].


class NotPlainData(Exception):
    """A value that plain data cannot carry (see above)."""


def plain_encode(value):
    if value is None or value is True or value is False:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return ["i", format(int.__index__(value), "x")]
    if isinstance(value, float):
        return ["f", float.hex(value)]
    if isinstance(value, complex):
        return ["c", float.hex(value.real), float.hex(value.imag)]
    if isinstance(value, bytes):
        return ["b", bytes.hex(value)]
    if isinstance(value, bytearray):
        return ["ba", bytearray.hex(value)]
    for kind, tag in ((tuple, "t"), (list, "l"), (frozenset, "fs"), (set, "s")):
        if isinstance(value, kind):
            return [tag, [plain_encode(item) for item in kind.__iter__(value)]]
    if isinstance(value, dict):
        return ["d", [[plain_encode(k), plain_encode(v)] for k, v in dict.items(value)]]
    raise NotPlainData(f"a value of type {type(value).__name__}")


_PLAIN_SEQUENCES = {"l": list, "t": tuple, "s": set, "fs": frozenset}


def plain_decode(node):
    """The value `node` (parsed JSON) stands for; raises NotPlainData for anything that is not the format."""
    if node is None or node is True or node is False or type(node) is str:
        return node
    if type(node) is not list or not node or type(node[0]) is not str:
        raise NotPlainData("not a value of the plain-data format")
    tag, rest = node[0], node[1:]
    if tag in _PLAIN_SEQUENCES and len(rest) == 1 and type(rest[0]) is list:
        try:
            return _PLAIN_SEQUENCES[tag](plain_decode(item) for item in rest[0])
        except TypeError:  # an unhashable member of a set
            raise NotPlainData("a set holding an unhashable value") from None
    if tag == "d" and len(rest) == 1 and type(rest[0]) is list:
        out = {}
        for pair in rest[0]:
            if type(pair) is not list or len(pair) != 2:
                raise NotPlainData("a dict entry that is not a pair")
            try:
                out[plain_decode(pair[0])] = plain_decode(pair[1])
            except TypeError:
                raise NotPlainData("an unhashable dict key") from None
        return out
    if all(type(x) is str for x in rest):
        try:
            if tag == "i" and len(rest) == 1:
                return int(rest[0], 16)
            if tag == "f" and len(rest) == 1:
                return float.fromhex(rest[0])
            if tag == "c" and len(rest) == 2:
                return complex(float.fromhex(rest[0]), float.fromhex(rest[1]))
            if tag == "b" and len(rest) == 1:
                return bytes.fromhex(rest[0])
            if tag == "ba" and len(rest) == 1:
                return bytearray.fromhex(rest[0])
        except (ValueError, OverflowError):
            pass
    raise NotPlainData(f"a malformed {tag!r} value")


def _write_frame(fd, payload):
    _write_all(fd, struct.pack("<I", len(payload)) + payload)


def _read_frame(fd, limit):
    """The next frame's payload; None at the end of the stream. Raises NotPlainData past `limit` bytes."""
    head = b""
    while len(head) < 4:
        chunk = os.read(fd, 4 - len(head))
        if not chunk:
            return None
        head += chunk
    (size,) = struct.unpack("<I", head)
    if limit is not None and size > limit:
        raise NotPlainData(f"an answer of {size} bytes, over the checker's limit of {limit}")
    try:
        return _read_exact(fd, size)
    except EOFError:
        return None


def _answer_calls(namespace, call, calls_fd, answers_fd):
    """The candidate's side: resolves `call` ("f": the program's function f; "C.m": method m of one instance of
    its class C), then answers calls until the checker is done (the calls pipe ends)."""
    name, _, method = call.partition(".")
    if name not in namespace:
        raise NameError(f"the program defines no {name!r}, which the checks call")
    target = getattr(namespace[name](), method) if method else namespace[name]
    while True:
        request = _read_frame(calls_fd, None)
        if request is None:
            return
        _, args, kwargs = json.loads(request)
        try:
            value = target(*plain_decode(args), **plain_decode(kwargs))
        except SystemExit:  # the program ends, as it would in one process with its checks
            raise
        except BaseException as exc:
            try:
                text = f"{type(exc).__name__}: {exc}"
            except BaseException:
                text = type(exc).__name__
            answer = ["raised", text[:2000]]
        else:
            try:
                answer = ["ok", plain_encode(value)]
            except (NotPlainData, RecursionError) as exc:
                answer = ["not_plain", str(exc) if isinstance(exc, NotPlainData) else "a structure too deep or cyclic"]
        try:
            sys.stdout.flush()
        except BaseException:
            pass
        _write_frame(answers_fd, json.dumps(answer).encode())


class ProgramEnded(BaseException):
    """The candidate's process ended during a call (it exited, crashed or ran out of time)."""


class ProgramRaised(Exception):
    """The candidate's function raised: in one process the check would have seen this exception."""


def _candidate_stub(calls_fd, answers_fd, limit):
    """What the checks call in the checker's process: sends the arguments, returns the program's answer."""
    calls = [0]

    def candidate(*args, **kwargs):
        calls[0] += 1
        request = json.dumps(["call", plain_encode(args), plain_encode(kwargs)]).encode()
        try:
            _write_frame(calls_fd, request)
            answer = _read_frame(answers_fd, limit)
        except (BrokenPipeError, OSError):
            answer = None
        if answer is None:
            raise ProgramEnded()
        try:
            answer = json.loads(answer)
            tag, body = answer
        except (ValueError, TypeError, RecursionError):
            raise NotPlainData("an unreadable answer") from None
        if tag == "ok":
            try:
                return plain_decode(body)
            except RecursionError:
                raise NotPlainData("a structure too deep") from None
        if tag == "raised" and type(body) is str:
            raise ProgramRaised(body)
        if tag == "not_plain" and type(body) is str:
            raise NotPlainData(body)
        raise NotPlainData("an answer that is not the format")
    candidate.calls = calls
    return candidate


def _checker(server, req, fds, workdir):
    """A harness's checker: runs the check code with `candidate` bound to `_candidate_stub`, as the checker uid
    (another PID and user namespace in userns mode), with the program's rlimits, filters and Landlock rules and
    limits of its own ("checker_cpu", "checker_as"); writes its outcome to the report pipe as JSON:
    {"outcome": "passed" | "failed" (an AssertionError) | "check_raised" (another exception in the checks) |
    "raised" (the program's function raised) | "not_plain" | "ended" | "check_error" (the checks did not
    compile) | "out_of_memory" | "setup_error", "message": ..., "calls": ...}."""
    report = fds["report"]
    outcome = {"outcome": "setup_error"}
    try:
        null = os.open("/dev/null", os.O_RDWR)
        for target in (0, 1, 2):
            os.dup2(null, target)
        if "program" in server.restrictors:
            server.restrictors["program"]()
        source = os.pread(fds["check"], _size(fds["check"]), 0)
        _close_all_but([fds["calls"], fds["answers"], report])
        os.chdir(workdir)
        cpu = float(req["checker_cpu"])
        _set_limits({"cpu": cpu, "fsize": 1 << 20, "nproc": req["nproc"], "as": req["checker_as"],
                     "stack": req.get("stack")}, "checker")
        _drop_privileges(server, "checker")
        if "program" in server.attachers:
            server.attachers["program"]()  # userns: its whole filter; no Landlock: no writes
        signal.setitimer(signal.ITIMER_PROF, cpu)
        candidate = _candidate_stub(fds["calls"], fds["answers"], int(req["checker_as"]) // 4)
        outcome = {"outcome": "check_error"}
        code = compile(source, "checks.py", "exec")
        outcome = {"outcome": "passed"}
        try:
            exec(code, {"__name__": "__main__", "__builtins__": builtins, "candidate": candidate})
        except BaseException as exc:  # what ended the checks early says the verdict
            outcome = _checks_outcome(exc)
        outcome["calls"] = candidate.calls[0]
    except BaseException as exc:
        outcome["message"] = _exception_text(exc)
    try:
        _write_all(report, json.dumps(outcome).encode())
    finally:
        os._exit(0)


# what left the checks, in order (the first class that matches): the checker's outcome, and whether it says why
_CHECKS_ENDED_BY = ((ProgramEnded, "ended", False), (ProgramRaised, "raised", True), (NotPlainData, "not_plain", True),
                    (MemoryError, "out_of_memory", False), (AssertionError, "failed", True),
                    (BaseException, "check_raised", True))


def _checks_outcome(exc):
    outcome, said = next((name, said) for kind, name, said in _CHECKS_ENDED_BY if isinstance(exc, kind))
    if not said:
        return {"outcome": outcome}
    # the program's own exception, or why a value could not be carried, as the stub worded it
    text = str(exc) if isinstance(exc, (ProgramRaised, NotPlainData)) else _exception_text(exc)
    return {"outcome": outcome, "message": text}


def _exception_text(exc):
    try:
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    except BaseException:
        text = type(exc).__name__
    return text[-2000:]


# ---------------------------------------------------------------------------------------------------------
# the referee of forks (root and container modes)

# linux/seccomp.h: struct seccomp_notif is 80 bytes, seccomp_notif_resp 24
NOTIF_RECV, NOTIF_SEND, NOTIF_ID_VALID = 0xC0502100, 0xC0182101, 0x40082102
NOTIF_CONTINUE = 1


def _referee(sock, allowed_uids):
    """Answers every fork notification of the server and its runs until the server exits.

    A fork proceeds when the caller is the server (the zygote) or its real uid, read from /proc, is in
    `allowed_uids` (root: the sample processes; the slot's compile uid); the notification is then checked to be
    still pending, so the uid read was the caller's and not a later process's with its pid. A caller found allowed
    is remembered by a pidfd while it lives (a live process keeps its pid), so a sample process's forks cost one
    poll each. Nothing a program can write takes part: the referee shares no memory with the server after the
    fork that made it."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # the server gone: so are we
    prctl(PR_SET_DUMPABLE, 0)
    message, fds, _, _ = socket.recv_fds(sock, 16, 1)
    sock.close()
    if not fds:
        os._exit(1)
    (server,), listener = struct.unpack("<i", message), fds[0]
    request = bytearray(80)
    verified = {}  # pid -> pidfd of a caller found allowed
    while True:
        request[:] = bytes(80)  # the kernel wants it zeroed
        try:
            fcntl.ioctl(listener, NOTIF_RECV, request)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.EINTR):  # the caller was killed meanwhile
                continue
            os._exit(0)  # every process with the filter is gone
        notification, pid = struct.unpack_from("<QI", request)
        allowed = pid == server
        if not allowed and pid in verified:
            if select.select([verified[pid]], [], [], 0)[0]:  # it has exited: the pid may be another's now
                os.close(verified.pop(pid))
            else:
                allowed = True
        if not allowed and _real_uid(pid) in allowed_uids:
            try:
                pidfd = os.pidfd_open(pid)
            except OSError:  # a thread's id, or gone
                pidfd = None
            try:  # still pending: the uid read above was the caller's
                fcntl.ioctl(listener, NOTIF_ID_VALID, struct.pack("<Q", notification))
            except OSError:
                if pidfd is not None:
                    os.close(pidfd)
                continue
            allowed = True
            if pidfd is not None:
                if len(verified) >= 64:
                    for old in verified.values():
                        os.close(old)
                    verified.clear()
                verified[pid] = pidfd
        try:
            fcntl.ioctl(listener, NOTIF_SEND, struct.pack("<QqiI", notification, 0, 0 if allowed else -errno.EPERM,
                                                             NOTIF_CONTINUE if allowed else 0))
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                raise


if __name__ == "__main__":
    Server(json.loads(sys.argv[1])).serve()
