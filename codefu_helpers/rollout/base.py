"""What every rollout engine shares: sampling parameters, the sample and group records, the engine interface."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol

import torch


@dataclass
class SamplingParams:
    """One sampling distribution, passed whole to whichever engine draws from it.

    temperature, top_p and top_k are the *only* things that shape the distribution: engines ignore whatever a
    checkpoint's generation_config.json says (repetition penalty, min_p, its own top_k...), because the trainer
    computes log-probs of exactly this distribution (softmax of logits / temperature).
    """

    max_new_tokens: int = 512
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0                # 0: off (every token of the vocabulary can be drawn)
    seed: int = 0
    max_prompt_tokens: int | None = None
    batch_size: int = 32          # hf only: sequences generated at once (prompts x n), bounds memory
    # Decoding on a CPU runs many tiny matmuls: extra OpenMP threads only spin, and they fight the judge's
    # worker processes for the cores. One thread was 4x faster than two on a 2-core machine judging alongside.
    cpu_threads: int | None = 1


@dataclass
class Sample:
    """One response to one prompt."""

    prompt_ids: list[int]
    response_ids: list[int]       # includes the end-of-sequence token when the model stopped by itself
    text: str                     # decoded response, special tokens removed
    finish_reason: str            # "stop" (end of sequence) or "length" (hit max_new_tokens)
    # log-prob of each response token under the engine's own weights, with the sampling temperature applied
    # (the same quantity the trainer computes as old log-probs); None when the engine does not report them
    rollout_log_probs: list[float] | None = None


@dataclass
class Group:
    """The n samples drawn for one prompt (empty when the prompt was skipped)."""

    prompt_index: int
    samples: list[Sample] = field(default_factory=list)
    skipped: str | None = None    # why no samples were drawn, e.g. "prompt has 900 tokens > 512"


class RolloutEngine(Protocol):
    def generate(self, prompts: list[list[dict]], n: int, params: SamplingParams,
                 on_sample: Callable[[int, Sample], None] | None = None) -> list[Group]: ...

    def sync_weights(self, weights) -> None:
        """Sample from new weights: a model (its state_dict), or (name, tensor) pairs streamed one at a time."""


def encode_prompt(tokenizer, messages: list[dict]) -> list[int]:
    """Token ids of a chat prompt, ending with the assistant turn's opening."""
    ids = tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
    if hasattr(ids, "keys"):  # newer transformers return a BatchEncoding
        ids = ids["input_ids"]
    return list(ids)


def eos_ids(model_generation_config, tokenizer) -> list[int]:
    """The token ids that end a response: the checkpoint's generation config, else the tokenizer's eos token."""
    ids = getattr(model_generation_config, "eos_token_id", None) if model_generation_config is not None else None
    ids = ids if ids is not None else tokenizer.eos_token_id
    if ids is None:
        raise ValueError("neither the model's generation_config nor the tokenizer defines an eos token")
    return [ids] if isinstance(ids, int) else list(ids)
