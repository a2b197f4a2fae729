"""`checkpoint.save_every_minutes` for verl: a time-based save beside verl's step-based `trainer.save_freq`.

Key idea: verl 0.9.1's training loop asks `should_save_ckpt_esi(...)` after every update whether to save now, besides
every `save_freq` steps (it is how verl saves before a capacity block expires). This hook, run in every Ray worker
process of a verl run (`ray_kwargs.ray_init.runtime_env.worker_process_setup_hook`, set by `verl_overrides` when
checkpoint.save_every_minutes > 0), wraps that function so that it also answers True once the interval has passed
since the last save: verl's own saves (the step record `latest_checkpointed_iteration.txt` in the checkpoint
folder changes with each) and those the hook asked for. The interval and the folder travel as environment variables
of the run (SAVE_EVERY_ENV, CHECKPOINT_DIR_ENV). verl's loop imports the function by name when its module loads, so
the hook replaces it in `checkpoint_manager` before that and in `ray_trainer` if it was loaded already.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

__all__ = ["setup", "SAVE_EVERY_ENV", "CHECKPOINT_DIR_ENV"]

SAVE_EVERY_ENV = "CODEFU_SAVE_EVERY_MINUTES"
CHECKPOINT_DIR_ENV = "CODEFU_VERL_CHECKPOINT_DIR"
RECORD = "latest_checkpointed_iteration.txt"  # verl writes it with every save


def _last_record_time(folder: str | None) -> float:
    try:
        return (Path(folder) / RECORD).stat().st_mtime if folder else 0.0
    except OSError:
        return 0.0


def setup() -> None:
    """Installs the time-based save in this process (a no-op without SAVE_EVERY_ENV or without verl)."""
    minutes = float(os.environ.get(SAVE_EVERY_ENV) or 0)
    if minutes <= 0:
        return
    try:
        from verl.utils.checkpoint import checkpoint_manager
    except ImportError:  # a Ray worker of another job on the cluster
        return
    native = checkpoint_manager.should_save_ckpt_esi
    if getattr(native, "codefu_wrapped", False):
        return
    folder = os.environ.get(CHECKPOINT_DIR_ENV)
    started = time.time()
    asked = {"last": started}

    def should_save_ckpt_esi(max_steps_duration: float, save_ckpt_duration: float = 60,
                             redundant_time: float = 0) -> bool:
        last = max(asked["last"], _last_record_time(folder))
        due = time.time() - last >= 60 * minutes
        if due:
            asked["last"] = time.time()
            print(f"saving a checkpoint: {minutes:g} minutes since the last save (checkpoint.save_every_minutes)",
                  flush=True)
        return native(max_steps_duration, save_ckpt_duration, redundant_time) or due

    should_save_ckpt_esi.codefu_wrapped = True
    checkpoint_manager.should_save_ckpt_esi = should_save_ckpt_esi
    loop = sys.modules.get("verl.trainer.ppo.ray_trainer")
    if loop is not None:
        loop.should_save_ckpt_esi = should_save_ckpt_esi
