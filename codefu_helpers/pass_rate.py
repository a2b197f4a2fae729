"""Difficulty from the model: keep the training problems a model solves sometimes, drop those it always or never solves.

    python -m codefu_helpers.data filter-by-pass-rate --dataset data/processed/train.parquet \
        --model Qwen/Qwen2.5-Coder-7B-Instruct --n 8 --keep 0.1 0.9 --output-dir data/by_pass_rate --backend vllm

    from codefu_helpers.pass_rate import filter_by_pass_rate
    report = filter_by_pass_rate("runs/notebooks/data/train.parquet", "runs/notebooks/data/by_pass_rate",
                                 model="tiny://qwen2", n=2, keep=(0.1, 0.9))
    print(report.describe())

Key ideas
- GRPO's advantage is a sample's reward minus its group's mean: when all n samples of a problem pass, or all fail,
  every advantage is 0 and the step learns nothing from that problem (it only pays for generating and judging).
  Rating tiers guess difficulty; the pass rate of the model about to be trained measures it. On the hard tiers a
  small model solves most problems never; after some training it solves the easy ones always.
- A problem's pass rate is solved / valid samples, drawn at the training sampler's settings by default (temperature
  and top-p of `RolloutConfig`: the band is about what GRPO will sample). With n samples the rate is a multiple of
  1/n: n=8 and keep (0.1, 0.9) keep the problems solved 1 to 7 times.
- Decisions: "kept" when lo <= rate <= hi (both ends inclusive), "too easy" above hi, "too hard" below lo, and
  "undetermined" when no sample could be judged. A judge failure is never a wrong answer: undetermined problems are
  kept (there is no evidence to drop them) and counted loudly; when more than half are undetermined the judge is
  failing, and the run stops before writing a filtered split.
- Sampling and judging are `codefu_helpers.evaluate`'s (the path of notebook 05 and the trainer's validation), so a
  pass rate here is the pass@1 an evaluation would report on the problem. `data.curriculum` does a cheaper version
  online, during training; this is the offline filter, run once before.

Writes into the output directory: the kept rows under the input's file name (the input's schema, rows unchanged, in
input order), `pass_rates.csv` (one row per problem), `summary.json`, and the evaluation in `evaluation/`
(samples.parquet: every sample with its verdict; summary.json).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import RolloutConfig
from .data import VERL_SCHEMA, read_verl_parquet
from .eval_datasets import problem_from_verl_row
from .evaluate import SAMPLES_FILE, SMOLLM2_URI, EvalConfig, Evaluation, problem_table, run_evaluation

PROG = "python -m codefu_helpers.data filter-by-pass-rate"
DECISIONS = ("kept", "too easy", "too hard", "undetermined")
KEPT = ("kept", "undetermined")  # the decisions whose rows go to the filtered split
PASS_RATES_FILE = "pass_rates.csv"
SUMMARY_FILE = "summary.json"
EVALUATION_DIR = "evaluation"
TABLE_COLUMNS = ["name", "tier", "rating", "n_valid", "solved", "pass_rate", "judge_errors", "decision"]
DOCTOR = "python -m codefu_helpers.sandbox.doctor"


@dataclass
class PassRateReport:
    """What `filter_by_pass_rate` decided and wrote."""

    table: Any                # pandas.DataFrame, one row per problem (TABLE_COLUMNS), in the input's order
    summary: dict             # what summary.json holds
    evaluation: Evaluation    # every sample, as `codefu_helpers.evaluate` judged it
    files: dict[str, str]     # what was written: kept, pass_rates, summary, evaluation

    @property
    def counts(self) -> dict[str, int]:
        return self.summary["decisions"]

    def describe(self) -> str:
        lo, hi = self.summary["band"]
        lines = [f"{self.summary['problems']} problems, {self.summary['n']} samples each, band [{lo}, {hi}]: "
                 + ", ".join(f"{decision} {count}" for decision, count in self.counts.items())]
        if self.counts["undetermined"]:
            lines.append(f"UNDETERMINED: {self.counts['undetermined']} problems had no valid sample (judge errors) "
                         f"and were kept: {self.summary['undetermined_problems'][:5]}")
        lines += [f"wrote {what}: {path}" for what, path in self.files.items()]
        return "\n".join(lines)


def check_band(keep) -> tuple[float, float]:
    """(lo, hi) as floats, refused unless 0 <= lo <= hi <= 1."""
    try:
        lo, hi = (float(v) for v in keep)
    except (TypeError, ValueError):
        raise ValueError(f"keep={keep!r} must be two numbers (lo, hi), e.g. keep=(0.1, 0.9)") from None
    if not 0 <= lo <= hi <= 1:  # also false for NaN
        raise ValueError(f"keep=({lo}, {hi}): need 0 <= lo <= hi <= 1, e.g. (0.1, 0.9) keeps the problems solved "
                         "sometimes, neither never nor always")
    return lo, hi


def decide(rate: float, lo: float, hi: float) -> str:
    """The decision for one problem's pass rate (NaN: no valid sample)."""
    if math.isnan(rate):
        return "undetermined"
    return "too easy" if rate > hi else "too hard" if rate < lo else "kept"


