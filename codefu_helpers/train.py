"""Command line for GRPO training: the same trainer the notebook runs, from a YAML config.

    python -m codefu_helpers.train --config configs/ci_tiny.yaml --output-dir runs/tiny
    python -m codefu_helpers.train --config configs/ci_tiny.yaml --output-dir runs/tiny --resume
    python -m codefu_helpers.train --config configs/ci_tiny.yaml --output-dir runs/tiny --set optim.lr=1e-4

Writes DIR/config.yaml (the resolved config), DIR/metrics.jsonl (one JSON object per step), DIR/checkpoints/
(resumable), DIR/model (the trained model in HF format, with codefu_training.json: the problems trained on and
the model GRPO started from) and DIR/mlflow.db unless tracking says otherwise.

    python -m codefu_helpers.train --config configs/cpu_learn.yaml --output-dir runs/learn   # watch pass rate rise
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
    parser.add_argument("--dry-run", action="store_true",
                        help="validate and print what would run, then exit: for trainer.engine=verl the verl overrides "
                             "(one key=value per line), else the resolved config as YAML")
    return parser.parse_args(argv)


def load_config(args: argparse.Namespace) -> ExperimentConfig:
    cfg = ExperimentConfig.from_yaml(args.config)
    overrides = list(args.set)
    if args.output_dir:
        overrides.append(f"trainer.output_dir={args.output_dir}")
    if overrides:
        cfg = cfg.with_overrides(overrides)
    return cfg.validate()


def run(cfg: ExperimentConfig, resume: bool = False, stop_after_step: int | None = None,
        should_stop=None) -> Path:
    """Trains `cfg` into trainer.output_dir (see the module docstring). `should_stop()`, asked after every step,
    ends the run early with that step saved (the SageMaker entry point's answer to SIGTERM)."""
    from .config import check_native_trainer
    from .tracking import RunLogger
    from .trainer import GRPOTrainer, prepare_training

    check_native_trainer(cfg)
    output_dir = Path(cfg.trainer.output_dir)
    try:
        data = prepare_training(cfg)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(str(exc)) from None
    output_dir.mkdir(parents=True, exist_ok=True)
    cfg.to_yaml(output_dir / "config.yaml")
    judge = judge_metadata()
    print(f"training on {len(data.rows)} problems from {cfg.data.train_path}"
          + (f", validating on {len(data.val_rows)} from {cfg.data.val_path}" if data.val_rows else "")
          + f"; GRPO starts from {data.start_model}", flush=True)
    trainer = GRPOTrainer(cfg, data.rows, output_dir, val_rows=data.val_rows, start_model=data.start_model)
    logger, status = None, "FAILED"
    try:
        start = trainer.resume() if (resume or cfg.checkpoint.resume) else 0
        if cfg.tracking.backend == "mlflow":
            logger = RunLogger(output_dir, experiment=cfg.tracking.experiment, tracking_uri=cfg.tracking_uri(),
                               run_name=cfg.tracking.run_name or cfg.name, params=cfg.to_dict(),
                               resume_from_step=start if start else None,
                               mlflow_run_id=trainer.resumed_run_id if start else None, metadata=judge)
        else:
            logger = RunLogger(output_dir, tracking_uri="none", resume_from_step=start if start else None,
                               metadata=judge)
        trainer.logger = logger
        trainer.fit(start, stop_after_step=stop_after_step, should_stop=should_stop)
        status = "FINISHED"
    finally:
        if logger is not None:
            logger.close(status)
        trainer.close()  # the workers, and the Ray they started
    return output_dir


def judge_metadata() -> dict[str, str]:
    """Starts this host's judge, prints how it isolates programs (the run's first line), and returns the tier for
    every metrics row: a run never trains with a weaker sandbox than it says."""
    from .sandbox import get_judge

    info = get_judge().info()
    print(info["isolation_line"], flush=True)
    return {"judge_isolation": info["isolation"]}


def dry_run(cfg: ExperimentConfig) -> None:
    """Prints what `run` would start, on stdout and nothing else: verl overrides, or the resolved config."""
    if cfg.trainer.engine == "verl":
        from .launch.verl_engine import verl_overrides

        print("\n".join(verl_overrides(cfg)))
    else:
        print(cfg.to_yaml(), end="")


def main(argv=None) -> int:
    args = parse_args(argv)
    cfg = load_config(args)
    if args.dry_run:
        dry_run(cfg)
        return 0
    run(cfg, resume=args.resume, stop_after_step=args.stop_after_step)
    return 0


if __name__ == "__main__":
    sys.exit(main())
