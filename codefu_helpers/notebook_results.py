"""Each numbered notebook's results file: the one JSON its tests and the tutorial summary read.

A notebook ends with one call that turns the objects its cells made into `RUN_DIR/results/<notebook>.json` and prints
the file's `headline`, the one-line result `make tutorial` shows:

    from codefu_helpers.notebook_results import dataset_results
    results = dataset_results(run_dir, report=report, leaked=leaked, pass_rates=pass_rates)

The keyword arguments are named after the notebook's variables (its parameters in lower case: `seed=SEED`), so the
cell reads as a list of what the results hold. Building the dict has no side effect: what a cell must still do itself
(close the judge, close the trainer) stays in the cell. The readers of these files are tests/test_notebooks.py,
tests/test_launch.py, scripts/run_tutorial.py and `codefu_helpers.tutorial.execute_notebook`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .data import MALFORMED

RESULTS_DIR = "results"  # under RUN_DIR


def _number_or_text(value: Any) -> Any:
    """json's fallback for what it cannot write: a numpy or torch scalar as the number it holds (3, not "3"), anything
    else (a Path, a datetime) as its text."""
    if getattr(value, "shape", None) == () and hasattr(value, "item"):  # numpy scalars, 0-d arrays and tensors
        return value.item()
    return str(value)


def save_results(run_dir: str | Path, notebook: str, results: dict) -> dict:
    """Writes `results` to RUN_DIR/results/<notebook>.json, prints its headline and returns it."""
    results_dir = Path(run_dir) / RESULTS_DIR
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / f"{notebook}.json").write_text(json.dumps(results, indent=1, default=_number_or_text))
    print(results["headline"])
    return results


def dataset_results(run_dir: str | Path, *, report, leaked, pass_rates) -> dict:
    """Notebook 01: what `prepare_dataset` kept and dropped (`report`), the statements in both splits (`leaked`,
    empty), and the optional pass-rate filter's summary (`pass_rates`, None when it was skipped)."""
    results = {
        "headline": f"kept {report.kept}/{report.rows_read} problems (train {report.splits['train']}, "
                    f"test {report.splits['test']})",
        "rows_read": report.rows_read,
        "kept": report.kept,
        "dropped": report.drop_counts(),
        "malformed": [vars(d) for d in report.dropped if d.reason == MALFORMED],
        "tiers": report.tiers,
        "splits": report.splits,
        "files": report.files,
        "leaked_problems": len(leaked),
        "pass_rate": pass_rates.summary if pass_rates is not None else None,
    }
    return save_results(run_dir, "01_dataset_filtering", results)


def _first_column(escape_by_tier: dict, column: str) -> dict:
    """probe -> `column` of the first tier's escape battery (the probes and their classes are the same in every
    tier), {} when no tier ran."""
    return dict(next(iter(escape_by_tier.values()))[column].items()) if escape_by_tier else {}


def reward_validation_results(run_dir: str | Path, *, df, gold_pass_rate: float, as_intended_rate: float, confusion,
                              verdict_counts, reward_means, escape_by_tier: dict, unavailable: dict,
                              trivial_tests_per_s: float, validation_seconds: float, loop_seconds: dict,
                              load: float, judge_info: dict, figures_dir: str | Path) -> dict:
    """Notebook 02: the verdicts of every solution (`df` and its tables), the escape battery per isolation tier
    (`escape_by_tier`: tier -> frame indexed by probe), the throughput and what the judge ran with (`judge_info`,
    taken before the judge is closed; its compiler identity is left out)."""
    judge_info = {k: v for k, v in judge_info.items() if k != "cxx"}
    tiers = escape_by_tier.values()
    first_probes = next(iter(tiers)).index if escape_by_tier else []
    results = {
        "headline": f"gold accepted {gold_pass_rate:.0%}, {as_intended_rate:.0%} of {len(df)} verdicts as intended, "
                    f"{sum(int(rows['contained'].sum()) for rows in tiers)}/"
                    f"{sum(len(rows) for rows in tiers)} escape probes contained "
                    f"({', '.join(escape_by_tier) or 'no tier'}), "
                    f"{trivial_tests_per_s:.0f} trivial tests/s",
        "problems": int(df["problem"].nunique()),
        "solutions": len(df),
        "gold_pass_rate": gold_pass_rate,
        "as_intended_rate": as_intended_rate,
        "judge_errors": int((df["verdict"] == "JUDGE_ERROR").sum()),
        "confusion": {intended: row.to_dict() for intended, row in confusion.iterrows()},
        "verdict_counts": {lang: row.to_dict() for lang, row in verdict_counts.iterrows()},
        "reward_means": {kind: row.to_dict() for kind, row in reward_means.iterrows()},
        "escape": {probe: all(bool(rows.loc[probe, "contained"]) for rows in tiers) for probe in first_probes},
        "escape_by_tier": {tier: rows["contained"].astype(bool).to_dict() for tier, rows in escape_by_tier.items()},
        "escape_tiers_unavailable": unavailable,
        "all_contained": all(bool(rows["contained"].all()) for rows in tiers) if escape_by_tier else None,
        "escape_judge_errors": sum(int(rows["judge_errors"].sum()) for rows in tiers),
        "escape_classes": _first_column(escape_by_tier, "class"),
        "throughput": {"trivial_tests_per_s": round(trivial_tests_per_s, 1),
                       "validation_samples_per_s": round(len(df) / validation_seconds, 2),
                       "loop_seconds": {k: round(v, 3) for k, v in loop_seconds.items()}, "load_average": load},
        "judge": judge_info,
        "accounting": judge_info["accounting"],
        "escape_kinds": _first_column(escape_by_tier, "kind"),
        "figures": [str(Path(figures_dir) / f"02_{name}.png") for name in ("confusion", "verdicts", "rewards")],
    }
    return save_results(run_dir, "02_reward_validation", results)


