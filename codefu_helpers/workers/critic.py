"""The critic of one worker (algorithm.adv_estimator=gae, PPO): a value model, its optimizer and schedule, sharded
with FSDP2 like the policy.

The value model is the policy's decoder (a copy of the start model, or critic.model_path) under a linear value head
(`policy_ops.value_model_from_lm` / `load_value_model`). Precision and sharding are the policy's (`workers.policy`):
float32 master weights, gradients and AdamW state; forward and backward in `model.dtype` (FSDP2's
`MixedPrecisionPolicy` with float32 gradient reduction when sharded, one unit per decoder layer and the wrapper as
root unit; `torch.autocast` on one worker); with `trainer.fsdp_cpu_offload` the shards live in host memory.

Per step the controller asks for the values of every sample before any update (`values`, like the old log-probs), then
runs critic.ppo_epochs passes of clipped value-loss updates over the step's mini-batches (`update_mini_batch`), each
micro-batch normalised by the whole mini-batch's token (or sample) count and scaled by the worker count, as the actor
loss (`estimators.value_loss`, `grpo.aggregate_loss`). Every worker of a group calls them with the same number of
micro-batches (each forward is a collective when sharded).

Colocated (trainer.critic_gpus=0) the critic shares the policy's mesh and devices; with trainer.critic_gpus > 0 it
lives in Ray workers of its own (a separate placement group and process group), which hold nothing else.
"""

from __future__ import annotations

import contextlib

import torch
from torch import nn

from .. import estimators
from ..policy_ops import PackedBatch, lr_lambda, response_values
from .policy import mesh_device, optimizer_step, shard


class ValueModel(nn.Module):
    """A token-classification model whose forward returns the response values (B, T), float32."""

    def __init__(self, lm: nn.Module):
        super().__init__()
        self.lm = lm

    def forward(self, batch: PackedBatch) -> torch.Tensor:
        # own storage, not a view: FSDP2 hooks its backward on the output
        return response_values(self.lm, batch).clone()


class Critic:
    """See the module docstring. `value_model` arrives in float32 on the host (`policy_ops.value_model_from_lm`)."""

    def __init__(self, value_model: nn.Module, cfg, *, total_updates: int, mesh=None, world_size: int = 1,
                 device: str | torch.device = "cpu", cpu_offload: bool = False):
        self.cfg = cfg
        self.world_size = world_size
        self.compute_dtype = getattr(torch, cfg.model.dtype)
        self.sharded = mesh is not None
        self.device = mesh_device(mesh) if self.sharded else torch.device(device)
        self.model = ValueModel(value_model.float())
        mixed = self.compute_dtype != torch.float32
        if self.sharded:
            shard(self.model, mesh, param_dtype=self.compute_dtype if mixed else None, cpu_offload=cpu_offload)
        else:
            self.model.to(self.device)
        self.autocast = mixed and not self.sharded
        optim = cfg.critic
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=optim.lr, weight_decay=optim.weight_decay)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lr_lambda(optim.warmup_steps, optim.lr_schedule, total_updates))

    @property
    def lm(self) -> nn.Module:
        """The HF token-classification model inside (float32 master weights; shards when sharded)."""
        return self.model.lm

    def compute(self):
        if self.autocast:
            return torch.autocast(self.device.type, dtype=self.compute_dtype)
        return contextlib.nullcontext()

    @torch.no_grad()
    def values(self, batches: list[PackedBatch]) -> list[torch.Tensor]:
        """Values (B, T) of each micro-batch, float32 on the host."""
        self.model.eval()
        out = []
        for batch in batches:
            with self.compute():
                out.append(self.model(batch).float().cpu())
        return out

    def update_mini_batch(self, micro: list[tuple[PackedBatch, torch.Tensor, torch.Tensor]],
                          normalisers: dict[str, int]) -> dict:
        """One optimizer update from this worker's micro-batches of a mini-batch: (batch, old values (B, T), returns
        (B, T)) each. The value loss of a micro-batch is divided by the whole mini-batch's counts (`normalisers`) and
        scaled by the worker count, so the gradient FSDP averages is the whole mini-batch's.
        Returns {"micro": [({"value_loss", "value_clipfrac"}, response tokens)], "grad_norm", "lr", "finite"}."""
        cfg, alg = self.cfg, self.cfg.algorithm
        device = self.device
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        micro_metrics = []
        for batch, old_values, returns in micro:
            with self.compute():
                values = self.model(batch)
            loss, clipfrac = estimators.value_loss(
                values.float(), returns.to(device), old_values.to(device), batch.response_mask,
                cliprange_value=cfg.critic.cliprange_value, loss_agg_mode=alg.loss_agg_mode,
                max_response_length=cfg.data.max_response_length, dp_size=self.world_size, **normalisers)
            loss.backward()
            micro_metrics.append(({"value_loss": float(loss.detach()), "value_clipfrac": float(clipfrac)},
                                  int(batch.response_mask.bool().sum())))
        return {"micro": micro_metrics,
                **optimizer_step(self.model, self.optimizer, self.scheduler, cfg.critic.grad_clip)}

    # -- state -----------------------------------------------------------------------------------------

    def sharded_state(self) -> dict:
        """The value model's float32 master weights and AdamW state (this worker's shards) for
        torch.distributed.checkpoint."""
        from torch.distributed.checkpoint.state_dict import get_model_state_dict, get_optimizer_state_dict

        return {"model": get_model_state_dict(self.model),
                "optimizer": get_optimizer_state_dict(self.model, self.optimizer)}

    def load_sharded_state(self, state: dict) -> None:
        from torch.distributed.checkpoint.state_dict import set_model_state_dict, set_optimizer_state_dict

        set_model_state_dict(self.model, state["model"])
        set_optimizer_state_dict(self.model, self.optimizer, state["optimizer"])

    @torch.no_grad()
    def whole_model(self) -> nn.Module:
        """A plain float32 copy of the value model on the host (sharded: gathered from the shards, a collective every
        worker joins), for the exported critic; the caller drops it when done."""
        from torch.distributed.tensor import DTensor
        from transformers import AutoModelForTokenClassification

        with torch.device("meta"):
            model = AutoModelForTokenClassification.from_config(self.lm.config, dtype=torch.float32)
        model.to_empty(device="cpu")
        parameters = dict(model.named_parameters())
        filled = set()
        for name, tensor in self.lm.named_parameters():
            if isinstance(tensor, DTensor):
                tensor = tensor.full_tensor()
            parameters[name].copy_(tensor.detach().to("cpu", torch.float32))
            filled.add(name)
        for name, buffer in self.lm.named_buffers():  # rotary tables: computed at build time, never sharded
            model.get_buffer(name).copy_(buffer.to("cpu"))
        missing = set(parameters) - filled
        if missing:
            raise RuntimeError(f"the critic has no weights for {sorted(missing)[:5]}")
        return model.eval()
