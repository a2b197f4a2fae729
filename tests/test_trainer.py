"""Trainer pieces with the real tiny model: packing, log-probs, rollout seeding, judge-error exclusion."""

import copy
import math
import time

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from codefu_helpers.config import ExperimentConfig
from codefu_helpers.rollout import HFRollout, Sample, SamplingParams, encode_prompt
from codefu_helpers.grpo import mini_batch_metrics, rollout_log_prob_check
from codefu_helpers.policy_ops import lr_lambda, pack, response_log_probs
from codefu_helpers.reward import Scored, score_response
from codefu_helpers.samples import read_samples, step_records
from codefu_helpers.tracking import RunLogger
from codefu_helpers.trainer import GRPOTrainer, total_steps

from conftest import ROOT


@pytest.fixture(scope="module")
def tiny():
    from codefu_helpers.tiny_model import build_tiny_model

    path = build_tiny_model()
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    return model, tokenizer


def test_pack_aligns_every_response_at_the_same_column():
    samples = [Sample([1, 2, 3], [7, 8], "", "stop"), Sample([4], [9, 10, 11], "", "length")]
    batch = pack(samples, pad_id=0, weights=[1.0, 0.0])
    assert batch.prompt_width == 3
    assert batch.input_ids.tolist() == [[1, 2, 3, 7, 8, 0], [0, 0, 4, 9, 10, 11]]
    assert batch.attention_mask.tolist() == [[1, 1, 1, 1, 1, 0], [0, 0, 1, 1, 1, 1]]
    assert batch.position_ids.tolist()[1][2:] == [0, 1, 2, 3]
    assert batch.response_ids.tolist() == [[7, 8, 0], [9, 10, 11]]
    assert batch.response_mask.tolist() == [[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]


def test_padded_log_probs_equal_unpadded_ones(tiny):
    model, _ = tiny
    torch.manual_seed(0)
    samples = [Sample(torch.randint(3, 500, (n,)).tolist(), torch.randint(3, 500, (m,)).tolist(), "", "stop")
               for n, m in ((5, 7), (12, 3), (1, 9))]
    batch = pack(samples, pad_id=0)
    with torch.no_grad():
        batched, entropy = response_log_probs(model, batch, temperature=0.7, with_entropy=True)
        for i, s in enumerate(samples):
            ids = torch.tensor([s.prompt_ids + s.response_ids])
            logits = model(input_ids=ids).logits[0, len(s.prompt_ids) - 1:-1] / 0.7  # (R, V)
            expected = torch.log_softmax(logits, -1).gather(-1, torch.tensor(s.response_ids)[:, None])[:, 0]
            torch.testing.assert_close(batched[i, :len(s.response_ids)], expected, atol=2e-5, rtol=1e-5)
            p = torch.softmax(logits, -1)
            torch.testing.assert_close(entropy[i, :len(s.response_ids)], -(p * p.log()).sum(-1), atol=2e-5, rtol=1e-5)


def test_samples_sharing_a_prompt_run_it_once_with_each_ones_own_log_probs_and_gradients(tiny):
    """Two groups of three samples (prompts of different lengths, so one is left-padded) and a lone sample: the
    decoder sees each distinct prompt once, and log-probs, entropies and every weight's gradient equal those of
    running each sample alone."""
    model, _ = tiny
    torch.manual_seed(1)
    prompts = [torch.randint(3, 500, (n,)).tolist() for n in (40, 25, 31)]
    samples = [Sample(prompts[g], torch.randint(3, 500, (m,)).tolist(), "", "stop")
               for g, m in ((0, 6), (0, 9), (0, 2), (1, 5), (1, 8), (1, 1), (2, 4))]
    batch = pack(samples, pad_id=0)
    seen = []  # (rows, tokens) of each embedding call
    hook = model.get_input_embeddings().register_forward_hook(lambda m, args, out: seen.append(tuple(args[0].shape)))
    try:
        model.zero_grad()
        log_probs, entropy = response_log_probs(model, batch, temperature=0.7, with_entropy=True)
        (log_probs * batch.response_mask).sum().backward()
    finally:
        hook.remove()
    assert seen == [(3, 40), (7, 9)], seen  # three distinct prompts once, then the seven responses on their cache
    shared = {name: p.grad.clone() for name, p in model.named_parameters()}
    model.zero_grad()
    for i, s in enumerate(samples):
        alone, alone_entropy = response_log_probs(model, pack([s], pad_id=0), temperature=0.7, with_entropy=True)
        torch.testing.assert_close(log_probs[i, :len(s.response_ids)], alone[0], atol=2e-5, rtol=1e-5)
        torch.testing.assert_close(entropy[i, :len(s.response_ids)], alone_entropy[0], atol=2e-5, rtol=1e-5)
        alone.sum().backward()
    for name, p in model.named_parameters():
        torch.testing.assert_close(shared[name], p.grad, atol=1e-5, rtol=1e-4, msg=lambda m: f"{name}: {m}")
    model.zero_grad()


def test_the_decoder_is_called_the_same_way_whatever_the_prompts_of_a_batch(tiny):
    """A sharded worker's decoder calls are collectives (FSDP2 gathers each layer's weights per call): a worker
    whose samples share a prompt and one whose samples do not must call it the same number of times, or the group
    waits forever (it did: a 2-worker run hung at its first step). Repeated prompts, distinct ones, one sample and
    the one-pad-token batch of an empty micro-batch: two calls each."""
    model, _ = tiny
    decoder = model.get_decoder()
    calls = []
    hook = decoder.register_forward_hook(lambda m, args, out: calls.append(1))
    prompt = list(range(5, 25))
    batches = {"repeated": [Sample(prompt, [7, 8, 9], "", "stop"), Sample(prompt, [10], "", "stop")],
               "distinct": [Sample(prompt, [7, 8, 9], "", "stop"), Sample(prompt[:-1], [10], "", "stop")],
               "one": [Sample(prompt, [7], "", "stop")], "pad": [Sample([0], [0], "", "stop")]}
    seen = {}
    try:
        for name, samples in batches.items():
            calls.clear()
            with torch.no_grad():
                response_log_probs(model, pack(samples, pad_id=0))
            seen[name] = len(calls)
    finally:
        hook.remove()
    assert seen == {"repeated": 2, "distinct": 2, "one": 2, "pad": 2}, seen


def test_under_gradient_checkpointing_shared_prompts_still_reach_their_responses(tiny):
    """HF's gradient checkpointing drops the cache in training mode: the responses must not run without their prompt
    (the rows go through whole there)."""
    model = copy.deepcopy(tiny[0])
    model.gradient_checkpointing_enable()
    model.train()
    torch.manual_seed(2)
    prompt = torch.randint(3, 500, (30,)).tolist()
    samples = [Sample(prompt, torch.randint(3, 500, (m,)).tolist(), "", "stop") for m in (5, 8, 3)]
    log_probs, _ = response_log_probs(model, pack(samples, pad_id=0))
    for i, s in enumerate(samples):
        alone, _ = response_log_probs(model, pack([s], pad_id=0))
        torch.testing.assert_close(log_probs[i, :len(s.response_ids)], alone[0], atol=2e-5, rtol=1e-5)


def test_rollout_is_seeded_skips_long_prompts_and_reports_each_sample(tiny):
    model, tokenizer = tiny
    prompts = [[{"role": "user", "content": "Print the sum of two numbers."}],
               [{"role": "user", "content": "word " * 400}]]
    rollout = HFRollout(model, tokenizer)
    seen = []
    params = SamplingParams(max_new_tokens=12, seed=5, max_prompt_tokens=100, batch_size=3)
    a = rollout.generate(prompts, 4, params, on_sample=lambda g, s: seen.append(g))
    assert len(a[0].samples) == 4 and seen == [0, 0, 0, 0]
    assert a[1].samples == [] and "max_prompt_tokens=100" in a[1].skipped
    b = rollout.generate(prompts, 4, params)
    assert [s.response_ids for s in a[0].samples] == [s.response_ids for s in b[0].samples]
    c = rollout.generate(prompts, 4, SamplingParams(max_new_tokens=12, seed=6, max_prompt_tokens=100))
    assert [s.response_ids for s in a[0].samples] != [s.response_ids for s in c[0].samples]
    for s in a[0].samples:
        assert s.prompt_ids == encode_prompt(tokenizer, prompts[0])
        assert 1 <= len(s.response_ids) <= 12
        assert s.finish_reason == ("stop" if s.response_ids[-1] in rollout.eos_ids else "length")


def test_a_crashing_reward_is_a_judge_error_not_a_zero():
    def broken(*args, **kwargs):
        raise OSError("sandbox went away")

    row = {"data_source": "codecontests", "reward_model": {"ground_truth": {}}, "extra_info": {}}
    scored = score_response(broken, "```python\nprint(1)\n```", row, "linear")
    assert scored.judge_error and scored.status == "judge_error" and "sandbox went away" in scored.details["error"]


def _config(train_batch: int, n: int) -> ExperimentConfig:
    return ExperimentConfig.from_yaml(ROOT / "configs" / "ci_tiny.yaml").with_overrides([
        f"data.train_batch_size={train_batch}", f"algorithm.ppo_mini_batch_size={train_batch}", f"rollout.n={n}",
        "algorithm.ppo_micro_batch_size=1", "algorithm.use_kl_loss=false", "optim.lr=0.01", "model.device=cpu",
        "trainer.test_freq=0", "data.val_path=null",
    ]).validate()


def test_samples_whose_judging_failed_do_not_change_the_update(tiny, tmp_path):
    """Excluding a judge-error sample must equal never having drawn it: same weights after the update."""
    model, tokenizer = tiny
    rows = [{"prompt": [{"role": "user", "content": "x"}]}]
    torch.manual_seed(1)
    samples = [Sample(torch.randint(3, 500, (6,)).tolist(), torch.randint(3, 500, (n,)).tolist(), "", "stop")
               for n in (4, 6, 5, 3)]
    scores = [1.0, 0.0, 0.5, -1.0]
    results = [Scored(s, s == 1.0, False, "ok", {}) for s in scores]

    def updated(keep_idx, judge_error_idx=()):
        trainer = GRPOTrainer(_config(1, len(keep_idx)), rows, tmp_path, model=copy.deepcopy(model), tokenizer=tokenizer)
        res = [Scored(0.0, False, True, "judge_error", {}) if i in judge_error_idx else results[i] for i in keep_idx]
        keep = [0.0 if r.judge_error else 1.0 for r in res]
        trainer._update([samples[i] for i in keep_idx], [0] * len(keep_idx), res, keep)
        return trainer.model.state_dict()

    with_error = updated([0, 1, 2, 3], judge_error_idx={3})
    without = updated([0, 1, 2])
    changed = False
    for name, tensor in without.items():
        torch.testing.assert_close(with_error[name], tensor, atol=1e-6, rtol=1e-5)
        changed |= not torch.equal(tensor, model.state_dict()[name])
    assert changed, "the update must move the weights, or this test proves nothing"
    # and the judge error is not a zero: scoring it 0.0 as a normal sample changes the result
    as_zero = GRPOTrainer(_config(1, 4), rows, tmp_path, model=copy.deepcopy(model), tokenizer=tokenizer)
    as_zero._update(samples, [0] * 4, results[:3] + [Scored(0.0, False, False, "wa", {})], [1.0] * 4)
    assert any(not torch.allclose(as_zero.model.state_dict()[k], v, atol=1e-6) for k, v in without.items())


def test_schedule_and_step_count():
    warm = lr_lambda(4, "constant", 100)
    assert [round(warm(i), 2) for i in range(6)] == [0.0, 0.25, 0.5, 0.75, 1.0, 1.0]  # from 0, as documented
    cos = lr_lambda(0, "cosine", 10)
    assert cos(0) == 1.0 and cos(5) == pytest.approx(0.5) and cos(10) == pytest.approx(0.0)
    cfg = _config(4, 2)
    assert total_steps(cfg.with_overrides(["trainer.total_steps=7"]), 100) == 7
    assert total_steps(cfg.with_overrides(["trainer.total_steps=null", "trainer.total_epochs=2"]), 10) == 5


# ------------------------------------------------------------------------------------------ logged numbers


def _random_samples(seed: int, lengths=(4, 6, 5, 3)) -> list[Sample]:
    torch.manual_seed(seed)
    return [Sample(torch.randint(3, 500, (5 + i,)).tolist(), torch.randint(3, 500, (n,)).tolist(), "", "stop")
            for i, n in enumerate(lengths)]


@pytest.mark.parametrize("micro", [4, 1], ids=["1-micro-batch", "4-micro-batches"])
def test_logged_loss_entropy_kl_and_grad_norm_equal_a_direct_computation(tiny, tmp_path, micro):
    """With one mini-batch per step, the logged loss terms are those of the whole mini-batch at the weights before
    the update, whatever the micro-batching; grad_norm is the norm of that whole-batch gradient."""
    from codefu_helpers import grpo

    model, tokenizer = tiny
    cfg = _config(1, 4).with_overrides([f"algorithm.ppo_micro_batch_size={micro}", "algorithm.use_kl_loss=true",
                                        "algorithm.kl_coef=0.1", "algorithm.entropy_coef=0.01",
                                        "optim.grad_clip=null", "optim.warmup_steps=2"])
    rows = [{"prompt": [{"role": "user", "content": "x"}]}]
    trainer = GRPOTrainer(cfg, rows, tmp_path, model=copy.deepcopy(model), tokenizer=tokenizer)
    with torch.no_grad():  # a reference that differs from the policy, so the KL term is not zero
        for p in trainer.ref_model.parameters():
            p.add_(0.02 * torch.randn_like(p))
    policy, reference = copy.deepcopy(trainer.model), copy.deepcopy(trainer.ref_model)
    samples = _random_samples(3)
    scores = [1.0, 0.0, 0.5, -1.0]
    results = [Scored(s, s == 1.0, False, "ok", {}) for s in scores]
    logged = trainer._update(samples, [0] * 4, results, [1.0] * 4)

    batch = pack(samples, tokenizer.pad_token_id)
    advantages = grpo.group_advantages(torch.tensor(scores), [0] * 4)
    with torch.no_grad():
        old, _ = response_log_probs(policy, batch)
        ref, _ = response_log_probs(reference, batch)
    log_prob, entropy = response_log_probs(policy, batch, with_entropy=True, entropy_grad=True)
    direct = grpo.actor_loss(log_prob, old, grpo.token_advantages(advantages, batch.response_mask), batch.response_mask,
                             ref_log_prob=ref, entropy=entropy, clip_ratio_low=0.2, clip_ratio_high=0.28,
                             clip_ratio_c=3.0, entropy_coef=0.01, use_kl_loss=True, kl_coef=0.1,
                             max_response_length=cfg.data.max_response_length)
    direct.loss.backward()
    grad_norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in policy.parameters() if p.grad is not None]))
    for key in ("loss", "pg_loss", "entropy", "kl_loss"):
        assert logged[key] == pytest.approx(float(direct.metrics[key]), rel=1e-4, abs=1e-6), key
    assert logged["kl"] == logged["kl_loss"] > 0
    assert logged["entropy"] > 1.0  # a near-uniform tiny model: a few nats
    assert logged["grad_norm"] == pytest.approx(float(grad_norm), rel=1e-4)
    assert logged["lr"] == pytest.approx(cfg.optim.lr * lr_lambda(2, "constant", 1)(0))  # the rate the update used
    assert logged["optimizer_steps"] == 1
    assert logged["advantage_abs_mean"] == pytest.approx(float(advantages.abs().mean()), rel=1e-6)


