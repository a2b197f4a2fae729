#!/usr/bin/env python3
"""Stands in for `python -m verl.trainer.main_ppo <overrides>` in a simulated SageMaker job (tests only).

verl's FSDP workers and vLLM rollout need CUDA, so verl itself cannot train on this CPU machine. What the entry point
has to get right around it is where verl's files land on a cluster whose hosts share no disk, and that this stand-in
reproduces with real Ray actors on the job's real Ray cluster ($RAY_ADDRESS):

- ranks ordered as verl 0.9.1 orders them (`sort_placement_group_by_node_ip`: by each node's address as text,
  trainer.n_gpus_per_node ranks per node), each rank an actor on its node writing its shard files
  (`{model,optim,extra_state}_world_size_W_rank_R.pt`) into global_step_N/actor under trainer.default_local_dir on
  its own host's disk;
- rank 0 also writing fsdp_config.json and the whole model in HF format (global_step_N/actor/huggingface: the files
  of actor_rollout_ref.model.path) and pruning to trainer.max_actor_ckpt_to_keep, on its host;
- the driver writing data.pt and latest_checkpointed_iteration.txt on its host (the head here);
- a save every trainer.save_freq steps and at trainer.total_training_steps, resuming from the recorded step.

Usage (as the entry point's --verl-python): verl_standin.py -m verl.trainer.main_ppo KEY=VALUE ...
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path


def _overrides(argv: list[str]) -> dict[str, str]:
    if argv[:2] != ["-m", "verl.trainer.main_ppo"]:
        raise SystemExit(f"verl_standin.py runs `-m verl.trainer.main_ppo OVERRIDES`, not {argv[:2]}")
    return dict(a.lstrip("+").split("=", 1) for a in argv[2:] if "=" in a)


def main(argv: list[str]) -> int:
    import ray
    import torch

    o = _overrides(argv)
    root = Path(o["trainer.default_local_dir"])
    total, save_freq = int(o["trainer.total_training_steps"]), int(o["trainer.save_freq"])
    nnodes, per_node = int(o["trainer.nnodes"]), int(o["trainer.n_gpus_per_node"])
    keep, model = int(o["trainer.max_actor_ckpt_to_keep"]), Path(o["actor_rollout_ref.model.path"])
    world = nnodes * per_node

    ray.init(address=os.environ["RAY_ADDRESS"], logging_level="ERROR", log_to_driver=False)
    nodes = [n for n in ray.nodes() if n["Alive"]][:nnodes]
    nodes.sort(key=lambda n: n["NodeManagerAddress"])  # verl's rank order: the node's address as text

    @ray.remote(num_cpus=0)
    class Rank:
        def __init__(self, rank: int):
            self.rank = rank

        def save(self, step: int) -> str:
            actor = root / f"global_step_{step}" / "actor"
            actor.mkdir(parents=True, exist_ok=True)
            for kind in ("model", "optim", "extra_state"):
                torch.save({"rank": self.rank, "step": step}, actor / f"{kind}_world_size_{world}_rank_{self.rank}.pt")
            if self.rank == 0:
                (actor / "fsdp_config.json").write_text(json.dumps({"FSDP_version": 2, "world_size": world}))
                shutil.copytree(model, actor / "huggingface", dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("codefu_training.json"))
                steps = sorted((int(p.name.split("_")[-1]), p) for p in root.glob("global_step_*"))
                for _, old in steps[:-keep] if keep > 0 else []:
                    shutil.rmtree(old, ignore_errors=True)
            return ray.util.get_node_ip_address()

    ranks = [Rank.options(resources={f"host:{node['NodeName']}": 0.001}).remote(node_index * per_node + local)
             for node_index, node in enumerate(nodes) for local in range(per_node)]
    record = root / "latest_checkpointed_iteration.txt"
    start = int(record.read_text()) if record.exists() else 0
    placed = {r: nodes[r // per_node]["NodeName"] for r in range(world)}
    print(f"verl stand-in: ranks {placed}; steps {start + 1}..{total}", flush=True)
    for step in range(start + 1, total + 1):
        if step % save_freq == 0 or step == total:
            ray.get([rank.save.remote(step) for rank in ranks])
            (root / f"global_step_{step}").mkdir(parents=True, exist_ok=True)
            torch.save({"step": step}, root / f"global_step_{step}" / "data.pt")
            record.write_text(str(step))
    ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
