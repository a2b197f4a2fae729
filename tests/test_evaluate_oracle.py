"""The evaluation harness end to end with the real sandboxed judge (integration tier, about a minute).

Oracles: the bundled sample's reference solutions, fed through the same path as model samples (fenced code ->
extraction -> judge), must score pass@1 = 1.0; its incorrect solutions must get exactly the verdicts their
authors named them for (incorrect_<wa|tle|re|ce>_N). The HumanEval, USACO and LiveCodeBench paths are checked
with right and wrong programs, a real tiny model runs through `evaluate_model` twice with the same seed, and the
CLI runs an oracle and a model with a comparison.
"""

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from codefu_helpers.eval_datasets import load_codecontests, load_humaneval, load_livecodebench, load_usaco
from codefu_helpers.evaluate import (SAMPLE_COLUMNS, VERDICTS, EvalConfig, Evaluation, evaluate_model,
                                     evaluate_references, judge_response)
from codefu_helpers.sandbox import Judge

from test_evaluate import write_livecodebench, write_usaco

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"
CFG = EvalConfig(n_bootstrap=200)


@pytest.fixture(scope="module")
def judge():
    with Judge() as j:
        yield j


@pytest.fixture(scope="module")
def held_out(tmp_path_factory):
    """The held-out split notebook 01 writes (test_fraction 0.2 of every tier), as a verl parquet."""
    from codefu_helpers.data import FilterConfig, prepare_dataset

    out = tmp_path_factory.mktemp("held_out")
    report = prepare_dataset(SAMPLE, out, FilterConfig(language="cpp", test_fraction=0.2, seed=0))
    assert report.splits["test"] >= 5
    return Path(report.files["test"])


@pytest.mark.slow
def test_gold_solutions_score_pass_at_1_of_one(judge):
    problems = load_codecontests(SAMPLE, max_problems=20)
    assert len(problems) == 20 and all(p.solutions for p in problems)
    evaluation = evaluate_references(problems, "gold", CFG, judge=judge, progress=False)
    samples, summary = evaluation.samples, evaluation.summary
    assert summary["judge_errors"] == 0
    assert summary["pass_at_k"]["1"]["value"] == 1.0
    assert set(samples["verdict"]) == {"OK"} and set(samples["language"]) == {"python", "cpp"}
    assert summary["verdict_agreement"]["agree"] == len(samples) and not summary["verdict_agreement"]["mismatches"]
    assert (samples["score"] == 1.0).all() and samples["public_pass"].all()


@pytest.mark.slow
def test_gold_oracle_on_the_held_out_parquet(judge, held_out, tmp_path):
    problems = load_codecontests(held_out, solutions_from=SAMPLE)
    assert {p.tier for p in problems} == {"easy", "hard", "expert"}
    assert all(p.solutions and p.language == "cpp" for p in problems)
    evaluation = evaluate_references(problems, "gold", CFG, judge=judge, progress=False)
    assert evaluation.summary["pass_at_k"]["1"]["value"] == 1.0
    assert set(evaluation.summary["by_tier"]) == {"easy", "hard", "expert"}
    first_row = (SAMPLE / "code_contests_sample.jsonl").read_text().splitlines()[0]
    (tmp_path / "other.jsonl").write_text(json.dumps({**json.loads(first_row), "name": "Another problem"}) + "\n")
    with pytest.raises(ValueError, match="no rows named"):
        load_codecontests(held_out, solutions_from=tmp_path / "other.jsonl")


@pytest.mark.slow
def test_incorrect_solutions_get_their_intended_verdicts(judge):
    # the authors named each file for its verdict on *all* tests, generated ones included
    problems = load_codecontests(SAMPLE, include_generated_tests=True, max_problems=16)
    cfg = EvalConfig(n_bootstrap=200, stop_at_first_failure=True)
    evaluation = evaluate_references(problems, "incorrect", cfg, judge=judge, progress=False)
    samples, agreement = evaluation.samples, evaluation.summary["verdict_agreement"]
    assert agreement["known"] == len(samples) > 20, "every bundled incorrect solution is named by verdict"
    assert not agreement["mismatches"], agreement["mismatches"]
    assert set(samples["verdict"]) == {"WA", "TLE", "RE", "CE"}
    assert evaluation.summary["pass_at_k"]["1"]["value"] == 0.0 and evaluation.summary["judge_errors"] == 0


