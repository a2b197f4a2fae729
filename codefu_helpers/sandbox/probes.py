"""The escape battery: programs that try to break out of, abuse or outlive the judge, and host-side checks.

Each probe is a real program run through a real `Judge`. Whether it was *contained* is decided here on the
host, from evidence the program cannot forge where that is possible: a TCP listener on the host and abstract
AF_UNIX sockets that must receive nothing, host files that must not appear (the judge's own directories and its
other workers' scratch directories included), host processes that must not exist after the run, a secret in the
host environment that must not show up in anything the program printed, and the judge still answering
afterwards. The same battery runs against every isolation tier. Notebook 02 prints the table;
tests/test_sandbox_escape.py asserts every row.

    from codefu_helpers.sandbox import Judge
    from codefu_helpers.sandbox.probes import run_escape_probes
    with Judge() as judge:
        for row in run_escape_probes(judge):
            print(row["probe"], row["verdict"], row["contained"], row["evidence"])
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .results import SampleResult, Verdict

SECRET_ENV = "AWS_SECRET_ACCESS_KEY"
DAEMON_NAME = "codefu-daemon"  # the comm name the daemon probe gives itself, searched for on the host


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


def _host_processes_named(name: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if Path(f"/proc/{entry}/comm").read_text().strip() == name:
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
a, b = socket.socketpair(); a.sendall(b"pair"); out.append(b.recv(4).decode())  # what stays allowed
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
import os, sys, tempfile
cmd = sys.stdin.read().strip()
paths = [os.path.join(tempfile.gettempdir(), "leftover"), "/tmp/leftover", "/dev/shm/leftover", "/var/tmp/leftover"]
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
    return not alive and result.verdict is Verdict.OK, (
        f"daemon still running on the host: pids {alive}" if alive else "no process named "
        f"{DAEMON_NAME} on the host after the run")


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
          lambda c: _UNIX_PY.format(name=c.unix_name), lambda c: [("", "unix blocked datagram blocked pair")],
          _check_unix),
    Probe("write outside tmp", "python", "write into a host directory, /usr, /etc, /, the judge's binaries and "
          "cache, other workers' scratch",
          lambda c: _WRITE_PY.format(targets=_write_targets(c)), lambda c: [("", "")], _check_write),
    Probe("read host secrets", "python", "read a host secret file, /etc/shadow, other processes' environ, env",
          lambda c: _READ_PY.format(secret_file=str(c.secret_file)), lambda c: [("", c.secret)], _check_read),
    Probe("fork bomb", "python", "fork forever", lambda c: _FORK_BOMB_PY, lambda c: [("", "")], _check_fork_bomb),
    Probe("fork bomb (C++)", "cpp", "fork forever from C++", lambda c: _FORK_BOMB_CPP, lambda c: [("", "")],
          _check_fork_bomb),
    Probe("memory bomb", "python", "allocate 50 MB chunks forever", lambda c: _MEMORY_BOMB_PY,
          lambda c: [("", "")], _check_verdict(Verdict.MLE)),
    Probe("memory bomb (C++)", "cpp", "allocate 50 MB vectors forever", lambda c: _MEMORY_BOMB_CPP,
          lambda c: [("", "")], _check_verdict(Verdict.MLE)),
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


def make_context(secret: str | None = None) -> ProbeContext:
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
    return ProbeContext(listener.getsockname()[1], base, base / "secret.txt", secret, listener, unix_name,
                        unix_stream, unix_datagram)


def run_escape_probes(judge, names: list[str] | None = None) -> list[dict]:
    """Runs the battery (or the probes named) against `judge`; one dict per probe with a `contained` flag.

    The secret the read probe hunts for is $AWS_SECRET_ACCESS_KEY when it is set (set it before starting the
    judge, as credentials would be on a training host), else a random one put there for the duration.
    """
    previous = os.environ.get(SECRET_ENV)
    ctx = make_context(previous)
    ctx.unisolated = judge.mode == "none"
    # the judge's binaries and caches, and every worker's scratch directory (the container tier has one each)
    ctx.judge_dirs = [judge._bin_dir, judge.cache_root, judge._cache_view,
                      *(w.slot_dir for w in judge._workers if w.slot_dir.exists())]
    os.environ[SECRET_ENV] = ctx.secret
    rows = []
    try:
        for probe in PROBES:
            if names is not None and probe.name not in names:
                continue
            started = time.monotonic()
            result = judge.run(probe.language, probe.source(ctx), probe.tests(ctx), probe.time_limit,
                               probe.memory_limit_bytes)
            wall = time.monotonic() - started
            contained, evidence = probe.check(result, ctx, judge)
            rows.append({"probe": probe.name, "language": probe.language, "tries": probe.tries,
                         "verdict": result.verdict.value, "contained": bool(contained), "evidence": evidence,
                         "seconds": round(wall, 3), "judge_error": result.judge_error})
    finally:
        if previous is None:
            os.environ.pop(SECRET_ENV, None)
        else:
            os.environ[SECRET_ENV] = previous
        for sock in (ctx.listener, ctx.unix_stream, ctx.unix_datagram):
            sock.close()
        shutil.rmtree(ctx.host_dir, ignore_errors=True)
    return rows
