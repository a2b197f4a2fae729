"""The probe battery: programs that try to break out of, abuse or outlive the judge (`PROBES`), or to get OK
without solving the problem (`INTEGRITY_PROBES`), and host-side checks.

Each probe is a real program run through a real `Judge`. Whether it was *contained* is decided here on the
host, from evidence the program cannot forge where that is possible: a TCP listener on the host and abstract
AF_UNIX sockets that must receive nothing, host files that must not appear (the judge's own directories and its
other workers' scratch directories included), host processes that must not exist after the run, a secret in the
host environment that must not show up in anything the program printed, and the judge still answering
afterwards. An integrity probe's test expects what its attack would print, so that OK means the attack worked:
its check is "not OK", with evidence of its own (a memory scan that must find its own freed canary, a sibling's
answer that must not appear, a concurrent honest sample that must stay OK). After every probe, honest samples on
every worker must still be OK. The same battery runs against every isolation tier. Notebook 02 prints the table;
tests/test_sandbox_escape.py asserts every row.

    from codefu_helpers.sandbox import Judge
    from codefu_helpers.sandbox.probes import run_escape_probes
    with Judge() as judge:
        for row in run_escape_probes(judge):
            print(row["probe"], row["verdict"], row["contained"], row["evidence"])
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .results import SampleResult, Submission, Verdict

SECRET_ENV = "AWS_SECRET_ACCESS_KEY"
REPOSITORY_DATASET = Path(__file__).resolve().parents[2] / "data" / "sample" / "code_contests_sample.jsonl"
DAEMON_NAME = "codefu-daemon"  # the comm name the daemon probe gives itself, searched for on the host
LEFTOVER_NAME = "codefu-leftover"  # the same for the process whose main thread exits while another runs


@dataclass
class ProbeContext:
    port: int            # a TCP listener on the host's loopback
    host_dir: Path       # a host directory the program must not be able to write into
    secret_file: Path    # a host file holding `secret`, which the program must not be able to read
    secret: str          # also put in the host environment as AWS_SECRET_ACCESS_KEY
    listener: socket.socket
    unix_name: str = ""  # abstract AF_UNIX address (without the leading NUL) of a stream and a datagram socket
    unix_stream: socket.socket | None = None
    unix_datagram: socket.socket | None = None
    unisolated: bool = False  # a judge with isolation="none": never aim writes at real system paths
    judge_dirs: list[Path] = field(default_factory=list)  # the judge's host directories, which take no writes
    victim: str = ""          # the answer a sibling sample prints (hex), which other samples must not find
    binary_dirs: list[str] = field(default_factory=list)  # where compiled binaries live, as programs may name them
    channel_dir: Path | None = None  # a world-readable "data channel" (as /opt/ml/input/data is in a job)
    channel_question: str = ""       # ... holding this question with its answer
    channel_answer: str = ""
    host_data: list[str] = field(default_factory=list)  # the files a program looks its answer up in


@dataclass
class Probe:
    name: str
    language: str
    tries: str                       # what the program attempts, in words
    source: Callable[[ProbeContext], str]
    tests: Callable[[ProbeContext], list[tuple[str, str]]]
    check: Callable[[SampleResult, ProbeContext, object], tuple[bool, str]]  # (result, context, judge)
    time_limit: float = 1.0
    memory_limit_bytes: int = 256 << 20


def _printed(result: SampleResult) -> str:
    """Everything the program printed that came back to the host (the only way out of the sandbox)."""
    return "\n".join(t.output + "\n" + t.stderr for t in result.tests)


def _accepted_connection(ctx: ProbeContext) -> bool:
    ctx.listener.setblocking(False)
    try:
        conn, _ = ctx.listener.accept()
    except (BlockingIOError, OSError):
        return False
    conn.close()
    return True


def _unix_received(ctx: ProbeContext) -> bool:
    """Did anything connect to, or send a datagram to, the host's abstract AF_UNIX sockets?"""
    for sock in (ctx.unix_stream, ctx.unix_datagram):
        sock.setblocking(False)
        try:
            if sock.type == socket.SOCK_STREAM:
                sock.accept()[0].close()
            else:
                sock.recv(64)
            return True
        except (BlockingIOError, OSError):
            pass
    return False


def _host_processes_named(name: str, alive: bool = False) -> list[int]:
    """Pids of the processes named `name`; with alive, only those with a live thread (a process whose main thread
    has exited shows Z in /proc/PID/stat while its other threads run; a true zombie has only that one)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if Path(f"/proc/{entry}/comm").read_text().strip() == name and (not alive or any(
                        Path(f"/proc/{entry}/task/{task}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
                        for task in os.listdir(f"/proc/{entry}/task"))):
                    found.append(int(entry))
            except OSError:
                pass
    return found


def _judge_still_works(judge) -> bool:
    r = judge.run("python", "print(sum(map(int, input().split())))", [("2 3\n", "5\n")], 1.0, 64 << 20)
    return r.verdict is Verdict.OK


# --- the programs -------------------------------------------------------------------------------------------

_NETWORK_PY = """
import socket
out = []
try:
    s = socket.create_connection(("127.0.0.1", {port}), timeout=0.5); s.sendall(b"hi"); out.append("connected")
except OSError as e:
    out.append("loopback blocked")
try:
    socket.create_connection(("1.1.1.1", 53), timeout=0.5); out.append("internet reachable")
except OSError:
    out.append("internet blocked")
try:
    socket.getaddrinfo("pypi.org", 443); out.append("dns works")
except OSError:
    out.append("dns blocked")
print(*out, sep="\\n")
"""

_NETWORK_CPP = r"""
#include <arpa/inet.h>
#include <cstdio>
#include <sys/socket.h>
#include <unistd.h>
int main() {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{}; a.sin_family = AF_INET; a.sin_port = htons(PORT); a.sin_addr.s_addr = htonl(0x7f000001);
    if (connect(s, (sockaddr*)&a, sizeof a) == 0) { write(s, "hi", 2); puts("connected"); }
    else puts("loopback blocked");
}
"""

_UNIX_PY = """
import socket
out = []
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.settimeout(0.5); s.connect("\\0{name}")
    s.sendall(b"hi"); out.append("unix connected")
except OSError:
    out.append("unix blocked")
try:
    d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); d.sendto(b"hi", "\\0{name}-dgram")
    out.append("datagram sent")
except OSError:
    out.append("datagram blocked")
try:  # a pair of its own (no address to reach anyone) is refused too: its buffers are memory outside the limit
    a, b = socket.socketpair(); out.append("pair made")
except OSError:
    out.append("pair refused")
print(*out, sep="\\n")
"""

_SYSTEM_TARGETS = ("/usr/local/pwned.txt", "/etc/pwned", "/pwned", "/judge/bin/pwned", "/judge/cache/pwned")
_WRITE_PY = """
targets = {targets!r}
for path in targets:
    try:
        with open(path, "w") as fh:
            fh.write("pwned")
        print("wrote", path)
    except OSError as e:
        print("refused", path, type(e).__name__)
"""

_READ_PY = """
import os
for path in [{secret_file!r}, "/etc/shadow", "/root/.bashrc", "/proc/1/environ", "/proc/2/environ",
             "/proc/2/mem", "/proc/self/environ"]:
    try:
        with open(path, "rb") as fh:
            print(path, fh.read(200))
    except OSError as e:
        print(path, "refused", type(e).__name__)
print(dict(os.environ))
"""

_FORK_BOMB_PY = """
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
"""

_FORK_BOMB_CPP = r"""
#include <unistd.h>
int main() { while (true) fork(); }
"""

_MEMORY_BOMB_PY = """
chunks = []
while True:
    chunks.append(b"x" * (50 << 20))  # written to, so that it is really held
"""

_MEMORY_BOMB_CPP = r"""
#include <vector>
#include <cstdio>
int main() {
    std::vector<std::vector<char>> v;
    while (true) v.emplace_back(50 << 20, 'x');
}
"""

_LOOP_PY = "while True:\n    pass\n"
_LOOP_CPP = "int main() { volatile unsigned long x = 0; while (true) x++; }\n"

_IGNORE_SIGNALS_PY = """
import signal
for s in (signal.SIGPROF, signal.SIGXCPU, signal.SIGTERM, signal.SIGINT, signal.SIGALRM, signal.SIGHUP,
          signal.SIGVTALRM, signal.SIGUSR1):
    signal.signal(s, signal.SIG_IGN)
while True:
    pass
"""

_DAEMON_PY = """
import ctypes, os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        ctypes.CDLL(None).prctl(15, b"{name}", 0, 0, 0)  # PR_SET_NAME: so the host can look for it
        while True:
            with open("/tmp/daemon-alive", "w") as fh:
                fh.write(str(time.time()))
            time.sleep(0.02)
    os._exit(0)
