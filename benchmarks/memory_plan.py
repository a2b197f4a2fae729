"""The memory plan's counts against peaks measured on CPU, one fresh process per case (codefu_helpers.memory_plan).

    .venv/bin/python benchmarks/memory_plan.py --json runs/memory_plan.json

Each case builds a random Qwen2-architecture model of the given shape in a fresh process (glibc asked to return
every block of 64 KiB or more to the system at once, MALLOC_MMAP_THRESHOLD_, so the resident set follows the live
tensors), resets the peak resident set (/proc/self/clear_refs) and measures, in bytes:

- the update's peak over the weights: forward and backward of one micro-batch of T tokens through the trainer's
  log-prob code (`policy_ops.response_log_probs`, entropy on), i.e. gradients + activations + the chunked logits,
  against the plan's `gradients + activations` (plus autocast's weight copies in bf16);
- AdamW's state after the step, against the plan's `AdamW moments` (8 bytes per parameter).

The error is (plan - measured) / measured: positive means the plan over-estimates (the safe side).

    .venv/bin/python benchmarks/memory_plan.py --table

prints instead the plan of each CodeFu stage (configs/codefu7b_stage*.yaml, their trainer.nnodes hosts) for each
engine on each 8-GPU training instance type, as a markdown table: counts from the configs and the models' shapes,
on the memory CUDA reports for that GPU (launch/instances.py: GPUS), not measurements. The native column runs
the stage as the native trainer can (trainer.sequence_parallel_size=1, rollout.tensor_parallel_size=1, a token
budget of the longest sample).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CASE = r'''
import json, re, sys, torch
from transformers import Qwen2Config, Qwen2ForCausalLM
from codefu_helpers.policy_ops import PackedBatch, response_log_probs

spec = json.loads(sys.argv[1])
torch.manual_seed(0)
torch.set_num_threads(1)

def status(key):
    return int(re.search(rf"{key}:\s+(\d+) kB", open("/proc/self/status").read()).group(1)) << 10

def reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")

config = Qwen2Config(vocab_size=spec["vocab"], hidden_size=spec["hidden"], intermediate_size=spec["intermediate"],
                     num_hidden_layers=spec["layers"], num_attention_heads=spec["heads"],
                     num_key_value_heads=spec["kv_heads"], max_position_embeddings=4096, tie_word_embeddings=True)
model = Qwen2ForCausalLM(config)
if spec["checkpointing"]:
    model.gradient_checkpointing_enable()
model.train()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6)
B, S = spec["sequences"], spec["length"]
ids = torch.randint(3, spec["vocab"], (B, S))
mask = torch.ones_like(ids)
batch = PackedBatch(ids, mask, mask.cumsum(-1) - 1, ids[:, 1:], torch.ones(B, S - 1), 1)
autocast = spec["dtype"] == "bfloat16"
# one step first, so that what is measured is a steady-state update (the allocator's first-touch effects gone)
for measure in (False, True):
    optimizer.zero_grad(set_to_none=True)
    before = status("VmRSS")
    reset_peak()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        log_probs, entropy = response_log_probs(model, batch, with_entropy=True)
    (-(log_probs.float().mean()) - 0.01 * entropy.float().mean()).backward()
    peak = status("VmHWM") - before
    del log_probs, entropy
    grads_held = status("VmRSS") - before
    optimizer.step()
after_step = status("VmRSS")
optimizer.zero_grad(set_to_none=True)
adam = sum(v.numel() * v.element_size() for s in optimizer.state.values() for v in s.values() if torch.is_tensor(v) and v.dim())
print(json.dumps({"update_peak": peak, "grads_held": grads_held, "adam_state_bytes": adam,
                  "params": sum(p.numel() for p in model.parameters())}))
'''

CASES = [
    dict(name="tiny-fp32", vocab=3072, hidden=256, intermediate=768, layers=2, heads=4, kv_heads=2, sequences=4,
         length=512, dtype="float32", checkpointing=False),
    dict(name="small-fp32", vocab=8192, hidden=512, intermediate=1536, layers=8, heads=8, kv_heads=2, sequences=4,
         length=512, dtype="float32", checkpointing=False),
    dict(name="small-fp32-ckpt", vocab=8192, hidden=512, intermediate=1536, layers=8, heads=8, kv_heads=2, sequences=4,
         length=512, dtype="float32", checkpointing=True),
    dict(name="small-bf16-autocast", vocab=8192, hidden=512, intermediate=1536, layers=8, heads=8, kv_heads=2,
         sequences=4, length=512, dtype="bfloat16", checkpointing=False),
]


def estimate(case: dict) -> dict:
    """The plan's numbers for one worker with this shape, dtype and micro-batch."""
    from codefu_helpers.config import ExperimentConfig
    from codefu_helpers.memory_plan import ModelShape, memory_plan

    shape = ModelShape(vocab=case["vocab"], hidden=case["hidden"], layers=case["layers"], heads=case["heads"],
                       kv_heads=case["kv_heads"], head_dim=case["hidden"] // case["heads"],
                       intermediate=case["intermediate"], tied=True, source=case["name"])
    tokens = case["sequences"] * case["length"]
    cfg = ExperimentConfig().with_overrides({
        "model.dtype": case["dtype"], "model.device": "cpu", "model.gradient_checkpointing": case["checkpointing"],
        "algorithm.use_kl_loss": False, "data.max_prompt_length": 1, "data.max_response_length": case["length"] - 1,
        "algorithm.ppo_max_token_len_per_gpu": tokens, "model.path": "plan-only"})
    plan = memory_plan(cfg, shape=shape, device_memory_gib=24)
    c = plan.components
    return {"params": shape.params, "update_over_weights": c["gradients (fp32)"] + c["activations"]
            + c.get("autocast weight copies", 0), "activations": c["activations"], "adam": c["AdamW moments (fp32)"]}


