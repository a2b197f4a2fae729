"""Judge throughput, side by side on the same workload: this judge in each isolation tier, a naive
subprocess-per-test judge and verl's `prime_code` scorer.

    .venv/bin/python benchmarks/judge_throughput.py                       # the run behind benchmarks/RESULTS.md
    .venv/bin/python benchmarks/judge_throughput.py --per-kind 1 --trivial 100 --skip-verl   # a quick look
    .venv/bin/python benchmarks/judge_throughput.py --judges codefu --repeat 3   # the two tiers only
    # this judge against another checkout's (e.g. `git archive main | tar -x -C /tmp/main`), per tier, interleaved
    .venv/bin/python benchmarks/judge_throughput.py --judges codefu --per-kind 0 --tiers bwrap,container,userns \
        --baseline /tmp/main --repeat 5

Workloads (run one judge at a time, each with every core):
  trivial   many `print(input())` tests: the per-test overhead (isolated test runs per second)
  mixed     real solutions from the dataset, by language and intended verdict (correct, WA, TLE, RE, CE),
            judged on all their tests: samples per second, and whether each judge's verdict matches
  loop      one infinite-loop sample with 3 tests and a 1 s limit: what a TLE sample costs
  harness   HumanEval's 164 canonical solutions through `Judge.run_harness` (the codefu judges only): one run
            per problem, so tests/s is problems/s. The judge before issue 30 ran one self-checking program (the
            solution, then the problem's asserts); today's runs the solution and, in a second process, the checks
            that question it. Each checkout builds the run its own `run_harness` takes from the same parts

The three judges:
  codefu    codefu_helpers.sandbox.Judge: isolated fork servers, CPU-time limits, stops a sample at its first TLE,
            C++ compiled once with a precompiled header; once per isolation tier (--tiers): codefu/bwrap
            (bubblewrap namespaces), codefu/container (a uid per worker, seccomp, Landlock, no namespaces; the
            tier for containers that refuse namespaces, run here as root alongside bwrap) and codefu/userns
            (bubblewrap in user namespaces, as an ordinary user: run as `nobody` when this runs as root) and
            codefu/landlock (an ordinary user whom namespaces are refused: `nobody` under a Docker-like seccomp
            profile, tests/test_sandbox_container.py's `docker_like`). Each
            judge runs in a process of its own, started before the clock does. With --baseline DIR the same
            judge from another checkout (DIR, e.g. the main branch) runs alongside as base/<tier>, and the table
            gives each tier's ratio to it
  naive     subprocess.run per test (`python3 solution.py` / the binary), wall-clock timeout = the time limit,
            `g++ -O2` per sample without a precompiled header, all tests run; not isolated
  verl      verl.utils.reward_score.prime_code.compute_score(continuous=True), as verl calls it for CodeContests,
            in .venv-job, in a process pool of one process per core; Python only (it cannot run C++); not
            isolated (exec in a subprocess with reliability_guard)
"""

from __future__ import annotations

import argparse
import functools
import inspect
import json
import os
import platform
import pwd
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from codefu_helpers.data import load_problems  # noqa: E402
from codefu_helpers.sandbox import outputs_match  # noqa: E402
from codefu_helpers.sandbox.cpp import CXX_FLAGS  # noqa: E402
from codefu_helpers.reward_validation import items_from_rows  # noqa: E402

VERL_PYTHON = ROOT / ".venv-job" / "bin" / "python"
KINDS = ("OK", "WA", "TLE", "RE", "CE")


# --- the workloads ---------------------------------------------------------------------------------------------