def pass_rate_table(samples, problems, keep):
    """One row per problem of `problems` (EvalProblems, in their order): valid samples, solved, pass rate, judge
    errors and the decision for the band `keep`. Counts come from `evaluate.problem_table`; a problem without any
    sample (skipped) has n_valid 0 and is undetermined."""
    import pandas as pd

    lo, hi = check_band(keep)
    counts = problem_table(samples).set_index("problem_id")
    rows = []
    for p in problems:
        found = p.problem_id in counts.index
        n, solved, errors = ((int(counts.at[p.problem_id, c]) for c in ("n", "correct", "judge_errors")) if found
                             else (0, 0, 0))
        rate = solved / n if n else math.nan
        rows.append({"name": p.name, "tier": p.tier, "rating": p.rating if p.rating is not None else -1,
                     "n_valid": n, "solved": solved, "pass_rate": rate, "judge_errors": errors,
                     "decision": decide(rate, lo, hi)})
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def check_judge(table, samples_file: str | Path | None = None) -> None:
    """Raises when more than half of the problems are undetermined: the judge is failing, not the model."""
    undetermined = table[table["decision"] == "undetermined"]
    if len(undetermined) * 2 <= len(table):
        return
    where = f" and read the judge's messages in {samples_file} (column judge_message)" if samples_file else ""
    raise RuntimeError(
        f"{len(undetermined)} of {len(table)} problems have no valid sample ({int(table['judge_errors'].sum())} "
        f"judge errors): the judge is failing, not the model, and no filtered split was written. Diagnose the "
        f"sandbox with `{DOCTOR}` (`make doctor`){where}")


def check_inputs(dataset: str | Path, output_dir: str | Path, n: int, keep) -> tuple[Path, Path]:
    """Refuses bad inputs before anything loads: the band, n, the dataset (a verl parquet), and an output file that
    would overwrite the input. Returns (dataset, output parquet)."""
    import pyarrow.parquet as pq

    check_band(keep)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n={n!r} must be an int >= 1: the samples per problem (8 is a usual choice)")
    dataset = Path(dataset)
    if not dataset.is_file():
        raise FileNotFoundError(f"dataset {dataset} does not exist: pass the train.parquet that "
                                "`python -m codefu_helpers.data --dataset data/sample --output-dir DIR` writes")
    try:
        columns = pq.read_schema(dataset).names
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several kinds for a file that is not parquet
        raise ValueError(f"dataset {dataset} is not a parquet file ({type(exc).__name__}: {exc}): pass the "
                         "train.parquet that `python -m codefu_helpers.data` writes") from None
    missing = [name for name in VERL_SCHEMA.names if name not in columns]
    if missing:
        raise ValueError(f"dataset {dataset} is not a verl parquet: it lacks columns {missing} (it has {columns}). "
                         "Raw CodeContests rows go through `python -m codefu_helpers.data` first; pass its "
                         "train.parquet")
    output = Path(output_dir) / dataset.name
    if output.resolve() == dataset.resolve():
        raise ValueError(f"output_dir={output_dir} would overwrite the input {dataset} with the filtered split: "
                         "pick another folder, e.g. data/by_pass_rate")
    return dataset, output


def sampling_config(**changes) -> EvalConfig:
    """An EvalConfig at the training sampler's temperature and top-p (`RolloutConfig`'s defaults, those of the
    shipped configs), pass@1 only; `changes` set other fields (max_new_tokens=256). The band is about what GRPO
    will sample: at a lower temperature the samples are more alike, and more problems look always or never solved."""
    training = RolloutConfig()
    return dataclasses.replace(EvalConfig(ks=(1,), temperature=training.temperature, top_p=training.top_p),
                               **changes)