@pytest.mark.slow
def test_humaneval_judging_tells_right_from_wrong(judge):
    problems = load_humaneval(max_problems=12)
    gold = evaluate_references(problems, "gold", CFG, judge=judge, progress=False)
    assert gold.summary["pass_at_k"]["1"]["value"] == 1.0
    for p in problems:  # the same problems with a body that cannot be right
        p.solutions = (("python", p.prompt_code + "    return None\n"),)
    wrong = evaluate_references(problems, "gold", CFG, judge=judge, progress=False)
    assert wrong.summary["pass_at_k"]["1"]["value"] == 0.0
    assert set(wrong.samples["verdict"]) <= {"WA", "RE"} and "WA" in set(wrong.samples["verdict"])
    p = problems[0]
    cases = {
        "TLE": f"```python\ndef {p.entry_point}(*args):\n    while True:\n        pass\n```",
        "CE": f"```python\ndef {p.entry_point}(:\n```",
        "NO_CODE": "I would loop over the pairs and compare them.",
    }
    for verdict, text in cases.items():
        assert judge_response(judge, p, text).verdict == verdict, verdict
    cpp = judge_response(judge, p, "```cpp\nint main() {}\n```")
    assert cpp.verdict == "NO_CODE" and "runs Python" in cpp.message


@pytest.mark.slow
def test_usaco_and_livecodebench_files_are_judged(judge, tmp_path):
    cow_sum, cow_max = load_usaco(write_usaco(tmp_path))
    cpp_sum = '#include <cstdio>\nint main(){long a,b;scanf("%ld %ld",&a,&b);printf("%ld\\n",a+b);}'
    cow_sum.solutions = (("python", "a, b = map(int, input().split())\nprint(a + b)\n"), ("cpp", cpp_sum))
    cow_sum.incorrect_solutions = (("python", "print(0)\n", "WA"),)
    cow_max.solutions = (("python", "input()\nprint(max(map(int, input().split())))\n"),)
    cow_max.incorrect_solutions = (("python", "input()\nprint(min(map(int, input().split())))\n", "WA"),)
    lcb = load_livecodebench(write_livecodebench(tmp_path / "lcb.jsonl"))
    stdin, functional = lcb
    stdin.solutions = (("python", "a, b = map(int, input().split())\nprint(a + b)\n"),)
    stdin.incorrect_solutions = (("python", "import sys\nsys.exit(3)\n", "RE"),)
    # JSON values: the second test passes a list and an int, and expects a list back
    functional.solutions = (("python", "class Solution:\n    def add(self, a, b):\n"
                                       "        return a + [b] if isinstance(a, list) else a + b\n"),)
    functional.incorrect_solutions = (("python", "class Solution:\n    def add(self, a, b):\n        return a\n",
                                       "WA"),)
    problems = [cow_sum, cow_max, stdin, functional]
    gold = evaluate_references(problems, "gold", CFG, judge=judge, progress=False)
    assert gold.summary["pass_at_k"]["1"]["value"] == 1.0, gold.samples[["problem_id", "verdict", "judge_message"]]
    wrong = evaluate_references(problems, "incorrect", CFG, judge=judge, progress=False)
    assert not wrong.summary["verdict_agreement"]["mismatches"], wrong.summary["verdict_agreement"]
    assert set(wrong.summary["by_tier"]) == {"bronze", "silver", "easy", "medium"}


