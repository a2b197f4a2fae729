"""What goes into the judge and what comes out: `Submission`, `Verdict`, `TestResult`, `SampleResult`.

All of them are plain, picklable dataclasses (and a str Enum), so a submission can be shipped to a judge that
lives in another process or on another node (a Ray actor owning a `Judge`) and the result shipped back.
"""

from __future__ import annotations

import enum
import math
from dataclasses import asdict, dataclass, field

LANGUAGE_ALIASES = {
    "python": "python", "python3": "python", "py": "python", "py3": "python",
    "cpp": "cpp", "c++": "cpp", "cpp17": "cpp", "c++17": "cpp", "cxx": "cpp", "cc": "cpp",
}
LANGUAGES = ("python", "cpp")


class Verdict(str, enum.Enum):
    """Codeforces-style verdicts, plus JUDGE_ERROR for failures of the judge itself (never the program's)."""

    OK = "OK"
    WA = "WA"    # wrong answer (also: output limit exceeded)
    TLE = "TLE"  # CPU time over the limit, or killed by the wall-clock backstop
    MLE = "MLE"  # peak resident memory over the limit
    RE = "RE"    # non-zero exit status or killed by a signal
    CE = "CE"    # the source does not compile (C++) or does not parse (Python)
    JUDGE_ERROR = "JUDGE_ERROR"

    def __str__(self) -> str:
        return self.value


def normalize_language(language: str) -> str:
    """'python' or 'cpp' for any accepted spelling; a clear ValueError otherwise."""
    key = str(language).strip().lower()
    if key not in LANGUAGE_ALIASES:
        raise ValueError(f"unsupported language {language!r}: use one of {sorted(LANGUAGE_ALIASES)}")
    return LANGUAGE_ALIASES[key]


def _as_text(value, what: str) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, str):
        return value
    raise TypeError(f"{what} must be str or bytes, got {type(value).__name__}: {value!r:.80}")


@dataclass(frozen=True)
class Submission:
    """One sample to judge: a program and the stdin/stdout tests of its problem.

    time_limit is the problem's limit in seconds (the judge applies its per-language multiplier);
    stop_at_first_tle skips the remaining tests after a time-limit verdict (they count as not passed);
    stop_at_first_failure stops after any failing test (enough for all-or-nothing rewards);
    float_tolerance, when set, accepts numeric tokens within that absolute-or-relative error.
    """

    language: str
    source: str
    tests: tuple[tuple[str, str], ...]
    time_limit: float
    memory_limit_bytes: int
    stop_at_first_tle: bool = True
    stop_at_first_failure: bool = False
    float_tolerance: float | None = None
    timeout: float | None = None  # whole-sample budget in seconds, queueing included; None: derived

    def __post_init__(self):
        object.__setattr__(self, "language", normalize_language(self.language))
        object.__setattr__(self, "source", _as_text(self.source, "source"))
        tests = []
        for i, pair in enumerate(self.tests):
            try:
                test_input, expected = pair
            except (TypeError, ValueError):
                raise ValueError(f"test {i} must be an (input, expected_output) pair, got {pair!r:.120}") from None
            tests.append((_as_text(test_input, f"input of test {i}"), _as_text(expected, f"output of test {i}")))
        if not tests:
            raise ValueError("tests is empty: a submission needs at least one (input, expected_output) pair")
        object.__setattr__(self, "tests", tuple(tests))
        tl = self.time_limit
        if isinstance(tl, bool) or not isinstance(tl, (int, float)) or not math.isfinite(tl) or tl <= 0:
            raise ValueError(f"time_limit must be a positive number of seconds, got {tl!r}")
        object.__setattr__(self, "time_limit", float(tl))
        mem = self.memory_limit_bytes
        if isinstance(mem, bool) or not isinstance(mem, int) or mem < (4 << 20):
            raise ValueError(f"memory_limit_bytes must be an int of at least 4 MiB, got {mem!r}")
        if self.float_tolerance is not None and not (0 <= self.float_tolerance < 1):
            raise ValueError(f"float_tolerance must be in [0, 1) or None, got {self.float_tolerance!r}")
        if self.timeout is not None and not self.timeout > 0:
            raise ValueError(f"timeout must be positive seconds or None, got {self.timeout!r}")


@dataclass
class TestResult:
    """One test of a sample. cpu_seconds is what the TLE verdict uses; wall_seconds is informational."""

    __test__ = False  # not a pytest test class

    verdict: Verdict
    cpu_seconds: float | None = None
    wall_seconds: float = 0.0
    memory_bytes: int | None = None  # peak resident memory the program added
    exit_code: int | None = None
    signal: int | None = None
    note: str = ""  # why, in words: "wall-clock backstop", "output limit exceeded", ...
    stderr: str = ""  # tail of the program's stderr
    output: str = ""  # head of its stdout, for reading a wrong answer (the full output is compared, not kept)


@dataclass
class SampleResult:
    """The outcome of judging one sample.

    verdict is OK when every test passed, CE / JUDGE_ERROR when nothing could be judged, else the verdict of
    the first failing test (as Codeforces reports it). tests holds the tests that ran, in order; tests after
    a time-limit verdict (stop_at_first_tle) are not run and count as not passed. judge_error says what went
    wrong when the judge itself failed: such a sample must be excluded, never scored as a wrong answer.
    """

    verdict: Verdict
    passed: int
    total: int
    tests: list[TestResult] = field(default_factory=list)
    compile_output: str = ""
    wall_seconds: float = 0.0
    judge_error: str | None = None
    language: str = ""

    @property
    def verdicts(self) -> list[Verdict]:
        return [t.verdict for t in self.tests]

    @property
    def pass_ratio(self) -> float:
        return self.passed / self.total if self.total else 0.0

    @property
    def any_tle(self) -> bool:
        return any(t.verdict is Verdict.TLE for t in self.tests)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["verdict"] = self.verdict.value
        out["tests"] = [{**asdict(t), "verdict": t.verdict.value} for t in self.tests]
        return out

    @classmethod
    def judge_failure(cls, message: str, total: int, language: str = "", wall_seconds: float = 0.0):
        return cls(Verdict.JUDGE_ERROR, 0, total, [], "", wall_seconds, message, language)
