"""A short supervised warm start on reference solutions, so a tiny policy starts partly right.

GRPO learns only from differences between samples of one group: if every sample of a tiny, untrained model
fails, every advantage is zero and nothing is learned. CodeFu-7B starts from a reasoning model that already
solves some problems; the CPU tutorial gets the same situation by fine-tuning its tiny model on the bundled
reference solutions for a few dozen steps, stopping while it still makes mistakes.

The target of each prompt is the answer format the prompt asks for: a line of reasoning and one fenced code
block. The loss covers the response tokens only.
"""

from __future__ import annotations

import random
from pathlib import Path

import torch

from .data import load_problems, reference_solutions
from .rollout import encode_prompt

FENCES = {"python": "python", "cpp": "cpp"}


def sft_pairs(verl_rows: list[dict], raw_rows: list[dict], language: str = "python") -> list[tuple[list[dict], str]]:
    """(prompt messages, target response) per problem with a reference solution in `language`."""
    by_name = {r["name"]: r for r in raw_rows}
    pairs = []
    for row in verl_rows:
        raw = by_name.get(row["reward_model"]["ground_truth"]["name"])
        if raw is None:
            continue
        solutions = reference_solutions(raw, language)
        if solutions:
            code = solutions[0][1].strip()
            pairs.append((row["prompt"], f"Read the input, compute the answer, print it.\n```{FENCES[language]}\n{code}\n```"))
    if not pairs:
        raise ValueError(f"no {language} reference solution matches these problems: check that the verl rows come "
                         "from the same dataset as the raw rows")
    return pairs


def supervised_warm_start(model, tokenizer, pairs: list[tuple[list[dict], str]], steps: int, lr: float = 1e-3,
                          batch_size: int = 4, seed: int = 0, device: str | torch.device = "cpu") -> list[float]:
    """Fine-tunes `model` in place on (prompt, response) pairs; returns the loss per step."""
    rng = random.Random(seed)
    examples = []
    for messages, response in pairs:
        prompt_ids = encode_prompt(tokenizer, messages)
        response_ids = tokenizer(response, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        examples.append((prompt_ids, response_ids))
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    model.train()
    losses = []
    for _ in range(steps):
        batch = [examples[rng.randrange(len(examples))] for _ in range(batch_size)]
        width = max(len(p) + len(r) for p, r in batch)
        ids = torch.full((len(batch), width), pad, dtype=torch.long)
        attention = torch.zeros((len(batch), width), dtype=torch.long)
        rows, cols, targets = [], [], []
        for i, (p, r) in enumerate(batch):
            seq = p + r
            ids[i, :len(seq)] = torch.tensor(seq)
            attention[i, :len(seq)] = 1
            rows += [i] * len(r)
            cols += range(len(p) - 1, len(seq) - 1)  # position t predicts token t + 1
            targets += r
        # the loss covers response tokens only, so the vocabulary projection runs on those positions only
        # (about a third of the compute of a small model with a long prompt)
        hidden = model.model(input_ids=ids.to(device), attention_mask=attention.to(device)).last_hidden_state
        logits = model.lm_head(hidden[torch.tensor(rows), torch.tensor(cols)])  # (N, V)
        loss = torch.nn.functional.cross_entropy(logits.float(), torch.tensor(targets, device=logits.device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(float(loss.detach()))
    model.eval()
    return losses


def smallest_problems(verl_rows: list[dict], raw_rows: list[dict], k: int | None, language: str = "python") -> list[dict]:
    """The k problems with the shortest statement + reference solution (all when k is None), in dataset order.

    A 2-layer model on a CPU learns a handful of short programs in minutes; that is the CPU smoke run's scale."""
    if k is None or k >= len(verl_rows):
        return list(verl_rows)
    by_name = {r["name"]: r for r in raw_rows}

    def size(row: dict) -> int:
        raw = by_name.get(row["reward_model"]["ground_truth"]["name"])
        solutions = reference_solutions(raw, language) if raw else []
        return (len(solutions[0][1]) if solutions else 10**9) + len(row["prompt"][-1]["content"]) // 4

    chosen = {id(r) for r in sorted(verl_rows, key=size)[:k]}
    return [r for r in verl_rows if id(r) in chosen]


def warm_started_model(base: str, rows: list[dict], raw_dataset: str, steps: int = 80, lr: float = 2e-3,
                       batch_size: int = 4, seed: int = 0) -> Path:
    """`base` after `supervised_warm_start` on the reference solutions of exactly `rows` (the training problems),
    cached on disk.

    base: an HF id, a local directory or tiny://qwen2. rows: verl rows (what GRPO will train on). raw_dataset:
    the raw CodeContests rows they were prepared from (the verl rows carry tests, not solutions). The language is
    the one the rows' prompts ask for. The result depends only on these arguments, so notebook 03, the training
    CLI (`model.warm_start_steps`) and the tests share one build under the model cache
    (`codefu_helpers.tiny_model.tiny_cache_root`).
    """
    import hashlib
    import json
    import shutil
    import tempfile

    from transformers import AutoModelForCausalLM, AutoTokenizer

    from .tiny_model import resolve_model_path, tiny_cache_root

    languages = {(r.get("extra_info") or {}).get("language") for r in rows}
    if len(languages) != 1 or None in languages:
        raise ValueError(f"the training rows ask for languages {sorted(map(str, languages))}: a warm start needs rows "
                         "of one language, as written by one run of codefu_helpers.data")
    (language,) = languages
    resolved = resolve_model_path(base)
    rows_raw = load_problems(raw_dataset)
    names = sorted(r["reward_model"]["ground_truth"]["name"] for r in rows)
    by_name = {r["name"]: r for r in rows_raw}
    key_src = json.dumps({"recipe": 4, "base": str(resolved), "problems": names, "language": language, "steps": steps,
                          "lr": lr, "batch_size": batch_size, "seed": seed,
                          "data": hashlib.sha256(json.dumps([by_name.get(n) for n in names], sort_keys=True,
                                                            default=str).encode()).hexdigest()})
    target = tiny_cache_root() / f"warm-{hashlib.sha256(key_src.encode()).hexdigest()[:16]}"
    if (target / "warm_start.json").exists():
        return target
    pairs = sft_pairs(rows, rows_raw, language)
    tokenizer = AutoTokenizer.from_pretrained(resolved)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(resolved)
    torch.manual_seed(seed)
    losses = supervised_warm_start(model, tokenizer, pairs, steps=steps, lr=lr, batch_size=batch_size, seed=seed)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".warm-", dir=target.parent))
    staging.chmod(0o755)  # the cache may be shared (a notebook server's users)
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    (staging / "warm_start.json").write_text(json.dumps({"key": json.loads(key_src), "problems": names,
                                                         "losses": losses}))
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target
