"""A tiny Qwen2-architecture model and tokenizer built locally, for CPU runs and tests without the hub.

Key idea: everything a real run touches (tokenizer with a chat template, a causal LM that
`AutoModelForCausalLM.from_pretrained` loads, generation, log-probs) exists at toy scale in seconds:

1. a byte-level BPE tokenizer trained with `tokenizers` on the bundled code and statements
   (data/sample/code_contests_sample.jsonl), with Qwen's pre-tokenizer split, special tokens
   <|endoftext|> <|im_start|> <|im_end|> and a Qwen-style chat template;
2. a randomly initialised Qwen2ForCausalLM (a few layers, tied embeddings, vocab = the tokenizer's).

The model knows nothing until trained (the trainer warm-starts it with a short SFT on reference
solutions). A build is deterministic for the same inputs and seed, and cached by a hash of them:

    from codefu_helpers.tiny_model import build_tiny_model, resolve_model_path
    path = build_tiny_model()                 # ~/.cache/codefu/tiny-models/qwen2-<hash>/
    path = resolve_model_path("tiny://qwen2")  # what configs write instead of a hub id
    python -m codefu_helpers.tiny_model OUT_DIR
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from .resources import shipped_root

__all__ = [
    "TINY_SCHEME",
    "TINY_MODEL_URIS",
    "TINY_MAX_POSITIONS",
    "DEFAULT_CORPUS",
    "CHAT_TEMPLATE",
    "build_lock",
    "build_tiny_model",
    "resolve_model_path",
    "tiny_cache_root",
    "training_corpus",
]

TINY_SCHEME = "tiny://"
TINY_MODEL_URIS = ("tiny://qwen2",)
TINY_MAX_POSITIONS = 2048  # prompt + response tokens the tiny model can attend over
# the bundled sample: the clone's data/sample, or the copy inside an installed wheel
DEFAULT_CORPUS = shipped_root() / "data" / "sample" / "code_contests_sample.jsonl"

# Bumped whenever the build recipe changes, so cached builds of an older recipe are not reused.
_RECIPE_VERSION = 1
_BUILD_RECORD = "tiny_model.json"

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
# Qwen2's pre-tokenizer split (letters, single digits, punctuation runs, newlines, spaces), so that the
# tiny tokenizer segments code the way the real model family does.
_QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
# Words of the chat format and of typical prompts, so they become tokens even if the corpus lacks them.
_PRIMER = ("system\nuser\nassistant\nYou are a helpful assistant. Solve the problem in Python or C++.\n"
           "```python\n```cpp\n```\n<think>\n</think>\n")
# CodeContests language codes: 1 = Python 2, 2 = C++, 3 = Python 3 (4 = Java is left out).
_CODE_LANGUAGES = {1, 2, 3}


def tiny_cache_root() -> Path:
    """Where builds without an explicit output_dir go: $CODEFU_CACHE/tiny-models or ~/.cache/codefu/tiny-models."""
    return Path(os.environ.get("CODEFU_CACHE", Path.home() / ".cache" / "codefu")) / "tiny-models"


@contextmanager
def build_lock(target: Path | str):
    """Held while `target` (a directory in a model cache) is checked and built: another process building the same
    directory at the same time (a second notebook, another test worker) waits, then finds it built instead of
    building it again and swapping it out from under a reader. An advisory lock on a file next to the target."""
    import fcntl

    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target.parent / f".{target.name}.lock", os.O_RDONLY | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def training_corpus(corpus_path: Path | str = DEFAULT_CORPUS) -> list[str]:
    """Texts the tokenizer is trained on: every statement and Python/C++ solution (correct or not), in file order."""
    corpus_path = Path(corpus_path)
    if not corpus_path.is_file():
        raise FileNotFoundError(f"tiny-model corpus {corpus_path} not found; it ships in data/sample/ of the "
                                "repository (pass corpus_path= to use another CodeContests-schema .jsonl)")
    texts = [_PRIMER]
    for line_number, line in enumerate(corpus_path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{corpus_path}:{line_number} is not JSON ({exc}); expected one CodeContests row per line")
        texts.append(row.get("description", ""))
        for key in ("solutions", "incorrect_solutions"):
            block = row.get(key) or {}
            for language, source in zip(block.get("language", []), block.get("solution", [])):
                if language in _CODE_LANGUAGES:
                    texts.append(source)
    if len(texts) == 1:
        raise ValueError(f"{corpus_path} holds no statements or solutions to train a tokenizer on")
    return texts


def _build_key(corpus_path: Path, options: dict) -> str:
    import tokenizers
    import torch
    import transformers

    h = hashlib.sha256()
    h.update(Path(corpus_path).read_bytes())
    # Library versions: a different BPE trainer or init scheme could change the artefacts.
    h.update(json.dumps({"recipe": _RECIPE_VERSION, "options": options, "tokenizers": tokenizers.__version__,
                         "transformers": transformers.__version__, "torch": torch.__version__},
                        sort_keys=True).encode())
    return h.hexdigest()


def _train_tokenizer(texts: list[str], vocab_size: int):
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(_QWEN2_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        # all 256 byte symbols, so any text (any language, any unicode) stays encodable
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        extra_special_tokens=["<|im_start|>"],
        chat_template=CHAT_TEMPLATE,
        model_max_length=TINY_MAX_POSITIONS,
        padding_side="left",  # batched generation appends on the right, so prompts pad on the left
        clean_up_tokenization_spaces=False,
    )


def _init_model(tokenizer, options: dict, seed: int):
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    eos_id = tokenizer.convert_tokens_to_ids("<|im_end|>")
    pad_id = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    config = Qwen2Config(
        vocab_size=len(tokenizer),  # exactly the tokenizer's ids: generation can never emit an id without a token
        hidden_size=options["hidden_size"],
        intermediate_size=options["intermediate_size"],
        num_hidden_layers=options["num_layers"],
        num_attention_heads=options["num_heads"],
        num_key_value_heads=options["num_kv_heads"],
        max_position_embeddings=TINY_MAX_POSITIONS,
        tie_word_embeddings=True,
        pad_token_id=pad_id,
        bos_token_id=None,
        eos_token_id=eos_id,
        dtype="float32",
    )
    # fork_rng: seeding must not disturb the caller's global RNG stream.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=[eos_id, pad_id], pad_token_id=pad_id, do_sample=True, temperature=1.0, top_p=1.0)
    return model


def build_tiny_model(
    output_dir: Path | str | None = None,
    *,
    seed: int = 0,
    vocab_size: int = 3072,
    hidden_size: int = 256,
    num_layers: int = 2,
    num_heads: int = 4,
    num_kv_heads: int = 2,
    intermediate_size: int = 768,
    corpus_path: Path | str = DEFAULT_CORPUS,
) -> Path:
    """Build (or reuse) the tiny tokenizer + Qwen2 model and return the directory holding both.

    vocab_size is an upper bound: BPE stops merging when no pair occurs twice, so a small corpus yields
    fewer tokens; the model's vocabulary always equals len(tokenizer). head_dim = hidden_size / num_heads
    defaults to 64, a size every attention backend (vLLM's CPU one included) supports.
    output_dir: None caches under `tiny_cache_root()`. An existing build there with the same inputs is
    returned untouched; one with other inputs is replaced.
    """
    if hidden_size % num_heads or num_heads % num_kv_heads:
        raise ValueError(f"hidden_size={hidden_size} must be divisible by num_heads={num_heads}, and num_heads by "
                         f"num_kv_heads={num_kv_heads}")
    if not 300 <= vocab_size <= 65536:
        raise ValueError(f"vocab_size={vocab_size}: use 300..65536 (256 byte symbols + specials + merges)")
    corpus_path = Path(corpus_path).resolve()
    options = dict(seed=seed, vocab_size=vocab_size, hidden_size=hidden_size, num_layers=num_layers,
                   num_heads=num_heads, num_kv_heads=num_kv_heads, intermediate_size=intermediate_size)
    key = _build_key(corpus_path, options)
    target = Path(output_dir) if output_dir is not None else tiny_cache_root() / f"qwen2-{key[:16]}"

    if _recorded_key(target) == key:
        return target
    with build_lock(target):
        return _build_locked(target, key, options, corpus_path, seed, vocab_size)


def _build_locked(target: Path, key: str, options: dict, corpus_path: Path, seed: int, vocab_size: int) -> Path:
    if _recorded_key(target) == key:  # built by another process while this one waited for the lock
        return target
    if target.exists() and any(target.iterdir()) and _recorded_key(target) is None:
        raise FileExistsError(f"{target} exists and is not a tiny-model build; pass an empty or new output_dir")

    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        tokenizer = _train_tokenizer(training_corpus(corpus_path), vocab_size)
        model = _init_model(tokenizer, options, seed)
        tokenizer.save_pretrained(staging)
        model.save_pretrained(staging)
        record = dict(key=key, options=options, corpus=str(corpus_path), vocab=len(tokenizer),
                      parameters=sum(p.numel() for p in model.parameters()))
        (staging / _BUILD_RECORD).write_text(json.dumps(record, indent=2) + "\n")
        staging.chmod(0o755)  # mkdtemp makes it private; the cache may be shared (e.g. a notebook server)
        for file in staging.iterdir():
            file.chmod(0o644)
        # Build aside, then swap in whole: a reader never sees a half-written directory.
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _recorded_key(directory: Path) -> str | None:
    try:
        return json.loads((directory / _BUILD_RECORD).read_text())["key"]
    except (OSError, ValueError, KeyError):
        return None


def resolve_model_path(path: str) -> str:
    """Turn a config's model.path into something from_pretrained accepts; builds the tiny model for tiny://qwen2."""
    if not path.startswith(TINY_SCHEME):
        return path
    if path not in TINY_MODEL_URIS:
        raise ValueError(f"model.path={path!r} is not a known tiny model; use one of {TINY_MODEL_URIS}")
    return str(build_tiny_model())


if __name__ == "__main__":
    out = build_tiny_model(sys.argv[1] if len(sys.argv) > 1 else None)
    print(json.loads((out / _BUILD_RECORD).read_text()) | {"path": str(out)})
