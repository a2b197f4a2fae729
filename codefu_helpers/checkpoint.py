"""Checkpoints that resume exactly, and the final model in Hugging Face format.

A checkpoint is a folder `DIR/checkpoints/step_000012/` holding:

    dcp/              torch.distributed.checkpoint: model and optimizer state, one shard file per worker; it loads
                      onto any number of workers (resharded on load), so a run may resume on more or fewer devices
    model/            the whole model, save_pretrained (safetensors) + the tokenizer: transformers and vLLM load it
    scheduler.pt      learning-rate schedule state
    rng/rank_NNNNN.pt Python, NumPy and torch RNG states of each worker
    trainer_state.json  step, data position, MLflow run id, worker count, the config it was trained with

The workers write their parts (`workers.Worker.save`) straight into the step's folder (a rename would make SageMaker
upload everything twice); the marker written last says it is whole. A worker on another host than the controller writes its part to scratch on its own disk,
which the controller copies into the folder in 64 MiB chunks (it never holds more than one), so a checkpoint is
whole on the controller's host without a shared filesystem.

A checkpoint is trusted only when it is *complete*: the last file written into it is `checkpoint_complete.json`
(COMPLETE_MARKER), the manifest of every other file with its size and sha256. On SageMaker, DIR/checkpoints is
`/opt/ml/checkpoints`, which SageMaker uploads to S3 file by file as files appear (and deletes there what is
deleted here), and downloads onto a fresh disk when a job restarts. An interruption in the middle of that upload
leaves S3 with part of a checkpoint: trainer_state.json but not every shard, or the marker without the files it
lists. `latest_checkpoint` therefore returns the newest checkpoint whose marker exists and whose every listed file
is present with its recorded size (`verify_checkpoint`), and `skipped_checkpoints` names the newer ones it passed
over and why; before a resume the content is checked too (`latest_checkpoint(root, content=True)`): a stale file of
the same size, restored from an earlier attempt's upload, is caught by its sha256. Pruning to `keep_last` happens after the marker is written, so the previous complete checkpoint is
still on disk (and in S3) while the new one uploads; SageMaker jobs need keep_last >= 2 for that reason. Before a
resume, a host whose disk lacks files of the checkpoint gets them from the controller, and each worker there checks
its disk before it loads.

The final model goes to `<output_dir>/model` (MODEL_DIR) in the same HF format, with `codefu_training.json`
(TRAINING_RECORD) beside its weights: the problems it was trained on and the model GRPO started from, which
`codefu_helpers.evaluate` reads to tell seen problems from held-out ones.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

STEP_PREFIX = "step_"
COMPLETE_MARKER = "checkpoint_complete.json"   # written last: {"step", "files": {path: size}, "sha256": {path: hex}}
MODEL_DIR = "model"                         # <output_dir>/model: the final model (SageMaker: /opt/ml/model)
TRAINING_RECORD = "codefu_training.json"    # in the model folder: the problems trained on, what GRPO started from


@dataclass
class TrainerState:
    step: int                   # optimizer steps completed
    data_position: int          # prompts consumed so far (epoch * len(dataset) + offset)
    mlflow_run_id: str | None
    config: dict[str, Any]
    world_size: int = 1         # workers that wrote it (a resume may use another number)
    curriculum: dict[str, list[str]] | None = None  # data.curriculum: each problem's last visits' outcomes


def checkpoint_dir(root: str | Path, step: int) -> Path:
    return Path(root) / f"{STEP_PREFIX}{step:06d}"


def write_checkpoint(root: str | Path, state: TrainerState, write: Callable[[Path], None],
                     keep_last: int | None = 2) -> Path:
    """`write(folder)` fills step_NNNNNN (the workers' parts; an older folder of that step is removed first), then
    trainer_state.json is added and COMPLETE_MARKER written last; then checkpoints older than the newest `keep_last`
    complete ones are deleted (and any incomplete leftover below them, and temporary folders of an older version of
    this module). The files are written where they stay: SageMaker uploads each file of /opt/ml/checkpoints as it
    appears, and a write-then-rename would upload every checkpoint twice (under the temporary name, then the final
    one); the marker, not the folder's name, says a checkpoint is whole. Returns the checkpoint folder."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    final = checkpoint_dir(root, state.step)
    shutil.rmtree(final, ignore_errors=True)
    final.mkdir()
    write(final)
    (final / "trainer_state.json").write_text(json.dumps(state.__dict__, indent=1, default=str))
    mark_complete(final, state.step)
    for leftover in root.glob(f".tmp_{STEP_PREFIX}*"):  # an interrupted save of the write-then-rename days
        shutil.rmtree(leftover, ignore_errors=True)
    if keep_last:
        prune_checkpoints(root, keep_last)
    return final


def file_digests(folder: str | Path, files: list[str], threads: int | None = None) -> dict[str, str]:
    """{relative path: sha256 hex} of `files` under `folder`, hashed in parallel threads (hashlib releases the GIL):
    a 7B model's state (~90 GiB over a host's workers) takes seconds on a GPU host's cores, not minutes."""
    from concurrent.futures import ThreadPoolExecutor

    folder = Path(folder)

    def digest(rel: str) -> str:
        h = hashlib.sha256()
        with open(folder / rel, "rb") as f:
            while chunk := f.read(8 << 20):
                h.update(chunk)
        return h.hexdigest()

    workers = threads or min(32, max(1, (os.cpu_count() or 1)), max(1, len(files)))
    with ThreadPoolExecutor(workers) as pool:
        return dict(zip(files, pool.map(digest, files)))


def mark_complete(folder: str | Path, step: int) -> Path:
    """Writes COMPLETE_MARKER into `folder`: the manifest of every file there, with its size and sha256. Written to
    a hidden temporary name first and renamed, so the marker never exists half-written."""
    folder = Path(folder)
    files = {rel: size for rel, size in folder_manifest(folder).items() if rel != COMPLETE_MARKER}
    tmp = folder / f".{COMPLETE_MARKER}.tmp"
    tmp.write_text(json.dumps({"step": step, "files": files, "sha256": file_digests(folder, list(files))}, indent=1))
    os.replace(tmp, folder / COMPLETE_MARKER)
    return folder / COMPLETE_MARKER


def verify_checkpoint(folder: str | Path, content: bool = False) -> list[str]:
    """Why checkpoint `folder` cannot be trusted (empty when it is complete): no COMPLETE_MARKER, or a file the
    marker lists that is missing or has another size (an upload or download that stopped part-way); with `content`,
    also a file whose sha256 is not the marker's (a stale file of the same size, e.g. restored from an earlier
    attempt's upload). Sizes are cheap and checked always; content is read in full, so it is checked before a resume."""
    folder = Path(folder)
    marker = folder / COMPLETE_MARKER
    if not marker.exists():
        return [f"no {COMPLETE_MARKER}: it was interrupted while being written or uploaded"]
    try:
        record = json.loads(marker.read_text())
        files, digests = record["files"], record.get("sha256", {})
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return [f"{COMPLETE_MARKER} is unreadable ({type(exc).__name__}: {exc})"]
    problems = []
    for rel, size in files.items():
        path = folder / rel
        if not path.is_file():
            problems.append(f"{rel} is missing")
        elif path.stat().st_size != size:
            problems.append(f"{rel} has {path.stat().st_size} bytes, the marker says {size}")
    if content and not problems:
        if set(digests) != set(files):
            return [f"{COMPLETE_MARKER} has no sha256 for {sorted(set(files) - set(digests))[:3]}: written by an older "
                    "version; its content cannot be checked"]
        seen = file_digests(folder, list(files))
        problems += [f"{rel} has other content than the marker's sha256 (same size)" for rel in files
                     if seen[rel] != digests[rel]]
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
    """The complete checkpoints under `root`, oldest first (see `verify_checkpoint`; sizes only)."""
    return [p for p in _step_folders(root) if not verify_checkpoint(p)]


def latest_checkpoint(root: str | Path, content: bool = False) -> Path | None:
    """The newest complete checkpoint under `root`, or None; with `content`, the newest whose files also match the
    marker's sha256 (read in full, newest first, until one does: what a resume loads)."""
    if not content:
        found = list_checkpoints(root)
        return found[-1] if found else None
    return next((p for p in reversed(_step_folders(root)) if not verify_checkpoint(p, content=True)), None)


def skipped_checkpoints(root: str | Path, content: bool = False, latest: Path | None = None) -> dict[Path, list[str]]:
    """Step folders newer than the latest complete checkpoint (`latest` when the caller found it already), with why
    each is not trusted."""
    latest = latest if latest is not None else latest_checkpoint(root, content)
    return {p: problems for p in _step_folders(root)
            if (latest is None or p.name > latest.name) and (problems := verify_checkpoint(p, content))}


def folder_manifest(folder: str | Path) -> dict[str, int]:
    """{relative path: size} of every file under `folder`."""
    folder = Path(folder)
    return {str(f.relative_to(folder)): f.stat().st_size for f in sorted(folder.rglob("*")) if f.is_file()}


def missing_files(folder: str | Path, manifest: dict[str, int | list]) -> list[str]:
    """Files of `manifest` ({path: size} or {path: [size, sha256]}) that `folder` lacks or holds with another size,
    or, where a sha256 is given, with other content."""
    here = folder_manifest(folder) if Path(folder).is_dir() else {}
    out, check = [], {}
    for rel, want in manifest.items():
        size, digest = (want, None) if isinstance(want, int) else want
        if here.get(rel) != size:
            out.append(rel)
        elif digest:
            check[rel] = digest
    if check:
        seen = file_digests(folder, list(check))
        out += [rel for rel, digest in check.items() if seen[rel] != digest]
    return out


def load_manifest(folder: str | Path, keep: Callable[[str], bool] = lambda rel: True) -> dict[str, list]:
    """{path: [size, sha256]} of the files of checkpoint `folder` that `keep` selects, from its COMPLETE_MARKER."""
    record = json.loads((Path(folder) / COMPLETE_MARKER).read_text())
    digests = record.get("sha256", {})
    return {rel: [size, digests.get(rel)] for rel, size in record["files"].items() if keep(rel)}


def load_trainer_state(path: str | Path) -> TrainerState:
    return TrainerState(**json.loads((Path(path) / "trainer_state.json").read_text()))
