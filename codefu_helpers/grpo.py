"""GRPO maths in plain torch: group advantages, the clipped policy loss, KL to a reference, entropy.

The key idea of GRPO: sample a *group* of n responses ("samples") to each prompt, score them, and use
the group's own mean reward as the baseline, so no value network is needed:

    advantage_i = (r_i - mean(group)) / (std(group) + eps)     # GRPO
    advantage_i =  r_i - mean(group)                           # Dr.GRPO (norm_by_std=False)

Every token of a sample shares its advantage. The policy is then updated with PPO's clipped surrogate,
optionally with DAPO's asymmetric ("clip-higher") ratio bounds, dual-clip for negative advantages,
a KL penalty to a frozen reference policy and an entropy bonus. Per-token losses are reduced to one
scalar by `aggregate_loss`, whose modes differ in how long and short samples are weighted. GSPO
(`gspo_policy_loss`, loss_mode="gspo") clips one length-normalised ratio per sample instead of one per token.

Everything here matches `verl.trainer.ppo.core_algos` (verl 0.9.1) for the same inputs and options;
`tests/test_grpo_parity.py` runs both on random inputs. Deliberate differences, all in degenerate cases:
group statistics are computed in float64, so a group of identical rewards gets an advantage of exactly
zero (verl's float32 std of e.g. eight 0.9s is ~6e-8, not 0, which turns rounding noise into advantages
of +-0.06); NaN/inf on padded positions never reaches the loss (verl's seq-mean modes multiply by the mask,
and NaN * 0 is NaN); and a batch with no valid token aggregates to 0 instead of NaN.

A step's bookkeeping lives here too: `mini_batch_metrics` merges micro-batch metrics into the whole mini-batch's
values, and `rollout_log_prob_check` measures how far the rollout engine's log-probs are from the policy's (the
weight-sync check) and gives the importance weights (`rollout_is_weights`: per token, per sample, or per token masked
outside bounds) when the loss uses the engine's log-probs.

Shapes: B samples (responses) in a batch, T response tokens (padded), V vocabulary size.
Masks are (B, T) with 1/True on response tokens that count and 0/False on padding.

Usage, one micro-batch of the trainer:

    adv = group_advantages(rewards, group_ids)                      # (B,)
    out = actor_loss(log_prob, old_log_prob, adv[:, None] * mask, mask, clip_ratio_high=0.28,
                     entropy=token_entropy(logits), **loss_normalisers(mini_batch_mask))
    out.loss.backward()
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Hashable, Sequence

import numpy as np
import torch
from torch.utils.checkpoint import checkpoint

__all__ = [
    "LOSS_AGG_MODES",
    "KL_ESTIMATORS",
    "group_advantages",
    "groups_without_baseline",
    "token_advantages",
    "aggregate_loss",
    "loss_normalisers",
    "POLICY_LOSS_MODES",
    "policy_loss",
    "gspo_policy_loss",
    "kl_penalty",
    "token_entropy",
    "token_log_probs",
    "actor_loss",
    "ActorLossOutput",
    "SUMMED_LOSS_METRICS",
    "mini_batch_metrics",
    "ROLLOUT_IS_MODES",
    "rollout_is_weights",
    "rollout_log_prob_check",
]

# token-mean: every valid token in the batch weighs the same (long samples dominate).
# seq-mean-token-mean: mean over each sample's tokens, then over samples (every sample weighs the same).
# seq-mean-token-sum-norm: token sums per sample divided by a constant (Dr.GRPO): no length bias.
# token-sum and seq-mean-token-sum are verl's unnormalised variants, kept for parity.
LOSS_AGG_MODES = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm", "token-sum", "seq-mean-token-sum")

# vanilla: PPO's clipped surrogate per token (policy_loss); gspo: one clipped ratio per sample (gspo_policy_loss).
# verl's names (actor_rollout_ref.actor.policy_loss.loss_mode).
POLICY_LOSS_MODES = ("vanilla", "gspo")

# How the rollout engine's log-probs reweight the policy loss (rollout_is_weights): truncated per token, truncated per
# sample, or per token with tokens outside [lower, cap] dropped (verl's IcePop).
ROLLOUT_IS_MODES = ("token", "sequence", "mask")

# Names as verl spells them, aliases included (k1/k2/k3 after Schulman's "Approximating KL divergence").
KL_ESTIMATORS = ("kl", "k1", "mse", "k2", "low_var_kl", "k3", "abs")

# verl clamps log-ratios before exp() so that one wild token cannot overflow the loss.
_LOG_RATIO_CLAMP = 20.0
# ... and clamps the k3 estimate itself, which grows exponentially in (ref - logp).
_K3_CLAMP = 10.0
# GSPO's log sequence ratio is clamped from above only, at 10, as verl does.
_GSPO_LOG_RATIO_MAX = 10.0
# verl's masked_mean adds this to the denominator; used for the clip-fraction and approx-KL metrics.
_METRIC_EPS = 1e-8


# ----------------------------------------------------------------------------------------------------
# Advantages


def _group_index(group_ids: Sequence[Hashable] | np.ndarray | torch.Tensor, batch_size: int) -> torch.Tensor:
    """Map arbitrary group labels (uid strings, prompt indices) to contiguous ints 0..G-1, shape (B,)."""
    if isinstance(group_ids, torch.Tensor):
        labels = group_ids.detach().cpu().reshape(-1).tolist()
    else:
        labels = np.asarray(group_ids, dtype=object).reshape(-1).tolist()
    if len(labels) != batch_size:
        raise ValueError(f"group_ids has {len(labels)} entries but there are {batch_size} rewards; "
                         "pass one group id (e.g. the prompt's uid) per sample")
    first_seen: dict[Hashable, int] = {}
    return torch.tensor([first_seen.setdefault(label, len(first_seen)) for label in labels], dtype=torch.long)


def group_advantages(
    rewards: torch.Tensor,
    group_ids: Sequence[Hashable] | np.ndarray | torch.Tensor,
    *,
    norm_by_std: bool = True,
    epsilon: float = 1e-6,
    lone_sample: str = "reward",
) -> torch.Tensor:
    """One advantage per sample from its reward and its group's reward statistics.

    rewards: (B,) scalar outcome reward per sample. group_ids: (B,) any hashable labels; samples with
    equal labels form a group (they answer the same prompt), in any order. norm_by_std=True is GRPO,
    False is Dr.GRPO. std is the unbiased (n-1) standard deviation, as torch.std and verl use.
    A group of one sample has no baseline. lone_sample="reward" passes its reward through unchanged
    (mean 0, std 1), like verl; "zero" gives it advantage 0, which is what the trainer uses: a group cut down to
    one valid sample (the others' judging failed) has nothing to be compared with, and its raw reward as an
    advantage would push the policy by the reward's scale alone.
    Returns (B,) in the dtype of `rewards`, without gradient.
    """
    if lone_sample not in ("reward", "zero"):
        raise ValueError(f"lone_sample={lone_sample!r}: use 'reward' (verl) or 'zero'")
    if rewards.dim() != 1:
        raise ValueError(f"rewards must be one scalar per sample, shape (B,); got shape {tuple(rewards.shape)}. "
                         "For token-level rewards pass rewards.sum(-1)")
    batch_size = rewards.shape[0]
    index = _group_index(group_ids, batch_size).to(rewards.device)  # (B,)
    num_groups = int(index.max().item()) + 1 if batch_size else 0

    with torch.no_grad():
        # float64 so that a group of identical rewards has a mean equal to each reward, hence exactly
        # zero advantage; float32 sums of e.g. 0.9 leave ~1e-8 residues that std-normalisation inflates.
        r = rewards.detach().to(torch.float64)  # (B,)
        count = torch.zeros(num_groups, dtype=torch.float64, device=r.device).index_add_(0, index, torch.ones_like(r))
        total = torch.zeros_like(count).index_add_(0, index, r)
        mean = total / count  # (G,)
        centred = r - mean[index]  # (B,)
        sq = torch.zeros_like(count).index_add_(0, index, centred * centred)
        std = torch.sqrt(sq / (count - 1).clamp(min=1))  # (G,) two-pass, unbiased

        singleton = count[index] == 1  # (B,)
        centred = torch.where(singleton, torch.zeros_like(r) if lone_sample == "zero" else r, centred)
        if norm_by_std:
            scale = torch.where(singleton, torch.ones_like(r), std[index])
            # exact zeros stay zero even with epsilon=0 (0 / 0 would be NaN for a tied group)
            advantages = torch.where(centred == 0, centred, centred / (scale + epsilon))
        else:
            advantages = centred
    return advantages.to(rewards.dtype)


def groups_without_baseline(group_ids: Sequence[Hashable], valid: Sequence[bool | float]) -> int:
    """How many groups have samples but fewer than two valid ones: no baseline, so no advantage (the trainer's
    lone_sample="zero"). group_ids: (B,) labels; valid: (B,) truthy for samples that are trained on."""
    counts: dict[Hashable, int] = {}
    for group, ok in zip(group_ids, valid):
        counts[group] = counts.get(group, 0) + bool(ok)
    return sum(1 for c in counts.values() if c < 2)


def token_advantages(advantages: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """Broadcast (B,) per-sample advantages to (B, T) tokens, zero on padding (verl's layout)."""
    return advantages.unsqueeze(-1) * response_mask.to(advantages.dtype)


# ----------------------------------------------------------------------------------------------------
# Aggregation


def _masked_sum(values: torch.Tensor, mask: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    # where() first: padding may hold NaN/inf (e.g. log-probs of pad tokens) and NaN * 0 is still NaN.
    kept = torch.where(mask.bool(), values, torch.zeros((), dtype=values.dtype, device=values.device))
    kept = kept * mask  # masks are 0/1; multiplying keeps fractional weights working as in verl
    return kept.sum() if dim is None else kept.sum(dim=dim)


def _masked_mean_metric(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return _masked_sum(values, mask) / (mask.sum() + _METRIC_EPS)


def loss_normalisers(mini_batch_mask: torch.Tensor) -> dict[str, int]:
    """Denominators for `aggregate_loss` when a mini-batch is split into micro-batches.

    With gradient accumulation each micro-batch must divide by the *mini-batch's* token / sample count,
    not its own, so that the accumulated gradient equals the one of the whole mini-batch at once.
    mini_batch_mask: (B_mini, T). Returns {"total_tokens": ..., "total_samples": ...} to pass as kwargs.
    """
    mask = mini_batch_mask.bool()
    return {"total_tokens": int(mask.sum().item()), "total_samples": int(mask.any(dim=-1).sum().item())}


def aggregate_loss(
    loss_mat: torch.Tensor,
    mask: torch.Tensor,
    mode: str = "token-mean",
    *,
    total_tokens: int | torch.Tensor | None = None,
    total_samples: int | torch.Tensor | None = None,
    max_response_length: int | None = None,
    dp_size: int = 1,
) -> torch.Tensor:
    """Reduce a (B, T) per-token loss to a scalar.

    total_tokens / total_samples: denominators over the whole mini-batch (see `loss_normalisers`);
    None uses this batch's own counts. Samples with no valid token never count as samples.
    max_response_length: the constant divisor of "seq-mean-token-sum-norm" (Dr.GRPO); None falls back to
    T of this batch, which changes with padding, so pass the configured generation budget.
    dp_size: data-parallel ranks whose gradients are averaged; the loss is scaled up so that the average
    equals the sum over the global batch (then total_* must be the global counts).
    """
    if loss_mat.shape != mask.shape:
        raise ValueError(f"loss_mat shape {tuple(loss_mat.shape)} != mask shape {tuple(mask.shape)}; both are (B, T)")
    if mode not in LOSS_AGG_MODES:
        raise ValueError(f"loss_agg_mode={mode!r} is not one of {LOSS_AGG_MODES}")
    if dp_size > 1:
        missing = "total_tokens" if mode == "token-mean" and total_tokens is None else (
            "total_samples" if mode.startswith("seq-") and total_samples is None else None)
        if missing:
            raise ValueError(f"dp_size={dp_size} with loss_agg_mode={mode!r} needs the global {missing}; "
                             "pass loss_normalisers() of the global mini-batch")

    def _safe(denominator):
        # An empty batch would give 0/0; a zero loss (and zero gradient) is what it should contribute.
        if isinstance(denominator, torch.Tensor):
            return denominator.clamp(min=1)
        return max(denominator, 1)

    if mode == "token-mean":
        if total_tokens is None:
            total_tokens = mask.sum()
        return _masked_sum(loss_mat, mask) / _safe(total_tokens) * dp_size
    if mode == "token-sum":
        return _masked_sum(loss_mat, mask) * dp_size

    tokens_per_sample = mask.sum(dim=-1)  # (B,)
    sample_sums = _masked_sum(loss_mat, mask, dim=-1)  # (B,)
    has_tokens = tokens_per_sample > 0  # (B,) fully padded rows are not samples
    if total_samples is None:
        total_samples = has_tokens.sum()
    if mode == "seq-mean-token-mean":
        # 1e-8 as verl: only matters for empty rows, which has_tokens removes anyway.
        per_sample = sample_sums / (tokens_per_sample + 1e-8)
    else:
        per_sample = sample_sums
    loss = _masked_sum(per_sample, has_tokens) / _safe(total_samples) * dp_size
    if mode == "seq-mean-token-sum-norm":
        loss = loss / (max_response_length if max_response_length is not None else mask.shape[-1])
    return loss


# ----------------------------------------------------------------------------------------------------
# Policy loss


def policy_loss(
    log_prob: torch.Tensor,
    old_log_prob: torch.Tensor,
    advantages: torch.Tensor,
    response_mask: torch.Tensor,
    *,
    clip_ratio_low: float = 0.2,
    clip_ratio_high: float = 0.2,
    clip_ratio_c: float | None = 3.0,
    loss_agg_mode: str = "token-mean",
    rollout_is_weights: torch.Tensor | None = None,
    **normalisers,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """PPO clipped surrogate with clip-higher and dual-clip; returns (scalar loss, metrics).

    log_prob: (B, T) under the policy being trained (carries gradient). old_log_prob: (B, T) under the
    policy that generated the samples. advantages: (B, T). response_mask: (B, T).
    The ratio is clipped to [1 - clip_ratio_low, 1 + clip_ratio_high]; DAPO's clip-higher sets
    clip_ratio_high > clip_ratio_low so unlikely tokens with positive advantage can grow.
    Dual-clip (Ye et al. 2020): with a negative advantage the unclipped term -A * ratio is unbounded in
    the ratio, so it is capped at -A * clip_ratio_c (> 1); None turns dual-clip off.
    rollout_is_weights: (B, T) or None, multiplies each token's clipped loss (`rollout_is_weights`, no gradient).
    normalisers: total_tokens / total_samples / max_response_length / dp_size for `aggregate_loss`.
    Metrics (detached 0-dim tensors, so no device sync per micro-batch):
    pg_clipfrac (share of tokens where clipping changed the loss), ppo_kl (approx KL old->new, k1),
    pg_clipfrac_lower (share where dual-clip applied).
    """
    if clip_ratio_c is not None and clip_ratio_c <= 1.0:
        raise ValueError(f"clip_ratio_c={clip_ratio_c} must be > 1 (dual-clip caps the ratio at c for negative "
                         "advantages); use e.g. 3.0, or None to disable dual-clip")
    if not (log_prob.shape == old_log_prob.shape == advantages.shape == response_mask.shape):
        raise ValueError("log_prob, old_log_prob, advantages and response_mask must all be (B, T); got "
                         f"{tuple(log_prob.shape)}, {tuple(old_log_prob.shape)}, {tuple(advantages.shape)}, "
                         f"{tuple(response_mask.shape)}")

    log_ratio = torch.clamp(log_prob - old_log_prob, min=-_LOG_RATIO_CLAMP, max=_LOG_RATIO_CLAMP)  # (B, T)
    ratio = torch.exp(log_ratio)
    ppo_kl = _masked_mean_metric(-log_ratio, response_mask)

    unclipped = -advantages * ratio  # (B, T)
    clipped = -advantages * torch.clamp(ratio, 1.0 - clip_ratio_low, 1.0 + clip_ratio_high)
    # Pessimistic bound: take the larger loss (the smaller objective) of the two.
    pessimistic = torch.maximum(unclipped, clipped)
    clipfrac = _masked_mean_metric((clipped > unclipped).float(), response_mask)

    if clip_ratio_c is not None:
        cap = -advantages * clip_ratio_c  # (B, T)
        negative = advantages < 0
        capped = torch.minimum(pessimistic, cap)
        clipfrac_lower = _masked_mean_metric(((pessimistic > cap) & negative).float(), response_mask)
        per_token = torch.where(negative, capped, pessimistic)
    else:
        clipfrac_lower = torch.zeros((), device=log_prob.device)
        per_token = pessimistic
    if rollout_is_weights is not None:
        per_token = per_token * rollout_is_weights.detach()

    loss = aggregate_loss(per_token, response_mask, loss_agg_mode, **normalisers)
    metrics = {
        "pg_clipfrac": clipfrac.detach(),
        "ppo_kl": ppo_kl.detach(),
        "pg_clipfrac_lower": clipfrac_lower.detach(),
    }
    return loss, metrics


def gspo_policy_loss(
    log_prob: torch.Tensor,
    old_log_prob: torch.Tensor,
    advantages: torch.Tensor,
    response_mask: torch.Tensor,
    *,
    clip_ratio_low: float = 0.2,
    clip_ratio_high: float = 0.2,
    loss_agg_mode: str = "token-mean",
    rollout_is_weights: torch.Tensor | None = None,
    **normalisers,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """GSPO (Zheng et al. 2025, arXiv:2507.18071): PPO's clipped surrogate on one ratio per sample; (loss, metrics).

    The sample's ratio is the geometric mean of its token ratios, so its size does not grow with the length:

        s_i = exp( (1/|y_i|) * sum_t (log_prob[i,t] - old_log_prob[i,t]) )          (sum over valid tokens)

    Per token it enters as s[i,t] = sg[s_i] * pi(y_t) / sg[pi(y_t)] (sg: stop-gradient), whose value is s_i and whose
    gradient is s_i * grad log pi(y_t); in log space log s[i,t] = sg[log s_i] + log_prob[i,t] - sg[log_prob[i,t]],
    clamped at 10 from above. Then, per token and without dual-clip,

        loss[i,t] = max(-A[i,t] * s[i,t], -A[i,t] * clip(s[i,t], 1 - clip_ratio_low, 1 + clip_ratio_high))

    times rollout_is_weights[i,t] when given, reduced by `aggregate_loss(loss_agg_mode)`. With "seq-mean-token-mean"
    and one advantage per sample this is the paper's sequence objective -mean_i min(s_i A_i, clip(s_i) A_i) in value
    and gradient; the paper's clip ranges are tiny (3e-4 low, 4e-4 high), since s_i moves far less than a token's
    ratio. This is verl's `loss_mode: gspo` (compute_policy_loss_gspo), which also reuses clip_ratio_low/high.
    Shapes and normalisers as `policy_loss`. Metrics: pg_clipfrac (share of tokens where clipping changed the loss),
    ppo_kl (approx KL old->new, k1, token mean, unclamped), pg_clipfrac_lower (always 0: no dual-clip).
    """
    if not (log_prob.shape == old_log_prob.shape == advantages.shape == response_mask.shape):
        raise ValueError("log_prob, old_log_prob, advantages and response_mask must all be (B, T); got "
                         f"{tuple(log_prob.shape)}, {tuple(old_log_prob.shape)}, {tuple(advantages.shape)}, "
                         f"{tuple(response_mask.shape)}")
    valid = response_mask.bool()
    zero = torch.zeros((), dtype=log_prob.dtype, device=log_prob.device)
    # where(): padding may hold garbage or NaN; it must reach neither the sequence ratio nor any gradient
    log_ratio = torch.where(valid, log_prob - old_log_prob, zero)  # (B, T)
    lengths = valid.sum(dim=-1).clamp(min=1)  # (B,)
    log_seq_ratio = log_ratio.sum(dim=-1) / lengths  # (B,) log of the geometric mean
    own = torch.where(valid, log_prob, zero)
    log_token_seq_ratio = own - own.detach() + log_seq_ratio.detach().unsqueeze(-1)  # (B, T): value log s_i
    ratio = torch.exp(torch.clamp(log_token_seq_ratio, max=_GSPO_LOG_RATIO_MAX))

    unclipped = -advantages * ratio  # (B, T)
    clipped = -advantages * torch.clamp(ratio, 1.0 - clip_ratio_low, 1.0 + clip_ratio_high)
    per_token = torch.maximum(unclipped, clipped)
    clipfrac = _masked_mean_metric((clipped > unclipped).float(), response_mask)
    if rollout_is_weights is not None:
        per_token = per_token * rollout_is_weights.detach()

    loss = aggregate_loss(per_token, response_mask, loss_agg_mode, **normalisers)
    metrics = {
        "pg_clipfrac": clipfrac.detach(),
        "ppo_kl": _masked_mean_metric(-log_ratio, response_mask).detach(),
        "pg_clipfrac_lower": torch.zeros((), device=log_prob.device),
    }
    return loss, metrics


# ----------------------------------------------------------------------------------------------------
# KL to the reference policy


def kl_penalty(log_prob: torch.Tensor, ref_log_prob: torch.Tensor, estimator: str = "low_var_kl") -> torch.Tensor:
    """Per-token estimate of KL(policy || reference) from the sampled tokens' log-probs, (B, T).

    With d = log_prob - ref_log_prob on tokens sampled from the policy:
      "kl"/"k1": d                     unbiased, high variance, can be negative
      "mse"/"k2": d^2 / 2              biased, low variance, its gradient is the true KL gradient
      "low_var_kl"/"k3": e^-d + d - 1  unbiased and >= 0; clamped to [-10, 10] like verl
      "abs": |d|
    """
    d = log_prob - ref_log_prob
    if estimator in ("kl", "k1"):
        return d
    if estimator in ("mse", "k2"):
        return 0.5 * d.square()
    if estimator in ("low_var_kl", "k3"):
        neg_d = torch.clamp(-d, min=-_LOG_RATIO_CLAMP, max=_LOG_RATIO_CLAMP)
        return torch.clamp(torch.exp(neg_d) - neg_d - 1.0, min=-_K3_CLAMP, max=_K3_CLAMP)
    if estimator == "abs":
        return d.abs()
    raise ValueError(f"kl estimator {estimator!r} is not one of {KL_ESTIMATORS}")


# ----------------------------------------------------------------------------------------------------
# Entropy and log-probs from logits


def _entropy_rows(logits: torch.Tensor) -> torch.Tensor:
    # (N, V) -> (N,). H = logsumexp(z) - sum softmax(z) * z, in float32 even for bf16 logits.
    z = logits.float()
    return torch.logsumexp(z, dim=-1) - (torch.softmax(z, dim=-1) * z).sum(dim=-1)


def token_entropy(logits: torch.Tensor, chunk_size: int = 4096) -> torch.Tensor:
    """Entropy of the next-token distribution at every position: (..., V) -> (...) in float32.

    Memory: softmax over V makes (N, V) float32 temporaries. Rows are processed `chunk_size` at a time,
    and when a gradient is needed each chunk is checkpointed, so backward recomputes the softmax instead
    of keeping (B*T, V) activations alive; peak extra memory is about chunk_size * V floats.
    """
    lead_shape = logits.shape[:-1]
    flat = logits.reshape(-1, logits.shape[-1])  # (B*T, V)
    needs_grad = flat.requires_grad and torch.is_grad_enabled()
    parts = []
    for start in range(0, flat.shape[0], chunk_size):
        rows = flat[start : start + chunk_size]
        parts.append(checkpoint(_entropy_rows, rows, use_reentrant=False) if needs_grad else _entropy_rows(rows))
    if not parts:
        return flat.new_zeros(lead_shape, dtype=torch.float32)
    return torch.cat(parts).reshape(lead_shape)


def _log_prob_rows(logits: torch.Tensor, token_ids: torch.Tensor) -> torch.Tensor:
    # (N, V), (N,) -> (N,): z[y] - logsumexp(z), in float32 even for bf16 logits.
    z = logits.float()
    return torch.gather(z, -1, token_ids.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(z, dim=-1)


def token_log_probs(logits: torch.Tensor, token_ids: torch.Tensor, chunk_size: int = 4096) -> torch.Tensor:
    """log p(token_ids) under softmax(logits): (..., V), (...) -> (...) in float32.

    No full (B*T, V) log-softmax is materialised; with bf16 logits and a gradient, chunks are checkpointed
    so their float32 copies are not kept for backward. The caller aligns tokens: logits at position t
    score the token at t + 1.
    """
    lead_shape = token_ids.shape
    flat = logits.reshape(-1, logits.shape[-1])  # (B*T, V)
    ids = token_ids.reshape(-1)
    needs_grad = flat.requires_grad and torch.is_grad_enabled() and flat.dtype != torch.float32
    parts = []
    for start in range(0, flat.shape[0], chunk_size):
        rows, row_ids = flat[start : start + chunk_size], ids[start : start + chunk_size]
        parts.append(checkpoint(_log_prob_rows, rows, row_ids, use_reentrant=False) if needs_grad
                     else _log_prob_rows(rows, row_ids))
    if not parts:
        return flat.new_zeros(lead_shape, dtype=torch.float32)
    return torch.cat(parts).reshape(lead_shape)


# ----------------------------------------------------------------------------------------------------
# The whole actor loss


@dataclass
class ActorLossOutput:
    """`loss` to backpropagate, its parts, and metrics (all detached 0-dim tensors)."""

    loss: torch.Tensor
    metrics: dict[str, torch.Tensor] = field(default_factory=dict)


def actor_loss(
    log_prob: torch.Tensor,
    old_log_prob: torch.Tensor,
    advantages: torch.Tensor,
    response_mask: torch.Tensor,
    *,
    ref_log_prob: torch.Tensor | None = None,
    entropy: torch.Tensor | None = None,
    clip_ratio_low: float = 0.2,
    clip_ratio_high: float = 0.2,
    clip_ratio_c: float | None = 3.0,
    loss_agg_mode: str = "token-mean",
    loss_mode: str = "vanilla",
    rollout_is_weights: torch.Tensor | None = None,
    entropy_coef: float = 0.0,
    use_kl_loss: bool = False,
    kl_coef: float = 0.001,
    kl_estimator: str = "low_var_kl",
    total_tokens: int | torch.Tensor | None = None,
    total_samples: int | torch.Tensor | None = None,
    max_response_length: int | None = None,
    dp_size: int = 1,
) -> ActorLossOutput:
    """Policy loss - entropy_coef * entropy + kl_coef * KL, each aggregated with the same mode.

    All tensors (B, T). `entropy` (from `token_entropy`) is needed only for the bonus or its metric;
    `ref_log_prob` only when use_kl_loss. loss_mode: "vanilla" (`policy_loss`) or "gspo" (`gspo_policy_loss`, which
    has no dual-clip: clip_ratio_c is not read). rollout_is_weights (B, T) weight the policy term only, as in verl.
    This is the composition verl's actor uses (ppo_loss in verl.workers.utils.losses), so the gradient matches
    verl's for the same options.
    """
    norm = dict(total_tokens=total_tokens, total_samples=total_samples,
                max_response_length=max_response_length, dp_size=dp_size)
    if loss_mode == "vanilla":
        pg, metrics = policy_loss(log_prob, old_log_prob, advantages, response_mask, clip_ratio_low=clip_ratio_low,
                                  clip_ratio_high=clip_ratio_high, clip_ratio_c=clip_ratio_c,
                                  loss_agg_mode=loss_agg_mode, rollout_is_weights=rollout_is_weights, **norm)
    elif loss_mode == "gspo":
        pg, metrics = gspo_policy_loss(log_prob, old_log_prob, advantages, response_mask,
                                       clip_ratio_low=clip_ratio_low, clip_ratio_high=clip_ratio_high,
                                       loss_agg_mode=loss_agg_mode, rollout_is_weights=rollout_is_weights, **norm)
    else:
        raise ValueError(f"loss_mode={loss_mode!r} is not one of {POLICY_LOSS_MODES}")
    loss = pg
    metrics["pg_loss"] = pg.detach()
    if entropy is not None:
        entropy_term = aggregate_loss(entropy, response_mask, loss_agg_mode, **norm)
        loss = loss - entropy_coef * entropy_term
        metrics["entropy"] = entropy_term.detach()
    elif entropy_coef != 0.0:
        raise ValueError(f"entropy_coef={entropy_coef} needs the per-token entropy; pass entropy=token_entropy(logits)")
    if use_kl_loss:
        if ref_log_prob is None:
            raise ValueError("use_kl_loss=True needs ref_log_prob, the reference model's log-probs (B, T)")
        kl_term = aggregate_loss(kl_penalty(log_prob, ref_log_prob, kl_estimator), response_mask, loss_agg_mode, **norm)
        loss = loss + kl_coef * kl_term
        metrics["kl_loss"] = kl_term.detach()
    metrics["loss"] = loss.detach()
    return ActorLossOutput(loss=loss, metrics=metrics)


# ----------------------------------------------------------------------------------------------------
# What a step reports about its losses and its samples' log-probs

# actor_loss (and the critic's value loss) metrics that are already normalised by the whole mini-batch (summed over
# its micro-batches)
SUMMED_LOSS_METRICS = ("loss", "pg_loss", "entropy", "kl_loss", "value_loss")


def mini_batch_metrics(micro_metrics: list[tuple[dict, int]], total_tokens: int) -> dict[str, float]:
    """One mini-batch's metrics from its micro-batches' `actor_loss` metrics and response-token counts.

    Loss terms (SUMMED_LOSS_METRICS) are already divided by the whole mini-batch's token/sample count, so the
    mini-batch's value is their sum; the ratio metrics (clip fractions, ppo_kl) are token means over one micro-batch,
    so each is weighted by its micro-batch's share of the mini-batch's tokens. Either way the result equals the
    metric computed on the whole mini-batch at once."""
    out: dict[str, float] = {}
    for metrics, tokens in micro_metrics:
        share = tokens / max(total_tokens, 1)
        for k, v in metrics.items():
            out[k] = out.get(k, 0.0) + (1.0 if k in SUMMED_LOSS_METRICS else share) * float(v)
    return out


def rollout_is_weights(old_log_prob: torch.Tensor, rollout_log_prob: torch.Tensor, response_mask: torch.Tensor, *,
                       mode: str = "token", cap: float = 2.0, lower: float | None = None
                       ) -> tuple[torch.Tensor, dict[str, float]]:
    """Importance weights (B, T) that correct the policy loss for the gap between the rollout engine that sampled the
    tokens and the policy that computed old_log_prob; returns (weights, metrics).

    With d[i,t] = old_log_prob[i,t] - rollout_log_prob[i,t] (log pi_old / pi_rollout of the sampled token), exponents
    clamped to [-20, 20] as verl does:
      token:    w[i,t] = min(exp(d[i,t]), cap)                              truncated IS, one weight per token
      sequence: w[i,t] = min(exp(sum_t' d[i,t']), cap) for every token of sample i: one weight per sample, from the
                ratio of the whole response's probabilities
      mask:     w[i,t] = exp(d[i,t]) if lower <= exp(d[i,t]) <= cap, else 0  (IcePop): a token whose ratio leaves the
                bounds is dropped from the policy loss instead of being truncated
    Zero on padding, no gradient. The weights multiply each token's policy loss (`policy_loss`, `gspo_policy_loss`);
    the token still counts in the loss's denominators. This is verl's algorithm.rollout_correction with
    rollout_is=token, sequence, or token with rollout_is_threshold="<lower>_<cap>" (compute_rollout_correction_weights).

    Metrics (floats): rollout_is_weight_mean, the mean weight over valid tokens; for token and sequence
    rollout_is_capped_frac, the share of valid tokens (token) or of samples with a valid token (sequence) whose ratio
    exceeds cap; for mask rollout_is_masked_frac, the share of valid tokens whose ratio is outside [lower, cap].
    """
    if mode not in ROLLOUT_IS_MODES:
        raise ValueError(f"rollout_is={mode!r} is not one of {ROLLOUT_IS_MODES}")
    if mode == "mask" and (lower is None or not 0 < lower <= cap):
        raise ValueError(f"rollout_is='mask' needs 0 < lower <= cap; got lower={lower}, cap={cap}")
    valid = response_mask.bool()  # (B, T)
    zero = torch.zeros((), dtype=old_log_prob.dtype, device=old_log_prob.device)
    with torch.no_grad():
        log_ratio = torch.where(valid, old_log_prob.detach() - rollout_log_prob.detach(), zero)  # (B, T)
        tokens = valid.sum().clamp(min=1)
        metrics: dict[str, float] = {}
        if mode == "sequence":
            log_seq = log_ratio.sum(dim=-1)  # (B,) log of the whole response's ratio
            seq_weight = torch.exp(log_seq.clamp(-_LOG_RATIO_CLAMP, _LOG_RATIO_CLAMP)).clamp(max=cap)
            weights = torch.where(valid, seq_weight.unsqueeze(-1), zero)
            samples = valid.any(dim=-1)  # (B,) samples with a token
            metrics["rollout_is_capped_frac"] = float(((log_seq > math.log(cap)) & samples).sum()
                                                      / samples.sum().clamp(min=1))
        else:
            raw = torch.exp(log_ratio.clamp(-_LOG_RATIO_CLAMP, _LOG_RATIO_CLAMP))  # (B, T)
            if mode == "token":
                weights = torch.where(valid, raw.clamp(max=cap), zero)
                metrics["rollout_is_capped_frac"] = float(((raw > cap) & valid).sum() / tokens)
            else:
                outside = (raw < lower) | (raw > cap)
                weights = torch.where(valid & ~outside, raw, zero)
                metrics["rollout_is_masked_frac"] = float((outside & valid).sum() / tokens)
        metrics["rollout_is_weight_mean"] = float(weights.sum() / tokens)
    return weights, metrics


def rollout_log_prob_check(rollout_log_probs: Sequence[Sequence[float] | None], old: list[torch.Tensor],
                           use_rollout_log_probs: bool, cap: float, mode: str = "token",
                           lower: float | None = None) -> tuple[dict, list | None]:
    """How far the engine's log-probs (one list per sample, `Sample.rollout_log_probs`) are from the policy's (old)
    ones (R_i,) over a step's sampled tokens, and, with `use_rollout_log_probs` (rollout.use_rollout_log_probs), the
    importance weights of `rollout_is_weights` per token of each sample (R_i,) with their metrics (mode:
    rollout.rollout_is, cap: rollout.rollout_is_cap, lower: rollout.rollout_is_threshold_lower).

    With an exact weight sync the gap is float noise (< 1e-3 on CPU float32); a large one means the engine
    sampled from other weights or another distribution. Engines without log-probs (HF) report nothing."""
    if not rollout_log_probs or any(lp is None for lp in rollout_log_probs):
        return {}, None
    engine = [torch.tensor(lp, device=old[i].device, dtype=old[i].dtype) for i, lp in enumerate(rollout_log_probs)]
    gaps = [o - e for o, e in zip(old, engine)]  # (R_i,) each: old - rollout
    flat = torch.cat(gaps)
    if flat.numel() == 0:
        return {}, None
    out = {"rollout_logprob_diff_max": float(flat.abs().max()), "rollout_logprob_diff_mean": float(flat.abs().mean())}
    if not use_rollout_log_probs:
        return out, None
    lengths = [len(g) for g in gaps]
    mask = torch.nn.utils.rnn.pad_sequence([torch.ones_like(g) for g in gaps], batch_first=True)  # (B, T)
    weights, metrics = rollout_is_weights(torch.nn.utils.rnn.pad_sequence(list(old), batch_first=True),
                                          torch.nn.utils.rnn.pad_sequence(engine, batch_first=True), mask,
                                          mode=mode, cap=cap, lower=lower)
    out.update(metrics)
    return out, [weights[i, :n] for i, n in enumerate(lengths)]
