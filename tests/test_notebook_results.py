"""Each notebook's results file, written by `codefu_helpers.notebook_results` (unit tier, about ten seconds).

Every test feeds a helper the objects its notebook has (real package objects where they are cheap: a prepared
dataset, the judge's info, oracle evaluations; small real dataclasses and frames otherwise) and checks that the file
is byte for byte what the notebook's hand-written cell wrote: the dict below each call is that cell's code, kept here
as the reference.
"""

import dataclasses
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from codefu_helpers import data
from codefu_helpers.notebook_results import (dataset_results, evaluation_results, launch_results,
                                             reward_validation_results, save_results, smoke_results)

ROOT = Path(__file__).resolve().parent.parent


def written(run_dir: Path, notebook: str) -> str:
    return (run_dir / "results" / f"{notebook}.json").read_text()


def test_save_results_writes_numbers_as_numbers_and_anything_else_as_text(tmp_path, capsys):
    import torch

    results = {"headline": "one line", "int": np.int64(3), "float": np.float32(0.5), "flag": np.bool_(True),
               "tensor": torch.tensor(2.5), "path": tmp_path / "model", "nan": float("nan")}
    assert save_results(tmp_path, "00_probe", results) is results
    assert capsys.readouterr().out == "one line\n"
    text = written(tmp_path, "00_probe")
    assert json.loads(text) == {"headline": "one line", "int": 3, "float": 0.5, "flag": True, "tensor": 2.5,
                                "path": str(tmp_path / "model"), "nan": pytest.approx(float("nan"), nan_ok=True)}
    assert '"int": 3,' in text and '"flag": true,' in text and text.startswith("{\n \"headline\"")


# ------------------------------------------------------------------------------------------------ 01


@pytest.mark.parametrize("with_pass_rates", [False, True])
def test_dataset_results(tmp_path, capsys, with_pass_rates):
    from codefu_helpers.pass_rate import PassRateReport

    raw = tmp_path / "raw"
    raw.mkdir()
    sample = (ROOT / "data" / "sample" / "code_contests_sample.jsonl").read_text()
    (raw / "rows.jsonl").write_text(sample + json.dumps({"name": "a row with nothing else"}) + "\n")
    report = data.prepare_dataset(raw, tmp_path / "data", data.FilterConfig(language="python", seed=0))
    assert any(d.reason == data.MALFORMED for d in report.dropped)  # the malformed list is not empty
    leaked = set()
    pass_rates = PassRateReport(pd.DataFrame(), {"model": "tiny://qwen2", "n": 2, "band": [0.1, 0.9]}, None,
                                {"kept": str(tmp_path / "kept.parquet")}) if with_pass_rates else None

    results = dataset_results(tmp_path, report=report, leaked=leaked, pass_rates=pass_rates)

    expected = {  # notebook 01's cell
        "headline": f"kept {report.kept}/{report.rows_read} problems (train {report.splits['train']}, test {report.splits['test']})",
        "rows_read": report.rows_read,
        "kept": report.kept,
        "dropped": report.drop_counts(),
        "malformed": [vars(d) for d in report.dropped if d.reason == data.MALFORMED],
        "tiers": report.tiers,
        "splits": report.splits,
        "files": report.files,
        "leaked_problems": len(leaked),
        "pass_rate": pass_rates.summary if pass_rates is not None else None,
    }
    assert results == expected
    assert written(tmp_path, "01_dataset_filtering") == json.dumps(expected, indent=1)
    assert capsys.readouterr().out.endswith(expected["headline"] + "\n")


# ------------------------------------------------------------------------------------------------ 02


@pytest.fixture(scope="module")
def judge():
    from codefu_helpers.sandbox import get_judge

    return get_judge()


