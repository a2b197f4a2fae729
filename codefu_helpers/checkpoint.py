"""Checkpoints that resume exactly, and the final model in Hugging Face format.

A checkpoint is a folder `DIR/checkpoints/step_000012/` holding:

    dcp/              torch.distributed.checkpoint: model and optimizer state, one shard file per worker; it loads
                      onto any number of workers (resharded on load), so a run may resume on more or fewer devices
    model/            the whole model, save_pretrained (safetensors) + the tokenizer: transformers and vLLM load it
    scheduler.pt      learning-rate schedule state
    rng/rank_NNNNN.pt Python, NumPy and torch RNG states of each worker
    trainer_state.json  step, data position, MLflow run id, worker count, the config it was trained with

The workers write their parts (`workers.Worker.save`) into a temporary folder that is renamed into place only after
all of them finished, so an interruption mid-save (a SageMaker spot reclaim, a worker dying) never leaves a
half-written checkpoint that `--resume` would pick up. A worker on another host than the controller writes its part to
scratch on its own disk, which the controller copies into the folder in 64 MiB chunks (it never holds more than one),
so a checkpoint is whole on the controller's host without a shared filesystem. On SageMaker, DIR/checkpoints is `/opt/ml/checkpoints`,
which SageMaker syncs with S3, so a restarted job finds it; before a resume, a host whose disk lacks files of the
checkpoint gets them from the controller, and each worker there checks its disk before it loads.

The final model goes to `<output_dir>/model` (MODEL_DIR) in the same HF format, with `codefu_training.json`
(TRAINING_RECORD) beside its weights: the problems it was trained on and the model GRPO started from, which
`codefu_helpers.evaluate` reads to tell seen problems from held-out ones.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

STEP_PREFIX = "step_"
MODEL_DIR = "model"                         # <output_dir>/model: the final model (SageMaker: /opt/ml/model)
TRAINING_RECORD = "codefu_training.json"    # in the model folder: the problems trained on, what GRPO started from


@dataclass
class TrainerState:
    step: int                   # optimizer steps completed
    data_position: int          # prompts consumed so far (epoch * len(dataset) + offset)
    mlflow_run_id: str | None
    config: dict[str, Any]
    world_size: int = 1         # workers that wrote it (a resume may use another number)


def checkpoint_dir(root: str | Path, step: int) -> Path:
    return Path(root) / f"{STEP_PREFIX}{step:06d}"


def write_checkpoint(root: str | Path, state: TrainerState, write: Callable[[Path], None],
                     keep_last: int | None = 2) -> Path:
    """`write(folder)` fills a temporary folder (the workers' parts), then trainer_state.json is added and the folder
    renamed to step_NNNNNN; the oldest checkpoints beyond `keep_last` are deleted. Returns the checkpoint folder."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    final = checkpoint_dir(root, state.step)
    tmp = root / f".tmp_{final.name}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    write(tmp)
    (tmp / "trainer_state.json").write_text(json.dumps(state.__dict__, indent=1, default=str))
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    if keep_last:
        for old in list_checkpoints(root)[:-keep_last]:
            shutil.rmtree(old, ignore_errors=True)
    return final


def save_hf_model(model, tokenizer, path: str | Path) -> Path:
    """The model (unwrapped, contiguous weights, safetensors) and tokenizer, as transformers/vLLM load them."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path, safe_serialization=True)
    if tokenizer is not None:
        tokenizer.save_pretrained(path)
    return path


def list_checkpoints(root: str | Path) -> list[Path]:
    root = Path(root)
    if not root.exists():
        return []
    return sorted(p for p in root.iterdir()
                  if p.is_dir() and p.name.startswith(STEP_PREFIX) and (p / "trainer_state.json").exists())


def latest_checkpoint(root: str | Path) -> Path | None:
    found = list_checkpoints(root)
    return found[-1] if found else None


def load_trainer_state(path: str | Path) -> TrainerState:
    return TrainerState(**json.loads((Path(path) / "trainer_state.json").read_text()))
