"""ExperimentConfig: every shipped config loads and validates, YAML round-trips, and mistakes are reported
with the field, the value and what to do."""

import dataclasses
import typing
from pathlib import Path

import pytest

from codefu_helpers import grpo
from codefu_helpers.config import AlgorithmConfig, ConfigError, ExperimentConfig

CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.yaml"))


def _problems(cfg_or_callable) -> list[str]:
    with pytest.raises(ConfigError) as info:
        cfg_or_callable() if callable(cfg_or_callable) else cfg_or_callable.validate()
    return info.value.problems


def _only_problem(cfg: ExperimentConfig) -> str:
    problems = _problems(cfg)
    assert len(problems) == 1, problems
    return problems[0]


def _cfg(**sections) -> ExperimentConfig:
    """The default config with some fields replaced: _cfg(algorithm=dict(ppo_epochs=0))."""
    return ExperimentConfig().with_overrides(
        {f"{section}.{key}": value for section, fields in sections.items() for key, value in fields.items()})


# ----------------------------------------------------------------------------------------------------
# Shipped configs


def test_the_expected_configs_ship():
    assert {p.name for p in CONFIGS} >= {"ci_tiny.yaml", "single_gpu_qwen2.5_coder_0.5b.yaml",
                                         "codefu7b_stage1.yaml", "codefu7b_stage2.yaml"}


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_shipped_config_loads_validates_and_round_trips(path, tmp_path):
    cfg = ExperimentConfig.from_yaml(path).validate()
    assert cfg.name == path.stem
    assert ExperimentConfig.from_yaml(_write(cfg, tmp_path)) == cfg


def _write(cfg, tmp_path) -> Path:
    path = tmp_path / "nested" / "copy.yaml"
    text = cfg.to_yaml(path)
    assert path.read_text() == text
    return path


def test_ci_config_runs_on_cpu_with_the_tiny_model_and_several_mini_batches():
    cfg = ExperimentConfig.from_yaml(CONFIGS[0].with_name("ci_tiny.yaml"))
    assert cfg.model.path == "tiny://qwen2" and cfg.model.device == "cpu" and cfg.rollout.backend == "hf"
    assert cfg.mini_batches_per_step >= 2 and cfg.micro_batches_per_mini_batch >= 2


def test_codefu_configs_carry_the_model_card_numbers():
    stage1 = ExperimentConfig.from_yaml(CONFIGS[0].with_name("codefu7b_stage1.yaml"))
    stage2 = ExperimentConfig.from_yaml(CONFIGS[0].with_name("codefu7b_stage2.yaml"))
    assert stage1.model.path == "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B"
    assert (stage1.data.train_batch_size, stage1.algorithm.ppo_mini_batch_size, stage1.rollout.n) == (8, 8, 5)
    assert stage1.reward.mode == "stage1" and stage1.trainer.nnodes == 1
    assert (stage2.data.train_batch_size, stage2.algorithm.ppo_mini_batch_size, stage2.rollout.n) == (256, 32, 8)
    assert stage2.reward.mode == "linear" and stage2.trainer.nnodes == 4
    assert stage2.mini_batches_per_step >= 4  # the card's fix for the collapse: mini-batch >= 4x smaller
    assert stage1.data.max_response_length > stage2.data.max_response_length  # 28K vs 20K on the card


# ----------------------------------------------------------------------------------------------------
# Loading


def test_defaults_validate_and_yaml_round_trip(tmp_path):
    cfg = ExperimentConfig()
    assert cfg.validate() is cfg
    assert ExperimentConfig.from_yaml(_write(cfg, tmp_path)) == cfg


