"""Metrics of a training run: one console line per step, `metrics.jsonl`, and MLflow.

MLflow defaults to a local sqlite file in the run's output directory (`sqlite:///DIR/mlflow.db`, its artifacts in
DIR/mlartifacts; browse it with `mlflow ui --backend-store-uri sqlite:///DIR/mlflow.db`). Any tracking URI works,
including a SageMaker managed MLflow tracking server ARN
(`arn:aws:sagemaker:REGION:ACCOUNT:mlflow-tracking-server/NAME`), which needs the `sagemaker-mlflow` package. A
resumed run appends to the same MLflow run and rewrites `metrics.jsonl` from the resumed step on, so each step
appears once.

A few of each step's samples (response, verdicts, reward, advantage: `codefu_helpers.samples`) go to `samples.jsonl`
beside the metrics, resumed the same way, and to MLflow as one artifact per step, `samples/step_000012.jsonl` (a
redone step replaces its own).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from .samples import SAMPLES_FILE, append_samples, keep_steps_up_to, to_jsonl

ARTIFACTS_DIR = "mlartifacts"  # beside a local sqlite store's database: the runs' artifacts (samples/...)
CONSOLE_FIELDS = (("reward_mean", "reward", "{:.3f}"), ("pass_rate", "pass", "{:.2f}"),
                  ("response_length_mean", "len", "{:.0f}"), ("kl", "kl", "{:.4f}"),
                  ("judge_errors", "judge_err", "{:.0f}"), ("step_seconds", "", "{:.1f}s"))


def console_line(step: int, total: int, metrics: dict[str, float]) -> str:
    parts = [f"step {step}/{total}"]
    for key, label, fmt in CONSOLE_FIELDS:
        if key in metrics and metrics[key] is not None:
            value = fmt.format(metrics[key])
            parts.append(f"{label} {value}" if label else value)
    return " | ".join(parts)


class RunLogger:
    """Writes each step's metrics to the console, DIR/metrics.jsonl and MLflow (unless tracking_uri is "none"), and
    the step's sample records (`log_samples`) to DIR/samples.jsonl and MLflow."""

    def __init__(self, output_dir: str | Path, experiment: str = "codefu-grpo", tracking_uri: str | None = None,
                 run_name: str | None = None, params: dict[str, Any] | None = None, resume_from_step: int | None = None,
                 mlflow_run_id: str | None = None, console: bool = True, metadata: dict[str, Any] | None = None):
        """metadata: facts about the whole run (e.g. the judge's isolation tier), written into every metrics.jsonl
        row and set as MLflow tags."""
        self.output_dir = Path(output_dir)
        self.output_dir.mkdir(parents=True, exist_ok=True)
        self.metrics_path = self.output_dir / "metrics.jsonl"
        self.console = console
        self.metadata = dict(metadata or {})
        if resume_from_step is not None:
            self._truncate_after(resume_from_step)
        elif self.metrics_path.exists():
            self.metrics_path.unlink()
        keep_steps_up_to(self.output_dir, resume_from_step or 0)  # samples.jsonl: the same steps as metrics.jsonl
        self.mlflow = None
        self.run_id = None
        uri = tracking_uri or f"sqlite:///{(self.output_dir / 'mlflow.db').resolve()}"
        if uri != "none":
            self._start_mlflow(uri, experiment, run_name, params, mlflow_run_id)
            if self.metadata:
                self.mlflow.set_tags({k: str(v) for k, v in self.metadata.items()})

    def _start_mlflow(self, uri, experiment, run_name, params, run_id) -> None:
        if uri.startswith("arn:aws:sagemaker"):
            try:
                import sagemaker_mlflow  # noqa: F401  (registers the ARN tracking-URI scheme)
            except ImportError:
                raise RuntimeError(f"tracking_uri={uri!r} is a SageMaker managed MLflow server: "
                                   "pip install sagemaker-mlflow, or use a local URI") from None
        os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
        import mlflow

        set_experiment(uri, experiment)
        if run_id is not None and mlflow.tracking.MlflowClient().search_runs(
                [mlflow.get_experiment_by_name(experiment).experiment_id], f"attributes.run_id = '{run_id}'") == []:
            # the checkpoint's run is not in this store: a restarted SageMaker job's local database is new (the output
            # dir does not survive a restart, only the checkpoints do), so the run continues as a new MLflow run
            print(f"MLflow run {run_id} of the checkpoint is not in {uri}: continuing in a new run (tag resumed_from)",
                  flush=True)
            run = mlflow.start_run(run_name=run_name, tags={"resumed_from": run_id})
            run_id = None
        else:
            run = mlflow.start_run(run_id=run_id, run_name=None if run_id else run_name)
        self.mlflow, self.run_id = mlflow, run.info.run_id
        if params and not run_id:
            flat = _flatten(params)
            for start in range(0, len(flat), 100):  # MLflow takes at most 100 params per call
                mlflow.log_params(dict(list(flat.items())[start:start + 100]))

    def _truncate_after(self, step: int) -> None:
        if not self.metrics_path.exists():
            return
        kept = [line for line in self.metrics_path.read_text().splitlines()
                if line.strip() and json.loads(line)["step"] <= step]
        self.metrics_path.write_text("".join(line + "\n" for line in kept))

    def log(self, step: int, total_steps: int, metrics: dict[str, Any]) -> None:
        record = {"step": step, **{k: _plain(v) for k, v in metrics.items()}, **self.metadata}
        with self.metrics_path.open("a") as fh:
            fh.write(json.dumps(record) + "\n")
        if self.console:
            print(console_line(step, total_steps, record), flush=True)
        if self.mlflow is not None:
            numeric = {k: float(v) for k, v in record.items()
                       if k != "step" and isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}
            self.mlflow.log_metrics(numeric, step=step)

    def log_samples(self, step: int, records: list[dict]) -> None:
        """A step's sample records (`samples.step_records`): appended to DIR/samples.jsonl, and the MLflow artifact
        samples/step_NNNNNN.jsonl."""
        if not records:
            return
        append_samples(self.output_dir, records)
        if self.mlflow is not None:
            self.mlflow.log_text(to_jsonl(records), f"{Path(SAMPLES_FILE).stem}/step_{step:06d}.jsonl")

    def log_artifact(self, path: str | Path) -> None:
        if self.mlflow is not None:
            self.mlflow.log_artifact(str(path))

    def close(self, status: str = "FINISHED") -> None:
        if self.mlflow is not None:
            self.mlflow.end_run(status=status)
            self.mlflow = None


def set_experiment(uri: str, experiment: str) -> None:
    """Points MLflow at `uri` and `experiment`, creating it if needed. A new experiment in a local sqlite store keeps
    its artifacts beside the database (DIR/mlartifacts), not in MLflow's default ./mlruns of the working directory."""
    import mlflow

    mlflow.set_tracking_uri(uri)
    if uri.startswith("sqlite:///") and mlflow.get_experiment_by_name(experiment) is None:
        artifacts = Path(uri.removeprefix("sqlite:///")).parent / ARTIFACTS_DIR
        mlflow.create_experiment(experiment, artifact_location=artifacts.resolve().as_uri())
    mlflow.set_experiment(experiment)


def read_metrics(output_dir: str | Path) -> list[dict]:
    path = Path(output_dir) / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):  # torch / numpy scalars
        return value.item()
    return value


def _flatten(params: dict, prefix: str = "") -> dict[str, str]:
    flat = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = str(value)[:500]
    return flat
