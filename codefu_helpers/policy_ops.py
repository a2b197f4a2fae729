"""Model-side operations of the policy and the critic: packing samples into a batch, chunked response log-probs,
loading the model, the critic's value model and its values, the learning-rate schedule. No loop, no Ray: the workers
(`codefu_helpers.workers.policy`, `workers.critic`) build on this, and so do the rollout benchmark and the vLLM tests
that compare the engine's log-probs with the trainer's.

Samples, log-probs and losses are laid out as (B, T): B samples, T response tokens (right-padded). Prompts are
left-padded so that every response starts in the same column, which lets the log-prob pass compute logits for
the response positions only. Samples of one group share their prompt: the decoder runs each distinct prompt once
and the responses attend to its cached keys and values (`response_hidden`), so a group of n samples costs one
prompt and n responses instead of n prompts (the same numbers up to float rounding, gradients included):

    batch = pack(samples, pad_id=tokenizer.pad_token_id)
    log_probs, entropy = response_log_probs(model, batch, temperature=0.8, with_entropy=True)   # (B, T) each

The critic (PPO's value model, algorithm.adv_estimator=gae) is an HF token-classification model with one label, as
verl's: the policy's decoder and a linear value head on its hidden states (`value_model_from_lm`, or
`load_value_model` for critic.model_path). The value of response token t is read from the hidden state that predicts
it (position P-1+t), the state the log-prob of token t comes from:

    critic = value_model_from_lm(policy_lm, seed=0)
    values = response_values(critic, batch)                                                     # (B, T)
"""

from __future__ import annotations

