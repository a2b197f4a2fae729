"""Advantage estimators beside GRPO: PPO with a critic (GAE), RLOO and REINFORCE++, and the critic's value loss.

`algorithm.adv_estimator` picks one; each turns the step's outcome rewards (one score per sample, given to the
sample's last response token, as verl's reward managers do) into per-token advantages (B, T):

    grpo                 (r - mean(group)) / std(group)       group baseline, no critic (codefu_helpers.grpo)
    rloo                 n/(n-1) * (r - mean(group))           leave-one-out baseline: r minus the mean of the others
    reinforce_plus_plus  discounted return-to-go, whitened     over the whole batch, no group and no critic
    gae                  GAE(gamma, lam) on a critic's values   whitened over the whole batch; the critic learns the
                                                               returns with a clipped value loss

The maths matches `verl.trainer.ppo.core_algos` (verl 0.9.1) for the same inputs (tests/test_estimators.py runs
both). Deliberate differences, in degenerate cases only: a group with fewer than two valid samples has no baseline,
so RLOO (and GRPO, through `outcome_advantages`) gives it advantage 0 (verl passes a lone sample's raw reward
through), and samples excluded from training
(judge failures: `keep` = 0) neither count in a group nor in the batch statistics of the whitening.

Shapes: B samples, T response tokens (right-padded); masks (B, T) with 1 on response tokens that count.

    token_rewards = outcome_token_rewards(scores, mask)                       # (B, T)
    values = critic(batch)                                                    # (B, T), before any update
    advantages, returns = gae_advantages(token_rewards, values, mask, gamma=1.0, lam=1.0)
    loss, clipfrac = value_loss(new_values, returns, values, mask, cliprange_value=0.5)
"""

from __future__ import annotations

from typing import Hashable, Sequence

import torch

from .grpo import _group_index, aggregate_loss, group_advantages

ADV_ESTIMATORS = ("grpo", "gae", "rloo", "reinforce_plus_plus")
CRITIC_ESTIMATORS = ("gae",)  # estimators that need a value model

_WHITEN_EPS = 1e-8  # verl's masked_whiten: rsqrt(var + 1e-8)
_MEAN_EPS = 1e-8    # verl's masked_mean: sum / (count + 1e-8)
_NO_SPREAD = 1e-12  # explained_variance: a variance below this (relative to the returns' scale) is float32 rounding


def _masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    kept = torch.where(mask.bool(), values, torch.zeros((), dtype=values.dtype, device=values.device))
    return (kept * mask).sum() / (mask.sum() + _MEAN_EPS)


