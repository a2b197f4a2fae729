"""Trainer pieces with the real tiny model: packing, log-probs, rollout seeding, judge-error exclusion."""

import copy

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from codefu_helpers.config import ExperimentConfig
from codefu_helpers.rollout import HFRollout, Sample, SamplingParams, encode_prompt
from codefu_helpers.trainer import GRPOTrainer, Scored, lr_lambda, pack, response_log_probs, score_sample, total_steps

from conftest import ROOT


@pytest.fixture(scope="module")
def tiny():
    from codefu_helpers.tiny_model import build_tiny_model

    path = build_tiny_model()
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    return model, tokenizer


def test_pack_aligns_every_response_at_the_same_column():
    samples = [Sample([1, 2, 3], [7, 8], "", "stop"), Sample([4], [9, 10, 11], "", "length")]
    batch = pack(samples, pad_id=0, weights=[1.0, 0.0])
    assert batch.prompt_width == 3
    assert batch.input_ids.tolist() == [[1, 2, 3, 7, 8, 0], [0, 0, 4, 9, 10, 11]]
    assert batch.attention_mask.tolist() == [[1, 1, 1, 1, 1, 0], [0, 0, 1, 1, 1, 1]]
    assert batch.position_ids.tolist()[1][2:] == [0, 1, 2, 3]
    assert batch.response_ids.tolist() == [[7, 8, 0], [9, 10, 11]]
    assert batch.response_mask.tolist() == [[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]


def test_padded_log_probs_equal_unpadded_ones(tiny):
    model, _ = tiny
    torch.manual_seed(0)
    samples = [Sample(torch.randint(3, 500, (n,)).tolist(), torch.randint(3, 500, (m,)).tolist(), "", "stop")
               for n, m in ((5, 7), (12, 3), (1, 9))]
    batch = pack(samples, pad_id=0)
    with torch.no_grad():
        batched, entropy = response_log_probs(model, batch, temperature=0.7, with_entropy=True)
        for i, s in enumerate(samples):
            ids = torch.tensor([s.prompt_ids + s.response_ids])
            logits = model(input_ids=ids).logits[0, len(s.prompt_ids) - 1:-1] / 0.7  # (R, V)
            expected = torch.log_softmax(logits, -1).gather(-1, torch.tensor(s.response_ids)[:, None])[:, 0]
            torch.testing.assert_close(batched[i, :len(s.response_ids)], expected, atol=2e-5, rtol=1e-5)
            p = torch.softmax(logits, -1)
            torch.testing.assert_close(entropy[i, :len(s.response_ids)], -(p * p.log()).sum(-1), atol=2e-5, rtol=1e-5)


def test_rollout_is_seeded_skips_long_prompts_and_reports_each_sample(tiny):
    model, tokenizer = tiny
    prompts = [[{"role": "user", "content": "Print the sum of two numbers."}],
               [{"role": "user", "content": "word " * 400}]]
    rollout = HFRollout(model, tokenizer)
    seen = []
    params = SamplingParams(max_new_tokens=12, seed=5, max_prompt_tokens=100, batch_size=3)
    a = rollout.generate(prompts, 4, params, on_sample=lambda g, s: seen.append(g))
    assert len(a[0].samples) == 4 and seen == [0, 0, 0, 0]
    assert a[1].samples == [] and "max_prompt_tokens=100" in a[1].skipped
    b = rollout.generate(prompts, 4, params)
    assert [s.response_ids for s in a[0].samples] == [s.response_ids for s in b[0].samples]
    c = rollout.generate(prompts, 4, SamplingParams(max_new_tokens=12, seed=6, max_prompt_tokens=100))
    assert [s.response_ids for s in a[0].samples] != [s.response_ids for s in c[0].samples]
    for s in a[0].samples:
        assert s.prompt_ids == encode_prompt(tokenizer, prompts[0])
        assert 1 <= len(s.response_ids) <= 12
        assert s.finish_reason == ("stop" if s.response_ids[-1] in rollout.eos_ids else "length")


def test_a_crashing_reward_is_a_judge_error_not_a_zero():
    def broken(*args, **kwargs):
        raise OSError("sandbox went away")

    row = {"data_source": "codecontests", "reward_model": {"ground_truth": {}}, "extra_info": {}}
    scored = score_sample(broken, "```python\nprint(1)\n```", row, "linear")
    assert scored.judge_error and scored.status == "judge_error" and "sandbox went away" in scored.details["error"]


def _config(train_batch: int, n: int) -> ExperimentConfig:
    return ExperimentConfig.from_yaml(ROOT / "configs" / "ci_tiny.yaml").with_overrides([
        f"data.train_batch_size={train_batch}", f"algorithm.ppo_mini_batch_size={train_batch}", f"rollout.n={n}",
        "algorithm.ppo_micro_batch_size=1", "algorithm.use_kl_loss=false", "optim.lr=0.01", "model.device=cpu",
    ]).validate()


def test_samples_whose_judging_failed_do_not_change_the_update(tiny, tmp_path):
    """Excluding a judge-error sample must equal never having drawn it: same weights after the update."""
    model, tokenizer = tiny
    rows = [{"prompt": [{"role": "user", "content": "x"}]}]
    torch.manual_seed(1)
    samples = [Sample(torch.randint(3, 500, (6,)).tolist(), torch.randint(3, 500, (n,)).tolist(), "", "stop")
               for n in (4, 6, 5, 3)]
    scores = [1.0, 0.0, 0.5, -1.0]
    results = [Scored(s, s == 1.0, False, "ok", {}) for s in scores]

    def updated(keep_idx, judge_error_idx=()):
        trainer = GRPOTrainer(_config(1, len(keep_idx)), rows, tmp_path, model=copy.deepcopy(model), tokenizer=tokenizer)
        res = [Scored(0.0, False, True, "judge_error", {}) if i in judge_error_idx else results[i] for i in keep_idx]
        keep = [0.0 if r.judge_error else 1.0 for r in res]
        trainer._update([samples[i] for i in keep_idx], [0] * len(keep_idx), res, keep)
        return trainer.model.state_dict()

    with_error = updated([0, 1, 2, 3], judge_error_idx={3})
    without = updated([0, 1, 2])
    changed = False
    for name, tensor in without.items():
        torch.testing.assert_close(with_error[name], tensor, atol=1e-6, rtol=1e-5)
        changed |= not torch.equal(tensor, model.state_dict()[name])
    assert changed, "the update must move the weights, or this test proves nothing"
    # and the judge error is not a zero: scoring it 0.0 as a normal sample changes the result
    as_zero = GRPOTrainer(_config(1, 4), rows, tmp_path, model=copy.deepcopy(model), tokenizer=tokenizer)
    as_zero._update(samples, [0] * 4, results[:3] + [Scored(0.0, False, False, "wa", {})], [1.0] * 4)
    assert any(not torch.allclose(as_zero.model.state_dict()[k], v, atol=1e-6) for k, v in without.items())


def test_schedule_and_step_count():
    warm = lr_lambda(4, "constant", 100)
    assert [round(warm(i), 2) for i in range(6)] == [0.2, 0.4, 0.6, 0.8, 1.0, 1.0]
    cos = lr_lambda(0, "cosine", 10)
    assert cos(0) == 1.0 and cos(5) == pytest.approx(0.5) and cos(10) == pytest.approx(0.0)
    cfg = _config(4, 2)
    assert total_steps(cfg.with_overrides(["trainer.total_steps=7"]), 100) == 7
    assert total_steps(cfg.with_overrides(["trainer.total_steps=null", "trainer.total_epochs=2"]), 10) == 5
