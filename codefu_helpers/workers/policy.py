"""The policy of one worker: model, optional reference model, optimizer and schedule, sharded with FSDP2.

A worker group of N workers holds one model: with N > 1 every decoder layer is its own FSDP2 unit
(`torch.distributed.fsdp.fully_shard`), so a worker keeps 1/N of each weight, gathers a layer just before using it
and frees it right after; gradients are reduce-scattered (averaged over the workers) in backward. With
`trainer.nnodes > 1` the mesh is 2-D: weights are sharded within a node and replicated across nodes (FSDP's
HYBRID_SHARD), so the slow inter-node links only carry the gradient all-reduce. A one-worker run keeps the plain
module: there is nothing to shard.

The forward is `LogProbModel`, a thin module around the HF causal LM that returns response log-probs (the
decoder, then the chunked vocabulary projection of `policy_ops.response_log_probs`). FSDP2 gathers a unit's weights
in that unit's forward hook; the log-prob code calls the decoder and `lm_head` separately, which would bypass the
LM's own forward, so the wrapper is the root unit instead: its hook gathers the embeddings, the final norm and the
(tied) `lm_head` for the whole computation.

On a GPU the sharded weights stay in `model.dtype` while forward and backward run in bfloat16 and gradients are
reduced in float32 (`MixedPrecisionPolicy`); `trainer.fsdp_cpu_offload` keeps the sharded weights, gradients and
optimizer state in host memory between uses (`CPUOffloadPolicy`).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .. import grpo
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


def shard(model: LogProbModel, mesh, *, mixed_precision: bool, cpu_offload: bool) -> LogProbModel:
    """FSDP2: one unit per decoder layer, then the wrapper as the root unit (see the module docstring)."""
    from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, fully_shard

    options = {"mesh": mesh}
    if mixed_precision:
        options["mp_policy"] = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    if cpu_offload:
        options["offload_policy"] = CPUOffloadPolicy()
    for layer in decoder_layers(model.lm):
        fully_shard(layer, **options)
    fully_shard(model, **options)
    return model


def device_mesh(nnodes: int, per_node: int, device_type: str):
    """1-D mesh (FULL_SHARD) on one node; 2-D (replicate across nodes, shard within one) on several."""
    from torch.distributed.device_mesh import init_device_mesh

    if nnodes == 1:
        return init_device_mesh(device_type, (per_node,), mesh_dim_names=("shard",))
    return init_device_mesh(device_type, (nnodes, per_node), mesh_dim_names=("replicate", "shard"))


class Policy:
    """What one worker trains: `model` (a LogProbModel, sharded when `mesh` is given), the reference, the optimizer.

    `log_probs` and `update_mini_batch` take packed micro-batches; every worker of a group must call them with the
    same number of micro-batches (`workers.batching.equal_counts`), since each forward is a collective."""

    def __init__(self, lm: nn.Module, reference: nn.Module | None, cfg, *, total_updates: int, mesh=None,
                 world_size: int = 1, mixed_precision: bool = False, cpu_offload: bool = False):
        self.cfg = cfg
        self.world_size = world_size
        self.model = LogProbModel(lm)
        self.reference = LogProbModel(reference).eval().requires_grad_(False) if reference is not None else None
        if mesh is not None:
            shard(self.model, mesh, mixed_precision=mixed_precision, cpu_offload=cpu_offload)
            if self.reference is not None:
                shard(self.reference, mesh, mixed_precision=mixed_precision, cpu_offload=cpu_offload)
        self.sharded = mesh is not None
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=cfg.optim.lr,
                                           weight_decay=cfg.optim.weight_decay)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lr_lambda(cfg.optim.warmup_steps, cfg.optim.lr_schedule, total_updates))

    @property
    def lm(self) -> nn.Module:
        """The HF model inside (its weights are shards when the policy is sharded)."""
        return self.model.lm

    @torch.no_grad()
    def log_probs(self, batches: list[PackedBatch]) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
        """(old, reference or None) log-probs (B, T) of each micro-batch, at the sampling temperature."""
        temperature = self.cfg.rollout.temperature
        self.model.eval()
        out = []
        for batch in batches:
            old, _ = self.model(batch, temperature)
            ref = self.reference(batch, temperature)[0] if self.reference is not None else None
            out.append((old.cpu(), ref.cpu() if ref is not None else None))
        return out

    def update_mini_batch(self, micro: list[tuple[PackedBatch, torch.Tensor, torch.Tensor | None, torch.Tensor]],
                          normalisers: dict[str, int]) -> dict:
        """One optimizer update from this worker's micro-batches of a mini-batch: (batch, old (B, T), ref (B, T)
        or None, token advantages (B, T)) each. `normalisers` count the whole mini-batch over all workers, and the loss is
        scaled by the worker count, so the gradient FSDP averages equals the whole mini-batch's (grpo.aggregate_loss).

        Returns {"micro": [(actor_loss metrics, response tokens)], "grad_norm", "lr", "finite"}."""
        cfg, alg = self.cfg, self.cfg.algorithm
        device = next(self.model.parameters()).device
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        micro_metrics = []
        for batch, old, ref, advantages in micro:
            log_prob, entropy = self.model(batch, cfg.rollout.temperature, with_entropy=True,
                                           entropy_grad=alg.entropy_coef != 0.0)
            out = grpo.actor_loss(
                log_prob, old.to(device), advantages.to(device),
                batch.response_mask, ref_log_prob=ref.to(device) if ref is not None else None, entropy=entropy,
                clip_ratio_low=alg.clip_ratio_low, clip_ratio_high=alg.clip_ratio_high,
                clip_ratio_c=alg.clip_ratio_c, loss_agg_mode=alg.loss_agg_mode, entropy_coef=alg.entropy_coef,
                use_kl_loss=alg.use_kl_loss, kl_coef=alg.kl_coef, kl_estimator=alg.kl_estimator,
                max_response_length=cfg.data.max_response_length, dp_size=self.world_size, **normalisers)
            out.loss.backward()
            micro_metrics.append(({k: float(v) for k, v in out.metrics.items()},
                                  int(batch.response_mask.bool().sum())))
        max_norm = cfg.optim.grad_clip if cfg.optim.grad_clip is not None else math.inf
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm)
        if hasattr(grad_norm, "full_tensor"):  # a DTensor when the gradients are FSDP2 shards
            grad_norm = grad_norm.full_tensor()
        finite = bool(torch.isfinite(grad_norm))
        if finite:
            self.optimizer.step()
        lr = self.scheduler.get_last_lr()[0]  # the rate this update used
        self.scheduler.step()
        return {"micro": micro_metrics, "grad_norm": float(grad_norm), "lr": lr, "finite": finite}

    # -- state -------------------------------------------------------------------------------------------

    def full_state_dict(self) -> dict[str, torch.Tensor]:
        """The HF model's whole weights (keys as `lm.state_dict()`); a collective when sharded: call on every worker."""
        if not self.sharded:
            return self.lm.state_dict()
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        full = get_model_state_dict(self.model, options=StateDictOptions(full_state_dict=True))
        return {name.removeprefix("lm."): tensor for name, tensor in full.items()}

    def sharded_state(self) -> dict:
        """Model and optimizer state for torch.distributed.checkpoint (this worker's shards, named by parameter)."""
        from torch.distributed.checkpoint.state_dict import get_model_state_dict, get_optimizer_state_dict

        return {"model": get_model_state_dict(self.model),
                "optimizer": get_optimizer_state_dict(self.model, self.optimizer)}

    def load_sharded_state(self, state: dict) -> None:
        from torch.distributed.checkpoint.state_dict import set_model_state_dict, set_optimizer_state_dict

        set_model_state_dict(self.model, state["model"])
        set_optimizer_state_dict(self.model, self.optimizer, state["optimizer"])