def mixed_workload(dataset: Path, sources: Path | None, per_kind: int) -> list[dict]:
    """Up to `per_kind` solutions for every (language, intended verdict), spread over problems."""
    items = items_from_rows(load_problems(dataset), sources)
    chosen, count = [], {}
    for item in items:
        key = (item.language, item.intended)
        if item.intended in KINDS and count.get(key, 0) < per_kind:
            count[key] = count.get(key, 0) + 1
            chosen.append({"language": item.language, "intended": item.intended, "source": item.source,
                           "tests": [list(t) for t in item.private + item.public + item.generated],
                           "time_limit": item.time_limit,
                           "memory_limit_bytes": item.memory_limit_bytes, "problem": item.problem})
    return chosen


def trivial_workload(n_tests: int, tests_per_sample: int = 50) -> list[dict]:
    samples = []
    for start in range(0, n_tests, tests_per_sample):
        k = min(tests_per_sample, n_tests - start)
        samples.append({"language": "python", "intended": "OK", "source": "print(input())\n",
                        "tests": [[f"{start + i}\n", f"{start + i}\n"] for i in range(k)], "time_limit": 1.0,
                        "memory_limit_bytes": 256 << 20, "problem": "trivial"})
    return samples


def harness_workload() -> list[dict]:
    """HumanEval's canonical solutions, with both shapes of a harness run: `parts` for today's run_harness (program,
    checks, the function they call) and `single` for the one self-checking program the judge before issue 30 took
    (exactly what its `harness_program` built: the prompt, the solution, the test code, `check(entry_point)`)."""
    from codefu_helpers.eval_datasets import load_humaneval
    from codefu_helpers.evaluate import harness_parts

    samples = []
    for problem in load_humaneval():
        body = problem.solutions[0][1][len(problem.prompt_code):]
        parts = harness_parts(problem, body)
        samples.append({"language": "python", "intended": "OK", "problem": problem.problem_id, "tests": [["", ""]],
                        "time_limit": 3.0, "memory_limit_bytes": 1 << 30,
                        "harness": {"program": parts.program, "check": parts.check, "call": parts.call,
                                    "single": f"{parts.program}\n\n{problem.test_code}\n\ncheck({problem.entry_point})\n"}})
    return samples


def loop_workload() -> list[dict]:
    return [{"language": lang, "intended": "TLE", "source": src, "tests": [["1\n", "1\n"]] * 3, "time_limit": 1.0,
             "memory_limit_bytes": 256 << 20, "problem": "infinite loop"}
            for lang, src in (("python", "while True:\n    pass\n"),
                              ("cpp", "int main(){volatile unsigned long x=0;for(;;)x++;}\n"))]


# --- the judges -------------------------------------------------------------------------------------------------

def cpu_seconds_now() -> float:
    """CPU time used so far by this process (all its threads), the children it reaped, and every live descendant
    (its own time and that of the children it reaped): a judge's cost, whatever else shares the machine."""
    own, reaped = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime
    parent_of, ticks = {}, {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:  # gone meanwhile
                continue
            parent_of[int(entry)] = int(fields[1])
            ticks[int(entry)] = sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    descendants, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parent_of.items() if parent in frontier} - descendants
        descendants |= frontier
    return total + sum(ticks[pid] for pid in descendants) / os.sysconf("SC_CLK_TCK")


