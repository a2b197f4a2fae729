"""One worker (one rank): a policy shard, its colocated rollout engine, a judge client; driven by the controller.

The controller calls `Worker.call(method, *args)` on every worker of the group with that worker's share of the data;
the methods are the steps of a GRPO step (`generate`, `log_probs`, `update`, `sync_weights`) and of the run around
it (`save`, `load`, `export`, `validate`). In a one-worker run the `Worker` lives in the controller's process and
is called directly; in a Ray run each worker is a Ray actor on its own device (CPU: its own process) and joins a
torch.distributed process group (NCCL on GPU, gloo on CPU; a group of one when Ray runs a single worker) for
FSDP2's collectives.

Rollout: a one-worker run generates with the training model itself (HF, under the policy's autocast) or streams
its weights into vLLM. A sharded worker holds only shards and keeps no whole copy of the model: `sync_weights`
streams the weights into its vLLM engine one gathered parameter at a time (`Policy.stream_weights`, a collective
that all workers run together), and its HF engine (`GatheredHFRollout`) builds a whole model from that stream for
each generate call and drops it afterwards. vLLM started after the process group adopts the workers' world as its
own and builds its one-rank tensor-parallel groups in it, which all workers do together in `start` (checked on CPU
with gloo: the engines' log-probs equal the trainer's after every update; not yet run with NCCL on GPUs).

Checkpoints keep the master weights: dcp/ holds the float32 shards and the float32 optimizer state; the HF model in
a checkpoint's model/ folder and the exported model are in `model.dtype`.

PPO (algorithm.adv_estimator=gae) adds a critic (`workers.critic`): colocated (trainer.critic_gpus=0) each worker holds
a critic shard beside its policy shard on the same mesh; with trainer.critic_gpus > 0 a worker started with
role="critic" holds the critic and nothing else (no policy, engine or judge). Either way the critic's shards and AdamW
state go to the checkpoint's critic/dcp/ (its schedule to critic/scheduler.pt), a folder of its own, so a run may resume
with the critic placed differently (the shards reload on any worker count).
"""

from __future__ import annotations

import contextlib
import copy
import os
import random
import shutil
import socket
import tempfile
import time
import warnings
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import numpy as np
import torch

