"""The memory plan: its counts against published figures and against peaks measured on CPU, every shipped config's
`train --dry-run`, and the launcher refusing a plan that cannot fit (codefu_helpers.memory_plan)."""

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout

import pytest

from codefu_helpers.config import ExperimentConfig
from codefu_helpers.memory_plan import GIB, ModelShape, memory_plan, model_shape

from conftest import ROOT

CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))
SEVEN_B = "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B"


def test_shapes_give_the_published_sizes():
    """Qwen2.5-7B: 7,615,616,512 parameters (its model card's 7.61B), 15.23 GB in bf16 (its safetensors), and
    2 x 28 layers x 4 KV heads x 128 x 2 bytes = 56 KiB of KV cache per token (224 MiB per 4096 tokens)."""
    seven = model_shape(SEVEN_B)
    assert seven.params == 7_615_616_512 and not seven.tied
    assert 2 * seven.params == pytest.approx(15.23e9, rel=1e-3)
    assert seven.kv_bytes_per_token(2) * 4096 == 224 * 2**20
    assert model_shape("Qwen/Qwen2.5-Coder-0.5B-Instruct").params == 494_032_768  # Qwen2.5-0.5B: 0.49B
    # the tiny model: its config.json, counted against the parameters transformers builds from it
    from transformers import AutoModelForCausalLM

    from codefu_helpers.tiny_model import resolve_model_path

    built = AutoModelForCausalLM.from_pretrained(resolve_model_path("tiny://qwen2"))
    assert model_shape("tiny://qwen2").params == sum(p.numel() for p in built.parameters())
    # stage 2 starts from the model stage 1 writes, which does not exist yet: it has stage 1's starting shape
    stage2 = ExperimentConfig.from_yaml(ROOT / "configs" / "codefu7b_stage2.yaml")
    assert model_shape(stage2.model.path).params == seven.params
    with pytest.raises(ValueError, match="cannot find the shape of model.path='nobody/unknown-model'"):
        model_shape("nobody/unknown-model")


def test_training_state_is_zeros_16_bytes_per_parameter_and_checkpointing_keeps_two_bytes_per_layer_and_token():
    """ZeRO (Rajbhandari et al. 2020, sec. 3.1): mixed-precision Adam holds 16 bytes per parameter, 120 GB for 7.5B;
    ours (fp32 master 4 + fp32 gradient 4 + two fp32 moments 8) is the same 16, sharded over a node's GPUs.
    Korthikanti et al. 2022 (full recomputation): 2 bytes x hidden per token and layer in 16-bit."""
    cfg = ExperimentConfig.from_yaml(ROOT / "configs" / "codefu7b_stage2.yaml")
    seven = model_shape(SEVEN_B)
    one = memory_plan(cfg.with_overrides({"trainer.nnodes": 1, "trainer.gpus_per_node": 1}), device_memory_gib=80)
    c = one.components
    assert c["master weights (fp32)"] + c["gradients (fp32)"] + c["AdamW moments (fp32)"] == 16 * seven.params
    assert 16 * 7.5e9 == 120e9
    two_nodes = memory_plan(cfg.with_overrides({"trainer.nnodes": 2}), device_memory_gib=80)
    assert two_nodes.shard == 8 and two_nodes.components["AdamW moments (fp32)"] == 8 * seven.params // 8
    # activations with checkpointing minus without the per-layer inputs: one layer recomputed, linear in tokens
    tokens = two_nodes.tokens_per_micro_batch
    without = memory_plan(cfg.with_overrides({"trainer.nnodes": 2, "model.gradient_checkpointing": False}),
                          device_memory_gib=80)
    kept_inputs = tokens * seven.layers * 2 * seven.hidden
    layer = seven.activation_bytes_per_token(2)
    assert two_nodes.components["activations"] - without.components["activations"] == \
        kept_inputs + tokens * (layer + 2 * seven.hidden) - tokens * seven.layers * layer