def escape_rows(contained: dict[str, bool]) -> pd.DataFrame:
    """One tier's escape battery as `run_escape_probes` returns it, indexed by probe as notebook 02 keeps it."""
    return pd.DataFrame([{"probe": probe, "kind": "escape" if probe.startswith("net") else "integrity",
                          "class": "escape" if probe.startswith("net") else "harness checks", "language": "python",
                          "tries": 1, "verdict": "RE" if ok else "OK", "contained": ok, "honest_after": True,
                          "evidence": "", "seconds": 0.1, "judge_error": None, "judge_errors": int(not ok)}
                         for probe, ok in contained.items()]).set_index("probe")


@pytest.mark.parametrize("tiers", ["two tiers", "none"])
def test_reward_validation_results(tmp_path, capsys, judge, tiers):
    from codefu_helpers.reward import REWARD_MODES

    df = pd.DataFrame([{"problem": problem, "kind": kind, "language": language, "intended": intended,
                        "verdict": verdict, "passed": 1, "total": 2, "as_intended": intended == verdict,
                        **{f"reward_{mode}": reward for mode in REWARD_MODES}}
                       for problem, kind, language, intended, verdict, reward in [
                           ("a", "gold", "python", "OK", "OK", 1.0), ("a", "incorrect", "cpp", "WA", "WA", 0.5),
                           ("b", "gold", "cpp", "OK", "OK", 1.0), ("b", "incorrect", "python", "TLE", "JUDGE_ERROR", 0.0)]])
    confusion = pd.crosstab(df["intended"], df["verdict"])  # the notebook's tables of df
    gold = df[df["kind"] == "gold"]
    gold_pass_rate = float((gold["verdict"] == "OK").mean())
    as_intended_rate = float(df["as_intended"].mean())
    verdict_counts = pd.crosstab(df["language"], df["verdict"])
    reward_means = df.groupby("kind")[[f"reward_{m}" for m in REWARD_MODES]].mean().round(3)
    if tiers == "none":
        escape_by_tier, unavailable = {}, {"container": "the container tier needs root"}
    else:
        escape_by_tier = {"bwrap": escape_rows({"net_connect": True, "sum_eq": True}),
                          "container": escape_rows({"net_connect": True, "sum_eq": False})}
        unavailable = {}
    trivial_tests_per_s, validation_seconds, loop_seconds = 1234.5678, 3.21, {"python": 1.0234, "cpp": 1.00049}
    load = os.getloadavg()[0]
    judge_info = judge.info()
    figures_dir = tmp_path / "figures"

    results = reward_validation_results(
        tmp_path, df=df, gold_pass_rate=gold_pass_rate, as_intended_rate=as_intended_rate, confusion=confusion,
        verdict_counts=verdict_counts, reward_means=reward_means, escape_by_tier=escape_by_tier,
        unavailable=unavailable, trivial_tests_per_s=trivial_tests_per_s, validation_seconds=validation_seconds,
        loop_seconds=loop_seconds, load=load, judge_info=judge_info, figures_dir=figures_dir)

    judge_info = {k: v for k, v in judge.info().items() if k != "cxx"}  # notebook 02's cell
    expected = {
        "headline": f"gold accepted {gold_pass_rate:.0%}, {as_intended_rate:.0%} of {len(df)} verdicts as intended, "
                    f"{sum(int(rows['contained'].sum()) for rows in escape_by_tier.values())}/"
                    f"{sum(len(rows) for rows in escape_by_tier.values())} escape probes contained "
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
        "escape": {probe: all(bool(rows.loc[probe, "contained"]) for rows in escape_by_tier.values())
                   for probe in (next(iter(escape_by_tier.values())).index if escape_by_tier else [])},
        "escape_by_tier": {tier: rows["contained"].astype(bool).to_dict() for tier, rows in escape_by_tier.items()},
        "escape_tiers_unavailable": unavailable,
        "all_contained": all(bool(rows["contained"].all()) for rows in escape_by_tier.values()) if escape_by_tier else None,
        "escape_judge_errors": sum(int(rows["judge_errors"].sum()) for rows in escape_by_tier.values()),
        "escape_classes": {probe: cls for probe, cls in
                           (next(iter(escape_by_tier.values()))["class"].items() if escape_by_tier else [])},
        "throughput": {"trivial_tests_per_s": round(trivial_tests_per_s, 1),
                       "validation_samples_per_s": round(len(df) / validation_seconds, 2),
                       "loop_seconds": {k: round(v, 3) for k, v in loop_seconds.items()}, "load_average": load},
        "judge": judge_info,
        "accounting": judge_info["accounting"],
        "escape_kinds": {probe: kind for probe, kind in
                         (next(iter(escape_by_tier.values()))["kind"].items() if escape_by_tier else [])},
        "figures": [str(figures_dir / f"02_{name}.png") for name in ("confusion", "verdicts", "rewards")],
    }
    assert results == expected
    assert written(tmp_path, "02_reward_validation") == json.dumps(expected, indent=1)
    assert capsys.readouterr().out.endswith(expected["headline"] + "\n")
    if tiers != "none":  # the case worth reading twice: a probe one tier did not contain
        assert results["escape"] == {"net_connect": True, "sum_eq": False} and results["all_contained"] is False
        assert "3/4 escape probes contained (bwrap, container)" in results["headline"]


