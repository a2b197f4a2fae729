"""The GPU check: one short run on one GPU that exits non-zero when anything is wrong, and says what.

    PYTHONUNBUFFERED=1 python scripts/gpu_check.py --out runs/gpu_check                  # ~7 minutes on one H200
    python scripts/gpu_check.py --device cpu --out /tmp/gc    # the CPU path (tests/test_precision.py runs it)

Each part runs in a process of its own under a hard timeout (a timed-out part is a failure, and the parts after it
still run): no part inherits another's CUDA state (a second sleep-mode vLLM engine in a process whose first one was
shut down asleep is a known allocator failure mode). Every part writes its numbers and named checks to
<out>/part_<name>.json; the driver gathers them into <out>/gpu_check.json and <out>/gpu_check.md (rows in the format of
benchmarks/RESULTS.md) and exits 1 when a part failed, timed out or missed a threshold.

- gate (30 s): CUDA available, the driver new enough for the CUDA build of torch, compute capability >= 8.0 (bf16),
  free disk for the checkpoints, vLLM importable, and which judge tier the machine gives (sandbox.doctor).
- grpo (225 s), first of the real parts: GRPO_STEPS (5) bf16 steps through the real trainer, one worker in this
  process (float32 master weights, autocast), a model shaped like Qwen2.5-0.5B (real vocabulary, random weights,
  the tiny tokenizer: nothing is downloaded) and vLLM with sleep mode, lr 1e-6. Device memory is read with
  `torch.cuda.mem_get_info` (the whole device: vLLM's pool, torch's cache, contexts; `max_memory_allocated` misses
  vLLM's allocations and vLLM resets it while profiling) by a sampling thread, per phase (rollout, update, weight
  sync); each phase's peak must lie within 15 % of the memory plan's. Every step is a sleep (level 2) / sync / wake
  cycle: the free memory after each wake must stay flat (within 1 GiB over the steps after the first), each sleep
  must free most of the engine's share, and the mean |vLLM - trainer| log-prob gap after each sync must stay below
  0.05 (bf16 on both sides). Validation (the judge) runs after the last step's sync; the last step's checkpoint stays.
- resume (195 s): a new process resumes that checkpoint and trains one more step: the master weights in both
  checkpoints are float32 and >= 90 % of them moved, the gap holds after the resume, the exported model is bf16.
- offload (90 s): the offload path forced on one GPU (CODEFU_TEST_OFFLOAD=1): FSDP2's CPUOffloadPolicy over a process
  group of one (`cpu:gloo,cuda:nccl`), the tiny model streamed from host shards into vLLM, a DCP checkpoint of host
  DTensors every step; the shards must live in host memory, the checkpoints hold float32 that moved, the gap holds.

On CPU (`--device cpu`) the same parts run on the tiny model with the HF engine and fewer steps: the trainer, the
checkpoints, the resume, the offload path and the driver's failure handling are exercised; the GPU-only checks
(memory against the plan, sleep cycles, driver, capability) are listed as not applicable there.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GIB = 1 << 30
TIMEOUTS = {"gate": 30, "grpo": 225, "resume": 195, "offload": 90}  # seconds, each part's hard limit (9 min in all)
# (on one H200 the parts took 20, 174, 157 and 72 s: benchmarks/RESULTS.md)
PARTS = tuple(TIMEOUTS)
GRPO_STEPS = 5
ROLLOUT = os.environ.get("CODEFU_GPU_CHECK_ROLLOUT", "vllm")  # hf: a GPU without vLLM (its checks then fail as n/a)
MOVED_AT_LEAST = 0.9        # share of master-weight elements that must change between two checkpoints
GAP_MEAN_BELOW = 0.05       # |engine - trainer| log-prob, mean over sampled tokens, bf16 on both sides
PLAN_WITHIN = 0.15          # each phase's measured device peak against the memory plan's
FLAT_WITHIN_GIB = 1.0       # spread of the free memory after each wake, over the cycles after the first
SLEEP_FREES_AT_LEAST = 0.8  # of the engine's share of the device (gpu_memory_utilization x total), less 1 GiB kept
MIN_CAPABILITY = (8, 0)     # bf16
MIN_FREE_DISK_GIB = 20      # the checkpoints of the 0.5B-shaped model (~7 GiB each) and the exported models
# the oldest driver each CUDA major version's wheels run on (NVIDIA's CUDA toolkit release notes, "minimum required
# driver version" for Linux)
MIN_DRIVER = {13: 580, 12: 525, 11: 450}
QWEN25_05B = dict(hidden_size=896, num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                  intermediate_size=4864, vocab_size=151936)  # Qwen/Qwen2.5-0.5B's config.json


def length_reward(data_source, solution_str, ground_truth, extra_info=None, reward_mode="linear"):
    """Varies within every group without a judge: the steps check the training machinery, not solving."""
    return {"score": (len(solution_str) % 7) / 7.0, "status": "wrong_answer"}


# -- checkpoint readers (also used by the tests) ------------------------------------------------------------------

def dcp_model(folder: str | Path) -> dict:
    """The `model` entries of a torch.distributed.checkpoint folder (a checkpoint's dcp/), as saved."""
    import torch
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    with tempfile.TemporaryDirectory() as scratch:
        target = Path(scratch) / "state.pt"
        dcp_to_torch_save(folder, target)
        return torch.load(target, weights_only=False)["model"]


def moved_fraction(before: dict, after: dict) -> float:
    """Share of the elements of the floating-point tensors in both that differ."""
    changed = total = 0
    for name, tensor in before.items():
        if tensor.is_floating_point():
            changed += int((after[name] != tensor).sum())
            total += tensor.numel()
    return changed / total


def checkpoint(out: Path, step: int) -> Path:
    return out / "checkpoints" / f"step_{step:06d}"


# -- the driver ---------------------------------------------------------------------------------------------------

def run_parts(out: Path, device: str, parts: list[str], timeouts: dict[str, int]) -> dict:
    """Runs each part in a process of its own; returns {part: its record, with "ok"}."""
    results = {}
    for name in parts:
        record_file = out / f"part_{name}.json"
        record_file.unlink(missing_ok=True)
        start = time.perf_counter()
        cmd = [sys.executable, str(Path(__file__).resolve()), "--part", name, "--device", device, "--out", str(out)]
        log = out / f"part_{name}.log"
        with open(log, "w") as fh:
            # a session of its own: at the limit the part goes with everything it started (vLLM's compile workers,
            # the judge's pool)
            proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True)
            try:
                rc = proc.wait(timeout=timeouts[name])
                error = None if rc == 0 else f"exit status {rc}"
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                rc, error = None, f"timed out after {timeouts[name]} s (hard limit of the part)"
        record = json.loads(record_file.read_text()) if record_file.exists() else {"checks": {}}
        record["seconds"] = round(time.perf_counter() - start, 1)
        if error:
            record["error"] = record.get("error") or error
            record["log_tail"] = log.read_text(errors="replace")[-3000:] if log.exists() else ""
        record["ok"] = rc == 0 and not error and bool(record["checks"]) and all(
            v is True or v == "n/a" for v in record["checks"].values())
        results[name] = record
        print(f"[{name}] {'ok' if record['ok'] else 'FAILED'} in {record['seconds']} s"
              + "".join(f"\n    {'ok  ' if v is True else 'n/a ' if v == 'n/a' else 'FAIL'} {k}"
                        for k, v in record["checks"].items())
              + (f"\n    error: {record['error']}" if record.get("error") else ""), flush=True)
        (out / "gpu_check.json").write_text(json.dumps(results, indent=1, default=str))
        if name == "gate" and not record["ok"]:
            print("the gate failed: the other parts cannot run on this machine", flush=True)
            break
    return results


