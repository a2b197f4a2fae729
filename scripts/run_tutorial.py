"""`make tutorial`: execute every numbered notebook in order into runs/<timestamp>/ and print a summary.

The executed notebooks and `results/*.json` land in the run folder, every figure in its `figures/`.
`--images images` then copies the README's figures (KEY_FIGURES) there, with `tutorial_run.json` recording the
run they came from: the command, date, machine, seconds and headline of each notebook.
"""

import argparse
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path

from codefu_helpers.tutorial import KERNEL, ROOT, execute_notebook, numbered_notebooks

# the figures the README shows, as the notebooks name them in RUN_DIR/figures
KEY_FIGURES = ("01_ratings.png", "02_confusion.png", "03_grpo_curves.png", "03_before_after.png",
               "05_seen_vs_heldout.png", "05_verdicts.png")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernel", default=KERNEL)
    parser.add_argument("--run-dir", default=None, help="default: runs/<timestamp>")
    parser.add_argument("--only", nargs="*", help="notebook name prefixes to run, e.g. 01 02")
    parser.add_argument("--images", default=None, metavar="DIR",
                        help="after a run without failures, copy the README's figures and the run's record here")
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
    figures = sorted((run_dir / "figures").glob("*.png"))
    print(f"\nexecuted notebooks: {run_dir}\nfigures ({len(figures)}): {run_dir / 'figures'}")
    failed = any(r.error for r in runs)
    if args.images and not failed:
        copy_key_figures(run_dir, Path(args.images), runs)
    return 1 if failed else 0


def copy_key_figures(run_dir: Path, images: Path, runs) -> None:
    """KEY_FIGURES from run_dir/figures into `images`, and images/tutorial_run.json describing the run."""
    images.mkdir(parents=True, exist_ok=True)
    copied = []
    for name in KEY_FIGURES:
        source = run_dir / "figures" / name
        if source.exists():
            shutil.copy2(source, images / name)
            copied.append(name)
    record = {"command": " ".join(["python", *sys.argv]), "date": time.strftime("%Y-%m-%d"),
              "machine": f"{platform.machine()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}",
              "notebooks": {r.notebook: {"seconds": round(r.seconds, 1), "headline": (r.results or {}).get("headline")}
                            for r in runs},
              "figures": copied}
    (images / "tutorial_run.json").write_text(json.dumps(record, indent=1) + "\n")
    print(f"copied {len(copied)} figures and tutorial_run.json to {images}")


if __name__ == "__main__":
    sys.exit(main())