time.sleep(0.1)
print("parent done")
"""

_HUGE_OUTPUT_PY = """
import sys
line = "x" * 4096 + "\\n"
while True:
    sys.stdout.write(line)
"""

_KILL_JUDGE_PY = """
import os, signal
for pid in (-1, 1, 2, os.getppid()):
    try:
        os.kill(pid, signal.SIGKILL)
        print("killed", pid)
    except OSError as e:
        print("refused", pid, type(e).__name__)
"""

_KERNEL_SURFACE_PY = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
results = {}
results["unshare(user)"] = libc.unshare(0x10000000)
results["unshare(mount)"] = libc.unshare(0x00020000)
results["ptrace(attach 1)"] = libc.ptrace(16, 1, 0, 0)
results["mount tmpfs"] = libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)
results["setuid(0)"] = libc.setuid(0)
results["chroot"] = libc.chroot(b"/tmp")
results["keyctl"] = libc.syscall(250, 0, 0, 0, 0, 0) if os.uname().machine == "x86_64" else -1
results["bpf"] = libc.syscall(321, 0, 0, 0) if os.uname().machine == "x86_64" else -1
for name, rc in results.items():
    print(name, "SUCCEEDED" if rc == 0 else "refused")
"""

_LEFTOVERS_PY = """
import os, sys
cmd = sys.stdin.read().strip()
paths = [os.path.join(os.environ.get("TMPDIR", "/tmp"), "leftover"), "/tmp/leftover", "/dev/shm/leftover",
         "/var/tmp/leftover", "leftover"]
if cmd == "write":
    for p in paths:
        try:
            with open(p, "w") as fh:
                fh.write("x")
        except OSError:
            pass  # refused (container tier with Landlock): nothing left behind either
    print("written")
else:
    print("clean" if not any(os.path.exists(p) for p in paths) else "LEFTOVERS")
"""

_STEAL_ANSWER_PY = """
import gc, re, sys
pattern = re.compile(r"codefu-answer-[0-9a-f]{24}")
found = set()
def look(value):
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    if isinstance(value, str):
        found.update(pattern.findall(value))
for obj in gc.get_objects():  # every container the interpreter tracks, including the server's
    items = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple, set)) else ()
    for value in items:
        look(value)
frame = sys._getframe()
while frame is not None:  # the call stack, up through the server that forked us
    for value in frame.f_locals.values():
        look(value)
    frame = frame.f_back
print(*sorted(found)) if found else print("nothing found")
"""


# --- the checks -----------------------------------------------------------------------------------------------

def _check_network(result, ctx, judge):
    leaked = _accepted_connection(ctx)
    said = " | ".join(_printed(result).split("\n")[:3]).strip(" |")
    return not leaked and result.verdict is Verdict.OK, (
        "the host listener accepted a connection" if leaked else f"host listener saw nothing; program: {said}")


def _write_targets(ctx: ProbeContext) -> list[str]:
    if ctx.unisolated:
        return [str(ctx.host_dir / "pwned.txt")]
    return [str(ctx.host_dir / "pwned.txt"), *_SYSTEM_TARGETS, *(str(d / "pwned") for d in ctx.judge_dirs)]


def _check_write(result, ctx, judge):
    # the sandbox's /judge/bin and /judge/cache are the host's judge directories (in ctx.judge_dirs)
    host_paths = [Path(p) for p in _write_targets(ctx) if not p.startswith("/judge/")]
    written = [p for p in host_paths if p.exists()]
    return not written, ("host files created: " + ", ".join(map(str, written)) if written
                         else "no host file created (writes refused or landed in the sandbox's own /tmp)")


def _check_unix(result, ctx, judge):
    leaked = _unix_received(ctx)
    said = " | ".join(_printed(result).split("\n")[:3]).strip(" |")
    return not leaked and result.verdict is Verdict.OK, (
        "a host AF_UNIX socket received something" if leaked else f"host abstract sockets saw nothing; program: {said}")


def _check_read(result, ctx, judge):
    printed = _printed(result)
    leaked = ctx.secret in printed
    refused = printed.count("refused")
    return not leaked and result.verdict is not Verdict.JUDGE_ERROR, (
        "the secret reached the program's output" if leaked else
        f"secret file and {SECRET_ENV} not visible; {refused} reads refused, environment: "
        + (printed.strip().splitlines() or ["?"])[-1][:120])


def _check_verdict(*allowed):
    def check(result, ctx, judge):
        fine = result.verdict in allowed and _judge_still_works(judge)
        return fine, f"verdict {result.verdict}" + ("" if fine else f" (expected {'/'.join(map(str, allowed))})") + \
            f"; {result.tests[0].note if result.tests else result.judge_error}"
    return check


def _check_fork_bomb(result, ctx, judge):
    fine = result.verdict in (Verdict.TLE, Verdict.RE) and _judge_still_works(judge)
    return fine, f"verdict {result.verdict}, RLIMIT_NPROC held it to {judge.nproc_limit} processes; judge answers"


def _check_daemon(result, ctx, judge):
    time.sleep(0.2)  # a surviving daemon would still be running
    alive = _host_processes_named(DAEMON_NAME)
    # RE: its fork was refused (a program is one process); OK: it forked (isolation "none") and the daemon died
    return not alive and result.verdict in (Verdict.OK, Verdict.RE), (
        f"daemon still running on the host: pids {alive}" if alive else "no process named "
        f"{DAEMON_NAME} on the host after the run ({result.verdict}: "
        f"{'its fork was refused' if result.verdict is Verdict.RE else 'it was killed'})")


def _check_huge_output(result, ctx, judge):
    note = result.tests[0].note if result.tests else ""
    fine = result.verdict is Verdict.WA and "output limit" in note
    return fine, f"verdict {result.verdict}: {note}"


def _check_kill_judge(result, ctx, judge):
    works = _judge_still_works(judge) and result.verdict is not Verdict.JUDGE_ERROR
    said = ", ".join(_printed(result).split("\n")[:4])
    return works, (f"judge answered the next sample; program: {said}" if works else "the judge stopped answering")


def _check_kernel_surface(result, ctx, judge):
    return result.verdict is Verdict.OK, ("every call refused (seccomp, no capabilities)"
                                          if result.verdict is Verdict.OK else "some call succeeded")


def _check_leftovers(result, ctx, judge):
    return result.verdict is Verdict.OK, ("the second test saw a clean /tmp and /dev/shm"
                                          if result.verdict is Verdict.OK else "files survived into the next test")


def _check_steal(result, ctx, judge):
    found = ctx.secret in _printed(result)
    return not found and result.verdict is Verdict.WA, (
        "the program found the expected answer" if found else
        f"the expected answer is nowhere in the sandbox; program printed {result.tests[0].output.strip()[:60]!r}")


_KERNEL_OK = "\n".join(f"{name} refused" for name in ("unshare(user)", "unshare(mount)", "ptrace(attach 1)",
                                                      "mount tmpfs", "setuid(0)", "chroot", "keyctl", "bpf"))

