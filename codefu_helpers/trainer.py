"""The GRPO training loop, single process: the one-worker case of the distributed design.

One step, top to bottom (`GRPOTrainer.step`):

    1. take the next `train_batch_size` problems (a seeded permutation per epoch: the data position is the step)
    2. rollout: n samples per prompt (rollout.backend: HF generate, or a vLLM engine in each worker)
    3. reward: every sample through the sandboxed judge, concurrently, starting while generation goes on;
       samples whose judging failed are *excluded* (and counted), never trained on as reward 0
    4. advantages: group-relative (GRPO, or Dr.GRPO without the std)
    5. old (and reference) log-probs, then `ppo_epochs` passes over shuffled mini-batches, each split into
       micro-batches whose gradients accumulate, clipped, one optimizer step per mini-batch; then the new weights
       go to the rollout engine (vLLM: streamed in, and the next step's log-prob gap checks they arrived exactly)
    6. metrics (console line, metrics.jsonl, MLflow), checkpoint every `save_every` steps and at the end

This loop is the controller. The model, its reference, the optimizer and the rollout engine live in the workers
(`codefu_helpers.workers`): one worker in this process when trainer.nnodes x trainer.gpus_per_node = 1, else one
Ray actor per device (CPU: per process) holding FSDP2 shards, with prompts and samples split over them. The loop
is the same either way.

Samples, log-probs and losses are laid out as (B, T): B samples, T response tokens (right-padded). Prompts are
left-padded so that every response starts in the same column, which lets the log-prob pass compute logits for
the response positions only.

    python -m codefu_helpers.train --config configs/ci_tiny.yaml --output-dir runs/tiny
"""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
from torch.utils.checkpoint import checkpoint

from . import grpo
from .config import check_native_trainer
from .checkpoint import TrainerState, latest_checkpoint, load_trainer_state, write_checkpoint
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


# Bytes of float32 logits one chunk of the vocabulary projection may hold: (rows, V) * 4 <= this.
LOGITS_CHUNK_BYTES = 64 << 20


