"""Rewards: code extraction, ground-truth parsing, the three CodeFu reward modes on real judged programs, the
judge-error path, and verl's custom-reward loader calling compute_score (in the .venv-job interpreter)."""

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from codefu_helpers.reward import (COMPILE_ERROR_REWARD, NO_CODE_REWARD, RESULT_KEYS, compute_score,
                                   compute_score_batch, extract_code, parse_ground_truth)
from codefu_helpers.sandbox import Judge

ROOT = Path(__file__).resolve().parent.parent
VERL_PYTHON = ROOT / ".venv-job" / "bin" / "python"

GT = {
    "name": "9999_A. Sum",
    "public_tests": {"input": ["1 2\n"], "output": ["3\n"]},
    "private_tests": {"input": ["5 5\n", "100 1\n", "7 -7\n"], "output": ["10\n", "101\n", "0\n"]},
    "time_limit": 1.0,
    "memory_limit_bytes": 256_000_000,
    "cf_rating": 800,
}
SUM_PY = "a, b = map(int, input().split())\nprint(a + b)\n"
SUM_CPP = "#include <bits/stdc++.h>\nint main(){long long a,b;std::cin>>a>>b;std::cout<<a+b;}\n"
# passes the public test and 2 of 3 private ones (wrong when the first number is 100)
PARTIAL_PY = "a, b = map(int, input().split())\nprint(a + b if a != 100 else 0)\n"
# passes the public test, then spins on a private one
TLE_PY = "a, b = map(int, input().split())\nwhile a == 100: pass\nprint(a + b)\n"


def response(code, lang="python"):
    return f"Let me think step by step.\n\n```{lang}\n{code}```\n"


@pytest.fixture(scope="module")
def judge():
    with Judge(workers=2) as j:
        yield j


# --- extraction --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,expected", [
    ("```cpp\nint main(){}\n```", ("cpp", "int main(){}\n")),
    ("```c++\nint main(){}\n```", ("cpp", "int main(){}\n")),
    ("```C++17\nint main(){}\n```", ("cpp", "int main(){}\n")),
    ("```python\nprint(1)\n```", ("python", "print(1)\n")),
    ("```py\nprint(1)\n```", ("python", "print(1)\n")),
    ("```python3 title=\"sol.py\"\nprint(1)\n```", ("python", "print(1)\n")),
    # the last block wins ...
    ("```python\nprint(1)\n```\nbetter:\n```cpp\nint main(){}\n```", ("cpp", "int main(){}\n")),
    # ... among the languages we run: a sample-output block after the code is not the program
    ("```cpp\nint main(){}\n```\nOutput:\n```text\n3\n```\n```\n4\n```", ("cpp", "int main(){}\n")),
    ("```java\nclass A{}\n```\n```python\nprint(2)\n```\n```java\nclass B{}\n```", ("python", "print(2)\n")),
    # fences indented in a list, and Windows line ends
    ("1. code:\n   ```python\n   print(1)\n   ```\n", ("python", "   print(1)\n")),
    ("```cpp\r\nint main(){}\r\n```\r\n", ("cpp", "int main(){}\n")),
    # untagged blocks: the language is guessed when nothing says
    ("```\n#include <cstdio>\nint main(){}\n```", ("cpp", "#include <cstdio>\nint main(){}\n")),
    ("```\nprint(1)\n```", ("python", "print(1)\n")),
    ("<code>print(1)</code>", ("python", "print(1)")),
    ("text <code>x</code> then <code>int main(){ return 0; }</code>", ("cpp", "int main(){ return 0; }")),
])
def test_extract_code(text, expected):
    assert extract_code(text) == expected


@pytest.mark.parametrize("text", [
    "", "no code here", "```python\nprint(1)\n",  # an unclosed (truncated) fence is no code
    "```python\n```", "```java\nclass A{}\n```", "inline `print(1)` only",
])
def test_extract_code_finds_nothing(text):
    assert extract_code(text) is None


def test_extract_code_uses_the_default_language_for_untagged_blocks():
    assert extract_code("```\nprint(1)\n```", default_language="cpp") == ("cpp", "print(1)\n")
    assert extract_code("```python\nprint(1)\n```", default_language="cpp") == ("python", "print(1)\n")
    with pytest.raises(ValueError, match="default_language 'rust'"):
        extract_code("```\nx\n```", default_language="rust")
    with pytest.raises(TypeError, match="must be a str"):
        extract_code(None)


