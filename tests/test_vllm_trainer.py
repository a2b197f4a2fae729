"""The trainer with rollout.backend=vllm on CPU: weights synced after every step and checked, from the CLI (two FSDP2
workers with an engine each, then one) and in process (a skipped sync is caught; truncated importance sampling with
the engine's log-probs)."""

import os
import subprocess
import sys

import pytest
import torch

from codefu_helpers import grpo
from codefu_helpers.config import ExperimentConfig
from codefu_helpers.data import read_verl_parquet
from codefu_helpers.tracking import read_metrics

from conftest import ROOT

pytestmark = pytest.mark.slow
EXACT = 1e-3  # issue 9: the largest |vLLM - trainer| log-prob difference on CPU float32


def train(out, flags, overrides):
    cmd = [sys.executable, "-m", "codefu_helpers.train", "--config", str(ROOT / "configs" / "ci_tiny.yaml"),
           "--output-dir", str(out), *flags, "--set", "rollout.backend=vllm", "rollout.cpu_kv_cache_gb=0.25",
           *overrides]
    env = {**os.environ, "CODEFU_RAY_DASHBOARD": "0"}  # a lighter Ray head for the two-worker run
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=1200, env=env)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def test_cli_trains_with_vllm_exact_every_step_on_two_workers_and_after_a_resume_on_one(tmp_path, easy_python_rows,
                                                                                        warm_model_dir, python_split):
    """Two FSDP2 workers, each with its own vLLM engine fed the gathered weights after every update; then the run
    resumes on one worker (one engine in the training process), started on the start model and synced. Validation on
    the whole held-out split after steps 2 and 3: its prompts exceed a CPU engine's per-step token budget, which
    crashed seeded sampling on CPU before issue 21 ("CPU Generator does not use offset")."""
    _, train_path = easy_python_rows
    overrides = [f"model.path={warm_model_dir}", f"data.train_path={train_path}", f"data.val_path={python_split['test']}",
                 "trainer.test_freq=2", "trainer.total_steps=3", "optim.lr=0.0002", "tracking.backend=none"]
    first = train(tmp_path, ["--stop-after-step", "2"], overrides + ["trainer.gpus_per_node=2"])
    assert "vllm rollout engine started in" in first and "step 2/3" in first
    # each worker's engine is colocated the way vLLM documents it: the external launcher, with the worker's rank
    for rank in (0, 1):
        assert f"(rank {rank} of 2, ExecutorWithExternalLauncher on cpu)" in first, first[-3000:]
    second = train(tmp_path, ["--resume"], overrides + ["trainer.gpus_per_node=1"])
    assert "saved by 2 worker(s), continuing on 1" in second and "step 3/3" in second
    metrics = read_metrics(tmp_path)
    assert [(m["step"], m["world_size"]) for m in metrics] == [(1, 2), (2, 2), (3, 1)]
    held_out = len(read_verl_parquet(python_split["test"]))
    assert [(m["step"], m["val/problems"], m["val/judge_errors"]) for m in metrics if "val/pass_at_1" in m] == \
        [(2, held_out, 0), (3, held_out, 0)]
    for m in metrics:
        assert m["rollout_backend"] == "vllm"
        # step 3 samples from an engine started on the start model, then synced to the resumed weights
        assert m["rollout_logprob_diff_max"] < EXACT, m
        assert 0 <= m["rollout_logprob_diff_mean"] <= m["rollout_logprob_diff_max"]
        assert m["time_weight_sync"] > 0 and m["response_tokens"] > 0


def _reward_by_length(data_source, solution_str, ground_truth, extra_info=None, reward_mode="linear"):
    # a reward that varies within every group without the judge: this test is about the engine, not the reward
    return {"score": (len(solution_str) % 7) / 7.0, "status": "wrong_answer"}


@pytest.fixture(scope="module")
def trainer(easy_python_rows, warm_model_dir, tmp_path_factory):
    from codefu_helpers.trainer import GRPOTrainer

    rows, _ = easy_python_rows
    cfg = ExperimentConfig.from_yaml(ROOT / "configs" / "ci_tiny.yaml").with_overrides({
        "model.path": str(warm_model_dir), "rollout.backend": "vllm", "rollout.cpu_kv_cache_gb": 0.25,
        "optim.lr": 5e-4, "algorithm.use_kl_loss": False, "trainer.total_steps": 4, "data.val_path": None, "trainer.test_freq": 0,
        "tracking.backend": "none"}).validate()
    trainer = GRPOTrainer(cfg, rows, tmp_path_factory.mktemp("vllm_trainer"), compute_score=_reward_by_length)
    yield trainer
    trainer.rollout.close()


