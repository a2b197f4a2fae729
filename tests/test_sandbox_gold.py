"""The judge against the bundled sample's own solutions: gold solutions pass (also with every core
oversubscribed four times over, where a wall-clock judge would hand out false time-limit verdicts), and each
incorrect solution gets the verdict its author named it for (incorrect_<wa|tle|re|ce>_N)."""

import os
import subprocess
from pathlib import Path

import pytest

from codefu_helpers.data import load_problems
from codefu_helpers.sandbox import Judge
from codefu_helpers.sandbox.validation import items_from_rows, validate

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"
SOURCES = ROOT / "data" / "sources" / "problems"


@pytest.fixture(scope="module")
def rows():
    return load_problems(SAMPLE)


@pytest.mark.slow
def test_gold_solutions_pass_under_4x_oversubscription(rows):
    cores = len(os.sched_getaffinity(0))
    items = [i for i in items_from_rows(rows, SOURCES, max_problems=20) if i.kind == "gold"]
    assert items, "no gold solutions in the sample"
    with Judge(workers=cores) as judge:
        # busy loops so that 4 x cores processes want the CPU while the judge's workers run
        burners = [subprocess.Popen(["/usr/bin/python3", "-c", "while True: pass"])
                   for _ in range(4 * cores - judge.workers)]
        try:
            records = validate(judge, items)
        finally:
            for proc in burners:
                proc.kill()
                proc.wait()
    failed = [(r["problem"], r["language"], r["verdict"], r["note"]) for r in records if r["verdict"] != "OK"]
    assert not failed
    assert len(records) == len(items)


@pytest.mark.slow
def test_every_solution_gets_its_intended_verdict(rows):
    # the first dozen problems; notebook 02 (executed by tests/test_notebooks.py) runs them all
    items = items_from_rows(rows, SOURCES, max_problems=12)
    assert any(i.kind == "incorrect" and i.intended != "not OK" for i in items)
    with Judge() as judge:
        records = validate(judge, items)
    wrong = [(r["problem"], r["kind"], r["language"], r["intended"], r["verdict"], r["note"][:120])
             for r in records if not r["as_intended"]]
    assert not wrong
