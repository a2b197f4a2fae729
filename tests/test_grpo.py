"""Hand-computed cases for codefu_helpers.grpo: what each piece must do, independent of verl."""

import math

import pytest
import torch

from codefu_helpers import grpo

# ----------------------------------------------------------------------------------------------------
# Advantages


@pytest.mark.parametrize("norm_by_std", [True, False])
@pytest.mark.parametrize("value", [0.0, 0.9, 1.0, 0.3333])
def test_group_of_identical_rewards_has_exactly_zero_advantage(norm_by_std, value):
    rewards = torch.tensor([value] * 8 + [0.0, 1.0])
    adv = grpo.group_advantages(rewards, ["p"] * 8 + ["q", "q"], norm_by_std=norm_by_std)
    assert torch.equal(adv[:8], torch.zeros(8))
    assert adv[8] < 0 < adv[9]


def test_tied_group_with_zero_epsilon_is_zero_not_nan():
    adv = grpo.group_advantages(torch.tensor([0.5, 0.5, 0.5]), [1, 1, 1], epsilon=0.0)
    assert torch.equal(adv, torch.zeros(3))


def test_grpo_advantage_hand_computed():
    # mean 0.25; unbiased std = sqrt((0.75^2 + 3 * 0.25^2) / 3) = 0.5
    adv = grpo.group_advantages(torch.tensor([1.0, 0.0, 0.0, 0.0]), [7, 7, 7, 7], epsilon=0.0)
    assert torch.allclose(adv, torch.tensor([1.5, -0.5, -0.5, -0.5]))
    adv_eps = grpo.group_advantages(torch.tensor([1.0, 0.0, 0.0, 0.0]), [7, 7, 7, 7], epsilon=0.5)
    assert torch.allclose(adv_eps, torch.tensor([0.75, -0.25, -0.25, -0.25]))


def test_dr_grpo_advantage_is_not_scaled_by_std():
    adv = grpo.group_advantages(torch.tensor([1.0, 0.0, 0.0, 0.0, 3.0, 5.0]), list("aaaabb"), norm_by_std=False)
    assert torch.allclose(adv, torch.tensor([0.75, -0.25, -0.25, -0.25, -1.0, 1.0]))


def test_groups_are_found_by_id_not_by_position():
    rewards = torch.tensor([1.0, 10.0, 0.0, 20.0, 0.5, 30.0])
    interleaved = grpo.group_advantages(rewards, ["x", "y", "x", "y", "x", "y"])
    x = grpo.group_advantages(rewards[[0, 2, 4]], ["x"] * 3)
    y = grpo.group_advantages(rewards[[1, 3, 5]], ["y"] * 3)
    assert torch.allclose(interleaved[[0, 2, 4]], x) and torch.allclose(interleaved[[1, 3, 5]], y)
    as_tensor = grpo.group_advantages(rewards, torch.tensor([4, 9, 4, 9, 4, 9]))
    assert torch.equal(as_tensor, interleaved)


def test_singleton_group_passes_reward_through_like_verl():
    adv = grpo.group_advantages(torch.tensor([0.7, 1.0, 0.0]), ["alone", "pair", "pair"], epsilon=0.0)
    assert adv[0].item() == pytest.approx(0.7)


def test_group_advantages_rejects_bad_shapes():
    with pytest.raises(ValueError, match=r"shape \(B,\).*\(2, 3\)"):
        grpo.group_advantages(torch.zeros(2, 3), [0, 1])
    with pytest.raises(ValueError, match="group_ids has 2 entries but there are 3 rewards"):
        grpo.group_advantages(torch.zeros(3), [0, 1])


def test_token_advantages_zero_on_padding():
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]], dtype=torch.bool)
    out = grpo.token_advantages(torch.tensor([2.0, -1.0]), mask)
    assert torch.equal(out, torch.tensor([[2.0, 2.0, 0.0], [-1.0, 0.0, 0.0]]))


# ----------------------------------------------------------------------------------------------------
# Policy loss


def _one_token(ratio: float, advantage: float, **kwargs):
    old = torch.zeros(1, 1)
    new = torch.full((1, 1), math.log(ratio), requires_grad=True)
    loss, metrics = grpo.policy_loss(new, old, torch.full((1, 1), advantage), torch.ones(1, 1), **kwargs)
    loss.backward()
    return loss.item(), metrics, new.grad.item()


def test_positive_advantage_is_clipped_above_1_plus_eps():
    loss, metrics, grad = _one_token(1.5, 2.0, clip_ratio_high=0.2)
    assert loss == pytest.approx(-2.0 * 1.2)
    assert metrics["pg_clipfrac"].item() == 1.0
    assert grad == 0.0  # clipped: no push further


