"""algorithm.adv_estimator beside GRPO in the native trainer: PPO with a critic (gae), RLOO, REINFORCE++.

In process, with the real tiny model: every logged critic number (value_loss, value_clipfrac, values_mean,
returns_mean, value_explained_var) and the per-token advantages that reach the actor against a direct computation
written out here; the critic's warm-up steps leave the actor alone. Through the train CLI (slow): each estimator
trains on ci_tiny, and a PPO run interrupted and resumed ends with the same actor and critic weights as an
uninterrupted one.
"""

import copy
import json
import math
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer

from codefu_helpers import grpo
from codefu_helpers.config import ExperimentConfig
from codefu_helpers.policy_ops import (load_value_model, pack, response_log_probs, response_values,
                                       value_model_from_lm)
from codefu_helpers.reward import Scored
from codefu_helpers.rollout import Sample
from codefu_helpers.tracking import read_metrics
from codefu_helpers.trainer import GRPOTrainer

from conftest import ROOT

ROWS = [{"prompt": [{"role": "user", "content": "x"}]}]
SCORES = [1.0, 0.0, 0.5, -1.0]


@pytest.fixture(scope="module")
def tiny():
    from codefu_helpers.tiny_model import build_tiny_model

    path = build_tiny_model()
    return AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)


def _config(estimator: str, *extra: str) -> ExperimentConfig:
    return ExperimentConfig.from_yaml(ROOT / "configs" / "ci_tiny.yaml").with_overrides([
        "data.train_batch_size=1", "algorithm.ppo_mini_batch_size=1", "rollout.n=4", "algorithm.ppo_micro_batch_size=2",
        "algorithm.use_kl_loss=false", "optim.lr=0.01", "trainer.test_freq=0", "data.val_path=null",
        f"algorithm.adv_estimator={estimator}", *extra]).validate()


def _samples(seed: int = 3, lengths=(4, 6, 5, 3)) -> list[Sample]:
    torch.manual_seed(seed)
    return [Sample(torch.randint(3, 500, (5 + i,)).tolist(), torch.randint(3, 500, (n,)).tolist(), "", "stop")
            for i, n in enumerate(lengths)]


def _results(scores=SCORES):
    return [Scored(s, s == 1.0, False, "ok", {}) for s in scores]


def _gae_by_hand(scores, lengths, values, gamma, lam):
    """Per sample: the reward on its last token, then delta_t = r_t + gamma V_{t+1} - V_t and A_t = delta_t +
    gamma lam A_{t+1} backwards from the end (V past the end is 0); returns = A + V. Plain Python floats."""
    advantages, returns = [], []
    for score, n, v in zip(scores, lengths, values):
        a, following, out = 0.0, 0.0, [0.0] * n
        for t in reversed(range(n)):
            reward = score if t == n - 1 else 0.0
            delta = reward + gamma * following - v[t]
            a = delta + gamma * lam * a
            out[t], following = a, v[t]
        advantages.append(out)
        returns.append([x + y for x, y in zip(out, v[:n])])
    return advantages, returns


def _whiten(rows):
    flat = [x for row in rows for x in row]
    mean = sum(flat) / len(flat)
    std = math.sqrt(sum((x - mean) ** 2 for x in flat) / (len(flat) - 1) + 1e-8)
    return [[(x - mean) / std for x in row] for row in rows]


def _explained_variance(returns, values):
    r = [x for row in returns for x in row]
    d = [x - y for rr, vv in zip(returns, values) for x, y in zip(rr, vv)]
    var = lambda xs: sum((x - sum(xs) / len(xs)) ** 2 for x in xs) / len(xs)  # noqa: E731
    return 1 - var(d) / var(r)


