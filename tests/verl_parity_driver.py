"""Runs verl's reference maths on cases written by tests/test_grpo_parity.py; executed by .venv-job's python.

verl needs transformers<5.11 while the main environment has a newer one, so verl lives in its own
interpreter and never gets imported by codefu_helpers. This script is the only place that imports it:

    .venv-job/bin/python tests/verl_parity_driver.py CASES.pt RESULTS.pt

CASES.pt is a list of {"kind": ..., **inputs}; RESULTS.pt is a dict {"verl_version": ..., "results": [...]}
with one dict of output tensors per case, in order. Inputs and outputs are plain tensors, numbers,
strings and lists, so `torch.load(weights_only=True)` reads both sides.
"""

import sys

import numpy as np
import torch

import verl
import verl.utils.torch_functional as verl_F
from verl.trainer.ppo import core_algos
from verl.workers.config import ActorConfig


def actor_config(case):
    """A real ActorConfig, so compute_policy_loss_vanilla reads the options exactly as verl's trainer does."""
    return ActorConfig(
        strategy="fsdp",
        rollout_n=1,
        ppo_micro_batch_size_per_gpu=1,
        clip_ratio_low=case["clip_ratio_low"],
        clip_ratio_high=case["clip_ratio_high"],
        clip_ratio_c=case["clip_ratio_c"],
        loss_agg_mode=case["loss_agg_mode"],
        global_batch_info=global_batch_info(case),
    )


def global_batch_info(case):
    # verl's names for the mini-batch denominators; None means "this micro-batch's own counts".
    return {
        "dp_size": case.get("dp_size", 1),
        "batch_num_tokens": case.get("total_tokens"),
        "global_batch_size": case.get("total_samples"),
        "loss_scale_factor": case.get("max_response_length"),
    }


def run_advantage(case):
    index = np.array(case["group_ids"], dtype=object)
    out = {}
    for name, fn in (("loop", core_algos.compute_grpo_outcome_advantage),
                     ("vectorized", core_algos.compute_grpo_vectorized_outcome_advantage)):
        adv, _ = fn(
            token_level_rewards=case["token_level_rewards"].clone(),
            response_mask=case["response_mask"],
            index=index,
            epsilon=case["epsilon"],
            norm_adv_by_std_in_grpo=case["norm_by_std"],
        )
        out[name] = adv
    return out


def run_policy(case):
    log_prob = case["log_prob"].clone().requires_grad_(True)
    loss, metrics = core_algos.compute_policy_loss_vanilla(
        old_log_prob=case["old_log_prob"],
        log_prob=log_prob,
        advantages=case["advantages"],
        response_mask=case["response_mask"],
        loss_agg_mode=case["loss_agg_mode"],
        config=actor_config(case),
    )
    loss.backward()
    return {
        "loss": loss.detach(),
        "grad": log_prob.grad,
        "pg_clipfrac": torch.tensor(metrics["actor/pg_clipfrac"]),
        "ppo_kl": torch.tensor(metrics["actor/ppo_kl"]),
        "pg_clipfrac_lower": torch.tensor(metrics["actor/pg_clipfrac_lower"]),
    }


def run_gspo(case):
    """verl's `loss_mode: gspo` (compute_policy_loss_gspo), optionally with rollout IS weights."""
    log_prob = case["log_prob"].clone().requires_grad_(True)
    loss, metrics = core_algos.get_policy_loss_fn("gspo")(
        old_log_prob=case["old_log_prob"],
        log_prob=log_prob,
        advantages=case["advantages"],
        response_mask=case["response_mask"],
        loss_agg_mode=case["loss_agg_mode"],
        config=actor_config(case),
        rollout_is_weights=case.get("rollout_is_weights"),
    )
    loss.backward()
    return {
        "loss": loss.detach(),
        "grad": log_prob.grad,
        "pg_clipfrac": torch.tensor(metrics["actor/pg_clipfrac"]),
        "ppo_kl": torch.tensor(metrics["actor/ppo_kl"]),
        "pg_clipfrac_lower": torch.tensor(metrics["actor/pg_clipfrac_lower"]),
    }


def run_rollout_is(case):
    """verl's rollout correction weights (algorithm.rollout_correction) from old and rollout log-probs."""
    from verl.trainer.ppo.rollout_corr_helper import compute_rollout_correction_and_rejection_mask

    proto, mask, metrics = compute_rollout_correction_and_rejection_mask(
        old_log_prob=case["old_log_prob"], rollout_log_prob=case["rollout_log_prob"],
        response_mask=case["response_mask"], rollout_is=case["rollout_is"],
        rollout_is_threshold=case["rollout_is_threshold"])
    out = {"weights": proto.batch["rollout_is_weights"], "response_mask": mask,
           "rollout_is_weight_mean": torch.tensor(metrics["rollout_corr/rollout_is_mean"])}
    if "rollout_corr/rollout_is_oob_ratio" in metrics:
        out["rollout_is_masked_frac"] = torch.tensor(metrics["rollout_corr/rollout_is_oob_ratio"])
    else:
        out["rollout_is_capped_frac"] = torch.tensor(metrics["rollout_corr/rollout_is_ratio_fraction_high"])
    return out


def run_aggregate(case):
    loss = core_algos.agg_loss(
        loss_mat=case["loss_mat"], loss_mask=case["mask"], loss_agg_mode=case["loss_agg_mode"],
        **global_batch_info(case),
    )
    return {"loss": loss}