import copy
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
                       entropy_grad: bool = False,
                       share_prompts: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probs (B, T) of the response tokens under `model` at the sampling temperature, and entropy (B, T).

    The full (B, T, V) logits are never materialised: the decoder's hidden states at the response positions are
    projected onto the vocabulary a chunk of rows at a time (`LOGITS_CHUNK_BYTES` of float32 logits), temperature
    applied inside the chunk, and with a gradient each chunk is checkpointed so backward recomputes its logits
    instead of keeping them. The entropy carries a gradient only with `entropy_grad` (an entropy bonus).
    `share_prompts=False` runs every row whole (see `response_hidden`; the benchmark's comparison).
    """
    decoder, head = _decoder_and_head(model)
    hidden = response_hidden(decoder, batch, share_prompts)  # (B, T, H): position P-1+t predicts response token t
    B, T, H = hidden.shape
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


def response_hidden(decoder, batch: PackedBatch, share_prompts: bool = True) -> torch.Tensor:
    """The decoder's last hidden states (B, T, H) at positions P-1+t, the ones that predict response token t.

    Where rows share a prompt (a GRPO group: n samples of one prompt), each distinct prompt goes through the decoder
    once with its keys and values cached, the cache is copied out to the rows that use it, and the responses run
    on top of it: with a long prompt and short responses that is most of the work saved. Every row's numbers are
    those of running it alone, up to float rounding; gradients flow back through the shared prompt to every
    weight. The decoder is called twice (prompts, then responses) whether or not a prompt repeats: a sharded
    worker (FSDP2) gathers each layer's weights in every call, a collective, so every worker must make the same
    calls whatever samples it holds. The whole rows go through in one call only with `share_prompts=False` or
    where no cache is kept (gradient checkpointing in training mode: HF turns the cache off there), both the same
    on every worker."""
    T, P = batch.response_ids.shape[1], batch.prompt_width
    if not share_prompts or P == 0 or _checkpointing(decoder):
        hidden = decoder(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                         position_ids=batch.position_ids, use_cache=False).last_hidden_state  # (B, P + T, H)
        return hidden[:, -(T + 1):-1]
    distinct, rows = _distinct_prompts(batch)
    prompt = decoder(input_ids=batch.input_ids[distinct, :P], attention_mask=batch.attention_mask[distinct, :P],
                     position_ids=batch.position_ids[distinct, :P], use_cache=True)
    cache = prompt.past_key_values
    if cache is None:  # a decoder that keeps no cache: run the rows whole
        return response_hidden(decoder, batch, share_prompts=False)
    cache.reorder_cache(rows)  # one copy of its prompt's keys and values per row (an index_select: differentiable)
    responses = decoder(input_ids=batch.input_ids[:, P:], attention_mask=batch.attention_mask,
                        position_ids=batch.position_ids[:, P:], past_key_values=cache, use_cache=True)
    last = prompt.last_hidden_state[:, -1][rows]  # (B, H): the prompt's last position predicts response token 0
    return torch.cat([last[:, None], responses.last_hidden_state[:, :-1]], dim=1)


def _checkpointing(decoder) -> bool:
    """Whether HF's gradient checkpointing drops the cache in this forward (a layer flagged for it, in training)."""
    return decoder.training and any(getattr(m, "gradient_checkpointing", False) for m in decoder.modules())


def _distinct_prompts(batch: PackedBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """(index of one row per distinct prompt, each row's position in that index). Rows share a prompt when their
    prompt columns agree in both token ids and attention mask."""
    P = batch.prompt_width
    key = torch.cat([batch.input_ids[:, :P], batch.attention_mask[:, :P].to(batch.input_ids.dtype)], dim=1)
    unique, rows = torch.unique(key, dim=0, return_inverse=True)
    first = torch.full((unique.shape[0],), key.shape[0], dtype=torch.long, device=key.device)
    first = first.scatter_reduce(0, rows, torch.arange(key.shape[0], device=key.device), reduce="amin")
    return first, rows


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


def _value_config(config):
    """A copy of an LM's config for its value model: one output (the value), no dropout before the head."""
    config = copy.deepcopy(config)
    config.num_labels = 1
    config.classifier_dropout = 0.0
    config.architectures = None
    return config


def value_head(model) -> torch.nn.Linear:
    """The value head of a token-classification model: its one Linear with a single output (`score` in Qwen2/Llama)."""
    heads = [m for name, m in model.named_children()
             if isinstance(m, torch.nn.Linear) and m.out_features == 1 and name != model.base_model_prefix]
    if len(heads) != 1:
        raise ValueError(f"{type(model).__name__} has no single one-output Linear head ({len(heads)} found): the "
                         "critic needs a token-classification model with num_labels=1")
    return heads[0]


def init_value_head(head: torch.nn.Linear, std: float, seed: int) -> None:
    """A fresh value head: weights N(0, std^2) from a generator of its own (the same on every worker and run, and
    the global RNG is left alone), bias 0."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        head.weight.copy_(torch.randn(head.weight.shape, generator=generator, dtype=torch.float32) * std)
        if head.bias is not None:
            head.bias.zero_()


def value_model_from_lm(lm, *, seed: int, gradient_checkpointing: bool = False):
    """A value model built from an HF causal LM: a float32 copy of its decoder under a fresh value head (the LM's
    vocabulary projection is dropped). The LM is left as it was."""
    from transformers import AutoModelForTokenClassification

    with torch.device("meta"):
        model = AutoModelForTokenClassification.from_config(_value_config(lm.config), dtype=torch.float32)
    decoder = copy.deepcopy(lm.get_decoder()).float()
    setattr(model, model.base_model_prefix, decoder)
    head = value_head(model)
    name = next(n for n, m in model.named_children() if m is head)
    fresh = torch.nn.Linear(head.in_features, 1, bias=head.bias is not None)
    setattr(model, name, fresh)
    init_value_head(fresh, getattr(lm.config, "initializer_range", 0.02), seed)
    return _finish_value_model(model, gradient_checkpointing)


def load_value_model(path: str, *, seed: int, gradient_checkpointing: bool = False):
    """The value model at `path` (critic.model_path) in float32: a token-classification checkpoint with one label keeps
    its value head; a causal LM gets a fresh one (seeded, see `init_value_head`). Raises when `path` is neither."""
    from transformers import AutoConfig, AutoModelForTokenClassification

    from .tiny_model import resolve_model_path

    folder = resolve_model_path(path)
    config = AutoConfig.from_pretrained(folder)
    has_head = any(a.endswith("ForTokenClassification") for a in (config.architectures or [])) and \
        getattr(config, "num_labels", None) == 1
    try:
        model, info = AutoModelForTokenClassification.from_pretrained(
            folder, config=_value_config(config), dtype=torch.float32, output_loading_info=True)
    except (ValueError, OSError) as exc:  # OSError: no weights there
        raise ValueError(f"critic.model_path={path!r} cannot be loaded as a value model (an HF causal LM or a "
                         f"token-classification model with one label): {exc}") from None
    head = value_head(model)
    head_names = {n for n, _ in model.named_parameters() if n.split(".")[0] not in (model.base_model_prefix,)}
    missing = set(info.get("missing_keys") or []) - head_names
    if missing:
        raise ValueError(f"critic.model_path={path!r}: its weights lack {sorted(missing)[:5]}, so the critic would "
                         "start from random decoder weights; point it at a complete model")
    if not has_head:
        init_value_head(head, getattr(config, "initializer_range", 0.02), seed)
    return _finish_value_model(model, gradient_checkpointing)


def _finish_value_model(model, gradient_checkpointing: bool):
    if gradient_checkpointing:
        model.gradient_checkpointing_enable()
    elif getattr(model, "is_gradient_checkpointing", False):
        model.gradient_checkpointing_disable()  # a copied decoder keeps the policy's setting otherwise
    return model


def response_values(model, batch: PackedBatch) -> torch.Tensor:
    """Values (B, T) of the response tokens under value model `model`: the value head on the hidden state at position
    P-1+t for response token t (verl's critic alignment), in float32."""
    decoder = getattr(model, model.base_model_prefix)
    return value_head(model)(response_hidden(decoder, batch)).squeeze(-1).float()  # (B, T)


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
