"""The controller's side of the workers: the data-parallel split and merge, written once, over one or N workers.

`WorkerGroup` turns each phase of a GRPO step into one call per worker with that worker's share, and merges the
answers: prompts are split evenly for generation; samples are dealt by token count (`batching`) for log-probs
and for each mini-batch of the update, with the same number of micro-batches on every worker. Two subclasses say
how a call reaches a worker:

- `LocalWorkerGroup`: one `Worker` in this process, called directly (no Ray, no process group): the one-process
  trainer is this case.
- `RayWorkerGroup`: `trainer.nnodes x trainer.gpus_per_node` Ray actors in one placement group (a bundle per device;
  on CPU, per worker process), a process group across them, and a `RayJudgePool` with an actor per node. Ray starts
  locally unless a cluster is there to join (`trainer.nnodes > 1`, or $RAY_ADDRESS). A failing worker stops the
  run at once: the call raises `WorkerError` with the worker's own error, and every worker is killed. So does a
  worker that does not answer a call within `trainer.worker_timeout_s` (hung in vLLM, in the judge, in a collective
  another worker never joined): the error names its rank, its host and the phase. One worker under Ray (not the
  default: `build_worker_group(use_ray=True)`) is sharded like many, over a process group of one.

Each call is timed twice, on the controller (wall) and in the slowest worker (busy); their difference is what the
orchestration cost (`take_timing`).

PPO's critic (algorithm.adv_estimator=gae) is reached through the same group: `values` and `update_critic` deal the
samples as `log_probs` and `update` do, to the workers' colocated critic shards, or, with trainer.critic_gpus > 0, to a
second `RayWorkerGroup` of critic-only workers (`critic_group`: nnodes x critic_gpus Ray actors in a placement group of
their own, with their own process group), which the actor group starts, saves, loads and closes with itself: verl's
role -> resource-pool mapping, with the critic in a pool of its own.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

from ..checkpoint import COMPLETE_MARKER, folder_manifest, load_manifest
from ..grpo import SUMMED_LOSS_METRICS
from ..rollout import Group, SamplingParams
from ..sandbox.isolation import private_directory
from .batching import balance_by_tokens, equal_counts, micro_batches, sample_tokens
from .judge import LocalJudgePool, RayJudgePool, pool_size
from .interrupt import StepAbandoned
from .worker import INTERRUPTIBLE, Worker, write_chunk

PLACEMENT_TIMEOUT_S = 120  # waiting longer for devices means the cluster does not have them
TRANSFER_CHUNK_BYTES = 64 << 20  # files travel between hosts in pieces of this size (the controller holds one)
RANK_SEED_STRIDE = 1_000_000_007  # worker r samples with seed + r * stride: distinct streams, rank 0 unchanged


class WorkerError(RuntimeError):
    """A worker failed; the message names the worker and carries its error."""


class WorkerGroup:
    world_size: int = 1
    critic_group: "WorkerGroup | None" = None  # critic-only workers (trainer.critic_gpus > 0), else None
    ray_nodes: int | None = None  # Ray nodes the workers run on (None without Ray)
    placement: tuple[str, ...] = ()  # per rank: the Ray node name (a SageMaker host name) or address it runs on
    backend: str = "hf"           # the workers' rollout engine
    tokenizer = None              # the policy's tokenizer, on the controller
    # asked while the workers generate or validate (at least every second): True cuts the call short, StepAbandoned
    stop_requested: Callable[[], bool] | None = None

    def __init__(self, cfg):
        self.cfg = cfg
        self.timing = {"wall": 0.0, "busy": 0.0}
        self.worker_timeout_s = cfg.trainer.worker_timeout_s  # a call unanswered this long fails the step

    def _run(self, method: str, args: list[tuple], kwargs: list[dict] | None = None) -> list:
        """Calls `method` on every worker (worker r gets args[r], kwargs[r]); returns the results by rank."""
        raise NotImplementedError

    def _record(self, wall: float, busy: list[float]) -> None:
        self.timing["wall"] += wall
        self.timing["busy"] += max(busy)

    def take_timing(self) -> dict[str, float]:
        """Wall and slowest-worker seconds of the calls since the last take (the critic group's included)."""
        out, self.timing = self.timing, {"wall": 0.0, "busy": 0.0}
        if self.critic_group is not None:
            for key, value in self.critic_group.take_timing().items():
                out[key] += value
        return out

    # -- the phases of a step --------------------------------------------------------------------------

    def generate(self, rows: list[dict], n: int, params: SamplingParams,
                 last_round: bool = True) -> tuple[list[Group], list]:
        """Prompts split evenly over the workers; returns (one Group per row, [(row index, sample, judge handle)]).
        last_round=False: another generate of the same step may follow before the weight sync (dynamic sampling), so
        the engines keep their weights (see `Worker.generate`)."""
        shares = [list(s) for s in np.array_split(np.arange(len(rows)), self.world_size)]
        answers = self._run("generate", [
            ([rows[i]["prompt"] for i in share], [rows[i] for i in share], n,
             dataclasses.replace(params, seed=params.seed + rank * RANK_SEED_STRIDE))
            for rank, share in enumerate(shares)], [{"last_round": last_round}] * self.world_size)
        groups, judged = [None] * len(rows), []
        for share, (rank_groups, rank_judged) in zip(shares, answers):
            for group in rank_groups:
                group.prompt_index = share[group.prompt_index]
                groups[group.prompt_index] = group
            judged += [(share[i], sample, handle) for i, sample, handle in rank_judged]
        return groups, judged

    def _split(self, samples: list, items: list[int]) -> list[list[list[int]]]:
        """items dealt to the workers by tokens, each share cut into micro-batches, equal counts everywhere."""
        alg = self.cfg.algorithm
        tokens = {i: sample_tokens(len(samples[i].prompt_ids), len(samples[i].response_ids)) for i in items}
        shares = balance_by_tokens(items, [tokens[i] for i in items], self.world_size)
        return equal_counts([micro_batches(share, [tokens[i] for i in share], alg.ppo_micro_batch_size,
                                           alg.ppo_max_token_len_per_gpu) for share in shares])

    def log_probs(self, samples: list) -> tuple[list, list]:
        """(old, reference or None) log-prob tensors (R_i,) per sample, computed where the samples were dealt."""
        plan = self._split(samples, list(range(len(samples))))
        answers = self._run("log_probs", [([[samples[i] for i in mb] for mb in micro],) for micro in plan])
        old, ref = [None] * len(samples), [None] * len(samples)
        for micro, answer in zip(plan, answers):
            for mb, values in zip(micro, answer):
                for i, (o, r) in zip(mb, values):
                    old[i], ref[i] = o, r
        return old, ref

    def update(self, items: dict[int, dict], mini_batch: list[int], normalisers: dict[str, int]) -> dict:
        """One optimizer update on mini-batch `mini_batch` (keys of `items`: {sample, keep, advantage, old, ref}).
        Returns {"micro": [(metrics, tokens)] over all workers, "grad_norm", "lr", "finite"}; the summed loss
        terms are divided by the worker count, which each worker's loss was scaled by (grpo.aggregate_loss)."""
        samples = {i: it["sample"] for i, it in items.items()}
        plan = self._split(samples, mini_batch)
        answers = self._run("update", [([[items[i] for i in mb] for mb in micro], normalisers) for micro in plan])
        micro = [({k: v / self.world_size if k in SUMMED_LOSS_METRICS else v for k, v in m.items()}, tokens)
                 for answer in answers for m, tokens in answer["micro"]]
        first = answers[0]
        return {"micro": micro, "grad_norm": first["grad_norm"], "lr": first["lr"], "finite": first["finite"]}

    def _critic_workers(self) -> WorkerGroup:
        """The group whose workers hold the critic: this one (colocated) or `critic_group`."""
        return self.critic_group if self.critic_group is not None else self

    def values(self, samples: list) -> list:
        """The critic's values (R_i,) per sample, before any update of the step, computed where the samples were dealt."""
        target = self._critic_workers()
        plan = target._split(samples, list(range(len(samples))))
        answers = target._run("values", [([[samples[i] for i in mb] for mb in micro],) for micro in plan])
        out = [None] * len(samples)
        for micro, answer in zip(plan, answers):
            for mb, values in zip(micro, answer):
                for i, v in zip(mb, values):
                    out[i] = v
        return out

    def update_critic(self, items: dict[int, dict], mini_batch: list[int], normalisers: dict[str, int]) -> dict:
        """One critic update on mini-batch `mini_batch` (keys of `items`: {sample, keep, values, returns}). Returns
        {"micro": [(metrics, tokens)] over all critic workers, "grad_norm", "lr", "finite"}; the value loss (scaled
        by the worker count in each worker, as the actor loss) is divided back."""
        target = self._critic_workers()
        samples = {i: it["sample"] for i, it in items.items()}
        plan = target._split(samples, mini_batch)
        answers = target._run("update_critic", [([[items[i] for i in mb] for mb in micro], normalisers)
                                                for micro in plan])
        micro = [({k: v / target.world_size if k in SUMMED_LOSS_METRICS else v for k, v in m.items()}, tokens)
                 for answer in answers for m, tokens in answer["micro"]]
        first = answers[0]
        return {"micro": micro, "grad_norm": first["grad_norm"], "lr": first["lr"], "finite": first["finite"]}

    def export_critic(self, path: Path) -> None:
        """The trained critic in HF format at `path` (see `Worker.export_critic`)."""
        target = self._critic_workers()
        answers = target._run("export_critic", [(str(path), r in target.remote_ranks) for r in range(target.world_size)])
        target._fetch_parts(answers, Path(path))

    def sync_weights(self) -> float:
        return max(self._run("sync_weights", [()] * self.world_size))

    def validate(self, rows: list[dict], n: int, params: SamplingParams) -> dict:
        """`evaluate.pass_rate` over the validation rows, split over the workers and merged (a mean over problems)."""
        shares = [list(s) for s in np.array_split(np.arange(len(rows)), self.world_size)]
        answers = self._run("validate", [([rows[i] for i in share], n,
                                          dataclasses.replace(params, seed=params.seed + rank * RANK_SEED_STRIDE))
                                         for rank, share in enumerate(shares)])
        if self.world_size == 1:
            return answers[0]
        counted = [a for a in answers if a["problems"] and not np.isnan(a["pass_rate"])]
        problems = sum(a["problems"] for a in counted)
        merged = {"pass_rate": sum(a["pass_rate"] * a["problems"] for a in counted) / problems if problems else np.nan,
                  "problems": sum(a["problems"] for a in answers)}
        for key in ("samples", "judge_errors", "solved_samples"):
            merged[key] = sum(a.get(key, 0) for a in answers)
        return merged

    def all_gather_seconds(self) -> float:
        """Seconds one gathering of the whole sharded model takes (the slowest worker); 0 with one worker."""
        return max(self._run("all_gather_seconds", [()] * self.world_size))

    # Workers on another host than the controller (`remote_ranks`) cannot write into the controller's folders (no
    # shared disk on SageMaker): they write to scratch, which the controller copies into its folder (`fetch_part`).

    remote_ranks: frozenset[int] = frozenset()
    transfer_chunk_bytes: int = TRANSFER_CHUNK_BYTES

    def save(self, path: Path) -> None:
        answers = self._run("save", [(str(path), r in self.remote_ranks) for r in range(self.world_size)])
        self._fetch_parts(answers, Path(path))
        if self.critic_group is not None:  # its part: critic/ of the same folder
            self.critic_group.save(path)

    def _fetch_parts(self, answers: list, path: Path) -> None:
        for rank, part in enumerate(answers):
            if part is not None:
                self.fetch_part(rank, part, path)

    def fetch_part(self, rank: int, part: dict, target: Path) -> None:
        """Copies the files a remote worker wrote to scratch (`part`, see `worker.scratch_part`) into `target`."""
        raise NotImplementedError  # only a Ray group has workers on other hosts

    def load(self, path: Path) -> None:
        """Every worker restores `path`. A host of remote workers whose disk lacks some of the files seen here (it
        did not get the checkpoint) first receives them, one file at a time, through its first worker; each remote
        worker then checks its disk against what the controller sees before loading."""
        # what `Worker.load` reads: with the sizes and sha256 of the checkpoint's marker (resume checked them here),
        # or for a folder without one (a bare `save`) the sizes the controller sees
        wanted = lambda rel: rel.startswith(("dcp/", "rng/", "critic/")) or rel == "scheduler.pt"  # noqa: E731
        manifest = load_manifest(path, wanted) if (Path(path) / COMPLETE_MARKER).exists() else \
            {rel: size for rel, size in folder_manifest(path).items() if wanted(rel)}
        if self.remote_ranks:
            self.complete_remote_hosts(Path(path), str(path), manifest)
        if self.critic_group is not None:
            self.critic_group.load(path)
        self._run("load", [(str(path), manifest if r in self.remote_ranks else None) for r in range(self.world_size)])

    def complete_remote_hosts(self, source: Path, target: str, manifest: dict[str, list]) -> None:
        """Sends the files of `manifest` that folder `target` lacks (or holds with other content) on a remote host,
        read from `source` here."""
        raise NotImplementedError  # only a Ray group has workers on other hosts

    def export(self, path: Path) -> None:
        answers = self._run("export", [(str(path), r in self.remote_ranks) for r in range(self.world_size)])
        self._fetch_parts(answers, Path(path))

    def export_adapter(self, path: Path) -> None:
        """LoRA: the trained adapter in peft's format at `path` (see `Worker.export_adapter`)."""
        answers = self._run("export_adapter", [(str(path), r in self.remote_ranks) for r in range(self.world_size)])
        self._fetch_parts(answers, Path(path))

    def close(self) -> None:
        raise NotImplementedError


class LocalWorkerGroup(WorkerGroup):
    """One worker in this process, called directly (see the module docstring)."""

    def __init__(self, cfg, start_model: str, *, compute_score: Callable | None = None, total_updates: int = 1,
                 critic_updates: int = 1, model=None, tokenizer=None):
        super().__init__(cfg)
        if cfg.uses_critic and cfg.trainer.critic_gpus:
            raise ValueError(f"trainer.critic_gpus={cfg.trainer.critic_gpus} places the critic on Ray workers of its "
                             "own: build the group with build_worker_group, which starts Ray for it")
        if compute_score is None:
            from ..reward import compute_score
        self.judge = LocalJudgePool(compute_score, pool_size(cfg.reward.num_workers, 1), cfg.reward.mode)
        self.worker = Worker(cfg)
        # trainer.fsdp_cpu_offload on one worker (allowed by CODEFU_TEST_OFFLOAD only): sharded over a process group
        # of one in this process, so that one device runs the offload path
        master = ("127.0.0.1", _free_ports(1)[0]) if cfg.trainer.fsdp_cpu_offload else None
        self.backend = self.worker.start(start_model, judge=self.judge, model=model, tokenizer=tokenizer,
                                         total_updates=total_updates, critic_updates=critic_updates, master=master)
        self.tokenizer = self.worker.tokenizer

    def _run(self, method, args, kwargs=None):
        start = time.perf_counter()
        busy, result = self.worker.call(method, *args[0], **(kwargs[0] if kwargs else {}))
        self._record(time.perf_counter() - start, [busy])
        return [result]

    def close(self) -> None:
        self.worker.close()
        self.judge.close()


class RayWorkerGroup(WorkerGroup):
    """trainer.nnodes x trainer.gpus_per_node Ray actors (see the module docstring)."""

    def __init__(self, cfg, start_model: str, *, compute_score: Callable | None = None, total_updates: int = 1,
                 critic_updates: int = 1, role: str = "actor"):
        import ray
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        from ..tiny_model import TINY_SCHEME, resolve_model_path

        super().__init__(cfg)
        self.role = role
        # per host: the training devices, or for a critic of its own trainer.critic_gpus
        per_host = cfg.trainer.critic_gpus if role == "critic" else cfg.trainer.gpus_per_node
        self.world_size = cfg.trainer.nnodes * per_host
        self.actors, self.pg, self.judge, self.head = [], None, None, None
        # what every worker loads: a local folder by its absolute path; tiny:// is built here first and then by each
        # worker on its own host (hosts share no disk; the build is deterministic and cached per host)
        if start_model.startswith(TINY_SCHEME):
            resolve_model_path(start_model)
        elif Path(start_model).exists():
            start_model = str(Path(start_model).resolve())
        self.head = init_ray(cfg)
        try:
            gpu = cfg.model.resolved_device().startswith("cuda")
            bundle = {"CPU": 1, "GPU": 1} if gpu else {"CPU": 1}
            # PACK fills a node before the next (GPU nodes of gpus_per_node devices each fill exactly); one worker
            # per node must be spread explicitly, or PACK would put them all on the first node with spare CPUs
            spread = cfg.trainer.nnodes > 1 and per_host == 1
            self.pg = placement_group([bundle] * self.world_size, strategy="STRICT_SPREAD" if spread else "PACK")
            per_host_key = "trainer.critic_gpus" if role == "critic" else "trainer.gpus_per_node"
            try:
                ray.get(self.pg.ready(), timeout=PLACEMENT_TIMEOUT_S)
            except ray.exceptions.GetTimeoutError:
                raise WorkerError(
                    f"Ray could not place {self.world_size} {role} workers (trainer.nnodes={cfg.trainer.nnodes} x "
                    f"{per_host_key}={per_host}) of {bundle} each within {PLACEMENT_TIMEOUT_S}s; the cluster has "
                    f"{ray.cluster_resources()}. Lower {per_host_key} or trainer.nnodes, or add nodes") from None
            # a control thread beside the default one: `interrupt` reaches a worker while it generates
            remote = ray.remote(concurrency_groups={"control": 1})(Worker)
            self.actors = [remote.options(
                num_cpus=1, num_gpus=1 if gpu else 0,
                scheduling_strategy=PlacementGroupSchedulingStrategy(self.pg, placement_group_bundle_index=i),
            ).remote(cfg.to_dict()) for i in range(self.world_size)]
            infos = self._run("node_info", [()] * self.world_size)
            # ranks: the controller's node first (rank 0 writes the final model there), each node's ranks together
            here = ray.get_runtime_context().get_node_id()
            order = sorted(range(self.world_size), key=lambda i: (infos[i]["node_id"] != here, infos[i]["node_id"], i))
            self.actors, infos = [self.actors[i] for i in order], [infos[i] for i in order]
            per_node: dict[str, int] = {}
            for info in infos:
                per_node[info["node_id"]] = per_node.get(info["node_id"], 0) + 1
            if cfg.trainer.nnodes > 1 and sorted(per_node.values()) != [per_host] * cfg.trainer.nnodes:
                raise WorkerError(f"trainer.nnodes={cfg.trainer.nnodes} x {per_host_key}={per_host} needs {per_host} "
                                  f"{role} workers on each of {cfg.trainer.nnodes} nodes, but Ray placed them "
                                  f"{sorted(per_node.values())}")
            self.ray_nodes = len(per_node)
            self.rank_nodes = [info["node_id"] for info in infos]
            self.remote_ranks = frozenset(r for r, info in enumerate(infos) if info["node_id"] != here)
            names = {node["NodeID"]: node.get("NodeName") or node.get("NodeManagerAddress") for node in ray.nodes()}
            self.placement = tuple(names.get(info["node_id"], info["ip"]) for info in infos)
            print(("critic workers: " if role == "critic" else "workers: ")
                  + ", ".join(f"rank {r} on {name}" for r, name in enumerate(self.placement)), flush=True)
            if role == "actor":
                self.judge = RayJudgePool(compute_score, cfg.reward.mode, cfg.reward.num_workers, per_node)
            # one node: the rendezvous stays on loopback
            master = ("127.0.0.1" if len(per_node) == 1 else infos[0]["ip"], infos[0]["port"])
            self.backend = self._run("start", [(start_model,)] * self.world_size, [
                dict(rank=r, world_size=self.world_size, nnodes=cfg.trainer.nnodes, master=master,
                     judge=self.judge.client(infos[r]["node_id"]) if self.judge is not None else None,
                     total_updates=total_updates, critic_updates=critic_updates, role=role)
                for r in range(self.world_size)])[0]
            self.tokenizer = _tokenizer(start_model)
            if role == "actor" and cfg.uses_critic and cfg.trainer.critic_gpus:
                self.critic_group = RayWorkerGroup(cfg, start_model, critic_updates=critic_updates, role="critic")
        except BaseException:
            self.close()
            raise

    def _run(self, method, args, kwargs=None):
        import ray

        start = time.perf_counter()
        kwargs = kwargs or [{}] * len(self.actors)
        refs = [actor.call.remote(method, *a, **k) for actor, a, k in zip(self.actors, args, kwargs)]
        rank_of = {ref: rank for rank, ref in enumerate(refs)}
        pending = list(refs)
        deadline = time.monotonic() + self.worker_timeout_s
        watch = self.stop_requested if method in INTERRUPTIBLE else None
        abandoning = False
        while pending:  # the first failure stops everything: the others may be waiting for it in a collective
            left = max(0.0, deadline - time.monotonic())
            done, pending = ray.wait(pending, num_returns=1, timeout=min(left, 1.0) if watch else left)
            if watch is not None and not abandoning and watch():  # a stop: cut every worker's call short
                abandoning = True
                for actor in self.actors:
                    actor.interrupt.options(concurrency_group="control").remote()
            if not done:
                if time.monotonic() < deadline:
                    continue
                # past the deadline with workers still busy: a hang is not waited out
                self._timed_out(sorted(rank_of[ref] for ref in pending), len(refs), method)
            try:
                ray.get(done[0])
            except Exception as exc:  # noqa: BLE001 - re-raised with the worker named
                cause = getattr(exc, "cause", None) or exc
                if abandoning and isinstance(cause, StepAbandoned):
                    continue  # the worker left the call as asked: its weights are as before the step
                self.close()
                raise WorkerError(f"worker {rank_of[done[0]]} of {len(refs)} failed in {method}: "
                                  f"{type(cause).__name__}: {cause}") from exc
        if abandoning:
            raise StepAbandoned(f"stop requested during {method}: every worker left it")
        answers = ray.get(refs)
        self._record(time.perf_counter() - start, [busy for busy, _ in answers])
        return [result for _, result in answers]

    def _timed_out(self, ranks: list[int], of: int, method: str):
        where = ", ".join(f"rank {r}" + (f" (on {self.placement[r]})" if r < len(self.placement) else "") for r in ranks)
        self.close()
        raise WorkerError(f"{where} of {of} did not answer within trainer.worker_timeout_s={self.worker_timeout_s:g} s "
                          f"in {method}; every worker was stopped, since a worker hung there (in vLLM, the judge, or "
                          "a collective another worker left) would stall the run forever. Raise "
                          f"trainer.worker_timeout_s if {method} legitimately takes longer")

    def _call(self, rank: int, method: str, *args):
        """One call on one worker (a file transfer), under the same deadline as a phase of a step."""
        import ray

        try:
            return ray.get(self.actors[rank].call.remote(method, *args), timeout=self.worker_timeout_s)[1]
        except ray.exceptions.GetTimeoutError:
            self._timed_out([rank], len(self.actors), method)

    def complete_remote_hosts(self, source: Path, target: str, manifest: dict[str, list]) -> None:
        first_rank = {}
        for rank in sorted(self.remote_ranks):
            first_rank.setdefault(self.rank_nodes[rank], rank)
        for node, rank in first_rank.items():
            missing = self._call(rank, "missing_files", target, manifest)
            if missing:
                print(f"checkpoint {Path(target).name}: sending {len(missing)} file(s) to the host of rank {rank}, "
                      "whose disk lacks them", flush=True)
            for rel in missing:
                with open(source / rel, "rb") as f:
                    offset = 0
                    while True:  # an empty file is still written once
                        chunk = f.read(self.transfer_chunk_bytes)
                        self._call(rank, "write_chunk", str(Path(target) / rel), offset, chunk)
                        offset += len(chunk)
                        if len(chunk) < self.transfer_chunk_bytes:
                            break

    def fetch_part(self, rank: int, part: dict, target: Path) -> None:
        scratch = Path(part["scratch"])
        try:
            for rel, size in part["files"].items():
                offset = 0
                while True:
                    chunk = self._call(rank, "read_chunk", str(scratch / rel), offset, self.transfer_chunk_bytes)
                    write_chunk(target / rel, offset, chunk)
                    offset += len(chunk)
                    if len(chunk) < self.transfer_chunk_bytes or offset >= size:
                        break
                if offset != size:
                    raise OSError(f"copying {rel} from rank {rank} ({self.rank_nodes[rank]}) into {target} got "
                                  f"{offset} of its {size} bytes")
        finally:
            if self.actors:  # a failed transfer has stopped the workers already
                self._call(rank, "remove_scratch", str(scratch))

    def close(self) -> None:
        """Kills the workers and judge actors, and stops Ray if this group started it. Safe to call twice."""
        import ray

        if self.critic_group is not None:
            self.critic_group.close()
            self.critic_group = None
        if ray.is_initialized():
            for actor in self.actors:
                ray.kill(actor)
            if self.judge is not None:
                self.judge.close()
            if self.pg is not None:
                from ray.util.placement_group import remove_placement_group

                remove_placement_group(self.pg)
        self.actors, self.judge, self.pg = [], None, None
        if self.head is not None:
            self.head.stop()
            self.head = None


def init_ray(cfg):
    """Joins the running cluster (trainer.nnodes > 1, or $RAY_ADDRESS set) or starts a local Ray head of our own
    (`LocalRayHead`); prints the dashboard address. Returns the head this call started (None when it joined)."""
    import ray

    if ray.is_initialized():
        return None
    head = None
    if cfg.trainer.nnodes > 1 or os.environ.get("RAY_ADDRESS"):
        context = ray.init(address=os.environ.get("RAY_ADDRESS", "auto"))
        url = getattr(context, "dashboard_url", None)
    else:
        critic = cfg.trainer.critic_gpus if cfg.uses_critic else 0  # a critic on workers of its own needs room too
        head = LocalRayHead(num_cpus=max(os.cpu_count() or 1, cfg.trainer.nnodes * (cfg.trainer.gpus_per_node + critic)))
        url = head.dashboard_url
    print(f"Ray dashboard: http://{url}" if url else "Ray dashboard: not running", flush=True)
    return head


class LocalRayHead:
    """A Ray head on this machine for one run: `ray start --head --block` in a child process (its own process group),
    then `ray.init` on it. Its ports are picked free here and its session lives in its own folder
    ($CODEFU_RAY_TMPDIR, default <tmp>/codefu_ray, private to this user), so it never meets another Ray on the machine
    and judged programs never reach it; `stop()` ends
    this head's process group and nothing else (never `ray stop`, which would end every Ray on the machine).

    The raylet gives its Python agents some 30 s to start and aborts when they are late, which a busy machine
    makes happen: the head is a session of its own, and Linux shares the CPU fairly between sessions (autogroups),
    so among many busy sessions the agents' imports crawl. Where allowed (root) the head's session therefore starts
    at a raised priority (`START_NICE`) that is put back to normal once the head is up, before any worker exists;
    a failed start is retried without the dashboard, whose module processes compete with the agents (said on
    stdout). $CODEFU_RAY_DASHBOARD=0 skips the dashboard from the start."""

    START_NICE = -10
    # token authentication reads one token file per user (~/.ray), which another Ray on the machine may own: a
    # loopback head of our own goes without, like Ray before tokens
    ENV = {"RAY_AUTH_MODE": "disabled"}
    ATTEMPTS = 3
    START_TIMEOUT_S = 240
    STARTED = "Ray runtime started"

    def __init__(self, num_cpus: int):
        import ray

        # Ray makes its temp dir (and the sessions, sockets and logs in it) 0777: it gets one inside a private parent
        parent = private_directory(os.environ.get("CODEFU_RAY_TMPDIR") or os.path.join(tempfile.gettempdir(),
                                                                                         "codefu_ray"))
        temp_dir = parent / "ray"
        dashboard = os.environ.get("CODEFU_RAY_DASHBOARD", "1") != "0"
        self.process = None
        for attempt in range(1, self.ATTEMPTS + 1):
            dashboard = dashboard and attempt == 1
            gcs, dashboard_port, metrics, client, agent_grpc, agent_http, runtime_env = _free_ports(7)
            self.log = parent / f"head_{gcs}.log"
            command = [os.path.join(os.path.dirname(sys.executable), "ray"), "start", "--head", "--block",
                       "--disable-usage-stats", "--no-monitor", "--node-ip-address=127.0.0.1", f"--port={gcs}",
                       f"--num-cpus={num_cpus}", f"--temp-dir={temp_dir}", f"--metrics-export-port={metrics}",
                       f"--ray-client-server-port={client}", f"--include-dashboard={str(dashboard).lower()}",
                       "--dashboard-host=127.0.0.1", f"--dashboard-port={dashboard_port}",
                       # given ports, not 0: the raylet then need not wait for its agents to report theirs
                       f"--dashboard-agent-grpc-port={agent_grpc}", f"--dashboard-agent-listen-port={agent_http}",
                       f"--runtime-env-agent-port={runtime_env}"]
            with self.log.open("w") as log:
                self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                                preexec_fn=lambda: _session_nice("self", self.START_NICE),
                                                env={**os.environ, **self.ENV})
            if self._started():
                _session_nice(str(self.process.pid), 0)
                break
            self._stop_process()
            if attempt == self.ATTEMPTS:
                raise WorkerError(f"a local Ray head did not start in {self.ATTEMPTS} attempts; the last log is "
                                  f"{self.log}:\n{self.log.read_text()[-2000:]}")
            print(f"Ray did not start (attempt {attempt}, log {self.log}); retrying without the dashboard", flush=True)
        self.dashboard_url = f"127.0.0.1:{dashboard_port}" if dashboard else None
        os.environ.update(self.ENV)  # the driver (this process) and the workers it starts
        try:
            ray.init(address=f"127.0.0.1:{gcs}", configure_logging=False)
        except BaseException:
            self._stop_process()
            raise

    def _started(self) -> bool:
        deadline = time.monotonic() + self.START_TIMEOUT_S
        while time.monotonic() < deadline and self.process.poll() is None:
            if self.STARTED in self.log.read_text(errors="replace"):
                return True
            time.sleep(0.5)
        return False

    def _stop_process(self) -> None:
        if self.process is None or self.process.poll() is not None and not _group_alive(self.process.pid):
            return
        for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 10)):  # nothing of a finished run needs saving
            try:
                os.killpg(self.process.pid, sig)  # the head leads its own process group: this head, nothing else
            except ProcessLookupError:
                break
            try:
                self.process.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                pass

    def stop(self) -> None:
        import ray

        if ray.is_initialized():
            ray.shutdown()
        self._stop_process()


