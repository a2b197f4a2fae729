#!/usr/bin/env bash
# GPU check (issues 9 and 19): one short run on one H100/H200, no downloads; writes $OUT/gpu_check.json.
#
#   OUT=runs/gpu_check bash scripts/gpu_check.sh                 # both parts, ~12 minutes
#   PARTS=grpo OUT=runs/gpu_check bash scripts/gpu_check.sh      # only the GRPO steps, ~5 minutes
#
# Needs a GPU environment with the CUDA `vllm` wheel (README "Running on a GPU"); nothing is fetched.
#
# Part "engine" (issue 9): randomly initialised Qwen2s shaped like Qwen2.5-0.5B and -1.5B (real vocabulary size),
# the tiny tokenizer built from the bundled sample, the bundled problems' prompts. For each shape it records:
#   - rollout tokens/s through VLLMRollout (log-probs on) vs plain vLLM offline (`LLM.generate`, no log-probs) on
#     the same prompts and sampling, same engine settings (target: ours >= 95 % of plain);
#   - sleep (level 1) / wake: device memory freed and seconds, and a wake + weight sync after a simulated update;
#   - weight-sync seconds with the engine awake;
#   - bf16 log-prob difference |vLLM - trainer| over the sampled tokens, before and after that update.
# SHAPES, PROMPTS, N and MAX_NEW_TOKENS shrink it (~8 minutes as set).
#
# Part "grpo" (issue 19, scripts/gpu_grpo_check.py, adds "grpo" to the same JSON): GRPO_STEPS (3) bf16 steps at
# lr 1e-6 through the real trainer on the tiny model, twice: one worker in this process (autocast over float32
# master weights, vLLM in process with sleep mode: the single-GPU config's path) and one Ray worker sharded with FSDP2
# over a one-GPU NCCL process group (MixedPrecisionPolicy bf16/fp32, weights streamed from the shards into its vLLM
# engine, asleep during the update: the 7B configs' path, per GPU). Checks per run: >= 90 % of the float32 master
# weights move between the first and last checkpoint (dcp/), the exported model is bf16, the mean |vLLM - trainer|
# log-prob gap stays below 0.05. Its CPU-checkable parts run in tests/test_precision.py.
#
# Every measurement is recorded even when a later one fails (its error goes into the JSON); the exit status is
# non-zero when a part failed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python}"
OUT="${OUT:-runs/gpu_check}"
mkdir -p "$OUT"
PARTS="${PARTS:-engine,grpo}"
export OUT SHAPES="${SHAPES:-0.5b,1.5b}" PROMPTS="${PROMPTS:-32}" N="${N:-8}" MAX_NEW_TOKENS="${MAX_NEW_TOKENS:-256}"
export VLLM_ENABLE_V1_MULTIPROCESSING=0 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || { echo "no GPU visible"; exit 1; }

status=0
if [[ ",$PARTS," == *",engine,"* ]]; then
timeout 450 "$PY" - <<'PYTHON' || status=1
import gc, json, os, tempfile, time, traceback

import torch
from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

import vllm
from codefu_helpers.eval_datasets import load_benchmark
from codefu_helpers.rollout import SamplingParams, VLLMRollout, encode_prompt
from codefu_helpers.tiny_model import build_tiny_model
from codefu_helpers.policy_ops import pack, response_log_probs

assert torch.cuda.is_available(), "no CUDA device"
OUT = os.environ["OUT"]
PROMPTS, N, MAX_NEW = int(os.environ["PROMPTS"]), int(os.environ["N"]), int(os.environ["MAX_NEW_TOKENS"])
# Qwen2.5 shapes (config.json of Qwen/Qwen2.5-0.5B / -1.5B): hidden, layers, heads, kv heads, intermediate
SHAPES = {"0.5b": (896, 24, 14, 2, 4864), "1.5b": (1536, 28, 12, 2, 8960)}
UTILIZATION = 0.35  # each engine's share of the device; the policy and its update need the rest
GIB = 1 << 30
results = {"device": torch.cuda.get_device_name(0), "versions": {"torch": torch.__version__, "vllm": vllm.__version__},
           "prompts": PROMPTS, "n": N, "max_new_tokens": MAX_NEW, "shapes": {}}


def save():
    with open(os.path.join(OUT, "gpu_check.json"), "w") as fh:
        json.dump(results, fh, indent=1)


def free_gib():
    torch.cuda.synchronize()
    return torch.cuda.mem_get_info()[0] / GIB


def log_prob_gap(model, tokenizer, groups):
    samples = [s for g in groups for s in g.samples][:64]
    worst, total, count = 0.0, 0.0, 0
    with torch.no_grad():
        for lo in range(0, len(samples), 8):
            part = samples[lo:lo + 8]
            lp, _ = response_log_probs(model, pack(part, tokenizer.pad_token_id, "cuda"), 1.0)
            for i, s in enumerate(part):
                gap = (torch.tensor(s.rollout_log_probs, device="cuda") - lp[i, :len(s.response_ids)].float()).abs()
                worst, total, count = max(worst, gap.max().item()), total + gap.sum().item(), count + gap.numel()
    return {"max": worst, "mean": total / max(count, 1), "tokens": count}


