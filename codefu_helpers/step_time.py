"""How long will a GRPO run take on a given GPU? A first-order time model of a step, made from the config alone.

    from codefu_helpers.step_time import estimate_run
    run = estimate_run(cfg, "A10G", eval_problems=12, eval_samples=16)   # or "NVIDIA A10G", torch's device name
    print(run.report()); run.total_s

Key idea: each phase of a step is bound by one resource of the GPU, and the config says how much of it the phase
needs (counts from the model's shape, `memory_plan.model_shape`: no weights, no device).

- rollout, decoding: memory-bandwidth bound. Each decode step of the batch reads every weight once, plus the KV
  cache of every sequence in flight; the batch runs until its longest sample ends (max_response_length steps per
  wave of sequences that fit vLLM's KV cache at rollout.gpu_memory_utilization). Compute (2 x parameters FLOPs per
  token) bounds it too when the batch is large; each step also pays a fixed scheduling and sampling overhead.
- rollout, prefill: compute bound, 2 x parameters FLOPs per prompt token, once per prompt (the n samples of a group
  share its prefix).
- judging: the judge pool (reward.num_workers) works through the samples; counted after the rollout, not overlapped
  with it (an upper bound: the trainer judges samples as they arrive).
- log-prob passes (the old policy's, and the reference's when the KL term is on) are forward passes, 2 x parameters
  FLOPs per token; the update is forward + backward, 6 x parameters per token, plus one more forward with gradient
  checkpointing; a critic (adv_estimator gae) adds its own values pass and update. Attention adds
  4 x layers x q_dim x context FLOPs per token forward.
- a fixed overhead per step (vLLM sleep and wake, weight sync, orchestration) and per run (loading, engine start).

Peak figures are the vendor datasheets' (GPUS: dense bf16 tensor-core TFLOP/s, no sparsity, and memory
bandwidth); what the software reaches of them, and everything else not counted, is assumed and listed in ASSUMED.
The ceilings under ASSUMED were measured on an H200; no GRPO run on a GPU has checked a whole estimate yet: it
sizes runs and timeouts, it does not promise them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .memory_plan import ModelShape, model_shape

GIB = 1 << 30


@dataclass(frozen=True)
class GPU:
    """One GPU type: its datasheet's dense bf16 tensor throughput (float16 where it has no bf16), memory bandwidth
    and memory, and its CUDA compute capability."""

    name: str
    bf16_tflops: float
    bandwidth_gb_s: float
    memory_gb: float
    capability: tuple[int, int]
    source: str


# Dense (no structured sparsity) figures, per GPU, from NVIDIA's product datasheets; the A10G, made for AWS's G5
# instances, has no public NVIDIA datasheet: its memory matches the A10 datasheet's, and its tensor throughput is
# the figure reported for that variant (lower than the A10's 125), the conservative choice for sizing runs.
GPUS = {
    "A10G": GPU("A10G", 70.0, 600.0, 24.0, (8, 6), "AWS G5's A10G: A10 datasheet memory, ~70 TFLOP/s bf16 reported"),
    "L4": GPU("L4", 121.0, 300.0, 24.0, (8, 9), "NVIDIA L4 datasheet (242 TFLOP/s bf16 with sparsity)"),
    "T4": GPU("T4", 65.0, 320.0, 16.0, (7, 5), "NVIDIA T4 datasheet (65 TFLOP/s mixed float16: no bf16 units)"),
    "A100-40": GPU("A100-40", 312.0, 1555.0, 40.0, (8, 0), "NVIDIA A100 datasheet, 40 GB SXM"),
    "A100-80": GPU("A100-80", 312.0, 2039.0, 80.0, (8, 0), "NVIDIA A100 datasheet, 80 GB SXM"),
    "H100": GPU("H100", 989.0, 3350.0, 80.0, (9, 0), "NVIDIA H100 datasheet, SXM (1979 TFLOP/s with sparsity)"),
    "H100-PCIe": GPU("H100-PCIe", 756.0, 2000.0, 80.0, (9, 0), "NVIDIA H100 datasheet, PCIe"),
    "H200": GPU("H200", 989.0, 4800.0, 141.0, (9, 0), "NVIDIA H200 datasheet, SXM"),
}

# Estimates, not measurements of a GRPO run; every report names them. Ceilings measured on an H200 (torch 2.11,
# transformers 5.17; issue 33): a bf16 8192^3 matmul reached 0.80 of the datasheet's TFLOP/s, a device copy
# 0.89 of its bandwidth, a 64-row bf16 product reading 0.2 GB of weights 0.73; the HF model of Qwen2.5-0.5B's shape
# under bf16 autocast, forward + backward of 16 x 1500 tokens, 0.26 of the peak (0.29 with gradient checkpointing).
ASSUMED = {
    "train_mfu": 0.25,              # share of the bf16 peak the HF model's forward/backward reaches (0.26 on an H200)
    "prefill_mfu": 0.4,             # share of the peak reached by vLLM's prefill and the compute side of decoding
    "bandwidth_efficiency": 0.6,    # share of the datasheet bandwidth vLLM's decode reads reach (kernels: 0.73-0.89)
    "decode_step_overhead_s": 0.004,  # per vLLM decode step: scheduling, sampling, kernel launches (CUDA graphs)
    "response_fraction": 0.6,       # mean response length / data.max_response_length (a small model rambles)
    "prompt_tokens": 450,           # mean prompt tokens (data/sample's: ~1,630 characters, ~3.7 per token + template)
    "judge_s_per_sample": 0.6,      # judge worker-seconds per Python sample (benchmarks/RESULTS.md, judge throughput:
                                    # 3.4 samples/s on the mixed workload with 2 workers)
    "vllm_reserved_gib": 1.5,       # vLLM's working memory besides the weights and the KV cache
    "step_overhead_s": 3.0,         # per step: vLLM sleep and wake, weight sync, orchestration
    "evaluation_overhead_s": 5.0,   # per evaluation: engine wake, judge pool warm-up, bookkeeping
    "startup_s": 150.0,             # per run: model download and load, vLLM start (CUDA graph capture), judge pool
}


def gpu_spec(name: str) -> GPU:
    """The GPUS entry for a key ("A10G") or a device name as torch or nvidia-smi gives it ("NVIDIA A10G",
    "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "Tesla T4"). ValueError naming the known ones otherwise."""
    if name in GPUS:
        return GPUS[name]
    upper = name.upper().replace(" ", "-")
    if "A10G" in upper:
        return GPUS["A10G"]
    if "A100" in upper:
        return GPUS["A100-80" if "80G" in upper else "A100-40"]
    if "H100" in upper:
        return GPUS["H100-PCIe" if "PCIE" in upper else "H100"]
    for key in ("H200", "L4", "T4"):
        if key in upper.split("-"):
            return GPUS[key]
    raise ValueError(f"no step-time figures for GPU {name!r}: known are {', '.join(GPUS)} "
                     "(codefu_helpers.step_time.GPUS)")


@dataclass
class RunTime:
    """Seconds of a GRPO run on one GPU: per step by phase, the evaluations, and the whole run."""

    gpu: GPU
    model: str
    steps: int
    step_phases: dict[str, float]
    evaluations: list[tuple[int, int, float]] = field(default_factory=list)  # (problems, samples each, seconds)
    startup_s: float = ASSUMED["startup_s"]

    @property
    def step_s(self) -> float:
        return sum(self.step_phases.values())

    @property
    def evaluation_s(self) -> float:
        return sum(seconds for _, _, seconds in self.evaluations)

    @property
    def total_s(self) -> float:
        return self.startup_s + self.steps * self.step_s + self.evaluation_s

    def report(self) -> str:
        phases = ", ".join(f"{name} {seconds:.1f}" for name, seconds in self.step_phases.items())
        evaluations = "".join(f"\n  evaluation of {p} problems x {k} samples: {s:.0f} s"
                              for p, k, s in self.evaluations)
        return (f"step-time estimate for {self.model} on {self.gpu.name} ({self.gpu.source}):\n"
                f"  {self.steps} steps x {self.step_s:.1f} s ({phases}){evaluations}\n"
                f"  + {self.startup_s:.0f} s start-up = {self.total_s / 60:.1f} min\n"
                f"  assumed: {', '.join(f'{k}={v:g}' for k, v in ASSUMED.items())}")


def _dtype_bytes(cfg) -> int:
    return 4 if cfg.model.dtype == "float32" else 2


def _forward_flops_per_token(shape: ModelShape, context: float) -> float:
    """Weights (2 per parameter: a multiply and an add) plus attention scores and their weighted sum."""
    return 2 * shape.params + 4 * shape.layers * shape.q_dim * context


def _mean_lengths(cfg) -> tuple[float, float]:
    """(prompt, response) tokens of a mean sample."""
    prompt = min(cfg.data.max_prompt_length, ASSUMED["prompt_tokens"])
    return prompt, ASSUMED["response_fraction"] * cfg.data.max_response_length


def generation_seconds(cfg, gpu: GPU, shape: ModelShape, prompts: int, n: int) -> dict[str, float]:
    """Seconds for vLLM to draw n samples for each of `prompts` prompts at data.max_response_length: prefill and
    decode (the batch split into waves that fit the KV cache)."""
    dtype_bytes = _dtype_bytes(cfg)
    prompt, response = _mean_lengths(cfg)
    sequences = prompts * n
    weight_bytes = shape.params * dtype_bytes
    utilisation = cfg.rollout.gpu_memory_utilization or 0.5
    kv_budget = utilisation * gpu.memory_gb * 1e9 - weight_bytes - ASSUMED["vllm_reserved_gib"] * GIB
    kv_per_token = shape.kv_bytes_per_token(dtype_bytes)
    fit = max(1, int(kv_budget // (kv_per_token * (prompt + cfg.data.max_response_length))))
    waves = math.ceil(sequences / fit)
    decode_steps = waves * cfg.data.max_response_length
    # every sequence reads its own KV cache once per token it decodes: sum over its tokens of the context so far
    kv_reads = sequences * response * (prompt + response / 2) * kv_per_token
    bandwidth = gpu.bandwidth_gb_s * 1e9 * ASSUMED["bandwidth_efficiency"]
    flops = gpu.bf16_tflops * 1e12 * ASSUMED["prefill_mfu"]
    memory_bound = (decode_steps * weight_bytes + kv_reads) / bandwidth
    compute_bound = sequences * response * _forward_flops_per_token(shape, prompt + response / 2) / flops
    return {"prefill": prompts * prompt * _forward_flops_per_token(shape, prompt / 2) / flops,
            "decode": max(memory_bound, compute_bound) + decode_steps * ASSUMED["decode_step_overhead_s"]}


def judge_seconds(cfg, samples: int) -> float:
    return samples * ASSUMED["judge_s_per_sample"] / max(1, cfg.reward.num_workers)


def step_seconds(cfg, gpu: str | GPU, shape: ModelShape | None = None) -> dict[str, float]:
    """Seconds of one GRPO step on `gpu`, by phase: prefill, decode, judge, log_probs, update, overhead."""
    gpu = gpu if isinstance(gpu, GPU) else gpu_spec(gpu)
    shape = shape or model_shape(cfg.model.path)
    prompts, n = cfg.data.train_batch_size, cfg.rollout.n
    prompt, response = _mean_lengths(cfg)
    tokens = prompts * n * (prompt + response)  # every sample's prompt and response go through the trainer
    per_token = _forward_flops_per_token(shape, (prompt + response) / 2)
    flops = gpu.bf16_tflops * 1e12 * ASSUMED["train_mfu"]
    forward = tokens * per_token / flops
    alg = cfg.algorithm
    update = (3 + (1 if cfg.model.gradient_checkpointing else 0)) * forward  # backward: twice a forward
    log_probs = forward * (2 if alg.use_kl_loss else 1)  # the old policy's, and the reference's
    if cfg.uses_critic:  # its values pass and its own updates, a model of about the policy's size
        log_probs += forward
        update += cfg.critic_epochs * (3 + (1 if cfg.model.gradient_checkpointing else 0)) * forward
    return {**generation_seconds(cfg, gpu, shape, prompts, n), "judge": judge_seconds(cfg, prompts * n),
            "log_probs": log_probs, "update": alg.ppo_epochs * update, "overhead": ASSUMED["step_overhead_s"]}


def evaluation_seconds(cfg, gpu: str | GPU, problems: int, samples: int, shape: ModelShape | None = None) -> float:
    """Seconds to sample and judge `samples` samples for each of `problems` problems with the rollout engine."""
    gpu = gpu if isinstance(gpu, GPU) else gpu_spec(gpu)
    shape = shape or model_shape(cfg.model.path)
    generate = sum(generation_seconds(cfg, gpu, shape, problems, samples).values())
    return generate + judge_seconds(cfg, problems * samples) + ASSUMED["evaluation_overhead_s"]


def estimate_run(cfg, gpu: str | GPU, eval_problems: int = 0, eval_samples: int = 0, evaluations: int = 2,
                 shape: ModelShape | None = None) -> RunTime:
    """A whole run: start-up, cfg.trainer.total_steps steps and `evaluations` evaluations of eval_problems x
    eval_samples (notebook 03: one before training, one after)."""
    gpu = gpu if isinstance(gpu, GPU) else gpu_spec(gpu)
    shape = shape or model_shape(cfg.model.path)
    run = RunTime(gpu, cfg.model.path, cfg.trainer.total_steps, step_seconds(cfg, gpu, shape))
    if eval_problems and eval_samples:
        seconds = evaluation_seconds(cfg, gpu, eval_problems, eval_samples, shape)
        run.evaluations = [(eval_problems, eval_samples, seconds)] * evaluations
    return run
