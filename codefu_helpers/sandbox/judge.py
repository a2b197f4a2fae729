"""The judge: a pool of sandboxed fork servers that runs model-written programs on tests and says how they did.

    from codefu_helpers.sandbox import Judge
    with Judge() as judge:                                   # one sandboxed worker per core
        result = judge.run("python", "print(int(input()) * 2)", [("21\\n", "42\\n")],
                           time_limit=1.0, memory_limit_bytes=256 << 20)
        print(result.verdict, result.passed, result.total)   # OK 1 1

Key ideas
- Workers are started once and kept: each is a fork server inside bubblewrap (see `isolation.py` and
  `_server.py`). A Python test is a fork of an interpreter that is already running, so it costs milliseconds.
- Isolation tiers: "bwrap" (namespaces) where bubblewrap can create them; where it cannot, or is not installed
  (root in a Docker-like container, such as a SageMaker training job) `isolation="auto"` falls back to "container"
  (a uid per worker, seccomp, Landlock, no namespaces) and says so once, loudly; without Landlock that tier refuses
  to start unless `programs_may_read_host_files=True`. An ordinary user whom namespaces are refused (SageMaker
  Studio, Ubuntu 24.04) gets the "landlock" tier (programs as that user, kept off everything by Landlock and
  seccomp). `info()["isolation"]` names the tier in use,
  `info()["isolation_line"]` says it in a sentence; `require_isolation()` is the start-up check for a launcher.
- A sample (one program + its tests) runs on one worker; many samples run at once, one per worker, and
  `run_many` keeps every worker busy. C++ is compiled once per distinct source (sha256 cache) in the sandbox,
  with a precompiled <bits/stdc++.h> (`cpp.py`). Tests stop at the first time-limit verdict.
- Integrity: nothing but solving the problem gets OK. Every sample runs in a fresh fork of a process that never
  held another sample's data, and sees only its own binary. A program is one process (no fork, no memfd, no
  socket, no grown pipe; threads share its limits) and creates no files, so all its CPU time and memory count;
  it holds nothing of the judge's but its own read-only stdin and write-only stdout; stderr never fails a
  program. A harness's checks run in a process of their own that the program cannot reach, and the program
  answers their calls with plain data (`run_harness`). `info()["accounting"]` says it in words.
- Time. The TLE verdict uses the *CPU time* of the program (all its threads; a compiler's children too), not wall
  time, so an overloaded machine does not turn a correct solution into a TLE:
      CPU limit  = time_limit x TIME_MULTIPLIERS[language]   (1.0 for both: Codeforces gives every language the
                   same limit; raise Python's for datasets whose Python solutions were accepted under PyPy)
      wall limit = WALL_FACTOR x CPU limit + WALL_SLACK_SECONDS   (3x + 1 s: a backstop for programs that sleep
                   or block; it also ends in TLE)
  A CPU timer (ITIMER_PROF) stops a busy program right at its CPU limit, so an infinite loop costs its time
  limit plus a few milliseconds; RLIMIT_CPU stands behind it for programs that ignore the timer's signal.
- Memory. RLIMIT_AS = memory limit + ADDRESS_SPACE_SLACK (+ the interpreter's own mappings for Python) stops
  runaway allocation. MLE means the program's peak resident memory went over the limit (the slack lets a
  growing program get there); an allocation refused outright (`[0] * 10**18`, one 4 GB `new`) while the program
  held little is a runtime error, as `python3 solution.py` would exit with MemoryError. Python programs run
  exactly as under `python3`, including its 4300-digit limit on int/str conversion.
- Output. stdout is capped at `output_limit_bytes` (RLIMIT_FSIZE on a memfd); more is WA with the note "output
  limit exceeded". stderr is unlimited (its tail is kept). Expected outputs never enter the sandbox: they are
  compared here. A compiled binary over MAX_BINARY_BYTES is a compile error that says so.
- Judge failures (a sandbox that crashed, hung or could not start a program) give Verdict.JUDGE_ERROR and
  `SampleResult.judge_error`, never WA; a crashed or failed server is replaced and the sample retried once, and a
  server whose clean-up after a run failed is replaced before the next one (that run's verdict stands). What a
  program does to itself is never a judge failure: a binary of its own that execve refuses is RE (MLE for
  ENOMEM), a clean-up it made hard is charged to it (RE).

A Judge owns processes and threads: make one per process (or per Ray actor) and close it (or use `with`).
`get_judge()` gives a lazily started, process-wide judge that `reward.compute_score` uses; it is shut down at
exit and replaced, not shared, in a forked child.
"""

from __future__ import annotations

import atexit
import errno
import logging
import os
import pwd
import random
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
import weakref
from collections import OrderedDict
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from queue import Queue

from . import cpp
from .checker import outputs_match
from .isolation import (DEFAULT_PYTHON, TIER_OF_MODE, SandboxProcess, SandboxUnavailableError, WorkerCrashed,
                        check_python, compile_server, host_landlock_abi, kill_processes_of_uids, no_tier_message,
                        remove_tree, resolve_isolation, server_command)
from .protect import PROTECTED_PATHS_ENV, protected_paths_from_env, verify_protection
from .results import SampleResult, Submission, TestResult, Verdict, normalize_language

log = logging.getLogger(__name__)

TIME_MULTIPLIERS = {"python": 1.0, "cpp": 1.0}
WALL_FACTOR = 3.0
WALL_SLACK_SECONDS = 1.0
ADDRESS_SPACE_SLACK = 128 << 20   # allocator arenas, thread stacks and shared libraries on top of the limit
OUTPUT_LIMIT_BYTES = 16 << 20
NPROC_LIMIT = 16                  # processes + threads of one run: enough for threads, not for a fork bomb
STDERR_TAIL = 2000
OUTPUT_HEAD = 1000                # characters of stdout kept in TestResult.output
COMPILE_CPU_SECONDS = 20.0
COMPILE_WALL_SECONDS = 60.0
COMPILE_MEMORY_BYTES = 4 << 30
COMPILE_OUTPUT_CHARS = 6000
MAX_BINARY_BYTES = 64 << 20
CACHE_ENTRIES = 4096              # compiled binaries (and compile errors) kept per judge
REQUEST_MARGIN_SECONDS = 15.0     # how much longer than a run's wall limit the host waits for its server
READ_HOST_FILES_ENV = "CODEFU_JUDGE_PROGRAMS_MAY_READ_HOST_FILES"  # "1": the container tier without Landlock
# at most this Landlock ABI in the container and landlock tiers (default: the kernel's): what a judge on an older
# kernel does (Ubuntu 24.04's 6.8 has ABI 4: no signal scope, so the landlock tier refuses programs every signal),
# tested on a newer one
LANDLOCK_ABI_ENV = "CODEFU_JUDGE_LANDLOCK_ABI"
HARNESS_CHECKER_CPU_SECONDS = 10.0  # a harness's checker: CPU time on top of the program's limit
UIDS_PER_WORKER = 3               # programs, the compiler, a harness's checker
UID_RANGE = 4096                  # uids reserved per judge (a random, aligned range)
MAX_WORKERS = UID_RANGE // UIDS_PER_WORKER
_OOM_MARKERS = {"python": ("MemoryError",), "cpp": ("std::bad_alloc", "Cannot allocate memory")}


