"""The GRPO training loop, single process: the one-worker case of the distributed design.

One step, top to bottom (`GRPOTrainer.step`):

    1. take the next `train_batch_size` problems (a seeded permutation per epoch, read from the data position)
    2. rollout: n samples per prompt (rollout.backend: HF generate, or a vLLM engine in each worker)
    3. reward: every sample through the sandboxed judge, concurrently, starting while generation goes on;
       samples whose judging failed are *excluded* (and counted), never trained on as reward 0; reward.overlong
       excludes responses cut at the budget the same way (filter) or adds DAPO's length penalty (soft). With
       algorithm.dynamic_sampling, groups that carry no gradient (all rewards equal) are dropped and further rounds
       generate for the next problems until the batch is full or the rounds run out (2 and 3 repeat); the problems
       those rounds draw advance the data position, which checkpoints keep
    4. old (and reference) log-probs, and with a critic (PPO) its values, all before any update of the step
    5. advantages per token (`estimators.outcome_advantages`, algorithm.adv_estimator): grpo (group-relative, or
       Dr.GRPO without the std), rloo (leave-one-out), reinforce_plus_plus (whitened return-to-go), gae (GAE on the
       critic's values, with the returns the critic learns); a group (grpo, rloo) left with fewer than two valid
       samples has no baseline and gets advantage 0 (counted: groups_without_baseline)
    6. PPO: critic.ppo_epochs passes of clipped value-loss updates over shuffled mini-batches; then (after the first
       trainer.critic_warmup steps, which train the critic only) `ppo_epochs` passes of the actor over shuffled
       mini-batches, each split into micro-batches whose gradients accumulate, clipped, one optimizer step per
       mini-batch; then the new weights go to the rollout engine (vLLM: streamed in, and the next step's log-prob gap
       checks they arrived exactly)
    7. metrics (console line, metrics.jsonl, MLflow) and a few samples with their verdicts, rewards and advantages
       (samples.jsonl, MLflow; `codefu_helpers.samples`), checkpoint every `save_every` steps, after the first step
       that ends `save_every_minutes` after the last save, and at the end

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

import dataclasses
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from . import estimators, grpo
from .checkpoint import (MODEL_DIR, TRAINING_RECORD, TrainerState, latest_checkpoint, load_trainer_state,
                         skipped_checkpoints, write_checkpoint)
from .config import ConfigError, check_native_trainer
from .curriculum import Curriculum, CurriculumExhausted
from .lora import ADAPTER_DIR
from .policy_ops import pack
from .reward import Scored, overlong_penalty
from .rollout import Group, Sample, SamplingParams
from .samples import step_records
from .workers import build_worker_group
from .workers.interrupt import StepAbandoned


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
        # the schedules plan the updates each model will take: the actor none in the critic's warm-up steps
        actor_steps = self.total_steps - (cfg.trainer.critic_warmup if cfg.uses_critic else 0)
        if actor_steps < 1:
            raise ValueError(f"trainer.critic_warmup={cfg.trainer.critic_warmup} covers all {self.total_steps} steps "
                             "of the run: the actor would never be updated; lower it")
        updates = actor_steps * cfg.mini_batches_per_step * cfg.algorithm.ppo_epochs
        critic_updates = self.total_steps * cfg.mini_batches_per_step * cfg.critic_epochs
        self.workers = build_worker_group(cfg, self.start_model, compute_score=compute_score, total_updates=updates,
                                          critic_updates=critic_updates, model=model, tokenizer=tokenizer,
                                          use_ray=use_ray)
        self.tokenizer = self.workers.tokenizer
        self.logger = logger
        self.step_done = 0  # optimizer steps completed (== training steps)
        # problems of the data order consumed beyond train_batch_size per step so far: those dynamic-sampling rounds
        # drew, and those the curriculum passed over
        self.extra_problems = 0
        self.curriculum = Curriculum(cfg.data.curriculum_visits) if cfg.data.curriculum else None
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
    def critic_model(self):
        """The critic (an HF token-classification model, float32) of a one-worker PPO run; None without a critic."""
        critic = self._only_worker().critic
        return critic.lm if critic is not None else None

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

    def rows_at(self, position: int, count: int) -> list[dict]:
        """`count` problems of the data order from `position` on: a seeded permutation of the problems per epoch."""
        n = len(self.rows)
        out = []
        for p in range(position, position + count):
            epoch, offset = divmod(p, n)
            order = np.random.default_rng([self.seed, epoch]).permutation(n) if self.cfg.data.shuffle else np.arange(n)
            out.append(self.rows[int(order[offset])])
        return out

    def data_position(self, step: int) -> int:
        """Problems of the data order consumed before step `step` (0-based): data.train_batch_size per step, plus
        those the steps before consumed beyond it (`extra_problems`: dynamic-sampling rounds, problems the curriculum
        skipped; kept in checkpoints as part of their data_position, so a resumed run continues at the same problem)."""
        return step * self.cfg.data.train_batch_size + self.extra_problems

    def draw(self, position: int, count: int) -> tuple[list[dict], int]:
        """`count` problems of the data order from `position` on, passing over those the curriculum retired; returns
        them and the positions consumed (drawn + skipped). Raises CurriculumExhausted when a whole pass over the
        problems finds none to draw."""
        if self.curriculum is None:
            return self.rows_at(position, count), count
        rows, p, skipped_in_a_row = [], position, 0
        while len(rows) < count:
            row = self.rows_at(p, 1)[0]
            p += 1
            if self.curriculum.retired(row["reward_model"]["ground_truth"]["name"]) is None:
                rows.append(row)
                skipped_in_a_row = 0
                continue
            skipped_in_a_row += 1
            if skipped_in_a_row >= len(self.rows):
                counts = self.curriculum.counts(problem_names(self.rows))
                raise CurriculumExhausted(
                    f"data.curriculum: all {len(self.rows)} training problems are retired ({counts['solved']} solved "
                    f"by every sample, {counts['unsolved']} by none, over their last {self.curriculum.visits} "
                    "visits): nothing is left to train on")
        return rows, p - position

    def batch_rows(self, step: int) -> list[dict]:
        """The problems of training step `step` (0-based), of its first generation round."""
        return self.draw(self.data_position(step), self.cfg.data.train_batch_size)[0]

    # -- one step --------------------------------------------------------------------------------------

    def _status(self, step: int, phase: str) -> None:
        """<output_dir>/status.json: the step in progress and its phase (rollout, update, validate, save, stopped,
        done), replaced atomically; what a job's follower (or the simulation's mid-step stop) reads."""
        path = self.output_dir / STATUS_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{STATUS_FILE}.tmp")
        tmp.write_text(json.dumps({"step": step, "phase": phase, "since": time.time()}))
        tmp.replace(path)

    def step(self, step: int) -> dict[str, float]:
        cfg, alg = self.cfg, self.cfg.algorithm
        start = time.perf_counter()
        self._status(step + 1, "rollout")
        size = cfg.data.train_batch_size
        position = self.data_position(step)
        cap = alg.dynamic_sampling_max_rounds if alg.dynamic_sampling else 0  # extra rounds allowed (None: no cap)

        # 2 + 3: generation rounds. Each worker generates its share of the prompts; the judge scores each sample as
        # soon as it exists. Without dynamic sampling: one round of train_batch_size problems. With it, each further
        # round takes the next problems of the data order, twice as many as informative groups are still missing
        # (verl refills likewise), until train_batch_size groups carry a gradient, the cap of extra rounds is reached,
        # or (no cap) the step has drawn as many problems as there are
        self.workers.take_timing()
        rows, groups, samples, group_ids, results, keep = [], [], [], [], [], []
        informative: list[int] = []  # groups (indices into `rows`) that carry a gradient, in order
        t_generate = t_reward = 0.0
        rounds = consumed = 0  # consumed: positions of the data order this step used (drawn + skipped)
        while True:
            if rounds == 0:
                count = size
            else:  # twice the missing groups; without a cap, no more than one pass over the problems in all
                count = 2 * (size - len(informative))
                count = count if cap is not None else min(count, len(self.rows) - len(rows))
            last_round = rounds == cap  # only then is the step's weight sync known to come next
            params = sampling_params(cfg, seed=self.seed * 100_003 + step + rounds * ROUND_SEED_STRIDE)
            try:
                round_rows, used = self.draw(position + consumed, count)
            except CurriculumExhausted:
                if rounds == 0:
                    raise
                break  # a later round: the step trains on what its rounds found
            consumed += used
            t0 = time.perf_counter()
            round_groups, judged = self.workers.generate(round_rows, cfg.rollout.n, params, last_round=last_round)
            t1 = time.perf_counter()
            round_results = self.workers.judge.results([handle for _, _, handle in judged],
                                                       cfg.trainer.worker_timeout_s,
                                                       should_stop=self.workers.stop_requested)
            t_generate += t1 - t0
            t_reward += time.perf_counter() - t1
            round_samples = [s for _, s, _ in judged]
            round_ids = [len(rows) + g for g, _, _ in judged]  # groups are labelled by their row in `rows`
            round_results = self._shaped_rewards(round_samples, round_results)
            round_keep = [self._keeps(s, r) for s, r in zip(round_samples, round_results)]
            rows += round_rows
            groups += round_groups
            samples += round_samples
            group_ids += round_ids
            results += round_results
            keep += round_keep
            rounds += 1
            if not alg.dynamic_sampling:
                break
            informative += estimators.informative_groups(round_ids, [r.score for r in round_results], round_keep)
            if len(informative) >= size or last_round or (cap is None and len(rows) >= len(self.rows)):
                break

        metrics = self._rollout_metrics(groups, samples, results)  # over every sample generated in the step
        metrics.update(self._group_metrics(samples, group_ids, results, keep))
        if self.curriculum is not None:
            metrics.update(self._visit(rows, group_ids, results, skipped=consumed - len(rows)))
        generated = {"samples": samples, "group_ids": group_ids, "results": results, "keep": keep}
        if alg.dynamic_sampling:
            # the batch: the first train_batch_size informative groups; later ones are surplus (verl discards them too)
            chosen = set(informative[:size])
            metrics.update(generation_rounds=rounds, problems_drawn=len(rows), groups_trained=len(chosen),
                           groups_dropped=len(set(group_ids)) - len(informative),
                           groups_surplus=len(informative) - len(chosen),
                           dynamic_sampling_short=float(len(chosen) < size))  # the cap ended the step's rounds
            picked = [i for i, g in enumerate(group_ids) if g in chosen]
            samples = [samples[i] for i in picked]
            results = [results[i] for i in picked]
            keep = [keep[i] for i in picked]
            group_ids = [group_ids[i] for i in picked]
        metrics["adv_estimator"] = alg.adv_estimator
        if alg.adv_estimator in ("grpo", "rloo"):  # the estimators whose baseline is the group
            metrics["groups_without_baseline"] = grpo.groups_without_baseline(group_ids, keep)
        metrics["time_generate"] = t_generate
        metrics["time_reward_wait"] = t_reward
        metrics["rollout_backend"] = self.workers.backend
        # what trains (with dynamic sampling the kept groups; group ids index `rows`), and everything generated
        self.last_step = {"rows": rows, "samples": samples, "group_ids": group_ids, "results": results, "keep": keep,
                          "generated": generated}

        # the whitening estimators need two response tokens that count to measure a spread
        whitened = cfg.algorithm.adv_estimator in ("gae", "reinforce_plus_plus")
        counted = sum(len(s.response_ids) for s, k in zip(samples, keep) if k)
        if samples and sum(keep) > 0 and (counted >= 2 or not whitened):
            self._status(step + 1, "update")
            metrics.update(self._update(samples, group_ids, results, keep))
            if metrics.get("optimizer_steps"):  # the actor moved (not in a critic warm-up step)
                t0 = time.perf_counter()
                self.workers.sync_weights()  # the next rollout samples from the updated policy (one HF worker: no-op)
                metrics["time_weight_sync"] = time.perf_counter() - t0
        else:
            metrics["skipped_update"] = 1.0
        if not metrics.get("optimizer_steps") and self.workers.backend == "vllm" and cfg.rollout.enable_sleep_mode:
            self.workers.sync_weights()  # the engines dropped their weights after the last round (level 2): refill them
        self.extra_problems += consumed - size  # the step is done: its extra and skipped problems are consumed
        metrics["step_seconds"] = time.perf_counter() - start
        timing = self.workers.take_timing()
        metrics["time_orchestration"] = timing["wall"] - timing["busy"]  # worker calls beyond the slowest worker's work
        metrics["world_size"] = self.workers.world_size
        if (self.workers.ray_nodes or 1) > 1:
            metrics["ray_nodes"] = self.workers.ray_nodes
        metrics["tokens_per_second"] = metrics["response_tokens"] / max(metrics["time_generate"], 1e-9)
        return metrics

    def _visit(self, rows: list[dict], group_ids: list[int], results: list[Scored], skipped: int) -> dict:
        """data.curriculum: records each generated group as a visit of its problem (the passed flags of its valid
        samples); the step's skipped problems and the problems retired after it."""
        passed: dict[int, list[bool]] = {g: [] for g in range(len(rows))}
        for g, r in zip(group_ids, results):
            if not r.judge_error:
                passed[g].append(bool(r.passed))
        names = problem_names(rows)
        for g, flags in passed.items():
            self.curriculum.record(names[g], flags)
        retired = self.curriculum.counts(problem_names(self.rows))
        return {"curriculum_skipped": skipped, "curriculum_retired_solved": retired["solved"],
                "curriculum_retired_unsolved": retired["unsolved"]}

    def _shaped_rewards(self, samples: list[Sample], results: list[Scored]) -> list[Scored]:
        """reward.overlong=soft: DAPO's overlong penalty added to each judged sample's score (judge failures stay as
        they are: they are never rewards); otherwise the results unchanged."""
        rw = self.cfg.reward
        if rw.overlong != "soft":
            return results
        return [r if r.judge_error else dataclasses.replace(r, score=r.score + overlong_penalty(
            len(s.response_ids), self.cfg.data.max_response_length, rw.overlong_buffer_len, rw.overlong_penalty_factor))
            for s, r in zip(samples, results)]

    def _keeps(self, sample: Sample, result: Scored) -> float:
        """1.0 for a sample that trains; 0.0 for one excluded from the loss and from its group's baseline: a judge
        failure, an empty response, and with reward.overlong=filter a response cut at the budget."""
        truncated = self.cfg.reward.overlong == "filter" and sample.finish_reason == "length"
        return 0.0 if result.judge_error or not sample.response_ids or truncated else 1.0

    def _group_metrics(self, samples: list[Sample], group_ids: list[int], results: list[Scored],
                       keep: list[float]) -> dict:
        """Per group of the generated samples: how many had every / no valid sample solve the problem; with
        reward.overlong, how many samples it filtered or penalised."""
        rw = self.cfg.reward
        valid = [not r.judge_error for r in results]
        all_solved, none_solved = estimators.solved_groups(group_ids, [r.passed for r in results], valid)
        out = {"groups_all_solved": all_solved, "groups_none_solved": none_solved}
        if rw.overlong == "filter":  # truncated samples that only the filter kept out of the loss
            out["overlong_filtered"] = sum(1 for s, r in zip(samples, results)
                                           if s.finish_reason == "length" and s.response_ids and not r.judge_error)
        elif rw.overlong == "soft":
            penalties = [overlong_penalty(len(s.response_ids), self.cfg.data.max_response_length,
                                          rw.overlong_buffer_len, rw.overlong_penalty_factor)
                         for s, ok in zip(samples, valid) if ok]
            out["overlong_penalty_mean"] = float(np.mean(penalties)) if penalties else 0.0
            out["overlong_penalised"] = sum(1 for p in penalties if p < 0)
        return out

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
        kept = torch.tensor(keep, dtype=torch.float32)
        # old (and reference) log-probs, computed where the workers were dealt the samples
        old, ref = self.workers.log_probs(samples)
        t_logprob = time.perf_counter() - t0
        rollout_check, is_weights = grpo.rollout_log_prob_check([s.rollout_log_probs for s in samples], old,
                                                                cfg.rollout.use_rollout_log_probs,
                                                                cfg.rollout.rollout_is_cap, cfg.rollout.rollout_is,
                                                                cfg.rollout.rollout_is_threshold_lower)
        metrics: dict[str, Any] = {}
        mask = pack(samples, 0, "cpu").response_mask * kept[:, None]  # (B, T): response tokens that count
        values = returns = None
        if cfg.uses_critic:  # the critic's values of the step's samples, before any update (like the old log-probs)
            t1 = time.perf_counter()
            values = _padded(self.workers.values(samples), mask.shape[1])  # (B, T)
            metrics["time_values"] = time.perf_counter() - t1
        if alg.adv_estimator in ("grpo", "rloo"):
            # excluded samples must not move their group's baseline; a group (or singleton) left with one sample has
            # no baseline at all, so its advantage is 0
            advantages = estimators.sample_advantages(alg.adv_estimator, rewards, group_ids, kept,
                                                      norm_by_std=alg.norm_adv_by_std, epsilon=alg.adv_epsilon)  # (B,)
            token_advantages = advantages[:, None] * mask  # (B, T)
            metrics["advantage_mean"] = float(advantages[kept > 0].mean())
            metrics["advantage_abs_mean"] = float(advantages[kept > 0].abs().mean())
        else:
            token_advantages, returns = estimators.outcome_advantages(
                alg.adv_estimator, rewards, group_ids, kept, mask, values=values, gamma=alg.gamma, lam=alg.lam)
            advantages = token_advantages
            counts = mask.bool()
            metrics["advantage_mean"] = float(token_advantages[counts].mean())  # a token mean here
            metrics["advantage_abs_mean"] = float(token_advantages[counts].abs().mean())

        mini = alg.ppo_mini_batch_size * cfg.rollout.n  # samples per optimizer step
        if cfg.uses_critic:
            t1 = time.perf_counter()
            metrics.update(self._update_critic(samples, keep, values, returns, mask, mini))
            metrics["time_critic_update"] = time.perf_counter() - t1
        if cfg.uses_critic and self.step_done < cfg.trainer.critic_warmup:
            metrics["critic_warmup_step"] = 1  # the actor waits for the critic: no actor update this step
            metrics["optimizer_steps"] = 0
            metrics["time_logprob"] = t_logprob
            metrics.update(rollout_check)
            self.last_step.update(advantages=advantages, token_advantages=token_advantages, values=values,
                                  returns=returns)
            return metrics

        items = {i: {"sample": s, "keep": keep[i], "advantages": token_advantages[i, :len(s.response_ids)],
                     "old": old[i], "ref": ref[i], "is_weight": is_weights[i] if is_weights is not None else None}
                 for i, s in enumerate(samples)}
        t1 = time.perf_counter()
        means, grad_norms, lrs, nonfinite = self._mini_batch_updates(self.workers.update, items, samples, keep, mini,
                                                                     alg.ppo_epochs, self.seed * 7_919)
        metrics.update(means)
        metrics["nonfinite_grad_steps"] = nonfinite
        metrics["grad_norm"] = float(np.mean(grad_norms)) if grad_norms else 0.0
        metrics["lr"] = float(np.mean(lrs)) if lrs else 0.0
        metrics["optimizer_steps"] = len(grad_norms)
        metrics["time_update"] = time.perf_counter() - t1
        metrics["time_logprob"] = t_logprob
        metrics.update(rollout_check)
        if "kl_loss" in metrics:
            metrics["kl"] = metrics["kl_loss"]
        self.last_step.update(advantages=advantages, token_advantages=token_advantages, values=values, returns=returns)
        return metrics

    def _update_critic(self, samples: list[Sample], keep: list[float], values: torch.Tensor, returns: torch.Tensor,
                       mask: torch.Tensor, mini: int) -> dict:
        """critic.ppo_epochs passes of the critic over shuffled mini-batches of the step's samples: the clipped value
        loss against `returns` (B, T), around the step's old `values` (B, T). Returns the critic's metrics: value
        loss and clip fraction (means over its updates), the values and returns over the tokens that count, how much
        of the returns' variance the values explained, the critic's gradient norm and rate."""
        cfg = self.cfg
        counts = mask.bool()
        metrics = {"values_mean": float(values[counts].mean()), "returns_mean": float(returns[counts].mean()),
                   "value_explained_var": estimators.explained_variance(returns, values, mask)}
        items = {i: {"sample": s, "keep": keep[i], "values": values[i, :len(s.response_ids)],
                     "returns": returns[i, :len(s.response_ids)]} for i, s in enumerate(samples)}
        means, grad_norms, lrs, nonfinite = self._mini_batch_updates(  # in an order of its own, not the actor's
            self.workers.update_critic, items, samples, keep, mini, cfg.critic_epochs, self.seed * 7_919 + 104_729)
        metrics.update(means)
        metrics["critic_grad_norm"] = float(np.mean(grad_norms))
        metrics["critic_lr"] = float(np.mean(lrs))
        metrics["critic_optimizer_steps"] = len(grad_norms)
        metrics["critic_nonfinite_grad_steps"] = nonfinite
        return metrics

    def _mini_batch_updates(self, update: Callable, items: dict, samples: list[Sample], keep: list[float], mini: int,
                            epochs: int, seed: int) -> tuple[dict[str, float], list[float], list[float], int]:
        """`epochs` passes over the step's samples in shuffled mini-batches of `mini` (the order seeded by `seed` and
        the step), one `update` (WorkerGroup.update or update_critic) per mini-batch. Returns the mean over updates of
        each logged mini-batch metric, the gradient norms, the rates the updates used, and how many updates a
        non-finite gradient skipped."""
        per_update: dict[str, list[float]] = {}  # one value per optimizer update (mini-batch), averaged at the end
        grad_norms, lrs, nonfinite = [], [], 0
        order_rng = torch.Generator().manual_seed(seed + self.step_done)
        for _ in range(epochs):
            order = torch.randperm(len(samples), generator=order_rng).tolist()
            for m_lo in range(0, len(order), mini):
                mini_idx = order[m_lo:m_lo + mini]
                # every micro-batch on every worker divides by the whole mini-batch's token (or sample) count
                norms = grpo.loss_normalisers(
                    pack([samples[i] for i in mini_idx], 0, "cpu", [keep[i] for i in mini_idx]).response_mask)
                out = update(items, mini_idx, norms)
                for k, v in grpo.mini_batch_metrics(out["micro"], norms["total_tokens"]).items():
                    per_update.setdefault(k, []).append(v)
                nonfinite += not out["finite"]  # a non-finite gradient skipped this optimizer step: say so
                lrs.append(out["lr"])  # the rate this update used
                grad_norms.append(out["grad_norm"])
        return {k: float(np.mean(v)) for k, v in per_update.items()}, grad_norms, lrs, nonfinite

    # -- the loop --------------------------------------------------------------------------------------

    def resume(self) -> int:
        """Loads the latest complete checkpoint (if any), saved by any number of workers; returns the step to continue
        from. Newer incomplete ones (an interrupted save or upload) are named and passed over."""
        path = latest_checkpoint(self.checkpoint_root, content=True)  # its files read and hashed once
        for skipped, problems in skipped_checkpoints(self.checkpoint_root, content=True, latest=path).items():
            print(f"not resuming from {skipped}: incomplete ({'; '.join(problems[:3])}"
                  f"{'; ...' if len(problems) > 3 else ''})", flush=True)
        if path is None:
            return 0
        state = load_trainer_state(path)
        check_resume_config(path, self.cfg)
        if not (path / "dcp").is_dir():
            raise ValueError(f"{path} has no dcp/ folder (sharded model and optimizer state): an older version of "
                             "this trainer wrote it; resume with that version, or train into a new output dir")
        self.workers.load(path)  # resharded onto this run's workers, then synced into their rollout engines
        self.step_done = state.step
        # what dynamic-sampling rounds drew and the curriculum skipped beyond train_batch_size per step
        self.extra_problems = state.data_position - state.step * self.cfg.data.train_batch_size
        if self.curriculum is not None:
            self.curriculum = Curriculum(self.cfg.data.curriculum_visits, state.curriculum)
        self.resumed_run_id = state.mlflow_run_id
        print(f"resumed from {path} (step {state.step}; saved by {state.world_size} worker(s), continuing on "
              f"{self.workers.world_size})", flush=True)
        return state.step

    def save(self, step: int) -> Path:
        state = TrainerState(step=step, data_position=self.data_position(step),
                             mlflow_run_id=getattr(self.logger, "run_id", None), config=self.cfg.to_dict(),
                             world_size=self.workers.world_size,
                             curriculum=self.curriculum.state() if self.curriculum is not None else None)
        return write_checkpoint(self.checkpoint_root, state, self.workers.save, keep_last=self.cfg.checkpoint.keep_last)

    def fit(self, start_step: int = 0, stop_after_step: int | None = None,
            should_stop: Callable[[], bool] | None = None) -> list[dict]:
        """Runs steps start_step+1 .. total_steps (1-based in logs); `stop_after_step` stops early (an interruption).
        `should_stop()` (the SageMaker entry point answers True once SIGTERM arrived) is asked while the workers
        generate, judge and validate (at least every second) and after every step. A stop during a step's rollout
        drops that step (StepAbandoned: nothing of it reached the weights) and saves the state the step before left,
        unless that is saved already; a stop during the update finishes the step, saves and logs it; a stop during
        validation saves and logs the step without its validation numbers. Then fit returns without exporting the
        model; a restart redoes the dropped step from its seed, so every step is logged once. With data.curriculum,
        a step that finds every problem retired ends the run there: the steps before are saved and exported.

        The final model goes to <output_dir>/model with `codefu_training.json` beside its weights (the problems
        trained on and the model GRPO started from), so an evaluation can tell seen from held-out problems."""
        cfg = self.cfg
        total = self.total_steps
        history = []
        self.workers.stop_requested = should_stop
        last_save = time.monotonic()
        for step in range(start_step, total):
            try:
                metrics = self.step(step)
            except CurriculumExhausted as exc:
                print(f"{exc}: the run ends after step {step}", flush=True)
                total = step
                break
            except StepAbandoned as exc:
                saved = latest_checkpoint(self.checkpoint_root)
                print(f"stop requested during step {step + 1}'s rollout ({exc}): the step is dropped (the restarted "
                      f"job redoes it); {'saving' if step and not _is_step(saved, step) else 'already saved:'} step "
                      f"{step}", flush=True)
                if step and not _is_step(saved, step):
                    self._status(step, "save")
                    self.save(step)
                self._status(step, "stopped")
                return history
            self.step_done = step + 1
            stopping = stop_after_step is not None and step + 1 >= stop_after_step
            if cfg.trainer.test_freq and ((step + 1) % cfg.trainer.test_freq == 0 or step + 1 == total):
                try:
                    self._status(step + 1, "validate")
                    metrics.update(self.validate(step + 1))
                except StepAbandoned:
                    print(f"stop requested during step {step + 1}'s validation: saving the step without it", flush=True)
                    stopping = True
            if should_stop is not None and should_stop() and step + 1 < total:
                print(f"stop requested: saving step {step + 1} and stopping", flush=True)
                stopping = True
            minutes = cfg.checkpoint.save_every_minutes
            due = bool(minutes) and time.monotonic() - last_save >= 60 * minutes
            if (cfg.checkpoint.save_every and (step + 1) % cfg.checkpoint.save_every == 0) or step + 1 == total \
                    or stopping or due:
                t0 = time.perf_counter()
                self._status(step + 1, "save")
                self.save(step + 1)
                metrics["time_checkpoint"] = time.perf_counter() - t0
                last_save = time.monotonic()
            history.append({"step": step + 1, **metrics})
            if self.logger is not None:
                self.logger.log(step + 1, total, metrics)
                self.logger.log_samples(step + 1, step_records(step + 1, self.last_step, cfg.tracking.samples_logged))
            if stopping:
                self._status(step + 1, "stopped")
                return history
        if not _is_step(latest_checkpoint(self.checkpoint_root), total):  # none yet, or the curriculum ended the run
            self.save(total)
        self.export(self.output_dir / MODEL_DIR)
        self._status(total, "done")
        return history

    def export(self, path: str | Path) -> Path:
        """The policy in HF format (transformers and vLLM load it), with the training record beside it. A PPO run's
        critic goes beside it, to `<path>/../critic` (CRITIC_EXPORT_DIR): a token-classification model with one label
        that critic.model_path (or verl's critic) loads to continue PPO with a trained value model; evaluation and
        serving read only the policy."""
        path = Path(path)
        self.workers.export(path)
        if self.cfg.model.lora_rank:  # the merged model at `path`, the adapter beside it
            self.workers.export_adapter(path.parent / ADAPTER_DIR)
        if self.cfg.uses_critic:
            self.workers.export_critic(path.parent / CRITIC_EXPORT_DIR)
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


