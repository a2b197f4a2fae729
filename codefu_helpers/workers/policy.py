"""The policy of one worker: model, optional reference model, optimizer and schedule, sharded with FSDP2.

Precision (verl's recipe): the weights the optimizer updates ("master weights"), their gradients and the AdamW state
are float32; forward and backward compute in `model.dtype` (bfloat16 on GPU). A bfloat16 *stored* weight cannot
take an update of lr 1e-6: the step is below its resolution and rounds away (measured on CPU: 0.7 % of the weight
elements moved in three steps, against 100 % in float32).

- Sharded (a worker group of N, even N = 1 under Ray): every decoder layer is its own FSDP2 unit
  (`torch.distributed.fsdp.fully_shard`), so a worker keeps 1/N of each float32 weight, gathers a layer in
  `model.dtype` just before using it (`MixedPrecisionPolicy(param_dtype=model.dtype)`) and frees it right after;
  gradients are reduce-scattered in float32 (`reduce_dtype`) into the float32 shards. With `trainer.nnodes > 1` the
  mesh is 2-D: weights are sharded within a node and replicated across nodes (FSDP's HYBRID_SHARD), so the
  inter-node links carry only the gradient all-reduce. `trainer.fsdp_cpu_offload` keeps the shards, gradients and
  optimizer state in host memory between uses (`CPUOffloadPolicy`; the process group then has gloo beside NCCL for
  the host tensors' collectives; offload has not run anywhere yet: it needs GPUs). FSDP2 moves each unit to the
  mesh's device as it shards it, so a whole float32 model never sits on the device. Ran on CPU with gloo, float32
  and bf16 compute; not yet with NCCL.
- One worker in the controller's process (no process group): the plain module with float32 weights, run under
  `torch.autocast(model.dtype)` (what `transformers.Trainer --bf16` does): matrix products in `model.dtype`,
  norms, softmax and the residual stream in float32, gradients in float32. The same recipe (float32 master weights,
  optimizer state and gradient reduction; `model.dtype` matmuls); autocast keeps some elementwise operations in
  float32 where FSDP2's parameter cast runs them in `model.dtype`, so the two differ by bf16 rounding, not in
  kind. The HF rollout engine samples under the same autocast, so it draws from the policy being trained.

The reference policy never changes: sharded it is stored in `model.dtype` (verl keeps its reference in bfloat16),
so it computes exactly what the policy computed at the start; on one worker it is a float32 copy run under the same
autocast, for the same reason (the KL starts at exactly 0 either way).

Devices come from the mesh (sharded: the mesh's device type, this worker's current device) or the worker's device,
never from where a parameter happens to sit (with CPU offload the shards sit in host memory).

The forward is `LogProbModel`, a thin module around the HF causal LM that returns response log-probs (the
decoder, then the chunked vocabulary projection of `policy_ops.response_log_probs`). FSDP2 gathers a unit's weights
in that unit's forward hook; the log-prob code calls the decoder and `lm_head` separately, which would bypass the
LM's own forward, so the wrapper is the root unit instead: its hook gathers the embeddings, the final norm and the
(tied) `lm_head` for the whole computation.

With LoRA (model.lora_rank > 0, `codefu_helpers.lora`) the base weights are frozen and stored in `model.dtype`, the
adapters are the float32 master weights and the only parameters in the optimizer; there is no reference copy (the
reference log-probs are the policy's with its adapters switched off), the weight stream yields the merged base
weights under the base model's names, and checkpoints hold only what trains (adapters and their optimizer state).

The rollout engine never gets a standing copy of the policy from here: `stream_weights` yields one whole parameter
at a time (sharded: gathered in the engine's dtype from the shards, one all-gather each; a collective, so every
worker iterates it together), and `whole_model` builds a plain HF model from that stream only where one is needed
(HF generation on a sharded worker, the exported model), dropped right after.
"""

from __future__ import annotations

import contextlib
import math
from typing import Iterator

import torch
from torch import nn

from .. import grpo, lora
from ..policy_ops import PackedBatch, lr_lambda, response_log_probs


