"""`trainer.engine: verl`: the experiment config rendered as verl (>= 0.9) hydra overrides, and the commands
that run them.

Key idea: every key of `ExperimentConfig` is accounted for. It either maps onto verl's `ppo_trainer` config
(`verl/trainer/config/ppo_trainer.yaml`), or is inert for verl for a stated reason (an HF-only setting when
verl generates with vLLM), or has no verl equivalent, which is a `ConfigError` naming the key, never a
silently dropped setting. A key added to the config later that this module does not know is an error too.

    from codefu_helpers.launch.verl_engine import verl_overrides, verl_command
    verl_overrides(cfg)   # ["algorithm.adv_estimator=grpo", "data.train_files=...", ...]
    verl_command(cfg)     # [python, "-m", "verl.trainer.main_ppo", *overrides]
    verl_config_name(cfg) # ppo_trainer, or ppo_megatron_trainer with trainer.strategy=megatron
    python -m codefu_helpers.train --config configs/codefu7b_stage1.yaml --set trainer.engine=verl --dry-run

The reward is this package's `compute_score`, loaded by verl's own loader from
`reward.custom_reward_function.path=pkg://codefu_helpers.reward` (verl 0.9 reads the reward function from
the `reward` section; the legacy top-level `custom_reward_function` key is ignored there). Environment the
Ray workers need (judge pool size, MLflow URI) travels as `+ray_kwargs.ray_init.runtime_env.env_vars.*`
overrides, so the overrides alone describe the run.

Checkpoints across hosts. verl's FSDP workers each write their shard files (model/optim/extra_state per rank) into
`global_step_N/actor` on their own host's disk; only rank 0 prunes old steps and records the last one in
`latest_checkpointed_iteration.txt`. SageMaker hosts share no disk, so this module makes the run whole: rank 0 also
saves the whole model in Hugging Face format (`checkpoint.save_contents` includes `hf_model`, gathered from every
shard) into `global_step_N/actor/huggingface`, which `export_model` copies to the model directory on the head, no
shard of another host needed; `prune_steps` keeps the newest `checkpoint.keep_last` steps on every host (the entry
point runs it on the others); and `resume_step` checks, before verl resumes, that the recorded step is complete on
this disk (every rank's files, each a readable torch archive, the HF model's safetensors whole) and otherwise points
verl at the newest complete one. On a restarted job SageMaker downloads the union of all hosts' uploads onto every
host, so each rank finds its own shard.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import sys
import zipfile
from pathlib import Path
from typing import Any

from ..config import ConfigError, ExperimentConfig
from ..tiny_model import TINY_SCHEME

__all__ = ["REWARD_FUNCTION_PATH", "REWARD_FUNCTION_NAME", "VERL_MAIN", "verl_overrides", "verl_command", "verl_config_name",
           "export_model", "final_model_host", "host_holdings", "training_record", "prune_steps", "resume_step", "step_problems",
           "write_selected_train_rows", "INERT_FOR_VERL"]

VERL_MAIN = "verl.trainer.main_ppo"
VERL_HOOK = "codefu_helpers.launch.verl_hooks.setup"  # run in every Ray worker process (checkpoint.save_every_minutes)
# verl's base hydra config per trainer.strategy (verl/trainer/config/<name>.yaml)
VERL_CONFIG_NAMES = {"fsdp": "ppo_trainer", "megatron": "ppo_megatron_trainer"}
REWARD_FUNCTION_PATH = "pkg://codefu_helpers.reward"
REWARD_FUNCTION_NAME = "compute_score"

# Our reward.mode -> codefu_helpers.reward's canonical reward_mode names.
_REWARD_MODES = {"linear": "codefu_stage2", "stage1": "codefu_stage1", "binary": "binary"}
# model.dtype (the compute dtype) -> verl's short name (FSDP mixed precision's param_dtype; the reference's stored
# dtype) and its long name (the actor engine's `dtype`, the rollout's dtype). The actor's own weights, gradients and
# optimizer state stay float32 (`model_dtype=fp32`, reduce_dtype=fp32): a bf16 *stored* weight cannot take a 1e-6
# update. PPO's critic (algorithm.adv_estimator=gae) is kept the same way: fp32 master weights, model.dtype compute.
# With trainer.strategy=megatron the distributed optimizer of Megatron-LM keeps the fp32 main copy of each bf16
# weight (use_distributed_optimizer, main_grads/exp_avg/exp_avg_sq in fp32), and `megatron.dtype` is the compute dtype.
_VERL_DTYPES = {"bfloat16": ("bf16", "bfloat16"), "float16": ("fp16", "float16")}
# Keys that do nothing when verl runs, with the reason (kept next to the code that relies on it).
INERT_FOR_VERL = {
    "rollout.generation_batch_size": "HF generate only; verl generates with vLLM (rollout.backend must be vllm)",
    "rollout.backend": "verl always generates with vLLM; validate() requires rollout.backend=vllm for it",
    "trainer.engine": "selects verl itself",
    "trainer.output_dir": "not a verl key: it places the checkpoints (checkpoint.dir=null), the default MLflow "
                          "database and the exported model (<output_dir>/model)",
    "data.raw_path": "read only for data.max_problems (applied before verl starts) and model.warm_start_steps",
    "model.warm_start_lr": "read only when model.warm_start_steps > 0, which verl does not have",
    "model.warm_start_target_p": "read only when model.warm_start_steps > 0, which verl does not have",
    "algorithm.kl_coef": "read only when algorithm.use_kl_loss is true (then mapped)",
    "algorithm.kl_estimator": "read only when algorithm.use_kl_loss is true (then mapped)",
    "tracking.uri": "read only when tracking.backend=mlflow (then passed as MLFLOW_TRACKING_URI)",
    "trainer.worker_timeout_s": "the native trainer's deadline per worker call; verl drives its own workers",
    "tracking.samples_logged": "the native trainer's samples.jsonl; verl logs no samples here: its own dump "
                               "(trainer.rollout_data_dir) writes every sample of every step with the problem's whole "
                               "ground truth (all its tests: megabytes a row for CodeContests) and cannot be limited "
                               "to N, so this renderer does not set it",
}

SAVE_CONTENTS = ("model", "optimizer", "extra", "hf_model")
LATEST_RECORD = "latest_checkpointed_iteration.txt"  # verl's record of the last step it saved (written by the driver)
_ENV = "+ray_kwargs.ray_init.runtime_env.env_vars."
_ACTOR = "actor_rollout_ref.actor."
_ROLLOUT = "actor_rollout_ref.rollout."
_REF = "actor_rollout_ref.ref."
_PLAIN = re.compile(r"^[A-Za-z0-9_/][A-Za-z0-9_./-]*$")
_YAML_WORDS = {"null", "none", "true", "false", "yes", "no", "on", "off", "~", "nan", "inf"}


def _leaf_keys(obj, prefix: str = "") -> list[str]:
    keys = []
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            keys += _leaf_keys(value, f"{prefix}{f.name}.")
        else:
            keys.append(f"{prefix}{f.name}")
    return keys


def hydra_value(value: Any) -> str:
    """A Python value as text that hydra's override parser reads back as the same value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(hydra_value(v) for v in value) + "]"
    text = str(value)
    numeric = re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", text)
    # hydra reads digits joined by "_" as one number (0.5_5 is 0.55), so a string such as verl's "0.5_5.0" is quoted
    underscored_number = re.fullmatch(r"[+-]?[\d_.eE+-]*\d[\d_.eE+-]*", text) and "_" in text
    if _PLAIN.match(text) and text.lower() not in _YAML_WORDS and not numeric and not underscored_number:
        return text
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _absolute(path: str | Path) -> str:
    return str(Path(path).expanduser().resolve())