def _session_nice(pid: str, nice: int) -> None:
    """Sets the scheduling priority of process `pid`'s session (its autogroup), where the kernel lets us."""
    try:
        with open(f"/proc/{pid}/autogroup", "w") as f:
            f.write(str(nice))
    except OSError:  # no autogroups, or not root: the head starts at normal priority
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:  # held open together, so the ports are distinct
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _tokenizer(path: str):
    from transformers import AutoTokenizer

    from ..tiny_model import resolve_model_path

    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(path))
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def build_worker_group(cfg, start_model: str, *, compute_score: Callable | None = None, total_updates: int = 1,
                       critic_updates: int = 1, model=None, tokenizer=None, use_ray: bool | None = None) -> WorkerGroup:
    """LocalWorkerGroup for one worker, else RayWorkerGroup (whose workers load `start_model` themselves; a critic on
    devices of its own, trainer.critic_gpus > 0, needs Ray too). `use_ray=True` runs even one worker as a Ray actor,
    sharded with FSDP2 over a process group of one (the distributed code path on a single device, e.g.
    scripts/gpu_check.sh). total_updates / critic_updates: the optimizer updates the actor's / critic's schedules plan."""
    separate_critic = cfg.uses_critic and cfg.trainer.critic_gpus > 0
    if cfg.trainer.nnodes * cfg.trainer.gpus_per_node == 1 and not use_ray and not separate_critic:
        return LocalWorkerGroup(cfg, start_model, compute_score=compute_score, total_updates=total_updates,
                                critic_updates=critic_updates, model=model, tokenizer=tokenizer)
    if model is not None:
        raise ValueError(f"a model object was passed, but trainer.nnodes x trainer.gpus_per_node = "
                         f"{cfg.trainer.nnodes * cfg.trainer.gpus_per_node} workers each load the model from "
                         "model.path themselves: pass the path instead (start_model)")
    return RayWorkerGroup(cfg, start_model, compute_score=compute_score, total_updates=total_updates,
                          critic_updates=critic_updates)
