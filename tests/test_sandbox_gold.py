"""The judge against the bundled sample's own solutions: gold solutions pass (also with every core
oversubscribed four times over, where a wall-clock judge would hand out false time-limit verdicts), and each
incorrect solution gets the verdict its author named it for (incorrect_<wa|tle|re|ce>_N).

Both isolation tiers: bwrap here, and the container tier where it is used, inside a process that may not create
namespaces (`docker_like`, tests/test_sandbox_container.py), with `isolation="auto"` picking it.
"""

import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from codefu_helpers.data import load_problems
from codefu_helpers.sandbox import Judge
from codefu_helpers.reward_validation import items_from_rows, validate
from test_sandbox_container import run_docker_like

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"
SOURCES = ROOT / "data" / "sources" / "problems"


def gold_under_oversubscription(isolation: str) -> dict:
    """Judges the gold solutions of 20 problems while 4 x cores busy loops compete for the CPU."""
    cores = len(os.sched_getaffinity(0))
    items = [i for i in items_from_rows(load_problems(SAMPLE), SOURCES, max_problems=20) if i.kind == "gold"]
    with Judge(workers=cores, isolation=isolation) as judge:
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
    return {"isolation": judge.isolation, "items": len(items), "records": len(records), "failed": failed}


def intended_verdicts(isolation: str) -> dict:
    """Judges every solution of the first dozen problems (notebook 02, run by tests/test_notebooks.py, does all)."""
    items = items_from_rows(load_problems(SAMPLE), SOURCES, max_problems=12)
    with Judge(isolation=isolation) as judge:
        records = validate(judge, items)
    wrong = [(r["problem"], r["kind"], r["language"], r["intended"], r["verdict"], r["note"][:120])
             for r in records if not r["as_intended"]]
    return {"isolation": judge.isolation, "items": len(items), "records": len(records), "wrong": wrong,
            "kinds": sorted({f"{i.kind} {i.intended}" for i in items})}


def in_tier(tier: str, function) -> dict:
    """Runs one of the functions above in the bwrap tier here, or in the container tier under docker_like."""
    if tier == "bwrap":
        return function("bwrap")
    script = textwrap.dedent(f"""
        import json
        from test_sandbox_gold import {function.__name__}
        print(json.dumps({function.__name__}("auto")))
    """)
    out, _ = run_docker_like(script)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("tier", ["bwrap", "container"])
def test_gold_solutions_pass_under_4x_oversubscription(tier):
    out = in_tier(tier, gold_under_oversubscription)
    assert out["isolation"] == tier
    assert out["items"] > 0, "no gold solutions in the sample"
    assert out["failed"] == []
    assert out["records"] == out["items"]


@pytest.mark.slow
@pytest.mark.parametrize("tier", ["bwrap", "container"])
def test_every_solution_gets_its_intended_verdict(tier):
    out = in_tier(tier, intended_verdicts)
    assert out["isolation"] == tier
    assert any(kind.startswith("incorrect") and kind != "incorrect not OK" for kind in out["kinds"])
    assert out["wrong"] == []
    assert out["records"] == out["items"]
