"""GRPO vs PPO (gae, with a critic) vs RLOO vs REINFORCE++ on CPU: `configs/cpu_learn.yaml` once per estimator, the
same seeds, data, warm start and step budget, through `benchmarks/cpu_learn.py` (pass@1 on the training problems
before and after, 16 samples per problem, as tests/test_learning.py judges it).

    .venv/bin/python benchmarks/estimator_compare.py --estimators grpo rloo gae --seeds 0 --work-dir runs/estimators
    .venv/bin/python benchmarks/estimator_compare.py --table runs/estimators/grpo.json runs/estimators/gae.json

Every estimator runs the shipped config (or what `--set` makes of it) unchanged except `algorithm.adv_estimator` (and, for gae, `critic.lr`, by
default 1e-4, the rate of the config the comparison in RESULTS.md ran: the critic starts from a random value head
and must learn within the same steps).
The table prints pass@1 before/after, the gain, the training pass rate averaged over thirds of the run (the curve),
and the training seconds (which include the warm start and, for gae, the critic's passes).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(estimator: str, seeds: list[int], work: Path, overrides: list[str]) -> Path:
    out = work / f"{estimator}.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "cpu_learn.py"), "--seeds", *map(str, seeds), "--json", str(out),
           "--work-dir", str(work / estimator), "--set", f"algorithm.adv_estimator={estimator}", *overrides]
    subprocess.run(cmd, check=True, cwd=ROOT)
    return out


def table(paths: list[Path]) -> str:
    """A markdown table: one row per estimator and seed."""
    lines = ["| estimator | seed | pass@1 before -> after | gain | training pass rate, mean over each third of the steps "
             "| train s |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for path in paths:
        data = json.loads(Path(path).read_text())
        estimator = next((o.split("=", 1)[1] for o in data["overrides"] if o.startswith("algorithm.adv_estimator=")),
                         "grpo")
        for r in data["seeds"]:
            steps = r["steps"]
            third = max(1, len(steps) // 3)
            parts = [steps[i:i + third] for i in range(0, third * 3, third)]
            curve = " / ".join(f"{sum(s['pass_rate'] for s in p) / len(p):.3f}" for p in parts if p)
            lines.append(f"| {estimator} | {r['seed']} | {r['before']:.3f} -> {r['after']:.3f} | {r['gain']:+.3f} "
                         f"| {curve} | {r['train_seconds']:.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--estimators", nargs="+", default=["grpo", "rloo", "gae"],
                        choices=["grpo", "gae", "rloo", "reinforce_plus_plus"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--work-dir", default="runs/estimators")
    parser.add_argument("--critic-lr", default="1e-4", help="critic.lr for gae (default: cpu_learn's optim.lr)")
    parser.add_argument("--set", dest="overrides", nargs="*", default=[], metavar="KEY=VALUE",
                        help="further overrides for every estimator")
    parser.add_argument("--table", nargs="+", metavar="JSON", help="only print the table of these cpu_learn.py results")
    args = parser.parse_args(argv)
    if args.table:
        print(table([Path(p) for p in args.table]))
        return 0
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    paths = []
    for estimator in args.estimators:
        extra = [f"critic.lr={args.critic_lr}"] if estimator == "gae" else []
        paths.append(run(estimator, args.seeds, work, [*extra, *args.overrides]))
    print(table(paths))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