def test_positive_advantage_below_1_minus_eps_is_not_clipped():
    # the pessimistic bound keeps the unclipped (smaller) objective, so the gradient still flows
    loss, metrics, grad = _one_token(0.5, 2.0, clip_ratio_low=0.2)
    assert loss == pytest.approx(-2.0 * 0.5)
    assert metrics["pg_clipfrac"].item() == 0.0
    assert grad == pytest.approx(-2.0 * 0.5)  # d(-A r)/d log r = -A r


def test_negative_advantage_is_clipped_below_1_minus_eps():
    loss, metrics, grad = _one_token(0.5, -1.0, clip_ratio_low=0.2)
    assert loss == pytest.approx(1.0 * 0.8)
    assert metrics["pg_clipfrac"].item() == 1.0 and grad == 0.0


def test_clip_higher_lets_positive_tokens_grow_further():
    loss_sym, metrics_sym, _ = _one_token(1.25, 1.0, clip_ratio_low=0.2, clip_ratio_high=0.2)
    loss_dapo, metrics_dapo, _ = _one_token(1.25, 1.0, clip_ratio_low=0.2, clip_ratio_high=0.28)
    assert loss_sym == pytest.approx(-1.2) and metrics_sym["pg_clipfrac"].item() == 1.0
    assert loss_dapo == pytest.approx(-1.25) and metrics_dapo["pg_clipfrac"].item() == 0.0


def test_dual_clip_caps_loss_of_negative_advantage_at_c():
    loss, metrics, grad = _one_token(5.0, -1.0, clip_ratio_c=3.0)
    assert loss == pytest.approx(3.0)
    assert metrics["pg_clipfrac_lower"].item() == 1.0 and grad == 0.0
    loss_off, metrics_off, _ = _one_token(5.0, -1.0, clip_ratio_c=None)
    assert loss_off == pytest.approx(5.0) and metrics_off["pg_clipfrac_lower"].item() == 0.0


def test_dual_clip_does_not_touch_positive_advantages():
    loss, metrics, _ = _one_token(5.0, 1.0, clip_ratio_c=3.0)
    assert loss == pytest.approx(-1.2) and metrics["pg_clipfrac_lower"].item() == 0.0


def test_on_policy_loss_is_minus_mean_advantage_and_ppo_kl_zero():
    old = torch.randn(3, 4)
    adv = torch.tensor([[1.0] * 4, [-2.0] * 4, [0.5] * 4])
    loss, metrics = grpo.policy_loss(old.clone(), old, adv, torch.ones(3, 4))
    assert loss.item() == pytest.approx(-adv.mean().item())
    assert metrics["ppo_kl"].item() == 0.0 and metrics["pg_clipfrac"].item() == 0.0


def test_padding_changes_neither_loss_nor_gradient_of_valid_tokens():
    gen = torch.Generator().manual_seed(0)
    old = torch.randn(4, 6, generator=gen)
    new = old + 0.3 * torch.randn(4, 6, generator=gen)
    adv = torch.randn(4, 6, generator=gen)
    mask = torch.ones(4, 6, dtype=torch.bool)
    mask[1, 3:] = False
    mask[2, 1:] = False
    results = []
    for garbage in (0.0, 1e4):
        noisy_new = torch.where(mask, new, garbage).requires_grad_(True)
        noisy_old = torch.where(mask, old, -garbage)
        for mode in grpo.LOSS_AGG_MODES:
            loss, _ = grpo.policy_loss(noisy_new, noisy_old, torch.where(mask, adv, garbage), mask, loss_agg_mode=mode)
            (grad,) = torch.autograd.grad(loss, noisy_new)
            assert torch.all(grad[~mask] == 0)
            results.append((loss.detach(), grad[mask]))
    n = len(grpo.LOSS_AGG_MODES)
    for (loss_a, grad_a), (loss_b, grad_b) in zip(results[:n], results[n:]):
        assert torch.equal(loss_a, loss_b) and torch.equal(grad_a, grad_b)


def test_policy_loss_rejects_bad_options():
    x = torch.zeros(2, 3)
    with pytest.raises(ValueError, match=r"clip_ratio_c=0.5 must be > 1"):
        grpo.policy_loss(x, x, x, x, clip_ratio_c=0.5)
    with pytest.raises(ValueError, match=r"\(2, 3\), \(2, 3\), \(2, 2\)"):
        grpo.policy_loss(x, x, torch.zeros(2, 2), x)
    with pytest.raises(ValueError, match=r"loss_agg_mode='token_mean' is not one of"):
        grpo.policy_loss(x, x, x, torch.ones(2, 3), loss_agg_mode="token_mean")