def test_logged_critic_numbers_and_gae_advantages_equal_a_direct_computation(tiny, tmp_path):
    """One PPO update (one mini-batch, two micro-batches): the values are the fresh critic's before the update, the
    returns and advantages GAE(gamma=0.9, lam=0.8) on them, the value loss 0.5 x token-mean (V - R)^2 at those
    values (no clipping in the first update), and the actor's loss is taken with those per-token advantages."""
    model, tokenizer = tiny
    cfg = _config("gae", "algorithm.gamma=0.9", "algorithm.lam=0.8", "critic.lr=0.001", "optim.grad_clip=null",
                  "critic.grad_clip=null")
    trainer = GRPOTrainer(cfg, ROWS, tmp_path, model=copy.deepcopy(model), tokenizer=tokenizer)
    policy, critic = copy.deepcopy(trainer.model), copy.deepcopy(trainer.critic_model)
    # the critic is a copy of the start model's decoder with a fresh value head
    fresh = value_model_from_lm(model, seed=cfg.trainer.seed)
    for name, tensor in fresh.state_dict().items():
        torch.testing.assert_close(critic.state_dict()[name], tensor, atol=0, rtol=0, msg=name)
    samples = _samples()
    logged = trainer._update(samples, [0] * 4, _results(), [1.0] * 4)

    batch = pack(samples, tokenizer.pad_token_id)
    lengths = [len(s.response_ids) for s in samples]
    critic.zero_grad()
    values_t = response_values(critic, batch)  # (B, T), with a graph for the critic's gradient below
    values = [values_t[i, :n].tolist() for i, n in enumerate(lengths)]
    advantages, returns = _gae_by_hand(SCORES, lengths, values, 0.9, 0.8)
    advantages = _whiten(advantages)
    for i, n in enumerate(lengths):
        torch.testing.assert_close(trainer.last_step["values"][i, :n], torch.tensor(values[i]), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(trainer.last_step["returns"][i, :n], torch.tensor(returns[i]), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(trainer.last_step["token_advantages"][i, :n], torch.tensor(advantages[i]),
                                   atol=1e-4, rtol=1e-4)
    tokens = sum(lengths)
    flat = lambda rows: [x for row in rows for x in row]  # noqa: E731
    assert logged["values_mean"] == pytest.approx(sum(flat(values)) / tokens, rel=1e-5, abs=1e-6)
    assert logged["returns_mean"] == pytest.approx(sum(flat(returns)) / tokens, rel=1e-5, abs=1e-6)
    assert logged["value_explained_var"] == pytest.approx(_explained_variance(returns, values), rel=1e-4, abs=1e-6)
    value_loss = 0.5 * sum((v - r) ** 2 for v, r in zip(flat(values), flat(returns))) / tokens
    assert logged["value_loss"] == pytest.approx(value_loss, rel=1e-4)
    assert logged["value_clipfrac"] == 0.0  # the first update starts at the old values
    assert logged["critic_optimizer_steps"] == 1 and logged["critic_lr"] == pytest.approx(0.001)
    # the critic's gradient norm: that of the whole mini-batch's value loss
    returns_t = torch.zeros_like(values_t)
    for i, n in enumerate(lengths):
        returns_t[i, :n] = torch.tensor(returns[i])
    (0.5 * (((values_t - returns_t) ** 2) * batch.response_mask).sum() / tokens).backward()
    norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in critic.parameters() if p.grad is not None]))
    assert logged["critic_grad_norm"] == pytest.approx(float(norm), rel=1e-4)
    # the actor's loss used the per-token advantages
    with torch.no_grad():
        old, _ = response_log_probs(policy, batch)
    direct = grpo.actor_loss(old, old, trainer.last_step["token_advantages"], batch.response_mask,
                             clip_ratio_low=0.2, clip_ratio_high=0.28, clip_ratio_c=3.0, entropy_coef=0.0,
                             max_response_length=cfg.data.max_response_length)
    assert logged["pg_loss"] == pytest.approx(float(direct.metrics["pg_loss"]), rel=1e-4, abs=1e-6)
    assert logged["advantage_abs_mean"] == pytest.approx(sum(abs(x) for x in flat(advantages)) / tokens, rel=1e-4)
    # the critic moved
    assert any(not torch.equal(p, q) for p, q in zip(trainer.critic_model.parameters(), critic.parameters()))


