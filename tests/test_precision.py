"""Mixed precision and the weight sync on CPU, where bfloat16 runs too: float32 master weights that a 1e-6 update
moves, a bf16 trajectory within bf16 rounding of the float32 one, the GPU check's GRPO steps run here, and a streamed
weight sync whose extra peak memory is a small share of the model (codefu_helpers.workers.policy)."""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from codefu_helpers import grpo
from codefu_helpers.config import ExperimentConfig
from codefu_helpers.policy_ops import pack
from codefu_helpers.rollout import Sample

from conftest import ROOT


def gpu_check_module():
    """scripts/gpu_check.py, imported (its checkpoint readers serve the tests too)."""
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "scripts" / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fixed_batch():
    torch.manual_seed(5)
    lengths = [(6, 9), (4, 3), (11, 7), (5, 12), (8, 2), (3, 6), (9, 5), (7, 8)]
    samples = [Sample(torch.randint(3, 500, (p,)).tolist(), torch.randint(3, 500, (r,)).tolist(), "", "stop")
               for p, r in lengths]
    return samples, torch.randn(8)


def _train(dtype: str, path: str, steps: int = 2):
    """`steps` GRPO steps of two updates each on one fixed batch, lr 1e-6; (initial weights, final, losses)."""
    from codefu_helpers.workers import LocalWorkerGroup

    cfg = ExperimentConfig.from_yaml(ROOT / "configs" / "ci_tiny.yaml").with_overrides([
        "trainer.test_freq=0", "data.val_path=null", "optim.lr=1e-6", f"model.dtype={dtype}",
        "algorithm.kl_coef=0.1", "algorithm.entropy_coef=0.01"]).validate()
    group = LocalWorkerGroup(cfg, path, total_updates=2 * steps)
    try:
        policy = group.worker.policy
        initial = {k: v.clone() for k, v in policy.lm.state_dict().items()}
        samples, advantages = _fixed_batch()
        losses = []
        for _ in range(steps):
            old, ref = group.log_probs(samples)
            items = {i: {"sample": s, "keep": 1.0, "advantage": float(advantages[i]), "old": old[i], "ref": ref[i],
                         "is_weight": None} for i, s in enumerate(samples)}
            for mini in ([0, 3, 5, 6], [1, 2, 4, 7]):
                norms = grpo.loss_normalisers(pack([samples[i] for i in mini], 0, "cpu").response_mask)
                out = group.update(items, mini, norms)
                losses.append(grpo.mini_batch_metrics(out["micro"], norms["total_tokens"])["loss"])
        state = group.worker.policy.sharded_state()["model"]
        return initial, {k.removeprefix("lm."): v.clone() for k, v in state.items()}, losses, policy
    finally:
        group.close()


def test_bf16_compute_keeps_float32_master_weights_that_a_1e_6_update_moves():
    """The issue's measurement: bf16 *stored* weights kept 0.7 % of their elements through three steps at lr 1e-6.
    Here (two steps) the master weights stay float32 (what the checkpoint saves), >= 90 % of them move, the bf16 run's
    losses and updates follow the float32 run's within bf16 rounding."""
    from codefu_helpers.tiny_model import build_tiny_model

    path = str(build_tiny_model())
    start32, end32, losses32, _ = _train("float32", path)
    start16, end16, losses16, policy = _train("bfloat16", path)
    assert policy.autocast and policy.compute_dtype == torch.bfloat16
    assert {t.dtype for t in end16.values()} == {torch.float32}, "the saved master weights must be float32"
    moved = gpu_check_module().moved_fraction(start16, end16)
    print(f"bf16 compute, lr 1e-6, 2 steps: {moved:.2%} of master-weight elements moved")
    assert moved >= 0.9
    # the same bf16 update applied to bf16-stored weights rounds away: what the old trainer did
    stored = {k: v.to(torch.bfloat16) for k, v in start16.items()}
    kept = sum(int((stored[k] == (stored[k].float() + (end16[k] - start16[k])).to(torch.bfloat16)).sum())
               for k in stored) / sum(v.numel() for v in stored.values())
    print(f"the same update added to bf16-stored weights: {1 - kept:.2%} of elements change")
    assert 1 - kept < 0.2
    # trajectory: per-update losses within bf16 resolution, updates pointing the same way
    for a, b in zip(losses32, losses16):
        assert b == pytest.approx(a, abs=2e-3)
    delta32 = torch.cat([(end32[k] - start32[k]).flatten() for k in end32])
    delta16 = torch.cat([(end16[k] - start16[k]).flatten() for k in end16])
    cosine = float(torch.nn.functional.cosine_similarity(delta32, delta16, dim=0))
    print(f"cosine(update fp32, update bf16) = {cosine:.3f}")
    assert cosine > 0.9


