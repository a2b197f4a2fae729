"""Build the bundled CodeContests-format sample (`data/sample/`) from its authored sources.

Every problem in `data/sources/problems/<slug>/` was written for this project. A problem folder holds:

    meta.yaml            name, cf_rating, cf_tags, time_limit (seconds), memory_limit_mb, difficulty, ...
    statement.md         the statement, in the plain-text style of CodeContests descriptions
    gen.py               `generate(rng) -> {"public": [...], "private": [...], "generated": [...]}` test inputs
    correct.py           a correct Python 3 solution (stdin -> stdout)
    correct.cpp          a correct C++17 solution
    incorrect_<kind>_<n>.<py|cpp>   optional wrong solutions; kind is wa, tle, re or ce (what it should get)

Test *outputs* are never written by hand: this script runs `correct.py` on every generated input, checks that
`correct.cpp` prints the same tokens, and checks that every incorrect solution really fails, on the public and
private tests, in the way its name says. Then it writes one CodeContests row per problem, plus the derived rows that the filters must drop
(`data/sources/derived.yaml`), to `data/sample/code_contests_sample.jsonl`.

Run it (trusted code only: the reference solutions are ours, so no sandbox is used here):

    python scripts/build_sample.py                 # build everything
    python scripts/build_sample.py --only two_sum  # check one problem while writing it, writes nothing
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "data" / "sources"
OUT = ROOT / "data" / "sample" / "code_contests_sample.jsonl"

# CodeContests class labels (datasets ClassLabel integers).
LANG_ID = {"py": 3, "cpp": 2}  # PYTHON3, CPP
SOURCE_ID = {"UNKNOWN_SOURCE": 0, "CODECHEF": 1, "CODEFORCES": 2, "HACKEREARTH": 3, "CODEJAM": 4, "ATCODER": 5, "AIZU": 6}
DIFFICULTY_ID = {name: i for i, name in enumerate(
    ["UNKNOWN_DIFFICULTY", "EASY", "MEDIUM", "HARD", "HARDER", "HARDEST", "EXTERNAL"]
    + [chr(ord("A") + k) for k in range(22)]
)}
INCORRECT_KINDS = ("wa", "tle", "re", "ce")
MAX_TEST_BYTES = 200_000        # keep the repository small: no single test input above this
MAX_PROBLEM_BYTES = 400_000     # nor a problem's tests (inputs and outputs) in total
GOLD_BUDGET = 0.5               # gold solutions must use at most this fraction of the time limit (CPU seconds)


def tokens(text: str) -> list[str]:
    return text.split()


def load_generator(path: Path):
    spec = importlib.util.spec_from_file_location(f"gen_{path.parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate


def compile_cpp(source: Path, workdir: Path) -> tuple[Path | None, str]:
    binary = workdir / (source.stem + ".bin")
    proc = subprocess.run(
        ["g++", "-std=c++17", "-O2", "-pipe", "-o", str(binary), str(source)],
        capture_output=True, text=True, timeout=120,
    )
    return (binary if proc.returncode == 0 else None), proc.stderr


class _TimedPopen(subprocess.Popen):
    """Popen that keeps the child's resource usage (CPU seconds), which stays honest on a loaded machine."""

    rusage = None

    def _try_wait(self, wait_flags):  # CPython's hook around waitpid; wait4 also returns the rusage
        try:
            pid, status, usage = os.wait4(self.pid, wait_flags)
        except ChildProcessError:
            return (self.pid, 0)
        if pid == self.pid:
            self.rusage = usage
        return (pid, status)


def run(cmd: list[str], stdin: str, timeout: float) -> tuple[str, int | None, float]:
    """Returns (stdout, returncode or None on timeout, CPU seconds of the child)."""
    with _TimedPopen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            out, _ = proc.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            return "", None, timeout
        cpu = proc.rusage.ru_utime + proc.rusage.ru_stime if proc.rusage else 0.0
        return out, proc.returncode, cpu


def command_for(path: Path, workdir: Path) -> tuple[list[str] | None, str]:
    if path.suffix == ".py":
        return [sys.executable, str(path)], ""
    binary, err = compile_cpp(path, workdir)
    return ([str(binary)] if binary else None), err


class ProblemError(Exception):
    pass


