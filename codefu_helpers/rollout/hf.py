"""`HFRollout`: transformers `generate` on the policy model itself (left-padded batches), CPU or GPU.

It shares the training model's parameters, so weight sync is free and exact by construction. Generation runs
under a generation config built from `SamplingParams` alone: a checkpoint's generation_config.json (repetition
penalty, min_p, top_k=50...) never leaks into sampling, because transformers fills every option left at its
default from the model's own generation config.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable

import torch

from .base import Group, Sample, SamplingParams, encode_prompt, eos_ids


class HFRollout:
    """Samples with `model.generate` on the policy model itself (left-padded batches)."""

    backend = "hf"

    def __init__(self, model, tokenizer):
        self.model = model
        self.tokenizer = tokenizer
        if tokenizer.pad_token_id is None:
            raise ValueError("the tokenizer has no pad token: set tokenizer.pad_token (e.g. to the eos token) "
                             "before building the rollout engine")
        self.eos_ids = eos_ids(getattr(model, "generation_config", None), tokenizer)

    def sync_weights(self, model: torch.nn.Module) -> None:
        if model is not self.model:
            self.model.load_state_dict(model.state_dict())

    @torch.no_grad()
    def generate(self, prompts: list[list[dict]], n: int, params: SamplingParams,
                 on_sample: Callable[[int, Sample], None] | None = None) -> list[Group]:
        """n samples per prompt. `on_sample(prompt_index, sample)` is called as soon as each sample exists,
        so the caller can start judging while the next chunk is generated."""
        groups = [Group(i) for i in range(len(prompts))]
        jobs = []  # (group index, prompt ids), one per sample to draw
        for group, messages in zip(groups, prompts):
            ids = encode_prompt(self.tokenizer, messages)
            if params.max_prompt_tokens is not None and len(ids) > params.max_prompt_tokens:
                group.skipped = f"prompt has {len(ids)} tokens > max_prompt_tokens={params.max_prompt_tokens}"
                continue
            jobs += [(group.prompt_index, ids)] * n
        # One generator for the whole call: samples depend only on (seed, prompts), not on batch boundaries
        # of earlier calls, which is what makes resume exact.
        generator_state = torch.random.get_rng_state()
        torch.manual_seed(params.seed)
        was_training = self.model.training
        self.model.eval()
        threads = torch.get_num_threads()
        on_cpu = next(self.model.parameters()).device.type == "cpu"
        if on_cpu and params.cpu_threads:
            torch.set_num_threads(params.cpu_threads)
        try:
            with self._only(self.generation_config(params)):
                for start in range(0, len(jobs), params.batch_size):
                    chunk = jobs[start:start + params.batch_size]
                    for (index, prompt_ids), response in zip(chunk, self._generate_batch([i for _, i in chunk])):
                        sample = self._sample(prompt_ids, response)
                        groups[index].samples.append(sample)
                        if on_sample is not None:
                            on_sample(index, sample)
        finally:
            torch.random.set_rng_state(generator_state)
            self.model.train(was_training)
            torch.set_num_threads(threads)
        return groups

    def generation_config(self, params: SamplingParams):
        """Every option that shapes sampling, set explicitly from `params` (the rest at transformers' neutral
        defaults: no repetition penalty, no min_p, no typical/eta/epsilon sampling, no banned n-grams)."""
        from transformers import GenerationConfig

        sampling = params.temperature > 0
        return GenerationConfig(
            max_new_tokens=params.max_new_tokens, do_sample=sampling,
            temperature=params.temperature if sampling else None, top_p=params.top_p if sampling else None,
            top_k=params.top_k if sampling else None,  # 0 switches top-k off (transformers' default is 50)
            pad_token_id=self.tokenizer.pad_token_id, eos_token_id=self.eos_ids,
            num_beams=1, repetition_penalty=1.0, min_p=None, typical_p=1.0, epsilon_cutoff=0.0, eta_cutoff=0.0,
            no_repeat_ngram_size=0, bad_words_ids=None, renormalize_logits=False,
        )

    @contextmanager
    def _only(self, generation_config):
        # transformers replaces every option a passed config leaves at its default with the model's own
        # generation_config value (a checkpoint's repetition_penalty=1.2 would win over our 1.0). With the
        # model's config swapped for ours during the call there is nothing to inherit.
        saved = self.model.generation_config
        self.model.generation_config = generation_config
        try:
            yield
        finally:
            self.model.generation_config = saved

    def _generate_batch(self, batch: list[list[int]]) -> list[list[int]]:
        device = next(self.model.parameters()).device
        width = max(len(ids) for ids in batch)
        pad = self.tokenizer.pad_token_id
        input_ids = torch.tensor([[pad] * (width - len(ids)) + ids for ids in batch], device=device)  # (B, P)
        attention = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids in batch], device=device)
        out = self.model.generate(input_ids=input_ids, attention_mask=attention,
                                  generation_config=self.model.generation_config)  # (B, P + R)
        responses = []
        for row in out[:, width:].tolist():
            cut = next((i + 1 for i, t in enumerate(row) if t in self.eos_ids), len(row))  # keep the eos token
            responses.append(row[:cut])
        return responses

    def _sample(self, prompt_ids: list[int], response_ids: list[int]) -> Sample:
        stopped = bool(response_ids) and response_ids[-1] in self.eos_ids
        text = self.tokenizer.decode(response_ids, skip_special_tokens=True)
        return Sample(prompt_ids, response_ids, text, "stop" if stopped else "length")
