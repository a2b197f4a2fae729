"""The GRPO training loop, single process: the one-worker case of the distributed design.

One step, top to bottom (`GRPOTrainer.step`):

    1. take the next `train_batch_size` problems (a seeded permutation per epoch: the data position is the step)
    2. rollout: n samples per prompt (HF generate here; vLLM behind the same interface)
    3. reward: every sample through the sandboxed judge, concurrently, starting while generation goes on;
       samples whose judging failed are *excluded* (and counted), never trained on as reward 0
    4. advantages: group-relative (GRPO, or Dr.GRPO without the std)
    5. old (and reference) log-probs, then `ppo_epochs` passes over shuffled mini-batches, each split into
       micro-batches whose gradients accumulate, clipped, one optimizer step per mini-batch
    6. metrics (console line, metrics.jsonl, MLflow), checkpoint every `save_every` steps and at the end

Samples, log-probs and losses are laid out as (B, T): B samples, T response tokens (right-padded). Prompts are
left-padded so that every response starts in the same column, which lets the log-prob pass compute logits for
the response positions only.

    python -m codefu_helpers.train --config configs/ci_tiny.yaml --output-dir runs/tiny
"""

from __future__ import annotations

import copy
import math
import random
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from . import grpo
from .checkpoint import (TrainerState, latest_checkpoint, load_trainer_state, restore_optimizer_and_rng,
                         save_checkpoint, save_hf_model)
from .rollout import Group, HFRollout, Sample, SamplingParams


# ------------------------------------------------------------------------------------------------ batches


@dataclass
class PackedBatch:
    input_ids: torch.Tensor       # (B, P + T) left-padded prompt, then right-padded response
    attention_mask: torch.Tensor  # (B, P + T)
    position_ids: torch.Tensor    # (B, P + T)
    response_ids: torch.Tensor    # (B, T)
    response_mask: torch.Tensor   # (B, T) float, 1 on response tokens that count
    prompt_width: int             # P


def pack(samples: list[Sample], pad_id: int, device: torch.device | str = "cpu",
         weights: list[float] | None = None) -> PackedBatch:
    """Pads samples so that every response starts at column P. `weights` zero a sample's mask (excluded)."""
    width = max(len(s.prompt_ids) for s in samples)
    length = max(1, max(len(s.response_ids) for s in samples))
    ids, attn, resp, mask = [], [], [], []
    for i, s in enumerate(samples):
        left, right = width - len(s.prompt_ids), length - len(s.response_ids)
        ids.append([pad_id] * left + s.prompt_ids + s.response_ids + [pad_id] * right)
        attn.append([0] * left + [1] * (len(s.prompt_ids) + len(s.response_ids)) + [0] * right)
        resp.append(s.response_ids + [pad_id] * right)
        w = 1.0 if weights is None else weights[i]
        mask.append([w] * len(s.response_ids) + [0.0] * right)
    input_ids = torch.tensor(ids, device=device)
    attention_mask = torch.tensor(attn, device=device)
    position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    return PackedBatch(input_ids, attention_mask, position_ids, torch.tensor(resp, device=device),
                       torch.tensor(mask, device=device, dtype=torch.float32), width)


