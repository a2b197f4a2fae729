"""Where a GRPO step's time goes with 1 and with 2 workers, side by side: the same tiny CPU config, the same steps.

    .venv/bin/python benchmarks/step_breakdown.py --json runs/step_breakdown.json        # the run in RESULTS.md
    .venv/bin/python benchmarks/step_breakdown.py --steps 2 --workers 2                   # a quick look

Each worker count trains `--steps` GRPO steps of configs/ci_tiny.yaml (4 prompts x 4 samples per step here, so each
of 2 workers has work), through the trainer as the CLI runs it, and reads its metrics.jsonl: per phase (generate,
judge wait, old/ref log-probs, update, weight sync, checkpoint) the mean seconds over the steps after the first
(which pays for warm-up). Orchestration is measured, the collectives are estimated:

  orchestration  per step, the controller's wall time of its calls to the workers minus the slowest worker's own
                 time in them (`time_orchestration`): Ray's dispatch and transfer of arguments and results, and
                 waiting for a worker beyond the slowest one's work. One worker in process: ~0.
  collectives    FSDP2 gathers every layer's weights before each use and reduce-scatters gradients; they happen
                 inside the workers' time. Estimated as (seconds to gather the whole model once, measured after
                 training by `WorkerGroup.all_gather_seconds`) x (gathers per step: one per forward pass of the
                 policy or the reference, three per micro-batch of the update (forward, backward, reduce-scatter),
                 one per weight sync).

The target for the orchestration + collective share of step time is < 10 %.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PHASES = ("time_generate", "time_reward_wait", "time_logprob", "time_update", "time_weight_sync", "time_checkpoint",
          "time_orchestration", "step_seconds")


def config(world: int, steps: int, output_dir: Path, prompts: int):
    from codefu_helpers.config import ExperimentConfig

    return ExperimentConfig.from_yaml(ROOT / "configs" / "ci_tiny.yaml").with_overrides([
        f"trainer.gpus_per_node={world}", f"trainer.total_steps={steps}", f"trainer.output_dir={output_dir}",
        f"data.train_batch_size={prompts}", "algorithm.ppo_mini_batch_size=2", "trainer.test_freq=0",
        "data.val_path=null", "tracking.backend=none", "checkpoint.resume=false",
        f"data.train_path={ROOT / 'data' / 'processed' / 'train.parquet'}"]).validate()


def gathers_per_step(cfg, micro_per_rank_logprob: int, micro_per_rank_update: int) -> int:
    models = 2 if cfg.algorithm.use_kl_loss else 1
    updates = cfg.mini_batches_per_step * cfg.algorithm.ppo_epochs
    return micro_per_rank_logprob * models + updates * micro_per_rank_update * 3 + 1


def run(world: int, steps: int, prompts: int, root: Path) -> dict:
    from codefu_helpers.tracking import RunLogger, read_metrics
    from codefu_helpers.trainer import GRPOTrainer, prepare_training

    out = root / f"workers_{world}"
    cfg = config(world, steps, out, prompts)
    data = prepare_training(cfg)
    start = time.perf_counter()
    trainer = GRPOTrainer(cfg, data.rows, out, start_model=data.start_model)
    startup = time.perf_counter() - start
    try:
        trainer.logger = RunLogger(out, tracking_uri="none", console=True)
        trainer.fit(0)
        gather = trainer.workers.all_gather_seconds()
    finally:
        trainer.close()
    rows = read_metrics(out)
    measured = rows[1:] if len(rows) > 1 else rows
    phases = {k: statistics.mean(r.get(k, 0.0) for r in measured) for k in PHASES}
    samples = cfg.samples_per_step // world
    micro_logprob = math.ceil(samples / cfg.algorithm.ppo_micro_batch_size)
    micro_update = math.ceil(cfg.algorithm.ppo_mini_batch_size * cfg.rollout.n // world / cfg.algorithm.ppo_micro_batch_size)
    collective = gather * gathers_per_step(cfg, micro_logprob, micro_update) if world > 1 else 0.0
    step = phases["step_seconds"] + phases["time_checkpoint"]  # the checkpoint is taken after step_seconds ends
    return {"workers": world, "steps_measured": len(measured), "startup_seconds": startup, "phases": phases,
            "all_gather_seconds": gather, "collective_seconds_estimate": collective,
            "orchestration_share": phases["time_orchestration"] / step,
            "orchestration_and_collective_share": (phases["time_orchestration"] + collective) / step,
            "world_size_logged": sorted({r["world_size"] for r in rows})}


def table(results: list[dict]) -> str:
    names = {"time_generate": "generate", "time_reward_wait": "judge wait", "time_logprob": "old/ref log-probs",
             "time_update": "update", "time_weight_sync": "weight sync", "time_checkpoint": "checkpoint",
             "time_orchestration": "orchestration (measured)", "step_seconds": "step (without checkpoint)"}
    lines = ["| phase (s, mean per step) | " + " | ".join(f"{r['workers']} worker{'s' if r['workers'] > 1 else ''}"
                                                       for r in results) + " |",
             "| --- | " + " | ".join("---:" for _ in results) + " |"]
    for key, name in names.items():
        lines.append(f"| {name} | " + " | ".join(f"{r['phases'][key]:.2f}" for r in results) + " |")
    lines.append("| collectives (estimated) | " + " | ".join(f"{r['collective_seconds_estimate']:.2f}" for r in results) + " |")
    lines.append("| orchestration share | " + " | ".join(f"{100 * r['orchestration_share']:.1f} %" for r in results) + " |")
    lines.append("| orchestration + collectives share | "
                 + " | ".join(f"{100 * r['orchestration_and_collective_share']:.1f} %" for r in results) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4, help="GRPO steps per worker count (the first is warm-up)")
    parser.add_argument("--prompts", type=int, default=4, help="prompts per step (data.train_batch_size)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="worker counts to compare")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args(argv)
    os.environ.setdefault("CODEFU_RAY_DASHBOARD", "0")  # the benchmark measures steps, not Ray's start-up
    if not (ROOT / "data" / "processed" / "train.parquet").exists():
        sys.exit("data/processed/train.parquet is missing: .venv/bin/python -m codefu_helpers.data --dataset "
                 "data/sample --output-dir data/processed --language python")
    with tempfile.TemporaryDirectory(prefix="step_breakdown_") as tmp:
        results = [run(world, args.steps, args.prompts, Path(tmp)) for world in args.workers]
    print(table(results))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