def test_critic_model_path_loads_a_causal_lm_under_a_fresh_seeded_head_and_refuses_what_is_not_a_model(tiny, tmp_path):
    """critic.model_path=<a causal LM>: its decoder under a value head drawn as for a copy of the policy (same seed,
    same head); a folder without a model is refused naming the key."""
    model, _ = tiny
    loaded = load_value_model("tiny://qwen2", seed=7).state_dict()
    built = value_model_from_lm(model, seed=7).state_dict()
    assert loaded.keys() == built.keys()
    for name, tensor in built.items():
        torch.testing.assert_close(loaded[name], tensor, atol=0, rtol=0, msg=name)
    assert not torch.equal(value_model_from_lm(model, seed=8).score.weight, built["score.weight"])
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "qwen2"}))
    with pytest.raises(ValueError, match=r"critic.model_path='.+' cannot be loaded as a value model .*no file named"):
        load_value_model(str(tmp_path), seed=0)


def test_logged_value_loss_and_clip_fraction_of_clipped_values_equal_a_direct_computation(tiny, tmp_path):
    """Old values away from the current ones, some further than critic.cliprange_value: the logged loss and clip
    fraction are the clipped value loss written out (max of the two squared errors, per token)."""
    model, tokenizer = tiny
    cfg = _config("gae", "critic.cliprange_value=0.2")
    trainer = GRPOTrainer(cfg, ROWS, tmp_path, model=copy.deepcopy(model), tokenizer=tokenizer)
    critic = copy.deepcopy(trainer.critic_model)
    samples = _samples(4)
    batch = pack(samples, tokenizer.pad_token_id)
    with torch.no_grad():
        current = response_values(critic, batch)
    torch.manual_seed(0)
    old = current + torch.randn_like(current) * 0.3
    returns = torch.randn_like(current)
    items = {i: {"sample": s, "keep": 1.0, "values": old[i, :len(s.response_ids)],
                 "returns": returns[i, :len(s.response_ids)]} for i, s in enumerate(samples)}
    norms = grpo.loss_normalisers(batch.response_mask)
    out = trainer.workers.update_critic(items, [0, 1, 2, 3], norms)
    logged = grpo.mini_batch_metrics(out["micro"], norms["total_tokens"])
    losses, clipped = [], []
    for i, s in enumerate(samples):
        for t in range(len(s.response_ids)):
            v, o, r = float(current[i, t]), float(old[i, t]), float(returns[i, t])
            v_clip = o + min(max(v - o, -0.2), 0.2)
            losses.append(max((v - r) ** 2, (v_clip - r) ** 2))
            clipped.append((v_clip - r) ** 2 > (v - r) ** 2)
    assert 0 < sum(clipped) < len(clipped), "some tokens must clip and some not, or this test proves little"
    assert logged["value_loss"] == pytest.approx(0.5 * sum(losses) / len(losses), rel=1e-4)
    assert logged["value_clipfrac"] == pytest.approx(sum(clipped) / len(clipped), rel=1e-6)


def test_the_critics_warm_up_steps_leave_the_actor_alone(tiny, tmp_path):
    model, tokenizer = tiny
    trainer = GRPOTrainer(_config("gae", "trainer.critic_warmup=1", "trainer.total_steps=2"), ROWS, tmp_path,
                          model=copy.deepcopy(model), tokenizer=tokenizer)
    actor = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    critic = {k: v.clone() for k, v in trainer.critic_model.state_dict().items()}
    logged = trainer._update(_samples(), [0] * 4, _results(), [1.0] * 4)
    assert logged["critic_warmup_step"] == 1 and logged["optimizer_steps"] == 0 and logged["critic_optimizer_steps"] == 1
    assert all(torch.equal(actor[k], v) for k, v in trainer.model.state_dict().items()), "the actor moved"
    assert any(not torch.equal(critic[k], v) for k, v in trainer.critic_model.state_dict().items())
    trainer.step_done = 1  # past the warm-up: both move
    logged = trainer._update(_samples(), [0] * 4, _results(), [1.0] * 4)
    assert logged["optimizer_steps"] == 1 and "critic_warmup_step" not in logged
    assert any(not torch.equal(actor[k], v) for k, v in trainer.model.state_dict().items())


