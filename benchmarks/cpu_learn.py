"""Does GRPO learn on CPU, and by how much across seeds? `configs/cpu_learn.yaml` from the command line, once per
seed, with pass@1 on the training problems before and after GRPO judged as `tests/test_learning.py` judges it.

    .venv/bin/python benchmarks/cpu_learn.py --seeds 0 1 2 --json runs/cpu_learn_seeds.json    # the run in RESULTS.md
    .venv/bin/python benchmarks/cpu_learn.py --seeds 0 --set optim.lr=2e-4                     # one variant
    .venv/bin/python benchmarks/cpu_learn.py --seeds 0 --work-dir runs/learn_seeds             # keep the runs

A different `trainer.seed` changes the warm start, the sampling and the shuffling: it stands in for another CPU,
whose floating-point kernels send the same seed down another path. The learning test's margin has to hold on all
of them, so the spread of the gain across seeds is what this benchmark is for. Per seed it prints the mean reward
and solved fraction of each GRPO step (from metrics.jsonl) and pass@1 before/after on `--eval-samples` samples per
problem (evaluation seed 2024, the test's).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def split(work: Path) -> dict[str, Path]:
    """Notebook 01's default split of the bundled sample (Python prompts), as the tests make it."""
    from codefu_helpers.data import FilterConfig, prepare_dataset

    report = prepare_dataset(ROOT / "data" / "sample", work / "data", FilterConfig(language="python", test_fraction=0.2, seed=0))
    return {name: Path(path) for name, path in report.files.items()}


def run_seed(seed: int, data: dict[str, Path], out: Path, overrides: list[str], eval_samples: int) -> dict:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from codefu_helpers.config import ExperimentConfig
    from codefu_helpers.data import read_verl_parquet
    from codefu_helpers.tracking import read_metrics
    from codefu_helpers.evaluate import pass_rate
    from codefu_helpers.trainer import sampling_params

    cmd = [sys.executable, "-m", "codefu_helpers.train", "--config", str(ROOT / "configs" / "cpu_learn.yaml"),
           "--output-dir", str(out), "--set", f"data.train_path={data['train']}", f"data.val_path={data['test']}",
           f"data.raw_path={ROOT / 'data' / 'sample'}", "tracking.backend=none", f"trainer.seed={seed}", *overrides]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"seed {seed}: training failed ({proc.returncode})\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    train_seconds = time.perf_counter() - start
    cfg = ExperimentConfig.from_yaml(out / "config.yaml")
    record = json.loads((out / "model" / "codefu_training.json").read_text())
    names = set(record["train_problems"])
    rows = [r for r in read_verl_parquet(data["train"]) if r["reward_model"]["ground_truth"]["name"] in names]
    params = sampling_params(cfg, seed=2024)
    result = {"seed": seed, "train_seconds": round(train_seconds, 1), "steps": []}
    for m in read_metrics(out):
        result["steps"].append({"step": m["step"], "reward_mean": round(m["reward_mean"], 3),
                                "pass_rate": round(m["pass_rate"], 3)})
    start = time.perf_counter()
    for name, path in (("before", record["start_model"]), ("after", out / "model")):
        model, tokenizer = AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
        measured = pass_rate(model, tokenizer, rows, eval_samples, params)
        if measured["judge_errors"]:
            raise SystemExit(f"seed {seed}: {measured['judge_errors']} judge errors evaluating {name}")
        result[name] = round(measured["pass_rate"], 4)
        result[f"{name}_solved"] = f"{measured['solved_samples']} of {measured['samples']}"
    result["eval_seconds"] = round(time.perf_counter() - start, 1)
    result["gain"] = round(result["after"] - result["before"], 4)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--eval-samples", type=int, default=16, help="samples per problem for pass@1 (the test's)")
    parser.add_argument("--set", dest="overrides", nargs="*", default=[], metavar="KEY=VALUE",
                        help="config overrides for every seed")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--work-dir", help="keep the split and each seed's run (seedN/) here (default: a temporary "
                                           "folder, removed at the end)")
    args = parser.parse_args(argv)

    with (contextlib.nullcontext(args.work_dir) if args.work_dir
          else tempfile.TemporaryDirectory(prefix="codefu-learn-")) as tmp:
        work = Path(tmp)
        data = split(work)
        results = []
        for seed in args.seeds:
            r = run_seed(seed, data, work / f"seed{seed}", args.overrides, args.eval_samples)
            results.append(r)
            curve = " ".join(f"{s['reward_mean']:+.2f}" for s in r["steps"])
            print(f"seed {seed}: pass@1 {r['before']:.3f} -> {r['after']:.3f} (gain {r['gain']:+.3f}; "
                  f"{r['before_solved']} -> {r['after_solved']}) | train {r['train_seconds']} s, eval "
                  f"{r['eval_seconds']} s | reward per step {curve}", flush=True)
    gains = [r["gain"] for r in results]
    print(f"gain over {len(gains)} seed(s): min {min(gains):+.3f}, mean {statistics.mean(gains):+.3f}, "
          f"max {max(gains):+.3f}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"command": sys.argv, "overrides": args.overrides,
                                               "eval_samples": args.eval_samples, "seeds": results}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