@dataclass(frozen=True)
class Limits:
    """The limits one test of a sample runs under (see the module docstring for the rules)."""

    cpu_seconds: float
    wall_seconds: float
    memory_bytes: int
    address_space_bytes: int


class JudgeFailure(RuntimeError):
    """The sandbox answered, but reported that it could not do what was asked."""


def _unprivileged_ids() -> tuple[int, int]:
    try:
        entry = pwd.getpwnam("nobody")
        return entry.pw_uid, entry.pw_gid
    except KeyError:
        return 65534, 65534


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class _Worker(threading.Thread):
    """One judge worker: a thread that owns one sandboxed server for its whole life and runs jobs from the queue."""

    def __init__(self, judge: "Judge", index: int):
        super().__init__(name=f"codefu-judge-{index}", daemon=True)
        self.judge = judge
        self.index = index
        self.server: SandboxProcess | None = None
        self.started = threading.Event()
        self.start_error: BaseException | None = None
        # the slot's uids: programs, the compiler (whose forks the referee allows), a harness's checker
        self.uid = judge._uid_base + UIDS_PER_WORKER * index
        self.compile_uid, self.checker_uid = self.uid + 1, self.uid + 2
        self.log_path = judge._scratch / f"worker-{index}.log"
        self.slot_dir = judge._scratch / f"slot-{index}-0"  # container tier: the compiler's build directory
        self.generation = 0  # servers started so far; each gets a fresh build directory
        self.samples = 0     # samples judged so far: each runs in its own fresh sample process

    def next_sample(self) -> int:
        self.samples += 1
        return self.samples

    # --- the server -----------------------------------------------------------------------------------
    def _spawn(self) -> None:
        judge = self.judge
        config = {"mode": judge.mode, "uid": self.uid, "gid": self.uid, "compile_uid": self.compile_uid,
                  "checker_uid": self.checker_uid, "seccomp": judge.seccomp,
                  "scratch": str(judge._scratch / "none-mode"), "landlock_max_abi": judge.landlock_max_abi}
        old_slot = None
        if judge.mode == "none":
            config["path_map"] = {"/judge/bin": str(judge._bin_dir), "/judge/cache": str(judge.cache_root)}
        elif judge.mode in ("container", "landlock"):
            # a fresh build directory per server: whatever the last one left there is not this one's problem
            self.generation += 1
            old_slot, self.slot_dir = self.slot_dir, judge._scratch / f"slot-{self.index}-{self.generation}"
            self.slot_dir.mkdir(mode=0o700)
            config.update(scratch=str(self.slot_dir), run_dir=str(judge._run_dir))
            if judge.mode == "container":
                os.chown(self.slot_dir, self.compile_uid, self.compile_uid)
                config["path_map"] = {"/judge/bin": str(judge._bin_dir), "/judge/cache": str(judge._cache_view)}
            else:  # one uid for all: this user's (Landlock, not a uid, keeps programs to their own files)
                uid = os.getuid()
                config.update(uid=uid, gid=os.getgid(), compile_uid=uid, checker_uid=uid)
                config["path_map"] = {"/judge/bin": str(judge._bin_dir), "/judge/cache": str(judge.cache_root)}
        argv = server_command(judge.mode, judge.python, config, judge._bin_dir, judge.cache_root, judge._server)
        self.server = SandboxProcess(argv, self.log_path, run_as=judge._run_as)
        if old_slot is not None and old_slot.exists():  # the new server killed what the old uid left running
            try:
                remove_tree(old_slot)
            except OSError as exc:
                log.error("judge worker %d: could not remove its old build directory %s: %s", self.index, old_slot,
                          exc)
        hello = self.server.hello
        if hello.get("seccomp_unknown"):
            log.warning("judge worker %d: libseccomp does not know %s on %s: those calls are not filtered",
                        self.index, ", ".join(hello["seccomp_unknown"]), hello.get("machine"))

    def _kill_server(self) -> None:
        if self.server is not None:
            self.server.close(grace=0.2)
            self.server = None

    def execute(self, header: dict, blobs: list[bytes], timeout: float) -> tuple[dict, list[bytes]]:
        """One request to this worker's server; restarts a dead server first. Raises WorkerCrashed/JudgeFailure."""
        if self.server is None or not self.server.alive:
            self._kill_server()
            try:
                self._spawn()
            except SandboxUnavailableError as exc:  # it ran before: a judge failure for this sample
                raise WorkerCrashed(f"restarting the judge sandbox failed: {exc}") from None
        try:
            reply, out = self.server.request(header, blobs, timeout)
        except WorkerCrashed:
            self._kill_server()
            raise
        if not reply.get("ok"):  # the server failed: a fresh one takes the next request
            self._kill_server()
            raise JudgeFailure(f"{reply.get('error')}\n{reply.get('traceback', '')}".strip())
        if reply.get("unhealthy"):  # the run is judged; its clean-up or check failed: replace the server
            log.warning("judge worker %d: replacing its server: %s", self.index, reply["unhealthy"])
            self._kill_server()
        return reply, out

    @property
    def baseline(self) -> dict:
        return self.server.hello if self.server is not None else {}

    def run(self) -> None:
        try:
            self._spawn()
        except BaseException as exc:  # reported to Judge.__init__, which raises it
            self.start_error = exc
            self.started.set()
            return
        self.started.set()
        queue = self.judge._queue
        while True:
            job = queue.get()
            if job is None:
                break
            fn, args, future = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(self, *args)
            except BaseException as exc:
                future.set_exception(exc)
            else:
                future.set_result(result)
        self._kill_server()


_LIVE_JUDGES: "weakref.WeakSet[Judge]" = weakref.WeakSet()


