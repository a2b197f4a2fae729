"""Command line for GRPO training: the same trainer the notebook runs, from a YAML config.

    python -m codefu_helpers.train --config configs/ci_tiny.yaml --output-dir runs/tiny
    python -m codefu_helpers.train --config configs/ci_tiny.yaml --output-dir runs/tiny --resume
    python -m codefu_helpers.train --config configs/ci_tiny.yaml --output-dir runs/tiny --set optim.lr=1e-4

Writes DIR/config.yaml (the resolved config), DIR/metrics.jsonl (one JSON object per step), DIR/checkpoints/
(resumable), DIR/model (the trained model in HF format, with codefu_training.json: the problems trained on and
the model GRPO started from) and DIR/mlflow.db unless tracking says otherwise.

    python -m codefu_helpers.train --config configs/cpu_learn.yaml --output-dir runs/learn   # watch pass rate rise
`--stop-after-step K` stops after step K as if interrupted (the schedule is unchanged), for resume tests.
`--dry-run` validates, prints what would run on stdout (the resolved config, or verl's overrides) and the memory
plan on stderr (`codefu_helpers.memory_plan`: per-GPU bytes of each phase, on the visible GPU or `--gpu-memory-gib`,
80 when none is visible), and exits 2 when the plan does not fit:

    python -m codefu_helpers.train --config configs/codefu7b_stage2.yaml --dry-run --set trainer.nnodes=2 --gpu-memory-gib 80

A run on a GPU consults the same plan before it loads anything and refuses a config that does not fit the visible
GPU (or `--gpu-memory-gib`), naming the phase and what to change; `--ignore-memory-plan` starts it anyway.
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
                             "(one key=value per line), else the resolved config as YAML; the memory plan goes to "
                             "stderr, and the exit status is 2 when it does not fit")
    parser.add_argument("--gpu-memory-gib", type=float, default=None,
                        help="plan for GPUs of this much memory (default: the visible GPU; --dry-run: else 80)")
    parser.add_argument("--ignore-memory-plan", action="store_true",
                        help="start a run even when the memory plan says it does not fit the GPU")
    return parser.parse_args(argv)


def memory_plan_refusal(cfg: ExperimentConfig, gpu_memory_gib: float | None = None) -> str | None:
    """Why a run of `cfg` should not start on this machine's GPU (or one of `gpu_memory_gib`), or None: a CPU run,
    no GPU visible and none given (nothing to plan against), or a plan that fits. Loads no model."""
    from .memory_plan import MemoryPlanError, check_fits, visible_device_memory

    if cfg.model.resolved_device() == "cpu" or (gpu_memory_gib is None and visible_device_memory("cuda") is None):
        return None
    try:
        check_fits(cfg, device_memory_gib=gpu_memory_gib)
    except MemoryPlanError as exc:
        return f"{exc} (pass --ignore-memory-plan to start anyway)"
    return None


def load_config(args: argparse.Namespace) -> ExperimentConfig:
    cfg = ExperimentConfig.from_yaml(args.config)
    overrides = list(args.set)
    if args.output_dir:
        overrides.append(f"trainer.output_dir={args.output_dir}")
    if overrides:
        cfg = cfg.with_overrides(overrides)
    return cfg.validate()


def run(cfg: ExperimentConfig, resume: bool = False, stop_after_step: int | None = None,
        should_stop=None, use_ray: bool | None = None) -> Path:
    """Trains `cfg` into trainer.output_dir (see the module docstring). `should_stop()`, asked after every step,
    ends the run early with that step saved (the SageMaker entry point's answer to SIGTERM). `use_ray=True` runs
    even one worker as a sharded Ray worker."""
    from .checkpoint import latest_checkpoint
    from .config import ConfigError, check_native_trainer
    from .tracking import RunLogger
    from .trainer import GRPOTrainer, check_resume_config, prepare_training

    check_native_trainer(cfg)
    latest = latest_checkpoint(cfg.checkpoint_dir()) if (resume or cfg.checkpoint.resume) else None
    if latest is not None:  # before any model loads: a resume the checkpoint's config forbids stops here
        try:
            check_resume_config(latest, cfg, report=False)
        except ConfigError as exc:
            raise SystemExit(str(exc)) from None
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
    trainer = GRPOTrainer(cfg, data.rows, output_dir, val_rows=data.val_rows, start_model=data.start_model,
                          use_ray=use_ray)
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


def dry_run(cfg: ExperimentConfig, gpu_memory_gib: float | None = None) -> bool:
    """Prints what `run` would start on stdout (verl overrides, or the resolved config) and its memory plan on
    stderr; returns whether the plan fits."""
    from .memory_plan import memory_plan

    if cfg.trainer.engine == "verl":
        from .launch.verl_engine import verl_config_name, verl_overrides

        overrides = verl_overrides(cfg)
        if cfg.trainer.strategy != "fsdp":  # verl's base config for its Megatron workers, as verl_command passes it
            print(f"--config-name={verl_config_name(cfg)}")
        print("\n".join(overrides))
    else:
        print(cfg.to_yaml(), end="")
    plan = memory_plan(cfg, device_memory_gib=gpu_memory_gib if cfg.model.resolved_device() != "cpu" else None)
    print(plan.report(), file=sys.stderr, flush=True)
    return plan.fits


def main(argv=None) -> int:
    args = parse_args(argv)
    cfg = load_config(args)
    if args.dry_run:
        return 0 if dry_run(cfg, args.gpu_memory_gib) else 2
    refusal = None if args.ignore_memory_plan else memory_plan_refusal(cfg, args.gpu_memory_gib)
    if refusal:
        raise SystemExit(refusal)
    run(cfg, resume=args.resume, stop_after_step=args.stop_after_step)
    return 0


if __name__ == "__main__":
    sys.exit(main())
