"""The supervised warm start: the reference solutions' probability it measures, and the stop at a target."""

import json
import math
from pathlib import Path

import pytest
import torch

from conftest import ROOT, SAMPLE


def test_reference_probability_is_the_product_of_each_solutions_token_probabilities(warm_model_dir, easy_python_rows):
    """Batched, padded and projected on the response positions only, against one unpadded full forward per pair."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from codefu_helpers.data import load_problems
    from codefu_helpers.sft import _encode_pairs, reference_probabilities, sft_pairs

    rows, _ = easy_python_rows
    model = AutoModelForCausalLM.from_pretrained(warm_model_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(warm_model_dir)
    examples = _encode_pairs(tokenizer, sft_pairs(rows, load_problems(SAMPLE)))
    measured = reference_probabilities(model, examples, tokenizer.pad_token_id)
    direct = []
    with torch.no_grad():
        for prompt, response in examples:
            logits = model(torch.tensor([prompt + response])).logits[0].double()
            logp = torch.log_softmax(logits, dim=-1)[len(prompt) - 1:-1].gather(1, torch.tensor(response)[:, None])
            direct.append(math.exp(float(logp.sum())))
    assert len(measured) == len(rows)
    assert measured == pytest.approx(direct, rel=1e-3, abs=1e-12)
    assert 0.01 < sum(direct) / len(direct) < 0.99  # a warm model: neither nothing nor everything is learned yet


def test_warm_start_stops_at_the_first_step_whose_mean_probability_reaches_the_target(warm_model_dir, easy_python_rows):
    """The same seed and recipe as the fixture's 80-step warm start (no target), stopped at a target that its record
    crosses at some step k: the stopped run takes exactly k steps, the same ones, and records what it reached."""
    from codefu_helpers.sft import warm_started_model

    rows, _ = easy_python_rows
    full = json.loads((warm_model_dir / "warm_start.json").read_text())
    p = full["reference_p"]
    assert len(p) == len(full["losses"]) == 80 and "reached_target" not in full
    k = next((i + 1 for i, v in enumerate(p) if v >= 0.05), None)
    assert k is not None and k > 1, f"the 80-step warm start never reached a mean probability of 0.05: {p}"
    target = (max(p[:k - 1]) + p[k - 1]) / 2  # midway: float noise between processes cannot move the stop
    stopped_dir = warm_started_model("tiny://qwen2", rows, str(SAMPLE), target_p=target)
    stopped = json.loads((stopped_dir / "warm_start.json").read_text())
    assert len(stopped["losses"]) == k
    assert stopped["losses"] == pytest.approx(full["losses"][:k], rel=1e-4)
    assert stopped["reached_target"] is True and stopped["reference_p"][-1] >= target > max(stopped["reference_p"][:-1])
    by_problem = stopped["reference_p_by_problem"]
    assert sorted(by_problem) == sorted(r["reward_model"]["ground_truth"]["name"] for r in rows)
    assert sum(by_problem.values()) / len(by_problem) == pytest.approx(stopped["reference_p"][-1], rel=1e-9)
    assert stopped["key"]["target_p"] == target and stopped_dir != warm_model_dir


def test_a_target_never_reached_takes_every_step_and_says_so(easy_python_rows, capfd):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from codefu_helpers.data import load_problems
    from codefu_helpers.sft import sft_pairs, supervised_warm_start
    from codefu_helpers.tiny_model import resolve_model_path

    rows, _ = easy_python_rows
    base = resolve_model_path("tiny://qwen2")
    model, tokenizer = AutoModelForCausalLM.from_pretrained(base), AutoTokenizer.from_pretrained(base)
    record = supervised_warm_start(model, tokenizer, sft_pairs(rows, load_problems(SAMPLE)), steps=3, target_p=0.9)
    assert len(record["losses"]) == len(record["reference_p"]) == 3
    assert record["reached_target"] is False and max(record["reference_p"]) < 0.9
    # its progress: a text bar on stderr with the step count and the probability against the target
    err = capfd.readouterr().err
    assert "warm start" in err and "3/3" in err and f"p={record['reference_p'][-1]:.3f}/0.9" in err, err[-500:]


def test_the_trainer_says_when_the_warm_start_target_was_not_reached(python_split, capsys, tmp_path, monkeypatch):
    """model.warm_start_target_p is honoured through the config: two steps cannot reach 0.9, and prepare_training
    says so, naming both keys, while GRPO still gets the model the two steps made."""
    from codefu_helpers.config import ExperimentConfig
    from codefu_helpers.trainer import prepare_training

    monkeypatch.setenv("CODEFU_CACHE", str(tmp_path / "cache"))  # a build of its own, not a cached one
    cfg = ExperimentConfig.from_yaml(ROOT / "configs" / "cpu_learn.yaml").with_overrides({
        "data.train_path": str(python_split["train"]), "data.raw_path": str(SAMPLE), "trainer.test_freq": 0,
        "data.val_path": None,
        "model.warm_start_steps": 2, "model.warm_start_target_p": 0.9})
    cfg.validate()
    training = prepare_training(cfg)
    record = json.loads((Path(training.start_model) / "warm_start.json").read_text())
    assert record["reached_target"] is False and len(record["losses"]) == 2 and record["key"]["target_p"] == 0.9
    said = capsys.readouterr().out
    assert "model.warm_start_target_p=0.9 was not reached in model.warm_start_steps=2 steps" in said