class Judge:
    """A pool of sandboxed workers that judges samples concurrently. Use as a context manager, or call close().

    workers: how many sandboxes (default: the CPU cores this process may use).
    isolation: "bwrap" (bubblewrap namespaces; raises SandboxUnavailableError when it cannot work; as root
        without the needed capabilities, the sandboxes run as `nobody` in user namespaces), "container" (no
        namespaces: a uid per worker, seccomp, Landlock; needs root), "auto" (bwrap, else -- as root, when
        bubblewrap cannot start a sandbox, as where namespaces are refused, or is not installed -- container,
        announced loudly) or "none"
        (explicit, loud opt-in to running programs unisolated as the current user). `isolation` afterwards holds
        the tier in use, `info()` the details.
    programs_may_read_host_files: the container tier on a kernel without Landlock (before 5.13) cannot keep
        programs from reading the host's world-readable files (data channels, checkpoints, the repository and
        its dataset); it refuses to start there unless this is True (default: $CODEFU_JUDGE_PROGRAMS_MAY_READ_
        HOST_FILES == "1"). Programs still cannot write, create or delete any file there.
    time_multipliers: per-language factors on the problem's time limit, default TIME_MULTIPLIERS.
    python: the interpreter under /usr that runs Python submissions inside the sandbox.
    cache_dir: where the precompiled header is kept (default ~/.cache/codefu/judge or $CODEFU_JUDGE_CACHE).
    """

    def __init__(self, workers: int | None = None, isolation: str = "auto", *, python: str = DEFAULT_PYTHON,
                 time_multipliers: dict[str, float] | None = None, output_limit_bytes: int = OUTPUT_LIMIT_BYTES,
                 nproc_limit: int = NPROC_LIMIT, seccomp: bool = True, cache_dir: str | os.PathLike | None = None,
                 programs_may_read_host_files: bool | None = None, protected_paths: list[str] | None = None):
        if workers is None:
            workers = min(_cpu_count(), MAX_WORKERS)
        if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
            raise ValueError(f"workers must be an int from 1 to {MAX_WORKERS}, or None (one per core), got "
                             f"{workers!r}")
        self.time_multipliers = dict(TIME_MULTIPLIERS)
        for lang, factor in (time_multipliers or {}).items():
            if not (isinstance(factor, (int, float)) and factor > 0):
                raise ValueError(f"time multiplier for {lang!r} must be a positive number, got {factor!r}")
            self.time_multipliers[normalize_language(lang)] = float(factor)
        if not (isinstance(output_limit_bytes, int) and output_limit_bytes >= 4096):
            raise ValueError(f"output_limit_bytes must be an int >= 4096, got {output_limit_bytes!r}")
        if not (isinstance(nproc_limit, int) and nproc_limit >= 1):
            raise ValueError(f"nproc_limit must be a positive int, got {nproc_limit!r}")
        if programs_may_read_host_files is None:
            programs_may_read_host_files = os.environ.get(READ_HOST_FILES_ENV, "") == "1"
        self.programs_may_read_host_files = bool(programs_may_read_host_files)
        if protected_paths is None:
            protected_paths = protected_paths_from_env()
        if isinstance(protected_paths, (str, bytes)) or not all(isinstance(p, str) for p in protected_paths):
            raise ValueError(f"protected_paths must be a list of directories, got {protected_paths!r}")
        self.protected_paths = [os.path.realpath(p) for p in protected_paths]
        self.protection: dict[str, str] = {}  # path -> what a program got trying to read its canary
        cap = os.environ.get(LANDLOCK_ABI_ENV, "")
        if cap and not (cap.isdigit() and int(cap) >= 1):
            raise ValueError(f"${LANDLOCK_ABI_ENV} must be a Landlock ABI version (1, 2, ...), got {cap!r}")
        self.landlock_max_abi = int(cap) if cap else None
        # why the tier in use is not the first choice
        self.mode, self.isolation_reason = resolve_isolation(isolation)
        self.python = check_python(python)
        self.output_limit_bytes = output_limit_bytes
        self.nproc_limit = nproc_limit
        self.seccomp = seccomp
        self.cache_root = Path(cache_dir) if cache_dir is not None else cpp.default_cache_root()
        self.cache_root.mkdir(parents=True, exist_ok=True)
        self._scratch = Path(tempfile.mkdtemp(prefix="codefu-judge-"))
        self._scratch.chmod(0o755)
        # compiled binaries: root's alone; a program gets its own through a descriptor, never the directory
        self._bin_dir = self._scratch / "bin"
        self._bin_dir.mkdir(mode=0o700)
        (self._scratch / "none-mode").mkdir(mode=0o755)
        self._run_dir = self._scratch / "run"  # container tier: programs' working directory, empty, read-only
        self._run_dir.mkdir(mode=0o755)
        self._server = compile_server(self.python, self._scratch)
        # container tier: the precompiled header as the slots' uids can reach it (~root is closed to them)
        self._cache_view = self._scratch / "cache-view"
        self._cache_view.mkdir(mode=0o755)
        # A fresh random uid range per judge: RLIMIT_NPROC counts per uid across the machine, so two judges
        # (or two workers) must never share one.
        self._uid_base = random.SystemRandom().randrange(1_000_000, 2_000_000_000, UID_RANGE)
        self._queue: Queue = Queue()
        self._cache_lock = threading.Lock()
        self._binaries: OrderedDict[str, tuple[str, str]] = OrderedDict()   # key -> ("ok", path) | ("ce", text)
        self._python_checks: OrderedDict[str, str | None] = OrderedDict()   # sha -> None | syntax error text
        self._key_locks: dict[str, threading.Lock] = {}
        self._pch_include: str | None = None
        self._pch_ready = False
        self._closed = False
        self._owner_pid = os.getpid()
        self._run_as: tuple[int, int] | None = None  # start the sandboxes as this (uid, gid) instead of ours
        self._workers: list[_Worker] = []
        try:
            self._start_bwrap_or_container(workers, isolation)
        except BaseException:
            self.close()
            raise
        self.isolation = TIER_OF_MODE[self.mode]
        if self.protected_paths:  # checked in every tier; the container tier without Landlock depends on it
            try:
                self.protection = verify_protection(self, self.protected_paths)
            except (PermissionError, ValueError, OSError) as exc:
                self.close()
                raise SandboxUnavailableError(f"the judge will not start: {exc}") from None
        _LIVE_JUDGES.add(self)
        _announce(self.info()["isolation_line"], loud=self.isolation != "bwrap")

    def _start_bwrap_or_container(self, workers: int, isolation: str) -> None:
        """Starts the workers in self.mode, falling back as the docstring of `Judge` says; raises when none works."""
        try:
            self._start_workers(workers)
            return
        except SandboxUnavailableError as error:
            if self.mode not in ("root", "userns"):
                raise
            errors = [("as root" if self.mode == "root" else "as this user", error)]
        cache_root = self.cache_root
        if self.mode == "root":
            # Root without the capabilities bubblewrap needs (an unprivileged container): run the sandboxes as
            # `nobody` instead, which bubblewrap isolates with a user namespace, as for any ordinary user.
            log.warning("judge: bubblewrap cannot run as root here (%s); trying the sandboxes as an unprivileged "
                        "user in user namespaces instead", _bwrap_reason(errors[0][1]))
            self.mode, self._run_as = "userns", _unprivileged_ids()
            self.cache_root = self._scratch / "cache"  # ~root is not readable by that user
            self.cache_root.mkdir(mode=0o755, exist_ok=True)
            os.chown(self._bin_dir, *self._run_as)  # the sandboxes' owner, and nobody else, opens the binaries
            try:
                self._start_workers(workers)
                self.isolation_reason = f"bubblewrap cannot run as root here ({_bwrap_reason(errors[0][1])})"
                return
            except SandboxUnavailableError as error:
                errors.append(("as nobody in a user namespace", error))
        tried = "\n\n".join(f"bubblewrap {how}: {error}" for how, error in errors)
        if isolation == "auto" and os.geteuid() != 0:
            # An ordinary user whom namespaces are refused (Docker's seccomp profile in a SageMaker Studio space,
            # Ubuntu 24.04's AppArmor restriction): the landlock tier needs none, only Landlock.
            if host_landlock_abi() is None:
                raise SandboxUnavailableError(no_tier_message(f"bubblewrap cannot start a sandbox "
                                                              f"({_bwrap_reason(errors[-1][1])})")) from None
            self.mode = "landlock"
            self.isolation_reason = f"bubblewrap cannot start a sandbox here ({_bwrap_reason(errors[-1][1])})"
            try:
                self._start_workers(workers)
                return
            except SandboxUnavailableError as error:
                raise SandboxUnavailableError(f"the landlock tier did not start either: {error}\n\n"
                                              f"Before that:\n{tried}") from None
        if isolation != "auto" or os.geteuid() != 0:
            hint = ("" if os.geteuid() != 0 else "\n\nisolation='auto' would fall back to the container tier here "
                    "(a uid per worker, seccomp, Landlock, no namespaces); pass isolation='container' for it.")
            raise SandboxUnavailableError(tried + hint) from None
        # Namespaces are refused altogether (Docker's default seccomp profile): the container tier needs none.
        self.mode, self._run_as, self.cache_root = "container", None, cache_root
        os.chown(self._bin_dir, 0, 0)
        self.isolation_reason = f"bubblewrap cannot start a sandbox here ({_bwrap_reason(errors[-1][1])})"
        try:
            self._start_workers(workers)
        except SandboxUnavailableError as error:
            raise SandboxUnavailableError(f"the container tier did not start either: {error}\n\n"
                                          f"Before that:\n{tried}") from None

    def _start_workers(self, count: int) -> None:
        """Starts `count` workers, each with its sandbox; on any failure stops them all and raises."""
        if (self.mode == "container" and host_landlock_abi() is None and not self.programs_may_read_host_files
                and not self.protected_paths):
            raise SandboxUnavailableError(
                "the container tier needs Landlock to keep programs away from the host's files, and it is not "
                f"available here (kernel {os.uname().release}: Linux 5.13+ with the Landlock LSM enabled has it, "
                "unless a seccomp profile refuses it): a program could read every world-readable file -- the data "
                "channels with their expected outputs, checkpoints, the repository. Use a newer kernel, install "
                "bubblewrap where namespaces are allowed, protect the paths that hold answers as root "
                f"(codefu_helpers.sandbox.protect: protect_host_files, then protected_paths= or ${PROTECTED_PATHS_ENV}; "
                "the SageMaker entry point does this), or accept that exposure with "
                f"programs_may_read_host_files=True ({READ_HOST_FILES_ENV}=1)")
        self._workers = [_Worker(self, i) for i in range(count)]
        for worker in self._workers:
            worker.start()
        for worker in self._workers:
            worker.started.wait()
        errors = [w.start_error for w in self._workers if w.start_error is not None]
        if errors:
            for worker in self._workers:
                if worker.start_error is None:
                    self._queue.put(None)
            for worker in self._workers:
                worker.join(timeout=10)
            self._workers = []
            if isinstance(errors[0], SandboxUnavailableError):
                raise errors[0]
            raise SandboxUnavailableError(f"a judge worker failed to start: {errors[0]!r}") from errors[0]

    # --- lifecycle ----------------------------------------------------------------------------------------
    @property
    def workers(self) -> int:
        return len(self._workers)

    def info(self) -> dict:
        """What this judge runs with: isolation tier and how, workers, interpreter, seccomp, Landlock, multipliers.

        "isolation" is the tier ("bwrap", "container", "landlock" or "none"), "isolation_mode" how it runs ("root",
        "userns", "container", "landlock", "none"), "isolation_reason" why it is not the first choice (None when it is), "landlock" the
        kernel's Landlock ABI the container tier enforces (None: not enforced), "accounting" how a program's CPU
        time, memory and files are bounded, and "isolation_line" all that in one sentence, for a log's first
        line."""
        hello = self._workers[0].baseline if self._workers else {}
        tier = TIER_OF_MODE[self.mode]
        landlock = hello.get("landlock") if self.mode in ("container", "landlock") else None
        seccomp = bool(hello.get("seccomp"))
        return {"isolation": tier, "isolation_mode": self.mode, "isolation_reason": self.isolation_reason,
                "isolation_line": _isolation_line(tier, self.mode, self.isolation_reason, landlock, seccomp,
                                                  self.protected_paths),
                "accounting": _accounting(self.mode, seccomp, landlock),
                "programs_may_read_host_files": self.mode == "container" and landlock is None
                and not self.protected_paths,
                "protected_paths": list(self.protected_paths), "protection": dict(self.protection),
                "landlock": landlock, "run_as": self._run_as, "workers": self.workers, "python": hello.get("python"),
                "seccomp": bool(hello.get("seccomp")), "time_multipliers": dict(self.time_multipliers),
                "wall_factor": WALL_FACTOR, "wall_slack_seconds": WALL_SLACK_SECONDS,
                "cxx": cpp.compiler_identity(), "pch": self._pch_include}

    def close(self) -> None:
        """Stops the workers and their sandboxes and deletes the judge's scratch files. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if os.getpid() != self._owner_pid:
            self._forget()
            return
        for _ in self._workers:
            self._queue.put(None)
        for worker in self._workers:
            if worker.is_alive():
                worker.join(timeout=10)
        if self.mode == "container" and self._workers:  # each server cleans up after every run; this catches
            left = kill_processes_of_uids([u for w in self._workers for u in (w.uid, w.compile_uid, w.checker_uid)])
            # (a server that died mid-run)
            if left:
                log.error("judge: processes %s of the container tier's uids survived SIGKILL", left)
        try:
            remove_tree(self._scratch)
        except OSError as exc:
            log.error("judge: could not remove its scratch directory %s: %s", self._scratch, exc)
            shutil.rmtree(self._scratch, ignore_errors=True)
        _LIVE_JUDGES.discard(self)

    def _forget(self) -> None:
        """In a forked child: let go of the parent's sandboxes without stopping them."""
        self._closed = True
        for worker in self._workers:
            if worker.server is not None:
                worker.server.forget()

    def __enter__(self) -> "Judge":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __getstate__(self):
        raise TypeError("a Judge owns sandbox processes and cannot be pickled: create one per process or Ray "
                        "actor, and send it Submission objects (which pickle)")

    # --- limits -------------------------------------------------------------------------------------------
    def limits(self, language: str, time_limit: float, memory_limit_bytes: int) -> Limits:
        language = normalize_language(language)
        cpu = float(time_limit) * self.time_multipliers[language]
        address_space = memory_limit_bytes + ADDRESS_SPACE_SLACK
        if language == "python":
            address_space += int(self._workers[0].baseline.get("baseline_vm", 0) if self._workers else 0)
        return Limits(cpu, cpu * WALL_FACTOR + WALL_SLACK_SECONDS, memory_limit_bytes, address_space)

    def default_timeout(self, submission: Submission) -> float:
        """Budget for a whole sample: compilation plus every test at its wall limit, plus some slack."""
        lim = self.limits(submission.language, submission.time_limit, submission.memory_limit_bytes)
        return COMPILE_WALL_SECONDS + len(submission.tests) * (lim.wall_seconds + 0.5) + 10.0

    # --- public API -----------------------------------------------------------------------------------------
    def run(self, language: str, source: str, tests, time_limit: float, memory_limit_bytes: int,
            stop_at_first_tle: bool = True, *, stop_at_first_failure: bool = False,
            float_tolerance: float | None = None, timeout: float | None = None) -> SampleResult:
        """Judges one program on stdin/stdout tests, a list of (input, expected_output) pairs.

        timeout bounds the whole call, waiting for a free worker included; past it the sample is a judge error.
        """
        sub = Submission(language, source, tuple(tests), time_limit, memory_limit_bytes, stop_at_first_tle,
                         stop_at_first_failure, float_tolerance, timeout)
        budget = sub.timeout or self.default_timeout(sub)
        deadline = time.monotonic() + budget
        future = self._submit(self._judge_sample, (sub, deadline))
        return self._wait(future, deadline, sub)

    def run_many(self, submissions) -> list[SampleResult]:
        """Judges many samples concurrently on all workers; results in input order.

        Each item is a Submission or a dict of Submission's fields. A sample's timeout starts when a worker
        picks it up, so a long queue does not turn into judge errors.
        """
        subs = []
        for i, item in enumerate(submissions):
            if isinstance(item, Submission):
                subs.append(item)
            elif isinstance(item, dict):
                try:
                    subs.append(Submission(**{**item, "tests": tuple(item.get("tests", ()))}))
                except (TypeError, ValueError) as exc:
                    raise type(exc)(f"submission {i}: {exc}") from None
            else:
                raise TypeError(f"submission {i} must be a Submission or a dict, got {type(item).__name__}")
        futures = [self._submit(self._judge_sample, (sub, None)) for sub in subs]
        return [f.result() for f in futures]

    def run_harness(self, program: str, check: str, call: str, timeout: float,
                    memory_limit_bytes: int = 1 << 30) -> SampleResult:
        """Judges a function-call harness (HumanEval, LiveCodeBench's functional problems): `program` defines the
        function, `check` is Python that calls `candidate(...)` and asserts on what it returns.

        Two processes, never one: the *candidate* runs `program`, then answers calls to `call` ("f": its function
        f; "C.m": method m of one instance of its class C, made once); the *checker* runs `check` with `candidate`
        bound to a stub that sends each call's arguments and returns the program's answer. Both directions carry
        plain data only (JSON that keeps each value's Python type: tuple is not list, floats exact; see
        `_server.py`), so the expected values, the check code and the verdict exist only in the checker, which the
        program can neither see nor signal. A returned value that is not plain data (a generator, a custom object)
        is a wrong answer.

        Verdicts: OK when the checks ran to their end; WA when one failed (an AssertionError) or an answer was not
        plain data; RE when the function raised, another exception left the checks, or the program ended during
        a call (os._exit, sys.exit, a crash); TLE / MLE for the program's limits (timeout is its CPU-time limit in
        seconds; the checker has HARNESS_CHECKER_CPU_SECONDS more of its own, and its running out of it on the
        program's answers is a TLE); CE when the program does not parse. JUDGE_ERROR only when the judge failed
        (the check code does not compile, the checker could not start)."""
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if not isinstance(call, str) or not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)?", call):
            raise ValueError(f"call must name a function ('f') or a method of a class ('C.m'), got {call!r}")
        if not isinstance(check, str) or not check.strip():
            raise ValueError("check must be the Python source of the checks (it calls candidate(...)), got "
                             f"{check!r}")
        sub = Submission("python", program, (("", ""),), float(timeout), memory_limit_bytes)
        deadline = time.monotonic() + self.default_timeout(sub) + HARNESS_CHECKER_CPU_SECONDS
        future = self._submit(self._judge_harness, (sub, check, call, deadline))
        return self._wait(future, deadline, sub)

    # --- plumbing -------------------------------------------------------------------------------------------
    def _submit(self, fn, args) -> Future:
        if self._closed:
            raise RuntimeError("this Judge is closed")
        if os.getpid() != self._owner_pid:
            raise RuntimeError("this Judge was created in the parent process and does not work after fork(): "
                               "create a new Judge in the child, or use get_judge()")
        future: Future = Future()
        self._queue.put((fn, args, future))
        return future

    def _wait(self, future: Future, deadline: float, sub: Submission) -> SampleResult:
        try:
            return future.result(timeout=max(0.0, deadline - time.monotonic()) + 1.0)
        except FutureTimeout:
            if future.cancel():
                return SampleResult.judge_failure(
                    "no judge worker became free within the sample's time budget "
                    f"({len(self._workers)} workers, all busy)", len(sub.tests), sub.language)
            return future.result()  # it started: its own deadline bounds it

    def _judge_sample(self, worker: _Worker, sub: Submission, deadline: float | None) -> SampleResult:
        started = time.monotonic()
        if deadline is None:
            deadline = started + (sub.timeout or self.default_timeout(sub))
        last_error = ""
        for attempt in (1, 2):
            try:
                result = self._judge_once(worker, sub, deadline)
                result.wall_seconds = time.monotonic() - started
                return result
            except (WorkerCrashed, JudgeFailure) as exc:
                last_error = f"{type(exc).__name__}: {exc}"
                log.warning("judge worker %d failed (attempt %d): %s", worker.index, attempt, last_error[:500])
                if time.monotonic() >= deadline:
                    break
        return SampleResult.judge_failure(last_error, len(sub.tests), sub.language, time.monotonic() - started)

    def _judge_once(self, worker: _Worker, sub: Submission, deadline: float) -> SampleResult:
        total = len(sub.tests)
        sample = worker.next_sample()  # a fresh sample process: nothing of an earlier sample in its memory
        if sub.language == "python":
            error = self._python_syntax_error(worker, sub.source, sample)
            if error is not None:
                return SampleResult(Verdict.CE, 0, total, [], error, 0.0, None, sub.language)
            program = {"kind": "python"}
        else:
            status, payload = self._cpp_binary(worker, sub.source, sample)
            if status == "ce":
                return SampleResult(Verdict.CE, 0, total, [], payload, 0.0, None, sub.language)
            program = {"kind": "exec", "argv": [f"/judge/bin/{payload}"]}
        lim = self.limits(sub.language, sub.time_limit, sub.memory_limit_bytes)
        source = sub.source.encode("utf-8", "surrogateescape") if sub.language == "python" else b""
        results: list[TestResult] = []
        for i, (test_input, expected) in enumerate(sub.tests):
            if time.monotonic() > deadline:
                return SampleResult.judge_failure(
                    f"judging ran past its time budget after {i} of {total} tests (machine overloaded?)",
                    total, sub.language)
            reply, out = worker.execute(self._run_header(program, lim, sample),
                                        [test_input.encode("utf-8", "surrogateescape"), source],
                                        lim.wall_seconds + REQUEST_MARGIN_SECONDS)
            test = self._test_verdict(worker, reply, out, sub.language, lim, expected, sub.float_tolerance)
            if test.verdict is Verdict.JUDGE_ERROR:
                raise JudgeFailure(f"test {i}: {test.note}")
            results.append(test)
            if test.verdict is Verdict.TLE and sub.stop_at_first_tle:
                break
            if test.verdict is not Verdict.OK and sub.stop_at_first_failure:
                break
        passed = sum(t.verdict is Verdict.OK for t in results)
        failed = [t.verdict for t in results if t.verdict is not Verdict.OK]
        verdict = Verdict.OK if passed == total else failed[0]
        return SampleResult(verdict, passed, total, results, "", 0.0, None, sub.language)

    def _judge_harness(self, worker: _Worker, sub: Submission, check: str, call: str,
                       deadline: float) -> SampleResult:
        def once():
            sample = worker.next_sample()
            error = self._python_syntax_error(worker, sub.source, sample)
            if error is not None:
                return SampleResult(Verdict.CE, 0, 1, [], error, 0.0, None, "python")
            lim = self.limits("python", sub.time_limit, sub.memory_limit_bytes)
            header = self._run_header({"kind": "harness", "call": call}, lim, sample)
            baseline = int(worker.baseline.get("baseline_vm", 0))
            header.update(wall=lim.wall_seconds + HARNESS_CHECKER_CPU_SECONDS,
                          checker_cpu=lim.cpu_seconds + HARNESS_CHECKER_CPU_SECONDS,
                          checker_as=2 * sub.memory_limit_bytes + ADDRESS_SPACE_SLACK + baseline)
            reply, out = worker.execute(header, [b"", sub.source.encode("utf-8", "surrogateescape"),
                                                 check.encode("utf-8", "surrogateescape")],
                                        header["wall"] + REQUEST_MARGIN_SECONDS)
            test = self._harness_verdict(worker, reply, out, lim)
            return SampleResult(test.verdict, int(test.verdict is Verdict.OK), 1, [test], "", 0.0, None, "python")

        started = time.monotonic()
        try:
            result = once()
        except (WorkerCrashed, JudgeFailure):
            try:
                result = once()
            except (WorkerCrashed, JudgeFailure) as exc:
                return SampleResult.judge_failure(f"{type(exc).__name__}: {exc}", 1, "python",
                                                  time.monotonic() - started)
        result.wall_seconds = time.monotonic() - started
        return result

    def _harness_verdict(self, worker: _Worker, reply: dict, out: list[bytes], lim: Limits) -> TestResult:
        """The verdict of a harness run from the candidate's outcome (its limits come first) and the checker's
        report (see `run_harness`). Raises JudgeFailure where the judge, not the program, failed."""
        test = self._test_verdict(worker, reply, out, "python", lim, None, None)
        if test.verdict is Verdict.JUDGE_ERROR:
            raise JudgeFailure(test.note)
        if test.verdict in (Verdict.TLE, Verdict.MLE):
            return test
        checker = reply.get("checker") or {}
        outcome, message = checker.get("outcome"), str(checker.get("message") or "")
        program_ok = test.verdict is Verdict.OK
        if checker.get("status") == "wall":
            test.verdict, test.note = Verdict.TLE, (f"killed by the wall-clock backstop after "
                                                    f"{lim.wall_seconds + HARNESS_CHECKER_CPU_SECONDS:.1f}s")
        elif outcome == "passed":
            if program_ok:
                test.note = f"{checker.get('calls', 0)} calls, every check passed"
        elif outcome in ("failed", "not_plain"):
            what = "a check failed" if outcome == "failed" else "an answer is not plain data (a wrong answer)"
            test.verdict, test.note = Verdict.WA, f"{what}: {message}"
        elif outcome in ("raised", "check_raised"):
            what = "the function raised" if outcome == "raised" else "the checks raised on its answer"
            test.verdict, test.note = Verdict.RE, f"{what}: {message}"
        elif outcome == "ended":
            if program_ok:  # its process ended with status 0 in the middle of a call
                test.verdict = Verdict.RE
            test.note = ("the program ended during a call, before its checks were done"
                         + (f" ({test.note})" if test.note else " (exit status 0)"))
        elif outcome == "out_of_memory":
            test.verdict, test.note = Verdict.MLE, "an answer too large for the checker's memory"
        elif checker.get("signal") in (signal.SIGPROF, signal.SIGXCPU):
            test.verdict, test.note = Verdict.TLE, "the checks ran out of CPU time on the program's answers"
        else:  # the check code does not compile, or the checker failed to start or died
            raise JudgeFailure(f"the harness's checker failed: {checker.get('status')} {outcome} "
                               f"signal {checker.get('signal')} {message[-1000:]}".strip())
        return test

    def _run_header(self, program: dict, lim: Limits, sample: int) -> dict:
        return {"op": "run", "sample": sample, **program, "cpu": lim.cpu_seconds, "wall": lim.wall_seconds,
                "as": lim.address_space_bytes, "fsize": self.output_limit_bytes, "nproc": self.nproc_limit,
                "stack": lim.memory_bytes, "stdout_limit": self.output_limit_bytes, "stderr_limit": STDERR_TAIL}

    def _test_verdict(self, worker: _Worker, reply: dict, out: list[bytes], language: str, lim: Limits,
                      expected: str | None, float_tolerance: float | None) -> TestResult:
        stdout, stderr = out[0], out[1]
        stderr_text = stderr.decode("utf-8", "replace")
        status = reply.get("status")
        test = TestResult(Verdict.JUDGE_ERROR, cpu_seconds=reply.get("cpu"), wall_seconds=reply.get("wall", 0.0),
                          exit_code=reply.get("exit_code"), signal=reply.get("signal"), stderr=stderr_text,
                          output=stdout[:OUTPUT_HEAD].decode("utf-8", "replace"))
        if reply.get("maxrss") is not None:
            baseline = worker.baseline.get("baseline_rss", 0) if language == "python" else 0
            test.memory_bytes = max(0, int(reply["maxrss"]) - int(baseline))
        if status == "setup_error":
            test.note = f"{reply.get('error')}: {stderr_text[-500:]}"
            return test
        if status == "exec_error":  # the judge opened the binary: what execve refuses is in the binary itself
            errno_ = int(reply.get("exec_errno") or 0)
            if errno_ in (errno.ENOMEM, errno.E2BIG):  # the binary does not fit the limit
                test.verdict, test.note = Verdict.MLE, "the program could not be loaded within the memory limit"
            else:
                test.verdict = Verdict.RE
                test.note = (f"the compiled program could not be started: execve failed with errno {errno_} "
                             f"({os.strerror(errno_)})")
            return test
        if reply.get("cleanup_failed"):
            test.verdict = Verdict.RE
            test.note = f"the program left processes that survived SIGKILL ({reply['cleanup_failed']})"
            return test
        if status == "wall":
            test.verdict = Verdict.TLE
            test.note = f"killed by the wall-clock backstop after {lim.wall_seconds:.1f}s"
            return test
        sig = test.signal
        cpu_killed = sig in (signal.SIGPROF, signal.SIGXCPU)  # the CPU timer, or RLIMIT_CPU behind it
        if cpu_killed or (test.cpu_seconds or 0.0) > lim.cpu_seconds:
            test.verdict = Verdict.TLE
            test.note = (f"stopped at the {lim.cpu_seconds:g}s CPU-time limit" if cpu_killed
                         else f"used {test.cpu_seconds:.2f}s of CPU time, over the {lim.cpu_seconds:g}s limit")
            return test
        failed = sig is not None or test.exit_code != 0
        if test.memory_bytes is not None and test.memory_bytes > lim.memory_bytes:
            test.verdict, test.note = Verdict.MLE, f"peak memory {test.memory_bytes >> 20} MiB over the limit"
            return test
        out_of_memory = failed and any(marker in stderr_text for marker in _OOM_MARKERS[language])
        # stdout only (a memfd capped by RLIMIT_FSIZE): stderr is a pipe drained without limit, its tail kept, so
        # that debugging output cannot fail a program
        if reply.get("stdout_size", 0) >= self.output_limit_bytes or sig == signal.SIGXFSZ:
            test.verdict, test.note = Verdict.WA, f"output limit exceeded ({self.output_limit_bytes >> 20} MiB)"
            return test
        if sig is not None:
            test.verdict, test.note = Verdict.RE, f"killed by {signal.Signals(sig).name}"
            if out_of_memory:
                test.note += f" after an allocation failed (peak memory {(test.memory_bytes or 0) >> 20} MiB)"
            return test
        if test.exit_code != 0:
            test.verdict, test.note = Verdict.RE, f"exit status {test.exit_code}"
            if out_of_memory:  # e.g. [0] * 10**18: refused outright, the program never held that much
                test.note += f" (an allocation failed; peak memory {(test.memory_bytes or 0) >> 20} MiB)"
            return test
        if expected is None or outputs_match(stdout, expected, float_tolerance):
            test.verdict = Verdict.OK
        else:
            test.verdict, test.note = Verdict.WA, "output differs from the expected answer"
        return test

    # --- compilation ------------------------------------------------------------------------------------------
    def _python_syntax_error(self, worker: _Worker, source: str, sample: int) -> str | None:
        """None if the source parses, else the syntax error text. Parsing runs in the sandbox too."""
        key = cpp.cache_key(source, "python")
        with self._cache_lock:
            if key in self._python_checks:
                self._python_checks.move_to_end(key)
                return self._python_checks[key]
        header = {"op": "run", "sample": sample, "kind": "python_compile", "cpu": 10.0, "wall": 30.0,
                  "as": int(worker.baseline.get("baseline_vm", 0)) + (1 << 30), "fsize": 1 << 20, "nproc": 4,
                  "stack": 64 << 20, "stdout_limit": 0, "stderr_limit": COMPILE_OUTPUT_CHARS}
        reply, out = worker.execute(header, [b"", source.encode("utf-8", "surrogateescape")], 30.0 + 15.0)
        status = reply.get("status")
        if status not in ("exited", "signaled"):
            raise JudgeFailure(f"checking the Python syntax failed: {reply.get('error')} "
                               f"{out[1].decode('utf-8', 'replace')[-500:]}")
        if status == "exited" and reply.get("exit_code") == 0:
            error = None
        elif status == "exited" and reply.get("exit_code") == 1:
            error = out[1].decode("utf-8", "replace").strip() or "SyntaxError"
        else:
            error = f"parsing the program failed ({status}, signal {reply.get('signal')}): it is too large or deep"
        with self._cache_lock:
            self._remember_locked(self._python_checks, key, error)
        return error

    def _ensure_pch(self) -> str | None:
        with self._cache_lock:
            if self._pch_ready:
                return self._pch_include
        pch_dir = cpp.ensure_pch(self.cache_root)  # file-locked; slow only the first time on a machine
        if pch_dir is not None and self.mode == "container":
            pch_dir = _link_pch(pch_dir, self._cache_view)
        with self._cache_lock:
            self._pch_include = f"/judge/cache/{pch_dir.name}" if pch_dir is not None else None
            self._pch_ready = True
            return self._pch_include

    def _cpp_binary(self, worker: _Worker, source: str, sample: int) -> tuple[str, str]:
        """("ok", binary name under /judge/bin) or ("ce", compiler messages); compiled once per distinct source."""
        identity = cpp.compiler_identity()
        if identity is None:
            raise SandboxUnavailableError("no C++ compiler at /usr/bin/g++: install g++ (scripts/setup_system.sh)")
        key = cpp.cache_key(source, identity)
        with self._cache_lock:
            hit = self._binaries.get(key)
            if hit is not None:
                self._binaries.move_to_end(key)
                return hit
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:  # another worker may be compiling the very same source
            with self._cache_lock:
                hit = self._binaries.get(key)
                if hit is not None:
                    return hit
            result = self._compile_cpp(worker, source, key, sample)
            with self._cache_lock:
                self._remember_locked(self._binaries, key, result)
                self._key_locks.pop(key, None)
            return result

    def _compile_cpp(self, worker: _Worker, source: str, key: str, sample: int) -> tuple[str, str]:
        pch_include = self._ensure_pch()
        header = {"op": "run", "sample": sample, "kind": "exec", "compile": True,
                  "argv": cpp.compile_argv(pch_include),
                  "files": {"solution.cpp": 1}, "collect": "solution", "collect_limit": MAX_BINARY_BYTES,
                  "cpu": COMPILE_CPU_SECONDS, "wall": COMPILE_WALL_SECONDS, "as": COMPILE_MEMORY_BYTES,
                  "fsize": 256 << 20, "nproc": 32, "stack": 256 << 20, "stdout_limit": COMPILE_OUTPUT_CHARS,
                  "stderr_limit": COMPILE_OUTPUT_CHARS * 4}
        reply, out = worker.execute(header, [b"", source.encode("utf-8", "surrogateescape")],
                                    COMPILE_WALL_SECONDS + REQUEST_MARGIN_SECONDS)
        status = reply.get("status")
        messages = (out[0] + out[1]).decode("utf-8", "replace")
        if status == "wall" or (status == "signaled" and reply.get("signal") in (signal.SIGXCPU, signal.SIGPROF)):
            return "ce", f"compilation exceeded its {COMPILE_CPU_SECONDS:g}s limit"
        if status not in ("exited", "signaled"):
            raise JudgeFailure(f"running the compiler failed: {reply.get('error')} {messages[-500:]}")
        if status == "exited" and reply.get("exit_code") == 0 and reply.get("artifact_too_large"):
            return "ce", (f"the compiled program is {reply['artifact_size'] / (1 << 20):.1f} MiB, over the judge's "
                          f"{MAX_BINARY_BYTES >> 20} MiB limit for a binary (a large initialised array?)")
        if status == "exited" and reply.get("exit_code") == 0 and out[2]:
            path = self._bin_dir / key
            tmp = self._bin_dir / f".{key}.{threading.get_ident()}"
            tmp.write_bytes(out[2])
            tmp.chmod(0o755)
            os.replace(tmp, path)
            return "ok", key
        if status == "exited" and reply.get("exit_code") == 0:
            raise JudgeFailure("the compiler succeeded but produced no binary")
        return "ce", _trim_compiler_output(messages)

    def _remember_locked(self, cache: OrderedDict, key: str, value) -> None:
        """Stores a cache entry, evicting the oldest beyond CACHE_ENTRIES. The caller holds _cache_lock."""
        cache[key] = value
        cache.move_to_end(key)
        while len(cache) > CACHE_ENTRIES:
            _, old = cache.popitem(last=False)
            if isinstance(old, tuple) and old[0] == "ok":
                try:
                    (self._bin_dir / old[1]).unlink()
                except OSError:
                    pass


