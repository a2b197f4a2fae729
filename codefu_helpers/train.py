"""Command line for GRPO training: the same trainer the notebook runs, from a YAML config.

    python -m codefu_helpers.train --config configs/ci_tiny.yaml --output-dir runs/tiny
    python -m codefu_helpers.train --config configs/ci_tiny.yaml --output-dir runs/tiny --resume
    python -m codefu_helpers.train --config configs/ci_tiny.yaml --output-dir runs/tiny --set optim.lr=1e-4

Writes DIR/config.yaml (the resolved config), DIR/metrics.jsonl (one JSON object per step), DIR/checkpoints/
(resumable), DIR/final (the trained model in HF format) and DIR/mlflow.db unless tracking says otherwise.
`--stop-after-step K` stops after step K as if interrupted (the schedule is unchanged), for resume tests.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .config import ExperimentConfig


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m codefu_helpers.train", description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="experiment YAML (see configs/)")
    parser.add_argument("--output-dir", default=None, help="overrides trainer.output_dir")
    parser.add_argument("--resume", action="store_true", help="continue from the latest checkpoint in the output dir")
    parser.add_argument("--stop-after-step", type=int, default=None, help="stop after this step (simulates an interruption)")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="config overrides, e.g. optim.lr=1e-5")
    return parser.parse_args(argv)


def load_config(args: argparse.Namespace) -> ExperimentConfig:
    cfg = ExperimentConfig.from_yaml(args.config)
    overrides = list(args.set)
    if args.output_dir:
        overrides.append(f"trainer.output_dir={args.output_dir}")
    if overrides:
        cfg = cfg.with_overrides(overrides)
    return cfg.validate()


def run(cfg: ExperimentConfig, resume: bool = False, stop_after_step: int | None = None) -> Path:
    from .data import read_verl_parquet
    from .tracking import RunLogger
    from .trainer import GRPOTrainer

    output_dir = Path(cfg.trainer.output_dir)
    train_path = Path(cfg.data.train_path)
    if not train_path.exists():
        raise SystemExit(f"data.train_path={str(train_path)!r} does not exist. Write it with notebook 01 or:\n"
                         f"  python -m codefu_helpers.data --dataset data/sample --output-dir {train_path.parent}")
    output_dir.mkdir(parents=True, exist_ok=True)
    cfg.to_yaml(output_dir / "config.yaml")
    rows = read_verl_parquet(train_path)
    trainer = GRPOTrainer(cfg, rows, output_dir)
    start = trainer.resume() if (resume or cfg.checkpoint.resume) else 0
    logger = None
    if cfg.tracking.backend == "mlflow":
        logger = RunLogger(output_dir, experiment=cfg.tracking.experiment, tracking_uri=cfg.tracking_uri(),
                           run_name=cfg.tracking.run_name or cfg.name, params=cfg.to_dict(),
                           resume_from_step=start if start else None,
                           mlflow_run_id=trainer.resumed_run_id if start else None)
    else:
        logger = RunLogger(output_dir, tracking_uri="none", resume_from_step=start if start else None)
    trainer.logger = logger
    status = "FAILED"
    try:
        trainer.fit(start, stop_after_step=stop_after_step)
        status = "FINISHED"
    finally:
        logger.close(status)
    return output_dir


def main(argv=None) -> int:
    args = parse_args(argv)
    run(load_config(args), resume=args.resume, stop_after_step=args.stop_after_step)
    return 0


if __name__ == "__main__":
    sys.exit(main())