# ------------------------------------------------------------------------------------------------ 03


def test_smoke_results(tmp_path, capsys):
    from codefu_helpers.config import ExperimentConfig
    from codefu_helpers.trainer import TrainingData, sampling_params

    SEED = 3
    device = "cpu"
    config_path = ROOT / "configs" / "cpu_learn.yaml"
    cfg = ExperimentConfig.from_yaml(config_path)
    out_dir, figures_dir = tmp_path / "grpo", tmp_path / "figures"
    training = TrainingData(rows=[], val_rows=None, start_model=str(tmp_path / "warm-0123"))
    train_problems = ["9001_A. Candy Split", "9003_A. Back to the Start"]
    trainable = 2_361_600
    eval_samples = 4
    eval_params = sampling_params(cfg, seed=SEED + 12345)
    # a float32 metric: the cell wrote it with default=float, the helper as the number it holds, the same text
    history = [{"step": 1, "reward_mean": 0.25, "step_seconds": 2.5, "judge_errors": 0, "kl": np.float32(0.125)},
               {"step": 2, "reward_mean": 0.5, "step_seconds": 3.25, "judge_errors": 1, "kl": 0.0625}]
    before = {"pass_rate": 0.25, "problems": 2, "samples": 8, "judge_errors": 0, "solved_samples": 2,
              "by_problem": {train_problems[0]: 0.5, train_problems[1]: 0.0}}
    after = {**before, "pass_rate": 0.625, "solved_samples": 5, "by_problem": {train_problems[0]: 1.0, train_problems[1]: 0.25}}
    gain = after["pass_rate"] - before["pass_rate"]
    train_seconds = 12.5
    last_samples = pd.DataFrame({"step": [2] * 3})

    results = smoke_results(
        tmp_path, cfg=cfg, config_path=config_path, device=device, seed=SEED, trainable=trainable, training=training,
        train_problems=train_problems, history=history, eval_samples=eval_samples, eval_params=eval_params,
        before=before, after=after, gain=gain, train_seconds=train_seconds, out_dir=out_dir, figures_dir=figures_dir,
        last_samples=last_samples)

    expected = {  # notebook 03's cell
        "headline": f"pass@1 on the {len(train_problems)} training problems {before['pass_rate']:.3f} -> {after['pass_rate']:.3f} ({gain:+.3f}) in {len(history)} steps ({cfg.model.path}, {config_path.name}, {cfg.algorithm.adv_estimator})",
        "model": cfg.model.path,
        "config": config_path.name,
        "device": device,
        "seed": SEED,
        "adv_estimator": cfg.algorithm.adv_estimator,
        "lora_rank": cfg.model.lora_rank,
        "trainable_parameters": trainable,
        "start_model": training.start_model,
        "train_problems": train_problems,
        "steps": len(history),
        "eval_samples": eval_samples,
        "eval_temperature": eval_params.temperature,
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
    assert results == expected
    assert written(tmp_path, "03_grpo_smoke_test") == json.dumps(expected, indent=1, default=float)
    assert capsys.readouterr().out == expected["headline"] + "\n"
    assert "0.250 -> 0.625 (+0.375) in 2 steps (tiny://qwen2, cpu_learn.yaml, grpo)" in results["headline"]


# ------------------------------------------------------------------------------------------------ 04


@pytest.mark.parametrize("followed", [False, True])
def test_launch_results(tmp_path, capsys, followed):
    from codefu_helpers.config import ExperimentConfig
    from codefu_helpers.launch.instances import estimate_cost
    from codefu_helpers.launch.sagemaker_job import LaunchPlan
    from codefu_helpers.memory_plan import MemoryPlan, ModelShape

    INSTANCE_TYPE, INSTANCE_COUNT, ENGINE = "ml.p4de.24xlarge", 2, "verl"
    cfg = ExperimentConfig.from_yaml(ROOT / "configs" / "codefu7b_stage2.yaml")
    channels = ("train", "test", "config", "code", "sm_drivers")
    request = {"TrainingJobName": "codefu-stage2-1", "InputDataConfig": [
        {"ChannelName": c, "DataSource": {"S3DataSource": {"S3Uri": f"s3://b/codefu/{c}"}}} for c in channels],
        "ResourceConfig": {"InstanceType": INSTANCE_TYPE, "InstanceCount": INSTANCE_COUNT}}
    shape = ModelShape(vocab=152064, hidden=3584, layers=28, heads=28, kv_heads=4, head_dim=128, intermediate=18944,
                       tied=False)
    memory = MemoryPlan(config_name=cfg.name, shape=shape, device="cuda", device_bytes=79 * 2**30, device_source="A100",
                        world_size=16, shard=8, tokens_per_micro_batch=8192,
                        phases={"update": {"weights": 40 * 2**30, "activations": 3 * 2**30}, "rollout": {"vllm": 50 * 2**30}})
    plan = LaunchPlan(request=request, uploads=[{"local": "x/train.parquet", "s3": "s3://b/codefu/train/train.parquet"}],
                      cost=estimate_cost(INSTANCE_TYPE, INSTANCE_COUNT, hours=24), job_config=cfg, blockers=[],
                      command="exec python -m codefu_helpers.launch.entrypoint", run_name="codefu7b_stage2-x",
                      model_input={"kind": "hub", "source": "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B"}, memory=memory,
                      submitted=followed, job_name="codefu-stage2-1" if followed else None)
    job_name = plan.job_name if followed else None
    session = {"role": "arn", "bucket": "b", "region": "us-east-1",
               "source": {"role": "given", "bucket": "given", "region": "default"}}
    quota = {"quota_name": "ml.p4de.24xlarge for training job usage", "quota": 2.0, "fits": True} if followed else None
    overrides = ["trainer.nnodes=2", "data.train_batch_size=64"]
    findings = ["fewer than one step's problems"] if followed else []
    status = {"status": "Completed", "secondary_status": "Completed"} if followed else None
    stopped = "codefu-stage2-1 is Completed: nothing to stop" if followed else None
    fetched = tmp_path / "sagemaker_model" if followed else None
    cleaned = {"job_name": job_name, "deleted_objects": 3, "local": tmp_path / "launch"} if followed else None  # a Path: default=str
    memory = memory if followed else None

    results = launch_results(
        tmp_path, plan=plan, request=request, job_name=job_name, quota=quota, overrides=overrides, findings=findings,
        session=session, status=status, stopped=stopped, fetched=fetched, cleaned=cleaned, memory=memory,
        instance_count=INSTANCE_COUNT, instance_type=INSTANCE_TYPE, engine=ENGINE)

    expected = {  # notebook 04's cell
        "headline": (f"{'submitted' if plan.submitted else 'rendered'} {plan.job_name}: {INSTANCE_COUNT} x {INSTANCE_TYPE} "
                     f"({plan.cost['gpus']} GPUs), engine {ENGINE}, {len(request['InputDataConfig'])} channels, "
                     f"{plan.cost['per_hour']:.2f} USD/h at list price"),
        "submitted": plan.submitted, "job_name": plan.job_name, "followed_job": job_name, "quota": quota, "request": request, "command": plan.command,
        "cost": plan.cost, "blockers": plan.blockers, "verl_overrides": len(overrides), "run_name": plan.run_name,
        "uploads": [u["s3"] for u in plan.uploads], "model_input": plan.model_input, "data_findings": findings,
        "session_source": session["source"], "job_status": status, "stop": stopped,
        "fetched_model": str(fetched) if fetched else None, "cleanup": cleaned,
        "memory_plan": {"fits": memory.fits, "peak_gib": round(memory.peak / 2**30, 2), "peak_phase": memory.peak_phase,
                        "device_gib": round(memory.device_bytes / 2**30, 2)} if memory is not None else None,
    }
    assert results == expected
    assert written(tmp_path, "04_sagemaker_launch") == json.dumps(expected, indent=1, default=str)
    assert capsys.readouterr().out == expected["headline"] + "\n"
    if followed:
        assert json.loads(written(tmp_path, "04_sagemaker_launch"))["memory_plan"] == {
            "fits": True, "peak_gib": 50.0, "peak_phase": "rollout", "device_gib": 79.0}


# ------------------------------------------------------------------------------------------------ 05


@pytest.fixture(scope="module")
def oracle_evaluations(judge):
    """The reference solutions ("trained") and the incorrect ones ("base") of four bundled problems as evaluations,
    Python only (no compiler, no time-limit solution: a few seconds)."""
    from codefu_helpers.eval_datasets import load_benchmark
    from codefu_helpers.evaluate import EvalConfig, evaluate_references

    names = ("9003_A. Back to the Start", "9005_A. Shrinking Number", "9007_A. Pantry Shelf", "9008_A. Striped Garland")
    problems = [dataclasses.replace(p, solutions=tuple(s for s in p.solutions if s[0] == "python"),
                                    incorrect_solutions=tuple(s for s in p.incorrect_solutions if s[0] == "python"))
                for p in load_benchmark(ROOT / "data" / "sample", language="python") if p.name in names]
    assert len(problems) == len(names)
    cfg = EvalConfig(n_samples=2, ks=(1, 2), n_bootstrap=50)
    return (problems, cfg, evaluate_references(problems, "incorrect", cfg, judge=judge, progress=False),
            evaluate_references(problems, "gold", cfg, judge=judge, progress=False))


def brief(ev):  # notebook 05's helpers, as its cell defined them
    return {"model": ev.summary["model"], "pass_at_k": ev.summary["pass_at_k"], "n_at_k": ev.summary["n_at_k"], "by_tier": ev.summary["by_tier"],
            "verdicts": ev.summary["verdicts"], "samples": ev.summary["samples"], "judge_errors": ev.summary["judge_errors"], "timing": ev.summary["timing"]}


def pass_at_1(ev):
    block = ev.summary["pass_at_k"]["1"]
    return {"pass_at_1": block["value"], "ci": block["ci"], "problems": ev.summary["problems_evaluated"], "solved_samples": int(ev.samples["solved"].sum())}


@pytest.mark.parametrize("case", ["seen and held-out", "no training record"])
def test_evaluation_results(tmp_path, capsys, oracle_evaluations, case):
    from codefu_helpers.evaluate import compare, describe_comparison

    problems, cfg, wrong, right = oracle_evaluations
    N_SAMPLES, SEED = cfg.n_samples, 0  # the parameters the cell used, as the notebook's cfg holds them now
    eval_dir, figures_dir = tmp_path / "eval", tmp_path / "figures"
    heldout_problems = [p.name for p in problems]
    if case == "seen and held-out":
        TRAINED_MODEL, base_model, trained_model = "", "warm-0123", str(tmp_path / "grpo" / "model")
        base, trained = wrong, right
        seen_problems, train_problems = problems[:2], [p.name for p in problems[:2]]
        seen_base, seen_trained = wrong, right
        seen_comparison = compare(seen_base, seen_trained, cfg.ks, n_bootstrap=50, seed=SEED)
        solved, mlflow_run_id, oracle_pass_at_1 = [("held-out", "easy")], "0123abcd", 1.0
    else:
        TRAINED_MODEL, base_model = "Qwen/Qwen2.5-Coder-0.5B-Instruct", "Qwen/Qwen2.5-Coder-0.5B-Instruct"
        trained_model = base_model
        base = trained = wrong
        seen_problems, train_problems = [], []
        seen_base = seen_trained = seen_comparison = None
        solved, mlflow_run_id, oracle_pass_at_1 = [], None, None
    comparison = compare(base, trained, cfg.ks, n_bootstrap=50, seed=SEED)
    findings = {"held-out": describe_comparison(comparison, base, trained, "held-out problems")}

    results = evaluation_results(
        tmp_path, base=base, trained=trained, seen_base=seen_base, seen_trained=seen_trained, comparison=comparison,
        seen_comparison=seen_comparison, base_model=base_model, trained_model=trained_model,
        trained_source=TRAINED_MODEL, heldout_problems=heldout_problems, train_problems=train_problems,
        seen_problems=seen_problems, problems=problems, findings=findings, cfg=cfg,
        oracle_pass_at_1=oracle_pass_at_1, eval_dir=eval_dir, mlflow_run_id=mlflow_run_id, figures_dir=figures_dir,
        solved=solved)

    one = comparison["pass_at_k"]["1"]  # notebook 05's cell
    seen = {"base": pass_at_1(seen_base), "trained": pass_at_1(seen_trained)} if seen_comparison else None
    seen_text = f"seen ({len(seen_problems)}): pass@1 {seen['base']['pass_at_1']:.3f} -> {seen['trained']['pass_at_1']:.3f}; " if seen else ""
    evaluations = [ev for ev in (base, trained, seen_base, seen_trained) if ev is not None]
    expected = {
        "headline": seen_text + f"held-out ({comparison['problems']}): pass@1 {one['base']:.3f} -> {one['trained']:.3f} (difference {one['diff']:+.3f}, 95% CI [{one['diff_ci'][0]:+.3f}, {one['diff_ci'][1]:+.3f}])",
        "base_model": base_model, "trained_model": trained_model, "trained_source": TRAINED_MODEL or trained_model,
        "trained_is_base": trained_model == base_model,
        "heldout_problems": heldout_problems, "train_problems": train_problems,
        "seen": seen, "heldout": {"base": pass_at_1(base), "trained": pass_at_1(trained)}, "findings": findings,
        "problems": len(problems), "n_samples": N_SAMPLES, "ks": list(cfg.ks), "oracle_pass_at_1": oracle_pass_at_1,
        "base": brief(base), "trained": brief(trained), "comparison": comparison["pass_at_k"],
        "seen_comparison": seen_comparison["pass_at_k"] if seen_comparison else None,
        "judge_errors": sum(ev.summary["judge_errors"] for ev in evaluations),
        "files": {name: str(eval_dir / name / "samples.parquet") for name in ("base", "trained")},
        "mlflow_run_id": mlflow_run_id,
        "figures": [str(figures_dir / f"05_{name}.png") for name in  # the ones this run drew
                    ("seen_vs_heldout", *(["pass_at_k_by_tier"] if solved else []), "verdicts", "length_vs_success")],
    }
    assert results == expected
    assert written(tmp_path, "05_evaluation") == json.dumps(expected, indent=1, default=str)
    assert capsys.readouterr().out == expected["headline"] + "\n"
    if case == "seen and held-out":  # the oracles differ: the helper's numbers are not all zeros by accident
        assert results["heldout"]["trained"]["pass_at_1"] == 1.0 and results["heldout"]["base"]["pass_at_1"] == 0.0
        assert results["headline"].startswith("seen (2): pass@1 0.000 -> 1.000; held-out (4): pass@1 0.000 -> 1.000")
    else:
        assert results["trained_is_base"] and results["seen"] is None and "pass_at_k_by_tier" not in str(results["figures"])