class _Renderer:
    """Collects verl keys in order and remembers which of our keys were consumed."""

    def __init__(self, cfg: ExperimentConfig):
        self.cfg = cfg
        self.values: dict[str, Any] = {}
        self.problems: list[str] = []
        self.seen: set[str] = set()

    def put(self, ours: str | None, verl_key: str, value: Any) -> None:
        if ours:
            self.seen.add(ours)
        self.values[verl_key] = value

    def fail(self, ours: str, message: str) -> None:
        self.seen.add(ours)
        self.problems.append(f"{message} (trainer.engine=verl)")

    def take(self, ours: str) -> None:
        self.seen.add(ours)


def verl_overrides(cfg: ExperimentConfig) -> list[str]:
    """The config as verl `key=value` overrides for `python -m verl.trainer.main_ppo`; ConfigError lists
    every key that verl cannot honour."""
    cfg.validate()
    r = _Renderer(cfg)
    m, d, ro, a, o = cfg.model, cfg.data, cfg.rollout, cfg.algorithm, cfg.optim
    rw, t, ck, tr = cfg.reward, cfg.trainer, cfg.checkpoint, cfg.tracking

    megatron = t.strategy == "megatron"
    r.put("algorithm.adv_estimator", "algorithm.adv_estimator", a.adv_estimator)  # verl's names are ours
    r.put("algorithm.gamma", "algorithm.gamma", a.gamma)
    r.put("algorithm.lam", "algorithm.lam", a.lam)
    r.put("algorithm.norm_adv_by_std", "algorithm.norm_adv_by_std_in_grpo", a.norm_adv_by_std)
    r.put(None, "algorithm.use_kl_in_reward", False)  # the KL is a loss term here, never a reward penalty
    # dynamic sampling is verl's filter_groups; metric "reward" is the reward as trained on (with any overlong penalty).
    # verl 0.9.1's trainer (trainer.use_v1, its default) refills dropped groups without a cap: its
    # filter_groups.max_num_gen_batches is ignored there (with a warning), so only "no cap" maps
    r.put("algorithm.dynamic_sampling", "algorithm.filter_groups.enable", a.dynamic_sampling)
    if a.dynamic_sampling:
        r.put(None, "algorithm.filter_groups.metric", "reward")
        if a.dynamic_sampling_max_rounds is None:
            r.put("algorithm.dynamic_sampling_max_rounds", "algorithm.filter_groups.max_num_gen_batches", 0)
        else:
            r.fail("algorithm.dynamic_sampling_max_rounds",
                   f"algorithm.dynamic_sampling_max_rounds={a.dynamic_sampling_max_rounds}: verl 0.9.1's trainer "
                   "refills dropped groups until the batch is full, with no cap on generation rounds (it ignores "
                   "algorithm.filter_groups.max_num_gen_batches); set algorithm.dynamic_sampling_max_rounds=null")
    else:
        r.take("algorithm.dynamic_sampling_max_rounds")

    # model
    if m.path.startswith(TINY_SCHEME):
        r.fail("model.path", f"model.path={m.path!r} is built by this package, and verl loads HF ids or "
                             "directories: build it with `python -m codefu_helpers.tiny_model OUT_DIR` and set "
                             "model.path=OUT_DIR")
    else:
        # a local directory becomes absolute; anything else is an HF hub id
        r.put("model.path", "actor_rollout_ref.model.path", _absolute(m.path) if Path(m.path).exists() else m.path)
    if m.dtype in _VERL_DTYPES:
        compute, compute_name = _VERL_DTYPES[m.dtype]
        if megatron:
            _megatron_precision(r, _ACTOR, compute_name)
            r.put("model.dtype", _ACTOR + "megatron.dtype", compute_name)
            r.put(None, _REF + "megatron.dtype", compute_name)
        else:
            _fsdp_precision(r, _ACTOR + "fsdp_config.", compute, compute_name)
            r.put("model.dtype", _ACTOR + "fsdp_config.dtype", compute_name)
            r.put(None, _REF + "fsdp_config.model_dtype", compute)  # never trained: stored as it computes
        r.put(None, _ROLLOUT + "dtype", compute_name)
    else:
        r.fail("model.dtype", f"model.dtype={m.dtype!r}: verl's FSDP workers compute in bfloat16 or float16; "
                              "set model.dtype=bfloat16")
    if m.device in ("auto", "cuda"):
        r.put("model.device", "trainer.device", "cuda")
    else:
        r.fail("model.device", f"model.device={m.device!r}: verl places one worker per GPU itself; set "
                               "model.device=cuda (or auto)")
    r.put("model.gradient_checkpointing", "actor_rollout_ref.model.enable_gradient_checkpointing",
          m.gradient_checkpointing)
    # LoRA: verl 0.9.1's FSDP engine wraps the actor in peft (rank, alpha, target modules, no dropout), takes the
    # reference as the base with the adapter off, and ships only the adapter to vLLM, which must then load the base
    # weights from the model's files (load_format safetensors, not verl's default of dummy weights)
    if m.lora_rank:
        if megatron:
            r.fail("model.lora_rank", f"model.lora_rank={m.lora_rank} with trainer.strategy=megatron: this renderer "
                                      "maps LoRA for verl's FSDP workers only; use trainer.strategy=fsdp")
            r.take("model.lora_alpha")
            r.take("model.lora_target_modules")
        else:
            r.put("model.lora_rank", "actor_rollout_ref.model.lora_rank", m.lora_rank)
            r.put("model.lora_alpha", "actor_rollout_ref.model.lora_alpha", m.lora_alpha)
            r.put("model.lora_target_modules", "actor_rollout_ref.model.target_modules",
                  list(m.lora_target_modules) if m.lora_target_modules else "all-linear")
            r.put(None, _ROLLOUT + "load_format", "safetensors")
        if m.lora_dropout:
            r.fail("model.lora_dropout", f"model.lora_dropout={m.lora_dropout}: verl 0.9.1's FSDP engine builds its "
                                         "LoRA layers without dropout; set model.lora_dropout=0")
        else:
            r.take("model.lora_dropout")
    else:
        for key in ("model.lora_rank", "model.lora_alpha", "model.lora_dropout", "model.lora_target_modules"):
            r.take(key)  # full fine-tuning: verl's lora_rank default is 0 (validate() refuses the others set alone)
    if m.warm_start_steps:
        r.fail("model.warm_start_steps", f"model.warm_start_steps={m.warm_start_steps}: verl has no supervised "
                                         "warm start; start from a model that is already warm, and set it to 0")
    else:
        r.take("model.warm_start_steps")

    # data: data.tiers / data.max_problems select rows the way the native trainer does, into a parquet that
    # write_selected_train_rows() writes before verl starts (verl's own train_max_samples keeps the first rows)
    # (paths absolute: verl's Ray actors do not share the launching shell's working directory)
    train_files = _absolute(selected_train_path(cfg) if needs_row_selection(cfg) else d.train_path)
    r.put("data.train_path", "data.train_files", train_files)
    r.take("data.tiers")
    r.take("data.max_problems")
    # verl always builds a validation set; without data.val_path (so trainer.test_freq=0) it is never used,
    # and pointing it at the training file keeps verl from failing on a missing path.
    r.put("data.val_path", "data.val_files", _absolute(d.val_path) if d.val_path else train_files)
    r.put("data.max_prompt_length", "data.max_prompt_length", d.max_prompt_length)
    r.put(None, "data.filter_overlong_prompts", True)  # ours drops longer prompts; verl's default raises
    r.put("data.max_response_length", "data.max_response_length", d.max_response_length)
    r.put("data.train_batch_size", "data.train_batch_size", d.train_batch_size)
    r.put("data.shuffle", "data.shuffle", d.shuffle)
    if d.curriculum:  # verl 0.9.1's samplers see no rewards of earlier steps: nothing there skips by outcome
        r.fail("data.curriculum", "data.curriculum=true: verl 0.9.1 has no sampler that skips problems by the outcomes "
                                  "of their earlier visits; use trainer.engine=native, or filter the problems offline "
                                  "with `python -m codefu_helpers.data filter-by-pass-rate`")
    else:
        r.take("data.curriculum")
    r.take("data.curriculum_visits")  # read only with data.curriculum=true (validate() refuses other values)
    r.put("trainer.seed", "data.seed", t.seed)
    r.put(None, _ROLLOUT + "seed", t.seed)

    # rollout
    r.put(None, _ROLLOUT + "name", "vllm")
    r.put("rollout.n", _ROLLOUT + "n", ro.n)
    r.put("rollout.temperature", _ROLLOUT + "temperature", ro.temperature)
    r.put("rollout.top_p", _ROLLOUT + "top_p", ro.top_p)
    r.put("rollout.top_k", _ROLLOUT + "top_k", ro.top_k if ro.top_k > 0 else -1)  # verl: -1 is off, ours 0
    if ro.gpu_memory_utilization is None:
        r.take("rollout.gpu_memory_utilization")  # unset: 0.5, verl's default too
    else:
        r.put("rollout.gpu_memory_utilization", _ROLLOUT + "gpu_memory_utilization", ro.gpu_memory_utilization)
    r.put("rollout.tensor_parallel_size", _ROLLOUT + "tensor_model_parallel_size", ro.tensor_parallel_size)
    # vLLM's sleep mode between generation and update is verl's free_cache_engine
    r.put("rollout.enable_sleep_mode", _ROLLOUT + "free_cache_engine", ro.enable_sleep_mode)
    if ro.cpu_kv_cache_gb is None:
        r.take("rollout.cpu_kv_cache_gb")
    else:
        r.fail("rollout.cpu_kv_cache_gb", f"rollout.cpu_kv_cache_gb={ro.cpu_kv_cache_gb} sizes vLLM on CPU; verl runs "
                                          "vLLM on GPUs: set it to null")
    if ro.fallback == "none":
        r.take("rollout.fallback")
    else:
        r.fail("rollout.fallback", f"rollout.fallback={ro.fallback!r}: verl has no HF fallback when vLLM cannot "
                                   "start; set rollout.fallback=none")
    # importance sampling against vLLM's own log-probs: verl's rollout correction (decoupled mode, no rejection
    # sampling). token / sequence: truncated at the cap; mask: verl's token-level IcePop, whose threshold
    # "<lower>_<upper>" zeroes the weights outside the bounds
    if ro.use_rollout_log_probs:
        r.put("rollout.use_rollout_log_probs", "algorithm.rollout_correction.rollout_is",
              "sequence" if ro.rollout_is == "sequence" else "token")
        r.take("rollout.rollout_is")
        if ro.rollout_is == "mask":
            r.put("rollout.rollout_is_cap", "algorithm.rollout_correction.rollout_is_threshold",
                  f"{ro.rollout_is_threshold_lower!r}_{ro.rollout_is_cap!r}")
        else:
            r.put("rollout.rollout_is_cap", "algorithm.rollout_correction.rollout_is_threshold", ro.rollout_is_cap)
        r.take("rollout.rollout_is_threshold_lower")  # in the threshold with mask; validate() refuses it otherwise
    else:
        r.put("rollout.use_rollout_log_probs", "algorithm.rollout_correction.rollout_is", None)
        for key in ("rollout.rollout_is", "rollout.rollout_is_cap", "rollout.rollout_is_threshold_lower"):
            r.take(key)  # read only with use_rollout_log_probs (validate() refuses rollout_is != token without it)

    # algorithm: batch sizes (prompts for the mini-batch, as verl counts them; samples per GPU below)
    r.put("algorithm.ppo_mini_batch_size", _ACTOR + "ppo_mini_batch_size", a.ppo_mini_batch_size)
    r.put("algorithm.ppo_micro_batch_size", _ACTOR + "ppo_micro_batch_size_per_gpu", a.ppo_micro_batch_size)
    r.put(None, _ROLLOUT + "log_prob_micro_batch_size_per_gpu", a.ppo_micro_batch_size)
    r.put(None, _REF + "log_prob_micro_batch_size_per_gpu", a.ppo_micro_batch_size)
    if a.ppo_max_token_len_per_gpu is None:
        r.put("algorithm.ppo_max_token_len_per_gpu", _ACTOR + "use_dynamic_bsz", False)
    else:  # micro-batches by token budget; verl's ref and rollout log-prob passes follow the actor's budget
        r.put("algorithm.ppo_max_token_len_per_gpu", _ACTOR + "use_dynamic_bsz", True)
        r.put(None, _ACTOR + "ppo_max_token_len_per_gpu", a.ppo_max_token_len_per_gpu)
    r.put("algorithm.ppo_epochs", _ACTOR + "ppo_epochs", a.ppo_epochs)
    if a.adv_epsilon == 1e-6:
        r.take("algorithm.adv_epsilon")  # verl's GRPO advantage uses epsilon=1e-6 and has no key for it
    else:
        r.fail("algorithm.adv_epsilon", f"algorithm.adv_epsilon={a.adv_epsilon} cannot be set in verl (its GRPO "
                                        "advantage always adds 1e-6); set algorithm.adv_epsilon=1e-6")

    # algorithm: loss
    r.put("algorithm.clip_ratio_low", _ACTOR + "clip_ratio_low", a.clip_ratio_low)
    r.put("algorithm.clip_ratio_high", _ACTOR + "clip_ratio_high", a.clip_ratio_high)
    if a.clip_ratio_c is None:
        r.fail("algorithm.clip_ratio_c", "algorithm.clip_ratio_c=null: verl always applies dual-clip; set it "
                                         "to a bound > 1 (3.0 is verl's default)")
    else:
        r.put("algorithm.clip_ratio_c", _ACTOR + "clip_ratio_c", a.clip_ratio_c)
    r.put("algorithm.loss_agg_mode", _ACTOR + "loss_agg_mode", a.loss_agg_mode)
    r.put("algorithm.loss_mode", _ACTOR + "policy_loss.loss_mode", a.loss_mode)  # verl's names are ours
    if a.loss_agg_mode == "seq-mean-token-sum-norm":
        # ours divides by data.max_response_length; verl by the padded batch length unless told
        r.put(None, _ACTOR + "loss_scale_factor", d.max_response_length)
    r.put("algorithm.use_kl_loss", _ACTOR + "use_kl_loss", a.use_kl_loss)
    if a.use_kl_loss:
        r.put("algorithm.kl_coef", _ACTOR + "kl_loss_coef", a.kl_coef)
        r.put("algorithm.kl_estimator", _ACTOR + "kl_loss_type", a.kl_estimator)
    r.put("algorithm.entropy_coef", _ACTOR + "entropy_coeff", a.entropy_coef)

    # optim: verl steps its scheduler once per GRPO step, ours once per optimizer update
    r.put("optim.lr", _ACTOR + "optim.lr", o.lr)
    _warmup_in_steps(r, "optim.warmup_steps", _ACTOR + "optim.lr_warmup_steps", o.warmup_steps,
                     cfg.mini_batches_per_step * a.ppo_epochs, "optimizer updates")
    # FSDP's optimizer config names the schedule lr_scheduler_type, Megatron's lr_decay_style (same words)
    r.put("optim.lr_schedule", _ACTOR + ("optim.lr_decay_style" if megatron else "optim.lr_scheduler_type"),
          o.lr_schedule)
    r.put("optim.weight_decay", _ACTOR + "optim.weight_decay", o.weight_decay)
    if o.grad_clip is None:
        r.fail("optim.grad_clip", "optim.grad_clip=null: verl always clips the gradient norm; set a bound "
                                  "(1.0 is verl's default)")
    else:
        r.put("optim.grad_clip", _ACTOR + "optim.clip_grad", o.grad_clip)
        if not megatron:  # the FSDP actor's own copy of the bound
            r.put(None, _ACTOR + "grad_clip", o.grad_clip)

    # reward: our compute_score through verl's loader; one reward-loop worker per node, each with a judge
    # pool of reward.num_workers processes (ours counts judge processes per host)
    r.put(None, "reward.custom_reward_function.path", REWARD_FUNCTION_PATH)
    r.put(None, "reward.custom_reward_function.name", REWARD_FUNCTION_NAME)
    r.put("reward.mode", "+reward.custom_reward_function.reward_kwargs.reward_mode", _REWARD_MODES[rw.mode])
    r.put(None, "reward.num_workers", t.nnodes)
    r.put("reward.num_workers", _ENV + "CODEFU_JUDGE_WORKERS", rw.num_workers)
    # reward.overlong: soft is verl's DAPO reward manager with its overlong buffer (the same linear penalty, added to
    # the score of every response); verl has nothing that keeps truncated responses out of the loss
    if rw.overlong == "soft":
        r.put("reward.overlong", "reward.reward_manager.name", "dapo")
        r.put(None, "+reward.reward_kwargs.max_resp_len", d.max_response_length)
        r.put(None, "+reward.reward_kwargs.overlong_buffer_cfg.enable", True)
        r.put("reward.overlong_buffer_len", "+reward.reward_kwargs.overlong_buffer_cfg.len", rw.overlong_buffer_len)
        r.put("reward.overlong_penalty_factor", "+reward.reward_kwargs.overlong_buffer_cfg.penalty_factor",
              rw.overlong_penalty_factor)
        r.put(None, "+reward.reward_kwargs.overlong_buffer_cfg.log", True)  # overlong_reward in the reward metrics
    else:
        if rw.overlong == "filter":
            r.fail("reward.overlong", "reward.overlong='filter': verl 0.9.1 has no option that keeps truncated "
                                      "responses out of the loss; use reward.overlong=soft (its DAPO overlong penalty) "
                                      "or none")
        else:
            r.take("reward.overlong")
        r.take("reward.overlong_buffer_len")  # read only with soft (validate() refuses other values)
        r.take("reward.overlong_penalty_factor")

    # trainer
    r.put("trainer.total_epochs", "trainer.total_epochs", t.total_epochs)
    r.put("trainer.total_steps", "trainer.total_training_steps", t.total_steps)
    r.put("trainer.nnodes", "trainer.nnodes", t.nnodes)
    r.put("trainer.gpus_per_node", "trainer.n_gpus_per_node", t.gpus_per_node)
    r.put(None, "actor_rollout_ref.model.use_remove_padding", True)
    if megatron:
        # Megatron-LM workers: each layer split over tensor_parallel_size devices, the layer stack over
        # pipeline_parallel_size stages, data-parallel over the rest (the reference follows the actor's sizes)
        r.take("trainer.strategy")
        r.put("trainer.tensor_parallel_size", _ACTOR + "megatron.tensor_model_parallel_size", t.tensor_parallel_size)
        r.put("trainer.pipeline_parallel_size", _ACTOR + "megatron.pipeline_model_parallel_size",
              t.pipeline_parallel_size)
        if t.sequence_parallel_size > 1:
            r.fail("trainer.sequence_parallel_size", f"trainer.sequence_parallel_size={t.sequence_parallel_size} is "
                   "Ulysses sequence parallelism of verl's FSDP workers; Megatron splits long sequences with its own "
                   "context parallelism, which this config does not set: use trainer.tensor_parallel_size, or "
                   "trainer.strategy=fsdp")
        else:
            r.take("trainer.sequence_parallel_size")
        r.put("trainer.fsdp_cpu_offload", _ACTOR + "megatron.param_offload", t.fsdp_cpu_offload)
        r.put(None, _ACTOR + "megatron.optimizer_offload", t.fsdp_cpu_offload)
        r.put(None, _REF + "megatron.param_offload", t.fsdp_cpu_offload)
    else:
        r.put("trainer.strategy", _ACTOR + "strategy", "fsdp")
        for key in ("trainer.tensor_parallel_size", "trainer.pipeline_parallel_size"):
            r.take(key)  # 1: validate() refuses anything else with FSDP
        # Ulysses sequence parallelism (the reference follows the actor's size); it needs packed, unpadded inputs
        r.put("trainer.sequence_parallel_size", _ACTOR + "ulysses_sequence_parallel_size", t.sequence_parallel_size)
        r.put("trainer.fsdp_cpu_offload", _ACTOR + "fsdp_config.param_offload", t.fsdp_cpu_offload)
        r.put(None, _ACTOR + "fsdp_config.optimizer_offload", t.fsdp_cpu_offload)
        r.put(None, _REF + "fsdp_config.param_offload", t.fsdp_cpu_offload)
    _critic(r, cfg)
    r.put("trainer.test_freq", "trainer.test_freq", t.test_freq if t.test_freq > 0 else -1)
    r.put(None, "trainer.val_before_train", False)  # ours validates every test_freq steps and after the last
    r.put("trainer.val_samples", _ROLLOUT + "val_kwargs.n", t.val_samples)
    r.put(None, _ROLLOUT + "val_kwargs.do_sample", True)  # ours: pass@1 from samples at the rollout temperature
    r.put(None, _ROLLOUT + "val_kwargs.temperature", ro.temperature)
    r.put(None, _ROLLOUT + "val_kwargs.top_p", ro.top_p)
    r.put(None, _ROLLOUT + "val_kwargs.top_k", ro.top_k if ro.top_k > 0 else -1)

    # checkpoints
    if ck.save_every > 0:
        r.put("checkpoint.save_every", "trainer.save_freq", ck.save_every)
    elif t.total_steps is not None:  # "only at the end": verl saves when the step count hits save_freq
        r.put("checkpoint.save_every", "trainer.save_freq", t.total_steps)
    else:
        r.fail("checkpoint.save_every", "checkpoint.save_every=0 (only at the end) needs trainer.total_steps for "
                                        "verl, whose last step is not known in advance; set checkpoint.save_every")
    if ck.save_every_minutes > 0:  # verl has step-based saves only: the hook adds the time-based one
        from .verl_hooks import CHECKPOINT_DIR_ENV, SAVE_EVERY_ENV

        r.put("checkpoint.save_every_minutes", _ENV + SAVE_EVERY_ENV, str(ck.save_every_minutes))
        r.put(None, _ENV + CHECKPOINT_DIR_ENV, _absolute(cfg.checkpoint_dir()))
        r.put(None, "+ray_kwargs.ray_init.runtime_env.worker_process_setup_hook", VERL_HOOK)
    else:
        r.take("checkpoint.save_every_minutes")
    r.put("checkpoint.dir", "trainer.default_local_dir", _absolute(cfg.checkpoint_dir()))
    r.put("checkpoint.resume", "trainer.resume_mode", "auto" if ck.resume else "disable")
    r.put("checkpoint.keep_last", "trainer.max_actor_ckpt_to_keep", ck.keep_last)
    if cfg.uses_critic:
        r.put(None, "trainer.max_critic_ckpt_to_keep", ck.keep_last)
    # rank 0 also writes the whole model in HF format (gathered from every shard): the final model then needs no
    # shard of another host (export_model); a resume loads the shards only
    r.put(None, _ACTOR + "checkpoint.save_contents", list(SAVE_CONTENTS))
    r.put(None, _ACTOR + "checkpoint.load_contents", [c for c in SAVE_CONTENTS if c != "hf_model"])

    # tracking: verl's MLflow logger names the experiment after project_name and the run after experiment_name
    r.put("tracking.backend", "trainer.logger", ["console", "mlflow"] if tr.backend == "mlflow" else ["console"])
    if tr.backend == "mlflow":
        r.put("tracking.uri", _ENV + "MLFLOW_TRACKING_URI", cfg.tracking_uri())
    r.put("tracking.experiment", "trainer.project_name", tr.experiment)
    r.put("tracking.run_name", "trainer.experiment_name", tr.run_name or cfg.name)
    r.take("name")

    r.seen.update(INERT_FOR_VERL)
    unknown = [k for k in _leaf_keys(cfg) if k not in r.seen]
    for key in unknown:
        r.problems.append(f"{key} is not known to the verl renderer, so verl would ignore it: add its mapping (or "
                          "the reason it is inert) to codefu_helpers/launch/verl_engine.py")
    if r.problems:
        raise ConfigError(r.problems)
    return [f"{key}={hydra_value(value)}" for key, value in r.values.items()]


