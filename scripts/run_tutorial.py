"""`make tutorial`: execute every numbered notebook in order into runs/<timestamp>/ and print a summary.

The executed notebooks and `results/*.json` land in the run folder, every figure in its `figures/`.
`--images images` then copies the README's figures (KEY_FIGURES) there, with `tutorial_run.json` recording the
run they came from: the command, date, machine, and per notebook its parameters, seconds and headline (read from the
executed notebooks and their results, so `--from RUN_DIR --images images` does the same for a finished run).
"""

import argparse
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path

from codefu_helpers.device_check import visible_gpu_name
from codefu_helpers.tutorial import KERNEL, ROOT, execute_notebook, notebook_timeout, numbered_notebooks

# every figure of the run, as the notebooks name them in RUN_DIR/figures (the README shows one, docs/tutorial_run.md
# the others): a figure a notebook draws is committed with the run it came from
KEY_FIGURES = ("01_ratings.png", "01_tests_and_prompts.png", "02_confusion.png", "02_rewards.png", "02_verdicts.png",
               "03_warm_start.png", "03_grpo_step.png", "03_grpo_curves.png", "03_before_after.png",
               "05_pass_at_k.png", "05_seen_vs_heldout.png", "05_pass_at_k_by_tier.png", "05_verdicts.png",
               "05_length_vs_success.png")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernel", default=KERNEL)
    parser.add_argument("--run-dir", default=None, help="default: runs/<timestamp>")
    parser.add_argument("--only", nargs="*", help="notebook name prefixes to run, e.g. 01 02")
    parser.add_argument("--images", default=None, metavar="DIR",
                        help="after a run without failures, copy the README's figures and the run's record here")
    parser.add_argument("--from", dest="existing", default=None, metavar="RUN_DIR",
                        help="execute nothing: take the executed notebooks of this finished run (with --images)")
    args = parser.parse_args()
    if args.existing:
        if not args.images:
            parser.error("--from RUN_DIR only copies figures: give --images DIR too")
        copy_key_figures(Path(args.existing), Path(args.images))
        return 0
    run_dir = Path(args.run_dir or ROOT / "runs" / time.strftime("%Y%m%d-%H%M%S"))
    notebooks = [nb for nb in numbered_notebooks() if not args.only or nb.name[:2] in args.only]
    gpu = visible_gpu_name()
    print(f"executing {len(notebooks)} notebooks into {run_dir} on {gpu or 'the CPU'}", flush=True)
    runs = []
    for nb in notebooks:
        # each notebook's cell timeout from its own run (notebook 03: its config's step-time estimate on this GPU),
        # worked out just before it runs: notebook 01 has written the split it counts problems in by then
        timeout, why = notebook_timeout(nb, gpu, {"RUN_DIR": str(run_dir.resolve())})
        print(f"-> {nb.name} (cell timeout {timeout} s: {why})", flush=True)
        run = execute_notebook(nb, run_dir, kernel=args.kernel, timeout=timeout)
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
        copy_key_figures(run_dir, Path(args.images))
    return 1 if failed else 0


def run_record(run_dir: Path) -> dict:
    """Per executed notebook in run_dir: its parameters and seconds (papermill's metadata) and its headline."""
    import nbformat

    notebooks = {}
    for executed in sorted(run_dir.glob("[0-9][0-9]_*.ipynb")):
        meta = nbformat.read(executed, as_version=4).metadata.get("papermill", {})
        results = run_dir / "results" / f"{executed.stem}.json"
        parameters = {k: v for k, v in (meta.get("parameters") or {}).items() if k != "RUN_DIR"}
        notebooks[executed.stem] = {
            "parameters": parameters or "defaults", "seconds": round(meta.get("duration") or 0.0, 1),
            "failed": bool(meta.get("exception")),
            "headline": json.loads(results.read_text()).get("headline") if results.exists() else None}
    return notebooks


def copy_key_figures(run_dir: Path, images: Path) -> None:
    """KEY_FIGURES from run_dir/figures into `images`, and images/tutorial_run.json describing the run."""
    notebooks = run_record(run_dir)
    unfinished = [name for name, n in notebooks.items() if n["failed"] or n["headline"] is None]
    if not notebooks or unfinished:
        raise SystemExit(f"{run_dir}: {f'notebooks {unfinished} failed or did not finish' if notebooks else 'no executed notebooks'}"
                         ": figures come from a run that finished")
    images.mkdir(parents=True, exist_ok=True)
    copied = []
    for name in KEY_FIGURES:
        source = run_dir / "figures" / name
        if source.exists():
            shutil.copy2(source, images / name)
            copied.append(name)
    record = {"command": " ".join(["python", *sys.argv]), "date": time.strftime("%Y-%m-%d"),
              "machine": f"{platform.machine()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}",
              "run_dir": str(run_dir), "notebooks": notebooks, "figures": copied}
    (images / "tutorial_run.json").write_text(json.dumps(record, indent=1) + "\n")
    print(f"copied {len(copied)} figures and tutorial_run.json to {images}")


if __name__ == "__main__":
    sys.exit(main())