# --- ground truth --------------------------------------------------------------------------------------------

def test_ground_truth_as_dict_json_or_numpy_arrays():
    as_json = parse_ground_truth(json.dumps(GT))
    assert as_json == parse_ground_truth(GT)
    assert as_json["private_tests"][1] == ("100 1\n", "101\n")
    # what pandas hands over after reading verl's parquet: numpy arrays instead of lists
    numpy_gt = {**GT, "private_tests": {k: np.array(v, dtype=object) for k, v in GT["private_tests"].items()},
                "memory_limit_bytes": np.int64(256_000_000), "time_limit": np.float64(1.0)}
    assert parse_ground_truth(numpy_gt) == as_json


@pytest.mark.parametrize("gt,message", [
    ({**GT, "time_limit": "fast"}, "ground_truth['time_limit'] must be seconds as a number, got 'fast'"),
    ({**GT, "time_limit": -1}, "must be positive seconds, got -1"),
    ({k: v for k, v in GT.items() if k != "private_tests"}, "ground_truth lacks ['private_tests']"),
    ({**GT, "private_tests": {"input": ["1"], "output": []}}, "has 1 inputs but 0 outputs"),
    ({**GT, "private_tests": ["1", "2"]}, "must be {'input': [...], 'output': [...]}"),
    ({**GT, "private_tests": {"input": "1 2", "output": "3"}}, "must be a list of strings, got str"),
    ("{not json", "ground_truth is a string but not JSON"),
    (42, "ground_truth must be a dict or a JSON string of one, got int"),
])
def test_bad_ground_truth_is_a_clear_error(gt, message):
    with pytest.raises(ValueError) as info:
        parse_ground_truth(gt)
    assert message in str(info.value)


def test_problem_without_private_tests_is_an_error(judge):
    gt = {**GT, "private_tests": {"input": [], "output": []}}
    with pytest.raises(ValueError, match="has no private tests"):
        compute_score("codecontests", response(SUM_PY), gt, judge=judge)


def test_unknown_reward_mode(judge):
    with pytest.raises(ValueError, match="reward_mode 'stage3' is not one of"):
        compute_score("codecontests", response(SUM_PY), GT, reward_mode="stage3", judge=judge)


# --- reward modes ------------------------------------------------------------------------------------------------

CASES = [  # (name, response) -> expected score per mode
    ("correct python", response(SUM_PY), {"codefu_stage2": 1.0, "codefu_stage1": 1.0, "binary": 1.0}),
    ("correct c++", response(SUM_CPP, "cpp"), {"codefu_stage2": 1.0, "codefu_stage1": 1.0, "binary": 1.0}),
    ("partial", response(PARTIAL_PY),
     {"codefu_stage2": 2 / 3, "codefu_stage1": (3 / 4) ** 1.5, "binary": 0.0}),
    ("time limit", response(TLE_PY), {"codefu_stage2": 0.0, "codefu_stage1": 0.0, "binary": 0.0}),
    ("runtime error", response("raise SystemExit(3)\n"),
     {"codefu_stage2": 0.0, "codefu_stage1": 0.0, "binary": 0.0}),
    ("compile error", response("int main( {\n", "cpp"),
     {"codefu_stage2": COMPILE_ERROR_REWARD, "codefu_stage1": COMPILE_ERROR_REWARD, "binary": 0.0}),
    ("syntax error", response("def f(:\n"),
     {"codefu_stage2": COMPILE_ERROR_REWARD, "codefu_stage1": COMPILE_ERROR_REWARD, "binary": 0.0}),
    ("no code", "I cannot solve this.", {"codefu_stage2": NO_CODE_REWARD, "codefu_stage1": NO_CODE_REWARD,
                                         "binary": 0.0}),
]
STATUS = {"correct python": "accepted", "correct c++": "accepted", "partial": "failed", "time limit": "time_limit",
          "runtime error": "failed", "compile error": "compile_error", "syntax error": "compile_error",
          "no code": "no_code"}


