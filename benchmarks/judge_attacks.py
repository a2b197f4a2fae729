"""The second round of judge attacks (issue 30), against this checkout's judge and another's, tier by tier.

    # as root: every tier; the baseline is the judge before issue 30, unpacked with
    #   git archive af62e9a | tar -x -C /tmp/old-main
    .venv/bin/python benchmarks/judge_attacks.py --baseline /tmp/old-main --json /tmp/attacks.json
    .venv/bin/python benchmarks/judge_attacks.py --render /tmp/attacks.json      # the table again

The probes are this checkout's `ROUND_TWO_PROBES` plus the two "exit before the checks" ones
(codefu_helpers/sandbox/probes.py), loaded into whichever judge runs them, so both judges face the very same
programs and the very same host-side checks. A judge from before issue 30 takes a harness as one self-checking
program: there the program, `candidate = <its function>` and the checks run as one program, which is what that
judge did with HumanEval and LiveCodeBench. Tiers: bwrap (as root), userns (bubblewrap as `nobody`), container
(root, Landlock), docker-like (a process that may not create namespaces: `auto` picks the container tier) and
no-landlock (the same with Landlock answered by ENOSYS, with programs_may_read_host_files=True), landlock (an
ordinary user, `nobody`, with namespaces refused: `auto` picks the landlock tier; issue 31).

The table gives each probe's verdict per tier, before -> now, and whether the check found it contained; the
JSON keeps every row with its evidence (and the honest samples' outcome after each probe).

    # the whole battery's table per tier, from the files the escape tests write when asked
    CODEFU_PROBE_TABLE=/tmp/probes .venv/bin/python -m pytest -q tests/test_sandbox_escape.py
    .venv/bin/python benchmarks/judge_attacks.py --probe-table /tmp/probes --classes
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import re
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIERS = ("bwrap", "userns", "container", "docker-like", "no-landlock", "protected", "landlock")

# Runs in a process of its own with PYTHONPATH at the checkout under test; argv: the probes file, judge kwargs.
_RUNNER = textwrap.dedent("""
    import importlib.util, inspect, json, sys
    import codefu_helpers.sandbox
    from codefu_helpers.sandbox import Judge

    spec = importlib.util.spec_from_file_location("codefu_helpers.sandbox.attack_probes", sys.argv[1])
    probes = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = probes
    spec.loader.exec_module(probes)
    names = [p.name for p in probes.ROUND_TWO_PROBES] + ["exit before the checks", "exit before the checks (os._exit)"]
    with Judge(workers=2, **json.loads(sys.argv[2])) as judge:
        if "check" not in inspect.signature(judge.run_harness).parameters:  # the judge before issue 30
            one_program = judge.run_harness

            def run_harness(program, check, call, timeout, memory_limit_bytes=1 << 30):
                cls, _, method = call.rpartition(".")
                target = f"{cls}().{method}" if cls else call
                return one_program(f"{program}\\ncandidate = {target}\\n{check}", timeout, memory_limit_bytes)

            judge.run_harness = run_harness
        rows = probes.run_escape_probes(judge, names=names)
    print(json.dumps({"isolation": judge.isolation, "mode": judge.mode, "rows": rows}))
