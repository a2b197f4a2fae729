"""Evaluation maths and loaders (unit tier, seconds): the pass@k and n@k estimators against closed forms and brute
force, bootstrap intervals, summaries that exclude judge errors, paired comparisons, and the USACO /
LiveCodeBench / HumanEval formats read from small files written here."""

import base64
import itertools
import json
import math
import pickle
import zlib
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_launch import aws_on_moto, moto_endpoint  # noqa: F401 - the local moto S3 fixtures

from codefu_helpers.eval_datasets import (EvalProblem, decode_test_cases, load_benchmark, load_humaneval,
                                            load_livecodebench, load_usaco)
from codefu_helpers.evaluate import (SAMPLE_COLUMNS, EvalConfig, bootstrap_ci, compare, harness_parts, n_at_k,
                                     pass_at_k, problem_table, summarize)


# ------------------------------------------------------------------------------------------------- pass@k


def exact_pass_at_k(n, c, k):
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def test_pass_at_k_closed_forms():
    assert pass_at_k(10, 0, 1) == 0.0
    assert pass_at_k(10, 10, 5) == 1.0
    for n, c in [(1, 1), (5, 2), (10, 3), (200, 17)]:
        assert pass_at_k(n, c, 1) == pytest.approx(c / n, abs=1e-12)  # pass@1 is the share of correct samples
    assert pass_at_k(10, 1, 10) == 1.0          # all samples drawn: the correct one is among them
    assert pass_at_k(10, 2, 9) == 1.0           # n - c < k
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)   # 1 - C(3,2)/C(4,2) = 1 - 3/6


def test_pass_at_k_equals_the_definition_on_a_grid():
    for n in range(1, 16):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_at_k(n, c, k) == pytest.approx(float(exact_pass_at_k(n, c, k)), abs=1e-12), (n, c, k)


def test_pass_at_k_is_stable_for_large_n():
    # C(2000, 100) has ~190 digits: the definition overflows floats, the product form must not drift
    for n, c, k in [(2000, 5, 100), (1000, 1, 1), (5000, 3, 1000), (300, 150, 10)]:
        assert pass_at_k(n, c, k) == pytest.approx(float(exact_pass_at_k(n, c, k)), rel=1e-9), (n, c, k)


@pytest.mark.parametrize("args, fragment", [((5, 6, 1), "c <= n"), ((5, 2, 0), "k <= n"), ((5, 2, 6), "k=6"),
                                            ((5, -1, 1), "c=-1")])
def test_pass_at_k_rejects_impossible_counts(args, fragment):
    with pytest.raises(ValueError, match=fragment):
        pass_at_k(*args)
    with pytest.raises(TypeError, match="int"):
        pass_at_k(5.0, 1, 1)


# -------------------------------------------------------------------------------------------------- n@k


def brute_n_at_k(kinds: str, submissions: int, k: int) -> Fraction:
    """kinds: one letter per sample, C correct, P passes the public tests only, F fails a public test."""
    draws = list(itertools.combinations(range(len(kinds)), k))
    total = Fraction(0)
    for draw in draws:
        candidates = [i for i in draw if kinds[i] in "CP"]
        m = min(submissions, len(candidates))
        if m == 0:
            continue
        picks = list(itertools.combinations(candidates, m))
        total += Fraction(sum(any(kinds[i] == "C" for i in pick) for pick in picks), len(picks))
    return total / len(draws)


def test_n_at_k_matches_brute_force_enumeration():
    for kinds in ["CPF", "CCPPFF", "CPPPF", "FFFF", "CCCC", "CPFFFPC", "PPPC"]:
        n = len(kinds)
        for k in range(1, n + 1):
            for submissions in (1, 2, 3):
                expected = brute_n_at_k(kinds, submissions, k)
                got = n_at_k(n, kinds.count("C"), kinds.count("P"), submissions, k)
                assert got == pytest.approx(float(expected), abs=1e-12), (kinds, submissions, k)


def test_n_at_k_closed_forms():
    # submitting every drawn sample is pass@k
    assert n_at_k(10, 3, 4, 5, 5) == pytest.approx(pass_at_k(10, 3, 5))
    # a perfect public-test filter (no sample passes the public tests but fails a hidden one): 1@k == pass@k
    assert n_at_k(10, 3, 0, 1, 5) == pytest.approx(pass_at_k(10, 3, 5))
    # a useless filter (every sample passes the public tests): submitting 1 of k at random is pass@1
    assert n_at_k(10, 3, 7, 1, 5) == pytest.approx(0.3)
    with pytest.raises(ValueError, match="n_correct"):
        n_at_k(5, 4, 2, 1, 2)


