"""`make tutorial`: execute every numbered notebook in order into runs/<timestamp>/ and print a summary."""

import argparse
import sys
import time
from pathlib import Path

from codefu_helpers.tutorial import KERNEL, ROOT, execute_notebook, numbered_notebooks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kernel", default=KERNEL)
    parser.add_argument("--run-dir", default=None, help="default: runs/<timestamp>")
    parser.add_argument("--only", nargs="*", help="notebook name prefixes to run, e.g. 01 02")
    args = parser.parse_args()
    run_dir = Path(args.run_dir or ROOT / "runs" / time.strftime("%Y%m%d-%H%M%S"))
    notebooks = [nb for nb in numbered_notebooks() if not args.only or nb.name[:2] in args.only]
    print(f"executing {len(notebooks)} notebooks into {run_dir}", flush=True)
    runs = []
    for nb in notebooks:
        print(f"-> {nb.name}", flush=True)
        run = execute_notebook(nb, run_dir, kernel=args.kernel)
        runs.append(run)
        if run.error:
            print(f"   FAILED: {run.error.splitlines()[0][:300]}\n   see {run.executed}", flush=True)
    width = max(len(r.notebook) for r in runs) if runs else 10
    print(f"\n{'notebook':<{width}}  status  seconds  result")
    for r in runs:
        headline = (r.results or {}).get("headline", "-")
        print(f"{r.notebook:<{width}}  {r.status:<6}  {r.seconds:7.1f}  {headline}")
    print(f"\nexecuted notebooks and figures: {run_dir}")
    return 1 if any(r.error for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
