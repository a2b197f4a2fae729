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


def as_native(cfg: ExperimentConfig) -> ExperimentConfig:
    """A CodeFu stage as the native trainer can run it: no Ulysses, no tensor-parallel vLLM, a token budget that
    holds the longest sample (benchmarks/memory_plan.py's table does the same)."""
    longest = cfg.data.max_prompt_length + cfg.data.max_response_length
    return cfg.with_overrides({"trainer.engine": "native", "trainer.sequence_parallel_size": 1,
                               "rollout.tensor_parallel_size": 1, "algorithm.ppo_max_token_len_per_gpu": longest})


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
    cfg = as_native(ExperimentConfig.from_yaml(ROOT / "configs" / "codefu7b_stage2.yaml"))
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
    plan = memory_plan(cfg, device_memory_gib=79)  # an A100-80GB as CUDA sees it (launch/instances.py: GPUS)
    print(plan.report())
    assert plan.fits and plan.world_size == 16 and plan.shard == 16 and plan.peak_phase == "rollout"
    assert plan.kv_capacity_tokens > 10 * plan.max_model_len  # vLLM holds many full-length sequences
    # the sample's offload keeps the training state in host memory between phases: none of it beside vLLM's 0.9
    assert "master weights" not in plan.phases["rollout"] and "AdamW moments" not in plan.phases["rollout"]
    # ... but verl loads it back for the update
    assert plan.phases["update"]["AdamW moments (loaded)"] == 8 * plan.shape.params // 16
    # without it, vLLM's 0.9 of an A100-40GB leaves no room for the sharded training state
    kept = memory_plan(cfg.with_overrides({"trainer.fsdp_cpu_offload": False}), device_memory_gib=39)
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
    assert "16 worker(s), weights sharded over 16; 80.0 GiB per GPU (given: 80 GiB)" in fits.stderr
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

    cfg = as_native(ExperimentConfig.from_yaml(ROOT / "configs" / "codefu7b_stage2.yaml")).with_overrides(
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


SMALL = ModelShape(vocab=1000, hidden=64, layers=2, heads=4, kv_heads=2, head_dim=16, intermediate=128, tied=False,
                   source="made up")


def small_verl(**overrides) -> ExperimentConfig:
    """A verl config on 4 GPUs with the CodeFu stages' switches (offload, sleep, Ulysses 2, KL), for SMALL."""
    return ExperimentConfig().with_overrides({
        "model.path": "plan-only", "model.device": "cuda", "model.dtype": "bfloat16",
        "model.gradient_checkpointing": True, "trainer.engine": "verl", "trainer.nnodes": 1,
        "trainer.gpus_per_node": 4, "trainer.fsdp_cpu_offload": True, "trainer.sequence_parallel_size": 2,
        "rollout.backend": "vllm", "rollout.enable_sleep_mode": True, "rollout.tensor_parallel_size": 1,
        "rollout.gpu_memory_utilization": 0.5, "rollout.temperature": 1.0, "algorithm.use_kl_loss": True,
        "algorithm.entropy_coef": 0.0, "algorithm.ppo_max_token_len_per_gpu": 512, "data.max_prompt_length": 64,
        "data.max_response_length": 192, **overrides})


def test_the_verl_update_phase_is_the_sum_counted_by_hand():
    """verl reloads the offloaded master weights and AdamW moments for the update, shards over all 4 GPUs, and holds
    the logits of the micro-batch's tokens twice in bf16 (the logits, then log_softmax's rows kept for backward)."""
    from codefu_helpers.memory_plan import ASSUMED, VLLM_PROCESS_CONTEXT_GIB

    plan = memory_plan(small_verl(), device_memory_gib=20, shape=SMALL)
    P, W, T, V, h, L = SMALL.params, 4, 512, 1000, 64, 2
    layer = SMALL.layer_params
    by_hand = (int(ASSUMED["gpu_reserve_gib"] * GIB) + int(VLLM_PROCESS_CONTEXT_GIB * GIB)
               + int(ASSUMED["vllm_asleep_gib"] * GIB)
               + 4 * P // W + 8 * P // W + 4 * P // W      # master weights and moments loaded back, gradients
               + 2 * (SMALL.root_params + 2 * layer)     # gathered in bf16: root unit and two layers
               + (2 + 4) * layer + 2 * V * h             # a layer's gradient in bf16 and fp32; lm_head's in bf16
               + T * (L * 2 * h + SMALL.activation_bytes_per_token(2) + 2 * h)  # checkpointed inputs + one layer
               + T * (4 + 3 * 2) * h                     # final norm and lm_head input
               + 2 * T * V * 2)                          # logits and log-softmax rows, bf16
    assert plan.peaks["update"] == by_hand and plan.shard == W and plan.engine == "verl"
    # the entropy bonus keeps two more (T x V) tensors, a temperature other than 1 one more
    hotter = memory_plan(small_verl(**{"algorithm.entropy_coef": 0.01, "rollout.temperature": 0.7}),
                         device_memory_gib=20, shape=SMALL)
    assert hotter.peaks["update"] - plan.peaks["update"] == 3 * T * V * 2
    # without offload the state stands in the rollout too; with it only the reserve and vLLM
    kept = memory_plan(small_verl(**{"trainer.fsdp_cpu_offload": False}), device_memory_gib=20, shape=SMALL)
    assert kept.peaks["rollout"] - plan.peaks["rollout"] == 4 * P // W + 8 * P // W
    assert kept.peaks["update"] == plan.peaks["update"]  # the same tensors, loaded or standing


def test_verl_tokens_per_gpu_follow_the_budget_and_ulysses():
    from codefu_helpers.memory_plan import verl_tokens_per_gpu

    assert verl_tokens_per_gpu(small_verl()) == 512  # the budget is per GPU; Ulysses multiplies the micro-batch
    # a sequence longer than the budget x sp gets a micro-batch of its own, 1/sp of it per GPU
    assert verl_tokens_per_gpu(small_verl(**{"data.max_response_length": 2000})) == -(-2064 // 2)
    # no budget: ppo_micro_batch_size sequences split over the sp GPUs
    no_budget = small_verl(**{"algorithm.ppo_max_token_len_per_gpu": None, "algorithm.ppo_micro_batch_size": 3})
    assert verl_tokens_per_gpu(no_budget) == 3 * 256 // 2


def test_vllm_profiles_with_its_default_batch_limits_for_the_gpu():
    """vLLM 0.24/0.32 LLM defaults: 16384 tokens / 1024 sequences on a 70 GiB+ GPU that is not an A100, else
    8192 / 256; verl passes its own 8192 / 256. The working memory is that step counted by hand."""
    from codefu_helpers.memory_plan import vllm_batch_limits, vllm_working_bytes

    native = small_verl(**{"trainer.engine": "native"})
    assert vllm_batch_limits(native, int(79 * GIB), "NVIDIA A100-SXM4-80GB")[:2] == (8192, 256)
    assert vllm_batch_limits(native, int(78.6 * GIB), "NVIDIA H100 80GB HBM3")[:2] == (16384, 1024)
    assert vllm_batch_limits(native, int(139.8 * GIB), "NVIDIA H200")[:2] == (16384, 1024)
    assert vllm_batch_limits(native, int(21.5 * GIB), "NVIDIA A10G")[:2] == (8192, 256)
    short = native.with_overrides({"data.max_prompt_length": 4, "data.max_response_length": 4})
    assert vllm_batch_limits(short, int(139.8 * GIB), "NVIDIA H200")[:2] == (1024 * 8, 1024)  # capped by seqs x len
    assert vllm_batch_limits(small_verl(), int(139.8 * GIB), "NVIDIA H200")[:2] == (8192, 256)
    assert vllm_working_bytes(SMALL, 2, 8192, 256, tp=2) == 8192 * 2 * (2 * 64 + (2 * 128 + 64 + 2 * 32) // 2) \
        + 256 * 1000 * 4


def test_instances_plan_on_the_memory_cuda_reports():
    from codefu_helpers.launch.instances import DRIVER_RESERVE_MIB, GPUS, INSTANCE_TYPES, gpu_of_instance

    assert INSTANCE_TYPES["ml.p4de.24xlarge"].usable_gpu_memory_gib == (81920 - DRIVER_RESERVE_MIB) / 1024 == 79.0
    assert INSTANCE_TYPES["ml.p4d.24xlarge"].usable_gpu_memory_gib == 39.0
    assert GPUS["H200"].usable_gib == pytest.approx(139.80, abs=0.01)  # measured: CUDA's total on an H200
    gpu, count = gpu_of_instance("ml.g6.12xlarge")
    assert (gpu.name, count) == ("NVIDIA L4", 4) and gpu.usable_gib < 22
    with pytest.raises(ValueError, match="no GPU this table knows"):
        gpu_of_instance("ml.m5.xlarge")


@pytest.mark.parametrize("stage", ["codefu7b_stage1", "codefu7b_stage2"])
@pytest.mark.parametrize("engine", ["verl", "native"])
def test_the_codefu_stages_on_p4d_and_p4de(stage, engine):
    """The shipped stages (verl; and as the native trainer can run them) on their node count: all fit 8 x
    A100-80GB (p4de); on 8 x A100-40GB (p4d) verl's stage 1 (one host: state over 8 GPUs, 9.3 GiB of logits) does
    not, and the refusal names the phase and the key to change; the rest fit by this count (stage 2's state is
    sharded over 32 GPUs; the native trainer offloads to the host and chunks its logits)."""
    from codefu_helpers.launch.instances import INSTANCE_TYPES
    from codefu_helpers.memory_plan import plan_problems

    cfg = ExperimentConfig.from_yaml(ROOT / "configs" / f"{stage}.yaml")
    cfg = cfg if engine == "verl" else as_native(cfg).validate()
    for name in ("ml.p4de.24xlarge", "ml.p4d.24xlarge"):
        itype = INSTANCE_TYPES[name]
        problems = plan_problems(cfg, itype.usable_gpu_memory_gib, cfg.trainer.nnodes, itype.gpus, itype.gpu_name)
        if name == "ml.p4d.24xlarge" and (stage, engine) == ("codefu7b_stage1", "verl"):
            assert len(problems) == 1 and "the update phase needs about" in problems[0], problems
            assert "39.0 GiB are there" in problems[0] and "lower algorithm.ppo_max_token_len_per_gpu" in problems[0]
        else:
            assert problems == [], (name, problems)


def test_check_fits_raises_naming_the_problems_and_train_refuses_before_loading(monkeypatch, capsys):
    from codefu_helpers import train
    from codefu_helpers.memory_plan import MemoryPlanError, check_fits

    stage1 = ExperimentConfig.from_yaml(ROOT / "configs" / "codefu7b_stage1.yaml")
    with pytest.raises(MemoryPlanError, match="update phase needs about") as caught:
        check_fits(stage1, device_memory_gib=39)
    assert isinstance(caught.value, ValueError) and not caught.value.plan.fits and caught.value.problems
    assert check_fits(stage1, device_memory_gib=79).fits

    started = []
    monkeypatch.setattr(train, "run", lambda *args, **kwargs: started.append(args))
    native = ["--config", str(ROOT / "configs" / "codefu7b_stage2.yaml"), "--set", "trainer.engine=native",
              "trainer.sequence_parallel_size=1", "rollout.tensor_parallel_size=1",
              "algorithm.ppo_max_token_len_per_gpu=24576"]
    with pytest.raises(SystemExit, match=r"weight sync phase needs about .* --ignore-memory-plan"):
        train.main(native + ["--gpu-memory-gib", "16"])
    assert started == []  # refused before anything loads
    assert train.main(native + ["--gpu-memory-gib", "79"]) == 0 and len(started) == 1
    assert train.main(native + ["--gpu-memory-gib", "16", "--ignore-memory-plan"]) == 0 and len(started) == 2
