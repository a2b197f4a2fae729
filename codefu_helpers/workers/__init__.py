"""Distributed GRPO: a single controller (the trainer loop) driving workers; one worker is the one-process run.

    controller (codefu_helpers.trainer: the loop; with Ray, the Ray driver)
      ├─ judge pool   in process (threads) | a Ray actor per node               scores samples as they are drawn
      └─ workers      one in process       | trainer.nnodes x gpus_per_node Ray actors, FSDP2 over a process group
            each: Policy (model shard + reference shard + optimizer shard) and its rollout engine

The loop is written once against `WorkerGroup` (`group.py`): generate (prompts split over workers) -> judge ->
advantages (controller) -> old/reference log-probs -> per mini-batch one update on every worker (samples dealt by
token count, loss normalised over the whole mini-batch) -> weight sync into the engines -> checkpoint
(torch.distributed.checkpoint shards, which reload on any number of workers).

Modules: `batching` (token balancing, micro-batches), `policy` (FSDP2 sharding, log-probs, the update),
`worker` (one rank), `judge` (judge pools), `group` (the controller's side, local or Ray).
"""

from .group import LocalWorkerGroup, RayWorkerGroup, WorkerError, WorkerGroup, build_worker_group

__all__ = ["WorkerGroup", "LocalWorkerGroup", "RayWorkerGroup", "WorkerError", "build_worker_group"]