def results_rows(results: dict, device_name: str) -> str:
    """benchmarks/RESULTS.md rows: one per part, what it measured."""
    lines = ["| part | result | seconds | measured |", "|---|---|---|---|"]
    for name, r in results.items():
        measured = "; ".join(f"{k} {v}" for k, v in r.get("summary", {}).items())
        lines.append(f"| {name} | {'ok' if r['ok'] else 'FAILED: ' + str(r.get('error') or 'a check missed')} | "
                     f"{r['seconds']} | {measured} |")
    return f"GPU check on {device_name}\n\n" + "\n".join(lines) + "\n"


# -- parts --------------------------------------------------------------------------------------------------------

class Part:
    """A part's record: numbers, named checks (True, False or "n/a"), saved after every change."""

    def __init__(self, out: Path, name: str, device: str):
        self.file = out / f"part_{name}.json"
        self.device = device
        self.record = {"part": name, "device": device, "checks": {}, "summary": {}}
        self.save()

    def check(self, name: str, ok, gpu_only: bool = False, vllm_only: bool = False) -> None:
        na = (gpu_only and self.device != "cuda") or (vllm_only and ROLLOUT != "vllm") or ok == "n/a"
        self.record["checks"][name] = "n/a" if na else bool(ok)
        self.save()

    def save(self) -> None:
        self.file.write_text(json.dumps(self.record, indent=1, default=str))