PROBES: list[Probe] = [
    Probe("network", "python", "connect to a listener on the host's loopback, to 1.1.1.1:53, resolve a name",
          lambda c: _NETWORK_PY.format(port=c.port), lambda c: [("", "loopback blocked internet blocked dns blocked")],
          _check_network),
    Probe("network (C++)", "cpp", "connect to the host's loopback listener from C++",
          lambda c: _NETWORK_CPP.replace("PORT", str(c.port)), lambda c: [("", "loopback blocked")], _check_network),
    Probe("abstract unix socket", "python", "connect and send to abstract AF_UNIX sockets on the host",
          lambda c: _UNIX_PY.format(name=c.unix_name), lambda c: [("", "unix blocked datagram blocked pair refused")],
          _check_unix),
    Probe("write outside tmp", "python", "write into a host directory, /usr, /etc, /, the judge's binaries and "
          "cache, other workers' scratch",
          lambda c: _WRITE_PY.format(targets=_write_targets(c)), lambda c: [("", "")], _check_write),
    Probe("read host secrets", "python", "read a host secret file, /etc/shadow, other processes' environ, env",
          lambda c: _READ_PY.format(secret_file=str(c.secret_file)), lambda c: [("", c.secret)], _check_read),
    Probe("fork bomb", "python", "fork forever", lambda c: _FORK_BOMB_PY, lambda c: [("", "")], _check_fork_bomb),
    Probe("fork bomb (C++)", "cpp", "fork forever from C++", lambda c: _FORK_BOMB_CPP, lambda c: [("", "")],
          _check_fork_bomb),
    # stopped by its memory limit -- or, where page faults crawl (a loaded machine), by its CPU limit first
    Probe("memory bomb", "python", "allocate 50 MB chunks forever", lambda c: _MEMORY_BOMB_PY,
          lambda c: [("", "")], _check_verdict(Verdict.MLE, Verdict.TLE)),
    Probe("memory bomb (C++)", "cpp", "allocate 50 MB vectors forever", lambda c: _MEMORY_BOMB_CPP,
          lambda c: [("", "")], _check_verdict(Verdict.MLE, Verdict.TLE)),
    Probe("infinite loop", "python", "spin forever", lambda c: _LOOP_PY, lambda c: [("", "")],
          _check_verdict(Verdict.TLE)),
    Probe("infinite loop (C++)", "cpp", "spin forever in C++", lambda c: _LOOP_CPP, lambda c: [("", "")],
          _check_verdict(Verdict.TLE)),
    Probe("ignoring signals", "python", "ignore SIGPROF, SIGXCPU, SIGTERM, ... and spin",
          lambda c: _IGNORE_SIGNALS_PY, lambda c: [("", "")], _check_verdict(Verdict.TLE)),
    Probe("daemon outliving the judge", "python", "double-fork, setsid, keep running after exit",
          lambda c: _DAEMON_PY.format(name=DAEMON_NAME), lambda c: [("", "parent done")], _check_daemon),
    Probe("huge output", "python", "write to stdout forever", lambda c: _HUGE_OUTPUT_PY, lambda c: [("", "")],
          _check_huge_output),
    Probe("kill the judge", "python", "kill(-1), kill pid 1, pid 2 and the parent",
          lambda c: _KILL_JUDGE_PY, lambda c: [("", "")], _check_kill_judge),
    Probe("kernel attack surface", "python", "unshare, ptrace, mount, setuid(0), chroot, keyctl, bpf",
          lambda c: _KERNEL_SURFACE_PY, lambda c: [("", _KERNEL_OK)], _check_kernel_surface),
    Probe("leftovers between tests", "python", "leave files in /tmp and /dev/shm for the next test",
          lambda c: _LEFTOVERS_PY, lambda c: [("write", "written"), ("check", "clean")], _check_leftovers),
    Probe("steal the expected answer", "python", "search the interpreter's memory and stack for the answer",
          lambda c: _STEAL_ANSWER_PY, lambda c: [("", f"codefu-answer-{c.secret}")], _check_steal),
]


# --- the integrity probes: ways to get OK without solving the problem (issue 18) ------------------------------
# Each one's test expects what the attack would print had it worked, so that OK means it worked: the check is
# "not OK", plus the probe's own host-side evidence. After every probe of the battery, honest samples on every
# worker must still be OK (a probe must not break the judge for the next sample either).

HONEST = ("python", "print(sum(map(int, input().split())))", [("2 3\n", "5\n")])
HONEST_CPP = ("cpp", "#include <cstdio>\nint main() { int a, b; std::scanf(\"%d %d\", &a, &b); std::printf(\"%d\\n\", a + b); }\n",
              [("2 3\n", "5\n")])

# a sibling's sample: its program and its output hold the answer another program would like to print
_VICTIM_PY = "import sys\nanswer = {answer!r}\nsys.stdout.write((answer + ' ' + 'x' * 1000 + '\\n') * 300)\n"  # 300 KB
_VICTIM_CPP = r"""
#include <cstdio>
int main() { std::puts("ANSWER"); }
"""

# Finds what an earlier sample printed by scanning this process's memory: the regions /proc/self/maps lists or,
# where /proc is closed (Landlock), the 64 MiB around the heap and every object the interpreter tracks. Memory is
# read through write() into a pipe, which fails with EFAULT on unmapped pages instead of crashing. A canary it
# planted and freed itself shows that the scan sees freed memory at all.
_MEMORY_SCAN_PY = r"""
import ctypes, gc, os, re
libc = ctypes.CDLL(None, use_errno=True)
libc.sbrk.restype = ctypes.c_void_p
token = os.urandom(8).hex()
planted = ["-".join(["codefu", "canary", ""]) + token + str(i) for i in range(500)]  # small objects, then freed
del planted
answer_re = re.compile(rb"codefu-answe[r]-[0-9a-f]{24}")
canary_re = re.compile(rb"codefu-canar[y]-" + token.encode())
r, w = os.pipe()
os.set_blocking(w, False)
def read(addr, size):  # in pieces of the pipe's default 64 KiB (the judge refuses to grow a pipe)
    pieces = []
    for at in range(addr, addr + size, 1 << 16):
        n = libc.write(w, ctypes.c_void_p(at), ctypes.c_size_t(min(1 << 16, addr + size - at)))
        while n > 0:
            piece = os.read(r, n)
            pieces.append(piece)
            n -= len(piece)
    return b"".join(pieces)
regions = []
try:
    for line in open("/proc/self/maps"):
        fields = line.split()
        anonymous = len(fields) < 6 or fields[5] in ("[heap]", "[stack]")  # freed memory is never a file's
        if fields[1][0] == "r" and anonymous:
            start, end = (int(x, 16) for x in fields[0].split("-"))
            regions.append((start, end))
except OSError:  # no /proc here: the heap, and 1 MiB windows around every tracked object
    top = libc.sbrk(0)
    regions.append((top - (64 << 20), top))
    windows = {id(o) >> 20 for o in gc.get_objects()}
    regions += [(x << 20, (x + 1) << 20) for x in windows]
found, canary = set(), False
for start, end in regions:
    for at in range(start, end, 1 << 20):
        chunk = read(at, min(1 << 20, end - at))
        found.update(answer_re.findall(chunk))
        canary = canary or bool(canary_re.search(chunk))
print(*sorted(x.decode() for x in found) or ["nothing"])
print("canary found" if canary else "canary missing")
"""

# runs any binary it can find: the judge's binary directory, as the sandbox and the host name it
_SIBLING_BINARY_PY = """
import os, sys
seen = []
for folder in {folders!r}:
    try:
        names = sorted(os.listdir(folder))
    except OSError as e:
        print(folder, "refused", type(e).__name__, file=sys.stderr)
        continue
    seen += [os.path.join(folder, name) for name in names]
for path in seen:
    if os.access(path, os.X_OK) and os.path.isfile(path):
        os.execv(path, [path])  # the sibling's program prints its answer for us
print("no binary found among", len(seen), "entries")
"""

_CHILD_CPU_PY = """
import os, time
pipes = []
for _ in range(3):
    r, w = os.pipe()
    if os.fork() == 0:  # 1.7 s of CPU each: 5 s in all against a 1 s limit
        start = time.process_time()
        while time.process_time() - start < 1.7:
            pass
        os.write(w, b"x")
        os._exit(0)
    pipes.append(r)
for r in pipes:
    os.read(r, 1)  # their results, without waiting for them
print({answer!r})
"""

_CHILD_CPU_CPP = r"""
#include <cstdio>
#include <ctime>
#include <unistd.h>
int main() {
    int fds[3][2];
    for (int i = 0; i < 3; i++) {
        if (pipe(fds[i]) != 0) return 1;
        pid_t pid = fork();
        if (pid < 0) return 1;
        if (pid == 0) {
            clock_t start = clock();
            while (clock() - start < 17 * CLOCKS_PER_SEC / 10) {}
            write(fds[i][1], "x", 1);
            _exit(0);
        }
    }
    char c;
    for (int i = 0; i < 3; i++) read(fds[i][0], &c, 1);
    std::puts("ANSWER");
}
"""

# {count} threads each doing {work}, then the answer
_THREADS_PY = """
import threading, time
blocks = []
def burn():  # 0.6 s of CPU
    start = time.thread_time()
    while time.thread_time() - start < 0.6:
        pass
def hold():  # 50 MiB, written to
    block = bytearray(50 << 20)
    for i in range(0, len(block), 4096):
        block[i] = 1
    blocks.append(block)
threads = [threading.Thread(target={work}) for _ in range({count})]
for t in threads:
    t.start()
for t in threads:
    t.join()
print({answer!r})
"""

_CHILD_MEMORY_PY = """
import os, time
children = []
for _ in range(3):  # 360 MiB in all against a 64 MiB limit
    pid = os.fork()
    if pid == 0:
        block = bytearray(120 << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        time.sleep(0.3)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
print({answer!r})
"""

_MEMFD_MEMORY_PY = """
import os
fds = []
for _ in range(40):  # 600 MiB outside the address space, against a 64 MiB limit
    fd = os.memfd_create("hoard")
    os.write(fd, b"x" * (15 << 20))
    fds.append(fd)
print({answer!r})
"""