from ..checkpoint import folder_manifest, missing_files, save_hf_model
from ..evaluate import pass_rate
from ..policy_ops import load_model_and_tokenizer, pack
from ..tiny_model import resolve_model_path
from ..rollout import HFRollout, Sample, SamplingParams
from .interrupt import INTERRUPTS

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
        with INTERRUPTS.section() if method in INTERRUPTIBLE else contextlib.nullcontext():
            result = getattr(self, method)(*args, **kwargs)
        return time.perf_counter() - start, result

    def interrupt(self) -> int:
        """Cuts this worker's generation or validation short (StepAbandoned in the call); the controller calls it
        through a control thread of the actor while the call runs (see workers.interrupt)."""
        return INTERRUPTS.interrupt()

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
              total_updates: int = 1, critic_updates: int = 1, role: str = "actor") -> str:
        """Joins the process group (when given a `master`: every Ray worker, even one alone), loads and shards the
        model, builds the engine; returns the engine's backend (hf or vllm). role="actor" builds the policy (and a
        colocated critic when the config has one with trainer.critic_gpus=0); role="critic" only the critic (returns
        "critic")."""
        from .policy import Policy, device_mesh

        if role not in ("actor", "critic"):
            raise ValueError(f"role={role!r}: a worker is an 'actor' (policy, engine, colocated critic) or a 'critic'")
        cfg = self.cfg
        self.role = role
        self.rank, self.world_size, self.judge = rank, world_size, judge
        self.policy = self.engine = self.critic = None
        device = torch.device(cfg.model.resolved_device())
        if device.type == "cuda":
            torch.cuda.set_device(0 if device.index is None else device.index)  # Ray shows each actor one GPU
            device = torch.device("cuda", torch.cuda.current_device())
        mesh = None
        # a tiny:// model is built on this worker's host before the process group exists: save_pretrained writes
        # nothing on a rank other than 0 of an initialised group
        start_model = resolve_model_path(start_model)
        self.start_model = start_model  # a LoRA adapter's base
        if master is not None:
            import torch.distributed as dist

            backend = "gloo"
            if device.type == "cuda":  # shards offloaded to host memory need gloo for their collectives (the norm)
                backend = "cpu:gloo,cuda:nccl" if cfg.trainer.fsdp_cpu_offload else "nccl"
            dist.init_process_group(backend, rank=rank, world_size=world_size,
                                    init_method=f"tcp://{master[0]}:{master[1]}", timeout=COLLECTIVE_TIMEOUT)
            mesh = device_mesh(nnodes, world_size // nnodes, device.type)
        torch.manual_seed(cfg.trainer.seed)
        if role == "critic":
            self.tokenizer = _tokenizer_of(start_model)
            self.critic = self._build_critic(None, start_model, mesh, device, critic_updates)
            self.device = self.critic.device
            return "critic"
        if model is None or tokenizer is None:
            model, tokenizer = load_model_and_tokenizer(cfg.model, path=start_model)  # float32: the master weights
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.tokenizer = tokenizer
        # the colocated critic starts as a copy of the loaded model, taken before the policy shards it
        if cfg.uses_critic and not cfg.trainer.critic_gpus:
            self.critic = self._build_critic(model, start_model, mesh, device, critic_updates)
        # on the host until sharded: FSDP2 moves one unit at a time to the device (a whole float32 model never is)
        reference = None
        if cfg.algorithm.use_kl_loss and not cfg.model.lora_rank:  # LoRA: the base is the reference, no copy
            # copied straight into the dtype it is kept in (Policy): no second float32 copy
            stored = getattr(torch, cfg.model.dtype) if mesh is not None else torch.float32
            reference = copy.deepcopy(model, {id(p): torch.nn.Parameter(p.detach().to(stored, copy=True),
                                                                        requires_grad=False)
                                              for p in model.parameters()})
        self.policy = Policy(model, reference, cfg, total_updates=total_updates, mesh=mesh, world_size=world_size,
                             device=device, cpu_offload=cfg.trainer.fsdp_cpu_offload and mesh is not None)
        self.device = self.policy.device
        self.engine = self._engine()
        if hasattr(self.engine, "startup_seconds"):  # every rank: each engine says where it runs
            executor = getattr(self.engine, "executor", None)
            print(f"{self.engine.backend} rollout engine started in {self.engine.startup_seconds:.1f} s"
                  + (f" (rank {self.rank} of {self.world_size}, {executor} on {self.engine.device})" if executor else ""),
                  flush=True)
        return self.engine.backend

    def _build_critic(self, lm, start_model: str, mesh, device, total_updates: int):
        """The critic: critic.model_path (checked against the policy's tokenizer), else a copy of `lm` (the policy's
        start model, loaded here when not given) under a fresh value head seeded by trainer.seed."""
        from ..policy_ops import load_value_model, value_model_from_lm
        from .critic import Critic

        cfg = self.cfg
        checkpointing = cfg.critic.gradient_checkpointing
        if checkpointing is None:
            checkpointing = cfg.model.gradient_checkpointing
        if cfg.critic.model_path:
            _check_critic_tokenizer(cfg.critic.model_path, self.tokenizer)
            value_model = load_value_model(cfg.critic.model_path, seed=cfg.trainer.seed,
                                           gradient_checkpointing=checkpointing)
        else:
            if lm is None:
                lm, _ = load_model_and_tokenizer(cfg.model, path=start_model)
            value_model = value_model_from_lm(lm, seed=cfg.trainer.seed, gradient_checkpointing=checkpointing)
        return Critic(value_model, cfg, total_updates=total_updates, mesh=mesh, world_size=self.world_size,
                      device=device, cpu_offload=cfg.trainer.fsdp_cpu_offload and mesh is not None)

    def _engine(self):
        cfg, policy = self.cfg, self.policy
        if cfg.rollout.backend == "hf":
            engine = HFRollout(policy.lm, self.tokenizer)
        else:
            from ..rollout import build_rollout_engine

            engine = build_rollout_engine(cfg.rollout, policy.lm, self.tokenizer,
                                          max_model_len=cfg.data.max_prompt_length + cfg.data.max_response_length,
                                          seed=cfg.trainer.seed, dtype=policy.compute_dtype, device=policy.device,
                                          weights=policy.stream_weights())
        if engine.backend == "hf" and policy.sharded:  # also vLLM's fallback: shards cannot generate by themselves
            engine = GatheredHFRollout(policy, self.tokenizer)
        return engine

    def _rollout_context(self):
        """The HF engine of a one-worker run samples from the policy itself, under the policy's autocast."""
        if isinstance(self.engine, HFRollout):
            return self.policy.compute()
        return contextlib.nullcontext()

    # -- the step --------------------------------------------------------------------------------------

    def generate(self, prompts: list, rows: list[dict], n: int, params: SamplingParams,
                 last_round: bool = True) -> tuple[list, list]:
        """n samples per prompt from this worker's engine; each sample goes to the judge the moment it exists.
        Returns (groups, [(prompt index in `prompts`, sample, judge handle)]). last_round: no further generate
        comes before the step's weight sync (False for a dynamic-sampling round that may be followed by another)."""
        judged = []

        def on_sample(index: int, sample: Sample) -> None:
            judged.append((index, sample, self.judge.submit(sample.text, rows[index])))

        # the step's last generate is followed by a sync of new weights: a sleeping vLLM may drop its weights (level
        # 2); after an earlier round of the step it keeps them (level 1), since the next round generates with them
        resync = {"resync": last_round} if self.engine.backend == "vllm" else {}
        with self._rollout_context():
            groups = self.engine.generate(prompts, n, params, on_sample=on_sample, **resync)
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
        """One optimizer update; `micro` holds this worker's micro-batches of items {sample, keep, advantages (R_i,)
        per token, or advantage (one number for every token), old, ref, is_weight} (see `WorkerGroup.update`;
        is_weight: per-token importance weights or None)."""
        batches = []
        for items in micro:
            batch = self._pack([it["sample"] for it in items], [it["keep"] for it in items])
            width = batch.response_ids.shape[1]
            rows = len(items) or 1
            old = _stack([it["old"] for it in items], width, rows)
            ref = _stack([it["ref"] for it in items], width, rows) if self.policy.has_reference else None
            if items and "advantages" in items[0]:  # per token (B, T); padding and excluded samples are masked below
                advantages = _stack([it["advantages"] for it in items], width, rows) * batch.response_mask.cpu()
            else:
                advantages = torch.tensor([it["advantage"] for it in items] or [0.0])[:, None] * \
                    batch.response_mask.cpu()
            # rollout importance weights (grpo.rollout_is_weights): multiply each token's policy loss
            is_weights = _stack([it["is_weight"] for it in items], width, rows) \
                if items and items[0].get("is_weight") is not None else None
            batches.append((batch, old, ref, advantages, is_weights))
        return self.policy.update_mini_batch(batches, normalisers)

    def values(self, micro: list[list[Sample]]) -> list[list[torch.Tensor]]:
        """The critic's values of every sample of every micro-batch (before any update of the step), each cut to its
        response length."""
        out = []
        for samples, values in zip(micro, self.critic.values([self._pack(s) for s in micro])):
            out.append([values[j, :len(s.response_ids)] for j, s in enumerate(samples)])
        return out

    def update_critic(self, micro: list[list[dict]], normalisers: dict[str, int]) -> dict:
        """One critic update; `micro` holds this worker's micro-batches of items {sample, keep, values (R_i,): the
        step's old values, returns (R_i,)} (see `WorkerGroup.update_critic`)."""
        batches = []
        for items in micro:
            batch = self._pack([it["sample"] for it in items], [it["keep"] for it in items])
            width, rows = batch.response_ids.shape[1], len(items) or 1
            batches.append((batch, _stack([it["values"] for it in items], width, rows),
                            _stack([it["returns"] for it in items], width, rows)))
        return self.critic.update_mini_batch(batches, normalisers)

    def sync_weights(self) -> float:
        """Puts the policy's current weights into the rollout engine; returns the seconds it took. A vLLM engine
        is fed `Policy.stream_weights` (sharded: one gathered parameter at a time, a collective); an HF engine
        needs nothing (it is the policy, or builds itself from the stream when it generates)."""
        start = time.perf_counter()
        if self.engine is not None and self.engine.backend == "vllm":
            self.engine.sync_weights(self.policy.stream_weights())
        return time.perf_counter() - start

    def validate(self, rows: list[dict], n: int, params: SamplingParams) -> dict:
        """pass@1 on `rows`, sampled by the rollout engine (vLLM, synced after the last update) or HF generate."""
        if self.engine.backend == "vllm":
            return pass_rate(self.policy.lm, self.tokenizer, rows, n, params, engine=self.engine) if rows \
                else {"problems": 0}
        if isinstance(self.engine, GatheredHFRollout):  # every worker gathers, even one without problems
            model = self.policy.whole_model(self.device)
            try:
                return pass_rate(model, self.tokenizer, rows, n, params) if rows else {"problems": 0}
            finally:
                del model
        if not rows:
            return {"problems": 0}
        with self.policy.compute():
            return pass_rate(self.policy.lm, self.tokenizer, rows, n, params)

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

    def save(self, path: str, ship: bool = False) -> dict | None:
        """This worker's part of checkpoint folder `path`: its model and optimizer shards (dcp/, written by all
        workers together), its RNG state (rng/rank_NNNNN.pt); rank 0 also the schedule and the whole model in HF
        format (model/). With `ship` (a worker on another host than the controller, whose disk the controller cannot
        see) the part is written to a scratch folder here, which the controller then copies into `path` chunk by
        chunk (see `scratch_part`)."""
        import torch.distributed.checkpoint as dcp

        def write(target: Path) -> None:
            if self.policy is not None:
                with _one_process_is_fine():
                    dcp.save(self.policy.sharded_state(), checkpoint_id=target / "dcp")
                (target / "rng").mkdir(parents=True, exist_ok=True)
                torch.save({"python": random.getstate(), "numpy": np.random.get_state(),
                            "torch": torch.get_rng_state(),
                            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None},
                           target / "rng" / f"rank_{self.rank:05d}.pt")
                if self.rank == 0:
                    torch.save(self.policy.scheduler.state_dict(), target / "scheduler.pt")
                self._write_hf_model(target / "model")
            if self.critic is not None:  # its own folder: it reloads whether colocated or on workers of its own
                with _one_process_is_fine():
                    dcp.save(self.critic.sharded_state(), checkpoint_id=target / CRITIC_DIR / "dcp")
                if self.rank == 0:
                    torch.save(self.critic.scheduler.state_dict(), target / CRITIC_DIR / "scheduler.pt")

        return _write_or_ship(path, ship, write)

    def _write_hf_model(self, target: Path) -> None:
        """The whole model in `model.dtype`, HF format, written by rank 0; every worker takes part in gathering it
        (a collective when sharded), one tensor at a time into host memory."""
        if self.rank != 0:
            self.policy.drain_weights()
            return
        model = self.policy.whole_model("cpu")
        try:
            save_hf_model(model, self.tokenizer, target)
        finally:
            del model

    def load(self, path: str, manifest: dict[str, int] | None = None) -> None:
        """Restores a checkpoint written by any number of workers (torch.distributed.checkpoint reshards). With
        `manifest` ({relative path: [size, sha256]} from the checkpoint's marker) a worker on another host first checks
        that its own disk holds the same files, and names what is missing otherwise. Sizes only: the host's content
        was checked against the sha256 once, for all its workers, when the controller completed it."""
        import torch.distributed.checkpoint as dcp

        path = Path(path)
        sizes = {rel: want if isinstance(want, int) else want[0] for rel, want in (manifest or {}).items()}
        missing = missing_files(path, sizes) if manifest else []
        if missing:
            host = socket.gethostname()
            raise FileNotFoundError(
                f"rank {self.rank} (host {host}) cannot resume from {path}: {len(missing)} of its files are not on this "
                f"host ({', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''}), although the controller sends a "
                "host what it lacks (WorkerGroup.load): check that checkpoint.dir is writable on this host and its disk "
                "has room, or put checkpoint.dir on a filesystem all hosts share")
        if self.critic is not None:
            if not (path / CRITIC_DIR / "dcp").is_dir():
                raise FileNotFoundError(f"{path} has no {CRITIC_DIR}/dcp folder: it was saved by a run without a critic "
                                        "(algorithm.adv_estimator other than gae), so PPO cannot resume from it")
            state = self.critic.sharded_state()
            with _one_process_is_fine():
                dcp.load(state, checkpoint_id=path / CRITIC_DIR / "dcp")
            self.critic.load_sharded_state(state)
            self.critic.scheduler.load_state_dict(torch.load(path / CRITIC_DIR / "scheduler.pt", weights_only=False))
        if self.policy is None:
            return
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

    # Files travel between hosts in chunks (`read_chunk`, `write_chunk`), never a whole checkpoint part at once:
    # a 7B model's optimizer shard is several GB per worker, and the controller holds one chunk at a time.

    def missing_files(self, path: str, manifest: dict[str, int]) -> list[str]:
        """Files of `manifest` ({relative path: [size, sha256]}) that folder `path` on this worker's host lacks."""
        return missing_files(path, manifest)

    def read_chunk(self, path: str, offset: int, size: int) -> bytes:
        """Up to `size` bytes of file `path` on this worker's host, from `offset`."""
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read(size)

    def write_chunk(self, path: str, offset: int, data: bytes) -> None:
        """Writes `data` at `offset` of file `path` on this worker's host (offset 0 creates or truncates it)."""
        write_chunk(path, offset, data)

    def remove_scratch(self, scratch: str) -> None:
        """Deletes a scratch folder of `save`/`export` once the controller has copied it."""
        if not Path(scratch).name.startswith(SCRATCH_PREFIX):
            raise ValueError(f"{scratch} is not a scratch folder of this worker's (its name starts with "
                             f"{SCRATCH_PREFIX!r}); refusing to delete it")
        shutil.rmtree(scratch, ignore_errors=True)

    def export(self, path: str, ship: bool = False) -> dict | None:
        """The whole model in HF format and `model.dtype` at `path` (rank 0 writes; every worker takes part in
        gathering it). With `ship`, rank 0 writes to a scratch folder that the controller copies (`scratch_part`)."""
        if self.rank != 0:
            self.policy.drain_weights()
            return None
        return _write_or_ship(path, ship, self._write_hf_model)

    def export_adapter(self, path: str, ship: bool = False) -> dict | None:
        """LoRA: the trained adapter in peft's format at `path` (its base: the model GRPO started from); rank 0
        writes, every worker takes part in gathering it (a collective when sharded)."""
        from ..lora import save_adapter

        tensors = self.policy.adapter_tensors()
        if self.rank != 0:
            return None
        return _write_or_ship(path, ship, lambda target: save_adapter(tensors, self.cfg.model, self.start_model,
                                                                      target))

    def export_critic(self, path: str, ship: bool = False) -> dict | None:
        """The critic in HF format (a token-classification model with one label, float32: what critic.model_path
        and verl's critic load) at `path`; rank 0 writes, every critic worker takes part in gathering it."""
        model = self.critic.whole_model()  # a collective when sharded
        if self.rank != 0:
            del model
            return None

        def write(target: Path) -> None:
            save_hf_model(model, self.tokenizer, target)

        try:
            return _write_or_ship(path, ship, write)
        finally:
            del model

    def close(self) -> None:
        if self.world_size > 1:
            import torch.distributed as dist

            if dist.is_initialized():
                dist.destroy_process_group()
        close = getattr(getattr(self, "engine", None), "close", None)
        if close is not None:
            close()


class GatheredHFRollout:
    """HF generate on a sharded worker: the whole model (in `model.dtype`, on the worker's device) is gathered from
    the shards for each `generate` call and dropped when it returns, so no copy stands between steps. Gathering is a
    collective: every worker of the group calls `generate` at the same phase (an empty share included)."""

    backend = "hf"

    def __init__(self, policy, tokenizer):
        self.policy, self.tokenizer = policy, tokenizer

    def generate(self, prompts, n, params, on_sample=None):
        model = self.policy.whole_model(self.policy.device)
        try:
            return HFRollout(model, self.tokenizer).generate(prompts, n, params, on_sample=on_sample)
        finally:
            del model

    def sync_weights(self, weights) -> None:
        """Nothing to do: the next `generate` gathers the current weights."""


INTERRUPTIBLE = frozenset({"generate", "validate"})  # calls a stop may cut short: they leave the weights as they were
SCRATCH_ENV = "CODEFU_SCRATCH"  # folder for the scratch copies of a remote rank's checkpoint part (default: TMPDIR)
SCRATCH_PREFIX = "codefu_part_"
CRITIC_DIR = "critic"  # a checkpoint's critic state: critic/dcp/ (shards, AdamW state), critic/scheduler.pt


def _tokenizer_of(path: str):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(path))
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def _check_critic_tokenizer(path: str, tokenizer) -> None:
    """critic.model_path reads the policy's token ids: its vocabulary must be the policy's."""
    from transformers import AutoConfig, AutoTokenizer

    folder = resolve_model_path(path)
    try:
        theirs = AutoTokenizer.from_pretrained(folder).get_vocab()
    except (OSError, ValueError):
        theirs = None  # no tokenizer files there: the embedding size must still cover the policy's ids
    if theirs is not None and theirs != tokenizer.get_vocab():
        raise ValueError(f"critic.model_path={path!r} has another tokenizer than the policy ({len(theirs)} vs "
                         f"{len(tokenizer.get_vocab())} tokens): the critic reads the policy's token ids, so it needs "
                         "the policy's tokenizer; pick a critic of the same model family")
    vocab = AutoConfig.from_pretrained(folder).vocab_size
    if vocab < len(tokenizer):
        raise ValueError(f"critic.model_path={path!r} embeds {vocab} tokens, fewer than the policy's tokenizer "
                         f"({len(tokenizer)}): the critic cannot read the policy's token ids")


def _write_or_ship(path: str, ship: bool, write) -> dict | None:
    """`write(folder)` into `path`; with `ship`, into a scratch folder on this host, described by the returned
    `scratch_part` for the controller to copy (and then remove with `Worker.remove_scratch`)."""
    if not ship:
        write(Path(path))
        return None
    # $CODEFU_SCRATCH: where the SageMaker entry point puts big temporary files (the job's volume, launch.disks)
    root = os.environ.get(SCRATCH_ENV) or None
    if root:
        os.makedirs(root, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=root))
    try:
        write(scratch)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return scratch_part(scratch)


def scratch_part(scratch: str | Path) -> dict:
    """{"scratch": folder, "files": {relative path: size}}: what a worker on another host wrote for the controller
    to copy, file by file and chunk by chunk."""
    return {"scratch": str(scratch), "files": folder_manifest(scratch)}


def write_chunk(path: str | Path, offset: int, data: bytes) -> None:
    """Writes `data` at `offset` of file `path` (offset 0 creates or truncates it, and its folders)."""
    path = Path(path)
    if offset == 0:
        path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb" if offset == 0 else "r+b") as f:
        f.seek(offset)
        f.write(data)


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