# ----------------------------------------------------------------------------------------------------
# Aggregation

LOSS = torch.tensor([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0], [9.0, 9.0, 9.0]])
MASK = torch.tensor([[1, 1, 1], [1, 0, 0], [0, 0, 0]], dtype=torch.bool)  # third row: no response tokens


@pytest.mark.parametrize("mode, expected", [
    ("token-mean", 10 / 4),           # all valid tokens weigh the same
    ("seq-mean-token-mean", (2 + 4) / 2),  # per-sample means, the empty sample does not count
    ("seq-mean-token-sum", (6 + 4) / 2),
    ("seq-mean-token-sum-norm", (6 + 4) / 2 / 3),  # divided by T
    ("token-sum", 10.0),
])
def test_aggregation_modes_hand_computed(mode, expected):
    assert grpo.aggregate_loss(LOSS, MASK, mode).item() == pytest.approx(expected)


def test_token_sum_norm_uses_the_constant_not_the_padding():
    padded = torch.nn.functional.pad(LOSS, (0, 5))
    padded_mask = torch.nn.functional.pad(MASK, (0, 5))
    a = grpo.aggregate_loss(LOSS, MASK, "seq-mean-token-sum-norm", max_response_length=100)
    b = grpo.aggregate_loss(padded, padded_mask, "seq-mean-token-sum-norm", max_response_length=100)
    assert a.item() == b.item() == pytest.approx(5 / 100)
    assert grpo.aggregate_loss(padded, padded_mask, "seq-mean-token-sum-norm").item() == pytest.approx(5 / 8)


def test_nan_on_padding_does_not_reach_any_mode():
    loss = LOSS.clone()
    loss[~MASK] = float("nan")
    for mode in grpo.LOSS_AGG_MODES:
        assert torch.isfinite(grpo.aggregate_loss(loss, MASK, mode)), mode


def test_all_padding_batch_gives_zero_not_nan():
    empty = torch.zeros(2, 3, dtype=torch.bool)
    for mode in grpo.LOSS_AGG_MODES:
        assert grpo.aggregate_loss(torch.ones(2, 3), empty, mode).item() == 0.0, mode


@pytest.mark.parametrize("mode", grpo.LOSS_AGG_MODES)
def test_micro_batch_accumulation_equals_whole_mini_batch(mode):
    """Gradient accumulation over micro-batches with mini-batch normalisers == one pass over the mini-batch."""
    gen = torch.Generator().manual_seed(1)
    old = torch.randn(8, 5, generator=gen)
    new = (old + 0.4 * torch.randn(8, 5, generator=gen)).requires_grad_(True)
    adv = torch.randn(8, 1, generator=gen).expand(8, 5)
    mask = torch.arange(5)[None, :] < torch.tensor([5, 1, 3, 0, 4, 2, 5, 1])[:, None]
    opts = dict(loss_agg_mode=mode, clip_ratio_high=0.28, max_response_length=16)

    whole, _ = grpo.policy_loss(new, old, adv, mask, **opts)
    (grad_whole,) = torch.autograd.grad(whole, new)

    norm = grpo.loss_normalisers(mask)
    assert norm == {"total_tokens": int(mask.sum()), "total_samples": 7}
    accumulated, grad_acc = 0.0, torch.zeros_like(new)
    for rows in (slice(0, 3), slice(3, 5), slice(5, 8)):
        part, _ = grpo.policy_loss(new[rows], old[rows], adv[rows], mask[rows], **opts, **norm)
        (g,) = torch.autograd.grad(part, new)
        accumulated, grad_acc = accumulated + part.item(), grad_acc + g
    assert accumulated == pytest.approx(whole.item(), rel=1e-6)
    assert torch.allclose(grad_acc, grad_whole, atol=1e-7)

    # without the normalisers each micro-batch would use its own counts: a different (wrong) gradient
    if mode not in ("token-sum",):
        naive = sum(grpo.policy_loss(new[r], old[r], adv[r], mask[r], **opts)[0].item()
                    for r in (slice(0, 3), slice(3, 5), slice(5, 8)))
        assert naive != pytest.approx(whole.item(), rel=1e-3)


def test_data_parallel_needs_global_counts():
    with pytest.raises(ValueError, match="dp_size=2 with loss_agg_mode='token-mean' needs the global total_tokens"):
        grpo.aggregate_loss(LOSS, MASK, "token-mean", dp_size=2)