# ------------------------------------------------------------------------------------------------ bootstrap


def test_bootstrap_ci_is_seeded_and_brackets_the_mean():
    values = np.random.default_rng(1).random(40)
    lo, hi = bootstrap_ci(values, 2000, 0.95, seed=3)
    assert (lo, hi) == bootstrap_ci(values, 2000, 0.95, seed=3)
    assert lo < values.mean() < hi
    assert hi - lo < 0.4
    narrow = bootstrap_ci(values, 2000, 0.5, seed=3)
    assert lo <= narrow[0] < narrow[1] <= hi  # a lower confidence gives a narrower interval
    assert bootstrap_ci([0.25] * 10) == (0.25, 0.25)
    assert all(math.isnan(x) for x in bootstrap_ci([]))


# ------------------------------------------------------------------------------------------------ summaries


def frame(rows):
    """Sample rows: (problem_id, tier, verdict, public_pass)."""
    records = []
    counts = {}
    for problem_id, tier, verdict, public_pass in rows:
        index = counts[problem_id] = counts.get(problem_id, -1) + 1
        records.append({c: None for c in SAMPLE_COLUMNS} | {
            "benchmark": "codecontests", "problem_id": problem_id, "name": problem_id, "tier": tier, "rating": 900,
            "sample_index": index, "verdict": verdict, "solved": verdict == "OK", "public_pass": public_pass,
            "judge_error": verdict == "JUDGE_ERROR", "length": 10 * (index + 1), "length_unit": "tokens",
            "finish_reason": "stop", "expected_verdict": ""})
    return pd.DataFrame.from_records(records, columns=SAMPLE_COLUMNS)


def test_summary_excludes_judge_errors_and_reports_k_only_where_n_allows():
    samples = frame([("a", "easy", "OK", True), ("a", "easy", "WA", True), ("a", "easy", "JUDGE_ERROR", False),
                     ("b", "hard", "TLE", False), ("b", "hard", "OK", True), ("b", "hard", "OK", True),
                     ("c", "hard", "JUDGE_ERROR", False), ("c", "hard", "JUDGE_ERROR", False),
                     ("c", "hard", "CE", False)])
    table = problem_table(samples).set_index("problem_id")
    assert table.loc["a", "n"] == 2 and table.loc["a", "correct"] == 1 and table.loc["a", "judge_errors"] == 1
    assert table.loc["c", "n"] == 1 and table.loc["a", "public_only"] == 1
    summary = summarize(samples, EvalConfig(n_samples=3, ks=(1, 2, 3), n_bootstrap=200))
    assert summary["judge_errors"] == 3 and summary["samples"] == 9
    assert summary["pass_at_k"]["1"]["value"] == pytest.approx((1 / 2 + 2 / 3 + 0) / 3)
    assert summary["pass_at_k"]["2"]["problems"] == 2          # c has one valid sample: too few for k=2
    assert summary["pass_at_k"]["2"]["problems_with_too_few_samples"] == 1
    assert summary["pass_at_k"]["3"]["problems"] == 1          # only b keeps 3 valid samples
    assert "5" not in summary["pass_at_k"]
    assert summary["verdicts"]["JUDGE_ERROR"] == 3 and summary["verdicts"]["OK"] == 3
    assert summary["verdict_shares"]["OK"] == pytest.approx(3 / 6)   # shares over valid samples only
    assert set(summary["by_tier"]) == {"easy", "hard"}
    assert summary["by_tier"]["hard"]["pass_at_k"]["1"]["value"] == pytest.approx((2 / 3 + 0) / 2)
    assert summary["n_at_k"]["1@2"] == pytest.approx(
        np.mean([n_at_k(2, 1, 1, 1, 2), n_at_k(3, 2, 0, 1, 2)]))