def measure(case: dict) -> dict:
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", CASE, json.dumps(case)], capture_output=True, text=True,
                          env=env, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"case {case['name']} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run(cases: list[dict]) -> list[dict]:
    rows = []
    for case in cases:
        plan, got = estimate(case), measure(case)
        assert plan["params"] == got["params"], (case["name"], plan["params"], got["params"])
        rows.append({"case": case["name"], "tokens": case["sequences"] * case["length"], "params": got["params"],
                     "plan_update_mib": plan["update_over_weights"] / 2**20,
                     "measured_update_mib": got["update_peak"] / 2**20,
                     "update_error": (plan["update_over_weights"] - got["update_peak"]) / got["update_peak"],
                     "plan_adam_mib": plan["adam"] / 2**20, "measured_adam_mib": got["adam_state_bytes"] / 2**20,
                     "adam_error": (plan["adam"] - got["adam_state_bytes"]) / got["adam_state_bytes"]})
    return rows


TABLE_INSTANCES = ("ml.p4d.24xlarge", "ml.p4de.24xlarge", "ml.p5.48xlarge")


def stage_config(stage: str, engine: str):
    """The shipped stage, or the same as the native trainer can run it."""
    from codefu_helpers.config import ExperimentConfig

    cfg = ExperimentConfig.from_yaml(ROOT / "configs" / f"{stage}.yaml")
    if engine == "native":
        longest = cfg.data.max_prompt_length + cfg.data.max_response_length
        cfg = cfg.with_overrides({"trainer.engine": "native", "trainer.sequence_parallel_size": 1,
                                  "rollout.tensor_parallel_size": 1, "algorithm.ppo_max_token_len_per_gpu": longest})
    return cfg.validate()


def instance_table() -> list[str]:
    """Markdown rows: each stage x engine x instance type, the peak of each phase and the verdict."""
    from codefu_helpers.launch.instances import INSTANCE_TYPES
    from codefu_helpers.memory_plan import GIB, memory_plan

    lines = ["| stage | engine | instance (GPUs) | GiB per GPU | rollout | log-prob pass | update | weight sync | "
             "peak phase | verdict |", "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
    for stage in ("codefu7b_stage1", "codefu7b_stage2"):
        for engine in ("verl", "native"):
            cfg = stage_config(stage, engine)
            for name in TABLE_INSTANCES:
                itype = INSTANCE_TYPES[name]
                plan = memory_plan(cfg, device_memory_gib=itype.usable_gpu_memory_gib,
                                   world_size=cfg.trainer.nnodes * itype.gpus, gpus_per_node=itype.gpus,
                                   device_name=itype.gpu_name)
                peaks = plan.peaks
                cell = (lambda phase: f"{peaks[phase] / GIB:.1f}" if phase in peaks else "-")
                verdict = (f"fits, {(plan.device_bytes - plan.peak) / GIB:+.1f} GiB" if plan.fits
                           else f"**refused**, {(plan.device_bytes - plan.peak) / GIB:+.1f} GiB")
                lines.append(f"| {stage} | {engine} | {name} ({cfg.trainer.nnodes} x {itype.gpus} {itype.gpu}) | "
                             f"{plan.device_bytes / GIB:.1f} | {cell('rollout')} | {cell('log-prob pass')} | "
                             f"{cell('update')} | {cell('weight sync')} | {plan.peak_phase} | {verdict} |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(c["name"] for c in CASES))
    parser.add_argument("--json", default=None)
    parser.add_argument("--table", action="store_true",
                        help="print the CodeFu stages' plans per engine and instance type (no measurement)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    if args.table:
        print("\n".join(instance_table()))
        return 0
    chosen = [c for c in CASES if c["name"] in args.cases.split(",")]
    rows = run(chosen)
    print("| case | tokens | parameters | update peak: plan MiB | measured MiB | error | AdamW: plan MiB | measured MiB |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['case']} | {r['tokens']} | {r['params'] / 1e6:.1f}M | {r['plan_update_mib']:.1f} | "
              f"{r['measured_update_mib']:.1f} | {r['update_error']:+.1%} | {r['plan_adam_mib']:.1f} | "
              f"{r['measured_adam_mib']:.1f} |")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