_FILE_MEMORY_PY = """
import os
stored = 0
for folder in ("/dev/shm", os.environ.get("TMPDIR", "/tmp"), "/tmp", "."):
    for i in range(20):
        try:
            with open(os.path.join(folder, f"hoard-{{i}}"), "wb") as fh:
                fh.write(b"x" * (10 << 20))
            stored += 10
        except OSError:
            break
print(f"stored {{stored}} MiB" if stored < 200 else {answer!r})
"""

_DISK_PY = """
import os
written, block = 0, b"x" * (1 << 20)
for folder in (".", os.environ.get("TMPDIR", "/tmp"), "/tmp", "/var/tmp", "/dev/shm"):
    for i in range(1000):
        if written >= 512:
            break
        try:
            with open(os.path.join(folder, f"fill-{{i}}"), "wb") as fh:
                for _ in range(8):
                    fh.write(block)
            written += 8
        except OSError:
            break
print({answer!r} if written >= 512 else f"wrote {{written}} MiB")
"""

_DEEP_TREE_PY = """
import os
for folder in (os.environ.get("TMPDIR", "/tmp"), "/tmp", "/var/tmp", "/dev/shm", "."):
    try:
        os.chdir(folder)
        os.mkdir("t\\n" + "x" * 200)
    except OSError:
        continue
    for depth in range(400):  # 400 levels, odd names, then no permission anywhere
        os.chdir("t\\n" + "x" * 200)
        os.mkdir("t\\n" + "x" * 200)
        fd = os.open("f\\xff", os.O_CREAT | os.O_WRONLY, 0)
        os.close(fd)
    for depth in range(400):
        os.chmod(".", 0)
        os.chdir("..")
    print({answer!r})
    break
else:
    print("nowhere to build")
"""

_CPU_HOG_PY = """
import os, threading
def spin():
    while True:
        pass
try:
    os.setsid()
except OSError:
    pass
threading.stack_size(256 << 10)  # (the default stack is the memory limit: few would fit)
for _ in range(12):  # as many as the judge's 16 tasks per run allow, with room to spare
    threading.Thread(target=spin, daemon=True).start()
spin()
"""
# the honest sample that runs next to it: about 0.4 s of CPU under a 1 s limit (a 4 s wall-clock backstop)
_BUSY_HONEST_PY = ("total = 0\nfor i in range(4_000_000):\n    total += i % 7\n"
                   "print(sum(map(int, input().split())))\n")

_HOST_FILES_PY = """
import os
answer = None
for path in {paths!r}:
    try:
        with open(path) as fh:
            for line in fh:
                question, _, reply = line.rstrip("\\n").partition("\\t")
                if question == {question!r}:
                    answer = reply
        print("read", path, file=__import__("sys").stderr)
    except OSError as e:
        print("refused", path, type(e).__name__, file=__import__("sys").stderr)
print(answer or "not found")
"""

_CAPABILITIES_PY = """
import ctypes
class Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
class Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]
data = (Data * 2)()
ctypes.CDLL(None).capget(ctypes.byref(Header(0x20080522, 0)), data)
held = any(d.effective or d.permitted or d.inheritable for d in data)
print("capabilities: some" if held else "capabilities: none")
"""

_OVERSIZE_CPP = r"""
#include <cstdio>
char big[72 << 20] = {1};  // an initialised array: 72 MiB of binary
int main() { int i; if (std::scanf("%d", &i) != 1) return 1; std::printf("%d\n", big[i - 1]); }
"""

_STDERR_FLOOD_PY = """
import sys
a, b = map(int, input().split())
chunk = "debug " * 10000 + "\\n"
for _ in range(350):  # 21 MiB of debugging output, more than the 16 MiB output limit
    sys.stderr.write(chunk)
print(a + b)
"""

_HARNESS_EXIT = """
def f(n):
    return n

import {module}
{module}.{call}(0)
"""


# the checks of a small problem, f(n) = n + 1, as a function-call harness holds them
_ADD_ONE_CHECK = """
def check(candidate):
    assert candidate(1) == 2
    assert candidate(5) == 6
    assert candidate(41) == 42
    finished = True

check(candidate)
"""

def _answer(ctx: "ProbeContext") -> str:
    return f"codefu-answer-{ctx.victim}"


def _not_ok(result) -> bool:
    return result.verdict is not Verdict.OK and result.verdict is not Verdict.JUDGE_ERROR


def _note(result) -> str:
    if result.compile_output:
        return result.compile_output.strip().splitlines()[-1][:160]
    return (result.tests[0].note or result.tests[0].stderr.strip()[-160:]) if result.tests else (result.judge_error
                                                                                               or "")


def _check_not_ok(what: str):
    def check(results, ctx, judge):
        bad = [r for r in results if not _not_ok(r)]
        return not bad, (f"{what}: " + ", ".join(f"{r.verdict} ({_note(r)})" for r in results[:2]))[:300]
    return check


def _check_memory_scan(results, ctx, judge):
    printed = [r.tests[0].output if r.tests else "" for r in results]
    leaked = any(ctx.victim in text for text in printed)
    blind = [text for text in printed if "canary found" not in text]
    contained = not leaked and not blind and all(_not_ok(r) for r in results)
    if leaked:
        return False, "a program found an earlier sample's answer in its memory"
    if blind:
        return False, f"the scan did not find its own freed canary, so it proves nothing: {blind[0][-120:]!r}"
    return contained, (f"{len(results)} runs on every worker after the sibling's: its answer nowhere in memory, "
                       f"the scan's own freed canary found each time")


def _check_sibling_binary(results, ctx, judge):
    leaked = any(ctx.victim in (r.tests[0].output if r.tests else "") for r in results)
    said = (results[0].tests[0].stderr.strip().splitlines() or [""])[0][:120] if results[0].tests else ""
    return not leaked and all(_not_ok(r) for r in results), (
        "a program ran a sibling's binary" if leaked else f"no sibling binary reachable ({said or _note(results[0])})")


def _check_oversize(results, ctx, judge):
    r = results[0]
    fine = r.verdict is Verdict.CE and "limit for a binary" in r.compile_output
    return fine, _note(r)


def _check_stderr_flood(results, ctx, judge):
    r = results[0]
    return r.verdict is Verdict.OK, f"verdict {r.verdict} with ~21 MiB on stderr ({_note(r) or 'correct answer'})"


def _check_host_files(results, ctx, judge):
    r = results[0]
    leaked = ctx.channel_answer in (r.tests[0].output if r.tests else "")
    said = " ".join(r.tests[0].stderr.split()[:4]) if r.tests else ""
    if leaked and judge.info().get("programs_may_read_host_files"):
        return False, ("EXPOSED, as accepted with programs_may_read_host_files: the program read a world-readable "
                       "data file of the host and printed its answer")
    return not leaked and _not_ok(r), ("the program read a data file of the host" if leaked else
                                       f"the data file was out of reach ({said})")


def _check_capabilities(results, ctx, judge):
    r = results[0]
    out = r.tests[0].output.strip() if r.tests else ""
    return out == "capabilities: none" and _not_ok(r), f"the program printed {out!r}"


def _check_deep_tree(results, ctx, judge):
    r = results[0]
    return _not_ok(r), f"{r.verdict}: {_note(r)}; the honest samples after it decide whether the worker survived"


def _check_cpu_hog(results, ctx, judge):
    hog, honest = results
    fine = _not_ok(hog) and honest.verdict is Verdict.OK
    return fine, (f"the hog: {hog.verdict} ({_note(hog)}); the honest sample next to it: {honest.verdict} "
                  f"({honest.tests[0].cpu_seconds or 0:.2f}s CPU, {honest.tests[0].wall_seconds:.2f}s wall)"
                  if honest.tests else f"honest sample: {honest.verdict} {honest.judge_error}")


@dataclass
class IntegrityProbe:
    name: str
    language: str  # "python", "cpp", or "harness" (a Python program and its checks through run_harness)
    tries: str
    source: Callable[["ProbeContext"], str]
    check: Callable
    expected: Callable[["ProbeContext"], str] = lambda c: _answer(c)  # what a successful attack would print
    copies: int = 1            # runs of the program; 0: two on every worker
    victim: str | None = None  # "python" / "cpp": a sibling's sample runs first, on every worker
    next_to: str | None = None  # a program judged at the same time on another worker
    time_limit: float = 1.0
    memory_limit_bytes: int = 64 << 20
    stdin: str = "1 2\n"
    tests: int = 1             # tests of the sample, each with `stdin`
    harness_check: str = ""    # "harness": the checks (they call candidate(...)), run apart from the program
    call: str = "f"            # "harness": the function the checks call
    group: str = ""            # the class of attack it belongs to, in the probe table (default: its kind)