def _warmup_in_steps(r: _Renderer, ours: str, verl_key: str, warmup: int, updates_per_step: int, what: str) -> None:
    """Our warm-up counts updates, verl's counts steps (it steps a schedule once per step): a whole number of steps
    maps, anything else is refused."""
    if warmup % updates_per_step:
        r.fail(ours, f"{ours}={warmup} {what} is not a whole number of steps ({updates_per_step} updates each), "
                     f"which is verl's warm-up unit; use a multiple of {updates_per_step}")
    else:
        r.put(ours, verl_key, warmup // updates_per_step)


def _fsdp_precision(r: _Renderer, prefix: str, compute: str, compute_name: str) -> None:
    """FSDP workers (`prefix`: the actor's fsdp_config. or the critic's fsdp.): float32 master weights and AdamW
    state, forward/backward in the compute dtype, gradients reduced in float32."""
    r.put(None, prefix + "model_dtype", "fp32")
    for part, value in (("param_dtype", compute), ("reduce_dtype", "fp32"), ("buffer_dtype", "fp32")):
        r.put(None, "+" + prefix + f"mixed_precision.{part}", value)


def _megatron_precision(r: _Renderer, prefix: str, compute_name: str) -> None:
    """Megatron workers (`prefix`: the actor's or the critic's section): the distributed optimizer holds the float32
    main weights, gradients and Adam moments of the `compute_name` model."""
    r.put(None, prefix + "megatron.use_distributed_optimizer", True)
    for part in ("main_grads_dtype", "exp_avg_dtype", "exp_avg_sq_dtype"):
        r.put(None, prefix + f"optim.{part}", "fp32")


def _critic(r: _Renderer, cfg: ExperimentConfig) -> None:
    """PPO's critic (algorithm.adv_estimator=gae): verl's `critic` section, built like the actor (same strategy,
    precision, offload and batch sizes). Without a critic every critic key is at its default (validate() refuses
    others) and nothing is written."""
    c, t, a, m = cfg.critic, cfg.trainer, cfg.algorithm, cfg.model
    keys = [f"critic.{k}" for k in _leaf_keys(c)] + ["trainer.critic_warmup", "trainer.critic_gpus"]
    if not cfg.uses_critic:
        for key in keys:
            r.take(key)
        return
    megatron = t.strategy == "megatron"
    if c.model_path is None:  # a copy of the policy's start model under a fresh value head (verl's default too)
        r.take("critic.model_path")
        if "actor_rollout_ref.model.path" in r.values:
            r.put(None, "critic.model.path", r.values["actor_rollout_ref.model.path"])
    elif c.model_path.startswith(TINY_SCHEME):
        r.fail("critic.model_path", f"critic.model_path={c.model_path!r} is built by this package, and verl loads HF "
                                    "ids or directories: build it with `python -m codefu_helpers.tiny_model OUT_DIR`")
    else:
        r.put("critic.model_path", "critic.model.path",
              _absolute(c.model_path) if Path(c.model_path).exists() else c.model_path)
    if "actor_rollout_ref.model.path" in r.values:  # the critic reads the policy's token ids
        r.put(None, "critic.model.tokenizer_path", r.values["actor_rollout_ref.model.path"])
    checkpointing = m.gradient_checkpointing if c.gradient_checkpointing is None else c.gradient_checkpointing
    r.put("critic.gradient_checkpointing", "critic.model.enable_gradient_checkpointing", checkpointing)
    r.put(None, "critic.model.use_remove_padding", True)
    # precision and placement as the actor's
    if m.dtype in _VERL_DTYPES:
        compute, compute_name = _VERL_DTYPES[m.dtype]
        if megatron:
            _megatron_precision(r, "critic.", compute_name)
            r.put(None, "critic.megatron.dtype", compute_name)
        else:
            _fsdp_precision(r, "critic.fsdp.", compute, compute_name)
            r.put(None, "critic.fsdp.dtype", compute_name)
    if megatron:
        r.put(None, "critic.megatron.tensor_model_parallel_size", t.tensor_parallel_size)
        r.put(None, "critic.megatron.pipeline_model_parallel_size", t.pipeline_parallel_size)
        r.put(None, "critic.megatron.param_offload", t.fsdp_cpu_offload)
        r.put(None, "critic.megatron.optimizer_offload", t.fsdp_cpu_offload)
    else:
        r.put(None, "critic.strategy", "fsdp")
        r.put(None, "critic.ulysses_sequence_parallel_size", t.sequence_parallel_size)
        r.put(None, "critic.fsdp.param_offload", t.fsdp_cpu_offload)
        r.put(None, "critic.fsdp.optimizer_offload", t.fsdp_cpu_offload)
    # batch sizes: the actor's mini-batch (verl's default interpolation), the actor's micro-batch or token budget
    r.put(None, "critic.ppo_micro_batch_size_per_gpu", a.ppo_micro_batch_size)
    if a.ppo_max_token_len_per_gpu is not None:
        r.put(None, "critic.ppo_max_token_len_per_gpu", a.ppo_max_token_len_per_gpu)
    r.put("critic.ppo_epochs", "critic.ppo_epochs", cfg.critic_epochs)
    r.put("critic.cliprange_value", "critic.cliprange_value", c.cliprange_value)
    # optimizer: verl steps the critic's schedule once per step, ours once per critic update
    r.put("critic.lr", "critic.optim.lr", c.lr)
    r.put("critic.weight_decay", "critic.optim.weight_decay", c.weight_decay)
    r.put("critic.lr_schedule", "critic.optim." + ("lr_decay_style" if megatron else "lr_scheduler_type"), c.lr_schedule)
    _warmup_in_steps(r, "critic.warmup_steps", "critic.optim.lr_warmup_steps", c.warmup_steps,
                     cfg.mini_batches_per_step * cfg.critic_epochs, "critic updates")
    if c.grad_clip is None:
        r.fail("critic.grad_clip", "critic.grad_clip=null: verl always clips the critic's gradient norm; set a bound "
                                   "(1.0 is verl's default)")
    else:
        r.put("critic.grad_clip", "critic.optim.clip_grad", c.grad_clip)
        if not megatron:
            r.put(None, "critic.grad_clip", c.grad_clip)
    r.put("trainer.critic_warmup", "trainer.critic_warmup", t.critic_warmup)
    if t.critic_gpus:
        r.fail("trainer.critic_gpus", f"trainer.critic_gpus={t.critic_gpus}: verl 0.9's main_ppo maps the critic to "
                                      "the actor's resource pool (global_pool), colocated; set it to 0")
    else:
        r.take("trainer.critic_gpus")


def verl_config_name(cfg: ExperimentConfig) -> str:
    """verl's base hydra config for the config's trainer.strategy (ppo_trainer, or ppo_megatron_trainer)."""
    return VERL_CONFIG_NAMES[cfg.trainer.strategy]


def needs_row_selection(cfg: ExperimentConfig) -> bool:
    return cfg.data.tiers is not None or cfg.data.max_problems is not None


def selected_train_path(cfg: ExperimentConfig) -> Path:
    """Where the rows that data.tiers / data.max_problems select are written for verl."""
    return Path(cfg.trainer.output_dir) / "verl_data" / "train.parquet"


def write_selected_train_rows(cfg: ExperimentConfig) -> Path | None:
    """Writes the training rows the native trainer would use (codefu_helpers.trainer.select_training_rows) as
    the parquet verl reads; None when data.train_path is used as it is."""
    if not needs_row_selection(cfg):
        return None
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..data import VERL_SCHEMA, read_verl_parquet
    from ..trainer import select_training_rows

    rows = select_training_rows(read_verl_parquet(cfg.data.train_path), cfg.data)
    path = selected_train_path(cfg)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=VERL_SCHEMA), path)
    return path