""")


def run_tier(checkout: Path, tier: str, probes_file: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        runner = Path(tmp) / "attack_runner.py"
        runner.write_text(_RUNNER)
        runner.chmod(0o644)
        probes = probes_file
        kwargs = {"isolation": "bwrap" if tier in ("bwrap", "userns") else "container"}
        env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(checkout), "HOME": tmp, "LANG": "C.UTF-8"}
        if tier in ("bwrap", "container"):
            argv = [sys.executable, str(runner), str(probes), json.dumps(kwargs)]
        elif tier in ("userns", "landlock"):  # as nobody, with the system interpreter (the judge's host side is
            # standard library); landlock: with namespaces refused, as in a Docker container
            nobody = pwd.getpwnam("nobody")
            cache = Path(tmp) / "cache"
            cache.mkdir()
            os.chown(cache, nobody.pw_uid, nobody.pw_gid)
            os.chown(tmp, nobody.pw_uid, nobody.pw_gid)
            env.update(PATH="/usr/bin:/bin", CODEFU_JUDGE_CACHE=str(cache))
            argv = ["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups",
                    "/usr/bin/python3", str(runner), str(probes), json.dumps(kwargs)]
            if tier == "landlock":
                sys.path.insert(0, str(ROOT / "tests"))
                from test_sandbox_container import docker_like

                argv = docker_like([*argv[:-1], json.dumps({})])  # auto: it has to find the landlock tier
        else:
            sys.path.insert(0, str(ROOT / "tests"))
            from test_sandbox_container import docker_like

            if tier == "docker-like":
                kwargs = {}  # auto: it has to pick the container tier
            else:
                kwargs = {"programs_may_read_host_files": True}
            argv = docker_like([sys.executable, str(runner), str(probes), json.dumps(kwargs)],
                               landlock=tier != "no-landlock")
        proc = subprocess.run(argv, env=env, cwd=tmp, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"the {tier} battery of {checkout} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def render(saved: dict) -> str:
    runs = saved["runs"]
    tiers = [t for t in TIERS if any(key.endswith("/" + t) for key in runs)]
    has_base = any(key.startswith("base/") for key in runs)
    rows = {}
    for key, out in runs.items():
        who, tier = key.split("/", 1)
        for row in out["rows"]:
            rows.setdefault(row["probe"], {"class": row.get("class", "")})[(who, tier)] = row
    head = ["probe", "class", *(f"{t}: before -> now" if has_base else t for t in tiers)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def cell(row):
        if row is None:
            return "-"
        mark = "" if row["contained"] else " **ATTACK WORKED**"
        return f"{row['verdict']}{mark}"

    for probe, cells in rows.items():
        out = [probe, cells["class"]]
        for tier in tiers:
            now = cell(cells.get(("now", tier)))
            out.append(f"{cell(cells.get(('base', tier)))} -> {now}" if has_base else now)
        lines.append("| " + " | ".join(out) + " |")
    worked = {key: sum(not r["contained"] for r in out["rows"]) for key, out in runs.items()}
    errors = {key: sum(r.get("judge_errors", 0) for r in out["rows"]) for key, out in runs.items()}
    lines += ["", "Attacks that worked (probes not contained), per run: " + ", ".join(f"{k} {v}" for k, v in
                                                                                      worked.items()),
              "JUDGE_ERROR verdicts in the battery, per run: " + ", ".join(f"{k} {v}" for k, v in errors.items())]
    return "\n".join(lines)


def _kind_of(link: str) -> str:
    """A descriptor's link without what differs per run: "/memfd:stdin (deleted)" -> "/memfd:stdin", "pipe:[42]"
    -> "pipe"."""
    return re.sub(r"\s*\(deleted\)|:\[[0-9]+\]", "", link)


def probe_table(folder: Path, round_two_only: bool) -> str:
    """The tier x probe table of the battery files tests/test_sandbox_escape.py writes ($CODEFU_PROBE_TABLE), with
    what the first tier's check saw, and what the host saw of the inspect probes."""
    runs = {t: json.loads((folder / f"{t}.json").read_text()) for t in TIERS if (folder / f"{t}.json").exists()}
    first = next(iter(runs))
    head = ["probe", "class", *runs, f"the {first} tier's check saw"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in runs[first]["rows"]:
        if round_two_only and row.get("class") in (None, "escape", "integrity"):
            continue
        cells = []
        for out in runs.values():
            other = next(r for r in out["rows"] if r["probe"] == row["probe"])
            mark = "" if other["contained"] else (" **exposed (opt-in)**" if "EXPOSED, as accepted" in
                                                  other["evidence"] else " **NOT CONTAINED**")
            cells.append(other["verdict"] + mark + ("" if other.get("honest_after", True) else " honest failed"))
        evidence = row["evidence"].replace("|", "/").replace("\n", " ")
        lines.append(f"| {row['probe']} | {row.get('class', row['kind'])} | {' | '.join(cells)} | "
                     f"{evidence[:150]}{'...' if len(evidence) > 150 else ''} |")
    errors = {tier: sum(r.get("judge_errors", 0) for r in out["rows"]) for tier, out in runs.items()}
    lines += ["", "JUDGE_ERROR verdicts in the whole battery: " + ", ".join(f"{t} {n}" for t, n in errors.items())]
    for tier, out in runs.items():
        seen = out.get("inspected", [])
        fds = sorted({" ".join(f"{fd}:{_kind_of(link)}" for fd, link in sorted(s["fds"].items())) for s in seen})
        shared = sorted({m for s in seen for m in s["shared"]}) or ["none"]
        lines.append(f"Seen from the host in {tier}: {len(seen)} inspect runs "
                     f"({sum('python' in s['exe'] for s in seen)} Python); descriptors {' / '.join(fds)}; "
                     f"shared mappings {', '.join(shared)}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiers", default=",".join(TIERS) if os.geteuid() == 0 else "bwrap")
    parser.add_argument("--baseline", default="", help="another checkout (the judge before issue 30)")
    parser.add_argument("--json", default="", help="write every row here")
    parser.add_argument("--render", default="", help="only print the table of a JSON written by --json")
    parser.add_argument("--probe-table", default="", help="only print the table of the battery files in this "
                                                          "folder ($CODEFU_PROBE_TABLE of tests/test_sandbox_escape.py)")
    parser.add_argument("--classes", action="store_true", help="with --probe-table: the round-two classes only")
    args = parser.parse_args()
    if args.probe_table:
        print(probe_table(Path(args.probe_table), args.classes))
        return
    if args.render:
        print(render(json.loads(Path(args.render).read_text())))
        return
    probes_file = ROOT / "codefu_helpers" / "sandbox" / "probes.py"
    checkouts = {"now": ROOT, **({"base": Path(args.baseline).resolve()} if args.baseline else {})}
    runs = {}
    for tier in args.tiers.split(","):
        if tier not in TIERS:
            sys.exit(f"unknown tier {tier!r}: pick from {', '.join(TIERS)}")
        for who, checkout in checkouts.items():
            runs[f"{who}/{tier}"] = run_tier(checkout, tier, probes_file)
            bad = [r["probe"] for r in runs[f"{who}/{tier}"]["rows"] if not r["contained"]]
            print(f"{who}/{tier}: {len(bad)} not contained {bad}", file=sys.stderr, flush=True)
    saved = {"args": vars(args), "runs": runs}
    if args.json:
        Path(args.json).write_text(json.dumps(saved, indent=1))
    print(render(saved))


if __name__ == "__main__":
    main()
