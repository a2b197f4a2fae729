"""The log-prob pass with each group's prompt run once (`policy_ops.response_hidden`) against every row run whole,
side by side in one process: notebook 03's shapes (the tiny Qwen2, the 8 training problems' real prompts of
`configs/cpu_learn.yaml`, groups of 8 samples with responses of its typical lengths).

    .venv/bin/python benchmarks/shared_prompts.py --json runs/shared_prompts.json    # the run in RESULTS.md

Two passes are timed, as a GRPO step runs them: the old/reference log-probs of a whole step (4 groups of 8, no
gradient), and one optimizer update's forward and backward (one group of 8, the config's mini-batch). Each pass
alternates the two ways `--repeats` times and keeps the fastest of each; the ratio is whole / shared. It also
reports the largest difference between the two ways' log-probs and each weight's gradient (relative norm).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def prompts(n: int):
    """Token ids of the first `n` of notebook 03's training prompts (cpu_learn.yaml's selection of notebook 01's
    default split), and the tiny model's tokenizer."""
    import dataclasses
    import tempfile

    from transformers import AutoTokenizer

    from codefu_helpers.config import ExperimentConfig
    from codefu_helpers.data import FilterConfig, prepare_dataset, read_verl_parquet
    from codefu_helpers.rollout import encode_prompt
    from codefu_helpers.tiny_model import resolve_model_path
    from codefu_helpers.trainer import select_training_rows

    cfg = ExperimentConfig.from_yaml(ROOT / "configs" / "cpu_learn.yaml")
    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(cfg.model.path))
    with tempfile.TemporaryDirectory() as tmp:
        report = prepare_dataset(ROOT / "data" / "sample", Path(tmp), FilterConfig(language="python", test_fraction=0.2,
                                                                                   seed=0))
        data = dataclasses.replace(cfg.data, raw_path=str(ROOT / "data" / "sample"))
        rows = select_training_rows(read_verl_parquet(report.files["train"]), data)
    return [encode_prompt(tokenizer, r["prompt"]) for r in rows[:n]], tokenizer


def main(argv: list[str] | None = None) -> int:
    import torch
    from transformers import AutoModelForCausalLM

    from codefu_helpers.policy_ops import pack, response_log_probs
    from codefu_helpers.rollout import Sample
    from codefu_helpers.tiny_model import resolve_model_path

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=4, help="prompts per step (data.train_batch_size)")
    parser.add_argument("--n", type=int, default=8, help="samples per prompt (rollout.n)")
    parser.add_argument("--response-tokens", type=int, nargs=2, default=(60, 120), metavar=("MIN", "MAX"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    random.seed(0)
    ids, tokenizer = prompts(args.groups)
    model = AutoModelForCausalLM.from_pretrained(resolve_model_path("tiny://qwen2"))
    model.train()
    vocab = len(tokenizer)
    samples = [Sample(p, [random.randrange(3, vocab) for _ in range(random.randint(*args.response_tokens))], "", "stop")
               for p in ids for _ in range(args.n)]
    step, group = pack(samples, tokenizer.pad_token_id), pack(samples[:args.n], tokenizer.pad_token_id)

    def logprobs(share):
        with torch.no_grad():
            return response_log_probs(model, step, 1.0, share_prompts=share)[0]

    def update(share):
        model.zero_grad(set_to_none=True)
        lp, entropy = response_log_probs(model, group, 1.0, with_entropy=True, share_prompts=share)
        ((lp * group.response_mask).sum() / group.response_mask.sum()).backward()
        return {name: p.grad.clone() for name, p in model.named_parameters()}

    seconds = {(p, s): [] for p in ("logprobs", "update") for s in (True, False)}
    out = {}
    for _ in range(args.repeats):
        for name, fn in (("logprobs", logprobs), ("update", update)):
            for share in (False, True):
                start = time.perf_counter()
                out[(name, share)] = fn(share)
                seconds[(name, share)].append(time.perf_counter() - start)
    mask = step.response_mask.bool()
    diff = float((out[("logprobs", True)] - out[("logprobs", False)])[mask].abs().max())
    shared, whole = out[("update", True)], out[("update", False)]
    grad = max(float((shared[k] - whole[k]).norm() / whole[k].norm().clamp(min=1e-12)) for k in whole)
    result = {"command": " ".join(sys.argv), "threads": args.threads, "groups": args.groups, "n": args.n,
              "prompt_tokens": [len(p) for p in ids], "response_tokens_mean": round(float(step.response_mask.sum(1).mean()), 1),
              "load_average": round(os.getloadavg()[0], 1), "logprob_max_abs_diff": diff, "grad_max_rel_diff": grad}
    for name in ("logprobs", "update"):
        whole_s, shared_s = min(seconds[(name, False)]), min(seconds[(name, True)])
        result[name] = {"whole_s": round(whole_s, 3), "shared_s": round(shared_s, 3), "ratio": round(whole_s / shared_s, 2)}
    print(json.dumps(result, indent=1))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