def build_problem(folder: Path) -> tuple[dict, list[str]]:
    """Returns (CodeContests row, report lines). Raises ProblemError when the problem is inconsistent."""
    meta = yaml.safe_load((folder / "meta.yaml").read_text())
    statement = (folder / "statement.md").read_text().strip() + "\n"
    time_limit = float(meta["time_limit"])
    seed = int(hashlib.sha256(folder.name.encode()).hexdigest()[:8], 16)
    tests = load_generator(folder / "gen.py")(random.Random(seed))
    for key in ("public", "private", "generated"):
        if key not in tests:
            raise ProblemError(f"{folder.name}: gen.py must return a '{key}' list (may be empty for 'generated')")
    all_inputs = [s for key in ("public", "private", "generated") for s in tests[key]]
    if not tests["public"] or not tests["private"]:
        raise ProblemError(f"{folder.name}: needs at least one public and one private test")
    for s in all_inputs:
        if not isinstance(s, str) or not s.endswith("\n"):
            raise ProblemError(f"{folder.name}: every test input must be a str ending in a newline: {s[:60]!r}")
        if len(s.encode()) > MAX_TEST_BYTES:
            raise ProblemError(f"{folder.name}: a test input has {len(s.encode())} bytes > {MAX_TEST_BYTES}")
    report = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        gold_py = [sys.executable, str(folder / "correct.py")]
        gold_cpp, err = command_for(folder / "correct.cpp", workdir)
        if gold_cpp is None:
            raise ProblemError(f"{folder.name}: correct.cpp does not compile:\n{err}")
        outputs, worst = [], {"py": 0.0, "cpp": 0.0}
        for i, test_input in enumerate(all_inputs):
            out, rc, secs = run(gold_py, test_input, timeout=20 * time_limit)
            if rc != 0:
                raise ProblemError(f"{folder.name}: correct.py failed on test {i} (rc={rc})")
            worst["py"] = max(worst["py"], secs)
            out_cpp, rc, secs = run(gold_cpp, test_input, timeout=20 * time_limit)
            if rc != 0:
                raise ProblemError(f"{folder.name}: correct.cpp failed on test {i} (rc={rc})")
            worst["cpp"] = max(worst["cpp"], secs)
            if tokens(out) != tokens(out_cpp):
                raise ProblemError(
                    f"{folder.name}: correct.py and correct.cpp disagree on test {i}:\n"
                    f"input {test_input[:200]!r}\npy  {out[:200]!r}\ncpp {out_cpp[:200]!r}")
            if not out.strip():
                raise ProblemError(f"{folder.name}: empty expected output on test {i}")
            outputs.append(out)
        total = sum(len(s.encode()) for s in all_inputs) + sum(len(s.encode()) for s in outputs)
        if total > MAX_PROBLEM_BYTES:
            raise ProblemError(f"{folder.name}: tests take {total} bytes > {MAX_PROBLEM_BYTES}")
        for lang, secs in worst.items():
            if secs > GOLD_BUDGET * time_limit:
                raise ProblemError(
                    f"{folder.name}: correct.{lang} needs {secs:.2f}s on its slowest test, over "
                    f"{GOLD_BUDGET:.0%} of the {time_limit}s limit: make it faster or the tests smaller")
        report.append(f"{folder.name}: {len(all_inputs)} tests, gold py {worst['py']:.2f}s cpp {worst['cpp']:.2f}s")

        incorrect = {"language": [], "solution": []}
        for path in sorted(folder.glob("incorrect_*")):
            kind = path.stem.split("_")[1]
            if kind not in INCORRECT_KINDS or path.suffix[1:] not in LANG_ID:
                raise ProblemError(f"{folder.name}: bad incorrect solution name {path.name}: "
                                   f"use incorrect_<{'|'.join(INCORRECT_KINDS)}>_<n>.<py|cpp>")
            # judged on public + private tests only: those are what the reward uses, so an "incorrect" solution
            # that only generated tests catch would earn full reward and mislabel the sample
            n_scored = len(tests["public"]) + len(tests["private"])
            verdict = judge_trusted(path, all_inputs[:n_scored], outputs[:n_scored], time_limit, workdir)
            if verdict != kind.upper():
                raise ProblemError(f"{folder.name}: {path.name} should get {kind.upper()} but got {verdict}")
            incorrect["language"].append(LANG_ID[path.suffix[1:]])
            incorrect["solution"].append(path.read_text())
            report.append(f"  {path.name}: {verdict} as intended")

    n_pub, n_priv = len(tests["public"]), len(tests["private"])
    split = lambda lo, hi: {"input": all_inputs[lo:hi], "output": outputs[lo:hi]}  # noqa: E731
    seconds = int(time_limit)
    row = {
        "name": meta["name"],
        "description": statement,
        "public_tests": split(0, n_pub),
        "private_tests": split(n_pub, n_pub + n_priv),
        "generated_tests": split(n_pub + n_priv, len(all_inputs)),
        "source": SOURCE_ID[meta.get("source", "CODEFORCES")],
        "difficulty": DIFFICULTY_ID[meta.get("difficulty", "A")],
        "solutions": {
            "language": [LANG_ID["py"], LANG_ID["cpp"]],
            "solution": [(folder / "correct.py").read_text(), (folder / "correct.cpp").read_text()],
        },
        "incorrect_solutions": incorrect,
        "cf_contest_id": int(meta["cf_contest_id"]),
        "cf_index": str(meta["cf_index"]),
        "cf_points": float(meta.get("cf_points", 0.0)),
        "cf_rating": int(meta["cf_rating"]),
        "cf_tags": list(meta.get("cf_tags", [])),
        "is_description_translated": False,
        "untranslated_description": "",
        "time_limit": {"seconds": seconds, "nanos": int(round((time_limit - seconds) * 1e9))},
        "memory_limit_bytes": int(meta.get("memory_limit_mb", 256)) * 1_000_000,
        "input_file": "",
        "output_file": "",
    }
    return row, report


