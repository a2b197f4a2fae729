"""CodeFu rewards for competitive programming: verl's custom reward function on top of the sandboxed judge.

    from codefu_helpers.reward import compute_score
    out = compute_score("codecontests", response_text, row["reward_model"]["ground_truth"])
    out["score"]      # the reward, always a float
    out["status"]     # accepted | failed | time_limit | compile_error | no_code | judge_error

The same function plugs into verl unchanged (its custom-reward signature):

    reward.custom_reward_function.path=pkg://codefu_helpers.reward
    reward.custom_reward_function.name=compute_score
    +reward.custom_reward_function.reward_kwargs.reward_mode=codefu_stage1

verl calls it once per sample, from several threads at a time: all calls share the process-wide judge, whose
workers run the samples concurrently. `compute_score_batch` (lists in, list out) is the batched form. This
project's trainer scores each sample the moment it is generated through `score_response`, which wraps a
`compute_score` (this one or a user's) into a `Scored` result and turns a crash of the reward machinery into a
judge error.

Reward modes (`reward_mode`):
    codefu_stage2 (default)  CodeFu-7B stage 2, linear: -1 no code, -0.5 compile error, 0 on a time-limit
                             verdict, else the share of *private* tests passed.
    codefu_stage1            stage 1: the same, over public + private tests, with the share raised to 1.5
                             (partial solutions earn less, so the policy is pushed towards full ones).
    binary                   all-or-nothing over public + private tests, as the AWS CodeFu sample does:
                             1 if every test passes, else 0 (no code, CE and TLE included).

A sample whose judging failed (the judge, not the program) gets score 0.0 with status "judge_error" and
judge_error=True: the trainer must drop it from the batch, never learn from it as a wrong answer.
Every result dict has the same keys with scalar values, which is what verl's reward managers need.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .sandbox import Judge, SampleResult, Submission, Verdict, get_judge
from .sandbox.results import LANGUAGE_ALIASES

NO_CODE_REWARD = -1.0
COMPILE_ERROR_REWARD = -0.5
TIME_LIMIT_REWARD = 0.0
STAGE1_EXPONENT = 1.5
REWARD_MODES = ("codefu_stage2", "codefu_stage1", "binary")
MODE_ALIASES = {"stage2": "codefu_stage2", "linear": "codefu_stage2", "stage1": "codefu_stage1",
                "codefu_stage2": "codefu_stage2", "codefu_stage1": "codefu_stage1", "binary": "binary"}
RESULT_KEYS = ("score", "status", "verdict", "passed", "total", "pass_ratio", "language", "reward_mode",
               "judge_error", "judge_error_message", "verdicts", "wall_seconds")

# ```lang ...\n code ``` : the info string may carry more words after the language (```cpp title="x")
_FENCE = re.compile(r"^[ \t]*```[ \t]*([^\s`]*)[^\n`]*\n(.*?)^[ \t]*```[ \t]*$", re.MULTILINE | re.DOTALL)
_CODE_TAG = re.compile(r"<code>(.*?)</code>", re.DOTALL | re.IGNORECASE)


def _guess_language(code: str) -> str:
    """For untagged blocks only: C++ if it looks like C++, else Python."""
    if re.search(r"^\s*#\s*include\b|\bint\s+main\s*\(|\bstd::|using\s+namespace\s+std", code, re.MULTILINE):
        return "cpp"
    return "python"


def extract_code(text: str, default_language: str | None = None) -> tuple[str, str] | None:
    """(language, code) of the program in a model response, or None when there is none.

    Takes the last fenced block tagged as C++ (```cpp, ```c++, ```cc, ```cxx) or Python (```python, ```py,
    ```python3); blocks in other languages (```text sample output after the code, ```java) are skipped.
    Without such a block it takes the last untagged fence, then the last <code>...</code>; their language is
    `default_language` (e.g. the language the prompt asked for) or, failing that, guessed from the code.
    A fence that is never closed (a truncated response) does not count.
    """
    if not isinstance(text, str):
        raise TypeError(f"the response must be a str, got {type(text).__name__}")
    text = text.replace("\r\n", "\n")
    tagged, untagged = None, None
    for match in _FENCE.finditer(text):
        tag, code = match.group(1).strip().lower(), match.group(2)
        if not code.strip():
            continue
        if tag in LANGUAGE_ALIASES:
            tagged = (LANGUAGE_ALIASES[tag], code)
        elif tag == "":
            untagged = code
    if tagged is not None:
        return tagged
    if untagged is None:
        tags = [m.group(1) for m in _CODE_TAG.finditer(text) if m.group(1).strip()]
        untagged = tags[-1] if tags else None
    if untagged is None:
        return None
    if default_language is not None:
        try:
            return LANGUAGE_ALIASES[str(default_language).strip().lower()], untagged
        except KeyError:
            raise ValueError(f"default_language {default_language!r} is not one of {sorted(LANGUAGE_ALIASES)}") \
                from None
    return _guess_language(untagged), untagged


# --- ground truth -------------------------------------------------------------------------------------------

def _seq(value, where: str) -> list:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) and not hasattr(value, "tolist"):
        raise ValueError(f"ground_truth {where} must be a list of strings, got {type(value).__name__}")
    return list(value.tolist() if hasattr(value, "tolist") else value)


def _tests(gt: Mapping, key: str) -> list[tuple[str, str]]:
    block = gt.get(key)
    if block is None:
        return []
    if not isinstance(block, Mapping) or "input" not in block or "output" not in block:
        raise ValueError(f"ground_truth[{key!r}] must be {{'input': [...], 'output': [...]}}, got {block!r:.200}")
    inputs, outputs = _seq(block["input"], f"[{key!r}]['input']"), _seq(block["output"], f"[{key!r}]['output']")
    if len(inputs) != len(outputs):
        raise ValueError(f"ground_truth[{key!r}] has {len(inputs)} inputs but {len(outputs)} outputs")
    return list(zip(inputs, outputs))


def parse_ground_truth(ground_truth) -> dict:
    """The data step's ground truth (a dict, or that dict as a JSON string) checked and normalised."""
    if isinstance(ground_truth, (str, bytes)):
        try:
            ground_truth = json.loads(ground_truth)
        except ValueError as exc:
            raise ValueError(f"ground_truth is a string but not JSON ({exc}): {ground_truth[:200]!r}") from None
    if not isinstance(ground_truth, Mapping):
        raise ValueError(f"ground_truth must be a dict or a JSON string of one, got {type(ground_truth).__name__}")
    missing = [k for k in ("private_tests", "time_limit", "memory_limit_bytes") if k not in ground_truth]
    if missing:
        raise ValueError(f"ground_truth lacks {missing}; it has {sorted(ground_truth)}")
    time_limit = ground_truth["time_limit"]
    try:
        time_limit = float(time_limit)
    except (TypeError, ValueError):
        raise ValueError(f"ground_truth['time_limit'] must be seconds as a number, got {time_limit!r}") from None
    if not math.isfinite(time_limit) or time_limit <= 0:
        raise ValueError(f"ground_truth['time_limit'] must be positive seconds, got {time_limit!r}")
    memory = ground_truth["memory_limit_bytes"]
    try:
        memory = int(memory)
    except (TypeError, ValueError):
        raise ValueError(f"ground_truth['memory_limit_bytes'] must be an int, got {memory!r}") from None
    return {"name": ground_truth.get("name", ""), "public_tests": _tests(ground_truth, "public_tests"),
            "private_tests": _tests(ground_truth, "private_tests"), "time_limit": time_limit,
            "memory_limit_bytes": memory, "float_tolerance": parse_float_tolerance(ground_truth.get("float_tolerance"))}


def parse_float_tolerance(value) -> float | None:
    """ground_truth['float_tolerance'] checked: None (absent or null: answers are compared exactly) or a number in
    [0, 1), the absolute-or-relative error the statement allows. NaN counts as null (pandas' missing float)."""
    if value is None:
        return None
    if isinstance(value, (bool, str, bytes)):
        raise ValueError(f"ground_truth['float_tolerance'] must be a number in [0, 1) or null, got {value!r}")
    try:
        tolerance = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"ground_truth['float_tolerance'] must be a number in [0, 1) or null, got {value!r}") \
            from None
    if math.isnan(tolerance):
        return None
    if not 0 <= tolerance < 1:
        raise ValueError(f"ground_truth['float_tolerance'] must be in [0, 1) (an error such as 1e-06) or null, "
                         f"got {value!r}")
    return tolerance


def _mode(reward_mode: str) -> str:
    try:
        return MODE_ALIASES[str(reward_mode).strip().lower()]
    except KeyError:
        raise ValueError(f"reward_mode {reward_mode!r} is not one of {REWARD_MODES}") from None


def tests_for_mode(gt: dict, mode: str) -> list[tuple[str, str]]:
    tests = gt["private_tests"] if mode == "codefu_stage2" else gt["public_tests"] + gt["private_tests"]
    if not tests:
        which = "private tests" if mode == "codefu_stage2" else "tests"
        raise ValueError(f"ground truth of problem {gt['name']!r} has no {which}: the data step should have "
                         f"dropped it")
    return tests


# --- scores -------------------------------------------------------------------------------------------------

def _result(score: float, status: str, mode: str, language: str = "", sample: SampleResult | None = None,
            total: int = 0) -> dict:
    out = {"score": float(score), "status": status, "verdict": "", "passed": 0, "total": total, "pass_ratio": 0.0,
           "language": language, "reward_mode": mode, "judge_error": False, "judge_error_message": "",
           "verdicts": "", "wall_seconds": 0.0}
    if sample is not None:
        out.update(verdict=sample.verdict.value, passed=sample.passed, total=sample.total,
                   pass_ratio=sample.pass_ratio, verdicts=",".join(v.value for v in sample.verdicts),
                   wall_seconds=round(sample.wall_seconds, 4))
        if sample.judge_error is not None:
            out.update(judge_error=True, judge_error_message=sample.judge_error[:2000])
    return out


def score_sample(sample: SampleResult, mode: str) -> dict:
    """The reward dict for a judged sample under `mode` (see the module docstring)."""
    mode = _mode(mode)
    if sample.verdict is Verdict.JUDGE_ERROR:
        return _result(0.0, "judge_error", mode, sample.language, sample)
    if sample.verdict is Verdict.CE:
        return _result(0.0 if mode == "binary" else COMPILE_ERROR_REWARD, "compile_error", mode, sample.language,
                       sample)
    if sample.any_tle:
        return _result(TIME_LIMIT_REWARD, "time_limit", mode, sample.language, sample)
    ratio = sample.pass_ratio
    status = "accepted" if sample.passed == sample.total else "failed"
    if mode == "binary":
        score = 1.0 if status == "accepted" else 0.0
    elif mode == "codefu_stage1":
        score = ratio ** STAGE1_EXPONENT
    else:
        score = ratio
    return _result(score, status, mode, sample.language, sample)


def _prepare(solution_str, ground_truth, extra_info, reward_mode, language, float_tolerance, timeout):
    mode = _mode(reward_mode)
    gt = parse_ground_truth(ground_truth)
    tests = tests_for_mode(gt, mode)
    default_language = language
    if default_language is None and isinstance(extra_info, Mapping):
        default_language = extra_info.get("language")  # the language the prompt asked for
    extracted = extract_code(solution_str, default_language)
    if extracted is None:
        return mode, None, _result(0.0 if mode == "binary" else NO_CODE_REWARD, "no_code", mode, "", None,
                                   len(tests))
    lang, code = extracted
    if float_tolerance is None:  # an explicit argument wins over what the data step read from the statement
        float_tolerance = gt["float_tolerance"]
    sub = Submission(lang, code, tuple(tests), gt["time_limit"], gt["memory_limit_bytes"], stop_at_first_tle=True,
                     stop_at_first_failure=(mode == "binary"), float_tolerance=float_tolerance, timeout=timeout)
    return mode, sub, None


def compute_score(data_source, solution_str, ground_truth, extra_info=None, *, reward_mode: str = "codefu_stage2",
                  timeout: float | None = None, judge: Judge | None = None, language: str | None = None,
                  float_tolerance: float | None = None, **kwargs) -> dict:
    """verl's custom reward function: judges the response's program on the problem's tests.

    data_source: the dataset name (any; kept for verl's signature). solution_str: the model's response.
    ground_truth: the data step's dict (or its JSON). extra_info: verl's extra_info; its "language" is the
    language assumed for an untagged code block. reward_mode: see the module docstring. timeout: seconds for
    the whole call (default: derived from the number of tests and the time limit). judge: a Judge to use
    instead of the process-wide one. float_tolerance: accept numbers within this absolute-or-relative error;
    None takes ground_truth's `float_tolerance` (what the statement allows; absent or null: exact tokens).
    Other keyword arguments that verl passes are accepted and ignored.
    """
    mode, sub, early = _prepare(solution_str, ground_truth, extra_info, reward_mode, language, float_tolerance,
                                timeout)
    if early is not None:
        return early
    judge = judge or get_judge()
    sample = judge.run(sub.language, sub.source, sub.tests, sub.time_limit, sub.memory_limit_bytes,
                       sub.stop_at_first_tle, stop_at_first_failure=sub.stop_at_first_failure,
                       float_tolerance=sub.float_tolerance, timeout=sub.timeout)
    return score_sample(sample, mode)


def compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos=None, *,
                        reward_mode: str = "codefu_stage2", judge: Judge | None = None, language: str | None = None,
                        float_tolerance: float | None = None, **kwargs) -> list[dict]:
    """The batched form: lists in, a list of result dicts out, every sample judged concurrently."""
    n = len(solution_strs)
    if len(ground_truths) != n:
        raise ValueError(f"{n} solution_strs but {len(ground_truths)} ground_truths")
    extra_infos = list(extra_infos) if extra_infos is not None else [None] * n
    if len(extra_infos) != n:
        raise ValueError(f"{n} solution_strs but {len(extra_infos)} extra_infos")
    results: list[dict | None] = [None] * n
    pending, modes = [], []
    for i in range(n):
        mode, sub, early = _prepare(solution_strs[i], ground_truths[i], extra_infos[i], reward_mode, language,
                                    float_tolerance, None)
        if early is not None:
            results[i] = early
        else:
            pending.append((i, sub))
            modes.append(mode)
    if pending:
        judge = judge or get_judge()
        samples = judge.run_many([sub for _, sub in pending])
        for (i, _), mode, sample in zip(pending, modes, samples):
            results[i] = score_sample(sample, mode)
    return results


# --- the trainer's view -------------------------------------------------------------------------------------

@dataclass
class Scored:
    score: float
    passed: bool           # every private test passed
    judge_error: bool      # judging failed: the sample is excluded from training
    status: str
    details: dict[str, Any]


def score_response(compute_score: Callable, text: str, row: dict, reward_mode: str) -> Scored:
    """A response to a verl row through `compute_score` (this module's, or a user's with its signature), as the
    trainer's judge pools call it; a crash of the reward machinery itself is a judge error, never a 0 reward."""
    try:
        out = compute_score(row["data_source"], text, row["reward_model"]["ground_truth"],
                            extra_info=row.get("extra_info"), reward_mode=reward_mode)
    except Exception as exc:  # noqa: BLE001 - any failure here is the judge's, not the sample's
        return Scored(0.0, False, True, "judge_error", {"error": f"{type(exc).__name__}: {exc}"})
    judge_error = bool(out.get("judge_error")) or out.get("status") == "judge_error"
    return Scored(float(out["score"]), out.get("status") == "accepted", judge_error, str(out.get("status", "")), out)


def overlong_penalty(length: int, max_length: int, buffer_len: int, factor: float = 1.0) -> float:
    """DAPO's soft overlong punishment (reward.overlong=soft), added to a response's reward: 0 for a response of at
    most max_length - buffer_len tokens, then linear in the tokens past that point, reaching -factor at max_length
    (the generation budget, which no response exceeds). The same formula as verl's DAPO reward manager
    (overlong_buffer: len, penalty_factor)."""
    free = max_length - buffer_len  # tokens a response may use without penalty
    return min(0.0, (free - length) / buffer_len * factor)
