"""Checkpoints that resume exactly, and the final model in Hugging Face format.

A checkpoint is a folder `DIR/checkpoints/step_000012/` holding:

    model/            save_pretrained (safetensors) + the tokenizer: loadable by transformers and vLLM as is
    optimizer.pt      optimizer and learning-rate scheduler state
    rng.pt            Python, NumPy and torch RNG states
    trainer_state.json  step, data position, MLflow run id, the config it was trained with

It is written to a temporary folder and renamed into place, so an interruption mid-save (a SageMaker spot
reclaim, say) never leaves a half-written checkpoint that `--resume` would pick up. On SageMaker, DIR/checkpoints
is `/opt/ml/checkpoints`, which SageMaker syncs to S3 and restores on restart.
"""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

STEP_PREFIX = "step_"


@dataclass
class TrainerState:
    step: int                   # optimizer steps completed
    data_position: int          # prompts consumed so far (epoch * len(dataset) + offset)
    mlflow_run_id: str | None
    config: dict[str, Any]


def checkpoint_dir(root: str | Path, step: int) -> Path:
    return Path(root) / f"{STEP_PREFIX}{step:06d}"


def save_checkpoint(root: str | Path, state: TrainerState, model, tokenizer, optimizer, scheduler=None,
                    keep_last: int | None = 2) -> Path:
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    final = checkpoint_dir(root, state.step)
    tmp = root / f".tmp_{final.name}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    save_hf_model(model, tokenizer, tmp / "model")
    torch.save({"optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict() if scheduler is not None else None}, tmp / "optimizer.pt")
    torch.save({"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state(),
                "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}, tmp / "rng.pt")
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


def restore_optimizer_and_rng(path: str | Path, optimizer, scheduler=None) -> None:
    path = Path(path)
    opt = torch.load(path / "optimizer.pt", weights_only=False)
    optimizer.load_state_dict(opt["optimizer"])
    if scheduler is not None and opt["scheduler"] is not None:
        scheduler.load_state_dict(opt["scheduler"])
    rng = torch.load(path / "rng.pt", weights_only=False)
    random.setstate(rng["python"])
    np.random.set_state(rng["numpy"])
    torch.set_rng_state(rng["torch"])
    if rng.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(rng["cuda"])
