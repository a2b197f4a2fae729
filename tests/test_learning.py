"""GRPO visibly learns on CPU: the warm-started tiny model's pass rate on the easy problems goes up.

Fixed seeds throughout; the margin is several times the noise of the before/after estimate, so this fails
when the update is wrong (sign flipped, advantages zero, log-probs misaligned), not by chance.
"""

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from codefu_helpers.config import ExperimentConfig
from codefu_helpers.reward import compute_score
from codefu_helpers.rollout import SamplingParams
from codefu_helpers.tracking import RunLogger
from codefu_helpers.trainer import GRPOTrainer, pass_rate

from conftest import ROOT

pytestmark = pytest.mark.slow

STEPS = 12
EVAL_SAMPLES = 8
MARGIN = 0.15


def test_grpo_raises_the_pass_rate(easy_python_rows, warm_model_dir, tmp_path):
    rows, _ = easy_python_rows
    tokenizer = AutoTokenizer.from_pretrained(warm_model_dir)
    model = AutoModelForCausalLM.from_pretrained(warm_model_dir)
    params = SamplingParams(max_new_tokens=160, temperature=1.0, seed=2024)
    before = pass_rate(model, tokenizer, rows, EVAL_SAMPLES, params, compute_score)
    assert before["judge_errors"] == 0
    assert 0.05 <= before["pass_rate"] <= 0.7, f"the warm start should leave the policy partly right: {before}"

    cfg = ExperimentConfig.from_yaml(ROOT / "configs" / "ci_tiny.yaml").with_overrides([
        f"trainer.total_steps={STEPS}", "optim.lr=0.0001", "data.train_batch_size=4", "algorithm.ppo_mini_batch_size=2",
        "algorithm.ppo_micro_batch_size=8", "rollout.n=8", "data.max_response_length=160", "algorithm.use_kl_loss=false",
        "checkpoint.save_every=0", "model.device=cpu", f"trainer.output_dir={tmp_path}",
    ]).validate()
    torch.manual_seed(0)
    trainer = GRPOTrainer(cfg, rows, tmp_path, model=model, tokenizer=tokenizer,
                          logger=RunLogger(tmp_path, tracking_uri="none"))
    history = trainer.fit()
    assert len(history) == STEPS and sum(h["judge_errors"] for h in history) == 0
    after = pass_rate(trainer.model, tokenizer, rows, EVAL_SAMPLES, params, compute_score)
    print(f"pass rate {before['pass_rate']:.3f} -> {after['pass_rate']:.3f}, "
          f"reward {before['reward_mean']:.3f} -> {after['reward_mean']:.3f}")
    assert after["pass_rate"] >= before["pass_rate"] + MARGIN, (before, after)
    assert after["reward_mean"] > before["reward_mean"]