_CPU_MODULE = "import os\nimport resource\nfrom pathlib import Path\n\n\n" + inspect.getsource(cpu_seconds_now)
_CODEFU_RUNNER = textwrap.dedent("""
    import inspect, json, sys, time
    from concurrent.futures import ThreadPoolExecutor
    sys.path.insert(0, sys.argv[3])  # the benchmark's own directory: cpu_seconds_now
    from judge_throughput_cpu import cpu_seconds_now
    from codefu_helpers.sandbox import Judge, Submission, Verdict

    samples = json.load(sys.stdin)
    with Judge(workers=int(sys.argv[1]), isolation=sys.argv[2]) as judge:
        warm = [Submission("python", "print(1)", [("", "1")], 1.0, 64 << 20)]  # start-up is not work, nor is the
        if any(s["language"] == "cpp" for s in samples):  # precompiled header a fresh cache builds once
            warm.append(Submission("cpp", "int main() { return 0; }", [("", "")], 1.0,
                                   64 << 20))
        for result in judge.run_many(warm):
            assert result.verdict is Verdict.OK, result
        two_parts = "check" in inspect.signature(judge.run_harness).parameters  # since issue 30

        def harness(s):
            h = s["harness"]
            if two_parts:
                return judge.run_harness(h["program"], h["check"], h["call"], s["time_limit"], s["memory_limit_bytes"])
            return judge.run_harness(h["single"], s["time_limit"], s["memory_limit_bytes"])

        subs = [Submission(s["language"], s["source"], [tuple(t) for t in s["tests"]], s["time_limit"],
                           s["memory_limit_bytes"]) for s in samples if "harness" not in s]
        cpu, start = cpu_seconds_now(), time.perf_counter()
        if subs:
            results = judge.run_many(subs)
        else:  # harness runs: one at a time per caller, so as many callers as workers and more
            with ThreadPoolExecutor(2 * judge.workers) as pool:
                results = list(pool.map(harness, samples))
        seconds, cpu = time.perf_counter() - start, cpu_seconds_now() - cpu
    print(json.dumps({"seconds": seconds, "verdicts": [r.verdict.value for r in results], "cpu": cpu,
                      "isolation": judge.isolation}))
""")


@functools.lru_cache(maxsize=None)
def _nobody_cache(nobody) -> str:
    """One judge cache for every run as nobody in this invocation (its precompiled header is built once)."""
    cache = Path(tempfile.mkdtemp(prefix="codefu-bench-cache-"))
    cache.chmod(0o755)
    os.chown(cache, nobody.pw_uid, nobody.pw_gid)
    return str(cache)