@pytest.mark.slow  # MLflow creates its sqlite schema: ~10 s
def test_saved_evaluations_go_to_one_mlflow_run_with_their_samples(tmp_path):
    import mlflow

    from codefu_helpers.evaluate import Evaluation, log_evaluations

    samples = frame([("a", "easy", "OK", True), ("a", "easy", "WA", True), ("b", "hard", "TLE", False),
                     ("b", "hard", "JUDGE_ERROR", False)])
    Evaluation(samples, summarize(samples, EvalConfig(n_samples=2, ks=(1, 2), n_bootstrap=20))).save(tmp_path / "base")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    run_id = log_evaluations({"base": tmp_path / "base"}, uri, experiment="eval-test", run_name="05")
    client = mlflow.tracking.MlflowClient(tracking_uri=uri)
    metrics = client.get_run(run_id).data.metrics
    assert metrics["base/pass_at_1"] == pytest.approx(0.25) and metrics["base/judge_errors"] == 1  # b: 0 of 1 valid
    assert sorted(a.path for a in client.list_artifacts(run_id, "base")) == \
        ["base/samples.parquet", "base/summary.json"]
    local = client.download_artifacts(run_id, "base/samples.parquet", str(tmp_path / "down"))
    assert pd.read_parquet(local)["verdict"].tolist() == samples["verdict"].tolist()


def test_compare_is_paired_and_reports_the_direction():
    base = frame([(p, "easy", v, True) for p, v in [("a", "WA"), ("a", "WA"), ("b", "OK"), ("b", "WA"),
                                                     ("c", "WA"), ("c", "WA"), ("d", "OK"), ("d", "OK")]])
    trained = frame([(p, "easy", v, True) for p, v in [("a", "OK"), ("a", "WA"), ("b", "OK"), ("b", "OK"),
                                                        ("c", "OK"), ("c", "WA"), ("d", "OK"), ("d", "OK"),
                                                        ("e", "OK"), ("e", "OK")]])
    out = compare(base, trained, ks=(1, 2), n_bootstrap=500, seed=0)
    assert out["problems"] == 4 and out["only_in_trained"] == 1 and out["only_in_base"] == 0
    one = out["pass_at_k"]["1"]
    assert one["base"] == pytest.approx(1.5 / 4) and one["trained"] == pytest.approx(3 / 4)
    assert one["diff"] == pytest.approx(1.5 / 4)
    assert one["p_improved"] == pytest.approx(1 - 0.25 ** 4, abs=0.01)  # a tie only when every pick is d
    assert 0 <= one["diff_ci"][0] <= one["diff"] <= one["diff_ci"][1]
    same = compare(base, base, ks=(1,), n_bootstrap=100)["pass_at_k"]["1"]
    assert same["diff"] == 0 and same["diff_ci"] == [0.0, 0.0] and same["p_improved"] == 0.0
    with pytest.raises(ValueError, match="share no problem"):
        compare(base, frame([("z", "easy", "OK", True)]))


def test_describe_comparison_words_follow_the_numbers():
    """ahead/behind only when the interval of the difference excludes zero; the numbers in the sentence are the
    comparison's own, and the solved counts are counted from the samples."""
    from codefu_helpers.evaluate import describe_comparison

    def flat(verdicts):  # 6 problems x 4 samples, the verdicts of each problem's samples given per problem
        return frame([(f"p{i}", "easy", v, True) for i, vs in enumerate(verdicts) for v in vs])

    none = flat([["WA"] * 4] * 6)
    some = flat([["OK", "OK", "OK", "WA"]] * 5 + [["WA"] * 4])
    one_more = flat([["OK", "WA", "WA", "WA"]] + [["WA"] * 4] * 5)
    for base, trained, word in ((none, some, "is ahead"), (some, none, "is behind"),
                                (none, one_more, "no measurable difference"), (none, none, "neither model solved")):
        comparison = compare(base, trained, ks=(1,), n_bootstrap=400, seed=0)
        text = describe_comparison(comparison, base, trained, "held-out problems")
        block = comparison["pass_at_k"]["1"]
        assert word in text and text.startswith("On the 6 held-out problems"), text
        if word != "neither model solved":
            assert f"pass@1 {block['base']:.3f} -> {block['trained']:.3f}" in text
            assert f"[{block['diff_ci'][0]:+.3f}, {block['diff_ci'][1]:+.3f}]" in text
            assert f"{int(base['solved'].sum())} of 24 base samples solved, {int(trained['solved'].sum())} of 24" in text
    assert "cannot be compared" in describe_comparison(compare(none, some, ks=(1,)), none, some, "x", k=2)