def test_ratio_metrics_of_micro_batches_combine_to_the_whole_mini_batch():
    """clip fractions and ppo_kl are token means: weighting micro-batches by their tokens gives the whole batch's."""
    from codefu_helpers import grpo

    torch.manual_seed(0)
    B, T = 6, 9
    mask = (torch.arange(T)[None] < torch.tensor([9, 3, 7, 1, 5, 8])[:, None]).float()
    log_prob, old = torch.randn(B, T) * 0.3, torch.randn(B, T) * 0.3
    adv = grpo.token_advantages(torch.randn(B), mask)
    whole = grpo.actor_loss(log_prob, old, adv, mask, clip_ratio_low=0.1, clip_ratio_high=0.1).metrics
    norms = grpo.loss_normalisers(mask)
    parts = []
    for lo in range(0, B, 2):
        sl = slice(lo, lo + 2)
        out = grpo.actor_loss(log_prob[sl], old[sl], adv[sl], mask[sl], clip_ratio_low=0.1, clip_ratio_high=0.1, **norms)
        parts.append((out.metrics, int(mask[sl].sum())))
    combined = mini_batch_metrics(parts, norms["total_tokens"])
    assert 0 < float(whole["pg_clipfrac"]) < 1, "pick data where clipping happens, or this proves nothing"
    for key in ("pg_clipfrac", "ppo_kl", "pg_clipfrac_lower", "pg_loss", "loss"):
        assert combined[key] == pytest.approx(float(whole[key]), rel=1e-5, abs=1e-7), key
    naive = sum(float(m["pg_clipfrac"]) for m, _ in parts) / len(parts)
    assert naive != pytest.approx(float(whole["pg_clipfrac"]), rel=1e-3), "unequal micro-batches: a plain mean is off"