def test_the_gpu_check_runs_its_cpu_path_and_fails_when_a_part_fails(tmp_path):
    """scripts/gpu_check.py cannot run its GPU path here; its CPU path runs every part (the trainer in bf16 at lr 1e-6,
    validation through the judge, a checkpoint resumed in a new process, the offload path forced on one worker) with
    the GPU-only checks listed as n/a; a part that outlives its hard limit fails the check (exit 1, named), and so does a
    part that raises."""
    subprocess.run(["bash", "-n", str(ROOT / "scripts" / "gpu_check.sh")], check=True)
    env = {**os.environ, "CODEFU_RAY_DASHBOARD": "0"}
    script = str(ROOT / "scripts" / "gpu_check.py")
    proc = subprocess.run([sys.executable, script, "--device", "cpu", "--out", str(tmp_path / "ok")],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=900)
    results = json.loads((tmp_path / "ok" / "gpu_check.json").read_text())
    assert proc.returncode == 0 and "GPU CHECK PASSED" in proc.stdout, f"{proc.stdout[-3000:]}\n{results}"
    assert list(results) == ["gate", "grpo", "resume", "offload"]
    for name, part in results.items():  # on CPU the gate's checks are all GPU checks (n/a); every other part checks
        assert part["ok"] and (name == "gate" or True in part["checks"].values()), (name, part)
    assert results["grpo"]["checks"]["memory per phase within 15 % of the plan"] == "n/a"
    assert results["offload"]["shard_devices"] == ["cpu"] and results["resume"]["moved"] >= 0.9
    assert "| grpo | ok |" in (tmp_path / "ok" / "gpu_check.md").read_text()
    # a part past its hard limit, and a part that raises (resume without the grpo part's checkpoint): exit 1, named
    failed = subprocess.run([sys.executable, script, "--device", "cpu", "--out", str(tmp_path / "bad"), "--parts",
                             "gate,resume", "--timeout", "gate=1"], capture_output=True, text=True, cwd=ROOT, env=env,
                            timeout=600)
    assert failed.returncode == 1 and "GPU CHECK FAILED" in failed.stdout, failed.stdout[-3000:]
    bad = json.loads((tmp_path / "bad" / "gpu_check.json").read_text())
    assert bad["gate"]["error"] == "timed out after 1 s (hard limit of the part)" and "resume" not in bad
    failed = subprocess.run([sys.executable, script, "--device", "cpu", "--out", str(tmp_path / "bad2"), "--parts",
                             "resume"], capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    bad = json.loads((tmp_path / "bad2" / "gpu_check.json").read_text())
    assert failed.returncode == 1 and not bad["resume"]["ok"], failed.stdout[-3000:]
    assert bad["resume"]["checks"]["the grpo part's checkpoint of step 2 is there"] is False
    # the config its GPU path trains is valid, and its memory plan fits one H200
    from codefu_helpers.memory_plan import memory_plan

    check = gpu_check_module()
    cfg = check._config(tmp_path / "x", "cuda", {"train": tmp_path / "train.parquet"}, "Qwen/Qwen2.5-0.5B", 5,
                        **{"algorithm.ppo_max_token_len_per_gpu": 4096})
    assert cfg.rollout.enable_sleep_mode and cfg.model.dtype == "bfloat16"
    assert memory_plan(cfg, device_memory_gib=139).fits


SYNC_PEAK = textwrap.dedent(r'''
    import json, re, socket, sys, tempfile
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM
    from codefu_helpers import grpo
    from codefu_helpers.config import ExperimentConfig
    from codefu_helpers.policy_ops import pack
    from codefu_helpers.rollout import Sample, SamplingParams
    from codefu_helpers.tiny_model import build_tiny_model
    from codefu_helpers.workers.judge import LocalJudgePool
    from codefu_helpers.workers.worker import Worker

    def status(key):
        return int(re.search(rf"{key}:\s+(\d+) kB", open("/proc/self/status").read()).group(1)) << 10

    def reset_peak():
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")

    # 12 layers: the embeddings are 4 % of the model, as in a 7B (the tiny model's 2 layers make them a third)
    folder = tempfile.mkdtemp()
    tokenizer = AutoTokenizer.from_pretrained(build_tiny_model())
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=512, intermediate_size=1536, num_hidden_layers=12,
                         num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=2048,
                         tie_word_embeddings=True, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, bos_token_id=None)
    torch.manual_seed(0)
    Qwen2ForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    cfg = ExperimentConfig().with_overrides({
        "model.path": folder, "model.dtype": "bfloat16", "model.device": "cpu", "rollout.backend": "vllm",
        "rollout.cpu_kv_cache_gb": 0.05, "data.max_prompt_length": 96, "data.max_response_length": 32,
        "algorithm.use_kl_loss": False, "optim.lr": 1e-3}).validate()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    judge = LocalJudgePool(lambda *a, **k: {"score": 0.0}, 1, "linear")
    worker = Worker(cfg)  # a sharded worker in a process group of one, its vLLM engine in this process
    worker.start(folder, master=("127.0.0.1", port), world_size=1, judge=judge, total_updates=1)
    assert worker.policy.sharded and worker.engine.backend == "vllm"
    assert not any(isinstance(v, torch.nn.Module) for v in vars(worker).values() if v is not worker.policy.model)
    params = sum(p.numel() for p in worker.policy.lm.parameters())
    torch.manual_seed(1)
    batch = [Sample(torch.randint(3, 3000, (20,)).tolist(), torch.randint(3, 3000, (12,)).tolist(), "", "stop")
             for _ in range(4)]
    old = [o for micro in worker.log_probs([batch]) for o, _ in micro]
    items = [{"sample": s, "keep": 1.0, "advantage": a, "old": o, "ref": None, "is_weight": None}
             for s, o, a in zip(batch, old, (1.0, -1.0, 0.5, -0.5))]
    worker.update([items], grpo.loss_normalisers(pack(batch, 0).response_mask))  # the engine is one update behind
    rows = [{"prompt": [{"role": "user", "content": "print the sum of two numbers"}]}] * 2
    def gap():
        groups, judged = worker.generate([r["prompt"] for r in rows], rows, 4, SamplingParams(max_new_tokens=16, seed=3))
        samples = [s for _, s, _ in judged]
        ours = [o for micro in worker.log_probs([samples]) for o, _ in micro]
        return max(float((o - torch.tensor(s.rollout_log_probs)).abs().max()) for o, s in zip(ours, samples))
    stale = gap()
    import gc
    gc.collect()
    before = status("VmRSS")
    reset_peak()
    worker.sync_weights()
    extra = status("VmHWM") - before
    print(json.dumps({"params": params, "model_bytes": 2 * params, "sync_extra_bytes": extra, "stale_gap": stale,
                      "synced_gap": gap()}))
    worker.close()
    judge.close()
''')


def test_a_weight_sync_streams_the_shards_into_vllm_with_little_extra_memory():
    """A sharded bf16 worker (FSDP2 over a process group of one) and its vLLM engine: after an update the engine is
    behind (a large log-prob gap); a sync streams one gathered tensor at a time, so its extra peak resident memory
    stays far below the model's size (the old design gathered the whole state dict into a standing copy), and the
    gap falls to bf16 rounding."""
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536"}  # freed blocks go back to the system: RSS tracks tensors
    proc = subprocess.run([sys.executable, "-c", SYNC_PEAK], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    share = got["sync_extra_bytes"] / got["model_bytes"]
    print(f"sync: {got['sync_extra_bytes'] / 2**20:.1f} MiB extra peak for a {got['model_bytes'] / 2**20:.1f} MiB "
          f"bf16 model ({share:.1%}); log-prob gap {got['stale_gap']:.3f} before the sync, {got['synced_gap']:.4f} after")
    assert share < 0.25, got
    assert got["stale_gap"] > 0.2 and got["synced_gap"] < 0.05, got