def test_base_model_auto_comes_from_the_training_record_or_must_be_named(tmp_path):
    from codefu_helpers.evaluate import base_and_trained

    trained = tmp_path / "trained"
    trained.mkdir()
    (trained / "config.json").write_text("{}")
    with pytest.raises(ValueError, match="has no codefu_training.json.*name the base model"):
        base_and_trained("auto", str(trained))  # a verl-merged model, say: no silent tiny://qwen2
    with pytest.raises(ValueError, match="there is no trained model"):
        base_and_trained("auto", "")
    assert base_and_trained("org/base-model", str(trained)) == ("org/base-model", str(trained), None)
    assert base_and_trained("org/base-model", "") == ("org/base-model", "org/base-model", None)
    record = {"start_model": "tiny://qwen2", "train_problems": ["a"]}
    (trained / "codefu_training.json").write_text(json.dumps(record))
    assert base_and_trained("auto", str(trained)) == ("tiny://qwen2", str(trained), record)
    (trained / "codefu_training.json").write_text(json.dumps({**record, "start_model": str(tmp_path / "gone")}))
    with pytest.raises(FileNotFoundError, match="not on this machine"):
        base_and_trained("auto", str(trained))


def test_a_model_in_s3_is_downloaded_once_as_a_folder_or_from_a_tarball(aws_on_moto, tmp_path, monkeypatch):
    """Against a local moto S3: a job's uncompressed output/model/ prefix, a model.tar.gz, a changed object, and the
    errors for an empty prefix and a prefix without config.json."""
    import io
    import tarfile

    import boto3

    from codefu_helpers.evaluate import fetch_s3_model, resolve_model

    monkeypatch.setenv("CODEFU_CACHE", str(tmp_path / "cache"))
    s3 = boto3.client("s3")
    files = {"config.json": b'{"model_type": "qwen2"}', "model.safetensors": b"weights",
             "tokenizer/vocab.json": b"{}"}
    for name, body in files.items():
        s3.put_object(Bucket="codefu-moto", Key=f"out/job/output/model/{name}", Body=body)
    local = Path(resolve_model("s3://codefu-moto/out/job/output/model"))  # no trailing slash: still the folder
    assert local == tmp_path / "cache" / "s3" / "codefu-moto" / "out/job/output/model"
    assert {str(p.relative_to(local)): p.read_bytes() for p in local.rglob("*") if p.is_file()
            and not p.name.startswith(".")} == files
    stamp = (local / "model.safetensors").stat().st_mtime_ns
    assert fetch_s3_model("s3://codefu-moto/out/job/output/model/") == local
    assert (local / "model.safetensors").stat().st_mtime_ns == stamp  # unchanged objects: not downloaded again
    s3.put_object(Bucket="codefu-moto", Key="out/job/output/model/model.safetensors", Body=b"new weights")
    assert (fetch_s3_model("s3://codefu-moto/out/job/output/model/") / "model.safetensors").read_bytes() == b"new weights"

    packed = io.BytesIO()
    with tarfile.open(fileobj=packed, mode="w:gz") as tar:
        for name, body in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    s3.put_object(Bucket="codefu-moto", Key="out/job2/output/model.tar.gz", Body=packed.getvalue())
    unpacked = fetch_s3_model("s3://codefu-moto/out/job2/output/model.tar.gz")
    assert (unpacked / "config.json").read_bytes() == files["config.json"] and not (unpacked / "model.tar.gz").exists()

    with pytest.raises(FileNotFoundError, match="nothing at s3://codefu-moto/out/missing"):
        fetch_s3_model("s3://codefu-moto/out/missing/")
    s3.put_object(Bucket="codefu-moto", Key="out/job3/output/model/nested/config.json", Body=b"{}")
    with pytest.raises(FileNotFoundError, match="no config.json at its top level"):
        fetch_s3_model("s3://codefu-moto/out/job3/output/")


def test_config_errors_name_the_value():
    with pytest.raises(ValueError, match="n_samples=0"):
        EvalConfig(n_samples=0).validate()
    with pytest.raises(ValueError, match="temperature=0"):
        EvalConfig(n_samples=4, temperature=0.0).validate()
    EvalConfig(n_samples=1, temperature=0.0).validate()  # greedy pass@1 is fine


# ------------------------------------------------------------------------------------------------- loaders