def _link_pch(pch_dir: Path, view: Path) -> Path:
    """The precompiled header under `view` (a hard link, or a copy across file systems): the container tier's
    programs run as other uids and cannot reach the cache under ~root."""
    target = view / pch_dir.name / "bits"
    gch = target / "stdc++.h.gch"
    if not gch.exists():
        target.mkdir(parents=True, exist_ok=True)
        for path in (target.parent, target):
            path.chmod(0o755)
        tmp = target / f".gch.{threading.get_ident()}"
        try:
            os.link(pch_dir / "bits" / "stdc++.h.gch", tmp)
        except OSError:
            shutil.copyfile(pch_dir / "bits" / "stdc++.h.gch", tmp)
            tmp.chmod(0o644)
        os.replace(tmp, gch)
    return target.parent


def _bwrap_reason(error: BaseException) -> str:
    """bubblewrap's own complaint in a start-up error (`bwrap: Creating new namespace failed: ...`)."""
    lines = [line for line in str(error).splitlines() if line.startswith("bwrap:")] or str(error).splitlines()[:1]
    return lines[0][:300] if lines else type(error).__name__


def _isolation_line(tier: str, mode: str, reason: str | None, landlock: int | None, seccomp: bool,
                    protected: list[str] | None = None) -> str:
    """One sentence naming the tier, what it does and how a program's resources are bounded, for a log's first line
    and Judge.info()."""
    filters = "seccomp" if seccomp else "NO seccomp filter"
    if tier == "bwrap":
        how = "as root" if mode == "root" else "in user namespaces"
        line = (f"judge isolation: bwrap ({how}; namespaces: no network, private /tmp and process table; a uid per "
                f"worker, rlimits, {filters})")
    elif tier == "container":
        files = (f"Landlock ABI {landlock} (files: the system and the program's own binary only)" if landlock else
                 f"NO Landlock on this kernel: {', '.join(protected)} closed to programs by their modes (checked "
                 "with canaries); any other world-readable file they can read, none they can open for writing"
                 if protected else
                 "NO Landlock on this kernel: programs can READ every world-readable file of the host "
                 "(programs_may_read_host_files=True) but open none for writing")
        line = (f"judge isolation: CONTAINER tier, no namespaces (a uid per worker, rlimits, {filters} without "
                f"network sockets, {files})")
    elif tier == "landlock":
        signals = ("signals and abstract sockets scoped to the run" if landlock and landlock >= 6 else
                   "no signals (Landlock before ABI 6 cannot scope them)")
        line = (f"judge isolation: LANDLOCK tier, no namespaces and no uid of their own: programs run as this user, "
                f"Landlock ABI {landlock} keeps them to the system's files and their own binary (nothing of your "
                f"home, the repository, the data or the caches), {filters} refuses new processes, ptrace, sockets "
                f"and namespaces, {signals}; rlimits; the judge's processes are not dumpable")
    else:
        return "judge isolation: NONE -- model-written programs run unisolated as this user"
    line += f"; accounting: {_accounting(mode, seccomp, landlock)}"
    return f"{line}; because {reason}" if reason else line