def run_kl(case):
    log_prob = case["log_prob"].clone().requires_grad_(True)
    kl = core_algos.kl_penalty(log_prob, case["ref_log_prob"], case["estimator"])
    kl.sum().backward()
    return {"kl": kl.detach(), "grad": log_prob.grad}


def run_entropy(case):
    logits = case["logits"]
    return {
        "entropy": verl_F.entropy_from_logits(logits),
        "loss": core_algos.compute_entropy_loss(logits, case["mask"], loss_agg_mode=case["loss_agg_mode"]),
    }


def run_log_probs(case):
    return {"log_prob": verl_F.logprobs_from_logits(case["logits"], case["token_ids"])}


def run_actor(case):
    """verl's actor loss as verl.workers.utils.losses.ppo_loss composes it, on padded tensors."""
    logits = case["logits"].clone().requires_grad_(True)
    mask = case["response_mask"].bool()
    config = actor_config(case)
    log_prob = verl_F.logprobs_from_logits(logits, case["token_ids"])
    entropy = verl_F.entropy_from_logits(logits)
    pg_loss, metrics = core_algos.get_policy_loss_fn(case.get("loss_mode", "vanilla"))(
        old_log_prob=case["old_log_prob"], log_prob=log_prob, advantages=case["advantages"], response_mask=mask,
        loss_agg_mode=case["loss_agg_mode"], config=config, rollout_is_weights=case.get("rollout_is_weights"),
    )
    policy_loss = pg_loss
    entropy_loss = core_algos.agg_loss(
        loss_mat=entropy, loss_mask=mask, loss_agg_mode=case["loss_agg_mode"], **config.global_batch_info
    )
    policy_loss = policy_loss - case["entropy_coef"] * entropy_loss
    kl_loss = torch.zeros(())
    if case["use_kl_loss"]:
        kld = core_algos.kl_penalty(logprob=log_prob, ref_logprob=case["ref_log_prob"], kl_penalty=case["kl_estimator"])
        kl_loss = core_algos.agg_loss(
            loss_mat=kld, loss_mask=mask, loss_agg_mode=case["loss_agg_mode"], **config.global_batch_info
        )
        policy_loss = policy_loss + kl_loss * case["kl_coef"]
    policy_loss.backward()
    return {
        "loss": policy_loss.detach(),
        "pg_loss": pg_loss.detach(),
        "entropy": entropy_loss.detach(),
        "kl_loss": kl_loss.detach(),
        "grad": logits.grad,
        "pg_clipfrac": torch.tensor(metrics["actor/pg_clipfrac"]),
    }


def run_gae(case):
    adv, returns = core_algos.compute_gae_advantage_return(
        token_level_rewards=case["token_level_rewards"], values=case["values"], response_mask=case["response_mask"],
        gamma=case["gamma"], lam=case["lam"])
    return {"advantages": adv, "returns": returns}


def run_rloo(case):
    adv, _ = core_algos.compute_rloo_outcome_advantage(
        token_level_rewards=case["token_level_rewards"].clone(), response_mask=case["response_mask"],
        index=np.array(case["group_ids"], dtype=object))
    return {"advantages": adv}


def run_reinforce_plus_plus(case):
    from verl.trainer.config import AlgoConfig

    adv, returns = core_algos.compute_reinforce_plus_plus_outcome_advantage(
        token_level_rewards=case["token_level_rewards"], response_mask=case["response_mask"],
        config=AlgoConfig(gamma=case["gamma"]))
    return {"advantages": adv, "returns": returns}


def run_value_loss(case):
    vpreds = case["vpreds"].clone().requires_grad_(True)
    info = global_batch_info(case)
    loss, clipfrac = core_algos.compute_value_loss(
        vpreds=vpreds, returns=case["returns"], values=case["values"], response_mask=case["response_mask"],
        cliprange_value=case["cliprange_value"], loss_agg_mode=case["loss_agg_mode"], dp_size=info["dp_size"],
        batch_num_tokens=info["batch_num_tokens"], global_batch_size=info["global_batch_size"],
        loss_scale_factor=info["loss_scale_factor"])
    loss.backward()
    return {"loss": loss.detach(), "clipfrac": torch.as_tensor(clipfrac).detach(), "grad": vpreds.grad}


def run_lr_schedule(case):
    """verl's LambdaLR multipliers (verl.utils.torch_functional) for optimizer updates 0 .. updates - 1."""
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    if case["schedule"] == "cosine":
        scheduler = verl_F.get_cosine_schedule_with_warmup(optimizer, case["warmup"], case["updates"])
    else:
        scheduler = verl_F.get_constant_schedule_with_warmup(optimizer, case["warmup"])
    factors = [scheduler.lr_lambdas[0](step) for step in range(case["updates"])]
    return {"factors": torch.tensor(factors, dtype=torch.float64)}


RUNNERS = {
    "gae": run_gae,
    "rloo": run_rloo,
    "reinforce_plus_plus": run_reinforce_plus_plus,
    "value_loss": run_value_loss,
    "advantage": run_advantage,
    "advantage_float32": run_advantage,
    "policy": run_policy,
    "gspo": run_gspo,
    "rollout_is": run_rollout_is,
    "aggregate": run_aggregate,
    "kl": run_kl,
    "entropy": run_entropy,
    "log_probs": run_log_probs,
    "actor": run_actor,
    "lr_schedule": run_lr_schedule,
}


def main(cases_path, results_path):
    torch.set_num_threads(1)
    cases = torch.load(cases_path, weights_only=True)
    results = [RUNNERS[case["kind"]](case) for case in cases]
    torch.save({"verl_version": verl.__version__, "results": results}, results_path)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