def test_logged_rollout_numbers_equal_the_samples_of_the_step(easy_python_rows, warm_model_dir, tmp_path):
    """reward, pass rate, lengths, truncations and verdict counts are recomputed from the step's own samples."""
    rows, _ = easy_python_rows
    model = AutoModelForCausalLM.from_pretrained(warm_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(warm_model_dir)
    cfg = _config(2, 4).with_overrides(["data.max_response_length=48", "algorithm.ppo_micro_batch_size=4",
                                        "tracking.samples_logged=3"])
    trainer = GRPOTrainer(cfg, rows, tmp_path, model=model, tokenizer=tokenizer)
    start = time.perf_counter()
    metrics = trainer.step(0)
    outside = time.perf_counter() - start
    last = trainer.last_step
    samples, results = last["samples"], last["results"]
    valid = [r for r in results if not r.judge_error]
    lengths = [len(s.response_ids) for s in samples]
    assert metrics["samples"] == len(samples) == 8
    assert metrics["reward_mean"] == pytest.approx(sum(r.score for r in valid) / len(valid))
    assert metrics["pass_rate"] == pytest.approx(sum(r.passed for r in valid) / len(valid))
    assert metrics["response_length_mean"] == pytest.approx(sum(lengths) / len(lengths))
    assert metrics["response_length_max"] == max(lengths) and metrics["response_tokens"] == sum(lengths)
    assert metrics["truncated"] == sum(s.finish_reason == "length" for s in samples)
    assert metrics["judge_errors"] == len(results) - len(valid)
    counts = {}
    for group, keep in zip(last["group_ids"], last["keep"]):
        counts[group] = counts.get(group, 0) + (keep > 0)
    assert metrics["groups_without_baseline"] == sum(1 for c in counts.values() if c < 2)
    assert sum(v for k, v in metrics.items() if k.startswith("status/")) == len(samples)
    assert metrics["tokens_per_second"] == pytest.approx(metrics["response_tokens"] / metrics["time_generate"])
    assert [r["reward_model"]["ground_truth"]["name"] for r in last["rows"]] == \
        [r["reward_model"]["ground_truth"]["name"] for r in trainer.batch_rows(0)]
    # the phase timers are disjoint parts of the step, which a clock outside the trainer contains
    phases = [metrics[k] for k in ("time_generate", "time_reward_wait", "time_logprob", "time_update",
                                   "time_weight_sync")]
    assert min(phases) >= 0 and sum(phases) <= metrics["step_seconds"] <= outside
    # the worker calls' wall time beyond the worker's own: in process there is no hop, so it is a small part
    assert 0 <= metrics["time_orchestration"] <= sum(phases)

    # the records fit logs for the step (samples.jsonl): the judged reward, the estimator's advantage and the
    # truncation of each chosen sample, recomputed here from the step's own samples and rewards
    logger = RunLogger(tmp_path / "run", tracking_uri="none", console=False)
    logger.log_samples(1, step_records(1, last, cfg.tracking.samples_logged))
    records = read_samples(tmp_path / "run", step=1)
    assert sorted((r["group"], r["sample"]) for r in records) == [(0, 0), (0, 1), (1, 0)]  # round-robin over groups
    assert [r["problem"] for r in records] == [last["rows"][r["group"]]["reward_model"]["ground_truth"]["name"]
                                                for r in records]
    for r in records:
        i = r["index"]
        assert r["reward"] == results[i].score and r["status"] == results[i].status
        assert r["kept"] == bool(last["keep"][i])
        group = [results[j].score for j, g in enumerate(last["group_ids"]) if g == r["group"] and last["keep"][j]]
        mean, std = sum(group) / len(group), torch.tensor(group, dtype=torch.float64).std().item()
        expected = (r["reward"] - mean) / (std + cfg.algorithm.adv_epsilon) if r["kept"] and len(group) > 1 else 0.0
        assert r["advantage"] == pytest.approx(expected, abs=1e-5)
        assert r["response_length"] == lengths[i] and r["response"] == samples[i].text
        assert r["truncated"] == (samples[i].finish_reason == "length")
        assert r["response_length"] == cfg.data.max_response_length if r["truncated"] else \
            r["response_length"] <= cfg.data.max_response_length


def test_validation_pass_rate_is_the_evaluation_of_the_held_out_rows(python_split, easy_python_rows, warm_model_dir,
                                                                       tmp_path):
    from codefu_helpers.data import read_verl_parquet
    from codefu_helpers.evaluate import pass_rate
    from codefu_helpers.trainer import sampling_params

    rows, _ = easy_python_rows
    val_rows = read_verl_parquet(python_split["test"])[:3]
    model = AutoModelForCausalLM.from_pretrained(warm_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(warm_model_dir)
    cfg = _config(2, 4).with_overrides(["data.max_response_length=32", "trainer.test_freq=1",
                                        f"data.val_path={python_split['test']}", "trainer.val_samples=2"])
    with pytest.raises(ValueError, match="also training problems"):
        GRPOTrainer(cfg, rows, tmp_path, model=model, tokenizer=tokenizer, val_rows=rows[:1])
    trainer = GRPOTrainer(cfg, rows, tmp_path, model=model, tokenizer=tokenizer, val_rows=val_rows)
    got = trainer.validate(step=1)
    direct = pass_rate(model, tokenizer, val_rows, 2, sampling_params(cfg, seed=cfg.trainer.seed * 100_003 + 50_001))
    assert got["val/problems"] == 3 and got["val/pass_at_1"] == direct["pass_rate"]
    assert direct["samples"] == 6 and got["val/judge_errors"] == 0


def test_log_probs_never_hold_the_full_logits_of_a_large_vocabulary(tmp_path):
    """A 150k vocabulary, 4 x 512 response tokens: full float32 logits would be 1.2 GB (more with their gradient).
    The chunked projection keeps the peak far below; measured in a fresh process (ru_maxrss)."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent('''
        import resource, torch
        from transformers import Qwen2Config, Qwen2ForCausalLM
        from codefu_helpers.policy_ops import PackedBatch, response_log_probs
        torch.manual_seed(0)
        V, B, P, T = 151_936, 4, 8, 512
        cfg = Qwen2Config(vocab_size=V, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                          num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=1024,
                          tie_word_embeddings=True)
        model = Qwen2ForCausalLM(cfg)
        ids = torch.randint(0, V, (B, P + T))
        mask = torch.ones_like(ids)
        batch = PackedBatch(ids, mask, (mask.cumsum(-1) - 1), ids[:, P:], torch.ones(B, T), P)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        lp, ent = response_log_probs(model, batch, temperature=0.7, with_entropy=True, entropy_grad=True)
        (lp.sum() + ent.sum()).backward()
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print((after - before) * 1024, float(lp.mean()))
    ''')
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    grown, mean_log_prob = proc.stdout.split()
    full_logits = 4 * 512 * 151_936 * 4
    assert float(mean_log_prob) < 0
    # chunks of 64 MB logits plus the allocator's slack measured 300-400 MiB; unchunked, the logits alone are 1187 MiB
    assert int(grown) < full_logits / 2, f"peak grew by {int(grown) / 2**20:.0f} MiB; full logits are " \
                                         f"{full_logits / 2**20:.0f} MiB"


def test_logged_rollout_log_prob_gap_and_importance_weights_equal_a_direct_computation():
    old = [torch.tensor([-1.0, -0.5, -2.0]), torch.tensor([-0.2, -3.0])]
    engine = [[-1.1, -0.5, -0.9], [-0.3, -3.4]]
    samples = [Sample([1, 2], [3, 4, 5], "", "stop", rollout_log_probs=engine[0]),
               Sample([1], [6, 7], "", "length", rollout_log_probs=engine[1])]
    gaps = [o - r for o_row, r_row in zip(old, engine) for o, r in zip(o_row.tolist(), r_row)]
    weights = [min(math.exp(g), 1.2) for g in gaps]
    engine_log_probs = [s.rollout_log_probs for s in samples]
    metrics, per_sample = rollout_log_prob_check(engine_log_probs, old, True, cap=1.2)
    assert metrics["rollout_logprob_diff_max"] == pytest.approx(max(abs(g) for g in gaps), rel=1e-5)
    assert metrics["rollout_logprob_diff_mean"] == pytest.approx(sum(abs(g) for g in gaps) / len(gaps), rel=1e-5)
    assert metrics["rollout_is_weight_mean"] == pytest.approx(sum(weights) / len(weights), rel=1e-5)
    assert metrics["rollout_is_capped_frac"] == pytest.approx(sum(math.exp(g) > 1.2 for g in gaps) / len(gaps))
    assert [len(w) for w in per_sample] == [3, 2]
    assert torch.cat(per_sample).tolist() == pytest.approx(weights, rel=1e-5)
    without, none = rollout_log_prob_check(engine_log_probs, old, False, cap=1.2)
    assert none is None and set(without) == {"rollout_logprob_diff_max", "rollout_logprob_diff_mean"}
    # an engine without log-probs (HF) reports nothing
    assert rollout_log_prob_check([Sample([1], [2], "", "stop").rollout_log_probs], [torch.tensor([-1.0])], True,
                                  2.0) == ({}, None)


# ------------------------------------------------------------------------------------ the robust loop (issue 19)


def test_a_group_left_with_one_valid_sample_gets_no_advantage(tiny, tmp_path):
    """Three of four samples' judging failed: the one left has nothing to be compared with. Its raw reward used as
    an advantage (verl's pass-through) would move the policy; advantage 0 leaves it where it was."""
    model, tokenizer = tiny
    cfg = _config(1, 4).with_overrides(["optim.weight_decay=0", "algorithm.entropy_coef=0"])
    trainer = GRPOTrainer(cfg, [{"prompt": [{"role": "user", "content": "x"}]}], tmp_path,
                          model=copy.deepcopy(model), tokenizer=tokenizer)
    before = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    failed = Scored(0.0, False, True, "judge_error", {})
    results = [Scored(1.0, True, False, "ok", {}), failed, failed, failed]
    keep = [1.0, 0.0, 0.0, 0.0]
    trainer._update(_random_samples(2), [0, 0, 0, 0], results, keep)
    assert trainer.last_step["advantages"].tolist() == [0.0, 0.0, 0.0, 0.0]
    assert all(torch.equal(before[k], v) for k, v in trainer.model.state_dict().items()), "a lone sample moved it"
    # what the old pass-through gave that sample, and a group of two valid samples still learns
    assert grpo_advantages([1.0], [0])[0] == pytest.approx(1.0, abs=1e-5)
    adv = grpo_advantages([1.0, 0.0, 0.5, -1.0], ["a", "a", "b", "b"], lone_sample="zero")
    assert adv[0] > 0 > adv[1] and adv[2] > 0 > adv[3]
    from codefu_helpers.grpo import groups_without_baseline

    assert groups_without_baseline([0, 0, 0, 0], keep) == 1
    assert groups_without_baseline(["a", "a", "b", "b", "c"], [1, 1, 1, 0, 0]) == 2  # b: one valid, c: none
    assert groups_without_baseline(["a", "a"], [1, 1]) == 0


def grpo_advantages(rewards, groups, **kwargs):
    from codefu_helpers.grpo import group_advantages

    return group_advantages(torch.tensor(rewards, dtype=torch.float64), groups, **kwargs).tolist()


def test_importance_weights_scale_the_policy_loss_in_the_update(tiny, tmp_path):
    """use_rollout_log_probs: each token's policy loss is weighted by min(exp(old - engine), cap). The logged gradient
    norm equals the one of the weighted loss computed directly, and not the unweighted one: a trainer that dropped
    the weights would fail here."""
    from codefu_helpers import grpo

    model, tokenizer = tiny
    cfg = _config(1, 4).with_overrides(["optim.grad_clip=null", "algorithm.entropy_coef=0.0"])
    trainer = GRPOTrainer(cfg, [{"prompt": [{"role": "user", "content": "x"}]}], tmp_path,
                          model=copy.deepcopy(model), tokenizer=tokenizer)
    trainer.cfg.rollout.use_rollout_log_probs = True  # an HF run cannot ask for it; the engine's log-probs are made
    policy = copy.deepcopy(trainer.model)
    samples = _random_samples(4)
    batch = pack(samples, tokenizer.pad_token_id)
    with torch.no_grad():
        old, _ = response_log_probs(policy, batch)
    shift = 0.8 * torch.rand(old.shape, generator=torch.Generator().manual_seed(2)) - 0.4  # (B, T)
    for i, s in enumerate(samples):  # the engine's log-probs: the policy's, off by a per-token shift
        s.rollout_log_probs = (old[i, :len(s.response_ids)] - shift[i, :len(s.response_ids)]).tolist()
    scores = [1.0, 0.0, 0.5, -1.0]
    logged = trainer._update(samples, [0] * 4, [Scored(x, x == 1.0, False, "ok", {}) for x in scores], [1.0] * 4)

    def grad_norm(weights):
        model_copy = copy.deepcopy(policy)
        log_prob, _ = response_log_probs(model_copy, batch)
        advantages = grpo.token_advantages(grpo.group_advantages(torch.tensor(scores), [0] * 4), batch.response_mask)
        out = grpo.actor_loss(log_prob, old, advantages * weights, batch.response_mask, clip_ratio_low=0.2,
                              clip_ratio_high=0.28, clip_ratio_c=3.0, max_response_length=cfg.data.max_response_length)
        out.loss.backward()
        return float(torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model_copy.parameters()
                                                           if p.grad is not None])))

    weights = torch.exp(shift).clamp(max=cfg.rollout.rollout_is_cap) * batch.response_mask
    weighted, unweighted = grad_norm(weights), grad_norm(torch.ones_like(weights))
    assert abs(weighted - unweighted) > 0.02 * unweighted, "pick shifts that change the gradient"
    assert logged["grad_norm"] == pytest.approx(weighted, rel=1e-4)
    mask = batch.response_mask.bool()
    assert logged["rollout_is_weight_mean"] == pytest.approx(float(weights[mask].mean()), rel=1e-5)


