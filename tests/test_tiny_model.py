"""The tiny local model: builds without downloads, loads with transformers' Auto classes, chats, generates,
trains, and is reproducible and cached."""

import json

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from codefu_helpers import grpo
from codefu_helpers.tiny_model import (
    DEFAULT_CORPUS,
    TINY_MAX_POSITIONS,
    build_tiny_model,
    resolve_model_path,
    training_corpus,
)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "qwen2")


@pytest.fixture(scope="module")
def tokenizer(tiny_dir):
    return AutoTokenizer.from_pretrained(tiny_dir)


@pytest.fixture(scope="module")
def model(tiny_dir):
    return AutoModelForCausalLM.from_pretrained(tiny_dir).eval()


def test_loads_as_qwen2_with_tied_embeddings_and_matching_vocab(tokenizer, model):
    assert type(model).__name__ == "Qwen2ForCausalLM"
    assert model.config.vocab_size == len(tokenizer)
    assert model.config.max_position_embeddings == TINY_MAX_POSITIONS
    assert model.get_output_embeddings().weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()
    assert model.config.hidden_size // model.config.num_attention_heads == 64


def test_tokenizer_learned_code_tokens_and_round_trips(tokenizer):
    assert 256 + 3 + 200 < len(tokenizer) <= 3072  # byte alphabet + specials + learned merges
    sources = training_corpus()
    cpp = next(t for t in sources if "#include" in t)
    ids = tokenizer(cpp)["input_ids"]
    assert len(ids) < 0.5 * len(cpp), f"{len(ids)} tokens for {len(cpp)} chars: BPE merges were not learned"
    for text in (cpp, sources[1], "unseen ✓ 漢字 text\r\n\ttabs", "x" * 50):
        assert tokenizer.decode(tokenizer(text)["input_ids"]) == text


def test_chat_template_is_qwen_style(tokenizer):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Sum 1 ≤ a, b."}]
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert text == ("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nSum 1 ≤ a, b.<|im_end|>\n"
                    "<|im_start|>assistant\n")
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_dict=True)["input_ids"]
    im_start, im_end = tokenizer.convert_tokens_to_ids(["<|im_start|>", "<|im_end|>"])
    assert ids.count(im_start) == 3 and ids.count(im_end) == 2  # each special token is one id
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.pad_token == "<|endoftext|>"
    assert tokenizer.decode(ids, skip_special_tokens=True).startswith("system\nBe brief.")


def test_generates_batched_with_left_padding(tokenizer, model):
    prompts = [[{"role": "user", "content": "Print YES."}],
               [{"role": "user", "content": "Read n and print the sum of 1..n, one line."}]]
    batch = tokenizer.apply_chat_template(prompts, add_generation_prompt=True, padding=True,
                                          return_tensors="pt", return_dict=True)
    assert tokenizer.padding_side == "left" and batch["attention_mask"][0, 0] == 0
    with torch.no_grad():
        out = model.generate(**batch, max_new_tokens=4, do_sample=False)
    assert out.shape[0] == 2 and batch["input_ids"].shape[1] < out.shape[1] <= batch["input_ids"].shape[1] + 4
    assert int(out.max()) < len(tokenizer)
    stop_ids = tokenizer.convert_tokens_to_ids(["<|im_end|>", "<|endoftext|>"])
    assert set(model.generation_config.eos_token_id) == set(stop_ids)


def test_one_gradient_step_lowers_the_loss_of_a_solution(tokenizer, tiny_dir):
    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    ids = torch.tensor([tokenizer(training_corpus()[2])["input_ids"][:64]])
    optimiser = torch.optim.SGD(model.parameters(), lr=0.5)

    def nll():
        logits = model(ids).logits[:, :-1]  # position t predicts token t + 1
        return -grpo.token_log_probs(logits, ids[:, 1:]).mean()

    before = nll()
    before.backward()
    optimiser.step()
    with torch.no_grad():
        assert nll().item() < before.item() - 0.05


def test_same_inputs_give_identical_files_and_seed_changes_only_weights(tiny_dir, tmp_path):
    again = build_tiny_model(tmp_path / "again")
    for name in ("tokenizer.json", "config.json", "model.safetensors", "tokenizer_config.json"):
        assert (again / name).read_bytes() == (tiny_dir / name).read_bytes(), name
    other_seed = build_tiny_model(tmp_path / "seed1", seed=1)
    assert (other_seed / "tokenizer.json").read_bytes() == (tiny_dir / "tokenizer.json").read_bytes()
    assert (other_seed / "model.safetensors").read_bytes() != (tiny_dir / "model.safetensors").read_bytes()