def smoke_results(run_dir: str | Path, *, cfg, config_path: str | Path, device: str, seed: int, trainable: int,
                  training, train_problems: list[str], history: list[dict], eval_samples: int, eval_params,
                  before: dict, after: dict, gain: float, train_seconds: float, out_dir: str | Path,
                  figures_dir: str | Path, last_samples) -> dict:
    """Notebook 03: the run's settings, the pass rate on its training problems before and after GRPO (`before`,
    `after`: `evaluate.pass_rate`'s dicts) and every step's metrics (`history`, what `trainer.fit()` returned)."""
    out_dir, figures_dir = Path(out_dir), Path(figures_dir)
    results = {
        "headline": f"pass@1 on the {len(train_problems)} training problems {before['pass_rate']:.3f} -> "
                    f"{after['pass_rate']:.3f} ({gain:+.3f}) in {len(history)} steps ({cfg.model.path}, "
                    f"{Path(config_path).name}, {cfg.algorithm.adv_estimator})",
        "model": cfg.model.path,
        "config": Path(config_path).name,
        "device": device,
        "seed": seed,
        "adv_estimator": cfg.algorithm.adv_estimator,
        "lora_rank": cfg.model.lora_rank,
        "trainable_parameters": trainable,
        "start_model": training.start_model,
        "train_problems": train_problems,
        "steps": len(history),
        "eval_samples": eval_samples,
        "eval_temperature": eval_params.temperature,  # the training temperature: 05 says why its numbers differ
        "eval_top_p": eval_params.top_p,
        "before": before,
        "after": after,
        "gain": gain,
        "train_seconds": train_seconds,
        "seconds_per_step": sum(h["step_seconds"] for h in history) / len(history),
        "judge_errors": sum(h["judge_errors"] for h in history),
        "final_model": str(out_dir / "model"),
        "figures": [str(figures_dir / f"03_{name}.png") for name in ("grpo_curves", "before_after")],
        "samples_file": str(out_dir / "samples.jsonl"),
        "last_step_samples": len(last_samples),
        "history": history,
    }
    return save_results(run_dir, "03_grpo_smoke_test", results)


def launch_results(run_dir: str | Path, *, plan, request: dict, job_name: str | None, quota: dict | None,
                   overrides: list, findings: list[str], session: dict, status: dict | None, stopped: str | None,
                   fetched: str | Path | None, cleaned: dict | None, memory, instance_count: int, instance_type: str,
                   engine: str) -> dict:
    """Notebook 04: the rendered (or submitted) job (`plan`, `request`), its cost, memory plan and data findings, and
    what the cells after it did to the job they followed (`job_name`: status, stop, fetched model, clean-up)."""
    results = {
        "headline": (f"{'submitted' if plan.submitted else 'rendered'} {plan.job_name}: {instance_count} x "
                     f"{instance_type} ({plan.cost['gpus']} GPUs), engine {engine}, "
                     f"{len(request['InputDataConfig'])} channels, {plan.cost['per_hour']:.2f} USD/h at list price"),
        "submitted": plan.submitted, "job_name": plan.job_name, "followed_job": job_name, "quota": quota,
        "request": request, "command": plan.command,
        "cost": plan.cost, "blockers": plan.blockers, "verl_overrides": len(overrides), "run_name": plan.run_name,
        "uploads": [u["s3"] for u in plan.uploads], "model_input": plan.model_input, "data_findings": findings,
        "session_source": session["source"], "job_status": status, "stop": stopped,
        "fetched_model": str(fetched) if fetched else None, "cleanup": cleaned,
        "memory_plan": {"fits": memory.fits, "peak_gib": round(memory.peak / 2**30, 2), "peak_phase": memory.peak_phase,
                        "device_gib": round(memory.device_bytes / 2**30, 2)} if memory is not None else None,
    }
    return save_results(run_dir, "04_sagemaker_launch", results)