class LogProbModel(nn.Module):
    """An HF causal LM whose forward returns the response log-probs (B, T) and entropy (B, T) or None."""

    def __init__(self, lm: nn.Module):
        super().__init__()
        self.lm = lm

    def forward(self, batch: PackedBatch, temperature: float = 1.0, with_entropy: bool = False,
                entropy_grad: bool = False):
        log_probs, entropy = response_log_probs(self.lm, batch, temperature, with_entropy=with_entropy,
                                                entropy_grad=entropy_grad)
        # own storage, not views of the chunks: FSDP2 hooks its backward on the outputs, which a view could lose
        return log_probs.clone(), entropy.clone() if entropy is not None else None


def decoder_layers(lm: nn.Module) -> nn.ModuleList:
    decoder = lm.get_decoder() if hasattr(lm, "get_decoder") else None
    layers = getattr(decoder, "layers", None)
    if not isinstance(layers, nn.ModuleList):
        raise ValueError(f"{type(lm).__name__} has no decoder layer list (get_decoder().layers), which FSDP2 shards "
                         "one unit per layer; train it with trainer.gpus_per_node=1 and trainer.nnodes=1")
    return layers


def shard(model: nn.Module, mesh, *, param_dtype: torch.dtype | None, cpu_offload: bool) -> nn.Module:
    """FSDP2: one unit per decoder layer of the HF model `model.lm`, then the wrapper as the root unit (see the module
    docstring; the critic's `ValueModel` is sharded the same way). With `param_dtype`, weights are gathered (and
    computed with) in that dtype and gradients reduced in float32."""
    from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, fully_shard

    options = {"mesh": mesh}
    if param_dtype is not None:
        options["mp_policy"] = MixedPrecisionPolicy(param_dtype=param_dtype, reduce_dtype=torch.float32)
    if cpu_offload:
        # pinned host shards copy to a GPU asynchronously; pinning needs one (CPU runs of the offload path: tests)
        options["offload_policy"] = CPUOffloadPolicy(pin_memory=mesh.device_type == "cuda")
    for layer in decoder_layers(model.lm):
        fully_shard(layer, **options)
    fully_shard(model, **options)
    return model


def optimizer_step(model: nn.Module, optimizer, scheduler, grad_clip: float | None) -> dict:
    """Clips the accumulated gradient, steps the optimizer and the schedule when the gradient is finite (a non-finite
    one skips both), frees the gradients. Returns {"grad_norm", "lr" (the rate this update used), "finite"}."""
    max_norm = grad_clip if grad_clip is not None else math.inf
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    if hasattr(grad_norm, "full_tensor"):  # a DTensor when the gradients are FSDP2 shards
        grad_norm = grad_norm.full_tensor()
    finite = bool(torch.isfinite(grad_norm))
    lr = scheduler.get_last_lr()[0]
    if finite:
        optimizer.step()
        scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    return {"grad_norm": float(grad_norm), "lr": lr, "finite": finite}


def device_mesh(nnodes: int, per_node: int, device_type: str):
    """1-D mesh (FULL_SHARD) on one node; 2-D (replicate across nodes, shard within one) on several."""
    from torch.distributed.device_mesh import init_device_mesh

    if nnodes == 1:
        return init_device_mesh(device_type, (per_node,), mesh_dim_names=("shard",))
    return init_device_mesh(device_type, (nnodes, per_node), mesh_dim_names=("replicate", "shard"))


def mesh_device(mesh) -> torch.device:
    """This worker's compute device on `mesh`: the mesh's device type, and on a GPU the current device."""
    if mesh.device_type == "cuda":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device(mesh.device_type)