def response_log_probs(model, batch: PackedBatch, temperature: float = 1.0, with_entropy: bool = False,
                       entropy_grad: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probs (B, T) of the response tokens under `model` at the sampling temperature, and entropy (B, T).

    The full (B, T, V) logits are never materialised: the decoder's hidden states at the response positions are
    projected onto the vocabulary a chunk of rows at a time (`LOGITS_CHUNK_BYTES` of float32 logits), temperature
    applied inside the chunk, and with a gradient each chunk is checkpointed so backward recomputes its logits
    instead of keeping them. The entropy carries a gradient only with `entropy_grad` (an entropy bonus).
    """
    T = batch.response_ids.shape[1]
    decoder, head = _decoder_and_head(model)
    hidden = decoder(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                     position_ids=batch.position_ids, use_cache=False).last_hidden_state  # (B, P + T, H)
    hidden = hidden[:, -(T + 1):-1]  # (B, T, H): position P-1+t predicts response token t
    B, _, H = hidden.shape
    flat, ids = hidden.reshape(B * T, H), batch.response_ids.reshape(B * T)
    rows = max(1, LOGITS_CHUNK_BYTES // (4 * head.weight.shape[0]))
    needs_grad = torch.is_grad_enabled() and flat.requires_grad

    def chunk(h: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = head(h).float()  # (rows, V)
        if temperature != 1.0:
            z = z / temperature
        lse = torch.logsumexp(z, dim=-1)
        log_prob = z.gather(-1, y[:, None])[:, 0] - lse
        if not with_entropy:
            return log_prob, lse.new_zeros(())
        entropy = lse - (torch.softmax(z, dim=-1) * z).sum(-1)
        return log_prob, entropy if entropy_grad else entropy.detach()

    parts = [checkpoint(chunk, flat[i:i + rows], ids[i:i + rows], use_reentrant=False) if needs_grad
             else chunk(flat[i:i + rows], ids[i:i + rows]) for i in range(0, B * T, rows)]
    log_probs = torch.cat([lp for lp, _ in parts]).reshape(B, T)
    entropy = torch.cat([e for _, e in parts]).reshape(B, T) if with_entropy else None
    return log_probs, entropy


def _decoder_and_head(model):
    """(decoder returning last_hidden_state, vocabulary projection) of an HF causal LM."""
    if getattr(model.config, "final_logit_softcapping", None):
        raise ValueError(f"{type(model).__name__} soft-caps its logits (final_logit_softcapping), which the chunked "
                         "log-prob computation does not apply; such models are not supported by this trainer")
    head = model.get_output_embeddings()
    decoder = model.get_decoder() if hasattr(model, "get_decoder") else None
    if head is None or decoder is None:
        raise ValueError(f"{type(model).__name__} does not expose get_decoder() and get_output_embeddings(): the "
                         "trainer needs an HF causal LM (decoder + lm_head)")
    return decoder, head


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

# actor_loss metrics that are already normalised by the whole mini-batch (summed over its micro-batches)
SUMMED_LOSS_METRICS = ("loss", "pg_loss", "entropy", "kl_loss")
MODEL_DIR = "model"                         # <output_dir>/model: the final model (SageMaker: /opt/ml/model)
TRAINING_RECORD = "codefu_training.json"    # in the model folder: the problems trained on, what GRPO started from


def rollout_log_prob_check(samples: list[Sample], old: list[torch.Tensor], use_rollout_log_probs: bool,
                           cap: float) -> tuple[dict, list | None]:
    """How far the engine's log-probs are from the policy's (old) ones over a step's sampled tokens, and, with
    `use_rollout_log_probs` (rollout.use_rollout_log_probs), the truncated importance weights min(exp(old - rollout),
    cap) per token (cap: rollout.rollout_is_cap).

    With an exact weight sync the gap is float noise (< 1e-3 on CPU float32); a large one means the engine
    sampled from other weights or another distribution. Engines without log-probs (HF) report nothing."""
    if not samples or any(s.rollout_log_probs is None for s in samples):
        return {}, None
    gaps = [old[i] - torch.tensor(s.rollout_log_probs, device=old[i].device, dtype=old[i].dtype)
            for i, s in enumerate(samples)]  # (R_i,) each: old - rollout
    flat = torch.cat(gaps)
    if flat.numel() == 0:
        return {}, None
    out = {"rollout_logprob_diff_max": float(flat.abs().max()), "rollout_logprob_diff_mean": float(flat.abs().mean())}
    if not use_rollout_log_probs:
        return out, None
    weights = [torch.exp(g).clamp(max=cap) for g in gaps]
    out["rollout_is_weight_mean"] = float(torch.cat(weights).mean())
    out["rollout_is_capped_frac"] = float((torch.exp(flat) > cap).float().mean())
    return out, weights


class GRPOTrainer:
    """The controller: runs the loop over a `WorkerGroup` (policy, reference, optimizer, rollout engine, judge pool)."""

    def __init__(self, cfg, train_rows: list[dict], output_dir: str | Path, model=None, tokenizer=None,
                 compute_score: Callable | None = None, logger=None, val_rows: list[dict] | None = None,
                 start_model: str | None = None):
        check_native_trainer(cfg)
        self.cfg = cfg
        self.rows = train_rows
        if not train_rows:
            raise ValueError("no training problems: the train parquet is empty (see notebook 01's dropped table)")
        self.val_rows = val_rows
        if cfg.trainer.test_freq and not val_rows:
            raise ValueError(f"trainer.test_freq={cfg.trainer.test_freq} needs validation problems: pass val_rows "
                             f"(the rows of data.val_path={cfg.data.val_path!r})")
        overlap = sorted(set(problem_names(train_rows)) & set(problem_names(val_rows))) if val_rows else []
        if overlap:
            raise ValueError(f"{len(overlap)} validation problems are also training problems, e.g. {overlap[:3]}: "
                             "validate on a held-out split (notebook 01's test.parquet)")
        self.start_model = start_model or cfg.model.path  # what GRPO starts from (after any warm start)
        self.output_dir = Path(output_dir)
        self.checkpoint_root = Path(cfg.checkpoint.dir) if cfg.checkpoint.dir else self.output_dir / "checkpoints"
        self.seed = cfg.trainer.seed
        torch.manual_seed(self.seed)
        self.total_steps = total_steps(cfg, len(train_rows))
        updates = self.total_steps * cfg.mini_batches_per_step * cfg.algorithm.ppo_epochs
        from .workers import build_worker_group  # here: the workers package builds on this module

        self.workers = build_worker_group(cfg, self.start_model, compute_score=compute_score, total_updates=updates,
                                          model=model, tokenizer=tokenizer)
        self.tokenizer = self.workers.tokenizer
        self.logger = logger
        self.step_done = 0  # optimizer steps completed (== training steps)
        self.resumed_run_id: str | None = None  # MLflow run of the checkpoint `resume` loaded
        self.last_step: dict[str, Any] = {}  # the latest step's samples, verdicts and advantages (for inspection)

    @property
    def model(self):
        """The policy (an HF model) of a one-worker run; with more workers it exists only as their shards."""
        return self._only_worker().policy.lm

    @property
    def ref_model(self):
        reference = self._only_worker().policy.reference
        return reference.lm if reference is not None else None

    @property
    def rollout(self):
        return self._only_worker().engine

    def _only_worker(self):
        worker = getattr(self.workers, "worker", None)
        if worker is None:
            raise AttributeError(f"the model lives in {self.workers.world_size} Ray workers as FSDP2 shards; read the "
                                 "exported model (<output_dir>/model) or a checkpoint's model/ folder instead")
        return worker

    def close(self) -> None:
        """Stops the workers (and the Ray they started); the trainer cannot step afterwards."""
        self.workers.close()

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
        params = sampling_params(cfg, seed=self.seed * 100_003 + step)

        # 2 + 3: each worker generates its share of the prompts; the judge scores each sample as soon as it exists
        self.workers.take_timing()
        t0 = time.perf_counter()
        groups, judged = self.workers.generate(rows, cfg.rollout.n, params)
        t_generate = time.perf_counter() - t0
        results = self.workers.judge.results([handle for _, _, handle in judged])
        t_reward = time.perf_counter() - t0 - t_generate

        samples = [s for _, s, _ in judged]
        group_ids = [g for g, _, _ in judged]
        keep = [0.0 if r.judge_error or not s.response_ids else 1.0 for s, r in zip(samples, results)]
        metrics = self._rollout_metrics(groups, samples, results)
        metrics["time_generate"] = t_generate
        metrics["time_reward_wait"] = t_reward
        metrics["rollout_backend"] = self.workers.backend
        self.last_step = {"rows": rows, "samples": samples, "group_ids": group_ids, "results": results, "keep": keep}

        if samples and sum(keep) > 0:
            metrics.update(self._update(samples, group_ids, results, keep))
            t0 = time.perf_counter()
            self.workers.sync_weights()  # the next rollout samples from the updated policy (one HF worker: no-op)
            metrics["time_weight_sync"] = time.perf_counter() - t0
        else:
            metrics["skipped_update"] = 1.0
        metrics["step_seconds"] = time.perf_counter() - start
        timing = self.workers.take_timing()
        metrics["time_orchestration"] = timing["wall"] - timing["busy"]  # worker calls beyond the slowest worker's work
        metrics["world_size"] = self.workers.world_size
        if (self.workers.ray_nodes or 1) > 1:
            metrics["ray_nodes"] = self.workers.ray_nodes
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
        # old (and reference) log-probs, computed where the workers were dealt the samples
        old, ref = self.workers.log_probs(samples)
        t_logprob = time.perf_counter() - t0
        rollout_check, is_weights = rollout_log_prob_check(samples, old, cfg.rollout.use_rollout_log_probs,
                                                           cfg.rollout.rollout_is_cap)

        items = {i: {"sample": s, "keep": keep[i], "advantage": float(advantages[i]), "old": old[i], "ref": ref[i],
                     "is_weight": is_weights[i] if is_weights is not None else None} for i, s in enumerate(samples)}
        per_update: dict[str, list[float]] = {}  # one value per optimizer update (mini-batch), averaged at the end
        grad_norms, lrs, nonfinite = [], [], 0
        mini = alg.ppo_mini_batch_size * cfg.rollout.n  # samples per optimizer step
        order_rng = torch.Generator().manual_seed(self.seed * 7_919 + self.step_done)
        for _ in range(alg.ppo_epochs):
            order = torch.randperm(len(samples), generator=order_rng).tolist()
            for m_lo in range(0, len(order), mini):
                mini_idx = order[m_lo:m_lo + mini]
                # every micro-batch on every worker divides by the whole mini-batch's token (or sample) count
                norms = grpo.loss_normalisers(
                    pack([samples[i] for i in mini_idx], 0, "cpu", [keep[i] for i in mini_idx]).response_mask)
                out = self.workers.update(items, mini_idx, norms)
                for k, v in mini_batch_metrics(out["micro"], norms["total_tokens"]).items():
                    per_update.setdefault(k, []).append(v)
                nonfinite += not out["finite"]  # a non-finite gradient skipped this optimizer step: say so
                lrs.append(out["lr"])  # the rate this update used
                grad_norms.append(out["grad_norm"])
        metrics = {k: float(np.mean(v)) for k, v in per_update.items()}
        metrics["nonfinite_grad_steps"] = nonfinite
        metrics["grad_norm"] = float(np.mean(grad_norms)) if grad_norms else 0.0
        metrics["lr"] = float(np.mean(lrs)) if lrs else 0.0
        metrics["advantage_mean"] = float(advantages[torch.tensor(keep) > 0].mean()) if any(keep) else 0.0
        metrics["advantage_abs_mean"] = float(advantages[torch.tensor(keep) > 0].abs().mean()) if any(keep) else 0.0
        metrics["optimizer_steps"] = len(grad_norms)
        metrics["time_update"] = time.perf_counter() - t0 - t_logprob
        metrics["time_logprob"] = t_logprob
        metrics.update(rollout_check)
        if "kl_loss" in metrics:
            metrics["kl"] = metrics["kl_loss"]
        self.last_step["advantages"] = advantages
        return metrics

    # -- the loop --------------------------------------------------------------------------------------

    def resume(self) -> int:
        """Loads the latest checkpoint (if any), saved by any number of workers; returns the step to continue from."""
        path = latest_checkpoint(self.checkpoint_root)
        if path is None:
            return 0
        state = load_trainer_state(path)
        if not (path / "dcp").is_dir():
            raise ValueError(f"{path} has no dcp/ folder (sharded model and optimizer state): an older version of "
                             "this trainer wrote it; resume with that version, or train into a new output dir")
        self.workers.load(path)  # resharded onto this run's workers, then synced into their rollout engines
        self.step_done = state.step
        self.resumed_run_id = state.mlflow_run_id
        print(f"resumed from {path} (step {state.step}; saved by {state.world_size} worker(s), continuing on "
              f"{self.workers.world_size})", flush=True)
        return state.step

    def save(self, step: int) -> Path:
        state = TrainerState(step=step, data_position=step * self.cfg.data.train_batch_size,
                             mlflow_run_id=getattr(self.logger, "run_id", None), config=self.cfg.to_dict(),
                             world_size=self.workers.world_size)
        return write_checkpoint(self.checkpoint_root, state, self.workers.save, keep_last=self.cfg.checkpoint.keep_last)

    def fit(self, start_step: int = 0, stop_after_step: int | None = None) -> list[dict]:
        """Runs steps start_step+1 .. total_steps (1-based in logs); `stop_after_step` stops early (an interruption).

        The final model goes to <output_dir>/model with `codefu_training.json` beside its weights (the problems
        trained on and the model GRPO started from), so an evaluation can tell seen from held-out problems."""
        cfg = self.cfg
        total = self.total_steps
        history = []
        for step in range(start_step, total):
            metrics = self.step(step)
            self.step_done = step + 1
            if cfg.trainer.test_freq and ((step + 1) % cfg.trainer.test_freq == 0 or step + 1 == total):
                metrics.update(self.validate(step + 1))
            stopping = stop_after_step is not None and step + 1 >= stop_after_step
            if (cfg.checkpoint.save_every and (step + 1) % cfg.checkpoint.save_every == 0) or step + 1 == total \
                    or stopping:
                t0 = time.perf_counter()
                self.save(step + 1)
                metrics["time_checkpoint"] = time.perf_counter() - t0
            history.append({"step": step + 1, **metrics})
            if self.logger is not None:
                self.logger.log(step + 1, total, metrics)
            if stopping:
                return history
        if latest_checkpoint(self.checkpoint_root) is None:
            self.save(total)
        self.export(self.output_dir / MODEL_DIR)
        return history

    def export(self, path: str | Path) -> Path:
        """The policy in HF format (transformers and vLLM load it), with the training record beside it."""
        path = Path(path)
        self.workers.export(path)
        record = {"start_model": self.start_model, "train_problems": problem_names(self.rows),
                  "steps": self.step_done, "config": self.cfg.to_dict()}
        (path / TRAINING_RECORD).write_text(json.dumps(record, indent=1, default=str))
        return path

    def validate(self, step: int) -> dict[str, float]:
        """pass@1 on the validation problems (verl's val score): `trainer.val_samples` samples each, judged on all
        their tests by `codefu_helpers.evaluate`, at the training temperature; seeded by the step. The workers
        split the problems between them."""
        cfg = self.cfg
        t0 = time.perf_counter()
        params = sampling_params(cfg, seed=self.seed * 100_003 + 50_000 + step)
        out = self.workers.validate(self.val_rows, cfg.trainer.val_samples, params)
        return {"val/pass_at_1": out["pass_rate"], "val/problems": out["problems"],
                "val/judge_errors": out["judge_errors"], "time_validate": time.perf_counter() - t0}


@dataclass
class TrainingData:
    """What a run trains on, validates on and starts from, resolved from the config (`prepare_training`)."""

    rows: list[dict]              # training problems (verl rows) after data.tiers / data.max_problems
    val_rows: list[dict] | None   # validation problems (data.val_path) when trainer.test_freq > 0
    start_model: str              # model.path, or the warm-started model when model.warm_start_steps > 0


def select_training_rows(rows: list[dict], data_cfg, source: str = "data.train_path") -> list[dict]:
    """data.tiers, then data.max_problems (the problems with the shortest statement + reference solution)."""
    if data_cfg.tiers is not None:
        present = sorted({(r.get("extra_info") or {}).get("tier") for r in rows} - {None})
        rows = [r for r in rows if (r.get("extra_info") or {}).get("tier") in data_cfg.tiers]
        if not rows:
            raise ValueError(f"data.tiers={data_cfg.tiers} keeps no problem of {source}, whose tiers are {present}")
    if data_cfg.max_problems is not None:
        from .data import load_problems
        from .sft import smallest_problems

        language = (rows[0].get("extra_info") or {}).get("language") or "python" if rows else "python"
        rows = smallest_problems(rows, load_problems(data_cfg.raw_path), data_cfg.max_problems, language)
    return rows


def prepare_training(cfg) -> TrainingData:
    """Reads data.train_path (and data.val_path), selects the training problems, runs the warm start if asked."""
    from .data import read_verl_parquet

    for key, path in (("data.train_path", cfg.data.train_path),
                      ("data.val_path", cfg.data.val_path if cfg.trainer.test_freq else None)):
        if path is not None and not Path(path).exists():
            raise FileNotFoundError(f"{key}={path!r} does not exist. Write it with notebook 01 or:\n  python -m "
                                    f"codefu_helpers.data --dataset data/sample --output-dir {Path(path).parent}")
    rows = select_training_rows(read_verl_parquet(cfg.data.train_path), cfg.data)
    val_rows = read_verl_parquet(cfg.data.val_path) if cfg.trainer.test_freq else None
    start_model = cfg.model.path
    if cfg.model.warm_start_steps:
        from .sft import warm_started_model

        start_model = str(warm_started_model(cfg.model.path, rows, cfg.data.raw_path, steps=cfg.model.warm_start_steps,
                                             lr=cfg.model.warm_start_lr, seed=cfg.trainer.seed))
    return TrainingData(rows, val_rows, start_model)


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


def load_model_and_tokenizer(model_cfg, path: str | None = None):
    """The policy and its tokenizer from `path` or model.path: an HF id, a local directory, or tiny://qwen2."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from .tiny_model import resolve_model_path

    path = resolve_model_path(path or model_cfg.path)
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


def mini_batch_metrics(micro_metrics: list[tuple[dict, int]], total_tokens: int) -> dict[str, float]:
    """One mini-batch's metrics from its micro-batches' `actor_loss` metrics and response-token counts.

    Loss terms (SUMMED_LOSS_METRICS) are already divided by the whole mini-batch's token/sample count, so the
    mini-batch's value is their sum; the ratio metrics (clip fractions, ppo_kl) are token means over one micro-batch,
    so each is weighted by its micro-batch's share of the mini-batch's tokens. Either way the result equals the
    metric computed on the whole mini-batch at once."""
    out: dict[str, float] = {}
    for metrics, tokens in micro_metrics:
        share = tokens / max(total_tokens, 1)
        for k, v in metrics.items():
            out[k] = out.get(k, 0.0) + (1.0 if k in SUMMED_LOSS_METRICS else share) * float(v)
    return out


def sampling_params(cfg, seed: int) -> SamplingParams:
    """The rollout's sampling settings from the experiment config (what the loss assumes, see rollout)."""
    return SamplingParams(max_new_tokens=cfg.data.max_response_length, temperature=cfg.rollout.temperature,
                          top_p=cfg.rollout.top_p, top_k=cfg.rollout.top_k, seed=seed,
                          max_prompt_tokens=cfg.data.max_prompt_length,
                          batch_size=cfg.rollout.generation_batch_size)


def problem_names(rows: list[dict]) -> list[str]:
    """The problem names of verl rows (reward_model.ground_truth.name), in order."""
    return [r["reward_model"]["ground_truth"]["name"] for r in rows]


def pass_rate(model, tokenizer, rows: list[dict], n: int, params: SamplingParams, engine=None) -> dict[str, float]:
    """pass@1 of `model` on verl rows: n samples per problem judged on all tests by `codefu_helpers.evaluate`
    (the same path as notebook 05 and the evaluation CLI), so before/after, validation and evaluation agree.
    `engine`: a rollout engine holding the model's weights (a synced vLLM engine) to sample with instead of HF."""
    from .eval_datasets import problem_from_verl_row
    from .evaluate import EvalConfig, evaluate_model

    cfg = EvalConfig(n_samples=n, ks=(1,), max_new_tokens=params.max_new_tokens, temperature=params.temperature,
                     top_p=params.top_p, seed=params.seed, batch_size=params.batch_size,
                     max_prompt_tokens=params.max_prompt_tokens, n_bootstrap=1)
    was_training = model.training
    try:
        evaluation = evaluate_model([problem_from_verl_row(r) for r in rows], engine or HFRollout(model, tokenizer),
                                    cfg, progress=False)
    finally:
        model.train(was_training)
    summary = evaluation.summary
    value = summary["pass_at_k"]["1"]["value"]
    return {"pass_rate": math.nan if value is None else float(value), "problems": len(rows),
            "samples": int(summary["samples"]), "judge_errors": int(summary["judge_errors"]),
            "solved_samples": int(evaluation.samples["solved"].sum())}
