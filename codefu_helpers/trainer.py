"""The GRPO training loop, single process: the one-worker case of the distributed design.

One step, top to bottom (`GRPOTrainer.step`):

    1. take the next `train_batch_size` problems (a seeded permutation per epoch: the data position is the step)
    2. rollout: n samples per prompt (rollout.backend: HF generate, or a vLLM engine in each worker)
    3. reward: every sample through the sandboxed judge, concurrently, starting while generation goes on;
       samples whose judging failed are *excluded* (and counted), never trained on as reward 0
    4. advantages: group-relative (GRPO, or Dr.GRPO without the std); a group left with fewer than two valid
       samples has no baseline and gets advantage 0 (counted: groups_without_baseline)
    5. old (and reference) log-probs, then `ppo_epochs` passes over shuffled mini-batches, each split into
       micro-batches whose gradients accumulate, clipped, one optimizer step per mini-batch; then the new weights
       go to the rollout engine (vLLM: streamed in, and the next step's log-prob gap checks they arrived exactly)
    6. metrics (console line, metrics.jsonl, MLflow), checkpoint every `save_every` steps and at the end

This loop is the controller. The model, its reference, the optimizer and the rollout engine live in the workers
(`codefu_helpers.workers`): one worker in this process when trainer.nnodes x trainer.gpus_per_node = 1, else one
Ray actor per device (CPU: per process) holding FSDP2 shards, with prompts and samples split over them. The loop
is the same either way.

The loop only orchestrates: the maths is in `grpo` (advantages, losses, step metrics), the model-side work in
`policy_ops` (packing, log-probs) run by the workers, scoring in `reward`, the final model's layout in `checkpoint`
and pass@1 in `evaluate`. Samples, log-probs and losses are laid out as (B, T): B samples, T response tokens.

A worker call (or a judge result) that does not come within trainer.worker_timeout_s fails the step naming the
worker and the phase (a judge result: a judge error). A resumed run compares its config with the checkpoint's
(`resume_config_changes`): a change that would alter the data order or the learning-rate schedule of the steps
already taken is refused, any other change is printed.

    python -m codefu_helpers.train --config configs/ci_tiny.yaml --output-dir runs/tiny
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from . import grpo
from .checkpoint import (MODEL_DIR, TRAINING_RECORD, TrainerState, latest_checkpoint, load_trainer_state,
                         skipped_checkpoints, write_checkpoint)
from .config import ConfigError, check_native_trainer
from .policy_ops import pack
from .reward import Scored
from .rollout import Group, Sample, SamplingParams
from .workers import build_worker_group


class GRPOTrainer:
    """The controller: runs the loop over a `WorkerGroup` (policy, reference, optimizer, rollout engine, judge pool)."""

    def __init__(self, cfg, train_rows: list[dict], output_dir: str | Path, model=None, tokenizer=None,
                 compute_score: Callable | None = None, logger=None, val_rows: list[dict] | None = None,
                 start_model: str | None = None, use_ray: bool | None = None):
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
        self.workers = build_worker_group(cfg, self.start_model, compute_score=compute_score, total_updates=updates,
                                          model=model, tokenizer=tokenizer, use_ray=use_ray)
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
        results = self.workers.judge.results([handle for _, _, handle in judged], cfg.trainer.worker_timeout_s)
        t_reward = time.perf_counter() - t0 - t_generate

        samples = [s for _, s, _ in judged]
        group_ids = [g for g, _, _ in judged]
        keep = [0.0 if r.judge_error or not s.response_ids else 1.0 for s, r in zip(samples, results)]
        metrics = self._rollout_metrics(groups, samples, results)
        metrics["groups_without_baseline"] = grpo.groups_without_baseline(group_ids, keep)
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
        # excluded samples must not move their group's baseline: give them their own singleton groups; a group
        # (or singleton) left with one sample has no baseline at all, so its advantage is 0
        labels = [g if k else f"excluded-{i}" for i, (g, k) in enumerate(zip(group_ids, keep))]
        advantages = grpo.group_advantages(rewards, labels, norm_by_std=alg.norm_adv_by_std,
                                           epsilon=alg.adv_epsilon, lone_sample="zero")  # (B,)
        # old (and reference) log-probs, computed where the workers were dealt the samples
        old, ref = self.workers.log_probs(samples)
        t_logprob = time.perf_counter() - t0
        rollout_check, is_weights = grpo.rollout_log_prob_check([s.rollout_log_probs for s in samples], old,
                                                                cfg.rollout.use_rollout_log_probs,
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
                for k, v in grpo.mini_batch_metrics(out["micro"], norms["total_tokens"]).items():
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
        """Loads the latest complete checkpoint (if any), saved by any number of workers; returns the step to continue
        from. Newer incomplete ones (an interrupted save or upload) are named and passed over."""
        for skipped, problems in skipped_checkpoints(self.checkpoint_root).items():
            print(f"not resuming from {skipped}: incomplete ({'; '.join(problems[:3])}"
                  f"{'; ...' if len(problems) > 3 else ''})", flush=True)
        path = latest_checkpoint(self.checkpoint_root)
        if path is None:
            return 0
        state = load_trainer_state(path)
        check_resume_config(path, self.cfg)
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

    def fit(self, start_step: int = 0, stop_after_step: int | None = None,
            should_stop: Callable[[], bool] | None = None) -> list[dict]:
        """Runs steps start_step+1 .. total_steps (1-based in logs); `stop_after_step` stops early (an interruption).
        `should_stop()` is asked after every step (the SageMaker entry point answers True once SIGTERM arrived): the
        step in progress is finished, saved and logged, then fit returns without exporting the model.

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
            if should_stop is not None and should_stop() and step + 1 < total:
                print(f"stop requested: saving step {step + 1} and stopping", flush=True)
                stopping = True
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