def judge_trusted(path: Path, inputs: list[str], outputs: list[str], time_limit: float, workdir: Path) -> str:
    """Verdict of one of our own incorrect solutions (build-time check; the real judge is sandboxed)."""
    cmd, _ = command_for(path, workdir)
    if cmd is None:
        return "CE"
    for test_input, expected in zip(inputs, outputs):  # stop at the first failure, like Codeforces
        out, rc, secs = run(cmd, test_input, timeout=3 * time_limit + 2)  # wall backstop; verdict on CPU time
        if rc is None or secs > time_limit:
            return "TLE"
        if rc != 0:
            return "RE"
        if tokens(out) != tokens(expected):
            return "WA"
    return "OK"


def derived_rows(rows: dict[str, dict]) -> list[dict]:
    """Rows the filters must drop, derived from authored problems (see data/sources/derived.yaml)."""
    spec = yaml.safe_load((SOURCES / "derived.yaml").read_text())
    out = []
    for item in spec:
        base = rows.get(item["from"])
        if base is None:
            raise ProblemError(f"derived.yaml: unknown problem {item['from']!r}")
        row = copy.deepcopy(base)
        row["name"] = item["name"]
        # Keep derived rows small: they exist to be dropped, so a few tests are enough.
        for key in ("private_tests", "generated_tests"):
            row[key] = {k: v[:2 if key == "private_tests" else 0] for k, v in row[key].items()}
        for key, value in item.get("set", {}).items():
            row[key] = value
        if item.get("description_transform") == "reflow":
            # Same statement, different whitespace and case: a near-duplicate the dedupe step must catch.
            row["description"] = "  " + " \n".join(row["description"].upper().split(" ")) + "\n\n"
        if "append_description" in item:
            row["description"] = row["description"] + item["append_description"]
        out.append(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="check just these problem folders; writes nothing")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--output", type=Path, default=None,
                        help=f"where to write the rows (default {OUT.relative_to(ROOT)}); with --only, writes those")
    args = parser.parse_args()
    if shutil.which("g++") is None:
        sys.exit("g++ is needed to build the sample: apt-get install g++")
    folders = sorted(p for p in (SOURCES / "problems").iterdir() if (p / "meta.yaml").exists())
    if args.only:
        folders = [f for f in folders if f.name in set(args.only)]
        if not folders:
            sys.exit(f"no problem folder named {args.only} under {SOURCES / 'problems'}")
    rows, errors = {}, []
    with ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(build_problem, f): f for f in folders}
        for future, folder in futures.items():
            try:
                row, report = future.result()
                rows[folder.name] = row
                print("\n".join(report), flush=True)
            except ProblemError as exc:
                errors.append(str(exc))
            except Exception as exc:  # a broken generator or meta file
                errors.append(f"{folder.name}: {type(exc).__name__}: {exc}")
    if errors:
        print("\nFAILED:\n" + "\n".join(errors), file=sys.stderr)
        sys.exit(1)
    if args.only and args.output is None:
        print(f"\n{len(rows)} problem(s) OK (nothing written: --only)")
        return
    out_path = args.output or OUT
    names = [r["name"] for r in rows.values()]
    if len(set(names)) != len(names):
        sys.exit("two problems share a name: names must be unique")
    all_rows = [rows[k] for k in sorted(rows)] + (derived_rows(rows) if "001_candy_split" in rows else [])
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with out_path.open("w") as fh:
        for row in all_rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"\nwrote {len(all_rows)} rows ({len(rows)} authored, {len(all_rows) - len(rows)} derived) "
          f"to {out_path} ({out_path.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