def part_gate(out: Path, device: str, part: Part) -> None:
    import torch

    rec = part.record
    rec["versions"] = {"python": sys.version.split()[0], "torch": torch.__version__, "cuda": torch.version.cuda}
    try:
        import vllm

        rec["versions"]["vllm"] = vllm.__version__
    except Exception as exc:  # noqa: BLE001 - named in the record and failed below
        rec["vllm_error"] = f"{type(exc).__name__}: {exc}"
    part.check("vllm importable", "vllm" in rec["versions"] if ROLLOUT == "vllm" else "n/a", gpu_only=True)
    free_disk = shutil.disk_usage(out).free / GIB
    rec["free_disk_gib"] = round(free_disk, 1)
    part.check(f"free disk >= {MIN_FREE_DISK_GIB} GiB", free_disk >= MIN_FREE_DISK_GIB, gpu_only=True)
    available = torch.cuda.is_available()
    part.check("torch.cuda.is_available()", available, gpu_only=True)
    if device == "cuda" and available:
        props = torch.cuda.get_device_properties(0)
        rec["gpu"] = {"name": props.name, "total_gib": round(props.total_memory / GIB, 2),
                      "capability": f"{props.major}.{props.minor}", "count": torch.cuda.device_count()}
        part.check(f"compute capability >= {MIN_CAPABILITY[0]}.{MIN_CAPABILITY[1]} (bf16)",
                   (props.major, props.minor) >= MIN_CAPABILITY)
        driver = _driver_version()
        rec["gpu"]["driver"] = driver
        cuda_major = int(str(torch.version.cuda).split(".")[0])
        need = MIN_DRIVER.get(cuda_major)
        part.check(f"driver >= {need} for CUDA {torch.version.cuda} wheels",
                   driver is not None and need is not None and int(driver.split(".")[0]) >= need)
        a = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
        part.check("a bf16 matmul on the device is finite", bool(torch.isfinite(a @ a).all()))
        rec["summary"] = {"gpu": props.name, "driver": driver, "torch": torch.__version__,
                          "vllm": rec["versions"].get("vllm")}


def _driver_version() -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None
    except (OSError, subprocess.TimeoutExpired):
        return None