def write_usaco(root, with_missing_test=False):
    data = {
        "1_bronze_cow_sum": {"name": "Cow Sum", "problem_id": "1_bronze_cow_sum", "problem_level": "bronze",
                             "description": "Read two integers and print their sum.", "num_tests": 2,
                             "runtime_limit": 2, "memory_limit": 256,
                             "samples": [{"input": "1 2\n", "output": "3\n", "explanation": ""}]},
        "2_silver_cow_max": {"name": "Cow Max", "problem_id": "2_silver_cow_max", "problem_level": "silver",
                             "description": "Print the largest of n integers.", "num_tests": 2,
                             "runtime_limit": 4, "memory_limit": 512, "samples": []},
    }
    (root / "usaco_subset307_dict.json").write_text(json.dumps(data))
    first = root / "tests" / "1_bronze_cow_sum"
    first.mkdir(parents=True)
    for i, (a, b) in enumerate([(3, 4), (10, -2)], 1):
        (first / f"{i}.in").write_text(f"{a} {b}\n")
        (first / f"{i}.out").write_text(f"{a + b}\n")
    second = root / "tests" / "2_silver_cow_max"
    second.mkdir()
    for i, values in enumerate([[1, 5, 2], [7]], 1):  # the I.<i> / O.<i> naming of older contests
        if with_missing_test and i == 2:
            continue
        (second / f"I.{i}").write_text(f"{len(values)}\n{' '.join(map(str, values))}\n")
        (second / f"O.{i}").write_text(f"{max(values)}\n")
    return root / "usaco_subset307_dict.json"


def test_usaco_format(tmp_path):
    problems = load_benchmark(f"usaco:{write_usaco(tmp_path)}")
    assert [p.problem_id for p in problems] == ["1_bronze_cow_sum", "2_silver_cow_max"]
    cow_sum, cow_max = problems
    assert cow_sum.tests == (("1 2\n", "3\n"), ("3 4\n", "7\n"), ("10 -2\n", "8\n")) and cow_sum.n_public == 1
    assert cow_sum.tier == "bronze" and cow_sum.time_limit == 2.0 and cow_sum.memory_limit_bytes == 256_000_000
    assert cow_max.tests[1] == ("1\n7\n", "7\n") and cow_max.n_public == 0
    assert cow_sum.language == "python" and "Read two integers" in cow_sum.prompt[-1]["content"]
    assert [p.problem_id for p in load_usaco(tmp_path / "usaco_subset307_dict.json", levels=("silver",))] == \
        ["2_silver_cow_max"]


def test_usaco_missing_test_names_the_file(tmp_path):
    path = write_usaco(tmp_path, with_missing_test=True)
    with pytest.raises(FileNotFoundError, match=r"2_silver_cow_max.*test 2 of 2"):
        load_usaco(path)
    (tmp_path / "tests").rename(tmp_path / "elsewhere")
    with pytest.raises(FileNotFoundError, match="no tests folder"):
        load_usaco(path)
    assert len(load_usaco(path, tests_dir=tmp_path / "elsewhere", levels=("bronze",))) == 1


def compress(cases) -> str:
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(cases)))).decode()


