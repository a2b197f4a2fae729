"""HF rollout engine: sampling is the distribution the config names, whatever the checkpoint's generation config says."""

import json
import shutil

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from codefu_helpers.rollout import HFRollout, SamplingParams, encode_prompt

# What a downloaded checkpoint's generation_config.json may carry: all of it would reshape sampling if inherited.
POISONED_GENERATION_CONFIG = {"do_sample": True, "temperature": 0.3, "top_k": 3, "top_p": 0.5, "min_p": 0.2,
                              "repetition_penalty": 1.8, "no_repeat_ngram_size": 2, "eos_token_id": [2, 0],
                              "pad_token_id": 0}
PROMPTS = [[{"role": "user", "content": "Print the sum of two numbers."}],
           [{"role": "user", "content": "Read n and print n squared."}]]


@pytest.fixture(scope="module")
def clean_and_poisoned(tmp_path_factory):
    """The tiny model twice: as built, and a copy whose generation_config.json says something else."""
    from codefu_helpers.tiny_model import build_tiny_model

    clean = build_tiny_model()
    poisoned = tmp_path_factory.mktemp("poisoned") / "model"
    shutil.copytree(clean, poisoned)
    (poisoned / "generation_config.json").write_text(json.dumps(POISONED_GENERATION_CONFIG))
    tokenizer = AutoTokenizer.from_pretrained(clean)
    models = [AutoModelForCausalLM.from_pretrained(p, dtype=torch.float32) for p in (clean, poisoned)]
    assert models[1].generation_config.repetition_penalty == 1.8  # the file is read, so it could leak
    return models, tokenizer


def _draw(model, tokenizer, **params):
    groups = HFRollout(model, tokenizer).generate(PROMPTS, 3, SamplingParams(max_new_tokens=24, seed=11, **params))
    return [s.response_ids for g in groups for s in g.samples]


def test_checkpoint_generation_config_does_not_change_sampling(clean_and_poisoned):
    (clean, poisoned), tokenizer = clean_and_poisoned
    assert _draw(poisoned, tokenizer) == _draw(clean, tokenizer)
    assert _draw(poisoned, tokenizer, temperature=0.7, top_p=0.9, top_k=20) == \
        _draw(clean, tokenizer, temperature=0.7, top_p=0.9, top_k=20)


def test_plain_generate_would_inherit_the_checkpoint_config(clean_and_poisoned):
    """The control: transformers fills options left at their defaults from the model's generation config, so the
    same explicit call without HFRollout's isolation samples differently on the poisoned checkpoint."""
    (clean, poisoned), tokenizer = clean_and_poisoned
    ids = torch.tensor([encode_prompt(tokenizer, PROMPTS[0])])

    def plain(model):
        torch.manual_seed(11)
        return model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=24, do_sample=True,
                              temperature=1.0, top_p=1.0, top_k=0, num_return_sequences=3).tolist()

    assert plain(poisoned) != plain(clean)


def test_explicit_options_are_honoured(clean_and_poisoned):
    (clean, _), tokenizer = clean_and_poisoned
    assert _draw(clean, tokenizer, top_k=2) != _draw(clean, tokenizer)
    engine = HFRollout(clean, tokenizer)
    config = engine.generation_config(SamplingParams(temperature=0.7, top_p=0.9, top_k=0))
    assert (config.temperature, config.top_p, config.top_k, config.repetition_penalty) == (0.7, 0.9, 0, 1.0)
    assert clean.generation_config.top_k != 2  # the model's own config is restored after generate


@pytest.mark.parametrize("overrides, fragment", [
    ({"rollout.top_k": -1}, "rollout.top_k=-1 must be >= 0"),
    ({"rollout.rollout_is_cap": 0.5}, "rollout.rollout_is_cap=0.5 must be >= 1"),
    ({"rollout.cpu_kv_cache_gb": 0}, "rollout.cpu_kv_cache_gb=0.0 must be > 0"),
    ({"rollout.backend": "vllm", "rollout.enable_sleep_mode": True, "model.device": "cpu"},
     "vLLM has no sleep mode on CPU"),
])
def test_rollout_values_are_checked(overrides, fragment):
    from codefu_helpers.config import ConfigError, ExperimentConfig

    with pytest.raises(ConfigError) as info:
        ExperimentConfig().with_overrides(overrides).validate()
    assert any(fragment in p for p in info.value.problems), info.value.problems


@pytest.mark.parametrize("key, value", [("enable_sleep_mode", True), ("use_rollout_log_probs", True),
                                        ("cpu_kv_cache_gb", 2.0)])
def test_vllm_only_keys_are_refused_with_the_hf_engine(key, value):
    from codefu_helpers.config import ExperimentConfig, native_trainer_problems

    from codefu_helpers.config import ConfigError

    hf = ExperimentConfig().with_overrides({f"rollout.{key}": value})
    assert any(f"rollout.{key}={value} applies to vLLM only" in p for p in native_trainer_problems(hf))
    with pytest.raises(ConfigError, match=f"rollout.{key}={value} applies to vLLM only"):
        hf.validate()
    vllm = ExperimentConfig().with_overrides({f"rollout.{key}": value, "rollout.backend": "vllm"}).validate()
    assert native_trainer_problems(vllm) == []
