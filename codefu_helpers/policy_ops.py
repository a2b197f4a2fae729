"""Model-side operations of the policy: packing samples into a batch, chunked response log-probs, loading the
model, the learning-rate schedule. No loop, no Ray: the workers (`codefu_helpers.workers.policy`) build on this,
and so do the rollout benchmark and the vLLM tests that compare the engine's log-probs with the trainer's.

Samples, log-probs and losses are laid out as (B, T): B samples, T response tokens (right-padded). Prompts are
left-padded so that every response starts in the same column, which lets the log-prob pass compute logits for
the response positions only:

    batch = pack(samples, pad_id=tokenizer.pad_token_id)
    log_probs, entropy = response_log_probs(model, batch, temperature=0.8, with_entropy=True)   # (B, T) each
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch
from torch.utils.checkpoint import checkpoint

from .rollout import Sample


@dataclass
class PackedBatch:
    input_ids: torch.Tensor       # (B, P + T) left-padded prompt, then right-padded response
    attention_mask: torch.Tensor  # (B, P + T)
    position_ids: torch.Tensor    # (B, P + T)
    response_ids: torch.Tensor    # (B, T)
    response_mask: torch.Tensor   # (B, T) float, 1 on response tokens that count
    prompt_width: int             # P


def pack(samples: list[Sample], pad_id: int, device: torch.device | str = "cpu",
         weights: list[float] | None = None) -> PackedBatch:
    """Pads samples so that every response starts at column P. `weights` zero a sample's mask (excluded)."""
    width = max(len(s.prompt_ids) for s in samples)
    length = max(1, max(len(s.response_ids) for s in samples))
    ids, attn, resp, mask = [], [], [], []
    for i, s in enumerate(samples):
        left, right = width - len(s.prompt_ids), length - len(s.response_ids)
        ids.append([pad_id] * left + s.prompt_ids + s.response_ids + [pad_id] * right)
        attn.append([0] * left + [1] * (len(s.prompt_ids) + len(s.response_ids)) + [0] * right)
        resp.append(s.response_ids + [pad_id] * right)
        w = 1.0 if weights is None else weights[i]
        mask.append([w] * len(s.response_ids) + [0.0] * right)
    input_ids = torch.tensor(ids, device=device)
    attention_mask = torch.tensor(attn, device=device)
    position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    return PackedBatch(input_ids, attention_mask, position_ids, torch.tensor(resp, device=device),
                       torch.tensor(mask, device=device, dtype=torch.float32), width)


# Bytes of float32 logits one chunk of the vocabulary projection may hold: (rows, V) * 4 <= this.
LOGITS_CHUNK_BYTES = 64 << 20


def response_log_probs(model, batch: PackedBatch, temperature: float = 1.0, with_entropy: bool = False,
                       entropy_grad: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probs (B, T) of the response tokens under `model` at the sampling temperature, and entropy (B, T).

    The full (B, T, V) logits are never materialised: the decoder's hidden states at the response positions are
    projected onto the vocabulary a chunk of rows at a time (`LOGITS_CHUNK_BYTES` of float32 logits), temperature
    applied inside the chunk, and with a gradient each chunk is checkpointed so backward recomputes its logits
    instead of keeping them. The entropy carries a gradient only with `entropy_grad` (an entropy bonus).
    """
    T = batch.response_ids.shape[1]
    decoder, head = _decoder_and_head(model)
    hidden = decoder(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                     position_ids=batch.position_ids, use_cache=False).last_hidden_state  # (B, P + T, H)
    hidden = hidden[:, -(T + 1):-1]  # (B, T, H): position P-1+t predicts response token t
    B, _, H = hidden.shape
    flat, ids = hidden.reshape(B * T, H), batch.response_ids.reshape(B * T)
    rows = max(1, LOGITS_CHUNK_BYTES // (4 * head.weight.shape[0]))
    needs_grad = torch.is_grad_enabled() and flat.requires_grad

    def chunk(h: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = head(h).float()  # (rows, V)
        if temperature != 1.0:
            z = z / temperature
        lse = torch.logsumexp(z, dim=-1)
        log_prob = z.gather(-1, y[:, None])[:, 0] - lse
        if not with_entropy:
            return log_prob, lse.new_zeros(())
        entropy = lse - (torch.softmax(z, dim=-1) * z).sum(-1)
        return log_prob, entropy if entropy_grad else entropy.detach()

    parts = [checkpoint(chunk, flat[i:i + rows], ids[i:i + rows], use_reentrant=False) if needs_grad
             else chunk(flat[i:i + rows], ids[i:i + rows]) for i in range(0, B * T, rows)]
    log_probs = torch.cat([lp for lp, _ in parts]).reshape(B, T)
    entropy = torch.cat([e for _, e in parts]).reshape(B, T) if with_entropy else None
    return log_probs, entropy


def _decoder_and_head(model):
    """(decoder returning last_hidden_state, vocabulary projection) of an HF causal LM."""
    if getattr(model.config, "final_logit_softcapping", None):
        raise ValueError(f"{type(model).__name__} soft-caps its logits (final_logit_softcapping), which the chunked "
                         "log-prob computation does not apply; such models are not supported by this trainer")
    head = model.get_output_embeddings()
    decoder = model.get_decoder() if hasattr(model, "get_decoder") else None
    if head is None or decoder is None:
        raise ValueError(f"{type(model).__name__} does not expose get_decoder() and get_output_embeddings(): the "
                         "trainer needs an HF causal LM (decoder + lm_head)")
    return decoder, head


def load_model_and_tokenizer(model_cfg, path: str | None = None, dtype: torch.dtype = torch.float32):
    """The policy and its tokenizer from `path` or model.path: an HF id, a local directory, or tiny://qwen2.

    The weights are loaded in `dtype`, float32 by default whatever model.dtype says: these are the master weights
    that the optimizer updates (model.dtype is what forward and backward compute in, see workers.policy)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from .tiny_model import resolve_model_path

    path = resolve_model_path(path or model_cfg.path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
    if model_cfg.gradient_checkpointing:
        model.gradient_checkpointing_enable()
    return model, tokenizer


def lr_lambda(warmup: int, schedule: str, updates: int) -> Callable[[int], float]:
    """Learning-rate multiplier of optimizer update `update` (0-based): a linear warm-up from 0 over `warmup`
    updates (update 0 runs at 0, as verl's get_constant/cosine_schedule_with_warmup), then constant, or a half
    cosine from 1 down to 0 at update `updates` (verl's formula; held at 0 past `updates`, where verl's rises)."""
    def factor(update: int) -> float:
        if update < warmup:
            return update / warmup
        if schedule == "cosine":
            progress = min(1.0, (update - warmup) / max(1, updates - warmup))
            return max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))
        return 1.0
    return factor
