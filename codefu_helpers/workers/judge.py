"""The judge pool: scores samples while generation goes on; in process (threads) or as one Ray actor per node.

Both pools hand out a *handle* per submitted sample and turn handles into `reward.Scored` results with
`results(handles)`. A worker submits each sample the moment it exists (`RolloutEngine.generate`'s `on_sample`), so
judging overlaps generation; the controller waits for the handles after generation.

- `LocalJudgePool`: a thread pool calling `reward.score_response` in this process (the judge itself is the
  process-wide sandboxed `codefu_helpers.sandbox` judge, whose fork servers run the programs).
- `RayJudgePool`: one `JudgeActor` per Ray node (a threaded actor, `reward.num_workers` calls at a time), so reward
  work spreads over every host; a worker submits to the actor on its own node. An actor that dies turns its
  pending samples into judge errors, which are excluded from the update and counted, like any judge failure.

`reward.num_workers` = 0 sizes each pool by the node's spare cores: its CPUs minus the training workers on it.
`results(handles, timeout_s)` waits at most `timeout_s` for all of them (the trainer passes
trainer.worker_timeout_s): a sample still unjudged then is a judge error (excluded and counted), never a hang.
"""

from __future__ import annotations

import math
import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Callable

from ..reward import Scored, score_response


def pool_size(num_workers: int, training_workers_here: int, cpus: int | None = None) -> int:
    """reward.num_workers, or (0) the cores this node has beyond its training workers, at least 1."""
    if num_workers > 0:
        return num_workers
    return max(1, (cpus or os.cpu_count() or 1) - training_workers_here)


JUDGE_START_TIMEOUT_S = 300


def _deadline(timeout_s: float | None) -> float:
    return math.inf if timeout_s is None else time.monotonic() + timeout_s


def _left(deadline: float) -> float | None:
    return None if deadline == math.inf else max(0.0, deadline - time.monotonic())


POLL_S = 1.0  # how often a wait for the judge asks whether the job is stopping


def _check_stop(should_stop: Callable[[], bool] | None) -> None:
    if should_stop is not None and should_stop():
        from .interrupt import StepAbandoned

        raise StepAbandoned("stop requested while the step's samples were being judged")


def _unanswered(timeout_s: float | None) -> Scored:
    return Scored(0.0, False, True, "judge_error",
                  {"error": f"the judge did not answer within trainer.worker_timeout_s={timeout_s:g} s"})


class LocalJudgePool:
    """Threads in this process; handles are `concurrent.futures.Future`s."""

    def __init__(self, compute_score: Callable, size: int, reward_mode: str):
        self.compute_score, self.reward_mode = compute_score, reward_mode
        self.pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix="judge")

    def submit(self, text: str, row: dict) -> Future:
        return self.pool.submit(score_response, self.compute_score, text, row, self.reward_mode)

    def results(self, handles: list, timeout_s: float | None = None,
                should_stop: Callable[[], bool] | None = None) -> list[Scored]:
        """The scores of `handles` in order; a judge unanswered by the deadline is a judge error. StepAbandoned as
        soon as `should_stop()` says so (asked at least every second)."""
        deadline = _deadline(timeout_s)
        out = []
        for handle in handles:
            while True:
                _check_stop(should_stop)
                left = _left(deadline)
                try:
                    out.append(handle.result(timeout=left if should_stop is None else min(POLL_S, left or POLL_S)))
                    break
                except FutureTimeout:
                    if should_stop is None or (left is not None and left <= POLL_S):
                        out.append(_unanswered(timeout_s))
                        break
        return out

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


class JudgeActor:
    """Body of the per-node Ray actor: `score` runs `reward.score_response` (threaded actor: concurrent calls)."""

    def __init__(self, compute_score: Callable | None, reward_mode: str):
        if compute_score is None:
            from ..reward import compute_score
        self.compute_score, self.reward_mode = compute_score, reward_mode

    def score(self, text: str, row: dict) -> Scored:
        return score_response(self.compute_score, text, row, self.reward_mode)

    def ping(self) -> str:
        import ray

        return ray.get_runtime_context().get_node_id()


class RayJudgeClient:
    """What a worker holds: the judge actor of its node; handles are Ray object refs."""

    def __init__(self, actor):
        self.actor = actor
        self._rows: dict[int, object] = {}  # id(row) -> object ref: a problem's tests are shipped once, not per sample

    def submit(self, text: str, row: dict):
        import ray

        ref = self._rows.get(id(row))
        if ref is None:
            ref = self._rows[id(row)] = ray.put(row)
        return self.actor.score.remote(text, ref)

    def forget_rows(self) -> None:
        self._rows.clear()


class RayJudgePool:
    """One JudgeActor per alive Ray node, pinned to it; `client(node_id)` for the workers of that node."""

    def __init__(self, compute_score: Callable | None, reward_mode: str, num_workers: int,
                 training_workers_per_node: dict[str, int]):
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        remote = ray.remote(JudgeActor)
        self.actors = {}
        for node in ray.nodes():
            if not node.get("Alive"):
                continue
            node_id = node["NodeID"]
            cpus = int(node.get("Resources", {}).get("CPU", 1))
            size = pool_size(num_workers, training_workers_per_node.get(node_id, 0), cpus)
            self.actors[node_id] = remote.options(
                num_cpus=0, max_concurrency=size, name=None,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
            ).remote(compute_score, reward_mode)
        try:
            ray.get([a.ping.remote() for a in self.actors.values()], timeout=JUDGE_START_TIMEOUT_S)
        except ray.exceptions.GetTimeoutError:
            raise RuntimeError(f"the judge actors of {len(self.actors)} Ray node(s) did not start within "
                               f"{JUDGE_START_TIMEOUT_S} s; check the nodes' logs (ray status)") from None

    def client(self, node_id: str) -> RayJudgeClient:
        return RayJudgeClient(self.actors[node_id])

    def results(self, handles: list, timeout_s: float | None = None,
                should_stop: Callable[[], bool] | None = None) -> list[Scored]:
        """As LocalJudgePool.results, for object refs."""
        import ray

        deadline = _deadline(timeout_s)
        out = []
        for handle in handles:
            while True:
                _check_stop(should_stop)
                left = _left(deadline)
                try:
                    out.append(ray.get(handle, timeout=left if should_stop is None else min(POLL_S, left or POLL_S)))
                    break
                except ray.exceptions.GetTimeoutError:
                    if should_stop is None or (left is not None and left <= POLL_S):
                        out.append(_unanswered(timeout_s))
                        break
                except (ray.exceptions.RayActorError, ray.exceptions.ObjectLostError) as exc:
                    out.append(Scored(0.0, False, True, "judge_error", {"error": f"judge actor lost: {exc}"}))
                    break
        return out

    def close(self) -> None:
        import ray

        for actor in self.actors.values():
            ray.kill(actor)
        self.actors = {}