def filter_by_pass_rate(dataset: str | Path, output_dir: str | Path, *, model: str | None = None, n: int = 8,
                        keep=(0.1, 0.9), cfg: EvalConfig | None = None, backend: str = "hf", device: str = "auto",
                        engine=None, judge=None, progress: bool = True,
                        max_problems: int | None = None) -> PassRateReport:
    """Samples `model` (or `engine`, a RolloutEngine) n times on each problem of `dataset` (a verl parquet written by
    `python -m codefu_helpers.data`), judges the samples, and writes the problems whose pass rate lies in `keep`
    (plus the undetermined ones) to `output_dir` with the input's schema. `cfg`: sampling settings (an EvalConfig;
    its n_samples is replaced by n; default `sampling_config()`: the training sampler's temperature and top-p).
    max_problems: only the first rows of the dataset (the output then holds only those)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    dataset, output = check_inputs(dataset, output_dir, n, keep)
    lo, hi = check_band(keep)
    cfg = dataclasses.replace(cfg or sampling_config(), n_samples=n).validate()
    if max_problems is not None and max_problems < 1:
        raise ValueError(f"max_problems={max_problems} must be >= 1, or None for every problem of the dataset")
    if model is None and engine is None:
        raise ValueError(f"filter_by_pass_rate needs a model (an HF id, a local directory, tiny://qwen2 or "
                         f"{SMOLLM2_URI}) or an engine")
    rows = read_verl_parquet(dataset)[:max_problems]
    problems = [problem_from_verl_row(row) for row in rows]
    repeated = sorted(name for name, count in Counter(p.problem_id for p in problems).items() if count > 1)
    if repeated:
        raise ValueError(f"dataset {dataset} holds problems {repeated[:5]} more than once: a pass rate is per problem "
                         "name; write the split again with `python -m codefu_helpers.data` (it deduplicates)")

    out = Path(output_dir)
    for stale in (output, out / PASS_RATES_FILE, out / SUMMARY_FILE):  # an earlier run's: never left looking current
        stale.unlink(missing_ok=True)
    evaluation = run_evaluation(problems, model=model, cfg=cfg, output_dir=out / EVALUATION_DIR, device=device,
                                judge=judge, progress=progress, engine=engine, backend=backend)
    table = pass_rate_table(evaluation.samples, problems, (lo, hi))
    check_judge(table, out / EVALUATION_DIR / SAMPLES_FILE)

    kept = set(table.index[table["decision"].isin(KEPT)])
    pq.write_table(pa.Table.from_pylist([row for i, row in enumerate(rows) if i in kept],
                                        schema=pq.read_schema(dataset)), output, compression="zstd")
    table.to_csv(out / PASS_RATES_FILE, index=False)
    files = {"kept": str(output), "pass_rates": str(out / PASS_RATES_FILE), "summary": str(out / SUMMARY_FILE),
             "evaluation": str(out / EVALUATION_DIR)}
    counts = table["decision"].value_counts()
    summary = {
        "model": str(model) if model is not None else type(engine).__name__, "n": n, "band": [lo, hi],
        "sampling": {"temperature": cfg.temperature, "top_p": cfg.top_p, "max_new_tokens": cfg.max_new_tokens,
                     "seed": cfg.seed, "backend": backend if engine is None else type(engine).__name__},
        "problems": len(table), "decisions": {decision: int(counts.get(decision, 0)) for decision in DECISIONS},
        "undetermined_problems": table.loc[table["decision"] == "undetermined", "name"].tolist(),
        "samples": int(evaluation.summary["samples"]), "judge_errors": int(evaluation.summary["judge_errors"]),
        "input": str(dataset), "output": str(output), "files": files,
    }
    (out / SUMMARY_FILE).write_text(json.dumps(summary, indent=1))
    return PassRateReport(table, summary, evaluation, files)


def main(argv: list[str] | None = None) -> int:
    import argparse

    training = RolloutConfig()
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0].replace("\n", " "))
    parser.add_argument("--dataset", required=True, help="a verl parquet written by python -m codefu_helpers.data "
                                                         "(its train.parquet)")
    parser.add_argument("--model", required=True, help="HF id, local directory, s3://bucket/prefix/ (downloaded), "
                                                       "tiny://qwen2 or " + SMOLLM2_URI)
    parser.add_argument("--n", type=int, default=8, help="samples per problem (the pass rate is a multiple of 1/n)")
    parser.add_argument("--keep", type=float, nargs=2, required=True, metavar=("LO", "HI"),
                        help="keep the problems with LO <= pass rate <= HI, e.g. 0.1 0.9")
    parser.add_argument("--output-dir", required=True, help="where the kept rows (same file name as the input), "
                                                            "pass_rates.csv, summary.json and evaluation/ go")
    parser.add_argument("--backend", default="hf", choices=("hf", "vllm"),
                        help="generation engine: hf (transformers generate) or vllm")
    parser.add_argument("--max-new-tokens", type=int, default=1024)
    parser.add_argument("--temperature", type=float, default=training.temperature,
                        help=f"default {training.temperature}: the training temperature of the shipped configs, "
                             "since the band is about what GRPO will sample")
    parser.add_argument("--top-p", type=float, default=training.top_p,
                        help=f"default {training.top_p}, the shipped configs' too")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=16, help="sequences generated at once")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--max-problems", type=int, default=None, help="only the first rows of the dataset")
    parser.add_argument("--torch-threads", type=int, default=None,
                        help="CPU generation threads (default: half the cores; the judge uses the rest)")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    try:
        check_inputs(args.dataset, args.output_dir, args.n, args.keep)
    except (ValueError, FileNotFoundError) as exc:
        parser.error(str(exc))

    cfg = sampling_config(max_new_tokens=args.max_new_tokens, temperature=args.temperature, top_p=args.top_p,
                          seed=args.seed, batch_size=args.batch_size, torch_threads=args.torch_threads)
    report = filter_by_pass_rate(args.dataset, args.output_dir, model=args.model, n=args.n, keep=args.keep, cfg=cfg,
                                 backend=args.backend, device=args.device, progress=not args.no_progress,
                                 max_problems=args.max_problems)
    print(report.describe())
    return 0


__all__ = ["PassRateReport", "filter_by_pass_rate", "sampling_config", "pass_rate_table", "check_band", "check_inputs",
           "check_judge", "decide", "DECISIONS", "main"]
