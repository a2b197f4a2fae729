"""Executes the numbered notebooks with papermill: used by `make tutorial` and by the notebook tests.

Every notebook takes `RUN_DIR` (where it reads earlier stages' outputs and writes its own) and writes
`RUN_DIR/results/<notebook>.json`, whose `headline` is the one-line result the tutorial summary prints.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"
KERNEL = "codefu"


def numbered_notebooks() -> list[Path]:
    return sorted(p for p in NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))


@dataclass
class NotebookRun:
    notebook: str
    status: str            # "ok" or "failed"
    seconds: float
    executed: Path         # the executed copy, with outputs
    results: dict | None   # RUN_DIR/results/<notebook>.json, when the notebook got that far
    error: str | None = None


def execute_notebook(notebook: str | Path, run_dir: str | Path, parameters: dict | None = None,
                     kernel: str = KERNEL, timeout: int = 1800) -> NotebookRun:
    """Runs one notebook with papermill (cwd = notebooks/) and returns what happened; never raises on a cell error."""
    import papermill

    path = Path(notebook)
    if not path.is_absolute() and not path.exists():
        path = NOTEBOOK_DIR / path
    run_dir = Path(run_dir).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    executed = run_dir / path.name
    params = {"RUN_DIR": str(run_dir), **(parameters or {})}
    start = time.perf_counter()
    error = None
    try:
        papermill.execute_notebook(str(path), str(executed), parameters=params, kernel_name=kernel,
                                   cwd=str(NOTEBOOK_DIR), progress_bar=False, execution_timeout=timeout)
    except Exception as exc:  # papermill raises PapermillExecutionError with the failing cell's traceback
        error = f"{type(exc).__name__}: {exc}"
    seconds = time.perf_counter() - start
    results_path = run_dir / "results" / f"{path.stem}.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else None
    return NotebookRun(path.stem, "failed" if error else "ok", seconds, executed, results, error)


# The CPU tutorial's one story: notebook 01 writes RUN_DIR/data/{train,test}.parquet with these defaults, 03 trains
# on the train split, 05 evaluates on the test split. A notebook run alone prepares the split the same way.
DEFAULT_LANGUAGE = "python"   # the CPU run's prompts; the CodeFu-7B configs ask for C++
DEFAULT_TEST_FRACTION = 0.2   # held-out share of each tier
SPLIT_FILES = ("train", "test")


def split_paths(run_dir: str | Path) -> dict[str, Path]:
    """RUN_DIR/data/train.parquet and test.parquet, where notebook 01 writes them."""
    return {name: Path(run_dir) / "data" / f"{name}.parquet" for name in SPLIT_FILES}


def ensure_split(run_dir: str | Path, dataset: str | Path, language: str = DEFAULT_LANGUAGE,
                 test_fraction: float = DEFAULT_TEST_FRACTION, seed: int = 0) -> dict[str, Path]:
    """The train/test split notebook 01 wrote into RUN_DIR; when it is missing, prepares it the way 01 does by
    default (so 03 and 05 also run alone). Returns the two paths. An existing split is never rewritten."""
    paths = split_paths(run_dir)
    if all(p.exists() for p in paths.values()):
        return paths
    from .data import FilterConfig, prepare_dataset

    report = prepare_dataset(dataset, paths["train"].parent,
                             FilterConfig(language=language, test_fraction=test_fraction, seed=seed))
    print(f"notebook 01 has not run in {run_dir}: prepared its split with the same defaults\n{report.summary()}")
    return paths


def split_language(path: str | Path) -> str:
    """The language the prompts of a verl parquet ask for (extra_info.language)."""
    import pyarrow.parquet as pq

    languages = set(pq.read_table(path, columns=["extra_info"]).column("extra_info").combine_chunks()
                    .field("language").to_pylist())
    if len(languages) != 1:
        raise ValueError(f"{path} mixes prompt languages {sorted(map(str, languages))}: write it with one run of "
                         "codefu_helpers.data")
    return languages.pop()