@pytest.mark.parametrize("mode", ["codefu_stage2", "codefu_stage1", "binary"])
@pytest.mark.parametrize("name,text,expected", CASES, ids=[c[0] for c in CASES])
def test_reward_modes(judge, mode, name, text, expected):
    out = compute_score("codecontests", text, GT, {"language": "python"}, reward_mode=mode, judge=judge)
    assert out["score"] == pytest.approx(expected[mode])
    assert type(out["score"]) is float
    assert out["status"] == STATUS[name]
    assert out["judge_error"] is False
    assert tuple(out) == RESULT_KEYS  # the same keys, in the same order, for every sample
    assert all(isinstance(v, (str, int, float, bool)) for v in out.values())


def test_stage2_counts_private_tests_only(judge):
    # wrong only on the public test: stage 2 does not see it, stage 1 does
    text = response("a, b = map(int, input().split())\nprint(a + b if a != 1 else 0)\n")
    stage2 = compute_score("codecontests", text, GT, judge=judge)
    stage1 = compute_score("codecontests", text, GT, reward_mode="stage1", judge=judge)
    assert (stage2["score"], stage2["passed"], stage2["total"]) == (1.0, 3, 3)
    assert stage1["score"] == pytest.approx((3 / 4) ** 1.5) and stage1["total"] == 4


def test_untagged_code_takes_the_language_from_extra_info(judge):
    text = f"```\n{SUM_CPP}```"
    assert compute_score("codecontests", text, GT, {"language": "cpp"}, judge=judge)["language"] == "cpp"


def test_ground_truth_as_json_string(judge):
    assert compute_score("codecontests", response(SUM_PY), json.dumps(GT), judge=judge)["score"] == 1.0


def test_float_tolerance_keyword(judge):
    gt = {**GT, "private_tests": {"input": ["1 3\n"], "output": ["0.333333\n"]}}
    text = response("a, b = map(int, input().split())\nprint(a / b)\n")
    assert compute_score("codecontests", text, gt, judge=judge)["score"] == 0.0
    assert compute_score("codecontests", text, gt, judge=judge, float_tolerance=1e-5)["score"] == 1.0


def test_batch_matches_single_calls(judge):
    texts = [c[1] for c in CASES]
    batch = compute_score_batch(["codecontests"] * len(texts), texts, [GT] * len(texts), judge=judge)
    single = [compute_score("codecontests", t, GT, judge=judge) for t in texts]
    assert [b["score"] for b in batch] == pytest.approx([s["score"] for s in single])
    assert [b["status"] for b in batch] == [s["status"] for s in single]
    with pytest.raises(ValueError, match="2 solution_strs but 1 ground_truths"):
        compute_score_batch(["x", "y"], texts[:2], [GT], judge=judge)


def test_the_default_judge_is_used_when_none_is_given(monkeypatch):
    monkeypatch.setenv("CODEFU_JUDGE_WORKERS", "1")
    from codefu_helpers.sandbox import shutdown_default_judge
    shutdown_default_judge()
    try:
        assert compute_score("codecontests", response(SUM_PY), GT)["score"] == 1.0
    finally:
        shutdown_default_judge()


def test_a_judge_failure_is_marked_and_never_a_wrong_answer():
    with Judge(workers=1) as j:
        stop = threading.Event()

        def kill_sandboxes():
            while not stop.is_set():
                server = j._workers[0].server
                if server is not None and server.alive:
                    try:
                        os.killpg(server.proc.pid, signal.SIGKILL)
                    except OSError:
                        pass
                time.sleep(0.05)

        killer = threading.Thread(target=kill_sandboxes)
        killer.start()
        try:
            slow = response("import time\ntime.sleep(0.5)\n" + SUM_PY)
            out = compute_score("codecontests", slow, GT, judge=j)
        finally:
            stop.set()
            killer.join()
        assert out["status"] == "judge_error" and out["judge_error"] is True
        assert out["score"] == 0.0 and type(out["score"]) is float
        assert "sandbox" in out["judge_error_message"]
        assert tuple(out) == RESULT_KEYS
        assert compute_score("codecontests", response(SUM_PY), GT, judge=j)["score"] == 1.0  # recovered


# --- verl --------------------------------------------------------------------------------------------------------

_VERL_SCRIPT = """
import json, sys
from omegaconf import OmegaConf
from verl.trainer.ppo.reward import get_custom_reward_fn
config = OmegaConf.create({"reward": {"custom_reward_function": {
    "path": "pkg://codefu_helpers.reward", "name": "compute_score",
    "reward_kwargs": {"reward_mode": "codefu_stage1"}}}})
fn = get_custom_reward_fn(config)
gt = json.loads(sys.argv[1])
outs = [fn(data_source="codecontests", solution_str=s, ground_truth=gt, extra_info={"language": "python",
        "num_turns": None, "rollout_reward_scores": {}}) for s in json.loads(sys.argv[2])]
print(json.dumps(outs))
"""