INTEGRITY_PROBES: list[IntegrityProbe] = [
    IntegrityProbe("earlier samples' outputs in memory", "python",
                   "scan its own memory for what a sibling sample printed (after it, on every worker)",
                   lambda c: _MEMORY_SCAN_PY, _check_memory_scan,
                   expected=lambda c: f"{_answer(c)}\ncanary found", copies=0, victim="python", time_limit=5.0,
                   memory_limit_bytes=256 << 20),
    IntegrityProbe("another sample's binary", "python", "find the C++ binary cache and run a sibling's binary",
                   lambda c: _SIBLING_BINARY_PY.format(folders=c.binary_dirs), _check_sibling_binary,
                   copies=0, victim="cpp"),
    IntegrityProbe("CPU time in child processes", "python",
                   "3 children burn 5 s of CPU, the parent reads their results without waiting",
                   lambda c: _CHILD_CPU_PY.format(answer=_answer(c)), _check_not_ok("children")),
    IntegrityProbe("CPU time in child processes (C++)", "cpp", "the same from C++",
                   lambda c: _CHILD_CPU_CPP.replace("ANSWER", _answer(c)), _check_not_ok("children")),
    IntegrityProbe("CPU time in threads", "python", "4 threads burn 2.4 s of CPU against a 1 s limit",
                   lambda c: _THREADS_PY.format(work="burn", count=4, answer=_answer(c)), _check_not_ok("threads")),
    IntegrityProbe("memory in child processes", "python", "3 children hold 120 MiB each under a 64 MiB limit",
                   lambda c: _CHILD_MEMORY_PY.format(answer=_answer(c)), _check_not_ok("children"),
                   time_limit=2.0),
    IntegrityProbe("memory in threads", "python", "3 threads hold 50 MiB each under a 64 MiB limit",
                   lambda c: _THREADS_PY.format(work="hold", count=3, answer=_answer(c)), _check_not_ok("threads"),
                   time_limit=2.0, memory_limit_bytes=64 << 20),
    IntegrityProbe("memory in memfds", "python", "40 memfds hold 600 MiB under a 64 MiB limit",
                   lambda c: _MEMFD_MEMORY_PY.format(answer=_answer(c)), _check_not_ok("memfds"), time_limit=2.0),
    IntegrityProbe("memory in /dev/shm and /tmp", "python", "store 200 MiB in files of shared memory and /tmp",
                   lambda c: _FILE_MEMORY_PY.format(answer=_answer(c)), _check_not_ok("files"), time_limit=2.0),
    IntegrityProbe("disk", "python", "write 512 MiB wherever it can",
                   lambda c: _DISK_PY.format(answer=_answer(c)), _check_not_ok("disk"), time_limit=2.0),
    IntegrityProbe("break the worker's clean-up", "python",
                   "400 nested directories with odd names, no permissions, files without write access",
                   lambda c: _DEEP_TREE_PY.format(answer=_answer(c)), _check_deep_tree, time_limit=2.0),
    IntegrityProbe("push a concurrent sample into TLE", "python",
                   "setsid and 13 busy threads while an honest sample (0.4 s of CPU, 1 s limit) runs next to it",
                   lambda c: _CPU_HOG_PY, _check_cpu_hog, next_to=_BUSY_HONEST_PY),
    IntegrityProbe("read the data channels", "python",
                   "look its input up in world-readable host data (a data channel, the repository's dataset)",
                   lambda c: _HOST_FILES_PY.format(paths=c.host_data, question=c.channel_question),
                   _check_host_files, expected=lambda c: c.channel_answer),
    IntegrityProbe("capabilities", "python", "hold any capability (user-namespace mode kept a full set)",
                   lambda c: _CAPABILITIES_PY, _check_capabilities, expected=lambda c: "capabilities: some"),
    IntegrityProbe("oversize binary", "cpp", "a 72 MiB binary (an initialised array), over the 64 MiB limit",
                   lambda c: _OVERSIZE_CPP, _check_oversize, expected=lambda c: "1", time_limit=2.0),
    IntegrityProbe("stderr flood", "python", "a correct program writes 21 MiB of debugging output to stderr",
                   lambda c: _STDERR_FLOOD_PY, _check_stderr_flood, expected=lambda c: "3", time_limit=2.0),
    IntegrityProbe("exit before the checks", "harness", "sys.exit(0) in the solution, before the harness's asserts",
                   lambda c: _HARNESS_EXIT.format(module="sys", call="exit"), _check_not_ok("sys.exit(0)"),
                   harness_check=_ADD_ONE_CHECK, group="harness checks"),
    IntegrityProbe("exit before the checks (os._exit)", "harness", "os._exit(0) in the solution, before the asserts",
                   lambda c: _HARNESS_EXIT.format(module="os", call="_exit"), _check_not_ok("os._exit(0)"),
                   harness_check=_ADD_ONE_CHECK, group="harness checks"),
]


# --- round two (issue 30): the verdict outside the program, nothing of the judge inside it --------------------

# Function-call harnesses. The checks of a small problem (f(n) = n + 1, and a float and a functional variant), and
# programs whose f is wrong but which attack the checks instead; in one process with the checks (the judge before
# issue 30) each of them got OK.
_SQRT_CHECK = "assert abs(candidate(4.0) - 2.0) < 1e-6\nassert abs(candidate(9.0) - 3.0) < 1e-6\n"
# LiveCodeBench's functional shape: the tests, with their expected answers, in the checks' own variables
_FUNCTIONAL_CHECK = """
import json

def check():
    tests = json.loads({tests!r})
    for args_text, expected_text in tests:
        args = [json.loads(line) for line in args_text.split("\\n")]
        got = json.loads(json.dumps(candidate(*args)))
        expected = json.loads(expected_text)
        assert got == expected, (got, expected)

check()
"""
_FUNCTIONAL_TESTS = [["1\n2", "3"], ["20\n22", "42"]]

_HARNESS_PROGRAMS = {
    # the completion marker a self-checking harness appends: find it among the code objects' constants, print it,
    # leave with status 0 before any check runs
    "marker": """
import gc, os, sys
def f(n):
    return n
found = set()
for code in [o for o in gc.get_objects() if type(o) is type(f.__code__)] + [sys._getframe().f_code]:
    found.update(c for c in code.co_consts if isinstance(c, str) and "complete" in c)
print(*found, flush=True)
os._exit(0)
""",
    # the same from an exit handler, which runs after the failing check
    "atexit": """
import atexit, gc, os, sys
def f(n):
    return n
def leave():
    found = set()
    for code in [o for o in gc.get_objects() if type(o) is type(f.__code__)]:
        found.update(c for c in code.co_consts if isinstance(c, str) and "complete" in c)
    print(*found, flush=True)
    os._exit(0)
atexit.register(leave)
""",
    # an answer equal to everything
    "always equal": """
class Anything:
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    __hash__ = object.__hash__
def f(n):
    return Anything()
""",
    # a trace function that steps over the asserts of the checks (to the line after them)
    "settrace": """
import sys
def f(n):
    return n
def tracer(frame, event, arg):
    if frame.f_code.co_name != "check":
        return None
    def step_over(frame, event, arg):
        if event == "line" and frame.f_lineno < frame.f_code.co_firstlineno + 4:
            frame.f_lineno = frame.f_code.co_firstlineno + 4
        return step_over
    return step_over
sys.settrace(tracer)
""",
    # the float checks compare with abs(): make it say 0
    "builtins": """
import builtins
def f(x):
    return 0.0
builtins.abs = lambda x: 0
""",
}
_FUNCTIONAL_PROGRAMS = {
    # the expected answers, read from the checks' frame
    "frames": """
import json, sys
class Solution:
    def add(self, a, b):
        frame = sys._getframe(1)
        while frame is not None:
            tests = frame.f_locals.get("tests")
            if isinstance(tests, list):
                for args_text, expected_text in tests:
                    if [json.loads(x) for x in args_text.split("\\n")] == [a, b]:
                        return json.loads(expected_text)
            frame = frame.f_back
        return 0
""",
    # json.loads patched so that the answer and the expected one decode alike
    "json": """
import json
class Solution:
    def add(self, a, b):
        return 0
json.loads = lambda text, *args, **kwargs: 0
""",
}
# reach the checker: signal every other process in sight, read their memory, command lines and environment
_REACH_CHECKER_PY = """
import os, signal
def f(n):
    return n
me, seen = os.getpid(), []
for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
    if entry.isdigit() and int(entry) != me:
        pid = int(entry)
        for how in ("kill", "mem", "environ"):
            try:
                if how == "kill":
                    os.kill(pid, signal.SIGKILL)
                else:
                    with open(f"/proc/{{pid}}/{{how}}", "rb") as fh:
                        fh.read(64)
                seen.append(f"{{how}} {{pid}} worked")
            except OSError:
                pass
try:
    os.kill(-1, signal.SIGKILL)
except OSError:
    pass
print(*seen or ["nothing reached"], sep="\\n", flush=True)
"""