def test_build_is_cached_by_its_inputs(tmp_path):
    target = tmp_path / "cached"
    build_tiny_model(target, num_layers=1)
    weights = target / "model.safetensors"
    stamp = (weights.stat().st_ino, weights.stat().st_mtime_ns)
    assert build_tiny_model(target, num_layers=1) == target
    assert (weights.stat().st_ino, weights.stat().st_mtime_ns) == stamp, "same inputs must not rebuild"
    build_tiny_model(target, num_layers=2)
    record = json.loads((target / "tiny_model.json").read_text())
    assert record["options"]["num_layers"] == 2
    assert AutoModelForCausalLM.from_pretrained(target).config.num_hidden_layers == 2


def test_refuses_to_overwrite_a_foreign_directory(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not a tiny-model build"):
        build_tiny_model(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_corpus_drives_the_tokenizer(tmp_path):
    row = {"description": "Print the answer.", "solutions": {"language": [3, 4], "solution": [
        "print(int(input()) * 2)\n" * 3, "class Main { }"]}}
    corpus = tmp_path / "one.jsonl"
    corpus.write_text(json.dumps(row) + "\n")
    texts = training_corpus(corpus)
    assert "print(int(input()) * 2)\n" * 3 in texts and "class Main { }" not in texts  # Java is skipped
    small = build_tiny_model(tmp_path / "small", corpus_path=corpus)
    assert (small / "tokenizer.json").read_bytes() != build_tiny_model(tmp_path / "full").joinpath(
        "tokenizer.json").read_bytes()
    with pytest.raises(FileNotFoundError, match="missing.jsonl"):
        build_tiny_model(tmp_path / "x", corpus_path=tmp_path / "missing.jsonl")


def test_build_leaves_the_global_rng_alone(tmp_path):
    state = torch.get_rng_state()
    build_tiny_model(tmp_path / "rng", seed=123)
    assert torch.equal(torch.get_rng_state(), state)


def test_resolve_model_path(tmp_path, monkeypatch):
    assert resolve_model_path("Qwen/Qwen2.5-Coder-0.5B-Instruct") == "Qwen/Qwen2.5-Coder-0.5B-Instruct"
    with pytest.raises(ValueError, match=r"'tiny://llama' is not a known tiny model.*tiny://qwen2"):
        resolve_model_path("tiny://llama")
    monkeypatch.setenv("CODEFU_CACHE", str(tmp_path))  # keep the test's build out of the user's cache
    path = resolve_model_path("tiny://qwen2")
    assert path.startswith(str(tmp_path)) and AutoTokenizer.from_pretrained(path).eos_token == "<|im_end|>"


def test_bad_shapes_are_rejected_with_values(tmp_path):
    with pytest.raises(ValueError, match="hidden_size=100 must be divisible by num_heads=3"):
        build_tiny_model(tmp_path, hidden_size=100, num_heads=3)
    assert DEFAULT_CORPUS.is_file()


def test_two_processes_building_the_same_model_at_once_build_it_once(tmp_path):
    """Two notebooks (or test workers) asking for the same uncached model at the same moment: one builds it, the
    other waits for it and uses that build; neither swaps the directory out from under the other. Each process
    reports the inode of the weights file it was handed: without the lock both built, each handed back its own
    files, and the later one deleted the earlier one's while it was being read."""
    import os
    import subprocess
    import sys

    script = ("import os, sys\nfrom transformers import AutoModelForCausalLM\n"
              "from codefu_helpers.tiny_model import build_tiny_model\n"
              "sys.stdin.readline()\n"  # both wait here until the test lets them go
              "path = build_tiny_model(num_layers=1, hidden_size=64, num_heads=1, num_kv_heads=1, "
              "intermediate_size=128)\n"
              "inode = os.stat(path / 'model.safetensors').st_ino\n"  # the build this process was given
              "AutoModelForCausalLM.from_pretrained(path)\n"
              "print(inode)\n")
    env = {**os.environ, "CODEFU_CACHE": str(tmp_path / "cache")}
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for proc in procs:
        proc.stdin.write("go\n")
        proc.stdin.flush()
    results = [proc.communicate(timeout=600) for proc in procs]
    for proc, (_, err) in zip(procs, results):
        assert proc.returncode == 0, err[-2000:]
    (built,) = (tmp_path / "cache" / "tiny-models").glob("qwen2-*")
    inodes = {int(out.split()[-1]) for out, _ in results}
    assert inodes == {os.stat(built / "model.safetensors").st_ino}, "both processes built and one replaced the other"
    assert [p.name for p in built.parent.iterdir() if p.name.startswith(".") and p.is_dir()] == [], "staging left"
