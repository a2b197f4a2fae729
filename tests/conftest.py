"""Shared fixtures: the bundled sample split as notebook 01 splits it (Python prompts), the CPU run's training
problems taken from its train split, and the tiny policy warm-started on exactly those problems."""

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"


def _threads_per_worker() -> int | None:
    """With N pytest-xdist workers, each worker's share of the cores, as OMP_NUM_THREADS for it and everything it
    starts (training CLIs, notebook kernels, Ray workers); None outside xdist or when OMP_NUM_THREADS is set. Two
    workers each running 2-thread torch on 2 cores stall: an OpenMP region waits for its thread that the other worker
    has the core of (in a trial, notebook 03's update took 8-24 s a step instead of 2)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    if workers < 2 or "OMP_NUM_THREADS" in os.environ:
        return None
    return max(1, len(os.sched_getaffinity(0)) // workers)


_THREADS = _threads_per_worker()
if _THREADS is not None:
    os.environ["OMP_NUM_THREADS"] = str(_THREADS)
    if "torch" in sys.modules:  # imported before this file: its pool may be sized already
        sys.modules["torch"].set_num_threads(_THREADS)


# `make test` runs the suite in two pytest-xdist workers that take whole files (--dist loadfile), in collection order
# (--no-loadscope-reorder). The files that take minutes go first, longest first, so that neither worker is still
# inside a long file when the other has run out of work: the order below is by their durations in a CI run.
LONGEST_FILES = ("test_notebooks.py", "test_launch_simulate.py", "test_job_stack.py", "test_distributed.py",
                 "test_vllm_trainer.py", "test_precision.py", "test_evaluate_smollm2.py", "test_ppo.py", "test_train_cli.py",
                 "test_benchmarks.py", "test_launch_requirements.py", "test_sandbox_escape.py", "test_learning.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: a file's own order is kept


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
