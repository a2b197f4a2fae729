"""GRPO against GRPO with dynamic sampling (and with the overlong filter too), on the CPU learning config, for the
same budget of CPU seconds per run: how much pass@1 each gains on the training problems, per CPU-second, and which
share of the groups it trains on carries a gradient.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/dynamic_sampling.py --seeds 0 1 2 3 4 --cpu-budget 150 \
        --parallel 2 --json runs/dynamic_sampling.json        # the table in benchmarks/RESULTS.md

Variants (each `configs/cpu_learn.yaml` with these overrides):
    grpo          as shipped: every group of the step trains, all-pass and all-fail ones with advantage 0
    dynamic       algorithm.dynamic_sampling=true (at most 2 extra generation rounds per step)
    dynamic+filt  the same, and reward.overlong=filter (responses cut at the budget left out of the loss)

The budget: each run takes GRPO steps until the CPU seconds of its process tree (this process with vLLM's threads,
the judge workers and the programs they ran) since the first step reach `--cpu-budget`; the step under way finishes,
so a run overshoots by less than one step, and the CPU seconds actually used are reported. The warm start (the same
for all variants of a seed, cached) and the evaluations are outside the budget. pass@1 is measured as notebook 03
measures it: `--eval-samples` samples per training problem from the trainer's own (synced) engine at the training
temperature, before the first step and after the last, with the evaluation seed of `benchmarks/cpu_learn.py`.

Share with a gradient: of the groups a step trains on, those whose rewards differ among samples that count
(`estimators.informative_groups`); the others get advantage 0 and only cost time. Reported over all steps of the
run, with the share among all groups generated (dynamic sampling generates more to train on fewer wasted ones).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

VARIANTS = {
    "grpo": [],
    "dynamic": ["algorithm.dynamic_sampling=true"],
    "dynamic+filt": ["algorithm.dynamic_sampling=true", "reward.overlong=filter"],
}


def tree_cpu_seconds() -> float:
    """CPU seconds (user + system) used so far by this process, its reaped children and every live descendant with
    the children those reaped: the judge workers and their sandboxed programs included."""
    import psutil

    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()
        except psutil.Error:  # exited between the listing and the read: its parent's counters have it
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def run_one(seed: int, variant: str, split: dict[str, Path], out: Path, budget: float, eval_samples: int,
            max_steps: int) -> dict:
    """One run in this process: warm start, pass@1 before, steps until the budget is spent, pass@1 after."""
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    from cpu_learn import eval_seed

    from codefu_helpers import estimators
    from codefu_helpers.config import ExperimentConfig
    from codefu_helpers.evaluate import pass_rate
    from codefu_helpers.trainer import GRPOTrainer, prepare_training, sampling_params

    cfg = ExperimentConfig.from_yaml(ROOT / "configs" / "cpu_learn.yaml").with_overrides([
        f"data.train_path={split['train']}", "data.val_path=null", f"data.raw_path={ROOT / 'data' / 'sample'}",
        "tracking.backend=none", f"trainer.seed={seed}", f"trainer.total_steps={max_steps}", "trainer.test_freq=0",
        "checkpoint.save_every=0", "checkpoint.resume=false", f"trainer.output_dir={out}", *VARIANTS[variant]]).validate()
    data = prepare_training(cfg)
    trainer = GRPOTrainer(cfg, data.rows, out, start_model=data.start_model)
    params = sampling_params(cfg, seed=eval_seed(seed))

    def measure() -> dict:
        m = pass_rate(trainer.model, trainer.tokenizer, trainer.rows, eval_samples, params, engine=trainer.rollout)
        if m["judge_errors"]:
            raise SystemExit(f"seed {seed} {variant}: {m['judge_errors']} judge errors in the evaluation")
        return m

    try:
        before = measure()
        start, steps = tree_cpu_seconds(), []
        trained = informative = generated = generated_informative = samples_generated = 0
        while len(steps) < max_steps and tree_cpu_seconds() - start < budget:
            metrics = trainer.step(len(steps))
            trainer.step_done = len(steps) + 1
            last = trainer.last_step
            chosen = estimators.informative_groups(last["group_ids"], [r.score for r in last["results"]], last["keep"])
            made = last["generated"]
            made_informative = estimators.informative_groups(made["group_ids"], [r.score for r in made["results"]],
                                                             made["keep"])
            trained += len(set(last["group_ids"]))
            informative += len(chosen)
            generated += len(set(made["group_ids"]))
            generated_informative += len(made_informative)
            samples_generated += len(made["samples"])
            steps.append({"step": len(steps) + 1, "reward_mean": round(metrics["reward_mean"], 3),
                          "groups_trained": len(set(last["group_ids"])), "informative": len(chosen),
                          "rounds": metrics.get("generation_rounds", 1)})
        used = tree_cpu_seconds() - start
        after = measure()
    finally:
        trainer.close()
    gain = after["pass_rate"] - before["pass_rate"]
    return {"seed": seed, "variant": variant, "steps": len(steps), "train_cpu_seconds": round(used, 1),
            "before": round(before["pass_rate"], 4), "after": round(after["pass_rate"], 4), "gain": round(gain, 4),
            "gain_per_cpu_minute": round(60 * gain / used, 5),
            "informative_share_trained": round(informative / max(trained, 1), 4),
            "informative_share_generated": round(generated_informative / max(generated, 1), 4),
            "groups_trained": trained, "groups_generated": generated, "samples_generated": samples_generated,
            "curve": steps}


def make_split(work: Path) -> dict[str, Path]:
    from cpu_learn import split

    return split(work)


def table(results: list[dict]) -> str:
    """The markdown table of RESULTS.md: per variant, means over seeds (and each seed's gain)."""
    lines = ["| variant | seeds | steps in the budget | CPU-s used | pass@1 before -> after | gain per seed | mean gain "
             "| gain per CPU-minute | trained groups with a gradient | generated groups with a gradient | samples "
             "generated |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for variant in VARIANTS:
        rs = sorted((r for r in results if r["variant"] == variant), key=lambda r: r["seed"])
        if not rs:
            continue
        mean = lambda key: statistics.mean(r[key] for r in rs)  # noqa: E731
        gains = ", ".join(f"{r['gain']:+.3f}" for r in rs)
        lines.append(
            f"| {variant} | {len(rs)} | {mean('steps'):.1f} | {mean('train_cpu_seconds'):.0f} | {mean('before'):.3f} -> "
            f"{mean('after'):.3f} | {gains} | {mean('gain'):+.3f} | "
            f"{mean('gain_per_cpu_minute'):+.4f} | {mean('informative_share_trained'):.2f} | "
            f"{mean('informative_share_generated'):.2f} | {mean('samples_generated'):.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--cpu-budget", type=float, default=150.0, help="CPU seconds of GRPO steps per run")
    parser.add_argument("--max-steps", type=int, default=200, help="a cap on steps whatever the budget")
    parser.add_argument("--eval-samples", type=int, default=64, help="samples per problem for pass@1")
    parser.add_argument("--parallel", type=int, default=1, help="runs at a time (one process each)")
    parser.add_argument("--work-dir", default=None, help="keep the split and the runs here")
    parser.add_argument("--json", help="write every run's result here")
    parser.add_argument("--one", nargs=3, metavar=("SEED", "VARIANT", "RESULT_JSON"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="codefu-ds-"))
    if args.one:  # a child: one run, its result to a file
        seed, variant, result = int(args.one[0]), args.one[1], Path(args.one[2])
        split = {name: work / "data" / f"{name}.parquet" for name in ("train", "test")}
        r = run_one(seed, variant, split, work / f"{variant}_s{seed}", args.cpu_budget, args.eval_samples,
                    args.max_steps)
        result.write_text(json.dumps(r))
        return 0
    make_split(work)
    jobs = [(seed, variant) for variant in args.variants for seed in args.seeds]  # a seed's warm start is cached by its first run
    running: list[tuple[subprocess.Popen, tuple[int, str], Path]] = []
    results = []
    while jobs or running:
        while jobs and len(running) < args.parallel:
            seed, variant = jobs.pop(0)
            result = work / f"result_{variant}_s{seed}.json"
            cmd = [sys.executable, __file__, "--work-dir", str(work), "--cpu-budget", str(args.cpu_budget),
                   "--max-steps", str(args.max_steps), "--eval-samples", str(args.eval_samples),
                   "--one", str(seed), variant, str(result)]
            log = open(work / f"log_{variant}_s{seed}.txt", "w")
            running.append((subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT), (seed, variant),
                            result))
        time.sleep(2)
        for item in list(running):
            proc, (seed, variant), result = item
            if proc.poll() is None:
                continue
            running.remove(item)
            if proc.returncode != 0:
                raise SystemExit(f"seed {seed} {variant} failed ({proc.returncode}): see {work}/log_{variant}_s{seed}.txt")
            r = json.loads(result.read_text())
            results.append(r)
            print(f"seed {seed} {variant:13s}: {r['steps']} steps in {r['train_cpu_seconds']} CPU-s | pass@1 "
                  f"{r['before']:.3f} -> {r['after']:.3f} ({r['gain']:+.3f}) | trained groups with a gradient "
                  f"{r['informative_share_trained']:.2f}, generated {r['informative_share_generated']:.2f}",
                  flush=True)
    print(table(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