def verl_command(cfg: ExperimentConfig, python: str | None = None) -> list[str]:
    """The argv that trains `cfg` with verl: `python -m verl.trainer.main_ppo <overrides>` (with trainer.strategy=megatron
    `--config-name ppo_megatron_trainer` first, verl's base config for its Megatron workers)."""
    overrides = verl_overrides(cfg)
    name = [] if cfg.trainer.strategy == "fsdp" else ["--config-name", verl_config_name(cfg)]
    return [python or sys.executable, "-m", VERL_MAIN, *name, *overrides]


def _steps(checkpoint_dir: str | Path) -> dict[int, Path]:
    root = Path(checkpoint_dir)
    if not root.is_dir():
        return {}
    return dict(sorted((int(p.name.removeprefix("global_step_")), p) for p in root.glob("global_step_*")
                       if p.is_dir() and p.name.removeprefix("global_step_").isdigit()))


def _torch_archive_problem(path: Path) -> str | None:
    """Why `path` is not a whole torch.save archive (a zip whose central directory, at its end, reads), or None."""
    try:
        with zipfile.ZipFile(path) as archive:
            archive.namelist()
    except (zipfile.BadZipFile, OSError) as exc:
        return f"{path.name} is not a whole torch archive ({exc})"
    return None


def _safetensors_problem(path: Path) -> str | None:
    """Why `path` is not a whole safetensors file (its header names where the last tensor ends), or None."""
    try:
        with open(path, "rb") as f:
            header_len = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(header_len))
        end = max((v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"), default=0)
    except (OSError, ValueError, KeyError) as exc:
        return f"{path.name} is not a readable safetensors file ({exc})"
    size = path.stat().st_size
    return None if size == 8 + header_len + end else f"{path.name} has {size} bytes, its header needs {8 + header_len + end}"


_NO_HF = "no config.json or weights"


def _hf_problems(hf: Path) -> list[str]:
    """Why `hf` is not a whole HF model folder (config.json and whole safetensors files), or []."""
    weights = sorted(hf.glob("*.safetensors"))
    if not (hf / "config.json").exists() or not weights:
        return [_NO_HF]
    return [p for p in map(_safetensors_problem, weights) if p]


def step_problems(step_dir: str | Path) -> list[str]:
    """Why verl's `global_step_N` folder cannot be resumed from or exported (empty when whole): the rank files its
    fsdp_config.json's world size calls for (the actor's, and a PPO critic's when it saved one), each a whole archive;
    the HF model rank 0 saved; the data loader state. verl's FSDP layout only (trainer.strategy=fsdp)."""
    step_dir, problems = Path(step_dir), []
    actor = step_dir / "actor"
    # PPO's critic (algorithm.adv_estimator=gae) saves its shards beside the actor's, in critic/
    for role in [actor] + ([step_dir / "critic"] if (step_dir / "critic").is_dir() else []):
        try:
            world = json.loads((role / "fsdp_config.json").read_text())["world_size"]
        except (OSError, ValueError, KeyError):
            return [f"{role / 'fsdp_config.json'} is missing or unreadable (rank 0 writes it with every save)"]
        for kind in ("model", "optim", "extra_state"):
            for rank in range(world):
                shard = role / f"{kind}_world_size_{world}_rank_{rank}.pt"
                name = shard.name if role == actor else f"critic/{shard.name}"
                problems.append(f"{name} is missing" if not shard.exists() else _torch_archive_problem(shard))
    hf = _hf_problems(actor / "huggingface")
    problems += ["huggingface/ lacks config.json or the weights (checkpoint.save_contents has hf_model)"
                 if p == _NO_HF else p for p in hf]
    data = step_dir / "data.pt"
    problems.append("data.pt is missing" if not data.exists() else _torch_archive_problem(data))
    return [p for p in problems if p]


def resume_step(checkpoint_dir: str | Path, log=print) -> int | None:
    """The step verl should resume from, made so on disk: when the recorded step is incomplete here (an upload that
    stopped part-way, restored onto this disk), the record is rewritten to the newest whole step before it, or
    removed when there is none (verl then starts afresh). Returns that step, or None."""
    root = Path(checkpoint_dir)
    record = root / LATEST_RECORD
    if not record.exists():
        return None
    recorded = int(record.read_text().strip())
    for step, folder in sorted(_steps(root).items(), reverse=True):
        if step > recorded:
            continue
        problems = step_problems(folder)
        if not problems:
            if step != recorded:
                record.write_text(str(step))
                log(f"verl checkpoint: resuming from step {step}, not the recorded {recorded}, which is incomplete here")
            return step
        log(f"verl checkpoint: step {step} is incomplete ({'; '.join(problems[:3])}); passing over it")
    record.unlink()
    log(f"verl checkpoint: no whole step at or before the recorded {recorded}; training starts afresh")
    return None


def prune_steps(checkpoint_dir: str | Path, keep_last: int) -> list[Path]:
    """Deletes all but the newest `keep_last` global_step_N folders on this host (verl prunes on rank 0's host
    only); returns what it deleted."""
    steps = list(_steps(checkpoint_dir).values())
    removed = steps[:-keep_last] if keep_last > 0 else []
    for folder in removed:
        shutil.rmtree(folder, ignore_errors=True)
    return removed


def host_holdings(checkpoint_dir: str | Path) -> dict:
    """What this host's disk holds of verl's run: the step verl's driver recorded (`recorded`; on the driver's host
    only, None elsewhere) and the steps whose whole HF model is here (`hf_steps`; rank 0's host). Run on every host
    by the entry point (`cluster.run_on_hosts`) to find where the final model is."""
    root = Path(checkpoint_dir)
    record = root / LATEST_RECORD
    recorded = int(record.read_text().strip()) if record.exists() else None
    hf_steps = [step for step, folder in _steps(root).items() if not _hf_problems(folder / "actor" / "huggingface")]
    return {"recorded": recorded, "hf_steps": hf_steps}


def final_model_host(holdings: dict[str, dict], head: str) -> tuple[int, str]:
    """(step, host): the last step verl recorded on any host, and the one host that exports its HF model (the head
    when it holds it too, as after a restart restored every host's uploads; else the first in host order). Exactly
    one host writes the model: SageMaker merges every host's /opt/ml/model into one artifact, and two copies
    would clash. FileNotFoundError naming what each host holds when no host has that step's whole model."""
    recorded = [h["recorded"] for h in holdings.values() if h["recorded"] is not None]
    if not recorded:
        raise FileNotFoundError(f"no host has {LATEST_RECORD}: verl saved no checkpoint, so there is no model to "
                                "export (set checkpoint.save_every, or trainer.total_steps with save_every=0)")
    step = max(recorded)
    holders = [host for host, h in holdings.items() if step in h["hf_steps"]]
    if not holders:
        seen = "; ".join(f"{host}: HF models of steps {h['hf_steps'] or 'none'}" for host, h in holdings.items())
        raise FileNotFoundError(f"verl recorded step {step}, but no host holds its whole Hugging Face model "
                                f"(global_step_{step}/actor/huggingface, written by rank 0): {seen}")
    return step, head if head in holders else holders[0]


def training_record(cfg: ExperimentConfig, step: int) -> dict:
    """The `codefu_training.json` of a verl run's model, as the native trainer writes beside its own: the model GRPO
    started from, the problems it trained on (the rows verl read), the steps, the config; notebook 05 reads it to
    find the base model and to tell seen from held-out problems."""
    from ..data import read_verl_parquet
    from ..trainer import problem_names, select_training_rows

    rows = select_training_rows(read_verl_parquet(cfg.data.train_path), cfg.data)
    return {"start_model": cfg.model.path, "train_problems": problem_names(rows), "steps": step, "engine": "verl",
            "config": cfg.to_dict()}


def export_model(checkpoint_dir: str | Path, model_dir: str | Path, step: int | None = None,
                 training: dict | None = None) -> Path:
    """Copies the HF model rank 0 saved with verl's checkpoint of `step` (default: the step recorded on this disk)
    from global_step_N/actor/huggingface into `model_dir`: a whole model, whichever hosts held the shards; `training`
    (see `training_record`) is written beside it as codefu_training.json.
    FileNotFoundError when there is no record (and no step given) or the step has no whole HF model here."""
    root = Path(checkpoint_dir)
    record = root / LATEST_RECORD
    if step is None:
        if not record.exists():
            raise FileNotFoundError(f"{record} does not exist: verl saved no checkpoint, so there is no model to "
                                    "export (set checkpoint.save_every, or trainer.total_steps with save_every=0)")
        step = int(record.read_text().strip())
    hf = root / f"global_step_{step}" / "actor" / "huggingface"
    broken = _hf_problems(hf)
    if broken:
        raise FileNotFoundError(f"{hf} holds no whole Hugging Face model ({'; '.join(broken)}): verl writes it on "
                                "rank 0 when checkpoint.save_contents has hf_model")
    model_dir = Path(model_dir)
    model_dir.mkdir(parents=True, exist_ok=True)
    for item in hf.iterdir():
        target = model_dir / item.name
        if target.is_dir():
            shutil.rmtree(target)
        (shutil.copytree if item.is_dir() else shutil.copy2)(item, target)
    if training is not None:
        from ..checkpoint import TRAINING_RECORD

        (model_dir / TRAINING_RECORD).write_text(json.dumps(training, indent=1, default=str))
    return model_dir

