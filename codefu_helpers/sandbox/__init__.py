"""Sandboxed judge for model-written programs: Python 3 and C++17 on stdin/stdout tests, and self-checking
Python programs (HumanEval style).

    from codefu_helpers.sandbox import Judge, Verdict
    with Judge() as judge:
        r = judge.run("cpp", source, [("1 2\\n", "3\\n")], time_limit=1.0, memory_limit_bytes=256 << 20)
        assert r.verdict is Verdict.OK

Programs run in bubblewrap sandboxes (no network, read-only system, private /tmp, non-root uid, rlimits,
seccomp, a PID namespace per test that takes every leftover process down) served by pre-started fork servers,
so a Python test costs milliseconds. Verdicts: OK, WA, TLE, MLE, RE, CE, and JUDGE_ERROR when the judge itself
failed (never reported as a wrong answer). Start with `judge.py` for the rules on time, memory and output.

Pure standard library: the sandbox side runs under the system's /usr/bin/python3.
"""

from .checker import outputs_match
from .isolation import SandboxUnavailableError
from .judge import (OUTPUT_LIMIT_BYTES, TIME_MULTIPLIERS, WALL_FACTOR, WALL_SLACK_SECONDS, Judge, Limits, get_judge,
                    shutdown_default_judge)
from .results import SampleResult, Submission, TestResult, Verdict, normalize_language

__all__ = [
    "Judge", "Verdict", "SampleResult", "TestResult", "Submission", "Limits", "get_judge", "shutdown_default_judge",
    "SandboxUnavailableError", "outputs_match", "normalize_language", "TIME_MULTIPLIERS", "WALL_FACTOR",
    "WALL_SLACK_SECONDS", "OUTPUT_LIMIT_BYTES",
]