def test_the_seven_b_stage_2_plan_fits_two_nodes_of_eight_a100_80gb_and_not_smaller_gpus():
    cfg = ExperimentConfig.from_yaml(ROOT / "configs" / "codefu7b_stage2.yaml").with_overrides({"trainer.nnodes": 2})
    plan = memory_plan(cfg, device_memory_gib=80)
    print(plan.report())
    assert plan.fits and plan.world_size == 16 and plan.peak_phase == "rollout"
    assert plan.kv_capacity_tokens > 10 * plan.max_model_len  # vLLM holds many full-length sequences
    # the sample's offload keeps the training state in host memory: only the reserve stands beside vLLM's 0.9
    assert plan.phases["rollout"]["master weights"] == 0 and plan.phases["rollout"]["AdamW moments"] == 0
    # without it, vLLM's 0.9 of the GPU leaves no room for the sharded training state
    kept = memory_plan(cfg.with_overrides({"trainer.fsdp_cpu_offload": False}), device_memory_gib=80)
    assert not kept.fits and kept.peak_phase == "rollout"
    assert any("rollout.gpu_memory_utilization" in p for p in kept.problems()), kept.problems()
    # a 16 GiB GPU: vLLM's 0.9 of it and the reserve exceed the device even with everything else offloaded
    small = memory_plan(cfg, device_memory_gib=16)
    assert not small.fits and small.problems()
    assert any("vLLM's KV cache holds" in p or "needs about" in p for p in small.problems())


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_shipped_config_passes_the_dry_run_with_its_plan(path):
    from codefu_helpers.train import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = main(["--config", str(path), "--dry-run"])
    assert status == 0, err.getvalue()
    cfg = ExperimentConfig.from_yaml(path)
    if cfg.trainer.engine == "verl":  # stdout: verl's overrides, one key=value per line
        lines = out.getvalue().splitlines()
        assert "algorithm.adv_estimator=grpo" in lines and all("=" in line for line in lines)
    else:  # stdout: the resolved config as YAML
        assert ExperimentConfig.from_dict(__import__("yaml").safe_load(out.getvalue())).name == path.stem
    assert f"memory plan for {path.stem}" in err.getvalue() and "FITS: peak" in err.getvalue()


def test_the_dry_run_cli_prints_the_plan_and_fails_when_it_does_not_fit():
    base = [sys.executable, "-m", "codefu_helpers.train", "--config", str(ROOT / "configs" / "codefu7b_stage2.yaml"),
            "--dry-run", "--set", "trainer.nnodes=2"]
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    fits = subprocess.run(base + ["--gpu-memory-gib", "80"], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=300)
    assert fits.returncode == 0, fits.stderr[-2000:]
    assert "16 worker(s), weights sharded over 8; 80.0 GiB per GPU (given: 80 GiB)" in fits.stderr
    assert "FITS" in fits.stderr and "actor_rollout_ref.actor.fsdp_config.param_offload=true" in fits.stdout.splitlines()
    short = subprocess.run(base + ["--gpu-memory-gib", "16"], capture_output=True, text=True, cwd=ROOT, env=env,
                           timeout=300)
    assert short.returncode == 2 and "DOES NOT FIT" in short.stderr


def test_the_launch_refuses_a_plan_that_cannot_fit_before_anything_is_uploaded():
    from codefu_helpers.launch.sagemaker_job import LaunchConfig, check_launch

    cfg = ExperimentConfig.from_yaml(ROOT / "configs" / "codefu7b_stage2.yaml").with_overrides(
        {"data.train_path": str(CONFIGS[0]), "data.val_path": None, "trainer.test_freq": 0})
    role = "arn:aws:iam::123456789012:role/SageMakerTraining"
    fine = check_launch(cfg, LaunchConfig(role=role, bucket="codefu-test-bucket", instance_type="ml.p4de.24xlarge",
                                          instance_count=2))
    assert not any("memory plan" in p for p in fine), fine
    kept = cfg.with_overrides({"trainer.fsdp_cpu_offload": False})  # A10G 24 GiB: no room beside vLLM without offload
    small = check_launch(kept, LaunchConfig(role=role, bucket="codefu-test-bucket", instance_type="ml.g5.48xlarge",
                                            instance_count=4))
    assert any(p.startswith("memory plan: ") and "per GPU" in p for p in small), small


def test_the_plan_counts_what_the_policy_code_holds():
    from codefu_helpers import memory_plan as plan_module
    from codefu_helpers import policy_ops

    assert plan_module.LOGITS_CHUNK_BYTES == policy_ops.LOGITS_CHUNK_BYTES
    shape = ModelShape(vocab=100, hidden=8, layers=2, heads=2, kv_heads=1, head_dim=4, intermediate=16, tied=True)
    # float32: three float32 norm tensors of width h twice, q/k/v/out and o_proj's input, four MLP tensors
    assert shape.activation_bytes_per_token(4) == 2 * 12 * 8 + 5 * 4 * 8 + 4 * 4 * 16
    assert shape.kv_bytes_per_token(2) == 2 * 2 * 4 * 2


