"""The benchmark scripts still run and agree with each other (tiny sizes; the numbers are in RESULTS.md)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_data_filter_benchmark_methods_keep_the_same_rows(tmp_path):
    out = tmp_path / "bench.json"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "data_filter.py"), "--rows", "120", "--scale", "0.02",
                    "--json", str(out)], check=True, capture_output=True, timeout=600)
    results = json.loads(out.read_text())
    assert results["dataset"]["rows"] == 120
    kept = {method: r["kept"] for method, r in results["results"].items()}
    assert set(kept) == {"stream", "stream+generated", "load-all", "load-all+generated"}
    assert len(set(kept.values())) == 1 and 0 < kept["stream"] < 120, kept


def test_cpu_learn_benchmark_reports_what_its_runs_measured(tmp_path):
    """One GRPO step, one evaluation sample per problem: the logged numbers against the kept run's own files and a
    direct pass@1 of the same models with the same settings, each sampled by an engine of its own (the benchmark
    evaluates both models with one vLLM engine, synced in between)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from codefu_helpers.config import ExperimentConfig
    from codefu_helpers.data import read_verl_parquet
    from codefu_helpers.tracking import read_metrics
    from codefu_helpers.evaluate import pass_rate
    from codefu_helpers.rollout import build_rollout_engine
    from codefu_helpers.trainer import sampling_params

    out, work = tmp_path / "learn.json", tmp_path / "work"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "cpu_learn.py"), "--seeds", "0", "--eval-samples", "1",
                    "--json", str(out), "--work-dir", str(work), "--set", "trainer.total_steps=1",
                    "trainer.test_freq=1", "checkpoint.save_every=1"], check=True, capture_output=True, timeout=900)
    (r,) = json.loads(out.read_text())["seeds"]
    run = work / "seed0"
    (metrics,) = read_metrics(run)
    assert r["steps"] == [{"step": 1, "reward_mean": round(metrics["reward_mean"], 3),
                           "pass_rate": round(metrics["pass_rate"], 3)}]
    cfg = ExperimentConfig.from_yaml(run / "config.yaml")
    assert cfg.trainer.seed == 0 and cfg.trainer.total_steps == 1 and cfg.data.max_problems == 8
    record = json.loads((run / "model" / "codefu_training.json").read_text())
    rows = [row for row in read_verl_parquet(work / "data" / "train.parquet")
            if row["reward_model"]["ground_truth"]["name"] in set(record["train_problems"])]
    assert r["eval_engine"] == cfg.rollout.backend == "vllm"  # the config's engine, as notebook 03 evaluates
    for name, path in (("before", record["start_model"]), ("after", run / "model")):
        model, tokenizer = AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
        engine = build_rollout_engine(cfg.rollout, model, tokenizer, seed=0,  # a fresh one per model
                                      max_model_len=cfg.data.max_prompt_length + cfg.data.max_response_length)
        try:
            direct = pass_rate(model, tokenizer, rows, 1, sampling_params(cfg, seed=0 + 12345), engine=engine)
        finally:
            engine.close()
        assert r[name] == round(direct["pass_rate"], 4), name
        assert r[f"{name}_solved"] == f"{direct['solved_samples']} of 8", name
    assert r["gain"] == round(r["after"] - r["before"], 4)
    assert 0 < r["train_cpu_seconds"] and 0 < r["eval_cpu_seconds"]  # the CLI's and the judge's processes counted


def test_estimator_comparison_table_is_computed_from_the_runs_results(tmp_path):
    """benchmarks/estimator_compare.py --table: pass@1, gain and the training pass rate averaged over thirds of the
    run, read from cpu_learn.py's JSON (the estimator from its overrides; none given: grpo)."""
    steps = [{"step": i + 1, "reward_mean": 0.0, "pass_rate": p} for i, p in enumerate([0.0, 0.5, 0.25, 0.25, 1.0, 0.5])]
    seed = {"seed": 3, "before": 0.25, "after": 0.5, "gain": 0.25, "train_seconds": 99.6, "steps": steps}
    for name, overrides in (("gae", ["algorithm.adv_estimator=gae", "critic.lr=1e-4"]), ("plain", [])):
        (tmp_path / f"{name}.json").write_text(json.dumps({"overrides": overrides, "seeds": [seed]}))
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "estimator_compare.py"), "--table",
                           str(tmp_path / "gae.json"), str(tmp_path / "plain.json")],
                          check=True, capture_output=True, text=True, timeout=120)
    rows = proc.stdout.splitlines()[2:]
    assert rows == ["| gae | 3 | 0.250 -> 0.500 | +0.250 | 0.250 / 0.250 / 0.750 | 100 |",
                    "| grpo | 3 | 0.250 -> 0.500 | +0.250 | 0.250 / 0.250 / 0.750 | 100 |"]


def test_dynamic_sampling_benchmark_counts_a_childs_cpu_and_averages_its_runs():
    """benchmarks/dynamic_sampling.py: the CPU budget counts live children (the judge workers, the programs they
    run) and the table's means and per-seed gains are those of the runs."""
    import importlib.util
    import time

    spec = importlib.util.spec_from_file_location("dynamic_sampling", ROOT / "benchmarks" / "dynamic_sampling.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    before = bench.tree_cpu_seconds()
    child = subprocess.Popen([sys.executable, "-c", "import time\nt = time.process_time()\n"
                              "while time.process_time() - t < 1.0: pass\ntime.sleep(30)"])
    try:
        deadline = time.monotonic() + 60
        while bench.tree_cpu_seconds() - before < 1.0 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert bench.tree_cpu_seconds() - before >= 1.0  # the live child's CPU seconds are in the budget
    finally:
        child.kill()
        child.wait()
    runs = [{"variant": v, "seed": s, "steps": 10 + s, "train_cpu_seconds": 150.0 + s, "before": 0.2, "after": a,
             "gain": a - 0.2, "gain_per_cpu_minute": 60 * (a - 0.2) / (150 + s), "informative_share_trained": t,
             "informative_share_generated": 0.8, "samples_generated": 320 + s}
            for v, t in (("grpo", 0.8), ("dynamic", 1.0)) for s, a in ((0, 0.3), (1, 0.4))]
    table = bench.table(runs)
    grpo_row = next(line for line in table.splitlines() if line.startswith("| grpo |"))
    cells = [c.strip() for c in grpo_row.strip("|").split("|")]
    assert cells[1] == "2" and cells[2] == "10.5" and cells[4] == "0.200 -> 0.350"
    assert cells[5] == "+0.100, +0.200" and cells[6] == "+0.150" and cells[8] == "0.80"


def test_the_heldout_humaneval_split_is_two_disjoint_halves_fixed_by_the_seed():
    """benchmarks/heldout_humaneval.py trains on one half of HumanEval and reports on the other: no problem in both,
    none left out, the same halves for the same seed (so a rerun evaluates the same problems), others for another."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("heldout_humaneval", ROOT / "benchmarks" / "heldout_humaneval.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    split_humaneval = bench.split_humaneval
    train, test = split_humaneval(0)
    ids = [p.problem_id for p in train + test]
    assert len(train) == len(test) == 82 and len(set(ids)) == 164
    assert [p.problem_id for p in split_humaneval(0)[1]] == [p.problem_id for p in test]
    assert {p.problem_id for p in split_humaneval(1)[0]} != {p.problem_id for p in train}
    assert [p.problem_id for p in split_humaneval(0, held_out=8)[1]] == [p.problem_id for p in test[:8]]