def _is_step(checkpoint: Path | None, step: int) -> bool:
    """Whether `checkpoint` (a complete one, or None) holds the state after `step` steps."""
    return checkpoint is not None and load_trainer_state(checkpoint).step == step


STATUS_FILE = "status.json"  # <output_dir>/status.json: the step in progress and its phase
ROUND_SEED_STRIDE = 10_000_019  # dynamic-sampling round r of a step samples with the step's seed + r * stride
CRITIC_EXPORT_DIR = "critic"  # <output_dir>/critic: the trained critic of a PPO run, beside <output_dir>/model


def _padded(rows: list[torch.Tensor], width: int) -> torch.Tensor:
    """(B, width) float32 from per-sample tensors (R_i,), zero-padded."""
    out = torch.zeros(len(rows), width)
    for i, r in enumerate(rows):
        out[i, :r.shape[0]] = r
    return out


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
                                             lr=cfg.model.warm_start_lr, seed=cfg.trainer.seed,
                                             target_p=cfg.model.warm_start_target_p))
        warm = json.loads((Path(start_model) / "warm_start.json").read_text())
        if warm.get("reached_target") is False:
            print(f"warm start: model.warm_start_target_p={cfg.model.warm_start_target_p} was not reached in "
                  f"model.warm_start_steps={cfg.model.warm_start_steps} steps (mean probability of the reference "
                  f"solutions {warm['reference_p'][-1]:.3f}); GRPO starts from there. Raise model.warm_start_steps "
                  "or model.warm_start_lr for a warmer start", flush=True)
    return TrainingData(rows, val_rows, start_model)


