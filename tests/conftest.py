"""Shared fixtures: the bundled sample prepared for the tiny model, and the warm-started tiny policy."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"


@pytest.fixture(scope="session")
def easy_python_rows(tmp_path_factory):
    """verl rows of the easy tier with Python prompts (what the CPU smoke run trains on)."""
    from codefu_helpers.data import DataConfig, prepare_dataset, read_verl_parquet

    out = tmp_path_factory.mktemp("easy_python")
    report = prepare_dataset(SAMPLE, out, DataConfig(language="python", keep_tiers=("easy",), test_fraction=0.0))
    return read_verl_parquet(report.files["train"]), Path(report.files["train"])


@pytest.fixture(scope="session")
def warm_model_dir():
    """The tiny Qwen2 model after the supervised warm start (cached across runs, see sft.warm_started_tiny_model)."""
    from codefu_helpers.sft import warm_started_tiny_model

    return warm_started_tiny_model(str(SAMPLE))