@pytest.mark.parametrize("loss_mode, rollout_is, cap, lower", [
    ("gspo", "token", 2.0, 0.5), ("vanilla", "sequence", 1.5, 0.5), ("vanilla", "mask", 1.2, 0.9),
], ids=["gspo-token-is", "sequence-is", "mask-is"])
def test_loss_mode_and_rollout_is_reach_the_update(tiny, tmp_path, monkeypatch, loss_mode, rollout_is, cap, lower):
    """algorithm.loss_mode and rollout.rollout_is are honoured by the native trainer's update: the logged gradient norm
    and IS metrics equal those of GSPO / the sequence or masked weights computed directly, not of the default ones.
    The step's old log-probs are moved off the policy (on-policy, every ratio is 1 and GSPO's gradient is PPO's)."""
    from codefu_helpers import grpo

    model, tokenizer = tiny
    cfg = _config(1, 4).with_overrides(["optim.grad_clip=null", "algorithm.entropy_coef=0.0",
                                        f"algorithm.loss_mode={loss_mode}"])
    trainer = GRPOTrainer(cfg, [{"prompt": [{"role": "user", "content": "x"}]}], tmp_path,
                          model=copy.deepcopy(model), tokenizer=tokenizer)
    # an HF run cannot ask for rollout IS; the engine's log-probs are made below
    trainer.cfg.rollout.use_rollout_log_probs, trainer.cfg.rollout.rollout_is = True, rollout_is
    trainer.cfg.rollout.rollout_is_cap, trainer.cfg.rollout.rollout_is_threshold_lower = cap, lower
    policy = copy.deepcopy(trainer.model)
    samples = _random_samples(4)
    batch = pack(samples, tokenizer.pad_token_id)
    with torch.no_grad():
        old, _ = response_log_probs(policy, batch)
    old = old + 0.3 * torch.randn(old.shape, generator=torch.Generator().manual_seed(3))  # as if sampled earlier
    computed = trainer.workers.log_probs
    monkeypatch.setattr(trainer.workers, "log_probs", lambda step_samples: (
        [old[i, :len(s.response_ids)] for i, s in enumerate(step_samples)], computed(step_samples)[1]))
    shift = 0.8 * torch.rand(old.shape, generator=torch.Generator().manual_seed(2)) - 0.4  # (B, T): old - engine
    for i, s in enumerate(samples):
        s.rollout_log_probs = (old[i, :len(s.response_ids)] - shift[i, :len(s.response_ids)]).tolist()
    scores = [1.0, 0.0, 0.5, -1.0]
    logged = trainer._update(samples, [0] * 4, [Scored(x, x == 1.0, False, "ok", {}) for x in scores], [1.0] * 4)

    mask = batch.response_mask.bool()
    ratio = torch.exp(shift)
    if rollout_is == "token":
        weights = ratio.clamp(max=cap)
    elif rollout_is == "sequence":  # one weight per sample: its whole response's ratio, truncated
        weights = torch.exp(torch.where(mask, shift, 0.0).sum(-1, keepdim=True)).clamp(max=cap).expand_as(shift)
    else:  # tokens outside [lower, cap] dropped
        weights = torch.where((ratio >= lower) & (ratio <= cap), ratio, 0.0)
    weights = weights * mask

    def grad_norm(mode, is_weights):
        model_copy = copy.deepcopy(policy)
        log_prob, _ = response_log_probs(model_copy, batch)
        advantages = grpo.token_advantages(grpo.group_advantages(torch.tensor(scores), [0] * 4), batch.response_mask)
        out = grpo.actor_loss(log_prob, old, advantages, batch.response_mask, clip_ratio_low=0.2, clip_ratio_high=0.28,
                              clip_ratio_c=3.0, loss_mode=mode, rollout_is_weights=is_weights,
                              max_response_length=cfg.data.max_response_length)
        out.loss.backward()
        return float(torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model_copy.parameters()
                                                           if p.grad is not None])))

    expected = grad_norm(loss_mode, weights)
    default = grad_norm("vanilla", ratio.clamp(max=2.0) * mask)  # what the default keys would have done
    assert abs(expected - default) > 0.02 * default, "pick inputs where the options change the gradient"
    assert logged["grad_norm"] == pytest.approx(expected, rel=1e-4)
    assert logged["rollout_is_weight_mean"] == pytest.approx(float(weights[mask].mean()), rel=1e-5)
    if rollout_is == "mask":
        dropped = ((ratio < lower) | (ratio > cap))[mask].float().mean()
        assert 0 < dropped < 1 and logged["rollout_is_masked_frac"] == pytest.approx(float(dropped))
    elif rollout_is == "sequence":
        capped = (torch.where(mask, shift, 0.0).sum(-1) > math.log(cap)).float().mean()
        assert logged["rollout_is_capped_frac"] == pytest.approx(float(capped))


