"""codefu_helpers.estimators against verl.trainer.ppo.core_algos (verl 0.9.1): GAE, RLOO, REINFORCE++, value loss.

verl runs in .venv-job through tests/verl_parity_driver.py (as in test_grpo_parity.py), once for all cases; a
missing .venv-job fails these tests. Masks have varied lengths, an empty row, and for GAE/REINFORCE++ a hole in
the middle of a response (positions the recursion must carry over). The documented deviations (a lone sample's
RLOO advantage, excluded samples) are tested against direct computations instead.
"""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from codefu_helpers import estimators, grpo
from test_grpo_parity import ATOL, NORMALISERS, RTOL, run_verl_driver

B, T = 12, 9


def _mask(gen: torch.Generator, hole: bool) -> torch.Tensor:
    lengths = torch.randint(2, T + 1, (B,), generator=gen)
    lengths[0], lengths[3] = T, 0
    mask = (torch.arange(T)[None, :] < lengths[:, None]).float()
    if hole:
        mask[1, 2:4] = 0.0  # tokens inside a response that neither earn nor pass reward (verl's observation tokens)
    return mask


def _outcome(gen: torch.Generator, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    scores = torch.rand(B, generator=gen).round(decimals=1) * 2 - 0.5
    return scores, estimators.outcome_token_rewards(scores, mask)


def build_cases() -> dict[str, dict]:
    cases = {}
    for seed, (gamma, lam), hole in itertools.product((0, 1), ((1.0, 1.0), (0.99, 0.95), (0.9, 1.0)), (False, True)):
        gen = torch.Generator().manual_seed(100 + seed)
        mask = _mask(gen, hole)
        _, rewards = _outcome(gen, mask)
        values = torch.randn(B, T, generator=gen)
        cases[f"gae-{seed}-{gamma}-{lam}-{hole}"] = dict(kind="gae", token_level_rewards=rewards, values=values,
                                                         response_mask=mask, gamma=gamma, lam=lam)
        cases[f"rpp-{seed}-{gamma}-{hole}"] = dict(kind="reinforce_plus_plus", token_level_rewards=rewards,
                                                   response_mask=mask, gamma=gamma)
    for seed, layout in itertools.product((0, 1), ("pairs", "mixed", "interleaved")):
        gen = torch.Generator().manual_seed(200 + seed)
        mask = torch.ones(B, T)
        scores, rewards = _outcome(gen, mask)
        group_ids = {"pairs": [f"p{i // 2}" for i in range(B)],
                     "mixed": ["a"] * 2 + ["b"] * 3 + ["c"] * 4 + ["d"] * 3,
                     "interleaved": [f"u{i % 4}" for i in range(B)]}[layout]
        cases[f"rloo-{seed}-{layout}"] = dict(kind="rloo", token_level_rewards=rewards, response_mask=mask,
                                              group_ids=group_ids, scores=scores)
    for seed, mode, (norm_name, norm), clip in itertools.product(
            (0,), grpo.LOSS_AGG_MODES, NORMALISERS.items(), (0.2, 0.5)):
        gen = torch.Generator().manual_seed(300 + seed)
        mask = _mask(gen, hole=False)
        values = torch.randn(B, T, generator=gen)
        step = 0.6 * torch.randn(B, T, generator=gen)  # some beyond the clip range either way
        cases[f"value-{mode}-{norm_name}-{clip}"] = dict(
            kind="value_loss", vpreds=values + step, values=values, returns=values + torch.randn(B, T, generator=gen),
            response_mask=mask, cliprange_value=clip, loss_agg_mode=mode, **norm)
    return cases


CASES = build_cases()


@pytest.fixture(scope="module")
def verl_out(tmp_path_factory) -> dict:
    return run_verl_driver(CASES, tmp_path_factory.mktemp("verl_estimators"))["results"]


def ours(case: dict) -> dict[str, torch.Tensor]:
    kind = case["kind"]
    if kind == "gae":
        adv, returns = estimators.gae_advantages(case["token_level_rewards"], case["values"], case["response_mask"],
                                                 gamma=case["gamma"], lam=case["lam"])
        return {"advantages": adv, "returns": returns}
    if kind == "reinforce_plus_plus":
        adv, returns = estimators.reinforce_plus_plus_advantages(case["token_level_rewards"], case["response_mask"],
                                                                 gamma=case["gamma"])
        return {"advantages": adv, "returns": returns}
    if kind == "rloo":
        adv = estimators.rloo_advantages(case["scores"], case["group_ids"])
        return {"advantages": grpo.token_advantages(adv, case["response_mask"])}
    vpreds = case["vpreds"].clone().requires_grad_(True)
    norm = {k: case[k] for k in ("total_tokens", "total_samples", "max_response_length", "dp_size") if k in case}
    loss, clipfrac = estimators.value_loss(vpreds, case["returns"], case["values"], case["response_mask"],
                                           cliprange_value=case["cliprange_value"],
                                           loss_agg_mode=case["loss_agg_mode"], **norm)
    loss.backward()
    return {"loss": loss.detach(), "clipfrac": clipfrac, "grad": vpreds.grad}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_verl(name, verl_out):
    theirs, mine = verl_out[name], ours(CASES[name])
    assert set(theirs) == set(mine), (sorted(theirs), sorted(mine))
    mask = CASES[name]["response_mask"].bool()
    for key in theirs:
        a, b = mine[key].float(), theirs[key].float()
        if key in ("advantages", "returns", "grad") and a.dim() == 2:
            # verl leaves whitened garbage (-mean/std) on padding; only response tokens reach a loss
            a, b = a[mask], b[mask]
        torch.testing.assert_close(a, b, atol=ATOL * 10, rtol=RTOL * 10, msg=f"{name}: {key}")


def test_rloo_is_the_leave_one_out_baseline_and_a_lone_sample_gets_zero():
    scores = torch.tensor([1.0, 0.0, 0.5, 0.25, 0.7])
    groups = ["a", "a", "a", "b", "c"]
    adv = estimators.rloo_advantages(scores, groups)
    for i in range(3):
        others = [float(scores[j]) for j in range(3) if j != i]
        assert float(adv[i]) == pytest.approx(float(scores[i]) - sum(others) / len(others))
    assert adv[3:].tolist() == [0.0, 0.0]  # verl would pass 0.25 and 0.7 through unchanged


def test_outcome_token_rewards_put_each_score_on_the_last_response_token():
    mask = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0.0]])
    out = estimators.outcome_token_rewards(torch.tensor([0.5, -1.0, 2.0]), mask)
    assert out.tolist() == [[0, 0, 0.5, 0], [-1.0, 0, 0, 0], [0, 0, 0, 0]]


