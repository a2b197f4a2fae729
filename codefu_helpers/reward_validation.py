"""Validating the judge and the rewards on a dataset: every correct ("gold") and incorrect solution of every
problem through the judge, as notebook 02 shows it.

    from codefu_helpers.data import load_problems
    from codefu_helpers.sandbox import Judge
    from codefu_helpers.reward_validation import items_from_rows, validate
    rows = load_problems("data/sample")
    items = items_from_rows(rows, sources_dir="data/sources/problems")
    with Judge() as judge:
        records = validate(judge, items)        # one dict per solution: verdict, rewards per mode, ...

Each solution runs once, on the private tests, then the public ones, then the generated ones, stopping at
the first time-limit verdict. That one run gives all three reward modes exactly: stage 2 scores the private
prefix, stage 1 and binary the private + public prefix (a TLE further on does not change a prefix; a TLE inside
it is what ends it). The verdict is that of the whole run: the authors of the bundled sample named their
incorrect solutions after what they get on *all* tests, and some fail only on generated ones.

The intended verdict of an incorrect solution is known for the bundled sample only: its authors named the
files `incorrect_<wa|tle|re|ce>_N.<py|cpp>` (`data/sources/problems/<slug>/`), and the row keeps them in sorted
file order. For other datasets an incorrect solution is just expected not to pass.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from .data import LANGUAGE_IDS
from .reward import REWARD_MODES, score_sample
from .sandbox.results import SampleResult, Submission, Verdict

LANGUAGE_OF_ID = {i: name for name, i in LANGUAGE_IDS.items()}  # CodeContests ids the judge runs (not 1, Python 2)
_SUFFIX = {"py": "python", "cpp": "cpp"}


@dataclass(frozen=True)
class ValidationItem:
    problem: str
    kind: str                 # "gold" or "incorrect"
    index: int                # position among the row's solutions of that kind
    language: str
    source: str
    intended: str             # "OK" for gold, "WA"/"TLE"/"RE"/"CE" when known, else "not OK"
    private: tuple            # (input, output) pairs
    public: tuple
    generated: tuple
    time_limit: float
    memory_limit_bytes: int


def time_limit_seconds(row: dict) -> float:
    tl = row.get("time_limit")
    if isinstance(tl, dict):
        return float(tl.get("seconds") or 0) + float(tl.get("nanos") or 0) / 1e9
    return float(tl)


def intended_verdicts(sources_dir: str | Path) -> dict[str, list[tuple[str, str]]]:
    """problem name -> [(language, intended verdict)] of its incorrect solutions, in the row's order."""
    import yaml  # only needed for the bundled sample's sources

    out = {}
    for folder in sorted(Path(sources_dir).iterdir()):
        meta = folder / "meta.yaml"
        if not meta.exists():
            continue
        name = yaml.safe_load(meta.read_text())["name"]
        kinds = []
        for path in sorted(folder.glob("incorrect_*")):
            kind = path.stem.split("_")[1].upper()
            kinds.append((_SUFFIX.get(path.suffix[1:], "?"), kind))
        out[name] = kinds
    return out


def _pairs(block) -> tuple:
    if not block:
        return ()
    return tuple(zip(list(block.get("input") or []), list(block.get("output") or [])))


def items_from_rows(rows, sources_dir: str | Path | None = None, max_problems: int | None = None
                    ) -> list[ValidationItem]:
    """The solutions to validate. With `sources_dir` (the bundled sample) only authored problems are taken (the
    sample's derived rows are copies made to exercise the filters) and incorrect ones carry their intended
    verdict. Rows without tests and repeated problems are skipped."""
    intended = intended_verdicts(sources_dir) if sources_dir is not None else None
    items, seen = [], set()
    for row in rows:
        name = row.get("name", "")
        private, public = _pairs(row.get("private_tests")), _pairs(row.get("public_tests"))
        key = hashlib.sha1(repr((private, public)).encode()).hexdigest()
        if not private and not public or key in seen or (intended is not None and name not in intended):
            continue
        seen.add(key)
        if max_problems is not None and len({i.problem for i in items}) >= max_problems:
            break
        common = dict(problem=name, private=private, public=public, generated=_pairs(row.get("generated_tests")),
                      time_limit=time_limit_seconds(row),
                      memory_limit_bytes=int(row.get("memory_limit_bytes") or 256_000_000))
        for kind in ("gold", "incorrect"):
            block = row.get("solutions" if kind == "gold" else "incorrect_solutions") or {}
            kinds = intended.get(name, []) if intended is not None and kind == "incorrect" else None
            for index, (lang_id, source) in enumerate(zip(block.get("language", []), block.get("solution", []))):
                language = LANGUAGE_OF_ID.get(int(lang_id))
                if language is None:
                    continue
                if kind == "gold":
                    expect = "OK"
                elif kinds is not None and index < len(kinds) and kinds[index][0] == language:
                    expect = kinds[index][1]
                else:
                    expect = "not OK"
                items.append(ValidationItem(kind=kind, index=index, language=language, source=source,
                                            intended=expect, **common))
    return items


def _prefix(result: SampleResult, n: int) -> SampleResult:
    """The result restricted to the first n tests (the private ones)."""
    if result.verdict in (Verdict.CE, Verdict.JUDGE_ERROR):
        return SampleResult(result.verdict, 0, n, [], result.compile_output, result.wall_seconds,
                            result.judge_error, result.language)
    tests = result.tests[:n]
    passed = sum(t.verdict is Verdict.OK for t in tests)
    failed = [t.verdict for t in tests if t.verdict is not Verdict.OK]
    verdict = Verdict.OK if passed == n else (failed[0] if failed else Verdict.TLE)
    return SampleResult(verdict, passed, n, tests, "", result.wall_seconds, None, result.language)


def validate(judge, items: list[ValidationItem]) -> list[dict]:
    """Judges every item concurrently; one record per item with its verdict and its reward in every mode."""
    subs = [Submission(i.language, i.source, i.private + i.public + i.generated, i.time_limit,
                       i.memory_limit_bytes, stop_at_first_tle=True) for i in items]
    results = judge.run_many(subs)
    records = []
    for item, result in zip(items, results):
        private_only = _prefix(result, len(item.private))
        reward_tests = _prefix(result, len(item.private) + len(item.public))
        rewards = {mode: score_sample(private_only if mode == "codefu_stage2" else reward_tests, mode)["score"]
                   for mode in REWARD_MODES}
        first_bad = next((t for t in result.tests if t.verdict is not Verdict.OK), None)
        records.append({
            "problem": item.problem, "kind": item.kind, "language": item.language, "intended": item.intended,
            "verdict": result.verdict.value, "passed": result.passed, "total": result.total,
            "as_intended": (result.verdict.value == item.intended) if item.intended != "not OK"
            else result.verdict not in (Verdict.OK, Verdict.JUDGE_ERROR),
            "seconds": round(result.wall_seconds, 4),
            "cpu_seconds": round(sum(t.cpu_seconds or 0.0 for t in result.tests), 4),
            "note": (first_bad.note if first_bad else result.compile_output[:200] or (result.judge_error or "")),
            **{f"reward_{mode}": score for mode, score in rewards.items()},
        })
    return records
