"""The command line trains what notebook 03 trains: `python -m codefu_helpers.train --config configs/cpu_learn.yaml`
and the in-process trainer the notebook drives (`tutorial.smoke_config`, `prepare_training`, `GRPOTrainer.fit`) take
the same steps, sample for sample, and end on the same weights.

Whether that training *learns* is notebook 03's test (`tests/test_notebooks.py::test_03_grpo_smoke_test`: its pass
rate on the training problems must rise by LEARNING_MARGIN; the five-seed spread is in benchmarks/RESULTS.md). Before
issue 21 this file ran the whole config from the command line for ~5 minutes to show the same thing a second time;
the equality below keeps the command line on the notebook's path in a fraction of that.
"""

import json
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from codefu_helpers.config import ExperimentConfig
from codefu_helpers.tracking import read_metrics

from conftest import ROOT, SAMPLE

pytestmark = pytest.mark.slow

STEPS = 2
SAME = ("reward_mean", "pass_rate", "response_length_mean", "response_tokens", "samples", "truncated")
CLOSE = ("loss", "pg_loss", "kl", "entropy", "grad_norm", "pg_clipfrac", "advantage_abs_mean")


def test_the_cli_takes_notebook_03s_steps(python_split, tmp_path):
    from codefu_helpers.trainer import GRPOTrainer, prepare_training
    from codefu_helpers.tutorial import smoke_config

    out = tmp_path / "cli"
    cmd = [sys.executable, "-m", "codefu_helpers.train", "--config", str(ROOT / "configs" / "cpu_learn.yaml"),
           "--output-dir", str(out), "--set", f"data.train_path={python_split['train']}",
           f"data.val_path={python_split['test']}", f"data.raw_path={SAMPLE}", "tracking.backend=none",
           f"trainer.total_steps={STEPS}", f"trainer.test_freq={STEPS}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=1800)
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert f"step {STEPS}/{STEPS}" in proc.stdout and "GRPO starts from" in proc.stdout
    cli = read_metrics(out)
    assert [m["step"] for m in cli] == list(range(1, STEPS + 1)) and sum(m["judge_errors"] for m in cli) == 0
    assert "val/pass_at_1" in cli[-1] and cli[-1]["val/problems"] > 0  # held-out validation from the CLI
    record = json.loads((out / "model" / "codefu_training.json").read_text())

    # notebook 03's cells 4-13, on the same split, as the kernel runs them
    _, cfg = smoke_config("auto", "cpu", train_path=python_split["train"], dataset=str(SAMPLE),
                          output_dir=tmp_path / "notebook",
                          overrides={"trainer.total_steps": STEPS, "tracking.backend": "none"})
    assert cfg.to_dict()["algorithm"] == ExperimentConfig.from_yaml(out / "config.yaml").to_dict()["algorithm"]
    training = prepare_training(cfg)
    assert training.start_model == record["start_model"] and [r["reward_model"]["ground_truth"]["name"]
                                                               for r in training.rows] == record["train_problems"]
    trainer = GRPOTrainer(cfg, training.rows, tmp_path / "notebook", start_model=training.start_model)
    try:
        history = trainer.fit()
    finally:
        trainer.close()
    for ours, theirs in zip(history, cli):
        assert {k: ours[k] for k in SAME} == {k: theirs[k] for k in SAME}, ours["step"]
        for key in CLOSE:
            assert ours[key] == pytest.approx(theirs[key], rel=1e-4, abs=1e-6), (ours["step"], key)
    mine, cli_weights = load_file(tmp_path / "notebook" / "model" / "model.safetensors"), load_file(out / "model" / "model.safetensors")
    assert mine.keys() == cli_weights.keys()
    assert max((mine[k] - cli_weights[k]).abs().max().item() for k in mine) < 1e-5
    start = load_file(f"{record['start_model']}/model.safetensors")
    assert max((mine[k] - start[k]).abs().max().item() for k in mine if k in start) > 1e-4  # it trained
    assert torch.isfinite(torch.tensor([h["loss"] for h in history])).all()