def response_log_probs(model, batch: PackedBatch, temperature: float = 1.0, with_entropy: bool = False,
                       entropy_grad: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probs (B, T) of the response tokens under `model` (sampling temperature applied), and entropy (B, T).

    The entropy carries a gradient only with `entropy_grad` (an entropy bonus); otherwise it is a metric."""
    T = batch.response_ids.shape[1]
    out = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, position_ids=batch.position_ids,
                logits_to_keep=T + 1, use_cache=False)
    logits = out.logits[:, :-1].float()  # (B, T, V): position P-1+t predicts response token t
    if temperature != 1.0:
        logits = logits / temperature
    log_probs = grpo.token_log_probs(logits, batch.response_ids)
    entropy = None
    if with_entropy:
        if entropy_grad:
            entropy = grpo.token_entropy(logits)
        else:
            with torch.no_grad():
                entropy = grpo.token_entropy(logits.detach())
    return log_probs, entropy


# ------------------------------------------------------------------------------------------------ rewards


@dataclass
class Scored:
    score: float
    passed: bool           # every private test passed
    judge_error: bool      # judging failed: the sample is excluded from training
    status: str
    details: dict[str, Any]


def score_sample(compute_score: Callable, text: str, row: dict, reward_mode: str) -> Scored:
    """Runs the reward function; a crash of the reward machinery itself is a judge error, never a 0 reward."""
    try:
        out = compute_score(row["data_source"], text, row["reward_model"]["ground_truth"],
                            extra_info=row.get("extra_info"), reward_mode=reward_mode)
    except Exception as exc:  # noqa: BLE001 - any failure here is the judge's, not the sample's
        return Scored(0.0, False, True, "judge_error", {"error": f"{type(exc).__name__}: {exc}"})
    judge_error = bool(out.get("judge_error")) or out.get("status") == "judge_error"
    return Scored(float(out["score"]), out.get("status") == "accepted", judge_error, str(out.get("status", "")), out)


# ------------------------------------------------------------------------------------------------ trainer


class GRPOTrainer:
    """Owns the policy, the optional reference model, the optimizer, the rollout engine and the judge calls."""

    def __init__(self, cfg, train_rows: list[dict], output_dir: str | Path, model=None, tokenizer=None,
                 compute_score: Callable | None = None, logger=None):
        self.cfg = cfg
        self.rows = train_rows
        if not train_rows:
            raise ValueError("no training problems: the train parquet is empty (see notebook 01's dropped table)")
        self.output_dir = Path(output_dir)
        self.checkpoint_root = Path(cfg.checkpoint.dir) if cfg.checkpoint.dir else self.output_dir / "checkpoints"
        self.device = torch.device(cfg.model.resolved_device())
        self.seed = cfg.trainer.seed
        torch.manual_seed(self.seed)
        if model is None or tokenizer is None:
            model, tokenizer = load_model_and_tokenizer(cfg.model)
        self.model = model.to(self.device)
        self.tokenizer = tokenizer
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.ref_model = None
        if cfg.algorithm.use_kl_loss:
            self.ref_model = copy.deepcopy(self.model).eval().requires_grad_(False)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=cfg.optim.lr, weight_decay=cfg.optim.weight_decay)
        self.total_steps = total_steps(cfg, len(train_rows))
        updates = self.total_steps * cfg.mini_batches_per_step * cfg.algorithm.ppo_epochs
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lr_lambda(cfg.optim.warmup_steps, cfg.optim.lr_schedule, updates))
        self.rollout = HFRollout(self.model, tokenizer)
        if compute_score is None:
            from .reward import compute_score
        self.compute_score = compute_score
        self.logger = logger
        self.step_done = 0  # optimizer steps completed (== training steps)
        self.resumed_run_id: str | None = None  # MLflow run of the checkpoint `resume` loaded

    # -- data ------------------------------------------------------------------------------------------

    def batch_rows(self, step: int) -> list[dict]:
        """The problems of training step `step` (0-based): a seeded permutation per epoch."""
        size = self.cfg.data.train_batch_size
        n = len(self.rows)
        out = []
        for position in range(step * size, (step + 1) * size):
            epoch, offset = divmod(position, n)
            order = np.random.default_rng([self.seed, epoch]).permutation(n) if self.cfg.data.shuffle else np.arange(n)
            out.append(self.rows[int(order[offset])])
        return out

    # -- one step --------------------------------------------------------------------------------------

    def step(self, step: int) -> dict[str, float]:
        cfg = self.cfg
        start = time.perf_counter()
        rows = self.batch_rows(step)
        params = SamplingParams(max_new_tokens=cfg.data.max_response_length, temperature=cfg.rollout.temperature,
                                top_p=cfg.rollout.top_p, seed=self.seed * 100_003 + step,
                                max_prompt_tokens=cfg.data.max_prompt_length,
                                batch_size=cfg.rollout.generation_batch_size)

        # 2 + 3: generate, and judge each chunk of samples as soon as it exists
        futures: list[tuple[int, Sample, Future]] = []
        with ThreadPoolExecutor(max_workers=max(1, cfg.reward.num_workers)) as pool:
            def on_sample(group_index: int, sample: Sample) -> None:
                row = rows[group_index]
                futures.append((group_index, sample, pool.submit(
                    score_sample, self.compute_score, sample.text, row, cfg.reward.mode)))

            t0 = time.perf_counter()
            groups = self.rollout.generate([r["prompt"] for r in rows], cfg.rollout.n, params, on_sample=on_sample)
            t_generate = time.perf_counter() - t0
            scored = [(g, s, f.result()) for g, s, f in futures]
        t_reward = time.perf_counter() - t0 - t_generate

        samples = [s for _, s, _ in scored]
        group_ids = [g for g, _, _ in scored]
        results = [r for _, _, r in scored]
        keep = [0.0 if r.judge_error or not s.response_ids else 1.0 for s, r in zip(samples, results)]
        metrics = self._rollout_metrics(groups, samples, results)
        metrics["time_generate"] = t_generate
        metrics["time_reward_wait"] = t_reward

        if samples and sum(keep) > 0:
            metrics.update(self._update(samples, group_ids, results, keep))
        else:
            metrics["skipped_update"] = 1.0
        metrics["step_seconds"] = time.perf_counter() - start
        metrics["tokens_per_second"] = metrics["response_tokens"] / max(metrics["time_generate"], 1e-9)
        return metrics

    def _rollout_metrics(self, groups: list[Group], samples: list[Sample], results: list[Scored]) -> dict:
        valid = [r for r in results if not r.judge_error]
        scores = [r.score for r in valid]
        lengths = [len(s.response_ids) for s in samples]
        statuses: dict[str, int] = {}
        for r in results:
            statuses[r.status] = statuses.get(r.status, 0) + 1
        return {
            "reward_mean": float(np.mean(scores)) if scores else float("nan"),
            "reward_min": float(np.min(scores)) if scores else float("nan"),
            "reward_max": float(np.max(scores)) if scores else float("nan"),
            "pass_rate": float(np.mean([r.passed for r in valid])) if valid else float("nan"),
            "samples": len(samples),
            "judge_errors": len(results) - len(valid),
            "prompts_skipped": sum(1 for g in groups if g.skipped),
            "empty_responses": sum(1 for n in lengths if n == 0),
            "truncated": sum(1 for s in samples if s.finish_reason == "length"),
            "response_length_mean": float(np.mean(lengths)) if lengths else 0.0,
            "response_length_max": max(lengths) if lengths else 0,
            "response_tokens": int(sum(lengths)),
            **{f"status/{k}": v for k, v in statuses.items()},
        }

    def _update(self, samples: list[Sample], group_ids: list[int], results: list[Scored], keep: list[float]) -> dict:
        cfg, alg = self.cfg, self.cfg.algorithm
        t0 = time.perf_counter()
        rewards = torch.tensor([r.score for r in results], dtype=torch.float32)
        # excluded samples must not move their group's baseline: give them their own singleton groups
        labels = [g if k else f"excluded-{i}" for i, (g, k) in enumerate(zip(group_ids, keep))]
        advantages = grpo.group_advantages(rewards, labels, norm_by_std=alg.norm_adv_by_std,
                                           epsilon=alg.adv_epsilon)  # (B,)
        pad = self.tokenizer.pad_token_id
        micro = alg.ppo_micro_batch_size

        # old (and reference) log-probs, in micro-batches, no grad
        old, ref = [None] * len(samples), [None] * len(samples)
        self.model.eval()
        with torch.no_grad():
            for lo in range(0, len(samples), micro):
                batch = pack(samples[lo:lo + micro], pad, self.device)
                lp, _ = response_log_probs(self.model, batch, cfg.rollout.temperature)
                for j in range(lp.shape[0]):
                    old[lo + j] = lp[j, :len(samples[lo + j].response_ids)]
                if self.ref_model is not None:
                    rlp, _ = response_log_probs(self.ref_model, batch, cfg.rollout.temperature)
                    for j in range(rlp.shape[0]):
                        ref[lo + j] = rlp[j, :len(samples[lo + j].response_ids)]
        t_logprob = time.perf_counter() - t0

        self.model.train()
        sums: dict[str, list[float]] = {}
        grad_norms = []
        mini = alg.ppo_mini_batch_size * cfg.rollout.n  # samples per optimizer step
        order_rng = torch.Generator().manual_seed(self.seed * 7_919 + self.step_done)
        for _ in range(alg.ppo_epochs):
            order = torch.randperm(len(samples), generator=order_rng).tolist()
            for m_lo in range(0, len(order), mini):
                mini_idx = order[m_lo:m_lo + mini]
                mini_mask = pack([samples[i] for i in mini_idx], pad, "cpu", [keep[i] for i in mini_idx]).response_mask
                norms = grpo.loss_normalisers(mini_mask)
                self.optimizer.zero_grad(set_to_none=True)
                for u_lo in range(0, len(mini_idx), micro):
                    idx = mini_idx[u_lo:u_lo + micro]
                    batch = pack([samples[i] for i in idx], pad, self.device, [keep[i] for i in idx])
                    log_prob, entropy = response_log_probs(self.model, batch, cfg.rollout.temperature,
                                                           with_entropy=True, entropy_grad=alg.entropy_coef != 0.0)
                    width = log_prob.shape[1]
                    old_lp = _stack([old[i] for i in idx], width, self.device)
                    ref_lp = _stack([ref[i] for i in idx], width, self.device) if self.ref_model is not None else None
                    adv = grpo.token_advantages(advantages[idx].to(self.device), batch.response_mask)
                    out = grpo.actor_loss(
                        log_prob, old_lp, adv, batch.response_mask, ref_log_prob=ref_lp, entropy=entropy,
                        clip_ratio_low=alg.clip_ratio_low, clip_ratio_high=alg.clip_ratio_high,
                        clip_ratio_c=alg.clip_ratio_c, loss_agg_mode=alg.loss_agg_mode,
                        entropy_coef=alg.entropy_coef, use_kl_loss=alg.use_kl_loss, kl_coef=alg.kl_coef,
                        kl_estimator=alg.kl_estimator, max_response_length=cfg.data.max_response_length,
                        **norms)
                    out.loss.backward()
                    for k, v in out.metrics.items():
                        sums.setdefault(k, []).append(float(v))
                max_norm = cfg.optim.grad_clip if cfg.optim.grad_clip is not None else math.inf
                grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm)
                if torch.isfinite(grad_norm):
                    self.optimizer.step()
                else:  # a non-finite gradient would poison the weights: skip this mini-batch, and say so
                    sums.setdefault("nonfinite_grad_steps", []).append(1.0)
                self.scheduler.step()
                grad_norms.append(float(grad_norm))
        metrics = {k: float(np.mean(v)) for k, v in sums.items()}
        metrics["grad_norm"] = float(np.mean(grad_norms)) if grad_norms else 0.0
        metrics["lr"] = self.scheduler.get_last_lr()[0]
        metrics["optimizer_steps"] = len(grad_norms)
        metrics["time_update"] = time.perf_counter() - t0 - t_logprob
        metrics["time_logprob"] = t_logprob
        if "kl_loss" in metrics:
            metrics["kl"] = metrics["kl_loss"]
        return metrics

    # -- the loop --------------------------------------------------------------------------------------

    def resume(self) -> int:
        """Loads the latest checkpoint (if any); returns the step to continue from."""
        path = latest_checkpoint(self.checkpoint_root)
        if path is None:
            return 0
        from transformers import AutoModelForCausalLM

        state = load_trainer_state(path)
        loaded = AutoModelForCausalLM.from_pretrained(path / "model", torch_dtype=next(self.model.parameters()).dtype)
        self.model.load_state_dict(loaded.state_dict())
        restore_optimizer_and_rng(path, self.optimizer, self.scheduler)
        self.step_done = state.step
        self.resumed_run_id = state.mlflow_run_id
        print(f"resumed from {path} (step {state.step})", flush=True)
        return state.step

    def save(self, step: int) -> Path:
        state = TrainerState(step=step, data_position=step * self.cfg.data.train_batch_size,
                             mlflow_run_id=getattr(self.logger, "run_id", None), config=self.cfg.to_dict())
        return save_checkpoint(self.checkpoint_root, state, self.model, self.tokenizer, self.optimizer,
                               self.scheduler, keep_last=self.cfg.checkpoint.keep_last)

    def fit(self, start_step: int = 0, stop_after_step: int | None = None) -> list[dict]:
        """Runs steps start_step+1 .. total_steps (1-based in logs); `stop_after_step` stops early (an interruption)."""
        cfg = self.cfg
        total = self.total_steps
        history = []
        for step in range(start_step, total):
            metrics = self.step(step)
            self.step_done = step + 1
            history.append({"step": step + 1, **metrics})
            if self.logger is not None:
                self.logger.log(step + 1, total, metrics)
            if cfg.checkpoint.save_every and (step + 1) % cfg.checkpoint.save_every == 0 and step + 1 < total:
                self.save(step + 1)
            if stop_after_step is not None and step + 1 >= stop_after_step:
                if (step + 1) % (cfg.checkpoint.save_every or total + 1) != 0:
                    self.save(step + 1)
                return history
        if total > start_step or latest_checkpoint(self.checkpoint_root) is None:
            self.save(total)
        save_hf_model(self.model, self.tokenizer, self.output_dir / "final")
        return history


def total_steps(cfg, n_problems: int) -> int:
    """trainer.total_steps, or enough steps for trainer.total_epochs passes over the problems."""
    if cfg.trainer.total_steps is not None:
        return cfg.trainer.total_steps
    return max(1, math.ceil(cfg.trainer.total_epochs * n_problems / cfg.data.train_batch_size))


def lr_lambda(warmup: int, schedule: str, updates: int) -> Callable[[int], float]:
    """Learning-rate multiplier per optimizer update: linear warm-up, then constant or cosine to zero."""
    def factor(update: int) -> float:
        if warmup and update < warmup:
            return (update + 1) / (warmup + 1)
        if schedule == "cosine":
            progress = min(1.0, (update - warmup) / max(1, updates - warmup))
            return 0.5 * (1.0 + math.cos(math.pi * progress))
        return 1.0
    return factor


def load_model_and_tokenizer(model_cfg):
    """The policy and its tokenizer from model.path: an HF id, a local directory, or tiny://qwen2."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from .tiny_model import resolve_model_path

    path = resolve_model_path(model_cfg.path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, model_cfg.dtype))
    if model_cfg.gradient_checkpointing:
        model.gradient_checkpointing_enable()
    return model, tokenizer


def _stack(rows: list[torch.Tensor], width: int, device) -> torch.Tensor:
    out = torch.zeros(len(rows), width, device=device)
    for i, r in enumerate(rows):
        out[i, :r.shape[0]] = r
    return out


def pass_rate(model, tokenizer, rows: list[dict], n: int, params: SamplingParams, compute_score: Callable,
              reward_mode: str = "linear", workers: int = 2) -> dict[str, float]:
    """Share of n samples per problem that pass all private tests, and the mean reward (for before/after)."""
    groups = HFRollout(model, tokenizer).generate([r["prompt"] for r in rows], n, params)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(score_sample, compute_score, s.text, rows[g.prompt_index], reward_mode)
                   for g in groups for s in g.samples]
        scored = [f.result() for f in futures]
    valid = [s for s in scored if not s.judge_error]
    return {"pass_rate": float(np.mean([s.passed for s in valid])) if valid else math.nan,
            "reward_mean": float(np.mean([s.score for s in valid])) if valid else math.nan,
            "samples": len(scored), "judge_errors": len(scored) - len(valid)}