def test_the_schedule_advances_only_with_optimizer_steps_taken(tiny, tmp_path):
    """A non-finite gradient skips the optimizer step, and the warm-up does not move on without it: the next update
    runs at the rate the skipped one would have used (warm-up from 0: update k at k / warmup x lr)."""
    model, tokenizer = tiny
    cfg = _config(1, 4).with_overrides(["optim.warmup_steps=4"])
    trainer = GRPOTrainer(cfg, [{"prompt": [{"role": "user", "content": "x"}]}], tmp_path,
                          model=copy.deepcopy(model), tokenizer=tokenizer)
    samples = _random_samples(4)
    old, ref = trainer.workers.log_probs(samples)
    norms = __import__("codefu_helpers.grpo", fromlist=["x"]).loss_normalisers(pack(samples, 0).response_mask)

    def update(advantage):
        items = {i: {"sample": s, "keep": 1.0, "advantage": advantage, "old": old[i], "ref": ref[i], "is_weight": None}
                 for i, s in enumerate(samples)}
        return trainer.workers.update(items, [0, 1, 2, 3], norms)

    skipped = update(float("nan"))
    assert not skipped["finite"] and skipped["lr"] == 0.0
    rates = [update(1.0)["lr"] for _ in range(3)]
    assert rates == pytest.approx([0.0, 0.25 * cfg.optim.lr, 0.5 * cfg.optim.lr])