@pytest.mark.parametrize("estimator", ["rloo", "reinforce_plus_plus"])
def test_critic_free_estimators_give_the_actor_their_advantages(tiny, tmp_path, estimator):
    """rloo: r minus the mean of the group's other samples, on every token; reinforce_plus_plus (gamma 0.9): the
    discounted return-to-go of the last-token reward, whitened over the batch's tokens. A judge failure counts in
    neither and gets 0."""
    model, tokenizer = tiny
    extra = ["algorithm.gamma=0.9"] if estimator == "reinforce_plus_plus" else []
    trainer = GRPOTrainer(_config(estimator, *extra), ROWS, tmp_path, model=copy.deepcopy(model), tokenizer=tokenizer)
    assert trainer.critic_model is None
    samples = _samples()
    lengths = [len(s.response_ids) for s in samples]
    results = _results()
    results[2] = Scored(0.0, False, True, "judge_error", {})
    keep = [1.0, 1.0, 0.0, 1.0]
    logged = trainer._update(samples, [0] * 4, results, keep)
    kept = [i for i in range(4) if keep[i]]
    if estimator == "rloo":
        rows = {i: [SCORES[i] - sum(SCORES[j] for j in kept if j != i) / (len(kept) - 1)] * lengths[i] for i in kept}
    else:
        returns = [[0.9 ** (lengths[i] - 1 - t) * SCORES[i] for t in range(lengths[i])] for i in kept]
        rows = dict(zip(kept, _whiten(returns)))
    got = trainer.last_step["token_advantages"]
    for i in range(4):
        expected = rows.get(i, [0.0] * lengths[i])
        torch.testing.assert_close(got[i, :lengths[i]], torch.tensor(expected), atol=1e-5, rtol=1e-5)
        assert not got[i, lengths[i]:].any()
    assert logged["optimizer_steps"] == 1 and "value_loss" not in logged


# ------------------------------------------------------------------------------------------------ the CLI


def train(out, *extra):
    cmd = [sys.executable, "-m", "codefu_helpers.train", "--config", str(ROOT / "configs" / "ci_tiny.yaml"),
           "--output-dir", str(out), *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=1200)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def ppo_runs(tmp_path_factory, easy_python_rows, warm_model_dir):
    """PPO (gae) on the warm-started tiny model, 3 steps with a critic warm-up of 1: once through, and stopped after
    step 2 then resumed."""
    _, train_path = easy_python_rows
    tmp = tmp_path_factory.mktemp("ppo")
    overrides = ["--set", f"model.path={warm_model_dir}", f"data.train_path={train_path}", "trainer.total_steps=3",
                 "algorithm.adv_estimator=gae", "trainer.critic_warmup=1", "critic.lr=0.0005", "optim.lr=0.0002",
                 "data.max_response_length=48", "trainer.test_freq=0", "data.val_path=null", "tracking.backend=none",
                 "checkpoint.resume=false", "checkpoint.keep_last=1"]
    full, parted = tmp / "full", tmp / "parted"
    train(full, *overrides)
    first = train(parted, "--stop-after-step", "2", *overrides)
    second = train(parted, "--resume", *overrides)
    return full, parted, first, second