class PhaseMemory:
    """Samples the device's used memory (total - free, `torch.cuda.mem_get_info`) every few milliseconds and keeps
    each phase's peak; `phase` is set by the wrapped worker-group methods."""

    def __init__(self, device: str):
        self.device, self.phase, self.peaks = device, None, {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        if device == "cuda":
            self._thread.start()

    @staticmethod
    def used() -> int:
        import torch

        free, total = torch.cuda.mem_get_info()
        return total - free

    def _run(self) -> None:
        while not self._stop.is_set():
            phase = self.phase
            if phase is not None:
                used = self.used()
                self.peaks[phase] = max(self.peaks.get(phase, 0), used)
            time.sleep(0.002)

    def wrap(self, obj, method: str, phase: str) -> None:
        inner = getattr(obj, method)

        def wrapped(*args, **kwargs):
            if phase is not None:
                self.phase = phase
            try:
                return inner(*args, **kwargs)
            finally:
                self.phase = None
        setattr(obj, method, wrapped)

    def stop(self) -> None:
        self._stop.set()


def _data(out: Path) -> dict:
    from codefu_helpers.data import FilterConfig, prepare_dataset

    folder = out / "data"
    if not (folder / "train.parquet").exists():
        prepare_dataset(ROOT / "data" / "sample", folder, FilterConfig(language="python", seed=0))
    return {"train": folder / "train.parquet", "test": folder / "test.parquet"}


def _half_billion_shaped_model(out: Path) -> str:
    """A randomly initialised Qwen2 with Qwen2.5-0.5B's shape and the tiny tokenizer, saved once."""
    folder = out / "qwen2.5-0.5b-shaped"
    if (folder / "config.json").exists():
        return str(folder)
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    from codefu_helpers.tiny_model import build_tiny_model

    tokenizer = AutoTokenizer.from_pretrained(build_tiny_model())
    config = Qwen2Config(**QWEN25_05B, max_position_embeddings=4096, tie_word_embeddings=True,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, bos_token_id=None)
    torch.manual_seed(0)
    Qwen2ForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def _config(out: Path, device: str, data: dict, model: str, steps: int, **extra):
    from codefu_helpers.config import ExperimentConfig

    overrides = {"model.path": model, "model.device": device, "model.dtype": "bfloat16", "optim.lr": 1e-6,
                 "data.max_response_length": 128 if device == "cuda" else 24, "data.train_batch_size": 4,
                 "rollout.n": 4, "algorithm.ppo_mini_batch_size": 2, "algorithm.ppo_micro_batch_size": 8,
                 "trainer.total_steps": steps, "trainer.test_freq": 0, "data.val_path": None,
                 "tracking.backend": "none", "trainer.output_dir": str(out), "data.train_path": str(data["train"]),
                 "trainer.worker_timeout_s": 600, "checkpoint.keep_last": 2}
    if device == "cuda" and ROLLOUT == "vllm":
        overrides.update({"rollout.backend": "vllm", "rollout.enable_sleep_mode": True,
                          "rollout.gpu_memory_utilization": 0.3})
    else:
        overrides["rollout.backend"] = "hf"
    overrides.update(extra)
    return ExperimentConfig.from_yaml(ROOT / "configs" / "ci_tiny.yaml").with_overrides(overrides).validate()


def _gaps(history: list[dict]) -> list[float]:
    return [h["rollout_logprob_diff_mean"] for h in history if h.get("rollout_logprob_diff_mean") is not None]


def _check_gaps(part: Part, history: list[dict], what: str) -> None:
    gaps = _gaps(history)
    part.record[f"logprob_gap_mean_{what}"] = gaps
    part.record[f"logprob_gap_max_{what}"] = [h.get("rollout_logprob_diff_max") for h in history]
    part.check(f"log-prob gap after each sync < {GAP_MEAN_BELOW} ({what})",
               len(gaps) == len(history) and max(gaps) < GAP_MEAN_BELOW, gpu_only=True, vllm_only=True)


def part_grpo(out: Path, device: str, part: Part) -> None:
    import torch

    from codefu_helpers.data import read_verl_parquet
    from codefu_helpers.memory_plan import memory_plan
    from codefu_helpers.trainer import GRPOTrainer

    from codefu_helpers.sandbox.doctor import main as doctor

    part.record["judge_tier_exit_status"] = doctor([])  # validation runs the judge: which tier, and why
    part.check("a judge tier protects the host (sandbox.doctor)", part.record["judge_tier_exit_status"] == 0)
    data = _data(out)
    model = _half_billion_shaped_model(out) if device == "cuda" else "tiny://qwen2"
    steps = GRPO_STEPS if device == "cuda" else 2
    run = out / "grpo_run"
    shutil.rmtree(run, ignore_errors=True)
    # micro-batches cut by a token budget (padding included), so the update holds about what the plan counts
    cfg = _config(run, device, data, model, steps, **{"checkpoint.save_every": steps, "trainer.val_samples": 1,
                                                      "algorithm.ppo_max_token_len_per_gpu": 4096})
    plan = memory_plan(cfg)
    part.record["plan_gib"] = {k: round(v / GIB, 2) for k, v in plan.peaks.items()}
    memory = PhaseMemory(device)
    start = time.perf_counter()
    trainer = GRPOTrainer(cfg, read_verl_parquet(data["train"]), run, compute_score=length_reward,
                          val_rows=read_verl_parquet(data["test"]))  # validated after the steps (below)
    part.record["start_seconds"] = round(time.perf_counter() - start, 1)
    cycles = []  # per step: used memory before and after the engine's sleep, and after the wake (the sync)
    workers = trainer.workers
    engine = getattr(workers.worker, "engine", None)
    if device == "cuda" and engine is not None and engine.backend == "vllm":
        inner_sleep = engine.sleep

        def sleep(level=1):
            before = PhaseMemory.used()
            inner_sleep(level)
            torch.cuda.synchronize()
            cycles.append({"level": level, "before_sleep": before, "after_sleep": PhaseMemory.used()})
        engine.sleep = sleep
        inner_sync = workers.sync_weights

        def sync_weights():
            seconds = inner_sync()
            torch.cuda.synchronize()
            if cycles:
                cycles[-1]["after_wake"] = PhaseMemory.used()
            return seconds
        workers.sync_weights = sync_weights
        inner_wake = engine.llm.wake_up

        def wake_up(tags=None):
            # the plan's weight-sync phase: the weights woken and loaded while the KV cache still sleeps, after the
            # engine emptied torch's cache (what the update freed but torch still caches is not needed by anyone);
            # the KV cache coming back starts the next rollout's share
            memory.phase = "weight sync" if tags == ["weights"] else "rollout" if tags == ["kv_cache"] else None
            return inner_wake(tags=tags)
        engine.llm.wake_up = wake_up
    memory.wrap(workers, "generate", "rollout")
    memory.wrap(workers, "log_probs", "update")
    memory.wrap(workers, "update", "update")
    memory.wrap(workers, "sync_weights", None)  # the phase is set by the engine's wake-ups inside
    validation = {}
    try:
        history = trainer.fit()
        memory.stop()
        try:  # after the last sync, as trainer.test_freq would; a judge that cannot start fails this check only
            validation = trainer.validate(steps)
        except Exception as exc:  # noqa: BLE001 - recorded and failed below
            part.record["validation_error"] = f"{type(exc).__name__}: {exc}"
    finally:
        memory.stop()
        trainer.close()
    part.record["validation"] = validation
    part.record["fit_seconds"] = round(time.perf_counter() - start, 1)
    part.record["steps"] = [{k: h.get(k) for k in ("step", "step_seconds", "time_generate", "time_reward_wait",
                                                   "time_logprob", "time_update", "time_weight_sync",
                                                   "time_checkpoint", "response_tokens", "tokens_per_second",
                                                   "rollout_logprob_diff_mean", "rollout_logprob_diff_max",
                                                   "optimizer_steps", "val/pass_at_1", "val/problems",
                                                   "val/judge_errors")} for h in history]
    part.check(f"{steps} steps, an optimizer step in each", [h["step"] for h in history] == list(range(1, steps + 1))
               and all(h.get("optimizer_steps", 0) >= 1 for h in history))
    _check_gaps(part, history, "training")
    part.check("validation ran through the judge, no judge errors",
               validation.get("val/problems", 0) > 0 and validation.get("val/judge_errors", 1) == 0)
    part.check(f"checkpoint of step {steps} complete", (checkpoint(run, steps) / "dcp").is_dir())
    seconds = [h["step_seconds"] for h in history[1:]] or [history[0]["step_seconds"]]
    part.record["summary"] = {"seconds per step (median after the first)": round(statistics.median(seconds), 2),
                              "response tokens per step": history[-1].get("response_tokens")}
    if device != "cuda":
        for name in ("memory per phase within 15 % of the plan", "free memory flat over the sleep/sync/wake cycles",
                     "each sleep frees the engine's share"):
            part.check(name, None, gpu_only=True)
        return
    measured = {k: round(v / GIB, 2) for k, v in memory.peaks.items()}
    part.record["measured_peak_gib"] = measured
    off = {phase: round(measured[phase] / part.record["plan_gib"][phase] - 1, 3)
           for phase in part.record["plan_gib"] if phase in measured}
    part.record["measured_vs_plan"] = off
    expected = {"rollout", "update"} | ({"weight sync"} if ROLLOUT == "vllm" else set())  # HF on one GPU: no sync
    part.check(f"memory per phase within {PLAN_WITHIN:.0%} of the plan",
               expected <= set(off) and all(abs(x) <= PLAN_WITHIN for x in off.values()))
    part.record["cycles_gib"] = [{k: (round(v / GIB, 3) if k != "level" else v) for k, v in c.items()} for c in cycles]
    woken = [c["after_wake"] for c in cycles if "after_wake" in c]
    spread = (max(woken[1:]) - min(woken[1:])) / GIB if len(woken) >= 3 else float("inf")
    part.record["free_after_wake_spread_gib"] = round(spread, 3)
    part.check(f">= {steps - 1} sleep/sync/wake cycles, free memory after each wake flat within {FLAT_WITHIN_GIB} "
               "GiB", len(woken) >= steps - 1 and spread <= FLAT_WITHIN_GIB, vllm_only=True)
    share = (cfg.rollout.gpu_memory_utilization or 0) * torch.cuda.get_device_properties(0).total_memory
    freed = [c["before_sleep"] - c["after_sleep"] for c in cycles]
    part.record["sleep_freed_gib"] = [round(f / GIB, 2) for f in freed] or [float("nan")]
    part.check(f"each sleep frees >= {SLEEP_FREES_AT_LEAST:.0%} of the engine's share less 1 GiB",
               bool(freed) and min(freed) >= SLEEP_FREES_AT_LEAST * (share - GIB), vllm_only=True)
    part.check("training sleeps are level 2 (weights discarded, then re-synced)",
               bool(cycles) and all(c["level"] == 2 for c in cycles[:steps]), vllm_only=True)
    part.record["summary"].update({"peak GiB per phase (plan)": {k: f"{measured.get(k)} ({v})" for k, v in
                                                                 part.record["plan_gib"].items()},
                                   "sleep frees GiB": min(part.record["sleep_freed_gib"])})


def part_resume(out: Path, device: str, part: Part) -> None:
    from codefu_helpers.data import read_verl_parquet
    from codefu_helpers.trainer import GRPOTrainer

    data = _data(out)
    run = out / "grpo_run"
    steps = GRPO_STEPS if device == "cuda" else 2
    saved = checkpoint(run, steps)
    part.check(f"the grpo part's checkpoint of step {steps} is there", (saved / "dcp").is_dir())
    model = _half_billion_shaped_model(out) if device == "cuda" else "tiny://qwen2"
    cfg = _config(run, device, data, model, steps + 1, **{"checkpoint.save_every": 1})
    trainer = GRPOTrainer(cfg, read_verl_parquet(data["train"]), run, compute_score=length_reward)
    try:
        resumed_at = trainer.resume()
        history = trainer.fit(start_step=resumed_at)
    finally:
        trainer.close()
    part.check(f"resumed at step {steps} and trained step {steps + 1}",
               resumed_at == steps and [h["step"] for h in history] == [steps + 1])
    _check_gaps(part, history, "after the resume")
    a, b = dcp_model(saved / "dcp"), dcp_model(checkpoint(run, steps + 1) / "dcp")
    part.record["dcp_dtypes"] = sorted({str(t.dtype) for t in b.values()})
    part.record["moved"] = moved_fraction(a, b)
    part.check("master weights float32 in both checkpoints",
               {str(t.dtype) for t in a.values()} == {"torch.float32"} and part.record["dcp_dtypes"] == ["torch.float32"])
    part.check(f">= {MOVED_AT_LEAST:.0%} of the master weights moved at lr 1e-6", part.record["moved"] >= MOVED_AT_LEAST)
    exported = json.loads((run / "model" / "config.json").read_text())
    part.check("the exported model is bf16", (exported.get("dtype") or exported.get("torch_dtype")) == "bfloat16")
    part.record["summary"] = {"moved": f"{part.record['moved']:.1%}", "step seconds": round(history[0]["step_seconds"], 2)}


def part_offload(out: Path, device: str, part: Part) -> None:
    os.environ["CODEFU_TEST_OFFLOAD"] = "1"
    from codefu_helpers.data import read_verl_parquet
    from codefu_helpers.trainer import GRPOTrainer

    data = _data(out)
    run = out / "offload_run"
    shutil.rmtree(run, ignore_errors=True)
    cfg = _config(run, device, data, "tiny://qwen2", 2,
                  **{"trainer.fsdp_cpu_offload": True, "checkpoint.save_every": 1})
    trainer = GRPOTrainer(cfg, read_verl_parquet(data["train"]), run, compute_score=length_reward)
    try:
        policy = trainer.workers.worker.policy
        locations = {p.to_local().device.type for p in policy.model.parameters() if hasattr(p, "to_local")}
        part.record["shard_devices"] = sorted(locations)
        part.check("FSDP2 shards of the policy live in host memory", locations == {"cpu"})
        import torch.distributed as dist

        part.record["process_group_backend"] = str(dist.get_backend())
        history = trainer.fit()
    finally:
        trainer.close()
    part.check("2 steps, an optimizer step in each", [h["step"] for h in history] == [1, 2]
               and all(h.get("optimizer_steps", 0) >= 1 for h in history))
    _check_gaps(part, history, "offload")
    a, b = (dcp_model(checkpoint(run, s) / "dcp") for s in (1, 2))
    part.record["moved"] = moved_fraction(a, b)
    part.check("DCP checkpoints of host shards hold float32",
               {str(t.dtype) for t in b.values()} == {"torch.float32"})
    part.check(f">= {MOVED_AT_LEAST:.0%} of the master weights moved at lr 1e-6", part.record["moved"] >= MOVED_AT_LEAST)
    part.record["summary"] = {"backend": part.record["process_group_backend"], "moved": f"{part.record['moved']:.1%}",
                              "step seconds": round(history[-1]["step_seconds"], 2)}


PART_FUNCTIONS = {"gate": part_gate, "grpo": part_grpo, "resume": part_resume, "offload": part_offload}


def run_part(name: str, out: Path, device: str) -> int:
    os.environ.setdefault("CODEFU_RAY_DASHBOARD", "0")
    part = Part(out, name, device)
    try:
        PART_FUNCTIONS[name](out, device, part)
        part.save()  # what came after the last check (the summary)
    except BaseException as exc:  # noqa: BLE001 - recorded, then the part fails
        part.record["error"] = f"{type(exc).__name__}: {exc}"
        part.record["traceback"] = traceback.format_exc()[-4000:]
        part.save()
        print(part.record["traceback"], file=sys.stderr, flush=True)
        return 1
    failed = [k for k, v in part.record["checks"].items() if v is False]
    return 1 if failed else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for the records, logs, runs and checkpoints")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--parts", default=",".join(PARTS), help=f"a subset of {','.join(PARTS)}, in that order")
    parser.add_argument("--timeout", action="append", default=[], metavar="PART=SECONDS",
                        help="replace a part's hard limit (e.g. for a slower GPU)")
    parser.add_argument("--part", choices=PARTS, help=argparse.SUPPRESS)  # the driver runs each part with this
    args = parser.parse_args(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if args.part:
        return run_part(args.part, out, args.device)
    parts = [p for p in args.parts.split(",") if p]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"--parts {','.join(unknown)}: the parts are {','.join(PARTS)}")
    timeouts = dict(TIMEOUTS)
    for item in args.timeout:
        name, _, seconds = item.partition("=")
        if name not in TIMEOUTS or not seconds.isdigit():
            parser.error(f"--timeout {item!r}: give PART=SECONDS with PART one of {','.join(PARTS)}")
        timeouts[name] = int(seconds)
    results = run_parts(out, args.device, [p for p in PARTS if p in parts], timeouts)
    gate = results.get("gate", {})
    name = gate.get("gpu", {}).get("name", args.device)
    (out / "gpu_check.md").write_text(results_rows(results, name))
    ok = bool(results) and all(r["ok"] for r in results.values()) and len(results) == len(parts)
    print(("GPU CHECK PASSED" if ok else "GPU CHECK FAILED") + f": {out / 'gpu_check.json'}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
