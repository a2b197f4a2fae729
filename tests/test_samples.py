"""A step's samples in the run's record: which are chosen, what a record says about each, samples.jsonl written and
read back, resumed like metrics.jsonl, and the MLflow artifact per step."""

import json

import pytest
import torch

from codefu_helpers.config import ExperimentConfig
from codefu_helpers.reward import Scored
from codefu_helpers.rollout import Sample
from codefu_helpers.samples import (SAMPLES_FILE, choose_samples, read_samples, samples_table, step_records)
from codefu_helpers.tracking import RunLogger, read_metrics


def _row(name: str) -> dict:
    return {"prompt": [{"role": "user", "content": name}], "reward_model": {"ground_truth": {"name": name}},
            "extra_info": {"name": name}}


def _step(advantages=None) -> dict:
    """Two problems, three samples each (listed out of group order, as samples arrive), the last one truncated and
    one judge failure."""
    group_ids = [0, 1, 0, 1, 0, 1]
    lengths = [3, 5, 4, 2, 6, 8]
    samples = [Sample([1, 2], list(range(10, 10 + n)), f"response {i}\n```python\nprint({i})\n```",
                      "length" if n == 8 else "stop") for i, n in enumerate(lengths)]
    details = {"verdict": "WA", "verdicts": "OK,WA", "passed": 1, "total": 2, "judge_error_message": ""}
    results = [Scored(1.0, True, False, "accepted", {**details, "verdict": "OK", "verdicts": "OK,OK", "passed": 2}),
               Scored(0.5, False, False, "failed", details),
               Scored(-1.0, False, False, "no_code", {"verdict": "", "verdicts": "", "passed": 0, "total": 2}),
               Scored(0.0, False, True, "judge_error", {"error": "RuntimeError: sandbox went away"}),
               Scored(0.5, False, False, "failed", details),
               Scored(0.0, False, False, "time_limit", {**details, "verdict": "TLE", "verdicts": "OK,TLE"})]
    keep = [0.0 if r.judge_error else 1.0 for r in results]
    return {"rows": [_row("A. First"), _row("B. Second")], "samples": samples, "group_ids": group_ids,
            "results": results, "keep": keep, "advantages": advantages}


def test_the_chosen_samples_go_round_robin_over_the_groups():
    groups = [0, 1, 0, 1, 0, 1, 2]
    assert choose_samples(groups, 3) == [0, 1, 6]  # the first sample of each group
    assert choose_samples(groups, 4) == [0, 1, 2, 6]  # then the second of the first group
    assert choose_samples(groups, 0) == [] and choose_samples([], 5) == []
    assert choose_samples(groups, -1) == choose_samples(groups, 99) == list(range(7))


def test_a_record_says_what_the_step_did_with_its_sample():
    advantages = torch.tensor([0.7, 0.0, -1.1, 0.0, 0.4, -0.2])
    step = _step(advantages)
    records = step_records(5, step, limit=-1)
    assert [r["index"] for r in records] == list(range(6)) and {r["step"] for r in records} == {5}
    assert [r["problem"] for r in records] == ["A. First", "B. Second"] * 3
    assert [(r["group"], r["sample"]) for r in records] == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]
    for r, sample, result, keep, adv in zip(records, step["samples"], step["results"], step["keep"], advantages):
        assert r["response"] == sample.text and r["response_length"] == len(sample.response_ids)
        assert r["reward"] == result.score and r["status"] == result.status and r["passed"] == result.passed
        assert r["judge_error"] == result.judge_error and r["kept"] == bool(keep)
        assert r["advantage"] == pytest.approx(float(adv))
    assert [r["truncated"] for r in records] == [False] * 5 + [True]
    assert records[0]["test_verdicts"] == ["OK", "OK"] and records[5]["test_verdicts"] == ["OK", "TLE"]
    assert records[2]["test_verdicts"] == [] and records[2]["verdict"] is None  # no code: no test ran
    assert (records[1]["passed_tests"], records[1]["total_tests"]) == (1, 2)
    assert records[3]["judge_message"] == "RuntimeError: sandbox went away" and not records[3]["kept"]
    # per-token advantages (gae, reinforce_plus_plus): the mean over the sample's own response tokens
    tokens = torch.arange(6 * 8, dtype=torch.float32).reshape(6, 8)
    per_token = step_records(5, _step(tokens), limit=-1)
    assert [r["advantage"] for r in per_token] == pytest.approx(
        [float(tokens[i, :n].mean()) for i, n in enumerate([3, 5, 4, 2, 6, 8])])
    assert all(r["advantage"] is None for r in step_records(5, _step(None), limit=-1))  # no update this step


