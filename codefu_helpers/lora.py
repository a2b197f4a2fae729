"""LoRA on the policy (model.lora_rank > 0): low-rank adapters trained in float32 on a frozen base.

A targeted linear layer computes W x + (alpha / r) B A x, with W (out, in) frozen in `model.dtype`, A (r, in) drawn
at random and B (out, r) zero at the start, so the adapted model starts as exactly the base. Only A and B train and
sit in the optimizer: AdamW's state is 2 x 4 bytes per adapter parameter instead of per weight.

- The adapters are peft's LoRA layers, injected into the HF model in place (`peft.inject_adapter_in_model`): the
  model stays the same HF module tree, so the log-prob code, FSDP2's per-layer units and HF generate see what they
  see without LoRA. A targeted layer's weight is then named `<module>.base_layer.weight`, its adapters
  `<module>.lora_A.default.weight` and `<module>.lora_B.default.weight`.
- **The reference is a view**: with the adapters switched off (`adapters_disabled`) the policy computes the base
  model, so the KL needs no second copy of the weights.
- **The rollout engine gets merged weights**: `merged_tensors` turns the policy's named tensors into the base
  model's names, each targeted weight replaced by W + (alpha / r) B A (computed in float32, then cast), so vLLM
  loads them as it loads a full fine-tune's; nothing of LoRA reaches the engine.
- **The adapter as files**: `save_adapter` writes peft's format (adapter_config.json, adapter_model.safetensors),
  which `peft.PeftModel.from_pretrained` and vLLM's LoRA loader read.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterable, Iterator

import torch
from torch import nn

ADAPTER = "default"  # peft's name for the one adapter
BASE_SUFFIX = ".base_layer"
LORA_PARTS = (f".lora_A.{ADAPTER}.weight", f".lora_B.{ADAPTER}.weight")
ADAPTER_DIR = "adapter"  # <output_dir>/adapter: the trained adapter in peft's format


def lora_config(model_cfg):
    """peft's LoraConfig for config section `model` (rank, alpha, dropout, target modules)."""
    from peft import LoraConfig

    return LoraConfig(r=model_cfg.lora_rank, lora_alpha=model_cfg.lora_alpha, lora_dropout=model_cfg.lora_dropout,
                      target_modules=list(model_cfg.lora_target_modules) if model_cfg.lora_target_modules
                      else "all-linear", bias="none", task_type="CAUSAL_LM")


def add_adapters(lm: nn.Module, model_cfg, base_dtype: torch.dtype) -> nn.Module:
    """Injects LoRA layers into the HF model `lm` in place: the base weights frozen and stored in `base_dtype`, the
    adapters float32 and the only parameters that train. Raises ValueError naming the targets when none matched."""
    from peft import inject_adapter_in_model

    for parameter in lm.parameters():  # not the buffers: RoPE's tables stay float32
        parameter.data = parameter.data.to(base_dtype)
        parameter.requires_grad_(False)
    try:
        inject_adapter_in_model(lora_config(model_cfg), lm, adapter_name=ADAPTER)
    except ValueError as exc:
        linear = sorted({name.rsplit(".", 1)[-1] for name, m in lm.named_modules() if isinstance(m, nn.Linear)})
        raise ValueError(f"model.lora_target_modules={model_cfg.lora_target_modules}: {exc}. The model's linear "
                         f"modules: {linear}") from None
    for name, parameter in lm.named_parameters():
        is_adapter = ".lora_" in name
        if is_adapter:
            parameter.data = parameter.data.float()
        parameter.requires_grad_(is_adapter)
    return lm


def has_adapters(lm: nn.Module) -> bool:
    return any(".lora_A." in name for name, _ in lm.named_parameters())


def _lora_layers(lm: nn.Module):
    from peft.tuners.lora import LoraLayer

    return [m for m in lm.modules() if isinstance(m, LoraLayer)]


@contextlib.contextmanager
def adapters_disabled(lm: nn.Module):
    """The base model: every LoRA layer computes its base layer alone inside the block. The layers' switch is set
    directly (peft's `enable_adapters` would also flip the adapters' requires_grad, which FSDP2 fixed at sharding)."""
    layers = _lora_layers(lm)
    for layer in layers:
        layer._disable_adapters = True
    try:
        yield lm
    finally:
        for layer in layers:
            layer._disable_adapters = False


def scaling(model_cfg) -> float:
    return model_cfg.lora_alpha / model_cfg.lora_rank


def merged_tensors(named: Iterable[tuple[str, torch.Tensor]], scale: float,
                   dtype: torch.dtype) -> Iterator[tuple[str, torch.Tensor]]:
    """The base model's (name, tensor) stream from the adapted model's: `<m>.base_layer.weight` becomes `<m>.weight`
    = W + scale * B A (float32 arithmetic, then `dtype`), `<m>.base_layer.bias` becomes `<m>.bias`, the adapters are
    consumed. `named` must yield a layer's base weight before its A and B (named_parameters' order); the merged
    weight is yielded once its B arrives. Other tensors pass through."""
    pending: dict[str, torch.Tensor] = {}
    adapters: dict[str, torch.Tensor] = {}
    for name, tensor in named:
        if f"{BASE_SUFFIX}." in name:
            module, leaf = name.rsplit(BASE_SUFFIX + ".", 1)
            if leaf == "weight":
                pending[module] = tensor
            else:
                yield f"{module}.{leaf}", tensor.to(dtype) if tensor.is_floating_point() else tensor
            continue
        part = next((p for p in LORA_PARTS if name.endswith(p)), None)
        if part is None:
            yield name, tensor
            continue
        module = name[: -len(part)]
        if part == LORA_PARTS[0]:
            adapters[module] = tensor
            continue
        base, a = pending.pop(module), adapters.pop(module)
        yield f"{module}.weight", (base.float() + scale * (tensor.float() @ a.float())).to(dtype)
    if pending or adapters:
        raise RuntimeError(f"LoRA layers without their adapters in the weight stream: {sorted(pending | adapters)[:3]}")


def adapter_tensors(named: Iterable[tuple[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """peft's saved names for the adapters of an adapted model's (name, tensor) stream."""
    out = {}
    for name, tensor in named:
        part = next((p for p in LORA_PARTS if name.endswith(p)), None)
        if part is not None:
            out["base_model.model." + name.replace(f".{ADAPTER}.", ".")] = tensor.detach().float().cpu().contiguous()
    return out


def save_adapter(tensors: dict[str, torch.Tensor], model_cfg, base_model: str, target: str | Path) -> Path:
    """adapter_config.json and adapter_model.safetensors at `target` (peft's format)."""
    from safetensors.torch import save_file

    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    config = lora_config(model_cfg)
    config.base_model_name_or_path = base_model
    config.save_pretrained(str(target))
    save_file(tensors, str(target / "adapter_model.safetensors"))
    return target


def count_parameters(lm: nn.Module) -> dict[str, int]:
    """{"trainable": elements that train, "frozen": elements that do not}."""
    trainable = sum(p.numel() for p in lm.parameters() if p.requires_grad)
    return {"trainable": trainable, "frozen": sum(p.numel() for p in lm.parameters()) - trainable}
