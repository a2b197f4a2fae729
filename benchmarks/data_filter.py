"""Benchmark: filtering a full-size CodeContests dataset, streaming vs loading everything.

Writes a synthetic dataset shaped like `deepmind/code_contests` train (13,328 rows in 39 parquet shards, most
bytes in generated tests and solutions), then runs, each in a fresh process so peak memory is its own:

    stream              codefu_helpers.data.prepare_dataset (reads only the columns it needs, batch by batch)
    stream+generated    the same, also keeping generated tests as reward tests (reads the big column too)
    load-all            the obvious way: pandas.read_parquet of every shard, then the same per-row checks
    load-all+generated  the same, keeping generated tests

and prints a table of seconds, peak RSS and the ratio to load-all. Usage:

    python benchmarks/data_filter.py                        # full size (about 3 GB of test strings)
    python benchmarks/data_filter.py --rows 200 --scale 0.05  # quick check
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROWS = 13_328
SHARDS = 39


def make_dataset(folder: Path, rows: int, scale: float, seed: int = 0) -> dict:
    """Synthetic CodeContests rows. Sizes follow the real dataset's shape (scale=1: ~3 GB of strings)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(seed)
    alphabet = "0123456789 \n"
    blob = "".join(rng.choice(alphabet) for _ in range(1 << 20))  # strings are slices of this: fast to make

    def text(n: int) -> str:
        start = rng.randrange(0, len(blob) - n - 1) if n < len(blob) else 0
        return blob[start:start + n] + "\n"

    def tests(count: int, size: int) -> dict:
        return {"input": [text(size) for _ in range(count)], "output": [text(max(1, size // 8)) for _ in range(count)]}

    folder.mkdir(parents=True, exist_ok=True)
    per_shard = -(-rows // SHARDS)
    total_bytes = 0
    index = 0
    for shard in range(SHARDS):
        batch = []
        for _ in range(min(per_shard, rows - index)):
            n_generated = int(rng.randint(50, 150) * scale) + 1
            row = {
                "name": f"{index}_A. Synthetic {index}",
                "description": f"Problem {index}. " + "Read the statement carefully. " * rng.randint(20, 80),
                "public_tests": tests(1, 60),
                "private_tests": tests(rng.randint(1, 8), 400),
                "generated_tests": tests(n_generated, int(1800 * scale) + 20),
                "source": 2 if rng.random() < 0.6 else rng.choice([1, 3, 4, 5, 6]),
                "difficulty": 7,
                "solutions": {"language": [2] * 10, "solution": [text(int(2000 * scale) + 50) for _ in range(10)]},
                "incorrect_solutions": {"language": [2] * 10,
                                        "solution": [text(int(2000 * scale) + 50) for _ in range(10)]},
                "cf_contest_id": index, "cf_index": "A", "cf_points": 0.0,
                "cf_rating": rng.choice([0, 800, 1000, 1200, 1500, 1900, 2200, 2400, 2800]),
                "cf_tags": ["math"], "is_description_translated": False, "untranslated_description": "",
                "time_limit": {"seconds": 2, "nanos": 0}, "memory_limit_bytes": 256_000_000,
                "input_file": "", "output_file": "",
            }
            total_bytes += sum(len(s) for k in ("public_tests", "private_tests", "generated_tests")
                               for part in row[k].values() for s in part)
            total_bytes += sum(len(s) for k in ("solutions", "incorrect_solutions") for s in row[k]["solution"])
            batch.append(row)
            index += 1
        if batch:
            pq.write_table(pa.Table.from_pylist(batch), folder / f"train-{shard:05d}-of-{SHARDS:05d}.parquet")
    disk = sum(p.stat().st_size for p in folder.glob("*.parquet"))
    return {"rows": index, "string_bytes": total_bytes, "disk_bytes": disk}


def run_stream(dataset: str, out: str, generated: bool) -> dict:
    from codefu_helpers.data import FilterConfig, prepare_dataset

    report = prepare_dataset(dataset, out, FilterConfig(include_generated_tests=generated))
    return {"kept": report.kept, "dropped": len(report.dropped)}


def run_load_all(dataset: str, out: str, generated: bool) -> dict:
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from codefu_helpers.data import VERL_SCHEMA, FilterConfig, check_row

    frame = pd.concat([pd.read_parquet(p) for p in sorted(Path(dataset).glob("*.parquet"))], ignore_index=True)
    rows = frame.to_dict("records")  # the whole dataset as Python objects, next to the frame
    cfg, seen, kept = FilterConfig(include_generated_tests=generated), set(), []
    for row in rows:
        for key in ("public_tests", "private_tests", "generated_tests"):
            row[key] = {k: list(v) for k, v in row[key].items()}
        row["cf_tags"] = list(row["cf_tags"])
        verl_row, dropped = check_row(row, cfg, seen)
        if verl_row is not None:
            verl_row["extra_info"]["split"] = "train"
            kept.append(verl_row)
    pq.write_table(pa.Table.from_pylist(kept, schema=VERL_SCHEMA), Path(out) / "train.parquet")
    return {"kept": len(kept), "dropped": len(rows) - len(kept)}


METHODS = {"stream": (run_stream, False), "stream+generated": (run_stream, True),
           "load-all": (run_load_all, False), "load-all+generated": (run_load_all, True)}


def child(method: str, dataset: str, out: str) -> None:
    start = time.perf_counter()
    fn, generated = METHODS[method]
    result = fn(dataset, out, generated)
    result["seconds"] = time.perf_counter() - start
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("RESULT " + json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=ROWS)
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies test and solution sizes")
    parser.add_argument("--workdir", default=None, help="where the synthetic dataset goes (default: a temp dir)")
    parser.add_argument("--methods", nargs="*", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--child", nargs=3, metavar=("METHOD", "DATASET", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="codefu-bench-"))
    try:
        start = time.perf_counter()
        shape = make_dataset(workdir / "dataset", args.rows, args.scale)
        print(f"synthetic dataset: {shape['rows']} rows, {shape['string_bytes'] / 1e9:.2f} GB of strings, "
              f"{shape['disk_bytes'] / 1e9:.2f} GB on disk (made in {time.perf_counter() - start:.0f} s)", flush=True)
        results = {}
        for method in args.methods:
            out = workdir / f"out-{method}"
            out.mkdir()
            proc = subprocess.run([sys.executable, __file__, "--child", method, str(workdir / "dataset"), str(out)],
                                  capture_output=True, text=True, env={**os.environ, "TQDM_DISABLE": "1"})
            line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
            if proc.returncode != 0 or not line:
                results[method] = {"error": (proc.stderr or proc.stdout)[-500:], "returncode": proc.returncode}
                print(f"{method}: FAILED (rc {proc.returncode})\n{results[method]['error']}", flush=True)
                continue
            results[method] = json.loads(line[0][len("RESULT "):])
            print(f"{method}: {results[method]}", flush=True)
            shutil.rmtree(out)
        print("\n| method | seconds | peak RSS (MB) | kept | time vs load-all | memory vs load-all |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for method, r in results.items():
            if "error" in r:
                print(f"| {method} | failed | | | | |")
                continue
            # compare like with like: each streaming run against load-all with the same tests kept
            base = results.get("load-all+generated" if method.endswith("+generated") else "load-all", {})
            t_ratio = f"{r['seconds'] / base['seconds']:.2f}x" if "seconds" in base else "-"
            m_ratio = f"{r['peak_rss_mb'] / base['peak_rss_mb']:.2f}x" if "peak_rss_mb" in base else "-"
            print(f"| {method} | {r['seconds']:.1f} | {r['peak_rss_mb']:.0f} | {r['kept']} | {t_ratio} | {m_ratio} |")
        if args.json:
            Path(args.json).write_text(json.dumps({"dataset": shape, "results": results}, indent=1))
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
