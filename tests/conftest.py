"""Shared fixtures: the bundled sample split as notebook 01 splits it (Python prompts), the CPU run's training
problems taken from its train split, and the tiny policy warm-started on exactly those problems."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"


SMOKE_PROBLEMS = 8  # the CPU smoke run's scale: the easy problems with the shortest solutions
TEST_FRACTION = 0.2  # notebook 01's default held-out share


@pytest.fixture(scope="session")
def python_split(tmp_path_factory):
    """{"train": path, "test": path}: data/sample filtered and split like notebook 01's defaults, Python prompts."""
    from codefu_helpers.data import FilterConfig, prepare_dataset

    out = tmp_path_factory.mktemp("python_split")
    report = prepare_dataset(SAMPLE, out, FilterConfig(language="python", test_fraction=TEST_FRACTION, seed=0))
    return {name: Path(path) for name, path in report.files.items()}


@pytest.fixture(scope="session")
def easy_python_rows(python_split):
    """verl rows of the smoke run's training problems (easy, shortest solutions, from the train split only), and a
    parquet file holding them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from codefu_helpers.config import DataConfig
    from codefu_helpers.data import VERL_SCHEMA, read_verl_parquet
    from codefu_helpers.trainer import select_training_rows

    selection = DataConfig(tiers=["easy"], max_problems=SMOKE_PROBLEMS, raw_path=str(SAMPLE))
    rows = select_training_rows(read_verl_parquet(python_split["train"]), selection)
    path = python_split["train"].parent / "smoke.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=VERL_SCHEMA), path)
    return rows, path


@pytest.fixture(scope="session")
def warm_model_dir(easy_python_rows):
    """The tiny Qwen2 model after the supervised warm start on those problems (cached, see sft.warm_started_model)."""
    from codefu_helpers.sft import warm_started_model

    rows, _ = easy_python_rows
    return warm_started_model("tiny://qwen2", rows, str(SAMPLE))
