"""The step-time model (codefu_helpers.step_time), notebook 03's GPU default sized by it, and `make tutorial`'s cell
timeouts taken from it. Nothing here trains or executes a notebook: the notebook's GPU run is rendered from its
parameters cell, as papermill would inject them."""

import importlib.util
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from codefu_helpers.config import ExperimentConfig
from codefu_helpers.memory_plan import model_shape
from codefu_helpers.step_time import ASSUMED, GPUS, estimate_run, gpu_spec, step_seconds
from codefu_helpers.tutorial import (SMOKE_EVAL_SAMPLES, TIMEOUT_FLOOR_S, TIMEOUT_SAFETY, NotebookRun,
                                     notebook_parameters, notebook_timeout, render_smoke, smoke_estimate)

ROOT = Path(__file__).resolve().parent.parent
SINGLE_GPU = ROOT / "configs" / "single_gpu_qwen2.5_coder_0.5b.yaml"
BUDGET_S = 15 * 60  # notebook 03 on one 24 GB GPU (an A10G), its evaluations included


@pytest.mark.parametrize("name, key", [("NVIDIA A10G", "A10G"), ("NVIDIA L4", "L4"), ("Tesla T4", "T4"),
                                       ("NVIDIA A100-SXM4-40GB", "A100-40"), ("NVIDIA A100-SXM4-80GB", "A100-80"),
                                       ("NVIDIA H100 80GB HBM3", "H100"), ("NVIDIA H100 PCIe", "H100-PCIe"),
                                       ("NVIDIA H200", "H200"), ("H200", "H200")])
def test_a_device_name_finds_its_datasheet_figures(name, key):
    assert gpu_spec(name) is GPUS[key]


def test_an_unknown_gpu_is_refused_naming_the_known_ones():
    with pytest.raises(ValueError, match="A10G"):
        gpu_spec("NVIDIA GeForce RTX 4090")


def test_each_phase_scales_with_the_resource_that_bounds_it():
    """Decoding with the memory bandwidth, the trainer's passes with the FLOP/s, the judge with its workers; the KL
    term adds the reference's pass, gradient checkpointing a forward in the update."""
    cfg = ExperimentConfig.from_yaml(SINGLE_GPU)
    a10g = GPUS["A10G"]
    base = step_seconds(cfg, a10g)
    fast_memory = step_seconds(cfg, replace(a10g, bandwidth_gb_s=2 * a10g.bandwidth_gb_s))
    fast_compute = step_seconds(cfg, replace(a10g, bf16_tflops=2 * a10g.bf16_tflops))
    assert fast_memory["decode"] < base["decode"] and fast_memory["update"] == base["update"]
    assert fast_compute["decode"] == base["decode"]  # decoding on an A10G waits for memory, not for compute
    for phase in ("update", "log_probs", "prefill"):
        assert fast_compute[phase] == pytest.approx(base[phase] / 2)
    # decoding is the slower of its memory traffic and its FLOPs, plus a fixed cost per decode step (two waves here)
    overhead = 2 * cfg.data.max_response_length * ASSUMED["decode_step_overhead_s"]
    memory_only = [step_seconds(cfg, replace(a10g, bf16_tflops=1e9, bandwidth_gb_s=b))["decode"] - overhead
                   for b in (600.0, 1200.0)]
    compute_only = [step_seconds(cfg, replace(a10g, bandwidth_gb_s=1e9, bf16_tflops=f))["decode"] - overhead
                    for f in (70.0, 140.0)]
    assert memory_only[1] == pytest.approx(memory_only[0] / 2) and compute_only[1] == pytest.approx(compute_only[0] / 2)
    assert base["decode"] - overhead == pytest.approx(max(memory_only[0], compute_only[0]), rel=1e-3)
    more_judges = step_seconds(cfg.with_overrides({"reward.num_workers": 16}), "A10G")
    assert more_judges["judge"] == pytest.approx(base["judge"] / 2)
    no_kl = step_seconds(cfg.with_overrides({"algorithm.use_kl_loss": False}), "A10G")
    assert no_kl["log_probs"] == pytest.approx(base["log_probs"] / 2)
    no_checkpointing = step_seconds(cfg.with_overrides({"model.gradient_checkpointing": False}), "A10G")
    assert no_checkpointing["update"] == pytest.approx(base["update"] * 3 / 4)