# The fork referee's state, reached from a program: where the old judge kept it in a page every program inherited
# (`server.compiling`, up the call stack), a program set it and then forked freely. In C++, any shared writable
# mapping listed in /proc/self/maps gets written.
_REFEREE_PAGE_PY = """
import os, sys, time
frame = sys._getframe()
while frame is not None:
    server = frame.f_locals.get("server")
    for name in ("compiling", "referee_page", "page"):
        page = getattr(server, name, None)
        if page is not None:
            try:
                page[0] = 1
            except Exception:
                pass
    frame = frame.f_back
"""
_REFEREE_CPU_PY = _REFEREE_PAGE_PY + _CHILD_CPU_PY
_REFEREE_MEMORY_PY = _REFEREE_PAGE_PY + _CHILD_MEMORY_PY
_REFEREE_STARVE_PY = _REFEREE_PAGE_PY + """
def spin():
    while True:
        pass
for _ in range(6):  # each in a session, so an autogroup, of its own
    if os.fork() == 0:
        os.setsid()
        spin()
spin()
"""
_REFEREE_CPP = r"""
#include <cstdio>
#include <cstring>
#include <ctime>
#include <unistd.h>
int main() {
    if (FILE* maps = std::fopen("/proc/self/maps", "r")) {
        char line[512];
        while (std::fgets(line, sizeof line, maps)) {
            unsigned long start, end; char perms[8];
            if (std::sscanf(line, "%lx-%lx %7s", &start, &end, perms) == 3 && perms[1] == 'w' && perms[3] == 's')
                std::memset((void*)start, 1, 1);  // every shared writable mapping
        }
        std::fclose(maps);
    }
    for (int i = 0; i < 3; i++) {
        pid_t pid = fork();
        if (pid < 0) return 1;
        if (pid == 0) {
            clock_t start = clock();
            while (clock() - start < 7 * CLOCKS_PER_SEC / 10) {}
            _exit(0);
        }
    }
    std::puts("ANSWER");
}
"""

# What of the judge a program holds: its descriptors (by fcntl, so without /proc too) and its shared mappings (from
# /proc/self/maps where it may read it). Then it names itself and waits a moment, so that a host-side look at
# /proc/<pid> (tests/test_sandbox_escape.py) sees the same from outside, in the tiers where /proc is closed too.
INSPECT_NAME = "codefu-inspect"
_INSPECT_PY = """
import ctypes, fcntl, os, time
fds = []
for fd in range(1024):
    try:
        fcntl.fcntl(fd, fcntl.F_GETFD)
        fds.append(str(fd))
    except OSError:
        pass
try:
    with open("/proc/self/maps") as fh:
        shared = [fields[1] + ":" + (fields[5] if len(fields) > 5 else "anonymous")
                  for fields in map(str.split, fh) if fields[1][3] == "s"]
    maps = "shared " + (",".join(shared) or "none")
except OSError:
    maps = "maps unreadable"
print(f"fds {{' '.join(fds)}}; {{maps}}", flush=True)
ctypes.CDLL(None).prctl(15, b"{name}", 0, 0, 0)  # named once it holds only what it started with
time.sleep(0.6)
"""
_INSPECT_CPP = r"""
#include <cstdio>
#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>
int main() {
    std::printf("fds");
    for (int fd = 0; fd < 1024; fd++)
        if (fcntl(fd, F_GETFD) != -1) std::printf(" %d", fd);
    if (FILE* maps = std::fopen("/proc/self/maps", "r")) {
        char line[512]; int shared = 0;
        std::printf("; shared ");
        while (std::fgets(line, sizeof line, maps)) {
            char perms[8], path[400] = "anonymous";
            if (std::sscanf(line, "%*lx-%*lx %7s %*s %*s %*s %399s", perms, path) >= 1 && perms[3] == 's')
                std::printf("%s%s:%s", shared++ ? "," : "", perms, path);
        }
        if (!shared) std::printf("none");
        std::fclose(maps);
    } else {
        std::printf("; maps unreadable");
    }
    std::printf("\n");
    std::fflush(stdout);
    prctl(PR_SET_NAME, "PROCESS_TITLE", 0, 0, 0);  // named once it holds only what it started with
    usleep(600000);
}
"""

# A process whose main thread has exited while another runs: /proc/PID/stat says Z for it. Its other thread
# signals every process of its uid it can (kill(-1)), every 5 ms, for as long as it lives.
_MAIN_THREAD_EXITS_PY = _REFEREE_PAGE_PY + """
import ctypes, os, threading, time
def kill_everyone():
    while True:
        try:
            os.kill(-1, 9)
        except OSError:
            pass
        time.sleep(0.005)  # little CPU: it outlives the run's CPU limit
try:  # in a child, where fork works (the referee's page set): the program itself ends at once, its child looks dead
    child = os.fork()
except OSError:
    child = 0
if child == 0:
    ctypes.CDLL(None).prctl(15, b"{name}", 0, 0, 0)  # found by name on the host, its thread too
    threading.Thread(target=kill_everyone).start()
    time.sleep(0.05)
    print({answer!r}, flush=True)
    ctypes.CDLL(None).syscall({exit_nr}, 0)  # exit: the main thread only
"""
_MAIN_THREAD_EXITS_CPP = r"""
#include <csignal>
#include <cstdio>
#include <pthread.h>
#include <sys/prctl.h>
#include <unistd.h>
void* kill_everyone(void*) { for (;;) { kill(-1, SIGKILL); usleep(5000); } }  // little CPU
int main() {
    if (fork() > 0) return 0;  // in a child, where fork works (the program itself ends at once)
    prctl(PR_SET_NAME, "PROCESS_TITLE", 0, 0, 0);  // found by name on the host, its thread too
    pthread_t thread;
    pthread_create(&thread, nullptr, kill_everyone, nullptr);
    usleep(50000);
    std::puts("ANSWER");
    std::fflush(stdout);
    pthread_exit(nullptr);  // the main thread only
}
"""

# A judge error instead of a verdict: a binary the kernel refuses to exec (a 5000-byte .interp section: longer
# than PATH_MAX, so execve says ENOEXEC), and descriptor flags set on stdin, stdout and stderr (O_APPEND on a
# descriptor shared with the server made its next write into that memfd fail).
_INTERP_CPP = r"""
#include <cstdio>
__attribute__((used, section(".interp"))) extern const char interp[5000] = "/lib64/ld-linux-x86-64.so.2";
int main() { std::puts("3"); }
"""
_FLAGS_PY = """
import fcntl, os
for fd in (0, 1, 2):
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND | os.O_NONBLOCK)
print(sum(map(int, input().split())))
"""

# Memory outside the address space, read back to prove it was held: pipes (grown with F_SETPIPE_SZ where
# allowed), socket pairs, a memfd, stdin opened again for writing, stdout read back; and whether vmsplice works.
_OUTSIDE_MEMORY_PY = """
import ctypes, fcntl, os, socket
libc = ctypes.CDLL(None, use_errno=True)
block, held, notes = b"x" * 65536, {{}}, []
def fill(fd):
    os.set_blocking(fd, False)
    n = 0
    try:
        while n < (64 << 20):
            n += os.write(fd, block)
    except OSError:
        pass
    return n
def drain(fd):
    os.set_blocking(fd, False)
    n = 0
    try:
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            n += len(chunk)
    except OSError:
        pass
    return n
try:
    r, w = os.pipe()
    fcntl.fcntl(w, 1031, 1 << 20)
    notes.append("F_SETPIPE_SZ allowed")
    os.close(r); os.close(w)
except OSError:
    notes.append("F_SETPIPE_SZ refused")
buf = ctypes.create_string_buffer(4096)
iov = (ctypes.c_void_p * 2)(ctypes.addressof(buf), 4096)
try:
    r, w = os.pipe()
    notes.append("vmsplice allowed" if libc.vmsplice(w, iov, 1, 0) > 0 else "vmsplice refused")
    os.close(r); os.close(w)
except OSError:
    notes.append("vmsplice refused")
pipes = []
while True:
    try:
        r, w = os.pipe()
    except OSError:
        break
    try:
        fcntl.fcntl(w, 1031, 1 << 20)
    except OSError:
        pass
    fill(w)
    pipes.append((r, w))
held["pipes"] = sum(drain(r) for r, w in pipes)
for r, w in pipes:
    os.close(r); os.close(w)
try:
    a, b = socket.socketpair()
    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 24)
    held["sockets"] = fill(a.fileno()) and drain(b.fileno())
except OSError:
    held["sockets"] = 0
try:
    fd = os.memfd_create("hoard")
    held["memfd"] = os.write(fd, b"x" * (8 << 20)) and len(os.pread(fd, 8 << 20, 0))
except OSError:
    held["memfd"] = 0
held["stdin"] = held["stdout"] = 0
for fd, what in ((0, "stdin"), (1, "stdout")):  # opened again for reading and writing, or read and written as is
    for opened in ((lambda: os.open(f"/proc/self/fd/{{fd}}", os.O_RDWR)), lambda: fd):
        try:
            held_fd = opened()
            os.pwrite(held_fd, b"x" * (8 << 20), 1 << 20)
            held[what] = max(held[what], len(os.pread(held_fd, 8 << 20, 1 << 20)))
        except OSError:
            pass
total = sum(held.values())
print({answer!r} if total > (8 << 20) else "", f"held {{total / (1 << 20):.2f}} MiB outside the address space:",
      ", ".join(f"{{k}} {{v >> 10}} KiB" for k, v in held.items()) + ";", ", ".join(notes), flush=True)
"""
OUTSIDE_MEMORY_BOUND_MIB = 4.0  # what a program may hold outside its address space: PROGRAM_NOFILE / 2 pipes


