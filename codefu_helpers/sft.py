"""A short supervised warm start on reference solutions, so a tiny policy starts partly right.

GRPO learns only from differences between samples of one group: if every sample of a tiny, untrained model
fails, every advantage is zero and nothing is learned. CodeFu-7B starts from a reasoning model that already
solves some problems; the CPU tutorial gets the same situation by fine-tuning its tiny model on the bundled
reference solutions for a few dozen steps, stopping while it still makes mistakes: at the first step where it writes
them with a chosen mean probability (`model.warm_start_target_p`).

The target of each prompt is the answer format the prompt asks for: a line of reasoning and one fenced code
block. The loss covers the response tokens only.
"""

from __future__ import annotations

import random
from pathlib import Path

import torch
from tqdm import tqdm

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


def _encode_pairs(tokenizer, pairs: list[tuple[list[dict], str]]) -> list[tuple[list[int], list[int]]]:
    """(prompt ids, response ids + EOS) per pair."""
    examples = []
    for messages, response in pairs:
        prompt_ids = encode_prompt(tokenizer, messages)
        response_ids = tokenizer(response, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        examples.append((prompt_ids, response_ids))
    return examples


def _response_batch(examples: list[tuple[list[int], list[int]]], pad: int):
    """Right-padded ids and attention mask of prompt + response, and (rows, cols, targets): the positions whose
    next token is a response token (position t predicts token t + 1)."""
    width = max(len(p) + len(r) for p, r in examples)
    ids = torch.full((len(examples), width), pad, dtype=torch.long)
    attention = torch.zeros((len(examples), width), dtype=torch.long)
    rows, cols, targets = [], [], []
    for i, (p, r) in enumerate(examples):
        seq = p + r
        ids[i, :len(seq)] = torch.tensor(seq)
        attention[i, :len(seq)] = 1
        rows += [i] * len(r)
        cols += range(len(p) - 1, len(seq) - 1)
        targets += r
    return ids, attention, torch.tensor(rows), torch.tensor(cols), torch.tensor(targets)


def _response_logits(model, examples, pad: int, device):
    """Logits at the response positions only: the vocabulary projection runs on those (about a third of the compute
    of a small model with a long prompt). Returns (logits (N, V), rows, targets)."""
    ids, attention, rows, cols, targets = _response_batch(examples, pad)
    hidden = model.model(input_ids=ids.to(device), attention_mask=attention.to(device)).last_hidden_state
    return model.lm_head(hidden[rows.to(hidden.device), cols.to(hidden.device)]), rows, targets.to(hidden.device)


@torch.no_grad()
def reference_probabilities(model, examples: list[tuple[list[int], list[int]]], pad: int,
                            device: str | torch.device = "cpu") -> list[float]:
    """The probability that the model, sampling at temperature 1, writes each reference response exactly (the
    product of its tokens' probabilities, EOS included). Their mean is the expected share of samples that reproduce a
    reference solution verbatim, so it bounds the expected pass@1 from below (other correct programs pass too); on
    the tiny CPU model the two were within 0.06 of each other (benchmarks/RESULTS.md, "Notebook 03 on CPU")."""
    was_training = model.training
    model.eval()
    try:
        logits, rows, targets = _response_logits(model, examples, pad, device)
        token_logp = torch.log_softmax(logits.float(), dim=-1).gather(1, targets[:, None])[:, 0]
        sums = torch.zeros(len(examples), dtype=torch.float64).index_add_(0, rows, token_logp.double().cpu())
    finally:
        model.train(was_training)
    return [float(v) for v in sums.exp()]


def supervised_warm_start(model, tokenizer, pairs: list[tuple[list[dict], str]], steps: int, lr: float = 1e-3,
                          batch_size: int = 4, seed: int = 0, device: str | torch.device = "cpu",
                          target_p: float | None = None, progress: bool = True) -> dict:
    """Fine-tunes `model` in place on (prompt, response) pairs, each step on `batch_size` pairs drawn at random.

    After every step it measures the mean `reference_probabilities` of all pairs; with `target_p`, it stops at the
    first step where that mean reaches `target_p` (at most `steps` steps). Stopping at a probability instead of a step
    count gives every seed the same distance to go: at 80 fixed steps the tiny model's pass@1 ranged from 0.16
    to 0.62 across seeds 0-4. Returns {"losses", "reference_p"} (one value per step taken) and, per pair in order,
    "reference_p_final"; "reached_target" when `target_p` was set."""
    rng = random.Random(seed)
    examples = _encode_pairs(tokenizer, pairs)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    model.train()
    losses, mean_p, probabilities = [], [], reference_probabilities(model, examples, pad, device)
    # a text bar (stderr; papermill logs and notebooks show it without widgets): a warm start runs for minutes
    bar = tqdm(range(steps), desc="warm start", unit="step", disable=not progress)
    for _ in bar:
        batch = [examples[rng.randrange(len(examples))] for _ in range(batch_size)]
        logits, _, targets = _response_logits(model, batch, pad, device)
        loss = torch.nn.functional.cross_entropy(logits.float(), targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(float(loss.detach()))
        probabilities = reference_probabilities(model, examples, pad, device)
        mean_p.append(sum(probabilities) / len(probabilities))
        bar.set_postfix(loss=f"{losses[-1]:.3f}", p=f"{mean_p[-1]:.3f}" + (f"/{target_p:g}" if target_p else ""))
        if target_p is not None and mean_p[-1] >= target_p:
            break
    bar.close()
    model.eval()
    record = {"losses": losses, "reference_p": mean_p, "reference_p_final": probabilities}
    if target_p is not None:
        record["reached_target"] = bool(mean_p) and mean_p[-1] >= target_p
    return record


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
                       batch_size: int = 4, seed: int = 0, target_p: float | None = None) -> Path:
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

    from .tiny_model import build_lock, resolve_model_path, tiny_cache_root

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
                          "lr": lr, "batch_size": batch_size, "seed": seed, "target_p": target_p,
                          "data": hashlib.sha256(json.dumps([by_name.get(n) for n in names], sort_keys=True,
                                                            default=str).encode()).hexdigest()})
    target = tiny_cache_root() / f"warm-{hashlib.sha256(key_src.encode()).hexdigest()[:16]}"
    if (target / "warm_start.json").exists():
        return target
    with build_lock(target):  # another process may be building the same warm start right now
        if not (target / "warm_start.json").exists():
            _build_warm_start(target, key_src, resolved, rows, rows_raw, names, language, steps, lr, batch_size, seed,
                              target_p)
    return target


def _build_warm_start(target: Path, key_src: str, resolved: str, rows: list[dict], rows_raw: list[dict],
                      names: list[str], language: str, steps: int, lr: float, batch_size: int, seed: int,
                      target_p: float | None) -> None:
    import json
    import shutil
    import tempfile

    from transformers import AutoModelForCausalLM, AutoTokenizer

    pairs = sft_pairs(rows, rows_raw, language)
    tokenizer = AutoTokenizer.from_pretrained(resolved)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(resolved)
    torch.manual_seed(seed)
    record = supervised_warm_start(model, tokenizer, pairs, steps=steps, lr=lr, batch_size=batch_size, seed=seed,
                                   target_p=target_p)
    staging = Path(tempfile.mkdtemp(prefix=".warm-", dir=target.parent))
    staging.chmod(0o755)  # the cache may be shared (a notebook server's users)
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    name_of = {id(r["prompt"]): r["reward_model"]["ground_truth"]["name"] for r in rows}
    by_problem = {name_of[id(messages)]: p for (messages, _), p in zip(pairs, record.pop("reference_p_final"))}
    (staging / "warm_start.json").write_text(json.dumps({"key": json.loads(key_src), "problems": names,
                                                         "reference_p_by_problem": by_problem, **record}))
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