def test_partial_yaml_keeps_defaults(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("name: partial\nalgorithm:\n  kl_coef: 0.05\n")
    cfg = ExperimentConfig.from_yaml(path)
    assert cfg.algorithm.kl_coef == 0.05 and cfg.algorithm.clip_ratio_low == AlgorithmConfig().clip_ratio_low


def test_unknown_key_is_named_with_a_suggestion(tmp_path):
    path = tmp_path / "typo.yaml"
    path.write_text("algorithm:\n  kl_cef: 0.01\n")
    (problem,) = _problems(lambda: ExperimentConfig.from_yaml(path))
    assert "unknown key 'algorithm.kl_cef'" in problem and "did you mean 'algorithm.kl_coef'?" in problem
    assert str(path) in problem


def test_unknown_section_and_key_in_the_wrong_section():
    problems = _problems(lambda: ExperimentConfig.from_dict({"algo": {}, "rollout": {"lr": 1e-6}}))
    assert any("unknown key 'algo'" in p and "did you mean 'algorithm'?" in p for p in problems)
    assert any("unknown key 'rollout.lr'" in p and "did you mean 'optim.lr'?" in p for p in problems)


def test_all_loading_problems_are_reported_together():
    problems = _problems(lambda: ExperimentConfig.from_dict(
        {"rollout": {"nn": 4}, "algorithm": {"ppo_epochs": "two"}, "model": {"dtype": "fp8"}}))
    assert len(problems) == 3
    assert any("algorithm.ppo_epochs='two' (str)" in p and "expected an integer" in p for p in problems)
    assert any("model.dtype='fp8'" in p and "'bfloat16'" in p for p in problems)


@pytest.mark.parametrize("raw, fragment", [
    ({"rollout": {"n": 4.5}}, "rollout.n=4.5 (float) in config: expected an integer"),
    ({"rollout": {"n": True}}, "rollout.n=True (bool) in config: expected an integer"),
    ({"algorithm": {"use_kl_loss": "yes please"}},
     "algorithm.use_kl_loss='yes please' (str) in config: expected true/false"),
    ({"algorithm": {"clip_ratio_c": "off"}}, "algorithm.clip_ratio_c='off' (str) in config: expected a number or null"),
    ({"model": "gpt"}, "model must be a mapping"),
])
def test_wrong_types_name_the_field_and_value(raw, fragment):
    (problem,) = _problems(lambda: ExperimentConfig.from_dict(raw))
    assert fragment in problem


def test_yaml_scientific_notation_without_a_dot_is_a_number(tmp_path):
    path = tmp_path / "lr.yaml"
    path.write_text("optim:\n  lr: 1e-6\nalgorithm:\n  clip_ratio_c: null\n")  # PyYAML reads 1e-6 as a string
    cfg = ExperimentConfig.from_yaml(path)
    assert cfg.optim.lr == 1e-6 and isinstance(cfg.optim.lr, float) and cfg.algorithm.clip_ratio_c is None


def test_integers_are_accepted_for_float_fields():
    assert ExperimentConfig.from_dict({"rollout": {"temperature": 1}}).rollout.temperature == 1.0


def test_broken_files_are_reported(tmp_path):
    assert "does not exist" in _problems(lambda: ExperimentConfig.from_yaml(tmp_path / "nope.yaml"))[0]
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: [unclosed\n")
    assert "is not valid YAML" in _problems(lambda: ExperimentConfig.from_yaml(bad))[0]
    bad.write_text("- a list\n")
    assert "must hold a mapping of sections" in _problems(lambda: ExperimentConfig.from_yaml(bad))[0]


def test_overrides_parse_values_and_reject_unknown_keys():
    cfg = ExperimentConfig().with_overrides(["algorithm.kl_coef=0.05", "algorithm.clip_ratio_c=null",
                                             "rollout.backend=vllm", "trainer.total_steps=7"])
    assert cfg.algorithm.kl_coef == 0.05 and cfg.algorithm.clip_ratio_c is None
    assert cfg.rollout.backend == "vllm" and cfg.trainer.total_steps == 7
    assert ExperimentConfig().algorithm.kl_coef == 0.001  # the original is untouched
    (problem,) = _problems(lambda: ExperimentConfig().with_overrides({"algorithm.klcoef": 1}))
    assert "override key 'algorithm.klcoef'" in problem and "did you mean 'algorithm.kl_coef'?" in problem
    assert "section.key=value" in _problems(lambda: ExperimentConfig().with_overrides(["kl_coef"]))[0]
    assert "override key 'algorithm'" in _problems(lambda: ExperimentConfig().with_overrides({"algorithm": 1}))[0]


# ----------------------------------------------------------------------------------------------------
# Validation messages


def test_mini_batch_must_divide_the_batch_and_suggests_divisors():
    cfg = _cfg(data=dict(train_batch_size=256), algorithm=dict(ppo_mini_batch_size=48))
    problem = _only_problem(cfg)
    assert problem.startswith("algorithm.ppo_mini_batch_size=48 must divide data.train_batch_size=256")
    assert "use 32 or 64" in problem


def test_micro_batch_must_divide_each_devices_share():
    cfg = _cfg(data=dict(train_batch_size=8), algorithm=dict(ppo_mini_batch_size=8, ppo_micro_batch_size=3),
               rollout=dict(n=5), trainer=dict(gpus_per_node=8))
    problem = _only_problem(cfg)
    assert "algorithm.ppo_micro_batch_size=3 must divide the 5 samples each device gets" in problem
    assert "use 1 or 5" in problem


def test_mini_batch_samples_must_split_over_devices():
    cfg = _cfg(data=dict(train_batch_size=6), algorithm=dict(ppo_mini_batch_size=3), rollout=dict(n=3),
               trainer=dict(nnodes=2, gpus_per_node=2))
    assert "3 x 3 = 9 samples must split evenly over the 4 devices" in _only_problem(cfg)


@pytest.mark.parametrize("sections, fragment", [
    (dict(rollout=dict(n=1)), "rollout.n=1: GRPO compares samples within a group"),
    (dict(rollout=dict(temperature=0.0)), "rollout.temperature=0.0 must be > 0"),
    (dict(rollout=dict(top_p=1.5)), "rollout.top_p=1.5 must be in (0, 1]"),
    (dict(rollout=dict(generation_batch_size=0)), "rollout.generation_batch_size=0 must be >= 1"),
    (dict(rollout=dict(tensor_parallel_size=3)),
     "rollout.tensor_parallel_size=3 must be >= 1 and divide the 1 devices"),
    (dict(algorithm=dict(clip_ratio_c=1.0)), "algorithm.clip_ratio_c=1.0 must be > 1"),
    (dict(algorithm=dict(clip_ratio_low=1.2)), "algorithm.clip_ratio_low=1.2 must be in (0, 1)"),
    (dict(algorithm=dict(clip_ratio_high=0.0)), "algorithm.clip_ratio_high=0.0 must be > 0"),
    (dict(algorithm=dict(kl_coef=-0.1)), "algorithm.kl_coef=-0.1 must be >= 0"),
    (dict(algorithm=dict(entropy_coef=-0.01)), "algorithm.entropy_coef=-0.01 must be >= 0"),
    (dict(algorithm=dict(ppo_epochs=0)), "algorithm.ppo_epochs=0 must be >= 1"),
    (dict(algorithm=dict(ppo_mini_batch_size=0)), "algorithm.ppo_mini_batch_size=0 must be >= 1"),
    (dict(optim=dict(lr=0.0)), "optim.lr=0.0 must be > 0"),
    (dict(optim=dict(grad_clip=0.0)), "optim.grad_clip=0.0 must be > 0, or null"),
    (dict(optim=dict(warmup_steps=-1)), "optim.warmup_steps=-1 must be >= 0"),
    (dict(reward=dict(num_workers=-1)), "reward.num_workers=-1 must be >= 0"),
    (dict(algorithm=dict(ppo_max_token_len_per_gpu=100)), "algorithm.ppo_max_token_len_per_gpu=100 is below the longest"),
    (dict(trainer=dict(total_steps=0)), "trainer.total_steps=0 must be >= 1, or null"),
    (dict(trainer=dict(engine="verl")), "trainer.engine='verl' with rollout.backend='hf'"),
    (dict(checkpoint=dict(save_every=-5)), "checkpoint.save_every=-5 must be >= 0"),
    (dict(model=dict(device="gpu0")), "model.device='gpu0' is not a device"),
    (dict(model=dict(dtype="float16", device="cpu")), "model.dtype='float16' with model.device='cpu'"),
    (dict(model=dict(path="tiny://llama")), "model.path='tiny://llama' is not a known tiny model"),
    (dict(data=dict(max_prompt_length=2000, max_response_length=100)), "= 2100 exceeds the tiny model's 2048"),
    (dict(data=dict(max_response_length=0)), "data.max_response_length=0 must be >= 1"),
    (dict(tracking=dict(experiment=" ")), "tracking.experiment='' is empty"),
])
def test_validation_names_field_value_and_remedy(sections, fragment):
    assert fragment in _only_problem(_cfg(**sections))


def test_choices_are_listed_for_a_bad_choice_set_in_python():
    cfg = ExperimentConfig()
    cfg.algorithm.loss_agg_mode = "sequence-mean"
    cfg.reward.mode = "exp"
    problems = _problems(cfg)
    assert any("algorithm.loss_agg_mode='sequence-mean'" in p and "'seq-mean-token-sum-norm'" in p for p in problems)
    assert any("reward.mode='exp'" in p and "'stage1'" in p for p in problems)


def test_every_problem_is_reported_at_once():
    cfg = _cfg(rollout=dict(n=1, temperature=0.0), optim=dict(lr=-1.0))
    assert len(_problems(cfg)) == 3


def test_python_assigned_numeric_string_is_caught_by_validate():
    cfg = ExperimentConfig()
    cfg.optim.lr = "1e-6"
    assert "optim.lr='1e-6' (str): expected a number" in _only_problem(cfg)


def test_config_choices_match_the_grpo_module():
    hints = typing.get_type_hints(AlgorithmConfig)
    assert set(typing.get_args(hints["loss_agg_mode"])) == set(grpo.LOSS_AGG_MODES)
    assert set(typing.get_args(hints["kl_estimator"])) == set(grpo.KL_ESTIMATORS)
    assert typing.get_args(hints["loss_mode"]) == grpo.POLICY_LOSS_MODES
    from codefu_helpers.config import RolloutConfig

    assert typing.get_args(typing.get_type_hints(RolloutConfig)["rollout_is"]) == grpo.ROLLOUT_IS_MODES


_IS = {"rollout.backend": "vllm", "rollout.use_rollout_log_probs": True}


@pytest.mark.parametrize("overrides, fragment", [
    ({"rollout.rollout_is": "sequence"}, "rollout.rollout_is='sequence' picks how the engine's log-probs weight"),
    ({"rollout.backend": "vllm", "rollout.rollout_is": "mask"}, "only with rollout.use_rollout_log_probs=true"),
    ({**_IS, "rollout.rollout_is_threshold_lower": 0.2}, "rollout.rollout_is_threshold_lower=0.2 is read only with "
                                                         "rollout.rollout_is=mask"),
    ({**_IS, "rollout.rollout_is": "mask", "rollout.rollout_is_threshold_lower": 1.5},
     "rollout.rollout_is_threshold_lower=1.5 must be in (0, 1]"),
    ({**_IS, "rollout.rollout_is": "mask", "rollout.rollout_is_threshold_lower": 0.0},
     "rollout.rollout_is_threshold_lower=0.0 must be in (0, 1]"),
    ({"algorithm.loss_mode": "gspo", "algorithm.clip_ratio_c": 10.0},
     "algorithm.clip_ratio_c=10.0 is read only by algorithm.loss_mode=vanilla (GSPO has no dual-clip)"),
    ({"algorithm.loss_mode": "gspo", "algorithm.clip_ratio_c": None}, "algorithm.clip_ratio_c=None is read only by"),
], ids=["sequence-without-log-probs", "mask-without-log-probs", "lower-without-mask", "lower-above-1", "lower-zero",
        "gspo-dual-clip", "gspo-no-dual-clip"])
def test_loss_mode_and_rollout_is_keys_that_would_be_ignored_or_make_no_sense_are_refused(overrides, fragment):
    for engine in ("native", "verl"):  # before anything loads, whichever engine runs
        cfg = ExperimentConfig().with_overrides({"rollout.backend": "vllm", **overrides, "trainer.engine": engine})
        assert fragment in _only_problem(cfg), engine


def test_rollout_is_needs_the_engines_log_probs_so_hf_refuses_it():
    from codefu_helpers.config import native_trainer_problems

    hf = ExperimentConfig().with_overrides({"rollout.use_rollout_log_probs": True, "rollout.rollout_is": "mask"})
    problems = native_trainer_problems(hf)
    assert any("rollout.rollout_is='mask' applies to vLLM only" in p for p in problems), problems
    assert any("rollout.use_rollout_log_probs=True applies to vLLM only" in p for p in problems), problems
    assert set(problems) <= set(_problems(hf))


@pytest.mark.parametrize("overrides", [
    {"algorithm.loss_mode": "gspo", "algorithm.clip_ratio_low": 3e-4, "algorithm.clip_ratio_high": 4e-4,
     "algorithm.loss_agg_mode": "seq-mean-token-mean"},
    {**_IS, "rollout.rollout_is": "sequence", "rollout.rollout_is_cap": 5.0},
    {**_IS, "rollout.rollout_is": "mask", "rollout.rollout_is_threshold_lower": 0.8, "rollout.rollout_is_cap": 1.5},
    {**_IS, "algorithm.loss_mode": "gspo", "rollout.rollout_is": "token"},
], ids=["gspo-paper", "sequence", "mask", "gspo-token-is"])
def test_loss_mode_and_rollout_is_combinations_that_run_are_accepted(overrides):
    for engine in ("native", "verl"):
        ExperimentConfig().with_overrides({"rollout.backend": "vllm", **overrides, "trainer.engine": engine}).validate()


def test_derived_values_and_paths(tmp_path):
    cfg = _cfg(data=dict(train_batch_size=16), rollout=dict(n=8),
               algorithm=dict(ppo_mini_batch_size=4, ppo_micro_batch_size=4), trainer=dict(gpus_per_node=2,
                                                                                         output_dir=str(tmp_path)))
    assert (cfg.world_size, cfg.samples_per_step, cfg.mini_batches_per_step, cfg.micro_batches_per_mini_batch) == (
        2, 128, 4, 4)
    assert cfg.checkpoint_dir() == tmp_path / "checkpoints"
    assert cfg.tracking_uri() == f"sqlite:///{tmp_path.resolve() / 'mlflow.db'}"
    assert _cfg(tracking=dict(uri="http://mlflow:5000")).tracking_uri() == "http://mlflow:5000"
    assert _cfg(model=dict(device="cpu")).model.resolved_device() == "cpu"
    assert ExperimentConfig().model.resolved_device() in ("cpu", "cuda")  # "auto" never reaches torch.device


def test_every_field_has_a_yaml_representable_default():
    for section in dataclasses.fields(ExperimentConfig):
        value = getattr(ExperimentConfig(), section.name)
        if dataclasses.is_dataclass(value):
            for f in dataclasses.fields(value):
                default = getattr(value, f.name)
                assert isinstance(default, (bool, int, float, str, type(None))), f"{section.name}.{f.name}"


# ----------------------------------------------------------------------------------------------------
# Nothing is silently ignored


def test_the_stage_2_config_continues_from_the_model_stage_1_writes():
    from codefu_helpers.checkpoint import MODEL_DIR

    stage1 = ExperimentConfig.from_yaml(CONFIGS[0].with_name("codefu7b_stage1.yaml"))
    stage2 = ExperimentConfig.from_yaml(CONFIGS[0].with_name("codefu7b_stage2.yaml"))
    assert Path(stage2.model.path) == Path(stage1.trainer.output_dir) / MODEL_DIR


@pytest.mark.parametrize("overrides, fragment", [
    ({"trainer.engine": "verl", "rollout.backend": "vllm"}, "trainer.engine='verl'"),
    ({"rollout.backend": "hf", "rollout.use_rollout_log_probs": True}, "rollout.use_rollout_log_probs=True applies to"),
    ({"rollout.backend": "hf", "rollout.cpu_kv_cache_gb": 1.0}, "rollout.cpu_kv_cache_gb=1.0 applies to vLLM only"),
    ({"rollout.tensor_parallel_size": 1, "rollout.gpu_memory_utilization": 0.5}, "rollout.gpu_memory_utilization=0.5"),
], ids=["verl-engine", "is-with-hf", "kv-cache-with-hf", "gpu-memory-with-hf"])
def test_the_native_trainer_refuses_keys_it_would_ignore(overrides, fragment):
    from codefu_helpers.config import check_native_trainer, native_trainer_problems

    cfg = ExperimentConfig().with_overrides(overrides)  # built, not validated
    problems = native_trainer_problems(cfg)
    assert any(fragment in p for p in problems), problems
    with pytest.raises(ConfigError) as info:
        check_native_trainer(cfg)
    assert info.value.problems == problems
    assert native_trainer_problems(ExperimentConfig()) == []
    if cfg.trainer.engine == "native":  # validate() refuses what the config's own engine cannot honour
        assert any(fragment in p for p in _problems(cfg))


def test_the_native_trainer_refuses_to_start_on_such_a_config(tmp_path):
    from codefu_helpers.trainer import GRPOTrainer

    cfg = ExperimentConfig().with_overrides({"trainer.engine": "verl", "rollout.backend": "vllm"}).validate()
    with pytest.raises(ConfigError, match="trainer.engine='verl'"):
        GRPOTrainer(cfg, [{"prompt": []}], tmp_path)


@pytest.mark.parametrize("overrides, fragment", [
    ({"rollout.backend": "vllm", "rollout.tensor_parallel_size": 2, "trainer.gpus_per_node": 2},
     "rollout.tensor_parallel_size=2: the native trainer runs one vLLM engine inside each training worker"),
    ({"model.device": "cuda", "trainer.fsdp_cpu_offload": True},
     "trainer.fsdp_cpu_offload=true with one worker"),
    ({"rollout.backend": "vllm", "rollout.use_rollout_log_probs": True, "rollout.top_p": 0.9},
     "rollout.use_rollout_log_probs=true with rollout.top_p=0.9, rollout.top_k=0"),
    ({"rollout.backend": "vllm", "rollout.use_rollout_log_probs": True, "rollout.top_k": 20},
     "rollout.use_rollout_log_probs=true with rollout.top_p=1.0, rollout.top_k=20"),
    ({"model.device": "cuda", "model.dtype": "float16"}, "the native trainer has no loss scaling"),
    ({"trainer.worker_timeout_s": 0}, "trainer.worker_timeout_s=0.0 must be > 0"),
    ({"rollout.backend": "vllm", "model.device": "cpu", "rollout.gpu_memory_utilization": 0.5},
     "vLLM on CPU sizes its KV cache by rollout.cpu_kv_cache_gb and would ignore it"),
    ({"rollout.backend": "vllm", "model.device": "cuda", "rollout.cpu_kv_cache_gb": 2},
     "vLLM on a GPU sizes its KV cache by rollout.gpu_memory_utilization and would ignore it"),
], ids=["tp-native", "offload-one-worker", "is-top-p", "is-top-k", "fp16-native", "timeout", "gpu-kv-on-cpu",
        "cpu-kv-on-gpu"])
def test_keys_the_chosen_engine_cannot_honour_are_refused_by_validate(overrides, fragment):
    """Refused before anything loads: validate() is the first thing every front end calls."""
    assert fragment in _only_problem(ExperimentConfig().with_overrides(overrides))


def test_what_only_the_native_engine_cannot_do_is_left_to_the_verl_renderer():
    base = {"trainer.engine": "verl", "rollout.backend": "vllm", "model.device": "cuda", "trainer.gpus_per_node": 2}
    ExperimentConfig().with_overrides({**base, "rollout.tensor_parallel_size": 2}).validate()  # verl shards vLLM
    ExperimentConfig().with_overrides({**base, "trainer.gpus_per_node": 1, "trainer.fsdp_cpu_offload": True}).validate()
    # biased importance weights are refused whichever engine runs
    bad = ExperimentConfig().with_overrides({**base, "rollout.use_rollout_log_probs": True, "rollout.top_p": 0.95})
    assert "every importance weight would be biased" in _only_problem(bad)


@pytest.mark.parametrize("overrides, fragment", [
    ({"data.val_path": "x.parquet", "trainer.test_freq": 0}, "would never be read"),
    ({"data.val_path": None, "trainer.test_freq": 5}, "data.val_path, which is null"),
    ({"model.warm_start_steps": 10}, "set data.raw_path"),
    ({"model.warm_start_steps": 10, "data.raw_path": "data/sample", "model.warm_start_target_p": 1.5},
     "model.warm_start_target_p=1.5 must be between 0 and 1"),
    ({"model.warm_start_target_p": 0.2}, "model.warm_start_steps=0 runs none"),
    ({"data.max_problems": 4}, "set data.raw_path"),
    ({"data.tiers": []}, "data.tiers=[]"),
    ({"trainer.val_samples": 0}, "trainer.val_samples=0"),
])
def test_data_selection_validation_and_warm_start_keys_are_checked(overrides, fragment):
    assert fragment in _only_problem(ExperimentConfig().with_overrides(overrides))


def test_list_fields_load_from_yaml_and_reject_wrong_items(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("data:\n  tiers: [easy, hard]\n")
    assert ExperimentConfig.from_yaml(path).data.tiers == ["easy", "hard"]
    path.write_text("data:\n  tiers: [easy, 3]\n")
    problems = _problems(lambda: ExperimentConfig.from_yaml(path))
    assert "data.tiers=['easy', 3]" in problems[0] and "list of strings" in problems[0]
    path.write_text("data:\n  tiers: easy\n")
    assert "expected a list of strings or null" in _problems(lambda: ExperimentConfig.from_yaml(path))[0]


# ----------------------------------------------------------------------------------------------------
# algorithm.adv_estimator and the critic (issue 22)


def test_estimator_choices_match_the_estimators_module():
    from codefu_helpers import estimators

    hints = typing.get_type_hints(AlgorithmConfig)
    assert typing.get_args(hints["adv_estimator"]) == estimators.ADV_ESTIMATORS
    assert ExperimentConfig().algorithm.adv_estimator == "grpo" and not ExperimentConfig().uses_critic


def test_an_unknown_estimator_is_refused_naming_the_key_and_the_choices():
    with pytest.raises(ConfigError) as info:
        ExperimentConfig().with_overrides(["algorithm.adv_estimator=ppo"]).validate()
    assert any("algorithm.adv_estimator='ppo'" in p and "'gae'" in p and "'reinforce_plus_plus'" in p
               for p in info.value.problems), info.value.problems


@pytest.mark.parametrize("sections, fragment", [
    # keys an estimator does not read are refused, never ignored
    (dict(algorithm=dict(gamma=0.9)), "algorithm.gamma=0.9 is read only by algorithm.adv_estimator=gae or "
                                      "reinforce_plus_plus, not 'grpo'"),
    (dict(algorithm=dict(adv_estimator="reinforce_plus_plus", lam=0.95)),
     "algorithm.lam=0.95 is read only by algorithm.adv_estimator=gae, not 'reinforce_plus_plus'"),
    (dict(algorithm=dict(adv_estimator="rloo", norm_adv_by_std=False)),
     "algorithm.norm_adv_by_std=false (Dr.GRPO) applies to algorithm.adv_estimator=grpo only"),
    (dict(algorithm=dict(adv_estimator="gae", adv_epsilon=1e-5)), "algorithm.adv_epsilon=1e-05 is GRPO's std epsilon"),
    (dict(critic=dict(lr=1e-4)), "critic.lr=0.0001 is read only with algorithm.adv_estimator=gae"),
    (dict(algorithm=dict(adv_estimator="rloo"), critic=dict(cliprange_value=0.2)),
     "critic.cliprange_value=0.2 is read only with algorithm.adv_estimator=gae (PPO with a critic), not 'rloo'"),
    (dict(trainer=dict(critic_warmup=2)), "trainer.critic_warmup=2 is read only with algorithm.adv_estimator=gae"),
    (dict(trainer=dict(critic_gpus=1)), "trainer.critic_gpus=1 is read only with algorithm.adv_estimator=gae"),
    # values
    (dict(algorithm=dict(adv_estimator="gae", gamma=0.0)), "algorithm.gamma=0.0 must be in (0, 1]"),
    (dict(algorithm=dict(adv_estimator="gae", lam=1.5)), "algorithm.lam=1.5 must be in [0, 1]"),
    (dict(algorithm=dict(adv_estimator="gae"), critic=dict(lr=0.0)), "critic.lr=0.0 must be > 0"),
    (dict(algorithm=dict(adv_estimator="gae"), critic=dict(cliprange_value=0.0)), "critic.cliprange_value=0.0 must be > 0"),
    (dict(algorithm=dict(adv_estimator="gae"), critic=dict(ppo_epochs=0)), "critic.ppo_epochs=0 must be >= 1"),
    (dict(algorithm=dict(adv_estimator="gae"), critic=dict(warmup_steps=-1)), "critic.warmup_steps=-1 must be >= 0"),
    (dict(algorithm=dict(adv_estimator="gae"), critic=dict(model_path="tiny://llama")),
     "critic.model_path='tiny://llama' is not a known tiny model"),
    (dict(algorithm=dict(adv_estimator="gae"), trainer=dict(critic_warmup=5, total_steps=5)),
     "trainer.critic_warmup=5 is not below trainer.total_steps=5: the actor would never be updated"),
    (dict(algorithm=dict(adv_estimator="gae"), trainer=dict(critic_gpus=3)),
     "must split evenly over the critic's 3 devices (trainer.nnodes x trainer.critic_gpus)"),
    (dict(algorithm=dict(adv_estimator="rloo"), rollout=dict(n=1)), "RLOO compares each sample with the others"),
    (dict(trainer=dict(tensor_parallel_size=2)), "trainer.tensor_parallel_size=2 is read only with "
                                                  "trainer.strategy=megatron"),
    (dict(trainer=dict(strategy="megatron")), "trainer.strategy='megatron': the native trainer shards with FSDP2"),
])
def test_estimator_and_critic_keys_are_checked_naming_the_key(sections, fragment):
    assert fragment in _only_problem(_cfg(**sections))


def test_estimators_without_a_group_train_on_one_sample_per_prompt():
    for estimator in ("gae", "reinforce_plus_plus"):
        cfg = _cfg(algorithm=dict(adv_estimator=estimator, ppo_mini_batch_size=4), rollout=dict(n=1)).validate()
        assert cfg.samples_per_step == cfg.data.train_batch_size
    cfg = _cfg(algorithm=dict(adv_estimator="gae", ppo_epochs=2), critic=dict(ppo_epochs=None)).validate()
    assert cfg.uses_critic and cfg.critic_epochs == 2 and cfg.critic_world_size == 1
    assert _cfg(algorithm=dict(adv_estimator="gae"), critic=dict(ppo_epochs=3)).critic_epochs == 3


# ------------------------------------------------------------------------------------------------ base: inheritance


def test_a_config_starts_from_its_base_and_replaces_key_by_key(tmp_path):
    (tmp_path / "root.yaml").write_text("name: root\nmodel:\n  dtype: bfloat16\n  device: cuda\noptim:\n  lr: 1.0e-5\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "mid.yaml").write_text("base: ../root.yaml\nname: mid\nmodel:\n  device: cpu\n")
    (tmp_path / "leaf.yaml").write_text("base: sub/mid.yaml\noptim:\n  lr: 3.0e-4\n")
    leaf = ExperimentConfig.from_yaml(tmp_path / "leaf.yaml")
    assert (leaf.name, leaf.model.dtype, leaf.model.device, leaf.optim.lr) == ("mid", "bfloat16", "cpu", 3e-4)
    assert leaf.optim.weight_decay == ExperimentConfig().optim.weight_decay  # untouched keys keep the defaults


@pytest.mark.parametrize("text, message", [
    ("base: nowhere.yaml\n", "nowhere.yaml does not exist"),
    ("base: 3\n", "base=3 .* must name a config file"),
    ("base: loop.yaml\n", "makes a cycle of configs"),
])
def test_a_bad_base_is_refused_naming_it(tmp_path, text, message):
    (tmp_path / "loop.yaml").write_text("base: start.yaml\n")
    (tmp_path / "start.yaml").write_text(text)
    with pytest.raises(ConfigError, match=message):
        ExperimentConfig.from_yaml(tmp_path / "start.yaml")


def test_a_shipped_config_with_a_base_lists_only_what_differs_from_it():
    import yaml

    from codefu_helpers.config import read_yaml_layers

    derived = 0
    for path in CONFIGS:
        raw = yaml.safe_load(path.read_text())
        if "base" not in raw:
            continue
        derived += 1
        inherited = read_yaml_layers((path.parent / raw["base"]).resolve())
        for section, values in raw.items():
            if isinstance(values, dict):
                same = [k for k, v in values.items() if inherited.get(section, {}).get(k, "(default)") == v]
                assert not same, f"{path.name} repeats {section}.{same} of its base: remove them"
    assert derived >= 5
