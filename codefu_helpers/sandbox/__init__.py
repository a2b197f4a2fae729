"""Sandboxed judge for model-written programs: Python 3 and C++17 on stdin/stdout tests, and function-call
harnesses (HumanEval, LiveCodeBench's LeetCode problems: the checks in a process of their own).

    from codefu_helpers.sandbox import Judge, Verdict
    with Judge() as judge:
        r = judge.run("cpp", source, [("1 2\\n", "3\\n")], time_limit=1.0, memory_limit_bytes=256 << 20)
        assert r.verdict is Verdict.OK

Programs run in bubblewrap sandboxes (no network, read-only system, private /tmp, non-root uid, rlimits,
seccomp, leftover processes killed after every test) served by pre-started fork servers, so a Python test costs
milliseconds. Where namespaces are refused (root in a Docker-like container, e.g. a SageMaker training job) the
"container" tier takes over: a uid per worker, rlimits, seccomp, Landlock, no namespaces; for an ordinary user
without namespaces (SageMaker Studio, Ubuntu 24.04) the "landlock" tier: Landlock and seccomp, no uid change.
`Judge.info()` names the tier, `python -m codefu_helpers.sandbox.doctor` says why not a better one, and a launcher
calls `require_isolation()` to fail early when no tier works. Verdicts: OK, WA, TLE, MLE,
RE, CE, and JUDGE_ERROR when the judge itself failed (never reported as a wrong answer). Start with `judge.py`
for the rules on time, memory and output, `isolation.py` for the tiers.

Standard library on the host; the sandbox side runs under the system's /usr/bin/python3 and also needs
libseccomp's Python bindings there (Debian's python3-seccomp: scripts/setup_system.sh installs it).
"""

from .checker import outputs_match
from .isolation import SandboxUnavailableError
from .judge import (OUTPUT_LIMIT_BYTES, TIME_MULTIPLIERS, WALL_FACTOR, WALL_SLACK_SECONDS, Judge, Limits, get_judge,
                    require_isolation, shutdown_default_judge)
from .results import SampleResult, Submission, TestResult, Verdict, normalize_language

__all__ = [
    "Judge", "Verdict", "SampleResult", "TestResult", "Submission", "Limits", "get_judge", "shutdown_default_judge",
    "require_isolation",
    "SandboxUnavailableError", "outputs_match", "normalize_language", "TIME_MULTIPLIERS", "WALL_FACTOR",
    "WALL_SLACK_SECONDS", "OUTPUT_LIMIT_BYTES",
]