# A resumed run continues a schedule and a data order that these keys fixed when it started.
DATA_ORDER_KEYS = ("data.train_batch_size", "data.shuffle", "trainer.seed", "data.tiers", "data.max_problems")
SCHEDULE_KEYS = ("optim.lr", "optim.warmup_steps", "optim.lr_schedule", "algorithm.ppo_mini_batch_size",
                 "algorithm.ppo_epochs")
# Keys that say where and how a run executes, not what it learns: they may change freely between restarts.
PLACEMENT_KEYS = ("name", "trainer.output_dir", "trainer.nnodes", "trainer.gpus_per_node", "trainer.worker_timeout_s",
                  "trainer.test_freq", "trainer.val_samples", "data.val_path", "reward.num_workers")
PLACEMENT_SECTIONS = ("checkpoint.", "tracking.")


def _flat(tree: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def resume_config_changes(saved: dict, cfg) -> tuple[list[str], list[str]]:
    """(refused, explained): how config `cfg` differs from the `saved` one (a checkpoint's trainer_state.json
    config), one message per key. Refused: what would change the data order (DATA_ORDER_KEYS) or the learning-rate
    schedule of the updates already taken (SCHEDULE_KEYS; the planned length too, under a cosine schedule).
    Explained: every other change of what the run does (say, a new KL coefficient); PLACEMENT_KEYS pass silently."""
    old, new = _flat(saved), _flat(cfg.to_dict())
    refused, explained = [], []
    cosine = "cosine" in (old.get("optim.lr_schedule"), new.get("optim.lr_schedule"))
    for key in sorted(set(old) | set(new)):
        before, after = old.get(key, "(absent)"), new.get(key, "(absent)")
        if before == after or key in PLACEMENT_KEYS or key.startswith(PLACEMENT_SECTIONS):
            continue
        change = f"{key}: {before!r} -> {after!r}"
        if key in DATA_ORDER_KEYS:
            refused.append(f"{change} would change which problems the remaining steps train on (the data order is "
                           "a seeded permutation of the problems, cut into data.train_batch_size per step)")
        elif key in SCHEDULE_KEYS:
            refused.append(f"{change} would change the learning-rate schedule the checkpoint's updates followed")
        elif key in ("trainer.total_steps", "trainer.total_epochs") and cosine:
            refused.append(f"{change} would bend the cosine schedule mid-run (its rates are planned over the "
                           "run's whole length)")
        elif key in ("trainer.total_steps", "trainer.total_epochs"):
            explained.append(f"{change}: the run now ends elsewhere (a constant schedule is unaffected)")
        elif key == "data.train_path":
            explained.append(f"{change}: the data order holds only if it is the same problems in the same order")
        else:
            explained.append(change)
    return refused, explained


def check_resume_config(checkpoint: str | Path, cfg, report: bool = True) -> list[str]:
    """Compares `cfg` with the config checkpoint `checkpoint` was trained with: ConfigError listing what it refuses
    (`resume_config_changes`), else the explained changes, which it also prints (with `report`)."""
    state = load_trainer_state(checkpoint)
    refused, explained = resume_config_changes(state.config, cfg)
    if refused:
        raise ConfigError(refused + [
            f"so this config cannot resume from {checkpoint}: restore those values to continue that run, or start a "
            "new run (another trainer.output_dir / checkpoint.dir, or checkpoint.resume=false without --resume)"])
    if explained and report:
        print(f"resuming from {checkpoint} with a changed config:\n" + "\n".join(f"  {e}" for e in explained),
              flush=True)
    return explained


def total_steps(cfg, n_problems: int) -> int:
    """trainer.total_steps, or enough steps for trainer.total_epochs passes over the problems."""
    if cfg.trainer.total_steps is not None:
        return cfg.trainer.total_steps
    return max(1, math.ceil(cfg.trainer.total_epochs * n_problems / cfg.data.train_batch_size))


def sampling_params(cfg, seed: int) -> SamplingParams:
    """The rollout's sampling settings from the experiment config (what the loss assumes, see rollout)."""
    return SamplingParams(max_new_tokens=cfg.data.max_response_length, temperature=cfg.rollout.temperature,
                          top_p=cfg.rollout.top_p, top_k=cfg.rollout.top_k, seed=seed,
                          max_prompt_tokens=cfg.data.max_prompt_length,
                          batch_size=cfg.rollout.generation_batch_size)


def problem_names(rows: list[dict]) -> list[str]:
    """The problem names of verl rows (reward_model.ground_truth.name), in order."""
    return [r["reward_model"]["ground_truth"]["name"] for r in rows]