# ----------------------------------------------------------------------------------------------------
# KL


def test_kl_estimators_hand_computed():
    logp, ref = torch.tensor([math.log(0.5)]), torch.tensor([math.log(0.25)])
    d = math.log(2.0)
    assert grpo.kl_penalty(logp, ref, "k1").item() == pytest.approx(d)
    assert grpo.kl_penalty(logp, ref, "kl").item() == pytest.approx(d)
    assert grpo.kl_penalty(logp, ref, "k2").item() == pytest.approx(0.5 * d * d)
    assert grpo.kl_penalty(logp, ref, "mse").item() == pytest.approx(0.5 * d * d)
    assert grpo.kl_penalty(logp, ref, "k3").item() == pytest.approx(0.5 + d - 1)  # ref/p - log(ref/p) - 1
    assert grpo.kl_penalty(ref, logp, "abs").item() == pytest.approx(d)


def test_k3_is_nonnegative_zero_at_equality_and_clamped():
    gen = torch.Generator().manual_seed(2)
    logp = torch.randn(1000, generator=gen) * 3
    ref = torch.randn(1000, generator=gen) * 3
    k3 = grpo.kl_penalty(logp, ref, "low_var_kl")
    assert (k3 >= 0).all() and k3.max().item() == 10.0
    assert torch.equal(grpo.kl_penalty(logp, logp, "k3"), torch.zeros(1000))


def test_k3_is_an_unbiased_kl_estimate():
    # tokens sampled from p: E_p[k3] = KL(p || ref)
    p = torch.tensor([0.6, 0.3, 0.1])
    ref = torch.tensor([0.2, 0.5, 0.3])
    exact = (p * (p / ref).log()).sum().item()
    per_token = grpo.kl_penalty(p.log(), ref.log(), "k3")
    assert (p * per_token).sum().item() == pytest.approx(exact, rel=1e-5)


def test_unknown_kl_estimator_is_named():
    with pytest.raises(ValueError, match=r"kl estimator 'k4' is not one of"):
        grpo.kl_penalty(torch.zeros(1), torch.zeros(1), "k4")


# ----------------------------------------------------------------------------------------------------
# Entropy and log-probs


def test_entropy_of_uniform_and_peaked_distributions():
    logits = torch.zeros(2, 3, 64)
    assert torch.allclose(grpo.token_entropy(logits), torch.full((2, 3), math.log(64)))
    peaked = torch.full((1, 64), -1e4)
    peaked[0, 5] = 0.0
    assert grpo.token_entropy(peaked).item() == pytest.approx(0.0, abs=1e-6)


def test_entropy_chunking_changes_nothing_including_gradient():
    gen = torch.Generator().manual_seed(3)
    logits = (4 * torch.randn(3, 7, 33, generator=gen)).requires_grad_(True)
    whole = grpo.token_entropy(logits, chunk_size=10_000)
    (g_whole,) = torch.autograd.grad(whole.sum(), logits)
    chunked = grpo.token_entropy(logits, chunk_size=4)
    (g_chunked,) = torch.autograd.grad(chunked.sum(), logits)
    assert torch.allclose(whole, chunked) and torch.allclose(g_whole, g_chunked)


def test_entropy_of_bfloat16_logits_is_float32():
    logits = torch.randn(2, 4, 16).to(torch.bfloat16)
    out = grpo.token_entropy(logits)
    assert out.dtype == torch.float32
    assert torch.allclose(out, grpo.token_entropy(logits.float()))


def test_log_probs_of_bfloat16_logits_have_the_right_gradient():
    gen = torch.Generator().manual_seed(6)
    logits = torch.randn(3, 5, 17, generator=gen).to(torch.bfloat16).requires_grad_(True)
    ids = torch.randint(0, 17, (3, 5), generator=gen)
    (g_chunked,) = torch.autograd.grad(grpo.token_log_probs(logits, ids, chunk_size=4).sum(), logits)
    ref = logits.detach().float().requires_grad_(True)
    expected = torch.log_softmax(ref, -1).gather(-1, ids[..., None]).sum()
    (g_ref,) = torch.autograd.grad(expected, ref)
    assert g_chunked.dtype == torch.bfloat16 and torch.allclose(g_chunked.float(), g_ref, atol=1e-2)


def test_log_probs_match_log_softmax():
    gen = torch.Generator().manual_seed(4)
    logits = torch.randn(2, 5, 11, generator=gen)
    ids = torch.randint(0, 11, (2, 5), generator=gen)
    expected = torch.log_softmax(logits, -1).gather(-1, ids[..., None]).squeeze(-1)
    assert torch.allclose(grpo.token_log_probs(logits, ids, chunk_size=3), expected, atol=1e-6)