def test_the_estimate_is_within_25_percent_of_a_measured_cpu_peak(tmp_path):
    """benchmarks/memory_plan.py in a fresh process: one update of a 28M-parameter Qwen2 with gradient checkpointing
    (2048 tokens); RESULTS.md has the other cases."""
    out = tmp_path / "plan.json"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "memory_plan.py"), "--cases", "small-fp32-ckpt",
                    "--json", str(out)], check=True, capture_output=True, timeout=600, cwd=ROOT)
    (row,) = json.loads(out.read_text())
    print(row)
    assert abs(row["update_error"]) < 0.25, row
    assert row["adam_error"] == 0.0
    assert row["measured_update_mib"] > 100  # the measurement saw the update at all


def test_ppo_counts_the_critics_training_state_and_its_update():
    """algorithm.adv_estimator=gae: the critic's parameters are those of the value model the workers build (counted
    here on the tiny model), 16 bytes each sharded like the policy's, standing in every phase; its update is a phase."""
    from transformers import AutoModelForCausalLM

    from codefu_helpers.policy_ops import value_model_from_lm
    from codefu_helpers.tiny_model import resolve_model_path

    tiny = model_shape("tiny://qwen2")
    lm = AutoModelForCausalLM.from_pretrained(resolve_model_path("tiny://qwen2"))
    assert tiny.value_model_params == sum(p.numel() for p in value_model_from_lm(lm, seed=0).parameters())

    cfg = ExperimentConfig.from_yaml(ROOT / "configs" / "codefu7b_stage2.yaml").with_overrides(
        {"trainer.nnodes": 2, "trainer.fsdp_cpu_offload": False})
    grpo_plan = memory_plan(cfg, device_memory_gib=141)
    ppo_plan = memory_plan(cfg.with_overrides({"algorithm.adv_estimator": "gae"}), device_memory_gib=141)
    seven = model_shape(SEVEN_B)
    c = ppo_plan.components
    assert c["critic master weights (fp32)"] == 4 * seven.value_model_params // 8
    assert c["critic AdamW moments (fp32)"] == 8 * seven.value_model_params // 8
    standing = c["critic master weights (fp32)"] + c["critic AdamW moments (fp32)"]
    for phase in ("rollout", "update", "weight sync"):
        assert ppo_plan.peaks[phase] == grpo_plan.peaks[phase] + standing, phase
    update = ppo_plan.phases["critic update"]
    assert update["critic gradients"] == c["critic gradients (fp32)"] and update["critic activations"] > 0
    assert "critic update" not in grpo_plan.phases and ppo_plan.peak > grpo_plan.peak
    assert "critic update" in ppo_plan.report()


def test_the_checkpoint_note_counts_what_a_save_writes_per_host_and_what_a_stop_loses():
    """A save writes each host's share of the float32 master weights and AdamW moments (12 bytes a parameter over
    the world size, times its workers); verl adds the whole HF model in model.dtype on rank 0's host."""
    from codefu_helpers.memory_plan import ASSUMED, checkpoint_bytes_per_host

    stage2 = ExperimentConfig.from_yaml(ROOT / "configs" / "codefu7b_stage2.yaml").with_overrides(
        ["trainer.nnodes=2"]).validate()
    P = model_shape(stage2.model.path).params
    most, other = checkpoint_bytes_per_host(stage2, P, 2, per_node=8)
    assert other == 12 * P * 8 // 16 and most == other + 2 * P  # verl: + the bf16 HF model on rank 0's host
    note = next(n for n in memory_plan(stage2, device_memory_gib=80).notes if n.startswith("checkpoint:"))
    assert f"{most / GIB:.1f} GiB on the busiest host ({other / GIB:.1f} GiB on the others)" in note
    assert f"~{most / GIB / ASSUMED['checkpoint_write_gib_s']:.0f} s" in note
    assert "at most 16 steps or 30 minutes plus the step then running, whichever comes first" in note
    native = stage2.with_overrides(["trainer.engine=native", "rollout.enable_sleep_mode=true"])
    assert checkpoint_bytes_per_host(native, P, 2, per_node=8) == (other, other)  # the HF model only at the end
    tiny = ExperimentConfig.from_yaml(ROOT / "configs" / "ci_tiny.yaml")
    tiny_note = next(n for n in memory_plan(tiny).notes if n.startswith("checkpoint:"))
    assert "fits the 120 s grace, so a stop loses at most the dropped step's rollout" in tiny_note