def _judge_mappings(listing: str) -> list[str]:
    """The shared mappings in "perms:path,..." a program may not hold: writable ones, and any that is not a
    read-only system file (glibc maps /usr/lib/.../gconv-modules.cache shared and read-only by itself)."""
    if listing in ("none", ""):
        return []
    return [m for m in listing.split(",") if "w" in m.split(":", 1)[0] or not m.split(":", 1)[-1].startswith("/usr/")]


def _check_inspect(results, ctx, judge):
    """The program's own view: descriptors 0, 1 and 2 only, and no shared mapping of the judge's (or no /proc to
    list them: the host-side look in tests/test_sandbox_escape.py covers that tier)."""
    said = [(r.tests[0].output.strip() if r.tests else "") for r in results]
    bad = []
    for text in said:
        fds, _, maps = text.partition("; ")
        if fds != "fds 0 1 2" or not (maps == "maps unreadable" or maps.startswith("shared ")
                                      and not _judge_mappings(maps[len("shared "):])):
            bad.append(text or _note(results[said.index(text)]))
    fine = not bad and all(_not_ok(r) for r in results)
    return fine, (f"the program holds more of the judge: {bad[0]!r}" if bad else
                  f"{len(results)} runs: " + "; ".join(sorted(set(said))))


def _check_outside_memory(results, ctx, judge):
    r = results[0]
    text = r.tests[0].output.strip() if r.tests else ""
    try:
        held = float(text.split("held ", 1)[1].split(" MiB", 1)[0])
    except (IndexError, ValueError):
        return False, f"no measurement: {text[:160]!r} ({_note(r)})"
    fine = held <= OUTSIDE_MEMORY_BOUND_MIB and "vmsplice refused" in text and _not_ok(r)
    return fine, text[:300]


def _check_leftover(results, ctx, judge):
    """Every run judged (no JUDGE_ERROR, no OK) and, seen from the host once the runs are over, no live thread of a
    process named LEFTOVER_NAME; the honest samples after it show nothing of it was left to kill them."""
    alive = _host_processes_named(LEFTOVER_NAME, alive=True)
    fine = not alive and all(_not_ok(r) for r in results)
    return fine, (f"{len(alive)} processes named {LEFTOVER_NAME} still alive on the host after the runs; " if alive
                  else f"nothing named {LEFTOVER_NAME} alive on the host after the runs; ") + ", ".join(
        f"{r.verdict} ({_note(r)})" for r in results[:2])[:250]


def _check_flags(results, ctx, judge):
    r = results[0]
    fine = r.verdict is Verdict.OK and len(r.tests) == 3
    return fine, f"{r.verdict} on {len(r.tests)} tests ({_note(r) or 'every test answered'})"


def _check_no_judge_error(what: str):
    def check(results, ctx, judge):
        fine = all(_not_ok(r) for r in results)
        return fine, (f"{what}: " + ", ".join(f"{r.verdict} ({_note(r)})" for r in results[:2]))[:300]
    return check


def _harness_probe(name: str, program: str, tries: str, kind: str = "add one") -> "IntegrityProbe":
    check = {"add one": _ADD_ONE_CHECK, "sqrt": _SQRT_CHECK}.get(kind)
    if kind == "functional":
        check = _FUNCTIONAL_CHECK.format(tests=json.dumps(_FUNCTIONAL_TESTS))
    return IntegrityProbe(name, "harness", tries, lambda c: program, _check_not_ok(name), harness_check=check,
                          call="Solution.add" if kind == "functional" else "f", group=HARNESS)


_SYS_EXIT = {"x86_64": 60, "aarch64": 93}.get(os.uname().machine, 60)
# the classes of the round-two attacks (issue 30), one per finding, as the probe table groups them
HARNESS, REFEREE, JUDGE_STATE = "harness checks", "fork referee", "judge state in a program"
CLEAN_UP, FORCED_ERROR, OUTSIDE = "clean-up", "forced judge error", "memory outside the limit"

ROUND_TWO_PROBES: list["IntegrityProbe"] = [
    _harness_probe("harness: print the completion marker", _HARNESS_PROGRAMS["marker"],
                   "a wrong f; print the marker found among the code objects' constants and os._exit(0)"),
    _harness_probe("harness: exit handler after the failed check", _HARNESS_PROGRAMS["atexit"],
                   "a wrong f; an atexit handler prints the marker and os._exit(0) after the check fails"),
    _harness_probe("harness: an answer equal to everything", _HARNESS_PROGRAMS["always equal"],
                   "f returns an object whose __eq__ is always true"),
    _harness_probe("harness: step over the asserts", _HARNESS_PROGRAMS["settrace"],
                   "a wrong f; sys.settrace jumps over check()'s asserts"),
    _harness_probe("harness: patch builtins", _HARNESS_PROGRAMS["builtins"],
                   "a wrong f; builtins.abs = lambda x: 0 against the float checks", kind="sqrt"),
    _harness_probe("harness: the expected answer from the checks' frame", _FUNCTIONAL_PROGRAMS["frames"],
                   "read the tests and their answers from the calling frames (LiveCodeBench shape)",
                   kind="functional"),
    _harness_probe("harness: patch json.loads", _FUNCTIONAL_PROGRAMS["json"],
                   "json.loads = lambda ...: 0, so that answer and expected decode alike", kind="functional"),
    _harness_probe("harness: reach the checker", _REACH_CHECKER_PY.format(),
                   "kill(-1), SIGKILL and /proc/PID/mem, environ of every process in sight; a wrong f"),
    IntegrityProbe("fork after writing the referee's state", "python",
                   "set server.compiling (the referee's page, up the stack), then 3 children burn 5 s of CPU",
                   lambda c: _REFEREE_CPU_PY.format(answer=_answer(c)), _check_not_ok("children"), group=REFEREE),
    IntegrityProbe("fork after writing the referee's state (C++)", "cpp",
                   "write every shared writable mapping of /proc/self/maps, then fork 3 busy children",
                   lambda c: _REFEREE_CPP.replace("ANSWER", _answer(c)), _check_not_ok("children"), group=REFEREE),
    IntegrityProbe("memory in children after writing the referee's state", "python",
                   "set the referee's page, then 3 children hold 120 MiB each under a 64 MiB limit",
                   lambda c: _REFEREE_MEMORY_PY.format(answer=_answer(c)), _check_not_ok("children"),
                   time_limit=2.0, group=REFEREE),
    IntegrityProbe("setsid children next to a sample", "python",
                   "set the referee's page, fork 6 children that setsid and spin, next to an honest sample",
                   lambda c: _REFEREE_STARVE_PY, _check_cpu_hog, next_to=_BUSY_HONEST_PY, group=REFEREE),
    IntegrityProbe("nothing of the judge in a program", "python",
                   "list its descriptors (fcntl) and shared mappings (/proc/self/maps)",
                   lambda c: _INSPECT_PY.format(name=INSPECT_NAME), _check_inspect, copies=0,
                   expected=lambda c: "the judge reachable", group=JUDGE_STATE),
    IntegrityProbe("nothing of the judge in a program (C++)", "cpp", "the same from C++",
                   lambda c: _INSPECT_CPP.replace("PROCESS_TITLE", INSPECT_NAME), _check_inspect, copies=0,
                   expected=lambda c: "the judge reachable", group=JUDGE_STATE),
    IntegrityProbe("main thread exits, another kills", "python",
                   "print the answer, exit the main thread only; another thread calls kill(-1, SIGKILL) forever",
                   lambda c: _MAIN_THREAD_EXITS_PY.format(answer=_answer(c), exit_nr=_SYS_EXIT, name=LEFTOVER_NAME),
                   _check_leftover, copies=0, time_limit=0.5, group=CLEAN_UP),
    IntegrityProbe("main thread exits, another kills (C++)", "cpp", "the same with pthread_exit from main",
                   lambda c: _MAIN_THREAD_EXITS_CPP.replace("ANSWER", _answer(c)).replace("PROCESS_TITLE",
                                                                                          LEFTOVER_NAME),
                   _check_leftover, copies=0, time_limit=0.5, group=CLEAN_UP),
    IntegrityProbe("a binary execve refuses", "cpp",
                   "a 5000-byte .interp section (execve: ENOEXEC), for a judge error instead of a verdict",
                   lambda c: _INTERP_CPP, _check_no_judge_error("the binary"), expected=lambda c: "3", group=FORCED_ERROR),
    IntegrityProbe("flags on stdin, stdout, stderr", "python",
                   "O_APPEND | O_NONBLOCK on its descriptors 0-2 (they were the server's), then answer 3 tests",
                   lambda c: _FLAGS_PY, _check_flags, expected=lambda c: "3", tests=3, group=FORCED_ERROR),
    IntegrityProbe("memory outside the address space", "python",
                   "hold data in pipes (F_SETPIPE_SZ), socket pairs, a memfd, stdin, stdout; vmsplice",
                   lambda c: _OUTSIDE_MEMORY_PY.format(answer=_answer(c)), _check_outside_memory,
                   time_limit=2.0, group=OUTSIDE),
]