# ----------------------------------------------------------------------------------------------------
# Actor loss


def _actor_inputs():
    gen = torch.Generator().manual_seed(5)
    logits = torch.randn(4, 6, 20, generator=gen).requires_grad_(True)
    ids = torch.randint(0, 20, (4, 6), generator=gen)
    old = grpo.token_log_probs(logits.detach(), ids)
    ref = old + 0.2 * torch.randn(4, 6, generator=gen)
    mask = torch.ones(4, 6, dtype=torch.bool)
    adv = grpo.token_advantages(grpo.group_advantages(torch.tensor([1.0, 0.0, 1.0, 1.0]), [0, 0, 1, 1]), mask)
    return logits, ids, old, ref, adv, mask


def test_actor_loss_is_policy_minus_entropy_plus_kl():
    logits, ids, old, ref, adv, mask = _actor_inputs()
    log_prob = grpo.token_log_probs(logits, ids)
    entropy = grpo.token_entropy(logits)
    out = grpo.actor_loss(log_prob, old, adv, mask, ref_log_prob=ref, entropy=entropy, entropy_coef=0.1,
                          use_kl_loss=True, kl_coef=0.5, kl_estimator="k3")
    m = out.metrics
    assert m["kl_loss"].item() > 0 and m["entropy"].item() > 0
    assert out.loss.item() == pytest.approx(m["pg_loss"].item() - 0.1 * m["entropy"].item() + 0.5 * m["kl_loss"].item())
    assert m["kl_loss"].item() == pytest.approx(grpo.kl_penalty(log_prob, ref, "k3").mean().item())


def test_actor_loss_without_kl_or_entropy_is_the_policy_loss():
    logits, ids, old, ref, adv, mask = _actor_inputs()
    log_prob = grpo.token_log_probs(logits, ids)
    out = grpo.actor_loss(log_prob, old, adv, mask, ref_log_prob=ref)
    assert "kl_loss" not in out.metrics and out.loss.item() == out.metrics["pg_loss"].item()


def test_entropy_bonus_gradient_raises_entropy():
    logits, ids, old, _, adv, mask = _actor_inputs()
    entropy_before = grpo.token_entropy(logits).mean().item()
    out = grpo.actor_loss(grpo.token_log_probs(logits, ids), old, torch.zeros_like(adv), mask,
                          entropy=grpo.token_entropy(logits), entropy_coef=1.0)
    out.loss.backward()
    with torch.no_grad():
        stepped = logits - 0.5 * logits.grad
    assert grpo.token_entropy(stepped).mean().item() > entropy_before


def test_actor_loss_requires_what_its_options_use():
    logits, ids, old, _, adv, mask = _actor_inputs()
    log_prob = grpo.token_log_probs(logits, ids)
    with pytest.raises(ValueError, match="use_kl_loss=True needs ref_log_prob"):
        grpo.actor_loss(log_prob, old, adv, mask, use_kl_loss=True)
    with pytest.raises(ValueError, match="entropy_coef=0.01 needs the per-token entropy"):
        grpo.actor_loss(log_prob, old, adv, mask, entropy_coef=0.01)


def test_one_gradient_step_makes_high_advantage_samples_more_likely():
    """The point of it all: descend the loss and the rewarded sample's log-prob goes up."""
    logits, ids, old, _, adv, mask = _actor_inputs()
    out = grpo.actor_loss(grpo.token_log_probs(logits, ids), old, adv, mask)
    out.loss.backward()
    with torch.no_grad():
        after = grpo.token_log_probs(logits - 1.0 * logits.grad, ids)
    delta = (after - old).sum(-1)  # (B,)
    per_sample_adv = adv[:, 0]
    assert (delta[per_sample_adv > 0] > 0).all() and (delta[per_sample_adv < 0] < 0).all()


# ----------------------------------------------------------------------------------------------------
# GSPO: one clipped ratio per sample


def _gspo_case(seed=0):
    gen = torch.Generator().manual_seed(seed)
    mask = torch.ones(5, 7, dtype=torch.bool)
    mask[1, 4:] = False
    mask[3, 2:] = False
    old = -torch.rand(5, 7, generator=gen) * 3
    new = old + 0.4 * torch.randn(5, 7, generator=gen)
    new[2] = old[2] + 1e-5  # close to on-policy: inside even a tiny clip range
    adv = grpo.token_advantages(torch.tensor([1.0, 0.5, 2.0, -1.5, -0.7]), mask)
    return new, old, adv, mask


