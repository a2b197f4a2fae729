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
