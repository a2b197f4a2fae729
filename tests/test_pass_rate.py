"""`filter_by_pass_rate` with the real judge: a scripted engine answers each problem with a known mix of reference
solutions and wrong programs, so every pass rate is known before the run; then the CLI once with the tiny model.

Judge errors come from real judge paths only: a problem whose memory limit the judge refuses (every sample a
JUDGE_ERROR, as for any problem the judge cannot run), and a closed judge (every sample of every problem)."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from codefu_helpers.data import VERL_SCHEMA, load_problems, read_verl_parquet, reference_solutions
from codefu_helpers.evaluate import fenced
from codefu_helpers.pass_rate import DOCTOR, check_judge, filter_by_pass_rate, main, pass_rate_table
from codefu_helpers.rollout import Group, Sample
from codefu_helpers.sandbox import Judge

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"
N = 4
BAND = (0.25, 0.75)
WRONG = ("```python\nprint(-1)\n```", "I would sort the numbers first.")  # a wrong answer (WA) and no code at all
# solved samples out of N per problem, in dataset order; None: the judge cannot run the problem
SOLVED = [4, 3, 2, 1, 0, None]
EXPECTED = ["too easy", "kept", "kept", "kept", "too hard", "undetermined"]


class ScriptedEngine:
    """A rollout engine that answers prompt i with answers[i] (exactly n texts), in order."""

    def __init__(self, answers: list[list[str]]):
        self.answers = answers

    def generate(self, prompts, n, params, on_sample=None):
        assert len(prompts) == len(self.answers) and all(len(a) == n for a in self.answers)
        groups = []
        for index, texts in enumerate(self.answers):
            group = Group(index)
            for text in texts:
                sample = Sample(prompt_ids=[], response_ids=[0] * len(text), text=text, finish_reason="stop")
                group.samples.append(sample)
                if on_sample is not None:
                    on_sample(index, sample)
            groups.append(group)
        return groups


@pytest.fixture(scope="module")
def judge():
    with Judge() as j:
        yield j


@pytest.fixture(scope="module")
def dataset(easy_python_rows, tmp_path_factory):
    """(rows, path, answers): six easy problems as a train.parquet; the last one's memory limit is below what the
    judge accepts, so its every sample is a judge error."""
    rows = [dict(row) for row in easy_python_rows[0][:len(SOLVED)]]
    rows[-1]["reward_model"] = {**rows[-1]["reward_model"], "ground_truth": {
        **rows[-1]["reward_model"]["ground_truth"], "memory_limit_bytes": 1 << 20}}
    path = tmp_path_factory.mktemp("pass_rate_input") / "train.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=VERL_SCHEMA), path)
    gold = {row["name"]: reference_solutions(row, "python") for row in load_problems(SAMPLE)}
    answers = []
    for row, solved in zip(rows, SOLVED):
        (language, source), *_ = gold[row["extra_info"]["name"]]
        right = fenced(language, source)
        if solved is None:  # programs, so that each reaches the judge (a text without code is NO_CODE, not judged)
            answers.append([WRONG[0]] * N)
        else:
            answers.append([right] * solved + [WRONG[i % 2] for i in range(N - solved)])
    return rows, path, answers


@pytest.fixture(scope="module")
def run(dataset, judge, tmp_path_factory):
    rows, path, answers = dataset
    out = tmp_path_factory.mktemp("pass_rate_output")
    report = filter_by_pass_rate(path, out, n=N, keep=BAND, engine=ScriptedEngine(answers), judge=judge,
                                 progress=False)
    return report, out


def test_decisions_follow_the_band_with_both_ends_inclusive(run, dataset):
    report, _ = run
    table = report.table
    assert table["name"].tolist() == [row["extra_info"]["name"] for row in dataset[0]]
    assert table["decision"].tolist() == EXPECTED, table
    assert table["solved"].tolist() == [s or 0 for s in SOLVED]
    assert table["n_valid"].tolist() == [N] * 5 + [0] and table["judge_errors"].tolist() == [0] * 5 + [N]
    assert table["pass_rate"].iloc[:5].tolist() == [1.0, 0.75, 0.5, 0.25, 0.0] and pd.isna(table["pass_rate"].iloc[5])
    assert report.counts == {"kept": 3, "too easy": 1, "too hard": 1, "undetermined": 1}
    assert report.summary["undetermined_problems"] == [dataset[0][-1]["extra_info"]["name"]]
    # the same samples under a narrower band: the boundary problems (0.75, 0.25) leave it
    narrower = pass_rate_table(report.evaluation.samples, _problems(dataset), (0.3, 0.7))
    assert narrower["decision"].tolist() == ["too easy", "too easy", "kept", "too hard", "too hard", "undetermined"]
    assert "undetermined 1" in report.describe() and "UNDETERMINED" in report.describe()


def _problems(dataset):
    from codefu_helpers.eval_datasets import problem_from_verl_row

    return [problem_from_verl_row(row) for row in dataset[0]]


def test_the_kept_split_is_the_input_rows_of_the_kept_problems(run, dataset):
    report, out = run
    rows, path, _ = dataset
    written = pq.read_table(out / path.name)
    assert written.schema.equals(pq.read_schema(path)) and written.schema.equals(VERL_SCHEMA)
    expected = [row for row, decision in zip(read_verl_parquet(path), EXPECTED) if decision in ("kept", "undetermined")]
    assert written.to_pylist() == expected
    assert report.files["kept"] == str(out / path.name)


def test_pass_rates_csv_is_computed_from_the_saved_samples(run):
    report, out = run
    csv = pd.read_csv(out / "pass_rates.csv")
    samples = pd.read_parquet(out / "evaluation" / "samples.parquet")
    assert len(samples) == N * len(SOLVED)
    for row in csv.itertuples():
        mine = samples[samples["name"] == row.name]
        valid = mine[~mine["judge_error"]]
        assert row.n_valid == len(valid) and row.solved == int(valid["solved"].sum())
        assert row.judge_errors == int(mine["judge_error"].sum())
        if len(valid):
            assert row.pass_rate == pytest.approx(valid["solved"].mean())
        else:
            assert pd.isna(row.pass_rate)
    assert set(samples.loc[samples["judge_error"], "verdict"]) == {"JUDGE_ERROR"}
    assert "memory_limit_bytes" in samples.loc[samples["judge_error"], "judge_message"].iloc[0]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["decisions"] == csv["decision"].value_counts().reindex(summary["decisions"]).fillna(0).astype(
        int).to_dict()
    assert summary["band"] == list(BAND) and summary["n"] == N and summary["judge_errors"] == N
    assert summary["sampling"]["temperature"] == 1.0 and summary["sampling"]["top_p"] == 1.0  # the training sampler


def test_undetermined_counting_and_when_the_judge_counts_as_failing(run, dataset):
    """On the run's own samples with more of them marked as judge errors: one more undetermined problem (3 of 6 is
    exactly half: kept, no error), then a fourth (more than half: the judge is failing)."""
    report, _ = run
    problems = _problems(dataset)
    samples = report.evaluation.samples.copy()

    def broken(*names):
        frame = samples.copy()
        hit = frame["name"].isin(names)
        frame.loc[hit, "judge_error"], frame.loc[hit, "solved"], frame.loc[hit, "verdict"] = True, False, "JUDGE_ERROR"
        return pass_rate_table(frame, problems, BAND)

    half = broken(problems[0].name, problems[4].name)
    assert half["decision"].tolist() == ["undetermined", "kept", "kept", "kept", "undetermined", "undetermined"]
    check_judge(half)  # exactly half: not more than half
    most = broken(problems[0].name, problems[1].name, problems[4].name)
    with pytest.raises(RuntimeError, match="4 of 6 problems have no valid sample.*judge is failing") as error:
        check_judge(most, "x/samples.parquet")
    assert DOCTOR in str(error.value) and "x/samples.parquet" in str(error.value)


def test_a_closed_judge_stops_the_run_before_a_split_is_written(dataset, tmp_path):
    _, path, _ = dataset
    closed = Judge(workers=1)
    closed.close()
    programs = ScriptedEngine([[WRONG[0]] * N] * len(SOLVED))  # code only: a text without code is never judged
    (tmp_path / path.name).write_bytes(path.read_bytes())  # an earlier run's split: not left looking current
    with pytest.raises(RuntimeError, match=f"6 of 6 problems.*judge is failing.*{DOCTOR}"):
        filter_by_pass_rate(path, tmp_path, n=N, keep=BAND, engine=programs, judge=closed, progress=False)
    samples = pd.read_parquet(tmp_path / "evaluation" / "samples.parquet")  # kept for the diagnosis
    assert set(samples["verdict"]) == {"JUDGE_ERROR"}
    assert samples["judge_message"].str.contains("this Judge is closed").sum() == N * 5  # the sixth: its memory limit
    assert not (tmp_path / path.name).exists() and not (tmp_path / "pass_rates.csv").exists()


@pytest.fixture
def no_model_loads(monkeypatch):
    import codefu_helpers.evaluate

    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded before the inputs were checked")

    monkeypatch.setattr(codefu_helpers.evaluate, "load_model", refuse)


@pytest.mark.parametrize("change, message", [
    ({"keep": (0.9, 0.1)}, r"keep=\(0.9, 0.1\): need 0 <= lo <= hi <= 1"),
    ({"keep": (-0.1, 0.5)}, r"keep=\(-0.1, 0.5\)"),
    ({"keep": (0.1, 1.5)}, r"keep=\(0.1, 1.5\)"),
    ({"n": 0}, "n=0 must be an int >= 1"),
    ({"dataset": "missing/train.parquet"}, "missing/train.parquet does not exist"),
    ({"dataset": "plain.parquet"}, "is not a verl parquet: it lacks columns"),
    ({"output_dir": "."}, "would overwrite the input"),
])
def test_bad_inputs_are_refused_before_any_model_loads(change, message, dataset, tmp_path, monkeypatch,
                                                       no_model_loads):
    _, path, _ = dataset
    monkeypatch.chdir(path.parent)
    pq.write_table(pa.table({"name": ["x"]}), path.parent / "plain.parquet")
    args = {"dataset": path, "output_dir": tmp_path, "n": N, "keep": BAND, **change}
    with pytest.raises((ValueError, FileNotFoundError), match=message):
        filter_by_pass_rate(args.pop("dataset"), args.pop("output_dir"), model="tiny://qwen2", **args)


def test_the_cli_refuses_a_reversed_band_naming_it(dataset, tmp_path, capsys, no_model_loads):
    _, path, _ = dataset
    with pytest.raises(SystemExit) as exit_:
        main(["--dataset", str(path), "--model", "tiny://qwen2", "--keep", "0.9", "0.1", "--output-dir",
              str(tmp_path)])
    assert exit_.value.code == 2 and "keep=(0.9, 0.1)" in capsys.readouterr().err


def test_cli_end_to_end_with_the_tiny_model(dataset, tmp_path):
    _, path, _ = dataset
    run = subprocess.run([sys.executable, "-m", "codefu_helpers.data", "filter-by-pass-rate", "--dataset", str(path),
                          "--model", "tiny://qwen2", "--n", "2", "--keep", "0", "0.5", "--max-problems", "2",
                          "--max-new-tokens", "24", "--output-dir", str(tmp_path), "--no-progress"],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    csv = pd.read_csv(tmp_path / "pass_rates.csv")
    assert len(csv) == 2 and (csv["n_valid"] + csv["judge_errors"] == 2).all()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["model"] == "tiny://qwen2" and summary["problems"] == 2 and summary["band"] == [0.0, 0.5]
    assert summary["sampling"]["temperature"] == 1.0 and summary["sampling"]["max_new_tokens"] == 24
    kept = pq.read_table(tmp_path / "train.parquet")
    assert kept.num_rows == summary["decisions"]["kept"] + summary["decisions"]["undetermined"]
    for decision, count in summary["decisions"].items():
        assert f"{decision} {count}" in run.stdout
    assert f"wrote kept: {tmp_path / 'train.parquet'}" in run.stdout