def _sequence_ratio(new, old, mask):
    """(B,) exp(mean over each sample's tokens of (new - old)): the geometric mean of its token ratios."""
    return torch.stack([torch.exp((new[i][mask[i]] - old[i][mask[i]]).mean()) for i in range(len(mask))])


def test_gspo_loss_is_the_clipped_sequence_ratio_times_the_advantage_per_token():
    new, old, adv, mask = _gspo_case()
    s = _sequence_ratio(new, old, mask)[:, None].expand_as(adv)  # (B, T)
    low, high = 0.05, 0.08
    direct = torch.maximum(-adv * s, -adv * s.clamp(1 - low, 1 + high))[mask].mean()  # token-mean by hand
    loss, metrics = grpo.gspo_policy_loss(new, old, adv, mask, clip_ratio_low=low, clip_ratio_high=high)
    assert loss.item() == pytest.approx(direct.item(), rel=1e-6)
    clipped = (-adv * s.clamp(1 - low, 1 + high) > -adv * s)[mask].float().mean()
    assert 0 < clipped < 1 and metrics["pg_clipfrac"].item() == pytest.approx(clipped.item())
    assert metrics["ppo_kl"].item() == pytest.approx((old - new)[mask].mean().item(), rel=1e-5)
    assert metrics["pg_clipfrac_lower"].item() == 0.0  # no dual-clip


@pytest.mark.parametrize("low, high", [(3e-4, 4e-4), (0.2, 0.28)])
def test_gspo_gradient_is_the_gradient_of_the_papers_sequence_objective(low, high):
    """With seq-mean-token-mean, GSPO per token equals -mean_i min(s_i A_i, clip(s_i) A_i), s_i the geometric mean of
    the sample's token ratios, in value and in gradient (also where the clip stops it)."""
    new, old, adv, mask = _gspo_case(1)
    a = adv[:, 0]
    theirs = new.clone().requires_grad_(True)
    s = torch.stack([torch.exp((theirs[i][mask[i]] - old[i][mask[i]]).mean()) for i in range(len(mask))])
    objective = torch.minimum(s * a, s.clamp(1 - low, 1 + high) * a).mean()
    (-objective).backward()
    ours = new.clone().requires_grad_(True)
    loss, _ = grpo.gspo_policy_loss(ours, old, adv, mask, clip_ratio_low=low, clip_ratio_high=high,
                                    loss_agg_mode="seq-mean-token-mean")
    loss.backward()
    assert loss.item() == pytest.approx(-objective.item(), rel=1e-6)
    assert torch.allclose(ours.grad, theirs.grad, atol=1e-7)
    if low < 0.01:  # the paper's range: the clip stops some samples' gradient, not the near-on-policy one's
        stopped = (ours.grad[mask] == 0).sum().item()
        assert 0 < stopped < mask.sum().item() and torch.all(ours.grad[2] != 0)


def test_gspo_ignores_padding_and_clamps_the_log_ratio_at_10():
    new, old, adv, mask = _gspo_case(2)
    runs = []
    for garbage in (0.0, float("nan")):
        noisy = torch.where(mask, new, garbage).requires_grad_(True)
        loss, metrics = grpo.gspo_policy_loss(noisy, torch.where(mask, old, -garbage), adv, mask,
                                              loss_agg_mode="seq-mean-token-mean")
        loss.backward()
        assert torch.all(noisy.grad[~mask] == 0)
        runs.append((loss.detach(), noisy.grad[mask], metrics["ppo_kl"]))
    assert all(torch.equal(x, y) for x, y in zip(*runs))
    far = new.clone()
    far[0] = old[0] + 15.0  # log s = 15 is clamped to 10: value e^10, no gradient
    one_row = torch.zeros_like(adv)
    one_row[0] = -1.0 * mask[0]  # only sample 0 counts, negative advantage: the unclipped term is the max
    far.requires_grad_(True)
    loss, _ = grpo.gspo_policy_loss(far, old, one_row, mask, loss_agg_mode="token-sum")
    loss.backward()
    assert loss.item() == pytest.approx(mask[0].sum().item() * math.exp(10.0), rel=1e-5)
    assert torch.all(far.grad == 0)


