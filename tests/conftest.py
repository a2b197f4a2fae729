"""Shared fixtures: the bundled sample prepared for the tiny model, and the warm-started tiny policy."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"


SMOKE_PROBLEMS = 8  # the CPU smoke run's scale: the easy problems with the shortest solutions


@pytest.fixture(scope="session")
def easy_python_rows(tmp_path_factory):
    """verl rows of the smoke run's easy problems with Python prompts, and a parquet file holding them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from codefu_helpers.data import VERL_SCHEMA, FilterConfig, load_problems, prepare_dataset, read_verl_parquet
    from codefu_helpers.sft import smallest_problems

    out = tmp_path_factory.mktemp("easy_python")
    report = prepare_dataset(SAMPLE, out, FilterConfig(language="python", keep_tiers=("easy",), test_fraction=0.0))
    rows = smallest_problems(read_verl_parquet(report.files["train"]), load_problems(SAMPLE), SMOKE_PROBLEMS)
    pq.write_table(pa.Table.from_pylist(rows, schema=VERL_SCHEMA), out / "smoke.parquet")
    return rows, out / "smoke.parquet"


@pytest.fixture(scope="session")
def warm_model_dir():
    """The tiny Qwen2 model after the supervised warm start (cached across runs, see sft.warm_started_tiny_model)."""
    from codefu_helpers.sft import warm_started_tiny_model

    return warm_started_tiny_model(str(SAMPLE), max_problems=SMOKE_PROBLEMS)