@pytest.mark.slow
def test_an_interrupted_and_resumed_ppo_run_ends_with_the_same_actor_and_critic(ppo_runs, warm_model_dir):
    full, parted, first, second = ppo_runs
    assert "step 2/3" in first and "step 3/3" not in first
    assert "resumed from" in second and "step 3/3" in second and "step 2/3" not in second
    for folder in ("model", "critic"):
        a, b = load_file(full / folder / "model.safetensors"), load_file(parted / folder / "model.safetensors")
        assert a.keys() == b.keys()
        for name in a:
            torch.testing.assert_close(a[name], b[name], atol=1e-6, rtol=1e-5, msg=f"{folder}: {name} differs")
    # the exported critic is a one-label token-classification model that critic.model_path loads back
    config = json.loads((full / "critic" / "config.json").read_text())
    assert len(config["id2label"]) == 1 and config["architectures"][0].endswith("ForTokenClassification")
    reloaded = load_value_model(str(full / "critic"), seed=123).state_dict()  # its head kept, not re-drawn
    for name, tensor in load_file(full / "critic" / "model.safetensors").items():
        torch.testing.assert_close(reloaded[name], tensor, atol=0, rtol=0, msg=name)
    assert (parted / "checkpoints" / "step_000003" / "critic" / "dcp" / ".metadata").exists()
    for out in (full, parted):
        rows = read_metrics(out)
        assert [m["step"] for m in rows] == [1, 2, 3]
        assert {m["adv_estimator"] for m in rows} == {"gae"}
        assert all(math.isfinite(m["value_loss"]) and m["critic_optimizer_steps"] >= 1 for m in rows)
        assert [m["optimizer_steps"] > 0 for m in rows] == [False, True, True]  # step 1: the critic's warm-up
    initial = load_file(warm_model_dir / "model.safetensors")
    final = load_file(full / "model" / "model.safetensors")
    assert any(not torch.equal(initial[k], final[k]) for k in initial), "the actor did not move"
    full_rows, parted_rows = read_metrics(full), read_metrics(parted)
    for key in ("reward_mean", "value_loss", "values_mean"):
        assert [m[key] for m in full_rows] == pytest.approx([m[key] for m in parted_rows], rel=1e-5, abs=1e-7), key


@pytest.mark.slow
@pytest.mark.parametrize("estimator", ["rloo", "reinforce_plus_plus"])
def test_the_cli_trains_with_a_critic_free_estimator(tmp_path, estimator, python_split):
    out = tmp_path / estimator
    train(out, "--set", f"algorithm.adv_estimator={estimator}", "trainer.total_steps=1", "trainer.test_freq=0",
          f"data.train_path={python_split['train']}", "data.val_path=null", "tracking.backend=none",
          "data.max_response_length=32")
    rows = read_metrics(out)
    assert [m["step"] for m in rows] == [1] and rows[0]["adv_estimator"] == estimator
    assert rows[0]["optimizer_steps"] == 2 and "value_loss" not in rows[0]
    assert (out / "model" / "model.safetensors").exists() and not (out / "critic").exists()


def test_resume_refuses_what_would_break_the_critic_and_accepts_a_checkpoint_older_than_the_estimators(tmp_path):
    from codefu_helpers.checkpoint import TrainerState, write_checkpoint
    from codefu_helpers.config import ConfigError
    from codefu_helpers.trainer import check_resume_config

    grpo_cfg = ExperimentConfig.from_yaml(ROOT / "configs" / "ci_tiny.yaml")
    saved = grpo_cfg.to_dict()
    for key in ("adv_estimator", "gamma", "lam"):  # a checkpoint written before these keys existed ran GRPO
        del saved["algorithm"][key]
    del saved["critic"]
    old = write_checkpoint(tmp_path / "old", TrainerState(2, 4, None, saved), lambda folder: None)
    assert check_resume_config(old, grpo_cfg) == []
    with pytest.raises(ConfigError, match="algorithm.adv_estimator: 'grpo' -> 'gae': the checkpoint holds no critic"):
        check_resume_config(old, grpo_cfg.with_overrides(["algorithm.adv_estimator=gae"]))
    ppo = grpo_cfg.with_overrides(["algorithm.adv_estimator=gae"])
    path = write_checkpoint(tmp_path / "ppo", TrainerState(2, 4, None, ppo.to_dict()), lambda folder: None)
    assert check_resume_config(path, ppo.with_overrides(["trainer.critic_gpus=1"])) == []  # placement only
    for override, fragment in (("critic.lr=1e-4", "critic.lr: 1e-05 -> 0.0001 would change the learning-rate"),
                               ("trainer.critic_warmup=1", "trainer.critic_warmup: 0 -> 1"),
                               ("critic.model_path=tiny://qwen2", "the checkpoint's critic was trained from the other")):
        with pytest.raises(ConfigError) as info:
            check_resume_config(path, ppo.with_overrides([override]))
        assert fragment in str(info.value), (override, str(info.value))