def test_samples_jsonl_reads_back_what_was_written_and_resumes_like_metrics_jsonl(tmp_path):
    step = _step(torch.zeros(6))
    logger = RunLogger(tmp_path, tracking_uri="none", console=False)
    written = {}
    for n in (1, 2, 3):
        written[n] = step_records(n, step, limit=3)
        logger.log(n, 3, {"reward_mean": 0.1 * n})
        logger.log_samples(n, written[n])
    assert read_samples(tmp_path) == written[1] + written[2] + written[3]
    assert read_samples(tmp_path, step=2) == written[2] and len(written[2]) == 3
    lines = (tmp_path / SAMPLES_FILE).read_text().splitlines()
    assert [json.loads(line) for line in lines] == read_samples(tmp_path)  # one JSON object per line
    # a run resumed from step 1's checkpoint redoes steps 2 and 3: each step stays in the file once
    resumed = RunLogger(tmp_path, tracking_uri="none", console=False, resume_from_step=1)
    assert read_samples(tmp_path) == written[1] and [m["step"] for m in read_metrics(tmp_path)] == [1]
    for n in (2, 3):
        resumed.log(n, 3, {"reward_mean": 0.1 * n})
        resumed.log_samples(n, written[n])
    assert read_samples(tmp_path) == written[1] + written[2] + written[3]
    RunLogger(tmp_path, tracking_uri="none", console=False)  # a fresh run in the same folder starts both files anew
    assert read_samples(tmp_path) == [] and not (tmp_path / SAMPLES_FILE).exists()


def test_the_table_shows_one_step_with_short_responses(tmp_path):
    logger = RunLogger(tmp_path, tracking_uri="none", console=False)
    step = _step(torch.zeros(6))
    step["samples"][0].text = "x" * 500
    for n in (1, 2):
        logger.log_samples(n, step_records(n, step, limit=4))
    last, first = samples_table(tmp_path), samples_table(tmp_path, step=1, width=40)
    assert set(last["step"]) == {2} and len(last) == 4 and set(first["step"]) == {1}
    assert len(first["response"][0]) == 40 and first["response"][0].startswith("xxx")
    assert list(last.columns)[:3] == ["step", "problem", "group"] and "advantage" in last.columns


@pytest.mark.slow  # MLflow creates its sqlite schema: ~10 s
def test_each_step_is_an_mlflow_artifact_of_the_run(tmp_path, monkeypatch):
    import mlflow

    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")  # MLflow's default artifact root would be ./mlruns here
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    logger = RunLogger(tmp_path, experiment="samples-test", tracking_uri=uri, console=False)
    step = _step(torch.zeros(6))
    for n in (1, 2):
        logger.log_samples(n, step_records(n, step, limit=2))
    logger.close()
    client = mlflow.tracking.MlflowClient(tracking_uri=uri)
    assert sorted(a.path for a in client.list_artifacts(logger.run_id, "samples")) == \
        ["samples/step_000001.jsonl", "samples/step_000002.jsonl"]
    local = client.download_artifacts(logger.run_id, "samples/step_000002.jsonl", str(tmp_path / "down"))
    with open(local) as fh:
        assert [json.loads(line) for line in fh] == read_samples(tmp_path, step=2)
    # a local store keeps its artifacts beside its database, not in the working directory
    assert len(list((tmp_path / "mlartifacts").rglob("step_000002.jsonl"))) == 1
    assert not any((tmp_path / "cwd").iterdir())


def test_samples_logged_is_validated():
    cfg = ExperimentConfig()
    assert cfg.tracking.samples_logged == 8
    cfg.tracking.samples_logged = -2
    with pytest.raises(ValueError, match=r"tracking.samples_logged=-2 must be >= 0"):
        cfg.validate()
    cfg.tracking.samples_logged = -1  # all
    cfg.validate()