def _accounting(mode: str, seccomp: bool, landlock: int | None) -> str:
    """How one run's CPU time, memory and files are bounded, in words (see _server.py's docstring)."""
    if mode == "none":
        return "none (a program may start processes and write files as this user)"
    if not seccomp:
        return ("per process only: WITHOUT the seccomp filter a program can fork children that escape its CPU "
                "timer and memory limit")
    share = ("the CPU is shared fairly between workers (autogroups)" if _autogroups() else
             "NO autogroups: a program's threads compete with other workers' programs thread by thread, up to its "
             "CPU limit")
    return ("one process per program, no cgroup (fork and memfd_create refused; its threads share one CPU timer "
            "and one address-space limit), fresh memory per sample (a fork of a request-free zygote), no files "
            f"(programs create none; the compiler's build space is emptied after each compile), {share}")


def _autogroups() -> bool:
    try:
        with open("/proc/sys/kernel/sched_autogroup_enabled") as fh:
            return fh.read().strip() == "1"
    except OSError:
        return False


_ANNOUNCED: set[str] = set()


def _announce(line: str, loud: bool) -> None:
    """Logs the isolation line once per process; a tier other than bwrap also goes to stderr."""
    if line in _ANNOUNCED:
        return
    _ANNOUNCED.add(line)
    if loud:
        log.warning(line)
        if not line.startswith("judge isolation: NONE"):  # the none tier already printed its own warning
            print(f"WARNING: {line}", file=sys.stderr)
    else:
        log.info(line)


