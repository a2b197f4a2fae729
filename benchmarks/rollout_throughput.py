"""Rollout throughput, side by side in one run: HF `generate` (HFRollout) and vLLM (VLLMRollout) on the same model,
the same prompts and the same sampling parameters.

    .venv/bin/python benchmarks/rollout_throughput.py --json runs/rollout_throughput.json   # the RESULTS.md run
    .venv/bin/python benchmarks/rollout_throughput.py --model tiny://qwen2 --prompts 2 --n 2 --max-new-tokens 16

Prompts are the bundled problems' (data/sample, Python prompts), the first `--prompts` of them; each gets `--n`
samples of up to `--max-new-tokens` tokens, temperature 1 and top_p 1, seeded. HF generates all prompts x n
sequences in one left-padded batch; vLLM gets them as one `generate` call. Both use the same number of torch
threads (`--threads`). Throughput counts the response tokens actually returned (an early end of sequence counts
only up to its end), divided by the seconds of the timed call; a small untimed call first takes each engine's
one-time warm-up out. Start-up is model load for HF, and engine start plus the first weight sync for vLLM.

The vLLM samples' log-probs are also checked against the policy (the same model the HF engine samples from):
`vllm.logprob_diff_max` is the largest |vLLM - transformers| log-prob over every sampled token.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from codefu_helpers.eval_datasets import load_benchmark  # noqa: E402
from codefu_helpers.evaluate import SMOLLM2_URI, load_model  # noqa: E402
from codefu_helpers.rollout import HFRollout, SamplingParams, VLLMRollout, encode_prompt  # noqa: E402
from codefu_helpers.policy_ops import pack, response_log_probs  # noqa: E402


def timed_generate(engine, prompts, n: int, params: SamplingParams) -> dict:
    engine.generate(prompts[:1], 1, SamplingParams(max_new_tokens=4, seed=params.seed,
                                                   cpu_threads=params.cpu_threads, batch_size=params.batch_size))
    start = time.perf_counter()
    groups = engine.generate(prompts, n, params)
    seconds = time.perf_counter() - start
    samples = [s for g in groups for s in g.samples]
    tokens = sum(len(s.response_ids) for s in samples)
    return {"tokens": tokens, "seconds": round(seconds, 3), "tokens_per_s": round(tokens / seconds, 2),
            "samples": len(samples), "mean_length": round(tokens / max(1, len(samples)), 1),
            "stopped_early": sum(s.finish_reason == "stop" for s in samples), "_samples": samples}


def logprob_diff(model, tokenizer, samples, temperature: float, chunk: int = 8) -> float:
    worst = 0.0
    with torch.no_grad():
        for lo in range(0, len(samples), chunk):
            part = samples[lo:lo + chunk]
            lp, _ = response_log_probs(model, pack(part, tokenizer.pad_token_id), temperature)
            for i, s in enumerate(part):
                diff = (torch.tensor(s.rollout_log_probs) - lp[i, :len(s.response_ids)]).abs().max().item()
                worst = max(worst, diff)
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=SMOLLM2_URI, help=f"HF id or directory, tiny://qwen2 or {SMOLLM2_URI}")
    parser.add_argument("--n", type=int, default=8, help="samples per prompt")
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--prompts", type=int, default=4, help="how many of the bundled problems' prompts")
    parser.add_argument("--dataset", default=str(ROOT / "data" / "sample"))
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads for both engines (1: the trainer's CPU setting beside the judge)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="write the results here")
    args = parser.parse_args()

    problems = load_benchmark(args.dataset, language="python")[:args.prompts]
    prompts = [p.prompt for p in problems]
    params = SamplingParams(max_new_tokens=args.max_new_tokens, temperature=1.0, top_p=1.0, seed=args.seed,
                            batch_size=len(prompts) * args.n, cpu_threads=args.threads)

    start = time.perf_counter()
    model, tokenizer = load_model(args.model, device="cpu", dtype="float32")
    hf_startup = time.perf_counter() - start
    longest = max(len(encode_prompt(tokenizer, p)) for p in prompts)
    print(f"{args.model}: {len(prompts)} prompts (longest {longest} tokens) x n={args.n}, "
          f"{args.max_new_tokens} new tokens, {args.threads} thread(s)", flush=True)

    hf = timed_generate(HFRollout(model, tokenizer), prompts, args.n, params)
    hf["startup_seconds"] = round(hf_startup, 2)
    print(f"hf:   {hf['tokens_per_s']:8.1f} tokens/s ({hf['tokens']} tokens in {hf['seconds']:.1f} s), "
          f"start-up {hf_startup:.1f} s", flush=True)

    engine = VLLMRollout(model, tokenizer, max_model_len=longest + args.max_new_tokens, seed=args.seed)
    vllm_result = timed_generate(engine, prompts, args.n, params)
    vllm_result["startup_seconds"] = round(engine.startup_seconds, 2)
    vllm_result["first_sync_seconds"] = round(engine.last_sync_seconds, 3)
    engine.sync_weights(model)
    vllm_result["sync_seconds"] = round(engine.last_sync_seconds, 3)
    vllm_result["logprob_diff_max"] = logprob_diff(model, tokenizer, vllm_result["_samples"], params.temperature)
    print(f"vllm: {vllm_result['tokens_per_s']:8.1f} tokens/s ({vllm_result['tokens']} tokens in "
          f"{vllm_result['seconds']:.1f} s), start-up {engine.startup_seconds:.1f} s, weight sync "
          f"{engine.last_sync_seconds:.2f} s, max |log-prob diff| {vllm_result['logprob_diff_max']:.2e}", flush=True)
    engine.close()

    speedup = vllm_result["tokens_per_s"] / hf["tokens_per_s"]
    print(f"vLLM / HF tokens per second: {speedup:.2f}x", flush=True)
    import transformers
    import vllm

    results = {
        "model": args.model, "prompts": len(prompts), "n": args.n, "max_new_tokens": args.max_new_tokens,
        "threads": args.threads, "longest_prompt_tokens": longest, "dtype": "float32", "device": "cpu",
        "hf": {k: v for k, v in hf.items() if not k.startswith("_")},
        "vllm": {k: v for k, v in vllm_result.items() if not k.startswith("_")},
        "speedup": round(speedup, 2),
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__, "vllm": vllm.__version__,
                     "python": platform.python_version()},
        "machine": {"cpus": len(os.sched_getaffinity(0)), "load_average": os.getloadavg()},
    }
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(results, indent=1))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