# A resumed run continues a schedule and a data order that these keys fixed when it started.
DATA_ORDER_KEYS = ("data.train_batch_size", "data.shuffle", "trainer.seed", "data.tiers", "data.max_problems",
                   "data.curriculum", "data.curriculum_visits")
SCHEDULE_KEYS = ("optim.lr", "optim.warmup_steps", "optim.lr_schedule", "algorithm.ppo_mini_batch_size",
                 "algorithm.ppo_epochs", "critic.lr", "critic.warmup_steps", "critic.lr_schedule",
                 "critic.ppo_epochs", "trainer.critic_warmup")
# Keys that say where and how a run executes, not what it learns: they may change freely between restarts.
PLACEMENT_KEYS = ("name", "trainer.output_dir", "trainer.nnodes", "trainer.gpus_per_node", "trainer.worker_timeout_s",
                  "trainer.test_freq", "trainer.val_samples", "data.val_path", "reward.num_workers",
                  "trainer.critic_gpus")
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
    # a key the checkpoint's config predates ran as its default does
    old = {**{k: v for k, v in _flat(type(cfg)().to_dict()).items() if k not in old}, **old}
    refused, explained = [], []
    cosine = "cosine" in (old.get("optim.lr_schedule"), new.get("optim.lr_schedule"),
                          old.get("critic.lr_schedule"), new.get("critic.lr_schedule"))
    critic_before, critic_after = old.get("algorithm.adv_estimator", "grpo") == "gae", \
        new.get("algorithm.adv_estimator") == "gae"
    for key in sorted(set(old) | set(new)):
        before, after = old.get(key, "(absent)"), new.get(key, "(absent)")
        if before == after or key in PLACEMENT_KEYS or key.startswith(PLACEMENT_SECTIONS):
            continue
        change = f"{key}: {before!r} -> {after!r}"
        if key == "algorithm.adv_estimator" and critic_after and not critic_before:
            refused.append(f"{change}: the checkpoint holds no critic to continue PPO with (start a new run for PPO)")
        elif key == "critic.model_path" and critic_before and critic_after:
            refused.append(f"{change}: the checkpoint's critic was trained from the other model")
        elif key.startswith("critic.") and not (critic_before and critic_after):
            continue  # a critic key of a run without a critic before or after: nothing trained it
        elif key in DATA_ORDER_KEYS:
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


