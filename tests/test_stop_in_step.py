"""A stop (SIGTERM: StopTrainingJob, max_run, a Spot reclaim) during a step's rollout drops the step and saves the
state before it, within the grace, and the restart redoes the step: nothing is lost but the dropped rollout, and the
resumed run ends with the weights of a run never stopped.

- `Interrupts`: StepAbandoned in another thread inside a section (asynchronously), in the current thread from a
  signal handler (ending a blocking wait), never after a section ended.
- one local worker (the one-process trainer): the entry point's SIGTERM handler raises StepAbandoned inside the
  worker's generation (the signal is sent from inside step 2's generate); the checkpoint of step 1 is written, step 2 is
  not logged; the resumed run logs step 2 and its final weights equal an uninterrupted run's, bit for bit.
- two Ray workers: the controller, polling `should_stop` while the workers generate, cuts their generation through
  each actor's control thread; step 1 is saved and the resume trains to the end.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]


def test_an_interrupt_reaches_a_thread_in_a_section_and_never_one_that_left_it():
    from codefu_helpers.workers.interrupt import Interrupts, StepAbandoned

    interrupts, seen = Interrupts(), {}
    inside, done = threading.Event(), threading.Event()

    def busy():
        try:
            with interrupts.section():
                inside.set()
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    sum(range(1000))
            seen["busy"] = "finished"
        except StepAbandoned:
            seen["busy"] = "abandoned"
        try:
            with interrupts.section():
                pass
            done.wait(5)  # an interrupt sent now, outside any section, must not arrive
            for _ in range(10_000):
                sum(range(10))
            seen["after"] = "untouched"
        except StepAbandoned:
            seen["after"] = "hit"

    worker = threading.Thread(target=busy)
    worker.start()
    assert inside.wait(10)
    started = time.monotonic()
    assert interrupts.interrupt() == 1
    while worker.is_alive() and "busy" not in seen and time.monotonic() - started < 10:
        time.sleep(0.01)
    assert seen.get("busy") == "abandoned" and time.monotonic() - started < 5
    assert interrupts.interrupt() == 0 and not interrupts.active()
    done.set()
    worker.join(10)
    assert seen["after"] == "untouched"


def test_a_signal_during_a_blocking_wait_in_a_section_ends_it():
    from codefu_helpers.workers.interrupt import Interrupts, StepAbandoned

    interrupts = Interrupts()
    previous = signal.signal(signal.SIGUSR2, lambda s, f: interrupts.interrupt())
    try:
        timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGUSR2))
        timer.start()
        started = time.monotonic()
        with pytest.raises(StepAbandoned):
            with interrupts.section():
                threading.Event().wait(30)  # a lock wait in C: the handler's exception ends it
        assert time.monotonic() - started < 10
        os.kill(os.getpid(), signal.SIGUSR2)  # outside a section: nothing raised
    finally:
        signal.signal(signal.SIGUSR2, previous)


def _config(python_split, out: Path, **overrides):
    from codefu_helpers.config import ExperimentConfig

    sets = [f"data.train_path={python_split['train']}", "data.val_path=null",
            f"trainer.output_dir={out}", "trainer.total_steps=2", "trainer.test_freq=0", "checkpoint.save_every=1",
            "tracking.backend=none"]
    sets += [f"{k}={v}" for k, v in overrides.items()]
    return ExperimentConfig.from_yaml(REPO / "configs" / "ci_tiny.yaml").with_overrides(sets).validate()


def _trainer(cfg, use_ray: bool):
    from codefu_helpers.trainer import GRPOTrainer, prepare_training

    data = prepare_training(cfg)
    return GRPOTrainer(cfg, data.rows, cfg.trainer.output_dir, val_rows=data.val_rows, start_model=data.start_model,
                       use_ray=use_ray)


def _weights(model_dir: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(model_dir / "model.safetensors"))


@pytest.mark.slow
def test_a_sigterm_inside_a_local_workers_generation_drops_the_step_and_the_resume_is_exact(python_split, tmp_path):
    from codefu_helpers.checkpoint import latest_checkpoint, load_trainer_state
    from codefu_helpers.workers.interrupt import INTERRUPTS

    stopped = threading.Event()

    def on_sigterm(signum, frame):  # what the entry point's handler does once training runs
        stopped.set()
        INTERRUPTS.interrupt()

    previous = signal.signal(signal.SIGUSR2, on_sigterm)
    try:
        cfg = _config(python_split, tmp_path / "stopped")
        trainer = _trainer(cfg, use_ray=False)
        engine = trainer.workers.worker.engine
        original = engine.generate

        def generate(*args, **kwargs):  # step 2's generation: the stop arrives inside it
            if trainer.step_done == 1 and not stopped.is_set():
                os.kill(os.getpid(), signal.SIGUSR2)
            return original(*args, **kwargs)

        engine.generate = generate
        history = trainer.fit(0, should_stop=stopped.is_set)
        trainer.workers.close()
    finally:
        signal.signal(signal.SIGUSR2, previous)
    assert [row["step"] for row in history] == [1], "step 2 was dropped, not logged"
    saved = latest_checkpoint(cfg.checkpoint_dir())
    assert load_trainer_state(saved).step == 1 and not (cfg.checkpoint_dir() / "step_000002").exists()
    assert not (tmp_path / "stopped" / "model").exists()

    resumed = _trainer(cfg, use_ray=False)
    start = resumed.resume()
    rest = resumed.fit(start)
    resumed.workers.close()
    assert start == 1 and [row["step"] for row in rest] == [2]

    straight_cfg = _config(python_split, tmp_path / "straight")
    straight = _trainer(straight_cfg, use_ray=False)
    straight.fit(0)
    straight.workers.close()
    a, b = _weights(tmp_path / "stopped" / "model"), _weights(tmp_path / "straight" / "model")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), "the resumed run diverged"


@pytest.mark.slow
def test_a_stop_while_ray_workers_generate_cuts_them_short_and_the_run_resumes(python_split, tmp_path, capsys):
    from codefu_helpers.checkpoint import latest_checkpoint, load_trainer_state

    cfg = _config(python_split, tmp_path / "ray", **{"trainer.gpus_per_node": 2, "data.max_response_length": 256})
    trainer = _trainer(cfg, use_ray=True)
    asked = []

    def should_stop() -> bool:  # asked once after step 1, then (from the second ask on) while step 2 generates
        if trainer.step_done >= 1:
            asked.append(time.monotonic())
        return len(asked) >= 2

    try:
        history = trainer.fit(0, should_stop=should_stop)
    finally:
        trainer.workers.close()
    out = capsys.readouterr().out
    assert [row["step"] for row in history] == [1]
    assert "stop requested during step 2's rollout (stop requested during generate: every worker left it)" in out
    assert load_trainer_state(latest_checkpoint(cfg.checkpoint_dir())).step == 1
    resumed = _trainer(cfg, use_ray=True)
    try:
        start = resumed.resume()
        assert start == 1 and [row["step"] for row in resumed.fit(start)] == [2]
    finally:
        resumed.workers.close()