@pytest.mark.parametrize("fn", [grpo.policy_loss, grpo.gspo_policy_loss], ids=["vanilla", "gspo"])
def test_rollout_is_weights_multiply_each_tokens_policy_loss_and_keep_the_denominator(fn):
    """loss(w) = sum over tokens of w[i,t] * loss[i,t] (token-sum), each loss[i,t] the unweighted token's own; a token
    of weight 0 gets no gradient but still counts in token-mean's denominator; the metrics stay unweighted."""
    new, old, adv, mask = _gspo_case(3)
    weights = torch.rand(new.shape, generator=torch.Generator().manual_seed(4)) * 2
    weights[0, :3] = 0.0  # masked tokens
    requires = new.clone().requires_grad_(True)
    weighted, metrics = fn(requires, old, adv, mask, rollout_is_weights=weights, loss_agg_mode="token-sum")
    weighted.backward()
    per_token = {}
    for i, j in mask.nonzero().tolist():
        one_hot = torch.zeros_like(weights)
        one_hot[i, j] = 1.0
        per_token[i, j] = fn(new, old, adv, mask, rollout_is_weights=one_hot, loss_agg_mode="token-sum")[0].item()
    assert weighted.item() == pytest.approx(sum(weights[i, j].item() * v for (i, j), v in per_token.items()), rel=1e-5)
    assert sum(per_token.values()) == pytest.approx(fn(new, old, adv, mask, loss_agg_mode="token-sum")[0].item(),
                                                    rel=1e-5)
    # each token's loss depends on its own log-prob only (GSPO's sequence ratio enters without gradient)
    plain = new.clone().requires_grad_(True)
    fn(plain, old, adv, mask, loss_agg_mode="token-sum")[0].backward()
    assert torch.allclose(requires.grad, weights * plain.grad, atol=1e-7) and torch.all(requires.grad[0, :3] == 0)
    _, unweighted = fn(new, old, adv, mask)
    assert metrics == unweighted
    mean, _ = fn(new, old, adv, mask, rollout_is_weights=weights)
    assert mean.item() == pytest.approx(weighted.item() / mask.sum().item(), rel=1e-6)


def test_actor_loss_dispatches_on_loss_mode():
    logits, ids, old, ref, adv, mask = _actor_inputs()
    log_prob = grpo.token_log_probs(logits, ids)
    gspo = grpo.actor_loss(log_prob, old, adv, mask, loss_mode="gspo", clip_ratio_high=0.28)
    direct, _ = grpo.gspo_policy_loss(log_prob, old, adv, mask, clip_ratio_high=0.28)
    assert gspo.metrics["pg_loss"].item() == direct.item()
    vanilla = grpo.actor_loss(log_prob, old, adv, mask, clip_ratio_high=0.28)
    assert vanilla.metrics["pg_loss"].item() == grpo.policy_loss(log_prob, old, adv, mask,
                                                                 clip_ratio_high=0.28)[0].item()
    with pytest.raises(ValueError, match=r"loss_mode='gpso' is not one of \('vanilla', 'gspo'\)"):
        grpo.actor_loss(log_prob, old, adv, mask, loss_mode="gpso")


# ----------------------------------------------------------------------------------------------------
# Rollout importance weights


def _engine_gap():
    old = torch.tensor([[-1.0, -0.5, -2.0, -1.0], [-0.2, -3.0, -1.0, -1.0], [-1.0, -1.0, -1.0, -1.0]])
    gap = torch.tensor([[0.1, 0.9, -0.9, 0.0], [-0.3, 0.2, 30.0, 0.0], [0.0, 0.0, 0.0, 0.0]])  # old - rollout
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1], [0, 0, 0, 0]], dtype=torch.bool)  # the last sample is empty
    return old, old - gap, gap, mask


def test_token_importance_weights_are_truncated_ratios():
    old, rollout, gap, mask = _engine_gap()
    w, metrics = grpo.rollout_is_weights(old, rollout, mask, mode="token", cap=2.0)
    ratios = [math.exp(min(g, 20.0)) for g in gap[mask].tolist()]  # exponents clamped at 20
    assert w[mask].tolist() == pytest.approx([min(r, 2.0) for r in ratios], rel=1e-5)
    assert torch.all(w[~mask] == 0)
    assert metrics["rollout_is_weight_mean"] == pytest.approx(sum(min(r, 2.0) for r in ratios) / 7, rel=1e-5)
    assert metrics["rollout_is_capped_frac"] == pytest.approx(sum(r > 2.0 for r in ratios) / 7)  # 0.9 and 30: 2 of 7