INTEGRITY_PROBES += ROUND_TWO_PROBES


def make_context(secret: str | None = None, channel_root: str | None = None) -> ProbeContext:
    base = Path(tempfile.mkdtemp(prefix="codefu-probe-"))
    secret = secret or secrets.token_hex(12)
    (base / "secret.txt").write_text(secret)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    unix_name = f"codefu-probe-{secrets.token_hex(6)}"
    unix_stream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix_stream.bind("\0" + unix_name)
    unix_stream.listen(8)
    unix_datagram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    unix_datagram.bind("\0" + unix_name + "-dgram")
    ctx = ProbeContext(listener.getsockname()[1], base, base / "secret.txt", secret, listener, unix_name,
                       unix_stream, unix_datagram)
    ctx.victim = secrets.token_hex(12)
    # a data channel as a training job has one: world-readable, holding a question and its answer
    ctx.channel_dir = Path(tempfile.mkdtemp(prefix="codefu-channel-", dir=channel_root))
    ctx.channel_dir.chmod(0o755)
    ctx.channel_question, ctx.channel_answer = secrets.token_hex(8), f"channel-answer-{secrets.token_hex(8)}"
    data = ctx.channel_dir / "train.tsv"
    data.write_text(f"{ctx.channel_question}\t{ctx.channel_answer}\n")
    data.chmod(0o644)
    ctx.host_data = [str(data), str(REPOSITORY_DATASET)]
    return ctx


def _honest_after(judge) -> bool:
    """Honest samples after a probe, a Python and a C++ one on every worker: every one must still be OK."""
    subs = [Submission(language, source, tests, 2.0, 64 << 20) for language, source, tests in (HONEST, HONEST_CPP)]
    results = judge.run_many([sub for sub in subs for _ in range(judge.workers)])
    return all(r.verdict is Verdict.OK for r in results)


def _run_integrity_probe(probe: IntegrityProbe, ctx: ProbeContext, judge) -> list[SampleResult]:
    source, expected = probe.source(ctx), probe.expected(ctx)
    if probe.language == "harness":
        return [judge.run_harness(source, probe.harness_check, probe.call, probe.time_limit,
                                  probe.memory_limit_bytes)]
    sub = Submission(probe.language, source, [(probe.stdin, expected)] * probe.tests, probe.time_limit,
                     probe.memory_limit_bytes)
    if probe.next_to is not None:
        return judge.run_many([sub, Submission("python", probe.next_to, [("2 3\n", "5\n")], 1.0, 64 << 20)])
    if probe.victim is None:
        return judge.run_many([sub] * (probe.copies or 2 * judge.workers))
    # the sibling's sample, then the probe, on every worker, twice: a probe run right after a sibling's is what
    # would find what a judge kept of it (the first run also leaves the probe's syntax check cached)
    victim = (_VICTIM_PY.format(answer=_answer(ctx)) if probe.victim == "python" else
              _VICTIM_CPP.replace("ANSWER", _answer(ctx)))
    victims = [Submission(probe.victim, victim, [("1 2\n", _answer(ctx))], 2.0, 64 << 20)] * judge.workers
    results = judge.run_many([sub])
    for _ in range(2):
        judge.run_many(victims)
        results += judge.run_many([sub] * judge.workers)
    return results


@contextlib.contextmanager
def planted_secret(value: str = "notebook0fake0secret0123"):
    """$AWS_SECRET_ACCESS_KEY set to a fake `value` inside the block, then put back exactly as it was (a real
    credential included, or absent). Start the judge inside it: its workers inherit the variable, as a training
    host's credentials would be inherited, and the read probe hunts for it; a real key is never the one hunted."""
    previous = os.environ.get(SECRET_ENV)
    os.environ[SECRET_ENV] = value
    try:
        yield value
    finally:
        if previous is None:
            os.environ.pop(SECRET_ENV, None)
        else:
            os.environ[SECRET_ENV] = previous


def run_escape_probes(judge, names: list[str] | None = None, channel_root: str | None = None) -> list[dict]:
    """Runs the battery (or the probes named) against `judge`; one dict per probe with a `contained` flag.

    The escape probes (PROBES) try to get out of the sandbox or outlive it; the integrity probes
    (INTEGRITY_PROBES) try to get OK without solving the problem. After every probe, honest samples on every worker
    must still be OK ("honest_after"), or the probe is not contained. The data channel the probes look for is made
    in `channel_root` when given (a directory the job protected: see protect.py), else in the temp directory. The secret the read probe hunts for is
    $AWS_SECRET_ACCESS_KEY when it is set (set it before starting the judge, as credentials would be on a training
    host), else a random one put there for the duration.
    """
    previous = os.environ.get(SECRET_ENV)
    ctx = make_context(previous, channel_root)
    ctx.unisolated = judge.mode == "none"
    # the judge's binaries and caches, and every worker's scratch directory (the container tier has one each)
    ctx.judge_dirs = [judge._bin_dir, judge.cache_root, judge._cache_view,
                      *(w.slot_dir for w in judge._workers if w.slot_dir.exists())]
    ctx.binary_dirs = ["/judge/bin", str(judge._bin_dir)]
    os.environ[SECRET_ENV] = ctx.secret
    rows = []
    try:
        for probe in [*PROBES, *INTEGRITY_PROBES]:
            if names is not None and probe.name not in names:
                continue
            started = time.monotonic()
            if isinstance(probe, IntegrityProbe):
                results = _run_integrity_probe(probe, ctx, judge)
                contained, evidence = probe.check(results, ctx, judge)
                # the verdict shown: an OK if any of its runs got one (the attack worked there), else the first's
                own = results[:1] if probe.next_to is not None else results  # (not the honest one next to it)
                result = next((r for r in own if r.verdict is Verdict.OK), results[0])
                kind = "integrity"
                group = probe.group or kind
                judge_errors = sum(r.verdict is Verdict.JUDGE_ERROR for r in results)
            else:
                result = judge.run(probe.language, probe.source(ctx), probe.tests(ctx), probe.time_limit,
                                   probe.memory_limit_bytes)
                contained, evidence = probe.check(result, ctx, judge)
                kind = group = "escape"
                judge_errors = int(result.verdict is Verdict.JUDGE_ERROR)
            wall = time.monotonic() - started
            honest = _honest_after(judge)
            rows.append({"probe": probe.name, "kind": kind, "class": group, "language": probe.language,
                         "tries": probe.tries,
                         "verdict": result.verdict.value, "contained": bool(contained) and honest,
                         "honest_after": honest, "evidence": evidence if honest else
                         f"{evidence}; HONEST SAMPLES AFTER IT FAILED", "seconds": round(wall, 3),
                         "judge_error": result.judge_error, "judge_errors": judge_errors})
    finally:
        if previous is None:
            os.environ.pop(SECRET_ENV, None)
        else:
            os.environ[SECRET_ENV] = previous
        for sock in (ctx.listener, ctx.unix_stream, ctx.unix_datagram):
            sock.close()
        shutil.rmtree(ctx.host_dir, ignore_errors=True)
        shutil.rmtree(ctx.channel_dir, ignore_errors=True)
    return rows