class Policy:
    """What one worker trains: `model` (a LogProbModel, sharded when `mesh` is given), the reference, the optimizer.

    `lm` and `reference` arrive as loaded (any dtype, on the host); the policy keeps float32 master weights and
    computes in `cfg.model.dtype` (see the module docstring). `log_probs` and `update_mini_batch` take packed
    micro-batches; every worker of a group must call them with the same number of micro-batches
    (`workers.batching.equal_counts`), since each forward is a collective."""

    def __init__(self, lm: nn.Module, reference: nn.Module | None, cfg, *, total_updates: int, mesh=None,
                 world_size: int = 1, device: str | torch.device = "cpu", cpu_offload: bool = False):
        self.cfg = cfg
        self.world_size = world_size
        self.compute_dtype = getattr(torch, cfg.model.dtype)
        self.sharded = mesh is not None
        self.device = mesh_device(mesh) if self.sharded else torch.device(device)
        self.lora = cfg.model.lora_rank > 0
        if self.lora:  # the base frozen in the compute dtype, float32 adapters: the master weights
            if reference is not None:
                raise ValueError("a LoRA policy's reference is its base with the adapters off: pass reference=None")
            self.model = LogProbModel(lora.add_adapters(lm, cfg.model, self.compute_dtype))
        else:
            self.model = LogProbModel(lm.float())  # the master weights (no copy when loaded in float32)
        mixed = self.compute_dtype != torch.float32
        if reference is not None:
            # sharded: stored in the compute dtype (FSDP2 then computes with it as it computes with the policy's
            # cast); one worker: float32 under the same autocast as the policy
            stored = self.compute_dtype if self.sharded else torch.float32
            for parameter in reference.parameters():  # not the buffers: RoPE's tables stay float32, as the policy's
                parameter.data = parameter.data.to(stored)
            self.reference = LogProbModel(reference).eval().requires_grad_(False)
        else:
            self.reference = None
        if self.sharded:
            shard(self.model, mesh, param_dtype=self.compute_dtype if mixed else None, cpu_offload=cpu_offload)
            if self.reference is not None:
                shard(self.reference, mesh, param_dtype=None, cpu_offload=cpu_offload)
        else:
            self.model.to(self.device)
            if self.reference is not None:
                self.reference.to(self.device)
        self.autocast = mixed and not self.sharded
        self.optimizer = torch.optim.AdamW([p for p in self.model.parameters() if p.requires_grad], lr=cfg.optim.lr,
                                           weight_decay=cfg.optim.weight_decay)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lr_lambda(cfg.optim.warmup_steps, cfg.optim.lr_schedule, total_updates))

    @property
    def has_reference(self) -> bool:
        """Whether log_probs computes reference log-probs (the KL is on): a reference model, or LoRA's base."""
        return self.reference is not None or (self.lora and self.cfg.algorithm.use_kl_loss)

    @property
    def lm(self) -> nn.Module:
        """The HF model inside (its float32 master weights; shards when the policy is sharded)."""
        return self.model.lm

    def compute(self):
        """The context forward passes run in: autocast to the compute dtype on an unsharded mixed-precision policy
        (FSDP2 casts a sharded one's weights itself), else nothing."""
        if self.autocast:
            return torch.autocast(self.device.type, dtype=self.compute_dtype)
        return contextlib.nullcontext()

    @torch.no_grad()
    def log_probs(self, batches: list[PackedBatch]) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
        """(old, reference or None) log-probs (B, T) of each micro-batch, at the sampling temperature."""
        temperature = self.cfg.rollout.temperature
        self.model.eval()
        out = []
        for batch in batches:
            with self.compute():
                old, _ = self.model(batch, temperature)
                ref = None
                if self.reference is not None:
                    ref = self.reference(batch, temperature)[0]
                elif self.has_reference:  # LoRA: the base is the policy with its adapters off
                    with lora.adapters_disabled(self.lm):
                        ref = self.model(batch, temperature)[0]
            out.append((old.float().cpu(), ref.float().cpu() if ref is not None else None))
        return out

    def update_mini_batch(self, micro: list[tuple[PackedBatch, torch.Tensor, torch.Tensor | None, torch.Tensor,
                                                  torch.Tensor | None]],
                          normalisers: dict[str, int]) -> dict:
        """One optimizer update from this worker's micro-batches of a mini-batch: (batch, old (B, T), ref (B, T)
        or None, token advantages (B, T), rollout importance weights (B, T) or None) each. `normalisers` count the
        whole mini-batch over all workers, and the loss is scaled by the worker count, so the gradient FSDP averages
        equals the whole mini-batch's (grpo.aggregate_loss). algorithm.loss_mode picks the policy loss (vanilla, gspo).

        The schedule advances only with an optimizer step actually taken (a non-finite gradient skips both), and
        the gradients are freed after the step: between updates (rollout, the weight sync) they take no memory.
        Returns {"micro": [(actor_loss metrics, response tokens)], "grad_norm", "lr", "finite"}."""
        cfg, alg = self.cfg, self.cfg.algorithm
        device = self.device
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        micro_metrics = []
        for batch, old, ref, advantages, is_weights in micro:
            with self.compute():
                log_prob, entropy = self.model(batch, cfg.rollout.temperature, with_entropy=True,
                                               entropy_grad=alg.entropy_coef != 0.0)
            out = grpo.actor_loss(
                log_prob.float(), old.to(device), advantages.to(device),
                batch.response_mask, ref_log_prob=ref.to(device) if ref is not None else None,
                entropy=entropy.float() if entropy is not None else None,
                clip_ratio_low=alg.clip_ratio_low, clip_ratio_high=alg.clip_ratio_high,
                clip_ratio_c=alg.clip_ratio_c, loss_agg_mode=alg.loss_agg_mode, loss_mode=alg.loss_mode,
                rollout_is_weights=is_weights.to(device) if is_weights is not None else None,
                entropy_coef=alg.entropy_coef,
                use_kl_loss=alg.use_kl_loss, kl_coef=alg.kl_coef, kl_estimator=alg.kl_estimator,
                max_response_length=cfg.data.max_response_length, dp_size=self.world_size, **normalisers)
            out.loss.backward()
            micro_metrics.append(({k: float(v) for k, v in out.metrics.items()},
                                  int(batch.response_mask.bool().sum())))
        return {"micro": micro_metrics,
                **optimizer_step(self.model, self.optimizer, self.scheduler, cfg.optim.grad_clip)}

    # -- whole weights, streamed ---------------------------------------------------------------------------

    def _named_tensors(self) -> Iterator[tuple[str, torch.Tensor]]:
        """The HF model's parameters and persistent buffers by their HF names, in `state_dict` order. A tied weight
        comes under each of its names (vLLM's layer-wise reload fills a tied lm_head only from its own name). With
        LoRA, the adapted model's names (base_layer, lora_A, lora_B): `stream_weights` merges them."""
        yield from self.lm.named_parameters(remove_duplicate=False)
        for module_name, module in self.lm.named_modules():
            for name, buffer in module._buffers.items():
                if buffer is not None and name not in module._non_persistent_buffers_set:
                    yield f"{module_name}.{name}" if module_name else name, buffer

    @torch.no_grad()
    def stream_weights(self, dtype: torch.dtype | None = None) -> Iterator[tuple[str, torch.Tensor]]:
        """(HF name, whole tensor in `dtype`, default the compute dtype) for every parameter and persistent buffer,
        one at a time, on this worker's device. Sharded, each tensor is gathered from the shards in `dtype` (the
        local shard is cast first, so a float32 master is never gathered whole): a collective, which every worker
        of the group must iterate to its end together. Unsharded, each tensor is cast (no copy when the dtype
        already matches). The caller should drop each tensor before taking the next: then a sync holds one (a tied
        weight is gathered again under its second name rather than kept)."""
        dtype = dtype or self.compute_dtype
        if not self.lora:
            yield from self._gathered(dtype)
            return
        # LoRA: the base weights and adapters gathered in float32 (both are small next to a full model's float32
        # masters: one weight at a time), merged into the base model's weights, then cast
        yield from lora.merged_tensors(self._gathered(torch.float32), lora.scaling(self.cfg.model), dtype)

    def _gathered(self, dtype: torch.dtype) -> Iterator[tuple[str, torch.Tensor]]:
        """`_named_tensors`, each whole (gathered from the shards: a collective) in `dtype` on this worker's device."""
        from torch.distributed.tensor import DTensor

        for name, tensor in self._named_tensors():
            target = dtype if tensor.is_floating_point() else tensor.dtype
            if isinstance(tensor, DTensor):
                local = tensor.to_local().to(self.device, target)  # host shards (CPU offload) travel as shards
                yield name, DTensor.from_local(local, tensor.device_mesh, tensor.placements, run_check=False,
                                               shape=tensor.shape, stride=tensor.stride()).full_tensor()
            else:
                yield name, tensor.detach().to(self.device, target)

    def adapter_tensors(self) -> dict[str, torch.Tensor]:
        """LoRA: the whole adapters in float32 on the host, by peft's saved names (a collective when sharded)."""
        from torch.distributed.tensor import DTensor

        named = []
        for name, parameter in self.lm.named_parameters():
            if ".lora_" in name:
                tensor = parameter.full_tensor() if isinstance(parameter, DTensor) else parameter
                named.append((name, tensor))
        return lora.adapter_tensors(named)

    def drain_weights(self) -> None:
        """Takes part in a `stream_weights` gathering without keeping anything (ranks that write nothing)."""
        for _ in self.stream_weights():
            pass

    def whole_model(self, device: str | torch.device, dtype: torch.dtype | None = None) -> nn.Module:
        """A plain HF model (no FSDP, no gradient checkpointing) in `dtype` (default: the compute dtype) on `device`,
        built from `stream_weights`: a collective when sharded. For HF generation on a sharded worker and for the
        exported model; the caller drops it when done."""
        from transformers import AutoModelForCausalLM

        dtype = dtype or self.compute_dtype
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(self.lm.config, dtype=dtype)
        model.to_empty(device=device)  # uninitialised storage, filled below (never a random initialisation)
        model.generation_config = self.lm.generation_config
        filled, parameters = set(), dict(model.named_parameters(remove_duplicate=False))
        with torch.no_grad():
            for name, tensor in self.stream_weights(dtype):
                target = parameters[name] if name in parameters else model.get_buffer(name)
                target.copy_(tensor)
                filled.add(name)
            model.tie_weights()  # to_empty gave tied parameters storages of their own
            for name, buffer in self.lm.named_buffers():  # non-persistent ones (rotary tables) are computed, not loaded
                if name not in filled:
                    model.get_buffer(name).copy_(buffer)
        missing = {n for n, _ in model.named_parameters()} - filled
        if missing:
            raise RuntimeError(f"the policy streamed no weights for {sorted(missing)[:5]} of the {type(model).__name__} "
                               "built from its config: the model would hold uninitialised memory there")
        return model.eval()

    # -- state -------------------------------------------------------------------------------------------

    def sharded_state(self) -> dict:
        """Model and optimizer state for torch.distributed.checkpoint (this worker's shards, named by parameter):
        the float32 master weights and the float32 AdamW state."""
        from torch.distributed.checkpoint.state_dict import (StateDictOptions, get_model_state_dict,
                                                             get_optimizer_state_dict)

        # LoRA: only what trains (the frozen base is reloaded from model.path with the run); the filter below also
        # drops a tied lm_head, which ignore_frozen_params keeps under its second name
        options = StateDictOptions(ignore_frozen_params=self.lora)
        model = get_model_state_dict(self.model, options=options)
        if self.lora:
            trains = {name for name, p in self.model.named_parameters() if p.requires_grad}
            model = {k: v for k, v in model.items() if k in trains}
        return {"model": model, "optimizer": get_optimizer_state_dict(self.model, self.optimizer, options=options)}

    def load_sharded_state(self, state: dict) -> None:
        from torch.distributed.checkpoint.state_dict import (StateDictOptions, set_model_state_dict,
                                                             set_optimizer_state_dict)

        options = StateDictOptions(strict=not self.lora)
        set_model_state_dict(self.model, state["model"], options=options)
        set_optimizer_state_dict(self.model, self.optimizer, state["optimizer"], options=options)