def test_a_judge_that_does_not_answer_in_time_is_a_judge_error_not_a_hang():
    import time as clock

    from codefu_helpers.workers.judge import LocalJudgePool

    def slow(*args, **kwargs):
        clock.sleep(1)
        return {"score": 1.0, "status": "ok"}

    pool = LocalJudgePool(slow, 1, "linear")
    row = {"data_source": "codecontests", "reward_model": {"ground_truth": {}}, "extra_info": {}}
    start = clock.monotonic()
    (late,) = pool.results([pool.submit("print(1)", row)], timeout_s=0.3)
    assert clock.monotonic() - start < 0.9
    assert late.judge_error and "did not answer within trainer.worker_timeout_s=0.3 s" in late.details["error"]
    pool.close()


def test_resume_refuses_what_changes_the_data_order_or_the_schedule_and_explains_the_rest(tmp_path, capsys):
    from codefu_helpers.checkpoint import TrainerState, write_checkpoint
    from codefu_helpers.config import ConfigError
    from codefu_helpers.trainer import check_resume_config

    cfg = ExperimentConfig.from_yaml(ROOT / "configs" / "ci_tiny.yaml")
    path = write_checkpoint(tmp_path, TrainerState(step=2, data_position=4, mlflow_run_id=None,
                                                   config=cfg.to_dict()), lambda folder: None)
    assert check_resume_config(path, cfg) == []
    # where it runs may change freely (another worker count, tracking, checkpoint placement)
    assert check_resume_config(path, cfg.with_overrides(["trainer.gpus_per_node=2", "tracking.backend=none",
                                                         "checkpoint.keep_last=5", "trainer.worker_timeout_s=60"])) == []
    for override, fragment in (("data.train_batch_size=4", "data.train_batch_size: 2 -> 4 would change which problems"),
                               ("trainer.seed=1", "trainer.seed: 0 -> 1"),
                               ("optim.lr=2e-5", "optim.lr: 1e-05 -> 2e-05 would change the learning-rate schedule"),
                               ("optim.warmup_steps=3", "optim.warmup_steps: 0 -> 3"),
                               ("algorithm.ppo_mini_batch_size=2", "algorithm.ppo_mini_batch_size: 1 -> 2")):
        with pytest.raises(ConfigError) as info:
            check_resume_config(path, cfg.with_overrides([override]))
        assert fragment in str(info.value) and "restore those values" in str(info.value), override
    # a longer run: refused under a cosine schedule (its end moves), explained under a constant one
    cosine = cfg.with_overrides(["optim.lr_schedule=cosine"])
    cosine_path = write_checkpoint(tmp_path / "cosine", TrainerState(2, 4, None, cosine.to_dict()), lambda f: None)
    with pytest.raises(ConfigError, match="would bend the cosine schedule mid-run"):
        check_resume_config(cosine_path, cosine.with_overrides(["trainer.total_steps=8"]))
    capsys.readouterr()
    explained = check_resume_config(path, cfg.with_overrides(["trainer.total_steps=8", "algorithm.kl_coef=0.01"]))
    assert explained == ["algorithm.kl_coef: 0.001 -> 0.01",
                         "trainer.total_steps: 4 -> 8: the run now ends elsewhere (a constant schedule is unaffected)"]
    assert "with a changed config:\n  algorithm.kl_coef: 0.001 -> 0.01" in capsys.readouterr().out
