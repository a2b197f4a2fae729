"""One worker (one rank): a policy shard, its colocated rollout engine, a judge client; driven by the controller.

The controller calls `Worker.call(method, *args)` on every worker of the group with that worker's share of the data;
the methods are the steps of a GRPO step (`generate`, `log_probs`, `update`, `sync_weights`) and of the run around
it (`save`, `load`, `export`, `validate`). In a one-worker run the `Worker` lives in the controller's process and
is called directly; in a Ray run each worker is a Ray actor on its own device (CPU: its own process) and joins a
torch.distributed process group (NCCL on GPU, gloo on CPU) for FSDP2's collectives.

Rollout: a one-worker run generates with the training model itself (HF) or streams its weights into vLLM. A sharded
worker holds only shards, so its HF engine samples from a whole copy of the model (`rollout_model`), refreshed
after every update by `sync_weights` (a gathering of the full weights: a collective).
"""

from __future__ import annotations

import copy
import random
import warnings
from contextlib import contextmanager
import socket
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import torch

from ..checkpoint import save_hf_model
from ..rollout import HFRollout, Sample, SamplingParams
from ..trainer import load_model_and_tokenizer, pack, pass_rate

# A worker that stops answering (hung, not dead) makes the others' collectives fail after this long: the run
# then stops with that error instead of waiting forever. Dead workers are noticed by Ray at once.
COLLECTIVE_TIMEOUT = timedelta(minutes=10)