def test_the_update_is_six_flops_per_parameter_and_token_plus_a_recomputed_forward():
    """One number worked by hand: the single-GPU config's update on an A10G."""
    cfg = ExperimentConfig.from_yaml(SINGLE_GPU)
    shape = model_shape(cfg.model.path)
    prompt, response = ASSUMED["prompt_tokens"], ASSUMED["response_fraction"] * cfg.data.max_response_length
    tokens = cfg.data.train_batch_size * cfg.rollout.n * (prompt + response)
    forward = 2 * shape.params + 4 * shape.layers * shape.q_dim * (prompt + response) / 2
    flops = 4 * forward * tokens  # 2 per parameter forward, 4 backward, 2 for the forward checkpointing recomputes
    assert step_seconds(cfg, "A10G")["update"] == pytest.approx(flops / (70e12 * ASSUMED["train_mfu"]))


def test_the_100_step_config_is_far_beyond_a_notebook_cell_even_on_an_h100():
    """Issue 33: what CONFIG = "auto" ran on a GPU before, 100 steps and two evaluations of 49 x 64 samples, is well
    over papermill's old 30-minute cell timeout on an H100."""
    cfg = ExperimentConfig.from_yaml(SINGLE_GPU)
    assert cfg.trainer.total_steps == 100  # the CLI's config is unchanged
    assert estimate_run(cfg, "H100", 49, 64).total_s > 2 * 1800


def test_03_gpu_default_is_a_smoke_run_within_15_minutes_on_an_a10g(tmp_path):
    """What notebook 03 runs with device='cuda' and its parameters cell as it stands (no GPU needed): the smoke
    config, whose steps and two evaluations fit the budget on an A10G, with fewer evaluation samples than the CPU run's
    64 and far fewer in all than the 49 x 64 that CONFIG = "auto" evaluated before."""
    path, cfg, eval_samples = render_smoke("cuda", {"RUN_DIR": str(tmp_path)})
    assert path == ROOT / "configs" / "single_gpu_smoke.yaml" and cfg.model.device == "cuda"
    assert cfg.model.path == ExperimentConfig.from_yaml(SINGLE_GPU).model.path and cfg.model.dtype == "bfloat16"
    run = smoke_estimate(cfg, "NVIDIA A10G", eval_samples)
    assert run.gpu is GPUS["A10G"] and run.steps == cfg.trainer.total_steps
    assert run.total_s <= BUDGET_S, run.report()
    assert eval_samples == SMOKE_EVAL_SAMPLES["cuda"] < SMOKE_EVAL_SAMPLES["cpu"]
    assert [(p, k) for p, k, _ in run.evaluations] == [(cfg.data.max_problems, eval_samples)] * 2
    assert cfg.data.max_problems * eval_samples * 4 <= 49 * 64
    # the CPU rendering is the CPU run as before: cpu_learn.yaml, 64 samples per problem
    cpu_path, cpu_cfg, cpu_samples = render_smoke("cpu", {"RUN_DIR": str(tmp_path)})
    assert cpu_path.name == "cpu_learn.yaml" and cpu_samples == 64 and cpu_cfg.model.device == "cpu"
    # a parameter set by papermill wins over the cell, and an explicit EVAL_SAMPLES over the device's default
    _, longer, samples = render_smoke("cuda", {"RUN_DIR": str(tmp_path), "OVERRIDES": {"trainer.total_steps": 30}, "EVAL_SAMPLES": 4})
    assert longer.trainer.total_steps == 30 and samples == 4