def test_a_skipped_weight_sync_shows_in_the_next_steps_log_prob_gap(trainer, monkeypatch):
    assert trainer.rollout.backend == "vllm"
    first = trainer.step(0)  # samples from the start weights, then the engine is synced
    assert first["rollout_logprob_diff_max"] < EXACT and first["optimizer_steps"] == 2
    with monkeypatch.context() as patch:
        patch.setattr(trainer.rollout, "sync_weights", lambda model: None)  # the bug this metric exists to catch
        trainer.step(1)
    stale = trainer.step(2)  # sampled by an engine one update behind
    assert stale["rollout_logprob_diff_max"] > 50 * EXACT, stale
    assert stale["rollout_logprob_diff_mean"] > EXACT


def test_truncated_importance_sampling_weights_use_the_engine_log_probs(trainer, monkeypatch):
    monkeypatch.setattr(trainer.cfg.rollout, "use_rollout_log_probs", True)
    metrics = trainer.step(3)  # the engine is in sync again (step 2 synced it)
    assert metrics["rollout_logprob_diff_max"] < EXACT
    # in sync, exp(old - rollout) is 1 up to float noise: weights ~1, none capped
    assert metrics["rollout_is_weight_mean"] == pytest.approx(1.0, abs=1e-3)
    assert metrics["rollout_is_capped_frac"] == 0.0


def test_validation_samples_with_the_synced_vllm_engine(trainer, easy_python_rows, monkeypatch):
    from codefu_helpers.evaluate import pass_rate
    from codefu_helpers.trainer import sampling_params

    rows, _ = easy_python_rows
    asked = []
    generate = trainer.rollout.generate
    monkeypatch.setattr(trainer.rollout, "generate", lambda prompts, *a, **k: asked.append(len(prompts)) or
                        generate(prompts, *a, **k))
    monkeypatch.setattr(trainer, "val_rows", rows[:3])
    logged = trainer.validate(step=4)
    assert sum(asked) == 3 and logged["val/problems"] == 3  # the engine generated, not HF
    # the same evaluation made directly (same engine and weights, same seeded sampling parameters)
    params = sampling_params(trainer.cfg, seed=trainer.seed * 100_003 + 50_000 + 4)
    direct = pass_rate(trainer.model, trainer.tokenizer, rows[:3], trainer.cfg.trainer.val_samples, params,
                       engine=trainer.rollout)
    assert logged["val/pass_at_1"] == pytest.approx(direct["pass_rate"], nan_ok=True)
    assert logged["val/judge_errors"] == direct["judge_errors"] == 0


def test_scaling_advantages_weights_the_policy_loss_token_by_token():
    """The trainer applies truncated IS by multiplying token advantages by w > 0: the clipped surrogate (dual-clip
    included) is positively homogeneous in the advantage, so each token's policy loss is multiplied by w."""
    generator = torch.Generator().manual_seed(0)
    log_prob = torch.randn(64, 1, generator=generator)
    old = log_prob + 0.6 * torch.randn(64, 1, generator=generator)  # ratios far outside the clip range too
    adv = 2 * torch.randn(64, 1, generator=generator)
    weight = 0.1 + 2 * torch.rand(64, 1, generator=generator)
    mask = torch.ones(1, 1)
    for i in range(64):
        def loss(a):
            value, _ = grpo.policy_loss(log_prob[i:i + 1], old[i:i + 1], a, mask, clip_ratio_c=3.0,
                                        total_tokens=1)
            return value
        torch.testing.assert_close(loss(adv[i:i + 1] * weight[i:i + 1]), weight[i, 0] * loss(adv[i:i + 1]))


def test_evaluation_cli_generates_with_vllm(tmp_path):
    cmd = [sys.executable, "-m", "codefu_helpers.evaluate", "--dataset", "data/sample", "--language", "python",
           "--model", "tiny://qwen2", "--n", "2", "--k", "1", "--max-new-tokens", "16", "--max-problems", "2",
           "--backend", "vllm", "--no-progress", "--bootstrap", "10", "--output-dir", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    import pandas as pd

    samples = pd.read_parquet(tmp_path / "samples.parquet")
    assert len(samples) == 4 and samples["problem_id"].nunique() == 2
    assert set(samples["finish_reason"]) <= {"stop", "length"} and samples["length"].max() <= 16
    assert samples["judge_error"].sum() == 0