def _brief(ev) -> dict:
    """The parts of an Evaluation's summary that notebook 05's results keep."""
    return {key: ev.summary[key] for key in ("model", "pass_at_k", "n_at_k", "by_tier", "verdicts", "samples",
                                             "judge_errors", "timing")}


def _pass_at_1(ev) -> dict:
    """pass@1 of an Evaluation with its interval, the problems it covers and the samples that solved theirs."""
    block = ev.summary["pass_at_k"]["1"]
    return {"pass_at_1": block["value"], "ci": block["ci"], "problems": ev.summary["problems_evaluated"],
            "solved_samples": int(ev.samples["solved"].sum())}


def evaluation_results(run_dir: str | Path, *, base, trained, seen_base, seen_trained, comparison: dict,
                       seen_comparison: dict | None, base_model: str, trained_model: str, trained_source: str,
                       heldout_problems: list[str], train_problems: list[str], seen_problems: list, problems: list,
                       findings: dict, cfg, oracle_pass_at_1: float | None, eval_dir: str | Path,
                       mlflow_run_id: str | None, figures_dir: str | Path, solved) -> dict:
    """Notebook 05: both checkpoints on the held-out problems (`base`, `trained`, `comparison`) and on the seen ones
    (`seen_*`, None without a training record); `trained_source` is TRAINED_MODEL as given ("" for 03's model),
    `solved` the (set, tier) pairs with a solved problem (the per-tier figure is drawn only then), `cfg` the
    EvalConfig both were sampled with."""
    one = comparison["pass_at_k"]["1"]
    seen = {"base": _pass_at_1(seen_base), "trained": _pass_at_1(seen_trained)} if seen_comparison else None
    seen_text = (f"seen ({len(seen_problems)}): pass@1 {seen['base']['pass_at_1']:.3f} -> "
                 f"{seen['trained']['pass_at_1']:.3f}; " if seen else "")
    evaluations = [ev for ev in (base, trained, seen_base, seen_trained) if ev is not None]
    eval_dir, figures_dir = Path(eval_dir), Path(figures_dir)
    results = {
        "headline": seen_text + f"held-out ({comparison['problems']}): pass@1 {one['base']:.3f} -> "
                                f"{one['trained']:.3f} (difference {one['diff']:+.3f}, 95% CI "
                                f"[{one['diff_ci'][0]:+.3f}, {one['diff_ci'][1]:+.3f}])",
        "base_model": base_model, "trained_model": trained_model, "trained_source": trained_source or trained_model,
        "trained_is_base": trained_model == base_model,
        "heldout_problems": heldout_problems, "train_problems": train_problems,
        "seen": seen, "heldout": {"base": _pass_at_1(base), "trained": _pass_at_1(trained)}, "findings": findings,
        "problems": len(problems), "n_samples": cfg.n_samples, "ks": list(cfg.ks), "oracle_pass_at_1": oracle_pass_at_1,
        "base": _brief(base), "trained": _brief(trained), "comparison": comparison["pass_at_k"],
        "seen_comparison": seen_comparison["pass_at_k"] if seen_comparison else None,
        "judge_errors": sum(ev.summary["judge_errors"] for ev in evaluations),
        "files": {name: str(eval_dir / name / "samples.parquet") for name in ("base", "trained")},
        "mlflow_run_id": mlflow_run_id,
        "figures": [str(figures_dir / f"05_{name}.png") for name in  # the ones this run drew
                    ("seen_vs_heldout", *(["pass_at_k_by_tier"] if solved else []), "verdicts", "length_vs_success")],
    }
    return save_results(run_dir, "05_evaluation", results)
