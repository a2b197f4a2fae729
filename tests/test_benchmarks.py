"""The benchmark scripts still run and agree with each other (tiny sizes; the numbers are in RESULTS.md)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_data_filter_benchmark_methods_keep_the_same_rows(tmp_path):
    out = tmp_path / "bench.json"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "data_filter.py"), "--rows", "120", "--scale", "0.02",
                    "--json", str(out)], check=True, capture_output=True, timeout=600)
    results = json.loads(out.read_text())
    assert results["dataset"]["rows"] == 120
    kept = {method: r["kept"] for method, r in results["results"].items()}
    assert set(kept) == {"stream", "stream+generated", "load-all", "load-all+generated"}
    assert len(set(kept.values())) == 1 and 0 < kept["stream"] < 120, kept