def run_codefu(samples: list[dict], workers: int, isolation: str = "auto", root: Path = ROOT
               ) -> tuple[float, list[str], float]:
    """The judge of the checkout at `root` in a process of its own (isolation "userns": bwrap as `nobody`;
    "landlock": the landlock tier as `nobody`, with namespaces refused as in a Docker container)."""
    tier = "bwrap" if isolation == "userns" else isolation
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        runner = Path(tmp) / "codefu_runner.py"
        runner.write_text(_CODEFU_RUNNER)
        (Path(tmp) / "judge_throughput_cpu.py").write_text(_CPU_MODULE)
        env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(root), "HOME": tmp, "LANG": "C.UTF-8",
               "CODEFU_JUDGE_CACHE": os.environ.get("CODEFU_JUDGE_CACHE", str(Path.home() / ".cache/codefu/judge"))}
        argv = [sys.executable, str(runner), str(workers), tier, tmp]
        if isolation in ("userns", "landlock"):  # as nobody, with the system interpreter (the judge's host side
            # needs only the standard library; nobody may not be able to reach this environment)
            argv[0] = "/usr/bin/python3"
            if os.geteuid() != 0:
                raise SystemExit(f"--tiers {isolation} runs the judge as nobody, which needs root; as an ordinary "
                                 "user the bwrap tier already is the user-namespace mode, and landlock runs as is")
            nobody = pwd.getpwnam("nobody")
            env["CODEFU_JUDGE_CACHE"] = _nobody_cache(nobody)
            argv = ["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups", *argv]
            if isolation == "landlock":
                sys.path.insert(0, str(ROOT / "tests"))
                from test_sandbox_container import docker_like

                argv = docker_like(argv)
        proc = subprocess.run(argv, input=json.dumps(samples), text=True, capture_output=True, cwd=tmp, env=env,
                              timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"the codefu judge at {root} ({isolation}) failed:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    expected = "bwrap" if isolation == "userns" else isolation
    if out["isolation"] != expected:
        raise RuntimeError(f"asked for the {isolation} tier, the judge at {root} ran {out['isolation']}")
    return out["seconds"], out["verdicts"], out["cpu"]


def _naive_one(sample: dict, workdir: Path) -> str:
    """A judge as one writes it in an afternoon: a fresh process per test and a wall-clock timeout."""
    folder = Path(tempfile.mkdtemp(dir=workdir))
    if sample["language"] == "cpp":
        (folder / "sol.cpp").write_text(sample["source"])
        proc = subprocess.run(["g++", *CXX_FLAGS, "-o", str(folder / "sol"), str(folder / "sol.cpp")],
                              capture_output=True, timeout=120)
        if proc.returncode != 0:
            return "CE"
        cmd = [str(folder / "sol")]
    else:
        (folder / "sol.py").write_text(sample["source"])
        proc = subprocess.run(["/usr/bin/python3", "-c", f"compile(open({str(folder / 'sol.py')!r}).read(), "
                               "'sol.py', 'exec')"], capture_output=True)
        if proc.returncode != 0:
            return "CE"
        cmd = ["/usr/bin/python3", str(folder / "sol.py")]
    verdicts = []
    for test_input, expected in sample["tests"]:
        try:
            proc = subprocess.run(cmd, input=test_input.encode(), capture_output=True, timeout=sample["time_limit"])
        except subprocess.TimeoutExpired:
            verdicts.append("TLE")
            continue
        if proc.returncode != 0:
            verdicts.append("RE")
        else:
            verdicts.append("OK" if outputs_match(proc.stdout, expected) else "WA")
    return next((v for v in verdicts if v != "OK"), "OK")


def run_naive(samples: list[dict], workers: int) -> tuple[float, list[str], float]:
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(workers) as pool:
        cpu, start = cpu_seconds_now(), time.perf_counter()
        verdicts = list(pool.map(lambda s: _naive_one(s, Path(tmp)), samples))
        return time.perf_counter() - start, verdicts, cpu_seconds_now() - cpu


_VERL_RUNNER = textwrap.dedent("""
    import json, sys, time
    from concurrent.futures import ProcessPoolExecutor
    from verl.utils.reward_score import prime_code

    def score(sample):
        completion = "```python\\n" + sample["source"] + "\\n```"
        tests = {"inputs": [t[0] for t in sample["tests"]], "outputs": [t[1] for t in sample["tests"]]}
        success, _ = prime_code.compute_score(completion, tests, continuous=True)
        return float(success)

    if __name__ == "__main__":
        samples = json.load(sys.stdin)
        with ProcessPoolExecutor(int(sys.argv[1])) as pool:
            list(pool.map(score, samples[:1]))  # start-up is not work
            start = time.perf_counter()
            scores = list(pool.map(score, samples))
            print(json.dumps({"seconds": time.perf_counter() - start, "scores": scores}))
""")


def run_verl(samples: list[dict], workers: int) -> tuple[float, list[str], None]:
    """verl only scores: a sample 'passes' when its score is 1.0; that is the verdict we can compare. Its CPU time
    is not measured (its runner's start-up would count)."""
    if not samples:
        return 0.0, [], None
    with tempfile.TemporaryDirectory() as tmp:
        runner = Path(tmp) / "verl_runner.py"
        runner.write_text(_VERL_RUNNER)
        proc = subprocess.run([str(VERL_PYTHON), str(runner), str(workers)], input=json.dumps(samples), text=True,
                              capture_output=True, cwd=tmp, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"verl runner failed:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return out["seconds"], ["OK" if s == 1.0 else "not OK" for s in out["scores"]], None


# --- reporting -----------------------------------------------------------------------------------------------

def agreement(samples: list[dict], verdicts: list[str], exact: bool) -> float:
    """Share of samples judged as intended: the exact verdict, or (verl) just pass / not pass."""
    hits = 0
    for sample, verdict in zip(samples, verdicts):
        if exact:
            hits += verdict == sample["intended"]
        else:
            hits += (verdict == "OK") == (sample["intended"] == "OK")
    return hits / len(samples) if samples else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default=str(ROOT / "data" / "sample"))
    parser.add_argument("--sources", default=str(ROOT / "data" / "sources" / "problems"),
                        help="authored problem folders (intended verdicts); '' for other datasets")
    parser.add_argument("--per-kind", type=int, default=4, help="solutions per (language, intended verdict)")
    parser.add_argument("--trivial", type=int, default=2000, help="trivial tests in the per-test overhead workload")
    parser.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--skip-verl", action="store_true")
    parser.add_argument("--harness", action=argparse.BooleanOptionalAction, default=True,
                        help="the HumanEval harness workload (codefu judges only)")
    parser.add_argument("--judges", default="codefu,naive,verl", help="which judges to run (comma-separated)")
    parser.add_argument("--tiers", default="bwrap,container" if os.geteuid() == 0 else "bwrap",
                        help="isolation tiers of the codefu judge: bwrap, container, userns, landlock (the last "
                             "three need root: userns and landlock run as nobody)")
    parser.add_argument("--baseline", default="",
                        help="another checkout of this repository (e.g. the main branch): its codefu judge runs "
                             "alongside, per tier, as base/<tier>")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run every judge this many times, interleaved, and keep each one's fastest run")
    parser.add_argument("--json", default="", help="also write the measurements here")
    parser.add_argument("--render", default="", help="only print the table of a JSON written by --json")
    args = parser.parse_args()
    if args.render:
        saved = json.loads(Path(args.render).read_text())
        print(render(saved["rows"], argparse.Namespace(**saved["args"])))
        return
    load_before = os.getloadavg()[0]

    workloads = {
        "trivial": trivial_workload(args.trivial),
        "mixed": mixed_workload(Path(args.dataset), Path(args.sources) if args.sources else None, args.per_kind),
        "loop": loop_workload(),
    }
    if args.harness:
        workloads["harness"] = harness_workload()
    wanted = set(args.judges.split(","))
    judges = {}
    if "codefu" in wanted:
        for tier in args.tiers.split(","):
            judges[f"codefu/{tier}"] = functools.partial(run_codefu, isolation=tier)
            if args.baseline:
                judges[f"base/{tier}"] = functools.partial(run_codefu, isolation=tier, root=Path(args.baseline))
    if "naive" in wanted:
        judges["naive"] = run_naive
    if "verl" in wanted and not args.skip_verl:
        if not VERL_PYTHON.exists():
            sys.exit(f"{VERL_PYTHON} is missing: run scripts/make_job_env.sh, or pass --skip-verl")
        judges["verl"] = run_verl
    rows = []
    for workload, samples in workloads.items():
        for language in ("python", "cpp"):
            subset = [s for s in samples if s["language"] == language]
            if not subset:
                continue
            runs = {name: [] for name in judges if not (name == "verl" and language != "python")
                    and not (workload == "harness" and not name.startswith(("codefu/", "base/")))}
            for _ in range(args.repeat):  # interleaved, so that the machine's load drifts over every judge alike
                for name in runs:
                    runs[name].append(judges[name](subset, args.workers))
            for name, results in runs.items():
                seconds, verdicts, cpu = min(results, key=lambda r: r[0])
                tests = sum(len(s["tests"]) for s in subset)
                cpus = [r[2] for r in results if r[2] is not None]
                rows.append({"workload": workload, "language": language, "judge": name, "samples": len(subset),
                             "tests": tests, "seconds": round(seconds, 3),
                             "cpu_seconds": round(min(cpus), 3) if cpus else None,
                             "samples_per_s": round(len(subset) / seconds, 2) if seconds else None,
                             "tests_per_s": round(tests / seconds, 1) if seconds else None,
                             "agreement": round(agreement(subset, verdicts, exact=name != "verl"), 3),
                             "kinds": {k: sum(s["intended"] == k for s in subset) for k in KINDS}})
                print(f"{workload:8} {language:6} {name:16} {len(subset):4} samples {tests:5} tests "
                      f"{seconds:8.2f}s  agreement {rows[-1]['agreement']:.2f}", file=sys.stderr, flush=True)
    args.load_average = (load_before, os.getloadavg()[0])
    print(render(rows, args))
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1))