def test_livecodebench_functional_semantics(judge, tmp_path):
    """LiveCodeBench's functional answers go through JSON and compare exactly, as before the checks moved out of
    the program's process: a tuple answers as a list, 3.0 equals 3, floats have no tolerance. What changed: an
    answer JSON cannot hold (a set, an object of the program's own class) is a wrong answer, where the program's
    own process used to raise on it (RE)."""
    _, functional = load_livecodebench(write_livecodebench(tmp_path / "lcb.jsonl"))
    functional = dataclasses.replace(functional, functional_tests=(("1\n2", "3"), ("[1]\n2", "[1, 2]"),
                                                                   ("0.5\n0.25", "0.75")))
    cases = {
        "return tuple(a + [b]) if isinstance(a, list) else float(a + b)": "OK",
        "return a + [b] if isinstance(a, list) else a + b": "OK",
        "return a + [b] if isinstance(a, list) else a + b + 1e-12": "WA",  # no tolerance
        "return [b] + a if isinstance(a, list) else a + b": "WA",
        "return {b} if isinstance(a, list) else a + b": "WA",  # a set: plain data, but not JSON
        "return type('Mine', (), {})() if isinstance(a, list) else a + b": "WA",  # not plain data
        "raise ValueError('no')": "RE",
    }
    for body, verdict in cases.items():
        code = f"class Solution:\n    def add(self, a, b):\n        {body}\n"
        judged = judge_response(judge, functional, f"```python\n{code}```")
        assert judged.verdict == verdict, (body, judged)


@pytest.mark.slow
def test_tiny_model_evaluation_is_reproducible(judge, held_out):
    from codefu_helpers.evaluate import load_model
    from codefu_helpers.rollout import HFRollout

    problems = load_codecontests(held_out)[:3]
    model, tokenizer = load_model("tiny://qwen2", device="cpu")
    cfg = EvalConfig(n_samples=3, ks=(1, 2, 3), max_new_tokens=48, batch_size=9, n_bootstrap=200, seed=7)
    runs = [evaluate_model(problems, HFRollout(model, tokenizer), cfg, judge=judge, model_name="tiny",
                           progress=False) for _ in range(2)]
    first, second = runs
    assert list(first.samples.columns) == SAMPLE_COLUMNS
    assert len(first.samples) == 9 and first.summary["samples"] == 9
    assert first.samples["response"].tolist() == second.samples["response"].tolist()
    assert first.samples["verdict"].tolist() == second.samples["verdict"].tolist()
    assert set(first.samples["verdict"]) <= set(VERDICTS) - {"JUDGE_ERROR"}
    assert (first.samples["length"] <= 48).all() and (first.samples["length"] > 0).all()
    assert set(first.summary["pass_at_k"]) == {"1", "2", "3"}
    assert first.summary["timing"]["problems_per_minute"] > 0


@pytest.mark.slow
def test_cli_oracle_and_model_with_comparison(tmp_path):
    def cli(*args):
        return subprocess.run([sys.executable, "-m", "codefu_helpers.evaluate", "--no-progress", "--bootstrap", "100",
                               *args], capture_output=True, text=True, cwd=ROOT, timeout=600)

    gold = cli("--dataset", str(SAMPLE), "--policy", "gold", "--max-problems", "3", "--output-dir",
               str(tmp_path / "gold"))
    assert gold.returncode == 0, gold.stderr[-2000:]
    assert "pass@1 1.000" in gold.stdout
    summary = json.loads((tmp_path / "gold" / "summary.json").read_text())
    assert summary["pass_at_k"]["1"]["value"] == 1.0 and summary["policy"] == "gold"
    for name in ("base", "trained"):
        run = cli("--dataset", str(SAMPLE), "--model", "tiny://qwen2", "--n", "2", "--k", "1", "2",
                  "--max-problems", "2", "--max-new-tokens", "24", "--seed", "1" if name == "base" else "2",
                  "--output-dir", str(tmp_path / name),
                  *(["--compare-to", str(tmp_path / "base")] if name == "trained" else []))
        assert run.returncode == 0, run.stderr[-2000:]
    samples = pd.read_parquet(tmp_path / "trained" / "samples.parquet")
    assert len(samples) == 4 and samples["model"].eq("tiny://qwen2").all()
    comparison = json.loads((tmp_path / "trained" / "comparison.json").read_text())
    assert comparison["problems"] == 2 and set(comparison["pass_at_k"]) == {"1", "2"}
    assert Evaluation.load(tmp_path / "base").summary["samples"] == 4
    missing = cli("--dataset", str(SAMPLE), "--output-dir", str(tmp_path / "x"))
    assert missing.returncode != 0 and "needs a model" in missing.stderr
