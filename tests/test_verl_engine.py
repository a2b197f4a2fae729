"""trainer.engine=verl: the config rendered as verl 0.9 overrides, checked against verl itself.

Main environment: every key is mapped, inert for a stated reason, or an error (never dropped); the train CLI's
`--dry-run` prints the overrides and nothing else; the commands the SageMaker entry point runs.
.venv-verl (verl 0.9.1, `make verl-env`): this file doubles as the driver there (`python tests/test_verl_engine.py
CASE.json OUT.json`), which composes verl's own hydra config (verl/trainer/config/ppo_trainer.yaml) with every
override, runs verl's `validate_config` on it, and loads our reward through verl's `load_reward_manager`
(reward.custom_reward_function.path=pkg://codefu_helpers.reward) to score a batch. A missing .venv-verl fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VERL_PYTHON = REPO / ".venv-verl" / "bin" / "python"


# ------------------------------------------------------------------------------------------------------------
# driver: runs in .venv-verl


def _driver(case_path: str, out_path: str) -> None:

    import torch
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf
    from transformers import AutoTokenizer

    import verl
    from verl import DataProto
    from verl.trainer.ppo.reward import load_reward_manager
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config

    case = json.loads(Path(case_path).read_text())
    config_dir = str(Path(verl.__file__).parent / "trainer" / "config")
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        cfg = compose(config_name="ppo_trainer", overrides=case["overrides"])
    selected = {}
    for item in case["overrides"]:
        key = item.split("=", 1)[0].lstrip("+")
        selected[key] = OmegaConf.to_container(OmegaConf.create({"v": OmegaConf.select(cfg, key)}))["v"]
    validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    for section in ("actor_rollout_ref.rollout", "algorithm"):
        omega_conf_to_dataclass(OmegaConf.select(cfg, section))  # verl's typed configs accept the values

    tokenizer = AutoTokenizer.from_pretrained(case["tokenizer"])
    manager = load_reward_manager(cfg, tokenizer)
    scores, statuses = [], []
    for sample in case["samples"]:
        prompt = tokenizer(sample["prompt"], return_tensors="pt")["input_ids"][0][-32:]
        response = tokenizer(sample["response"], return_tensors="pt")["input_ids"][0]
        data = DataProto.from_dict(
            tensors={"prompts": prompt[None], "responses": response[None],
                     "attention_mask": torch.ones(1, len(prompt) + len(response), dtype=torch.long)},
            non_tensors={"data_source": [sample["data_source"]], "reward_model": [sample["reward_model"]],
                         "extra_info": [dict(sample["extra_info"])]})
        result = manager.loop.run_until_complete(manager.run_single(data))
        scores.append(float(result["reward_score"]))
        statuses.append(result["reward_extra_info"].get("status"))
    Path(out_path).write_text(json.dumps({
        "verl_version": verl.__version__, "selected": selected, "scores": scores, "statuses": statuses,
        "reward_manager": type(manager).__name__, "compute_score": getattr(manager.compute_score, "func", None)
        and f"{manager.compute_score.args[0].__module__}.{manager.compute_score.args[0].__name__}",
        "reward_kwargs": manager.compute_score.args[1] if hasattr(manager.compute_score, "args") else None}))


if __name__ == "__main__":
    _driver(sys.argv[1], sys.argv[2])
    sys.exit(0)


# ------------------------------------------------------------------------------------------------------------
# tests: run in the main environment

import pytest  # noqa: E402

STAGE2 = REPO / "configs" / "codefu7b_stage2.yaml"


def _verl_cfg(**overrides):
    from codefu_helpers.config import ExperimentConfig

    return ExperimentConfig.from_yaml(STAGE2).with_overrides({"trainer.engine": "verl", **overrides}).validate()


def _as_dict(lines):
    return dict(line.split("=", 1) for line in lines)


def test_the_flagship_config_renders_with_the_keys_verl_needs():
    from codefu_helpers.launch.verl_engine import verl_overrides

    cfg = _verl_cfg()
    lines = verl_overrides(cfg)
    rendered = _as_dict(lines)
    assert len(rendered) == len(lines), "each verl key is set once"
    assert rendered["algorithm.adv_estimator"] == "grpo"
    assert rendered["actor_rollout_ref.rollout.name"] == "vllm"
    assert rendered["reward.custom_reward_function.path"] == "'pkg://codefu_helpers.reward'"
    assert rendered["reward.custom_reward_function.name"] == "compute_score"
    assert "custom_reward_function.path" not in {k for k in rendered if not k.startswith("reward.")}
    assert rendered["+reward.custom_reward_function.reward_kwargs.reward_mode"] == "codefu_stage2"
    assert rendered["actor_rollout_ref.actor.ppo_mini_batch_size"] == str(cfg.algorithm.ppo_mini_batch_size)
    assert rendered["actor_rollout_ref.rollout.n"] == str(cfg.rollout.n)
    assert rendered["data.max_response_length"] == str(cfg.data.max_response_length)
    assert rendered["trainer.nnodes"] == "4" and rendered["trainer.n_gpus_per_node"] == "8"
    # precision: the actor trains float32 master weights with bf16 compute and float32 gradient reduction
    assert rendered["actor_rollout_ref.actor.fsdp_config.model_dtype"] == "fp32"
    assert rendered["+actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype"] == "bf16"
    assert rendered["+actor_rollout_ref.actor.fsdp_config.mixed_precision.reduce_dtype"] == "fp32"
    assert rendered["actor_rollout_ref.actor.fsdp_config.dtype"] == "bfloat16"
    assert rendered["actor_rollout_ref.ref.fsdp_config.model_dtype"] == "bf16"
    assert rendered["actor_rollout_ref.rollout.dtype"] == "bfloat16"
    assert rendered["trainer.logger"] == "[console,mlflow]"
    assert rendered["trainer.default_local_dir"] == str(Path(cfg.checkpoint_dir()).resolve())
    # data.tiers is applied by us before verl starts: verl reads the selected rows
    assert rendered["data.train_files"].endswith("verl_data/train.parquet")


@pytest.mark.parametrize("override, key", [
    ({"model.path": "tiny://qwen2", "data.max_prompt_length": 1024, "data.max_response_length": 1024}, "model.path"),
    ({"model.dtype": "float32"}, "model.dtype"),
    ({"algorithm.clip_ratio_c": None}, "algorithm.clip_ratio_c"),
    ({"optim.grad_clip": None}, "optim.grad_clip"),
    ({"algorithm.adv_epsilon": 1e-5}, "algorithm.adv_epsilon"),
    ({"rollout.fallback": "hf"}, "rollout.fallback"),
    ({"optim.warmup_steps": 3}, "optim.warmup_steps"),  # 8 updates per GRPO step: not a whole step
])
def test_a_key_verl_cannot_honour_is_an_error_naming_it(override, key):
    from codefu_helpers.config import ConfigError
    from codefu_helpers.launch.verl_engine import verl_overrides

    cfg = _verl_cfg(**override)
    with pytest.raises(ConfigError) as err:
        verl_overrides(cfg)
    assert any(p.startswith(key) for p in err.value.problems), err.value.problems


def test_a_config_key_the_renderer_does_not_know_is_an_error_not_dropped(monkeypatch):
    from codefu_helpers.config import ConfigError
    from codefu_helpers.launch import verl_engine

    known = verl_engine._leaf_keys
    monkeypatch.setattr(verl_engine, "_leaf_keys",
                        lambda cfg, prefix="": known(cfg, prefix) + ([] if prefix else ["rollout.some_new_knob"]))
    with pytest.raises(ConfigError, match="rollout.some_new_knob is not known to the verl renderer"):
        verl_engine.verl_overrides(_verl_cfg())


def test_dry_run_prints_the_overrides_one_per_line_and_nothing_else():
    from codefu_helpers.launch.verl_engine import verl_overrides

    proc = subprocess.run([sys.executable, "-m", "codefu_helpers.train", "--config", str(STAGE2), "--set",
                           "trainer.engine=verl", "--dry-run"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines == verl_overrides(_verl_cfg())
    assert all("=" in line and " " not in line.split("=", 1)[0] for line in lines)


def test_the_entry_point_runs_verl_main_ppo_with_the_overrides():
    from codefu_helpers.launch.verl_engine import verl_command, verl_overrides

    cfg = _verl_cfg()
    assert verl_command(cfg, python="/opt/py") == ["/opt/py", "-m", "verl.trainer.main_ppo", *verl_overrides(cfg)]


def test_tier_selection_is_written_for_verl_as_the_native_trainer_selects(tmp_path, python_split):
    from codefu_helpers.data import read_verl_parquet
    from codefu_helpers.launch.verl_engine import write_selected_train_rows
    from codefu_helpers.trainer import select_training_rows

    cfg = _verl_cfg(**{"data.train_path": str(python_split["train"]), "data.tiers": ["easy"],
                       "trainer.output_dir": str(tmp_path)})
    path = write_selected_train_rows(cfg)
    written = read_verl_parquet(path)
    expected = select_training_rows(read_verl_parquet(python_split["train"]), cfg.data)
    assert [r["extra_info"]["name"] for r in written] == [r["extra_info"]["name"] for r in expected]
    assert written and {r["extra_info"]["tier"] for r in written} == {"easy"}
    assert len(written) < len(read_verl_parquet(python_split["train"]))


@pytest.fixture(scope="module")
def verl_run(tmp_path_factory, python_split):
    """Our overrides and a scoring batch through verl 0.9.1 in .venv-verl (once per module)."""
    from codefu_helpers.data import load_problems, read_verl_parquet
    from codefu_helpers.launch.verl_engine import verl_overrides
    from codefu_helpers.reward import compute_score
    from codefu_helpers.tiny_model import resolve_model_path

    assert VERL_PYTHON.exists(), f"{VERL_PYTHON} is missing: run `make verl-env` (scripts/make_verl_env.sh)"
    tmp = tmp_path_factory.mktemp("verl")
    cfg = _verl_cfg(**{"data.train_path": str(python_split["train"]), "data.val_path": str(python_split["test"]),
                       "reward.mode": "stage1", "trainer.output_dir": str(tmp), "rollout.use_rollout_log_probs": True,
                       "algorithm.ppo_max_token_len_per_gpu": 40000})
    overrides = verl_overrides(cfg)
    gold = {p["name"]: p["solutions"]["solution"][p["solutions"]["language"].index(3)]
            for p in load_problems(REPO / "data" / "sample") if 3 in p["solutions"]["language"]}
    rows = [r for r in read_verl_parquet(python_split["train"]) if r["extra_info"]["name"] in gold][:3]
    responses = [f"Here it is.\n```python\n{gold[r['extra_info']['name']]}\n```" for r in rows]
    responses += ["```python\nprint('no')\n```", "I cannot solve this."]
    rows += rows[:2]
    samples = [{"prompt": r["prompt"][-1]["content"], "response": text, "data_source": r["data_source"],
                "reward_model": r["reward_model"], "extra_info": r["extra_info"]} for r, text in zip(rows, responses)]
    expected = [compute_score(s["data_source"], s["response"], s["reward_model"]["ground_truth"], s["extra_info"],
                              reward_mode="codefu_stage1") for s in samples]
    case = tmp / "case.json"
    case.write_text(json.dumps({"overrides": overrides, "tokenizer": str(resolve_model_path("tiny://qwen2")),
                                "samples": samples}, default=str))
    out = tmp / "out.json"
    env = dict(os.environ, PYTHONPATH=str(REPO), CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([str(VERL_PYTHON), __file__, str(case), str(out)], capture_output=True, text=True,
                          cwd=tmp, env=env, timeout=900)
    assert proc.returncode == 0, f"verl driver failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return overrides, json.loads(out.read_text()), expected


def test_verls_own_config_accepts_every_override(verl_run):
    overrides, result, _ = verl_run
    assert result["verl_version"] == "0.9.1"
    # composed without error (hydra rejects unknown keys) and every value landed where we put it
    for item in overrides:
        key, value = item.split("=", 1)
        got = result["selected"][key.lstrip("+")]
        text = value.strip("'")
        if isinstance(got, bool):
            assert text == str(got).lower(), key
        elif isinstance(got, list):
            assert text == "[" + ",".join(map(str, got)) + "]", key
        elif got is None:
            assert text == "null", key
        elif isinstance(got, (int, float)):
            assert float(text) == float(got), key
        else:
            assert text == got, key


def test_verls_reward_loader_loads_our_compute_score_and_scores_a_batch(verl_run):
    _, result, expected = verl_run
    assert result["compute_score"] == "codefu_helpers.reward.compute_score"
    assert result["reward_kwargs"] == {"reward_mode": "codefu_stage1"}
    assert result["scores"] == [e["score"] for e in expected]
    assert result["scores"][:3] == [1.0, 1.0, 1.0], "reference solutions must score 1 through verl"
    assert result["scores"][4] == -1.0 and result["statuses"][4] == "no_code"
    assert result["scores"][3] < 1.0
