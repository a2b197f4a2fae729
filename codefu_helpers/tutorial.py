"""Executes the numbered notebooks with papermill: used by `make tutorial` and by the notebook tests.

Every notebook takes `RUN_DIR` (where it reads earlier stages' outputs and writes its own) and writes
`RUN_DIR/results/<notebook>.json`, whose `headline` is the one-line result the tutorial summary prints.

A notebook's path parameters are relative to its working directory (Jupyter's and `execute_notebook`'s is
notebooks/): `output_path(RUN_DIR)` is that folder's path, `input_path(CONFIG)` and `dataset_ref(DATASET)` fall back
to the inputs that ship with the package (resources.SHIPPED), so a cell copied into another project finds
"../configs/cpu_learn.yaml" and "../data/sample" too.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

from .resources import resolve_input, resolve_output, shipped_path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"
KERNEL = "codefu"


def input_path(value: str | Path, cwd: str | Path | None = None) -> Path:
    """A notebook's input path parameter (CONFIG, SOURCES): absolute as given; relative: the working directory's
    file (`cwd`, default the current one: the notebook's folder under Jupyter), else the shipped file of that name,
    as resources.resolve_input. FileNotFoundError naming the value when neither exists."""
    return resolve_input(value, cwd)


def output_path(value: str | Path, cwd: str | Path | None = None) -> Path:
    """A notebook's output path parameter (RUN_DIR): absolute as given, else relative to the working directory
    (`cwd`, default the current one), as resources.resolve_output."""
    return resolve_output(value, cwd)


def other_clone(cwd: str | Path | None = None) -> str | None:
    """A boxed message when the kernel runs in a clone of this repository other than the one its `codefu_helpers`
    comes from (the `codefu` kernel is one per user, and runs the .venv of the clone that registered it last:
    a second clone would run the first one's code, and read the first one's configs where it falls back on the
    shipped ones, as CONFIG = "auto" does), else None. `cwd` (default: the working directory, which Jupyter sets to
    the notebook's folder) is looked up to the clone that holds it; outside any clone (cells copied into another
    project) there is nothing to compare."""
    here = Path(cwd or Path.cwd()).resolve()
    clone = next((d for d in (here, *here.parents)
                  if (d / "codefu_helpers" / "__init__.py").is_file() and (d / "notebooks").is_dir()), None)
    if clone is None or clone == ROOT:
        return None
    lines = [f"This notebook is in {clone},", f"but the kernel runs codefu_helpers from {ROOT}:",
             "its code and the configs it ships (CONFIG = \"auto\"). Register this clone's kernel",
             f"(cd {clone} && make kernel) and pick it again, or open the notebooks of {ROOT}."]
    width = max(len(line) for line in lines)
    return "\n".join(["+" + "-" * (width + 2) + "+", *(f"| {line.ljust(width)} |" for line in lines),
                      "+" + "-" * (width + 2) + "+"])


def warn_if_other_clone() -> bool:
    """Prints other_clone's box (each notebook's first cell); True when it did."""
    box = other_clone()
    if box:
        print(box, flush=True)
    return box is not None


def dataset_ref(value: str, cwd: str | Path | None = None) -> str:
    """A DATASET parameter: a local folder or file by `input_path`'s rules (the working directory's, else the
    shipped one: "../data/sample" finds the bundled sample from any project) when one exists, otherwise the value
    unchanged: a Hugging Face dataset id such as "deepmind/code_contests"."""
    try:
        return str(input_path(value, cwd))
    except FileNotFoundError:
        return value


# Notebook 03's CONFIG = "auto": the CPU run that learns in minutes, or a smoke run of a pretrained coder model on one
# GPU (12 steps, within 15 minutes on an A10G by step_time's estimate; the 100-step single_gpu_qwen2.5_coder_0.5b.yaml
# is for the command line).
SMOKE_CONFIGS = {"cpu": "configs/cpu_learn.yaml", "cuda": "configs/single_gpu_smoke.yaml"}
# Notebook 03's EVAL_SAMPLES = 0: samples per training problem for its before/after pass rate. 64 on a CPU (a gain's
# standard error about 0.03); 32 on a GPU, where the two evaluations of 8 problems take about a minute of an A10G's
# 15 (step_time's estimate) instead of the ~20 minutes 49 problems x 64 samples of 2048 tokens would.
SMOKE_EVAL_SAMPLES = {"cpu": 64, "cuda": 32}
SMOKE_NOTEBOOK = "03_grpo_smoke_test.ipynb"


def smoke_config(config: str, device: str, *, train_path: str | Path, dataset: str, output_dir: str | Path,
                 seed: int = 0, overrides: dict | None = None, cwd: str | Path | None = None):
    """Notebook 03's experiment: (config file, validated ExperimentConfig). The file is `config` itself (a YAML
    path, `input_path` rules from `cwd`) or, for "auto", the shipped one for `device` (SMOKE_CONFIGS: the CPU config
    that learns in minutes, or the single-GPU config of a pretrained coder model). On top of it: this device,
    notebook 01's train split, no validation during training (notebook 05 evaluates on the held-out problems), the
    seed, a fresh run (no resume), then `overrides` (dotted keys: "trainer.total_steps", "algorithm.adv_estimator",
    "model.lora_rank", "model.path", ...), each checked by the config like a YAML key."""
    from .config import ExperimentConfig

    if config == "auto":
        if device not in SMOKE_CONFIGS:
            raise ValueError(f"CONFIG='auto' knows devices {sorted(SMOKE_CONFIGS)}, not {device!r}: name a config file")
        path = shipped_path(SMOKE_CONFIGS[device])
    else:
        path = input_path(config, cwd)
    chosen = {"model.device": device, "data.train_path": str(train_path), "data.raw_path": str(dataset),
              "data.val_path": None, "trainer.test_freq": 0, "trainer.seed": seed,
              "trainer.output_dir": str(output_dir), "checkpoint.resume": False, **(overrides or {})}
    return path, ExperimentConfig.from_yaml(path).with_overrides(chosen).validate()


def smoke_eval_samples(eval_samples: int, device: str) -> int:
    """Notebook 03's EVAL_SAMPLES: as given, or for 0 the device's default (SMOKE_EVAL_SAMPLES)."""
    return eval_samples or SMOKE_EVAL_SAMPLES[device]


def notebook_parameters(notebook: str | Path, overrides: dict | None = None) -> dict:
    """The values of a notebook's `parameters` cell (literals, one per line), with `overrides` on top: what the
    notebook runs with when papermill injects them, read without running anything."""
    import ast

    import nbformat

    path = Path(notebook) if Path(notebook).is_absolute() else NOTEBOOK_DIR / notebook
    (cell,) = [c for c in nbformat.read(path, as_version=4).cells if "parameters" in c.metadata.get("tags", [])]
    values = {node.targets[0].id: ast.literal_eval(node.value) for node in ast.parse(cell.source).body}
    unknown = sorted(set(overrides or {}) - set(values))
    if unknown:
        raise ValueError(f"{path.name} has no parameters {unknown}: it takes {sorted(values)}")
    return {**values, **(overrides or {})}


def render_smoke(device: str, parameters: dict | None = None, cwd: str | Path = NOTEBOOK_DIR):
    """Notebook 03's experiment on `device` with its parameters cell (and papermill's `parameters` on top), made the
    way its config cell makes it, without running it: (config file, ExperimentConfig, eval samples per problem).
    Relative paths start at `cwd`, the notebook's working directory (notebooks/, as for `execute_notebook`). The
    train split is looked for in RUN_DIR/data, where notebook 01 writes it."""
    p = notebook_parameters(SMOKE_NOTEBOOK, parameters)
    run_dir = output_path(p["RUN_DIR"], cwd)
    path, cfg = smoke_config(p["CONFIG"], device, train_path=split_paths(run_dir)["train"],
                             dataset=dataset_ref(p["DATASET"], cwd), output_dir=run_dir / "grpo", seed=p["SEED"],
                             overrides=p["OVERRIDES"], cwd=cwd)
    return path, cfg, smoke_eval_samples(p["EVAL_SAMPLES"], device)


def training_problems_bound(cfg) -> int:
    """How many problems notebook 03 trains (and evaluates) on, before reading them: data.max_problems, else the
    rows of data.train_path (or of a local data.raw_path) that data.tiers keeps."""
    from .data import load_problems, read_verl_parquet

    if cfg.data.max_problems:
        return cfg.data.max_problems
    if Path(cfg.data.train_path).exists():
        tiers = [(r.get("extra_info") or {}).get("tier") for r in read_verl_parquet(cfg.data.train_path)]
    elif cfg.data.raw_path and Path(cfg.data.raw_path).exists():
        tiers = [getattr(p, "tier", None) for p in load_problems(cfg.data.raw_path)]
    else:
        raise ValueError(f"cannot count the training problems: data.train_path={cfg.data.train_path!r} and "
                         f"data.raw_path={cfg.data.raw_path!r} are not here; set data.max_problems")
    return sum(1 for tier in tiers if cfg.data.tiers is None or tier is None or tier in cfg.data.tiers)


ESTIMATE_GPU = "A10G"  # what a GPU without figures in step_time.GPUS is estimated as


def smoke_estimate(cfg, gpu_name: str, eval_samples: int, evaluations: int = 2):
    """step_time's estimate (a RunTime) of notebook 03's run on `gpu_name` (torch's device name or a GPUS key): its
    start-up, its steps and its evaluations of eval_samples per training problem (before and after training)."""
    from dataclasses import replace

    from .step_time import estimate_run, gpu_spec

    try:
        gpu = gpu_spec(gpu_name)
    except ValueError:
        gpu = replace(gpu_spec(ESTIMATE_GPU), source=f"{gpu_name} has no figures here: estimated as an {ESTIMATE_GPU}")
    return estimate_run(cfg, gpu, training_problems_bound(cfg), eval_samples, evaluations)


# `make tutorial`'s papermill timeout per cell: at least the floor (what every notebook got before), and for notebook
# 03 on a GPU this many times step_time's estimate of its whole run (the estimate is first-order: see its ASSUMED).
TIMEOUT_FLOOR_S = 1800
TIMEOUT_SAFETY = 3.0


def notebook_timeout(notebook: str | Path, gpu_name: str | None, parameters: dict | None = None) -> tuple[int, str]:
    """(seconds, why) for papermill's per-cell timeout of `notebook` with these parameters, on a machine whose GPU is
    `gpu_name` (None: a CPU run, within the floor). Notebook 03 on a GPU: TIMEOUT_SAFETY x its estimated run, at
    least TIMEOUT_FLOOR_S; the other notebooks have no training config to estimate and get the floor."""
    if Path(notebook).name == SMOKE_NOTEBOOK and gpu_name:
        _, cfg, eval_samples = render_smoke("cuda", parameters)
        run = smoke_estimate(cfg, gpu_name, eval_samples)
        seconds = max(TIMEOUT_FLOOR_S, math.ceil(TIMEOUT_SAFETY * run.total_s))
        return seconds, (f"{TIMEOUT_SAFETY:g} x the step-time estimate of its run on {run.gpu.name} "
                         f"({run.total_s / 60:.1f} min), at least {TIMEOUT_FLOOR_S} s")
    return TIMEOUT_FLOOR_S, "the floor" + (" (no GPU)" if not gpu_name else "")


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
                     kernel: str = KERNEL, timeout: int = 1800, cwd: str | Path = NOTEBOOK_DIR) -> NotebookRun:
    """Runs one notebook with papermill (in `cwd`, by default notebooks/ as Jupyter would) and returns what
    happened; never raises on a cell error."""
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
                                   cwd=str(cwd), progress_bar=False, execution_timeout=timeout)
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