def test_sequence_importance_weights_are_one_truncated_ratio_per_sample():
    old, rollout, gap, mask = _engine_gap()
    w, metrics = grpo.rollout_is_weights(old, rollout, mask, mode="sequence", cap=2.0)
    first = math.exp(0.1 + 0.9 - 0.9)  # 1.105: below the cap
    assert w[0, :3].tolist() == pytest.approx([first] * 3, rel=1e-5)
    assert w[1].tolist() == pytest.approx([2.0] * 4)  # sum 29.9: capped
    assert torch.all(w[~mask] == 0)
    assert metrics["rollout_is_weight_mean"] == pytest.approx((3 * first + 4 * 2.0) / 7, rel=1e-5)
    assert metrics["rollout_is_capped_frac"] == pytest.approx(1 / 2)  # of the two samples with tokens


def test_masked_importance_weights_drop_tokens_outside_the_bounds():
    old, rollout, gap, mask = _engine_gap()
    w, metrics = grpo.rollout_is_weights(old, rollout, mask, mode="mask", cap=2.0, lower=0.5)
    ratios = torch.exp(gap.clamp(max=20.0))
    inside = (ratios >= 0.5) & (ratios <= 2.0) & mask  # exp(0.9) = 2.46, exp(-0.9) = 0.41 and exp(30) are outside
    assert torch.allclose(w, torch.where(inside, ratios, torch.zeros(())), rtol=1e-5, atol=0)
    assert inside.sum() == 4
    assert metrics["rollout_is_masked_frac"] == pytest.approx(3 / 7)
    assert metrics["rollout_is_weight_mean"] == pytest.approx(ratios[inside].sum().item() / 7, rel=1e-5)
    assert "rollout_is_capped_frac" not in metrics


def test_rollout_is_weights_refuse_unknown_modes_and_bounds():
    old, rollout, _, mask = _engine_gap()
    with pytest.raises(ValueError, match="rollout_is='seq' is not one of"):
        grpo.rollout_is_weights(old, rollout, mask, mode="seq")
    with pytest.raises(ValueError, match="needs 0 < lower <= cap; got lower=None"):
        grpo.rollout_is_weights(old, rollout, mask, mode="mask")
    with pytest.raises(ValueError, match="got lower=3.0, cap=2.0"):
        grpo.rollout_is_weights(old, rollout, mask, mode="mask", lower=3.0)


@pytest.mark.parametrize("mode", grpo.ROLLOUT_IS_MODES)
def test_per_sample_check_gives_each_samples_weights_of_the_padded_computation(mode):
    old, rollout, _, mask = _engine_gap()
    lengths = mask.sum(-1).tolist()
    metrics, per_sample = grpo.rollout_log_prob_check([rollout[i, :n].tolist() for i, n in enumerate(lengths)],
                                                      [old[i, :n] for i, n in enumerate(lengths)], True, 2.0, mode, 0.5)
    padded, expected = grpo.rollout_is_weights(old, rollout, mask, mode=mode, cap=2.0, lower=0.5)
    assert [len(w) for w in per_sample] == lengths
    assert all(torch.allclose(w, padded[i, :n]) for i, (w, n) in enumerate(zip(per_sample, lengths)))
    assert {k: v for k, v in metrics.items() if k.startswith("rollout_is_")} == pytest.approx(expected)


# ----------------------------------------------------------------------------------------------------
# GPU tier: the same maths on CUDA (skipped without a GPU)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_actor_loss_on_cuda_matches_cpu_including_bf16_entropy():
    logits, ids, old, ref, adv, mask = _actor_inputs()
    results = []
    for device in ("cpu", "cuda"):
        z = logits.detach().to(device).requires_grad_(True)
        out = grpo.actor_loss(grpo.token_log_probs(z, ids.to(device)), old.to(device), adv.to(device),
                              mask.to(device), ref_log_prob=ref.to(device), entropy=grpo.token_entropy(z, chunk_size=7),
                              entropy_coef=0.01, use_kl_loss=True, clip_ratio_high=0.28)
        out.loss.backward()
        results.append((out.loss.detach().cpu(), z.grad.cpu()))
    assert torch.allclose(results[0][0], results[1][0], atol=1e-5)
    assert torch.allclose(results[0][1], results[1][1], atol=1e-6)
    bf16 = logits.detach().to("cuda", torch.bfloat16)
    assert torch.allclose(grpo.token_entropy(bf16).cpu(), grpo.token_entropy(bf16.float().cpu()), atol=1e-4)
    groups = torch.arange(8, device="cuda") // 4
    adv_cuda = grpo.group_advantages(torch.rand(8, device="cuda"), groups)
    assert adv_cuda.device.type == "cuda"
    assert torch.allclose(adv_cuda.view(2, 4).sum(-1).cpu(), torch.zeros(2), atol=1e-6)