def render(rows: list[dict], args) -> str:
    by = {(r["workload"], r["language"], r["judge"]): r for r in rows}
    if any(r["judge"].startswith("base/") for r in rows):
        return render_against_baseline(rows, args, by)
    load = getattr(args, "load_average", None) or os.getloadavg()
    reference = next((r["judge"] for r in rows if r["judge"].startswith("codefu")), "codefu")
    repeat = getattr(args, "repeat", 1)
    lines = [f"Machine: {platform.machine()}, {len(os.sched_getaffinity(0))} cores available, {args.workers} "
             f"workers per judge; Python {platform.python_version()}; load average before/after the run "
             f"{load[0]:.1f}/{load[1]:.1f} (other work shared the machine)"
             + (f"; fastest of {repeat} interleaved runs per judge." if repeat > 1 else "."), "",
             "| workload | language | judge | samples | tests | seconds | samples/s | tests/s | CPU ms/test | "
             f"verdicts as intended | vs {reference} |", "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        ours = by.get((r["workload"], r["language"], reference))
        ratio = ""
        if ours and r["judge"] != reference and ours["seconds"] and r["seconds"]:
            factor = r["seconds"] / ours["seconds"]
            if 0.5 < factor < 2:  # close: the tier comparison's case, where 20 % matters
                ratio = f"{factor - 1:+.0%} time"
            else:
                ratio = f"{factor:.1f}x slower" if factor >= 1 else f"{1 / factor:.1f}x faster"
        cpu = r.get("cpu_seconds")
        cpu_per_test = f"{1000 * cpu / r['tests']:.1f}" if cpu is not None and r["tests"] else ""
        lines.append(f"| {r['workload']} | {r['language']} | {r['judge']} | {r['samples']} | {r['tests']} | "
                     f"{r['seconds']:.2f} | {r['samples_per_s']} | {r['tests_per_s']} | {cpu_per_test} | "
                     f"{r['agreement']:.0%} | {ratio} |")
    return "\n".join(lines)


def render_against_baseline(rows: list[dict], args, by: dict) -> str:
    """This judge against the baseline checkout's, tier by tier: throughput and CPU cost per test, and ratios."""
    load = getattr(args, "load_average", None) or os.getloadavg()
    lines = [f"Machine: {platform.machine()}, {len(os.sched_getaffinity(0))} cores available, {args.workers} "
             f"workers per judge; Python {platform.python_version()}; load average before/after the run "
             f"{load[0]:.1f}/{load[1]:.1f} (other work shared the machine); fastest of {args.repeat} interleaved "
             f"runs per judge; baseline: {args.baseline}.", "",
             "| workload | language | tier | samples | tests | tests/s | base tests/s | tests/s vs base | "
             "CPU ms/test | base CPU ms/test | CPU vs base | verdicts as intended |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if not r["judge"].startswith("codefu/"):
            continue
        tier = r["judge"].split("/", 1)[1]
        base = by.get((r["workload"], r["language"], f"base/{tier}"))
        if base is None:
            continue
        cpu = 1000 * r["cpu_seconds"] / r["tests"]
        base_cpu = 1000 * base["cpu_seconds"] / base["tests"]
        lines.append(f"| {r['workload']} | {r['language']} | {tier} | {r['samples']} | {r['tests']} | "
                     f"{r['tests_per_s']} | {base['tests_per_s']} | {r['tests_per_s'] / base['tests_per_s'] - 1:+.0%} | "
                     f"{cpu:.2f} | {base_cpu:.2f} | {cpu / base_cpu - 1:+.0%} | "
                     f"{r['agreement']:.0%} (base {base['agreement']:.0%}) |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
