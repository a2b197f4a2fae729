"""Training on function-call problems (HumanEval): `evaluate.harness_training_row` makes a trainer row of a harness
problem, `evaluate.compute_harness_score` rewards a response to it through the same sandboxed harness the evaluation
uses, and the trainer takes both (benchmarks/heldout_humaneval.py trains SmolLM2 this way)."""

import json
from pathlib import Path

import pytest

from codefu_helpers.config import ExperimentConfig
from codefu_helpers.eval_datasets import load_humaneval
from codefu_helpers.evaluate import (compute_harness_score, harness_problem, harness_training_row,
                                     judge_response)
from codefu_helpers.sandbox import Judge

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def problems():
    return load_humaneval(task_ids=["HumanEval/0", "HumanEval/2"])


@pytest.fixture(scope="module")
def judge():
    with Judge() as j:
        yield j


def fenced(code: str) -> str:
    return f"Here it is:\n```python\n{code}\n```\n"


def responses(problem) -> dict[str, str]:
    name = problem.entry_point
    return {
        "solved": fenced(problem.solutions[0][1]),
        "wrong": fenced(f"def {name}(*args):\n    return None\n"),
        "raises": fenced(f"def {name}(*args):\n    raise ValueError('no')\n"),
        "syntax": fenced(f"def {name}(:\n"),
        "slow": fenced(f"def {name}(*args):\n    while True:\n        pass\n"),
        "no code": "I would loop over the numbers.",
        "not python": f"```cpp\nint {name}() {{ return 0; }}\n```",
    }


# reward per response under each mode: (linear and stage 1 alike on a one-test harness, binary)
EXPECTED = {"solved": (1.0, 1.0), "wrong": (0.0, 0.0), "raises": (0.0, 0.0), "syntax": (-0.5, 0.0),
            "slow": (0.0, 0.0), "no code": (-1.0, 0.0), "not python": (-1.0, 0.0)}
STATUS = {"solved": "accepted", "wrong": "failed", "raises": "failed", "syntax": "compile_error", "slow": "time_limit",
          "no code": "no_code", "not python": "no_code"}


def test_a_harness_row_round_trips_to_the_problem_it_came_from(problems):
    for problem in problems:
        row = harness_training_row(problem)
        truth = row["reward_model"]["ground_truth"]
        assert row["prompt"] == problem.prompt and row["extra_info"]["name"] == truth["name"] == problem.problem_id
        again = harness_problem(json.loads(json.dumps(truth)))  # as a parquet or JSON column would give it back
        for field in ("harness", "entry_point", "prompt_code", "test_code", "time_limit", "memory_limit_bytes"):
            assert getattr(again, field) == getattr(problem, field), field
    with pytest.raises(ValueError, match="lacks \\['test_code'\\]"):
        harness_problem({k: v for k, v in truth.items() if k != "test_code"})


def test_rewards_follow_the_harness_verdict_in_every_mode(problems, judge):
    for problem in problems:
        truth = harness_training_row(problem)["reward_model"]["ground_truth"]
        for kind, text in responses(problem).items():
            linear = compute_harness_score("harness", text, truth, reward_mode="linear", judge=judge)
            stage1 = compute_harness_score("harness", text, truth, reward_mode="stage1", judge=judge)
            binary = compute_harness_score("harness", text, truth, reward_mode="binary", judge=judge)
            assert (linear["score"], binary["score"]) == EXPECTED[kind], (problem.problem_id, kind, linear, binary)
            assert stage1["score"] == linear["score"] and linear["status"] == STATUS[kind], (kind, linear)
            assert not linear["judge_error"]
            # the evaluation's verdict on the same response agrees with the reward's
            verdict = judge_response(judge, problem, text).verdict
            assert (verdict == "OK") == (linear["status"] == "accepted"), (kind, verdict)


def test_a_broken_check_is_a_judge_error_never_a_wrong_answer(problems, judge):
    truth = dict(harness_training_row(problems[0])["reward_model"]["ground_truth"], test_code="def check(:\n")
    out = compute_harness_score("harness", responses(problems[0])["solved"], truth, reward_mode="linear", judge=judge)
    assert out["judge_error"] and out["status"] == "judge_error" and out["score"] == 0.0, out


@pytest.mark.slow
def test_the_trainer_learns_from_harness_rewards(problems, tmp_path):
    """A GRPO step of the tiny model on two HumanEval rows: every sample's reward is what compute_harness_score
    gives its text for its own problem, and the weights move exactly when a group's rewards differ (an all-equal
    group has no advantage, so no gradient)."""
    import torch

    from codefu_helpers.trainer import GRPOTrainer

    cfg = ExperimentConfig.from_yaml(ROOT / "configs" / "ci_tiny.yaml").with_overrides([
        "data.train_batch_size=2", "algorithm.ppo_mini_batch_size=2", "rollout.n=2", "algorithm.ppo_micro_batch_size=2",
        "algorithm.use_kl_loss=false", "trainer.test_freq=0", "data.val_path=null", "tracking.backend=none",
        "checkpoint.save_every=0", "checkpoint.resume=false", "optim.lr=0.01", "trainer.total_steps=2"]).validate()
    rows = [harness_training_row(p) for p in problems]
    scored = []

    def recording(*args, **kwargs):
        out = compute_harness_score(*args, **kwargs)
        scored.append((args[1], out["score"]))
        return out

    trainer = GRPOTrainer(cfg, rows, tmp_path, compute_score=recording)
    try:
        start = {k: v.clone() for k, v in trainer.model.state_dict().items()}
        trainer.step(0)
        last = trainer.last_step
        texts = [s.text for s in last["samples"]]
        with Judge() as judge:
            direct = [compute_harness_score("harness", t, last["rows"][g]["reward_model"]["ground_truth"],
                                            reward_mode=cfg.reward.mode, judge=judge)["score"]
                      for t, g in zip(texts, last["group_ids"])]
        assert [r.score for r in last["results"]] == direct
        assert sorted(t for t, _ in scored) == sorted(texts) and not any(r.judge_error for r in last["results"])
        spread = any(len({d for d, g in zip(direct, last["group_ids"]) if g == group}) > 1
                     for group in set(last["group_ids"]))
        moved = any(not torch.equal(start[k], v) for k, v in trainer.model.state_dict().items())
        assert moved == spread, (direct, last["group_ids"])
    finally:
        trainer.close()