class Worker:
    """See the module docstring. `start` builds everything; the constructor only records the config."""

    def __init__(self, cfg):
        from ..config import ExperimentConfig

        self.cfg = cfg if isinstance(cfg, ExperimentConfig) else ExperimentConfig.from_dict(cfg)
        self.rank, self.world_size = 0, 1

    def call(self, method: str, *args, **kwargs) -> tuple[float, object]:
        """(seconds spent in the method, its result): the controller subtracts this from the call's wall time
        to see what the orchestration cost."""
        start = time.perf_counter()
        result = getattr(self, method)(*args, **kwargs)
        return time.perf_counter() - start, result

    # -- start -----------------------------------------------------------------------------------------

    def node_info(self) -> dict:
        """Where this worker runs: Ray node id, IP address, and a free port (used when this worker is rank 0)."""
        import ray

        ip = ray.util.get_node_ip_address()
        with socket.socket() as s:
            s.bind(("", 0))
            port = s.getsockname()[1]
        return {"node_id": ray.get_runtime_context().get_node_id(), "ip": ip, "port": port}

    def start(self, start_model: str, *, rank: int = 0, world_size: int = 1, nnodes: int = 1,
              master: tuple[str, int] | None = None, judge=None, model=None, tokenizer=None,
              total_updates: int = 1) -> str:
        """Joins the process group (world_size > 1), loads and shards the model, builds the engine; returns the
        engine's backend (hf or vllm)."""
        from .policy import Policy, device_mesh

        cfg = self.cfg
        self.rank, self.world_size, self.judge = rank, world_size, judge
        device = torch.device(cfg.model.resolved_device())
        if device.type == "cuda":
            torch.cuda.set_device(0 if device.index is None else device.index)  # Ray shows each actor one GPU
        mesh = None
        if world_size > 1:
            import torch.distributed as dist

            dist.init_process_group("nccl" if device.type == "cuda" else "gloo", rank=rank, world_size=world_size,
                                    init_method=f"tcp://{master[0]}:{master[1]}", timeout=COLLECTIVE_TIMEOUT)
            mesh = device_mesh(nnodes, world_size // nnodes, device.type)
        torch.manual_seed(cfg.trainer.seed)
        if model is None or tokenizer is None:
            model, tokenizer = load_model_and_tokenizer(cfg.model, path=start_model)
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.tokenizer = tokenizer
        model = model.to(device)
        reference = copy.deepcopy(model) if cfg.algorithm.use_kl_loss else None
        # sharded: the engine needs whole weights, so it gets its own copy (kept in sync after every update)
        self.rollout_model = copy.deepcopy(model).eval().requires_grad_(False) if mesh is not None else model
        self.policy = Policy(model, reference, cfg, total_updates=total_updates, mesh=mesh, world_size=world_size,
                             mixed_precision=device.type == "cuda" and mesh is not None,
                             cpu_offload=cfg.trainer.fsdp_cpu_offload and device.type == "cuda")
        self.device = device
        self.engine = self._engine()
        if hasattr(self.engine, "startup_seconds") and rank == 0:
            print(f"{self.engine.backend} rollout engine started in {self.engine.startup_seconds:.1f} s", flush=True)
        return self.engine.backend

    def _engine(self):
        cfg = self.cfg
        if cfg.rollout.backend == "hf":
            return HFRollout(self.rollout_model, self.tokenizer)
        from ..rollout import build_rollout_engine

        return build_rollout_engine(cfg.rollout, self.rollout_model, self.tokenizer,
                                    max_model_len=cfg.data.max_prompt_length + cfg.data.max_response_length,
                                    seed=cfg.trainer.seed)

    @property
    def hf_model(self) -> torch.nn.Module:
        """A whole HF model holding the current weights (the policy itself, or the synced rollout copy)."""
        return self.rollout_model

    # -- the step --------------------------------------------------------------------------------------

    def generate(self, prompts: list, rows: list[dict], n: int, params: SamplingParams) -> tuple[list, list]:
        """n samples per prompt from this worker's engine; each sample goes to the judge the moment it exists.
        Returns (groups, [(prompt index in `prompts`, sample, judge handle)])."""
        judged = []

        def on_sample(index: int, sample: Sample) -> None:
            judged.append((index, sample, self.judge.submit(sample.text, rows[index])))

        groups = self.engine.generate(prompts, n, params, on_sample=on_sample)
        if hasattr(self.judge, "forget_rows"):
            self.judge.forget_rows()
        return groups, judged

    def _pack(self, samples: list[Sample], weights: list[float] | None = None):
        if not samples:  # an empty micro-batch (equal_counts): one masked pad token keeps the collectives in step
            pad = self.tokenizer.pad_token_id
            return pack([Sample([pad], [pad], "", "stop")], pad, self.device, [0.0])
        return pack(samples, self.tokenizer.pad_token_id, self.device, weights)

    def log_probs(self, micro: list[list[Sample]]) -> list[list[tuple[torch.Tensor, torch.Tensor | None]]]:
        """Old (and reference) log-probs of every sample of every micro-batch, each cut to its response length."""
        out = []
        for samples, (old, ref) in zip(micro, self.policy.log_probs([self._pack(s) for s in micro])):
            out.append([(old[j, :len(s.response_ids)], ref[j, :len(s.response_ids)] if ref is not None else None)
                        for j, s in enumerate(samples)])
        return out

    def update(self, micro: list[list[dict]], normalisers: dict[str, int]) -> dict:
        """One optimizer update; `micro` holds this worker's micro-batches of items {sample, keep, advantage, old,
        ref, is_weight} (see `WorkerGroup.update`; is_weight: per-token importance weights or None)."""
        batches = []
        for items in micro:
            batch = self._pack([it["sample"] for it in items], [it["keep"] for it in items])
            width = batch.response_ids.shape[1]
            rows = len(items) or 1
            old = _stack([it["old"] for it in items], width, rows)
            ref = _stack([it["ref"] for it in items], width, rows) if self.policy.reference is not None else None
            advantages = torch.tensor([it["advantage"] for it in items] or [0.0])[:, None] * batch.response_mask.cpu()
            if items and items[0].get("is_weight") is not None:  # truncated IS: scales each token's policy loss
                advantages = advantages * _stack([it["is_weight"] for it in items], width, rows)
            batches.append((batch, old, ref, advantages))
        return self.policy.update_mini_batch(batches, normalisers)

    def sync_weights(self) -> float:
        """Puts the policy's current weights into the rollout engine; returns the seconds it took."""
        start = time.perf_counter()
        if self.policy.sharded:
            full = self.policy.full_state_dict()
            with torch.no_grad():
                for name, tensor in self.rollout_model.state_dict().items():
                    tensor.copy_(full[name])
        self.engine.sync_weights(self.rollout_model)
        return time.perf_counter() - start

    def validate(self, rows: list[dict], n: int, params: SamplingParams) -> dict:
        return pass_rate(self.hf_model, self.tokenizer, rows, n, params) if rows else {"problems": 0}

    def all_gather_seconds(self, repeats: int = 5) -> float:
        """Mean seconds to gather every FSDP2 unit of the policy once and free it again (what each forward pays
        in communication); 0 for an unsharded policy. A collective: call on every worker."""
        from torch.distributed.fsdp import FSDPModule

        units = [m for m in self.policy.model.modules() if isinstance(m, FSDPModule)]
        if not units:
            return 0.0
        start = time.perf_counter()
        for _ in range(repeats):
            for unit in units:
                unit.unshard()
            for unit in units:
                unit.reshard()
        return (time.perf_counter() - start) / repeats

    # -- state -----------------------------------------------------------------------------------------

    def save(self, path: str) -> None:
        """This worker's part of checkpoint folder `path`: its model and optimizer shards (dcp/, written by all
        workers together), its RNG state (rng/rank_NNNNN.pt); rank 0 also the schedule and the whole model in HF
        format (model/)."""
        import torch.distributed.checkpoint as dcp

        path = Path(path)
        with _one_process_is_fine():
            dcp.save(self.policy.sharded_state(), checkpoint_id=path / "dcp")
        (path / "rng").mkdir(parents=True, exist_ok=True)
        torch.save({"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state(),
                    "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None},
                   path / "rng" / f"rank_{self.rank:05d}.pt")
        if self.rank == 0:
            torch.save(self.policy.scheduler.state_dict(), path / "scheduler.pt")
            save_hf_model(self.hf_model, self.tokenizer, path / "model")

    def load(self, path: str) -> None:
        """Restores a checkpoint written by any number of workers (torch.distributed.checkpoint reshards)."""
        import torch.distributed.checkpoint as dcp

        path = Path(path)
        state = self.policy.sharded_state()
        with _one_process_is_fine():
            dcp.load(state, checkpoint_id=path / "dcp")
        self.policy.load_sharded_state(state)
        self.policy.scheduler.load_state_dict(torch.load(path / "scheduler.pt", weights_only=False))
        rng_file = path / "rng" / f"rank_{self.rank:05d}.pt"
        if rng_file.exists():  # a run resumed on more workers than it was saved from: new ranks keep their seed
            rng = torch.load(rng_file, weights_only=False)
            random.setstate(rng["python"])
            np.random.set_state(rng["numpy"])
            torch.set_rng_state(rng["torch"])
            if rng.get("cuda") is not None and torch.cuda.is_available():
                torch.cuda.set_rng_state_all(rng["cuda"])
        self.sync_weights()

    def export(self, path: str) -> None:
        """The whole model in HF format at `path` (rank 0 writes; the others only took part in the last sync)."""
        if self.rank == 0:
            save_hf_model(self.hf_model, self.tokenizer, path)

    def close(self) -> None:
        if self.world_size > 1:
            import torch.distributed as dist

            if dist.is_initialized():
                dist.destroy_process_group()
        close = getattr(self.engine, "close", None)
        if close is not None:
            close()


@contextmanager
def _one_process_is_fine():
    """torch.distributed.checkpoint warns when it runs without a process group; a one-worker run has none."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="torch.distributed is disabled, unavailable or uninitialized")
        yield


def _stack(rows: list[torch.Tensor], width: int, count: int) -> torch.Tensor:
    """(count, width) zero-padded rows (count > len(rows) for the all-masked micro-batch)."""
    out = torch.zeros(count, width)
    for i, r in enumerate(rows):
        out[i, :r.shape[0]] = r
    return out