def test_gae_with_gamma_and_lambda_one_is_the_return_minus_the_value():
    """gamma = lam = 1 and one reward at the end: A_t = R - V_t before whitening, returns = R on every token."""
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0.0]])
    scores = torch.tensor([1.0, -0.5])
    values = torch.tensor([[0.2, 0.4, 0.9, 7.0], [0.1, -0.3, 5.0, 5.0]])
    adv, returns = estimators.gae_advantages(estimators.outcome_token_rewards(scores, mask), values, mask)
    assert returns[mask.bool()].tolist() == pytest.approx([1.0, 1.0, 1.0, -0.5, -0.5])
    raw = (returns - values)[mask.bool()].double()
    expected = (raw - raw.mean()) / torch.sqrt(raw.var(unbiased=True) + 1e-8)
    assert adv[mask.bool()].double().tolist() == pytest.approx(expected.tolist(), abs=1e-6)


def test_explained_variance_against_a_direct_computation():
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0.0]])
    returns = torch.tensor([[1.0, 2.0, 3.0, 9.0], [0.0, 4.0, 9.0, 9.0]])
    values = torch.tensor([[1.5, 2.0, 2.0, 0.0], [1.0, 3.0, 0.0, 0.0]])
    r = [1.0, 2.0, 3.0, 0.0, 4.0]
    d = [-0.5, 0.0, 1.0, -1.0, 1.0]
    var = lambda xs: sum((x - sum(xs) / len(xs)) ** 2 for x in xs) / len(xs)  # noqa: E731
    assert estimators.explained_variance(returns, values, mask) == pytest.approx(1 - var(d) / var(r))
    assert estimators.explained_variance(returns, returns, mask) == pytest.approx(1.0)
    assert math.isnan(estimators.explained_variance(torch.ones(2, 4), values, mask))
    # returns equal up to float32 rounding (one score for every sample, gamma = lam = 1) do not vary either
    noisy = -torch.ones(2, 4) + torch.tensor([[0.0, 1.2e-7, -6e-8, 0.0], [6e-8, 0.0, 0.0, 0.0]])
    assert math.isnan(estimators.explained_variance(noisy, values, mask))


@pytest.mark.parametrize("estimator", estimators.ADV_ESTIMATORS)
def test_excluded_samples_get_no_advantage_and_move_no_statistic(estimator):
    """A judge failure (keep = 0) must neither train nor shift the others' baseline or whitening."""
    gen = torch.Generator().manual_seed(5)
    mask = torch.ones(6, 5)
    mask[4, 3:] = 0
    scores = torch.tensor([1.0, 0.0, 0.5, 1.0, 0.0, 0.25])
    groups = ["a", "a", "a", "b", "b", "b"]
    values = torch.randn(6, 5, generator=gen)
    keep = torch.tensor([1, 1, 1, 1, 1, 0.0])
    adv, returns = estimators.outcome_advantages(estimator, scores, groups, keep, mask, values=values)
    assert torch.all(adv[5] == 0)
    # the same five samples alone give the same advantages
    alone, _ = estimators.outcome_advantages(estimator, scores[:5], groups[:5], torch.ones(5), mask[:5],
                                             values=values[:5])
    torch.testing.assert_close(adv[:5], alone, atol=1e-6, rtol=1e-6)
    assert (returns is not None) == (estimator == "gae")


def test_unknown_estimator_and_gae_without_values_are_refused():
    with pytest.raises(ValueError, match="adv_estimator='ppo'"):
        estimators.outcome_advantages("ppo", torch.zeros(2), ["a", "a"], torch.ones(2), torch.ones(2, 3))
    with pytest.raises(ValueError, match="critic's values"):
        estimators.outcome_advantages("gae", torch.zeros(2), ["a", "a"], torch.ones(2), torch.ones(2, 3))