def write_livecodebench(path):
    rows = [
        {"question_title": "Sum", "question_content": "Print a+b.", "platform": "atcoder", "question_id": "abc001_a",
         "contest_id": "abc001", "contest_date": "2024-09-01T00:00:00", "starter_code": "", "difficulty": "easy",
         "public_test_cases": json.dumps([{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}]),
         "private_test_cases": compress([{"input": "5 5\n", "output": "10\n", "testtype": "stdin"}]),
         "metadata": "{}"},
        {"question_title": "Two Sum", "question_content": "Return a+b.", "platform": "leetcode",
         "question_id": "9001", "contest_id": "weekly-1", "contest_date": "2025-01-15T00:00:00",
         "starter_code": "class Solution:\n    def add(self, a: int, b: int) -> int:\n        ",
         "difficulty": "medium",
         "public_test_cases": json.dumps([{"input": "1\n2", "output": "3", "testtype": "functional"}]),
         "private_test_cases": compress([{"input": "[1]\n2", "output": "[1, 2]", "testtype": "functional"}]),
         "metadata": json.dumps({"func_name": "add"})},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_livecodebench_format(tmp_path):
    path = write_livecodebench(tmp_path / "test5.jsonl")
    stdin, functional = load_benchmark(f"livecodebench:{path}")
    assert stdin.tests == (("1 2\n", "3\n"), ("5 5\n", "10\n")) and stdin.n_public == 1 and not stdin.harness
    assert stdin.tier == "easy" and stdin.extra["contest_date"] == "2024-09-01"
    assert functional.harness == "functional" and functional.entry_point == "add"
    assert functional.functional_tests == (("1\n2", "3"), ("[1]\n2", "[1, 2]"))
    assert "class Solution" in functional.prompt[0]["content"]
    assert [p.problem_id for p in load_livecodebench(path, since="2025-01-01")] == ["9001"]
    assert [p.problem_id for p in load_livecodebench(path, until="2024-12-31")] == ["abc001_a"]


def test_livecodebench_pickles_cannot_run_code():
    class Exploit:
        def __reduce__(self):
            import os

            return (os.system, ("echo pwned",))

    hostile = base64.b64encode(zlib.compress(pickle.dumps(Exploit()))).decode()
    with pytest.raises(ValueError, match="refusing to load"):
        decode_test_cases(hostile)
    assert decode_test_cases(compress([{"input": "x", "output": "y"}])) == [{"input": "x", "output": "y"}]


def test_humaneval_loads_and_builds_programs():
    problems = load_humaneval(max_problems=3)
    assert [p.problem_id for p in problems] == ["HumanEval/0", "HumanEval/1", "HumanEval/2"]
    p = problems[0]
    assert p.harness == "humaneval" and p.entry_point == "has_close_elements"
    whole = harness_parts(p, "def has_close_elements(numbers, threshold):\n    return False\n")
    assert whole.program.startswith(p.prompt_code) and "check(" not in whole.program  # no check in the program
    assert whole.check.startswith(p.prompt_code) and p.test_code in whole.check
    assert whole.check.rstrip().endswith("has_close_elements = candidate\ncheck(candidate)")
    assert whole.call == "has_close_elements"
    body = harness_parts(p, "return False")  # a bare body is indented under the prompt's signature
    assert "\n    return False" in body.program
    with pytest.raises(ValueError, match="no tests"):
        EvalProblem("codecontests", "x", "x", [])


# ------------------------------------------------------------------------------------------- float answers


def test_float_tolerance_reaches_the_judge_through_the_evaluation_path(tmp_path):
    """A statement that allows 1e-6 -> the data step -> load_codecontests -> judge_response with a real judge."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from codefu_helpers.data import FilterConfig, prepare_dataset
    from codefu_helpers.evaluate import fenced, judge_response
    from codefu_helpers.sandbox import Judge

    def row(name, description):
        return {"name": name, "description": description, "source": 2, "cf_rating": 800, "cf_tags": [],
                "public_tests": {"input": ["1 3\n"], "output": ["0.333333\n"]},
                "private_tests": {"input": ["2 3\n"], "output": ["0.666667\n"]},
                "time_limit": {"seconds": 2, "nanos": 0}, "memory_limit_bytes": 256_000_000,
                "solutions": {"language": [], "solution": []}, "incorrect_solutions": {"language": [], "solution": []}}

    rows = [row("1_A. Share", "Print a / b. Your answer will be considered correct if its absolute or relative "
                              "error does not exceed 10^{-6}."),
            row("2_A. Exact Share", "Print a / b rounded to 6 digits after the decimal point.")]
    raw = tmp_path / "rows.jsonl"
    raw.write_text("".join(json.dumps(r) + "\n" for r in rows))
    prepare_dataset(raw, tmp_path / "data", FilterConfig(language="python", test_fraction=0.0))
    parquet = tmp_path / "data" / "train.parquet"
    for problems in (load_benchmark(str(parquet)), load_benchmark(str(raw), language="python")):
        assert {p.name: p.float_tolerance for p in problems} == {"1_A. Share": 1e-6, "2_A. Exact Share": None}
    # a parquet written before the field existed still loads, with exact comparison
    old_rows = pq.read_table(parquet).to_pylist()
    for r in old_rows:
        del r["reward_model"]["ground_truth"]["float_tolerance"]
    pq.write_table(pa.Table.from_pylist(old_rows), tmp_path / "old.parquet")
    assert [p.float_tolerance for p in load_benchmark(str(tmp_path / "old.parquet"))] == [None, None]

    tolerant, exact = load_benchmark(str(parquet))
    close = fenced("python", "a, b = map(int, input().split())\nprint(f'{a / b + 4e-7:.7f}')")  # 0.3333337
    far = fenced("python", "a, b = map(int, input().split())\nprint(f'{a / b + 1e-2:.7f}')")
    with Judge(workers=1) as judge:
        accepted = judge_response(judge, tolerant, close)
        assert (accepted.verdict, accepted.passed, accepted.public_pass) == ("OK", 2, True)
        assert judge_response(judge, tolerant, far).verdict == "WA"
        assert judge_response(judge, exact, close).verdict == "WA"
        with pytest.raises(ValueError, match="float_tolerance=1.5"):
            EvalProblem("codecontests", "x", "x", [], tests=(("", "1"),), float_tolerance=1.5)
