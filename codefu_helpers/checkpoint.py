"""Checkpoints that resume exactly, and the final model in Hugging Face format.

A checkpoint is a folder `DIR/checkpoints/step_000012/` holding:

    dcp/              torch.distributed.checkpoint: model and optimizer state, one shard file per worker; it loads
                      onto any number of workers (resharded on load), so a run may resume on more or fewer devices
    model/            the whole model, save_pretrained (safetensors) + the tokenizer: transformers and vLLM load it
    scheduler.pt      learning-rate schedule state
    rng/rank_NNNNN.pt Python, NumPy and torch RNG states of each worker
    trainer_state.json  step, data position, MLflow run id, worker count, the config it was trained with

The workers write their parts (`workers.Worker.save`) into a temporary folder that is renamed into place only after
all of them finished. A worker on another host than the controller writes its part to scratch on its own disk,
which the controller copies into the folder in 64 MiB chunks (it never holds more than one), so a checkpoint is
whole on the controller's host without a shared filesystem.

A checkpoint is trusted only when it is *complete*: the last file written into it is `checkpoint_complete.json`
(COMPLETE_MARKER), the manifest of every other file with its size. On SageMaker, DIR/checkpoints is
`/opt/ml/checkpoints`, which SageMaker uploads to S3 file by file as files appear (and deletes there what is
deleted here), and downloads onto a fresh disk when a job restarts. An interruption in the middle of that upload
leaves S3 with part of a checkpoint: trainer_state.json but not every shard, or the marker without the files it
lists. `latest_checkpoint` therefore returns the newest checkpoint whose marker exists and whose every listed file
is present with its recorded size (`verify_checkpoint`), and `skipped_checkpoints` names the newer ones it passed
over and why. Pruning to `keep_last` happens after the marker is written, so the previous complete checkpoint is
still on disk (and in S3) while the new one uploads; SageMaker jobs need keep_last >= 2 for that reason. Before a
resume, a host whose disk lacks files of the checkpoint gets them from the controller, and each worker there checks
its disk before it loads.

The final model goes to `<output_dir>/model` (MODEL_DIR) in the same HF format, with `codefu_training.json`
(TRAINING_RECORD) beside its weights: the problems it was trained on and the model GRPO started from, which
`codefu_helpers.evaluate` reads to tell seen problems from held-out ones.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

STEP_PREFIX = "step_"
COMPLETE_MARKER = "checkpoint_complete.json"   # written last into a checkpoint: {"step", "files": {path: size}}
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
    """`write(folder)` fills a temporary folder (the workers' parts), then trainer_state.json is added, the folder
    renamed to step_NNNNNN and COMPLETE_MARKER written into it last; then checkpoints older than the newest
    `keep_last` complete ones are deleted (and any incomplete leftover below them). Returns the checkpoint folder."""
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
    mark_complete(final, state.step)
    if keep_last:
        prune_checkpoints(root, keep_last)
    return final


def mark_complete(folder: str | Path, step: int) -> Path:
    """Writes COMPLETE_MARKER into `folder`: the manifest of every file there, with its size. Written to a hidden
    temporary name first and renamed, so the marker never exists half-written."""
    folder = Path(folder)
    files = {rel: size for rel, size in folder_manifest(folder).items() if rel != COMPLETE_MARKER}
    tmp = folder / f".{COMPLETE_MARKER}.tmp"
    tmp.write_text(json.dumps({"step": step, "files": files}, indent=1))
    os.replace(tmp, folder / COMPLETE_MARKER)
    return folder / COMPLETE_MARKER


def verify_checkpoint(folder: str | Path) -> list[str]:
    """Why checkpoint `folder` cannot be trusted (empty when it is complete): no COMPLETE_MARKER, or a file the
    marker lists that is missing or has another size (an upload or download that stopped part-way)."""
    folder = Path(folder)
    marker = folder / COMPLETE_MARKER
    if not marker.exists():
        return [f"no {COMPLETE_MARKER}: it was interrupted while being written or uploaded"]
    try:
        files = json.loads(marker.read_text())["files"]
    except (ValueError, KeyError, TypeError) as exc:
        return [f"{COMPLETE_MARKER} is unreadable ({type(exc).__name__}: {exc})"]
    problems = []
    for rel, size in files.items():
        path = folder / rel
        if not path.is_file():
            problems.append(f"{rel} is missing")
        elif path.stat().st_size != size:
            problems.append(f"{rel} has {path.stat().st_size} bytes, the marker says {size}")
    return problems


def prune_checkpoints(root: str | Path, keep_last: int) -> list[Path]:
    """Deletes every step folder older than the newest `keep_last` complete checkpoints; returns what it deleted.
    Nothing is deleted while fewer than `keep_last` complete checkpoints exist."""
    kept = list_checkpoints(root)[-keep_last:]
    if len(kept) < keep_last:
        return []
    removed = [p for p in _step_folders(root) if p.name < kept[0].name]
    for folder in removed:
        shutil.rmtree(folder, ignore_errors=True)
    return removed


def save_hf_model(model, tokenizer, path: str | Path) -> Path:
    """The model (unwrapped, contiguous weights, safetensors) and tokenizer, as transformers/vLLM load them."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path, safe_serialization=True)
    if tokenizer is not None:
        tokenizer.save_pretrained(path)
    return path


def _step_folders(root: str | Path) -> list[Path]:
    root = Path(root)
    if not root.exists():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith(STEP_PREFIX))


def list_checkpoints(root: str | Path) -> list[Path]:
    """The complete checkpoints under `root`, oldest first (see `verify_checkpoint`)."""
    return [p for p in _step_folders(root) if not verify_checkpoint(p)]


def latest_checkpoint(root: str | Path) -> Path | None:
    """The newest complete checkpoint under `root`, or None."""
    found = list_checkpoints(root)
    return found[-1] if found else None


def skipped_checkpoints(root: str | Path) -> dict[Path, list[str]]:
    """Step folders newer than the latest complete checkpoint, with why each is not trusted."""
    latest = latest_checkpoint(root)
    return {p: problems for p in _step_folders(root)
            if (latest is None or p.name > latest.name) and (problems := verify_checkpoint(p))}


def folder_manifest(folder: str | Path) -> dict[str, int]:
    """{relative path: size} of every file under `folder`."""
    folder = Path(folder)
    return {str(f.relative_to(folder)): f.stat().st_size for f in sorted(folder.rglob("*")) if f.is_file()}


def missing_files(folder: str | Path, manifest: dict[str, int]) -> list[str]:
    """Files of `manifest` that `folder` lacks or holds with another size."""
    here = folder_manifest(folder) if Path(folder).is_dir() else {}
    return [rel for rel, size in manifest.items() if here.get(rel) != size]


def load_trainer_state(path: str | Path) -> TrainerState:
    return TrainerState(**json.loads((Path(path) / "trainer_state.json").read_text()))
