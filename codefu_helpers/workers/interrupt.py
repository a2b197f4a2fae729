"""Cutting a step's rollout short when the job is stopped, so that a stop saves within SageMaker's 120 s grace.

Key idea: a training step is a long rollout (generation, then judging) followed by a short update. A stop (SIGTERM:
StopTrainingJob, max_run, a Spot reclaim) that arrives during the rollout drops the step: nothing of it has touched
the weights yet, so the state to save is the one the previous step left, and the restarted job redoes the step from
its seed (the batch and the sampling seed are functions of the step number). A stop during the update or the weight
sync lets them finish: cut there, the weights would be half a step.

The calls that may be cut run inside `section()`, which registers the thread running them; `interrupt()` raises
`StepAbandoned` in every registered thread of this process: directly when called from that thread (a signal
handler in the main thread, whose exception ends a blocking wait too), else as an asynchronous exception, which
Python raises in that thread at its next bytecode (vLLM's and HF's generation loops run Python between steps). A
Ray worker's interruptible calls run in its default thread and its `interrupt` call in a control thread of its own
(a concurrency group), so the controller can cut a worker's generation while the worker is inside it.

    from codefu_helpers.workers.interrupt import INTERRUPTS, StepAbandoned
    with INTERRUPTS.section():
        groups = engine.generate(...)        # StepAbandoned once INTERRUPTS.interrupt() was called
"""

from __future__ import annotations

import ctypes
import threading
from contextlib import contextmanager

__all__ = ["StepAbandoned", "Interrupts", "INTERRUPTS"]


class StepAbandoned(Exception):
    """A stop arrived during a step's rollout: the step is dropped and the state before it is saved."""


class Interrupts:
    """The threads of this process inside an interruptible call, and the means to cut them short."""

    def __init__(self):
        self._lock = threading.Lock()
        self._threads: dict[int, int] = {}   # thread id -> nesting depth

    @contextmanager
    def section(self):
        """Marks the enclosed code as interruptible in this thread (nested sections count once)."""
        ident = threading.get_ident()
        with self._lock:
            self._threads[ident] = self._threads.get(ident, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                depth = self._threads.pop(ident) - 1
                if depth:
                    self._threads[ident] = depth
                else:  # an interrupt sent but not yet raised must not fire after the section
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), None)

    def active(self) -> bool:
        with self._lock:
            return bool(self._threads)

    def interrupt(self) -> int:
        """Raises StepAbandoned in every thread inside a section; returns how many were other threads (the current
        thread, when inside one, gets the exception raised here, after the others were sent theirs)."""
        here = threading.get_ident()
        with self._lock:
            others = [t for t in self._threads if t != here]
            mine = here in self._threads
            for ident in others:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(StepAbandoned))
        if mine:
            raise StepAbandoned("stop requested during the rollout")
        return len(others)


INTERRUPTS = Interrupts()  # this process's