def measure(name, shape, tokenizer, prompts, record):
    hidden, layers, heads, kv_heads, intermediate = shape
    config = Qwen2Config(vocab_size=151936, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                         num_key_value_heads=kv_heads, intermediate_size=intermediate, max_position_embeddings=4096,
                         tie_word_embeddings=True, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, bos_token_id=None)
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    record["parameters"] = sum(p.numel() for p in model.parameters())
    longest = max(len(encode_prompt(tokenizer, p)) for p in prompts)
    params = SamplingParams(max_new_tokens=MAX_NEW, temperature=1.0, top_p=1.0, seed=0)
    tokens = lambda groups: sum(len(s.response_ids) for g in groups for s in g.samples)

    # ours: started on the policy's weights, sleep mode on
    start = time.perf_counter()
    engine = VLLMRollout(model, tokenizer, max_model_len=longest + MAX_NEW, gpu_memory_utilization=UTILIZATION,
                         enable_sleep_mode=True)
    record["ours_startup_seconds"] = time.perf_counter() - start
    engine.sleep_mode = False  # throughput first, without the sleep after generate
    engine.generate(prompts[:2], 2, SamplingParams(max_new_tokens=8))  # warm-up
    start = time.perf_counter()
    groups = engine.generate(prompts, N, params)
    seconds = time.perf_counter() - start
    record["ours_tokens_per_s"] = tokens(groups) / seconds
    record["ours_tokens"] = tokens(groups)
    record["logprob_diff_bf16"] = log_prob_gap(model, tokenizer, groups)
    save()

    start = time.perf_counter()
    engine.sync_weights(model)
    record["sync_seconds_awake"] = time.perf_counter() - start

    engine.sleep_mode = True
    before = free_gib()
    start = time.perf_counter()
    engine.sleep()
    record["sleep_seconds"] = time.perf_counter() - start
    record["sleep_freed_gib"] = free_gib() - before
    with torch.no_grad():  # a simulated optimizer step while the engine sleeps
        for p in model.parameters():
            p.add_(1e-3 * torch.randn_like(p))
    start = time.perf_counter()
    engine.sync_weights(model)  # wakes the weights, loads the new ones, wakes the KV cache
    record["wake_and_sync_seconds"] = time.perf_counter() - start
    record["wake_reclaimed_gib"] = record["sleep_freed_gib"] - (free_gib() - before)
    after = engine.generate(prompts[:8], N, SamplingParams(max_new_tokens=64, seed=1))
    record["logprob_diff_bf16_after_update"] = log_prob_gap(model, tokenizer, after)
    save()
    engine.close()

    # plain vLLM offline on the same weights (read from disk), prompts and sampling, same engine settings
    with tempfile.TemporaryDirectory() as folder:
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        del model
        gc.collect()
        torch.cuda.empty_cache()
        start = time.perf_counter()
        llm = vllm.LLM(model=folder, dtype="bfloat16", max_model_len=longest + MAX_NEW, seed=0,
                       gpu_memory_utilization=UTILIZATION, generation_config="vllm")
        record["plain_startup_seconds"] = time.perf_counter() - start
        ids = [{"prompt_token_ids": encode_prompt(tokenizer, p)} for p in prompts]
        plain = vllm.SamplingParams(n=N, temperature=1.0, top_p=1.0, max_tokens=MAX_NEW, seed=0,
                                    stop_token_ids=list(engine.eos_ids))
        llm.generate(ids[:2], vllm.SamplingParams(max_tokens=8), use_tqdm=False)  # warm-up
        start = time.perf_counter()
        outputs = llm.generate(ids, plain, use_tqdm=False)
        seconds = time.perf_counter() - start
        count = sum(len(c.token_ids) for o in outputs for c in o.outputs)
        record["plain_tokens_per_s"] = count / seconds
        record["plain_tokens"] = count
        record["ours_vs_plain"] = record["ours_tokens_per_s"] / record["plain_tokens_per_s"]
        llm.llm_engine.engine_core.shutdown()
        del llm
        gc.collect()
        torch.cuda.empty_cache()
    save()


tokenizer = AutoTokenizer.from_pretrained(build_tiny_model())
problems = load_benchmark("data/sample", language="python")
prompts = [problems[i % len(problems)].prompt for i in range(PROMPTS)]
for name in os.environ["SHAPES"].split(","):
    record = results["shapes"].setdefault(name, {})
    start = time.perf_counter()
    try:
        measure(name, SHAPES[name], tokenizer, prompts, record)
    except Exception as exc:  # keep what was measured; say what failed
        record["error"] = f"{type(exc).__name__}: {exc}"
        record["traceback"] = traceback.format_exc()[-4000:]
    record["seconds"] = time.perf_counter() - start
    save()
    print(name, json.dumps({k: v for k, v in record.items() if k != "traceback"}, default=str), flush=True)
PYTHON
fi

if [[ ",$PARTS," == *",grpo,"* ]]; then
  timeout 420 "$PY" scripts/gpu_grpo_check.py --device cuda --steps "${GRPO_STEPS:-3}" --out "$OUT/gpu_check.json" \
    || status=1
fi
echo "wrote $OUT/gpu_check.json"
exit $status