def masked_whiten(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(values - mean) / sqrt(var + 1e-8) over the masked elements, with the unbiased (n-1) variance.

    Raises when fewer than two elements count: their variance is undefined (verl raises too)."""
    count = int(mask.bool().sum())
    if count < 2:
        raise ValueError(f"whitening needs at least two response tokens that count, got {count}: the batch is "
                         "(nearly) empty after excluding judge failures and empty responses")
    mean = _masked_mean(values, mask)
    variance = _masked_mean((values - mean) ** 2, mask) * (count / (count - 1))
    return (values - mean) * torch.rsqrt(variance + _WHITEN_EPS)


def outcome_token_rewards(scores: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """(B,) outcome scores -> (B, T) token rewards: each score on its sample's last response token, 0 elsewhere
    (a sample without response tokens gets none)."""
    if scores.dim() != 1 or scores.shape[0] != response_mask.shape[0]:
        raise ValueError(f"scores must be (B,) with B = {response_mask.shape[0]} samples; got {tuple(scores.shape)}")
    lengths = response_mask.bool().sum(-1)  # (B,)
    out = torch.zeros(response_mask.shape, dtype=scores.dtype, device=scores.device)
    rows = torch.nonzero(lengths > 0).flatten()
    out[rows, lengths[rows] - 1] = scores[rows]
    return out


def gae_advantages(token_rewards: torch.Tensor, values: torch.Tensor, response_mask: torch.Tensor, *,
                   gamma: float = 1.0, lam: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation (Schulman et al. 2016) backwards over the response tokens.

    delta_t = r_t + gamma * V_{t+1} - V_t;  A_t = delta_t + gamma * lam * A_{t+1};  returns = A + V (the critic's
    target). Positions outside the mask are skipped: the next value and the running advantage carry over them.
    Returns (advantages whitened over the masked tokens, returns), both (B, T), without gradient."""
    with torch.no_grad():
        mask = response_mask.to(values.dtype)
        next_value = torch.zeros_like(values[:, 0])  # (B,)
        running = torch.zeros_like(values[:, 0])
        out = []
        for t in reversed(range(values.shape[1])):
            delta = token_rewards[:, t] + gamma * next_value - values[:, t]
            step = delta + gamma * lam * running
            next_value = values[:, t] * mask[:, t] + (1 - mask[:, t]) * next_value
            running = step * mask[:, t] + (1 - mask[:, t]) * running
            out.append(running)
        advantages = torch.stack(out[::-1], dim=1)  # (B, T)
        returns = advantages + values
        return masked_whiten(advantages, response_mask), returns


def reinforce_plus_plus_advantages(token_rewards: torch.Tensor, response_mask: torch.Tensor, *,
                                   gamma: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """REINFORCE++ (Hu 2025): the discounted return-to-go of each token, whitened over the whole batch (no critic,
    no group). Masked-out positions carry the running return through. Returns (advantages, returns), (B, T)."""
    with torch.no_grad():
        mask = response_mask.to(token_rewards.dtype)
        returns = torch.zeros_like(token_rewards)
        running = torch.zeros_like(token_rewards[:, 0])
        for t in reversed(range(token_rewards.shape[1])):
            step = token_rewards[:, t] + gamma * running
            returns[:, t] = step * mask[:, t]
            running = step * mask[:, t] + running * (1 - mask[:, t])
        advantages = masked_whiten(returns, response_mask) * mask
        return advantages, returns


def rloo_advantages(scores: torch.Tensor, group_ids: Sequence[Hashable]) -> torch.Tensor:
    """REINFORCE leave-one-out (Ahmadian et al. 2024): r_i minus the mean of the other samples of its group,
    n/(n-1) * (r_i - mean(group)). A group of one has no other sample: advantage 0. (B,) -> (B,)."""
    if scores.dim() != 1:
        raise ValueError(f"scores must be one outcome score per sample, shape (B,); got {tuple(scores.shape)}")
    index = _group_index(group_ids, scores.shape[0]).to(scores.device)
    with torch.no_grad():
        r = scores.detach().to(torch.float64)
        groups = int(index.max()) + 1 if r.numel() else 0
        count = torch.zeros(groups, dtype=torch.float64, device=r.device).index_add_(0, index, torch.ones_like(r))
        mean = torch.zeros_like(count).index_add_(0, index, r) / count
        n = count[index]
        advantages = torch.where(n > 1, (r - mean[index]) * n / (n - 1).clamp(min=1), torch.zeros_like(r))
    return advantages.to(scores.dtype)


def value_loss(values: torch.Tensor, returns: torch.Tensor, old_values: torch.Tensor, response_mask: torch.Tensor, *,
               cliprange_value: float = 0.5, loss_agg_mode: str = "token-mean", total_tokens=None,
               total_samples=None, max_response_length: int | None = None,
               dp_size: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """PPO's clipped value loss: 0.5 * agg(max((V - R)^2, (clip(V, V_old +- c) - R)^2)), and the fraction of tokens
    where the clipped term is the larger one. Normalisers as `grpo.aggregate_loss` (whole mini-batch counts)."""
    clipped = torch.maximum(torch.minimum(values, old_values + cliprange_value), old_values - cliprange_value)
    unclipped_loss = (values - returns) ** 2
    clipped_loss = (clipped - returns) ** 2
    loss = 0.5 * aggregate_loss(torch.maximum(unclipped_loss, clipped_loss), response_mask, loss_agg_mode,
                                total_tokens=total_tokens, total_samples=total_samples,
                                max_response_length=max_response_length, dp_size=dp_size)
    clipfrac = _masked_mean((clipped_loss > unclipped_loss).to(values.dtype), response_mask)
    return loss, clipfrac.detach()


def explained_variance(returns: torch.Tensor, values: torch.Tensor, response_mask: torch.Tensor) -> float:
    """1 - Var(returns - values) / Var(returns) over the masked tokens (1: the critic predicts the returns; 0: no
    better than their mean; negative: worse). NaN when the returns do not vary beyond float32 rounding (say, every
    sample scored the same and gamma = lam = 1: the returns are that score up to rounding noise, and a ratio over
    that noise would be a meaningless huge number)."""
    mask = response_mask.bool()
    r, v = returns[mask].double(), values[mask].double()
    if r.numel() < 2:
        return float("nan")
    var = r.var(unbiased=False)
    if var <= _NO_SPREAD * max(1.0, float((r * r).mean())):
        return float("nan")
    return float(1.0 - (r - v).var(unbiased=False) / var)


def sample_advantages(estimator: str, scores: torch.Tensor, group_ids: Sequence[Hashable], keep: torch.Tensor, *,
                      norm_by_std: bool = True, epsilon: float = 1e-6) -> torch.Tensor:
    """One advantage per sample (B,) for the group estimators (grpo, rloo): excluded samples (keep = 0) get 0 and
    count in no group; a group left with fewer than two samples that count has no baseline and gets 0."""
    if estimator not in ("grpo", "rloo"):
        raise ValueError(f"adv_estimator={estimator!r} gives one advantage per token, not per sample")
    kept = keep.to(torch.bool)
    # excluded samples become groups of their own (then lone: 0); labels mapped to ints here, since a mix of
    # arbitrary labels and tuples would not survive the conversion to an array inside the group functions
    first_seen: dict[Hashable, int] = {}
    labels = [first_seen.setdefault(("group", g) if k else ("excluded", i), len(first_seen))
              for i, (g, k) in enumerate(zip(group_ids, kept.tolist()))]
    if estimator == "grpo":
        per_sample = group_advantages(scores, labels, norm_by_std=norm_by_std, epsilon=epsilon, lone_sample="zero")
    else:
        per_sample = rloo_advantages(scores, labels)
    return torch.where(kept, per_sample, torch.zeros_like(per_sample))


def outcome_advantages(estimator: str, scores: torch.Tensor, group_ids: Sequence[Hashable], keep: torch.Tensor,
                       response_mask: torch.Tensor, *, values: torch.Tensor | None = None, gamma: float = 1.0,
                       lam: float = 1.0, norm_by_std: bool = True,
                       epsilon: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The step's token advantages (B, T) under `estimator`, and the critic's returns (B, T) for `gae` (else None).

    scores (B,): outcome rewards; group_ids (B,): the prompt of each sample; keep (B,): 1 for samples that train,
    0 for excluded ones (judge failures, empty responses), which get advantage 0 and count in no statistic;
    response_mask (B, T); values (B, T): the critic's values before the update (gae only). A group (grpo, rloo) left
    with fewer than two samples that count has no baseline: advantage 0 (the trainer's rule; verl passes a lone
    sample's reward through)."""
    if estimator not in ADV_ESTIMATORS:
        raise ValueError(f"adv_estimator={estimator!r} is not one of {ADV_ESTIMATORS}")
    kept = keep.to(torch.bool)
    mask = response_mask.to(torch.float32) * kept[:, None].to(torch.float32)  # (B, T) excluded rows zeroed
    if estimator in ("grpo", "rloo"):
        per_sample = sample_advantages(estimator, scores, group_ids, keep, norm_by_std=norm_by_std, epsilon=epsilon)
        return per_sample[:, None].to(torch.float32) * mask, None
    token_rewards = outcome_token_rewards(scores.to(torch.float32), mask)
    if estimator == "reinforce_plus_plus":
        advantages, _ = reinforce_plus_plus_advantages(token_rewards, mask, gamma=gamma)
        return advantages * mask, None
    if values is None:
        raise ValueError("adv_estimator='gae' needs the critic's values (B, T) of the step's samples")
    advantages, returns = gae_advantages(token_rewards, values.to(torch.float32), mask, gamma=gamma, lam=lam)
    return advantages * mask, returns


# ----------------------------------------------------------------------------------------------------
# Dynamic sampling (algorithm.dynamic_sampling): which groups carry a gradient under a group baseline


def informative_groups(group_ids: Sequence[Hashable], scores: Sequence[float], keep: Sequence[float]) -> list[Hashable]:
    """The groups, in order of first appearance, that give a gradient under a group baseline (grpo, rloo): at least
    two samples that count (keep > 0) whose rewards are not all equal. The others get advantage 0 for every sample
    and are what dynamic sampling drops: all rewards equal (verl's filter_groups: the metric's std over the group is
    0), or fewer than two samples that count (no baseline: judge failures and filtered samples never count)."""
    kept_scores: dict[Hashable, list[float]] = {}
    for group, score, k in zip(group_ids, scores, keep):
        kept_scores.setdefault(group, [])
        if k:
            kept_scores[group].append(float(score))
    return [g for g, values in kept_scores.items() if len(values) >= 2 and max(values) != min(values)]


def solved_groups(group_ids: Sequence[Hashable], passed: Sequence[bool], valid: Sequence[bool | float]) -> tuple[int, int]:
    """(groups all of whose valid samples passed, groups none of whose valid samples passed); valid: the samples
    whose judging succeeded. A group without a valid sample counts in neither."""
    outcomes: dict[Hashable, list[bool]] = {}
    for group, ok, v in zip(group_ids, passed, valid):
        if v:
            outcomes.setdefault(group, []).append(bool(ok))
    return sum(all(o) for o in outcomes.values()), sum(not any(o) for o in outcomes.values())