@pytest.mark.slow
def test_verl_loads_and_calls_compute_score(tmp_path):
    """verl's own loader (`custom_reward_function.path=pkg://codefu_helpers.reward`) in verl's environment."""
    assert VERL_PYTHON.exists(), "the .venv-job environment is missing: run scripts/make_job_env.sh"
    texts = [response(SUM_PY), response(PARTIAL_PY), "no code"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CODEFU_JUDGE_WORKERS": "1"}
    proc = subprocess.run([str(VERL_PYTHON), "-c", _VERL_SCRIPT, json.dumps(GT), json.dumps(texts)], env=env,
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    outs = json.loads(proc.stdout.strip().splitlines()[-1])
    assert [o["score"] for o in outs] == pytest.approx([1.0, (3 / 4) ** 1.5, NO_CODE_REWARD])
    assert all(o["reward_mode"] == "codefu_stage1" for o in outs)


# --- float answers -------------------------------------------------------------------------------------------

# the jury's answer to "1 3" is 1/3 printed with 6 digits; a sample that prints 7 is off by 4e-7
FLOAT_GT = {**GT, "private_tests": {"input": ["1 3\n"], "output": ["0.333333\n"]}, "float_tolerance": 1e-6}
PRINTS_CLOSE = response("input()\nprint('0.3333334')\n")
PRINTS_FAR = response("input()\nprint('0.34')\n")


def test_float_tolerance_comes_from_the_ground_truth(judge):
    assert compute_score("codecontests", PRINTS_CLOSE, FLOAT_GT, judge=judge)["score"] == 1.0
    assert compute_score("codecontests", PRINTS_CLOSE, json.dumps(FLOAT_GT), judge=judge)["score"] == 1.0
    assert compute_score("codecontests", PRINTS_FAR, FLOAT_GT, judge=judge)["score"] == 0.0
    exact = {**FLOAT_GT, "float_tolerance": None}
    assert compute_score("codecontests", PRINTS_CLOSE, exact, judge=judge)["score"] == 0.0
    absent = {k: v for k, v in FLOAT_GT.items() if k != "float_tolerance"}  # a parquet from before the field
    assert compute_score("codecontests", PRINTS_CLOSE, absent, judge=judge)["score"] == 0.0
    # an explicit argument wins over the ground truth, both ways
    assert compute_score("codecontests", PRINTS_CLOSE, FLOAT_GT, judge=judge, float_tolerance=1e-9)["score"] == 0.0
    assert compute_score("codecontests", PRINTS_CLOSE, exact, judge=judge, float_tolerance=1e-6)["score"] == 1.0


def test_batch_takes_each_problems_float_tolerance(judge):
    exact = {**FLOAT_GT, "float_tolerance": None}
    out = compute_score_batch(["codecontests"] * 3, [PRINTS_CLOSE, PRINTS_CLOSE, PRINTS_FAR],
                              [FLOAT_GT, exact, FLOAT_GT], judge=judge)
    assert [o["score"] for o in out] == [1.0, 0.0, 0.0]
    out = compute_score_batch(["codecontests"], [PRINTS_CLOSE], [FLOAT_GT], judge=judge, float_tolerance=1e-9)
    assert out[0]["score"] == 0.0


def test_ground_truth_float_tolerance_is_parsed_and_checked():
    assert parse_ground_truth(GT)["float_tolerance"] is None  # absent: exact comparison
    assert parse_ground_truth({**GT, "float_tolerance": None})["float_tolerance"] is None
    assert parse_ground_truth({**GT, "float_tolerance": float("nan")})["float_tolerance"] is None  # pandas' null
    assert parse_ground_truth({**GT, "float_tolerance": np.float64(1e-6)})["float_tolerance"] == 1e-6
    assert parse_ground_truth(json.dumps(FLOAT_GT))["float_tolerance"] == 1e-6
    for bad in ("1e-6", True, -1e-6, 1.5, [1e-6]):
        with pytest.raises(ValueError, match=r"ground_truth\['float_tolerance'\] must be"):
            parse_ground_truth({**GT, "float_tolerance": bad})