def require_isolation(isolation: str | None = None, *, python: str = DEFAULT_PYTHON) -> dict:
    """The start-up check for a launcher (the SageMaker entry point, on every host): starts a one-worker judge
    with `isolation` (default: $CODEFU_JUDGE_ISOLATION, else "auto"), judges a small Python program with it and
    returns its `info()` -- print `["isolation_line"]`, record `["isolation"]`. Raises SandboxUnavailableError,
    saying why, when neither the bwrap nor the container tier works here, and refuses "none": a training job must
    not fall back to running model-written code unisolated."""
    isolation = isolation or os.environ.get("CODEFU_JUDGE_ISOLATION") or "auto"
    if isolation == "none":
        raise SandboxUnavailableError("require_isolation: isolation 'none' (CODEFU_JUDGE_ISOLATION=none?) runs "
                                      "model-written code unisolated; a training job needs the bwrap or container "
                                      "tier: unset it or pass 'auto'")
    with Judge(workers=1, isolation=isolation, python=python) as judge:
        result = judge.run("python", "print(sum(map(int, input().split())))", [("2 3\n", "5\n")], 5.0, 256 << 20)
        if result.verdict is not Verdict.OK:
            detail = result.judge_error or (result.tests[0].note if result.tests else result.compile_output)
            raise SandboxUnavailableError(f"the judge started in the {judge.isolation} tier but could not run a "
                                          f"test program ({result.verdict.value}: {detail}); see the log above")
        return judge.info()