def test_03_makes_its_run_the_way_render_smoke_does():
    """render_smoke stands for notebook 03's config cells: they call the same helpers with the same parameters."""
    import nbformat

    cells = nbformat.read(ROOT / "notebooks" / "03_grpo_smoke_test.ipynb", as_version=4).cells
    sources = "\n".join(c.source for c in cells if c.cell_type == "code")
    for call in ('smoke_config(CONFIG, device, train_path=split["train"], dataset=dataset, output_dir=out_dir, seed=SEED',
                 "overrides=OVERRIDES)",
                 "smoke_eval_samples(EVAL_SAMPLES, device)", "check_fits(cfg)", "smoke_estimate(cfg,"):
        assert call in sources, call
    assert set(notebook_parameters("03_grpo_smoke_test.ipynb")) >= {"CONFIG", "EVAL_SAMPLES", "OVERRIDES"}
    with pytest.raises(ValueError, match="no parameters"):
        notebook_parameters("03_grpo_smoke_test.ipynb", {"EVAL_SAMPLE": 4})


def test_the_tutorial_timeout_follows_notebook_03s_estimate_on_the_visible_gpu(tmp_path):
    params = {"RUN_DIR": str(tmp_path)}
    seconds, why = notebook_timeout("03_grpo_smoke_test.ipynb", "NVIDIA A10G", params)
    _, cfg, samples = render_smoke("cuda", params)
    estimate = smoke_estimate(cfg, "A10G", samples).total_s
    assert seconds == max(TIMEOUT_FLOOR_S, round(TIMEOUT_SAFETY * estimate + 0.5)) and "A10G" in why
    assert seconds > estimate * 2  # room for an estimate that is off by half
    # the 100-step config gets the hours it needs, not the floor
    long, _ = notebook_timeout("03_grpo_smoke_test.ipynb", "NVIDIA A10G", {**params, "CONFIG": str(SINGLE_GPU)})
    assert long > 6 * 3600
    assert notebook_timeout("03_grpo_smoke_test.ipynb", None, params)[0] == TIMEOUT_FLOOR_S  # the CPU run
    assert notebook_timeout("05_evaluation.ipynb", "NVIDIA A10G", params)[0] == TIMEOUT_FLOOR_S
    unknown, why = notebook_timeout("03_grpo_smoke_test.ipynb", "NVIDIA GeForce RTX 4090", params)
    assert unknown == seconds and "A10G" in why  # estimated as the reference GPU


def test_run_tutorial_gives_each_notebook_its_own_timeout(tmp_path, monkeypatch):
    """scripts/run_tutorial.py hands papermill notebook_timeout's seconds for the visible GPU (execution faked)."""
    spec = importlib.util.spec_from_file_location("run_tutorial", ROOT / "scripts" / "run_tutorial.py")
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    given = {}

    def fake_execute(nb, run_dir, kernel, timeout):
        given[Path(nb).name] = timeout
        return NotebookRun(Path(nb).stem, "ok", 0.0, Path(run_dir) / Path(nb).name, {"headline": "-"})

    monkeypatch.setattr(runner, "execute_notebook", fake_execute)
    monkeypatch.setattr(runner, "visible_gpu_name", lambda: "NVIDIA A10G")
    monkeypatch.setattr(sys, "argv", ["run_tutorial.py", "--run-dir", str(tmp_path), "--only", "03", "05"])
    assert runner.main() == 0
    params = {"RUN_DIR": str(tmp_path.resolve())}
    assert given == {"03_grpo_smoke_test.ipynb": notebook_timeout("03_grpo_smoke_test.ipynb", "NVIDIA A10G", params)[0],
                     "05_evaluation.ipynb": TIMEOUT_FLOOR_S}
    assert given["03_grpo_smoke_test.ipynb"] != TIMEOUT_FLOOR_S