def _trim_compiler_output(text: str) -> str:
    text = text.replace("solution.cpp:", "").strip()
    if len(text) > COMPILE_OUTPUT_CHARS:
        text = text[:COMPILE_OUTPUT_CHARS] + "\n[... compiler output truncated]"
    return text or "compilation failed"


# ---------------------------------------------------------------------------------------------------------------
# the process-wide judge

_default_judge: Judge | None = None
_default_pid: int | None = None
_default_lock = threading.Lock()


def get_judge() -> Judge:
    """The process-wide judge that `compute_score` uses, started on first use.

    Configured by the environment: CODEFU_JUDGE_WORKERS (default: one per core) and CODEFU_JUDGE_ISOLATION
    ("auto", "bwrap", "container" or "none"). A forked child gets its own judge on first use; it never touches the
    parent's.
    """
    global _default_judge, _default_pid
    with _default_lock:
        if _default_judge is None or _default_pid != os.getpid() or _default_judge._closed:
            workers = os.environ.get("CODEFU_JUDGE_WORKERS")
            try:
                count = int(workers) if workers else None
            except ValueError:
                raise ValueError(f"CODEFU_JUDGE_WORKERS must be an integer, got {workers!r}") from None
            _default_judge = Judge(workers=count, isolation=os.environ.get("CODEFU_JUDGE_ISOLATION", "auto"))
            _default_pid = os.getpid()
        return _default_judge


def shutdown_default_judge() -> None:
    """Stops the process-wide judge (registered with atexit; safe to call any time)."""
    global _default_judge
    with _default_lock:
        judge, _default_judge = _default_judge, None
    if judge is not None:
        judge.close()


def _after_fork_in_child() -> None:
    global _default_judge, _default_lock
    _default_lock = threading.Lock()  # it may have been held by a thread that does not exist here
    for judge in list(_LIVE_JUDGES):
        judge._forget()
    _default_judge = None


def _close_all_at_exit() -> None:
    shutdown_default_judge()
    for judge in list(_LIVE_JUDGES):
        judge.close()


atexit.register(_close_all_at_exit)
os.register_at_fork(after_in_child=_after_fork_in_child)
