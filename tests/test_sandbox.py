"""The judge with real sandboxes and real programs: verdicts per language, limits, output checking, input
validation, concurrency, crash recovery and the judge-error path. Everything that uses the `judge` fixture runs
in both isolation tiers: bwrap (bubblewrap namespaces) and container (a uid per worker, seccomp, Landlock, no
namespaces; tests/test_sandbox_container.py runs it where namespaces are refused).

No timing is asserted (CI machines are noisy); time limits are chosen so that a correct program is far below
and a wrong one far above them.
"""

import os
import pickle
import signal
import threading
import time
from pathlib import Path

import pytest

from codefu_helpers.sandbox import (Judge, SandboxUnavailableError, Submission, Verdict, get_judge,
                                    outputs_match, shutdown_default_judge)
from codefu_helpers.sandbox.isolation import resolve_isolation

MB = 1 << 20
ADD_TESTS = [("1 2\n", "3\n"), ("10 -4\n", "6\n"), ("1000000000 1000000000\n", "2000000000\n")]


@pytest.fixture(scope="module", params=["bwrap", "container"])
def judge(request):
    with Judge(workers=2, isolation=request.param) as j:
        assert j.isolation == request.param
        yield j


def run(judge, language, source, tests=ADD_TESTS, time_limit=1.0, memory=256 * MB, **kw):
    return judge.run(language, source, tests, time_limit, memory, **kw)


# --- verdicts ------------------------------------------------------------------------------------------------

PY = {
    Verdict.OK: "a, b = map(int, input().split())\nprint(a + b)\n",
    Verdict.WA: "a, b = map(int, input().split())\nprint(a - b)\n",
    Verdict.TLE: "while True:\n    pass\n",
    Verdict.RE: "a, b = map(int, input().split())\nprint((a + b) // 0)\n",
    Verdict.MLE: "x = [b'x' * (1 << 20) for _ in range(10000)]\n",
    Verdict.CE: "def broken(:\n    pass\n",
}
CPP = {
    Verdict.OK: "#include <bits/stdc++.h>\nint main(){long long a,b;std::cin>>a>>b;std::cout<<a+b<<'\\n';}\n",
    Verdict.WA: "#include <cstdio>\nint main(){long long a,b;scanf(\"%lld %lld\",&a,&b);printf(\"%lld\\n\",a*b);}\n",
    Verdict.TLE: "int main(){volatile unsigned long x=0;for(;;)x++;}\n",
    Verdict.RE: "#include <cstdio>\nint main(){int *p=nullptr; *p=1; printf(\"%d\", *p);}\n",
    Verdict.MLE: "#include <vector>\nint main(){std::vector<std::vector<char>> v;for(;;)v.emplace_back(1<<20,'x');}\n",
    Verdict.CE: "int main() { return undefined_name; }\n",
}


@pytest.mark.parametrize("language,programs", [("python", PY), ("cpp", CPP)])
@pytest.mark.parametrize("verdict", list(PY))
def test_each_verdict(judge, language, programs, verdict):
    result = run(judge, language, programs[verdict])
    assert result.verdict is verdict, (result.verdict, [(t.verdict, t.note, t.stderr[-300:]) for t in result.tests],
                                       result.compile_output[:500])
    assert result.judge_error is None
    assert result.total == len(ADD_TESTS)
    assert result.passed == (len(ADD_TESTS) if verdict is Verdict.OK else 0)
    if verdict is Verdict.CE:
        assert result.tests == [] and result.compile_output
    if verdict is Verdict.TLE:  # stop at the first time-limit verdict
        assert len(result.tests) == 1


def test_partial_pass_counts_and_first_failure_is_the_verdict(judge):
    source = "a, b = map(int, input().split())\nprint(a + b if a < 100 else 0)\n"
    result = run(judge, "python", source)
    assert [t.verdict for t in result.tests] == [Verdict.OK, Verdict.OK, Verdict.WA]
    assert (result.verdict, result.passed, result.total) == (Verdict.WA, 2, 3)
    assert result.pass_ratio == pytest.approx(2 / 3)


def test_tests_after_a_tle_are_skipped_unless_asked(judge):
    source = "a, b = map(int, input().split())\nwhile a == 10: pass\nprint(a + b)\n"
    stopped = run(judge, "python", source, time_limit=0.5)
    assert [t.verdict for t in stopped.tests] == [Verdict.OK, Verdict.TLE]
    assert (stopped.passed, stopped.total) == (1, 3)
    full = run(judge, "python", source, time_limit=0.5, stop_at_first_tle=False)
    assert [t.verdict for t in full.tests] == [Verdict.OK, Verdict.TLE, Verdict.OK]


def test_stop_at_first_failure(judge):
    result = run(judge, "python", PY[Verdict.WA], stop_at_first_failure=True)
    assert len(result.tests) == 1 and result.verdict is Verdict.WA


def test_tle_is_cpu_time_and_sleeping_hits_the_wall_backstop(judge):
    busy = run(judge, "python", PY[Verdict.TLE], tests=ADD_TESTS[:1], time_limit=0.3)
    assert busy.verdict is Verdict.TLE and "CPU" in busy.tests[0].note
    sleepy = run(judge, "python", "import time\ntime.sleep(60)\n", tests=ADD_TESTS[:1], time_limit=0.2)
    assert sleepy.verdict is Verdict.TLE and "wall-clock" in sleepy.tests[0].note


def test_a_program_is_one_process_and_its_threads_share_its_limits(judge):
    # a child would run outside the program's CPU timer and memory limit: starting one is refused
    forked = run(judge, "python", "import os\nos.fork()\nprint(3)\n", tests=ADD_TESTS[:1])
    assert forked.verdict is Verdict.RE and "PermissionError" in forked.tests[0].stderr, forked.tests[0].stderr
    # threads stay allowed, and the CPU time of all of them counts: four busy threads hit a 0.3 s limit
    spin = ("import threading\ndef spin():\n    while True: pass\n"
            "for _ in range(4): threading.Thread(target=spin, daemon=True).start()\nspin()\n")
    busy = run(judge, "python", spin, tests=ADD_TESTS[:1], time_limit=0.3)
    assert busy.verdict is Verdict.TLE and "CPU" in busy.tests[0].note, busy.tests[0].note


def test_an_impossible_allocation_is_a_runtime_error(judge):
    # refused outright, as under python3: the program never held more than the limit
    result = run(judge, "python", "x = [0] * 10**18\n", tests=ADD_TESTS[:1])
    assert result.verdict is Verdict.RE and "allocation failed" in result.tests[0].note
    result = run(judge, "cpp", "#include <vector>\nint main(){std::vector<char> v(1ull<<40); return v[7];}\n",
                 tests=ADD_TESTS[:1])
    assert result.verdict is Verdict.RE and "allocation failed" in result.tests[0].note


def test_python_keeps_its_int_string_conversion_limit(judge):
    result = run(judge, "python", "print(len(str(10 ** 5000)))", tests=[("", "5001")])
    assert result.verdict is Verdict.RE and "Exceeds the limit" in result.tests[0].stderr


def test_memory_limit_is_peak_resident_memory(judge):
    touch = "b = bytearray({n} << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nprint(3)\n"
    assert run(judge, "python", touch.format(n=40), tests=[("", "3")], memory=64 * MB).verdict is Verdict.OK
    result = run(judge, "python", touch.format(n=100), tests=[("", "3")], memory=64 * MB)
    assert result.verdict is Verdict.MLE, [(t.note, t.memory_bytes) for t in result.tests]


def test_deep_recursion_gets_a_big_stack(judge):
    source = ("import sys\nsys.setrecursionlimit(10**6)\nfrom functools import lru_cache\n"
              "@lru_cache(None)\ndef f(n): return 0 if n == 0 else 1 + f(n - 1)\nprint(f(100000))\n")
    result = run(judge, "python", source, tests=[("", "100000")], time_limit=5.0)
    assert result.verdict is Verdict.OK, [(t.note, t.stderr[-300:]) for t in result.tests]
    cpp = ("#include <cstdio>\nint f(int n){volatile int pad[16]; pad[0]=n; return n==0?0:1+f(n-1)+(pad[0]-n);}\n"
           "int main(){printf(\"%d\\n\", f(1000000));}\n")
    result = run(judge, "cpp", cpp, tests=[("", "1000000")], time_limit=5.0)
    assert result.verdict is Verdict.OK, [(t.note, t.stderr[-300:]) for t in result.tests]


def test_output_limit(judge):
    result = run(judge, "python", "import sys\nwhile True: sys.stdout.write('y' * 65536)\n", tests=ADD_TESTS[:1])
    assert result.verdict is Verdict.WA and "output limit" in result.tests[0].note


def test_python_runs_like_a_fresh_interpreter(judge):
    # the working directory, home and temporary directory: /tmp in a bwrap sandbox, the judge's empty run directory
    # in the container tier; read-only for the program either way (it creates no files)
    expected_cwd = {"/tmp"} if judge.isolation == "bwrap" else {str(judge._run_dir)}
    source = ("import sys, os, random, threading\n"
              "assert __name__ == '__main__'\n"
              "res = []\nt = threading.Thread(target=lambda: res.append(len(sys.stdin.readline().split())))\n"
              "t.start(); t.join()\n"
              "assert os.getcwd() == os.environ['HOME'] == os.environ['TMPDIR'], os.environ\n"
              "print(res[0], sys.argv[0], 10 ** 5000 > 0, sorted(os.environ))\n"
              "print(os.getcwd(), file=sys.stderr)\n"
              "sys.exit(0)\n")
    result = run(judge, "python", source, tests=[("a b c\n", "3 solution.py True ['HOME', 'LANG', 'PATH', 'TMPDIR']")])
    assert result.verdict is Verdict.OK, result.tests[0].output + result.tests[0].stderr
    assert result.tests[0].stderr.strip() in expected_cwd


def test_python_random_is_reseeded_per_run(judge):
    outputs = {run(judge, "python", "import random\nprint(random.random())", tests=[("", "0")]).tests[0].output
               for _ in range(3)}
    assert len(outputs) == 3


def test_exit_status_and_signals_are_runtime_errors(judge):
    for source, note in [("import sys\nsys.exit(7)", "exit status 7"), ("import os\nos.abort()", "SIGABRT"),
                         ("raise ValueError('boom')", "exit status 1")]:
        result = run(judge, "python", source, tests=ADD_TESTS[:1])
        assert result.verdict is Verdict.RE and note in result.tests[0].note, result.tests[0].note
    result = run(judge, "python", "raise ValueError('boom')", tests=ADD_TESTS[:1])
    assert "ValueError: boom" in result.tests[0].stderr


def test_cpp_is_compiled_once_per_source(judge):
    source = CPP[Verdict.OK] + "// unique 8c1f\n"
    first = run(judge, "cpp", source)
    assert first.verdict is Verdict.OK
    binaries = set(os.listdir(judge._bin_dir))
    again = run(judge, "cpp", source)
    assert again.verdict is Verdict.OK and set(os.listdir(judge._bin_dir)) == binaries
    different = run(judge, "cpp", source + "// another\n")
    assert different.verdict is Verdict.OK and len(set(os.listdir(judge._bin_dir)) - binaries) == 1


def test_cpp_uses_the_precompiled_header(judge):
    run(judge, "cpp", CPP[Verdict.OK] + "// pch check\n")
    pch = judge.info()["pch"]
    assert pch and pch.startswith("/judge/cache/pch-")
    gch = Path("bits") / "stdc++.h.gch"
    built = judge.cache_root / pch.rsplit("/", 1)[1] / gch
    assert built.stat().st_size > 1 * MB
    if judge.isolation == "container":  # where the workers' uids can read it: the same file, linked or copied
        assert (judge._cache_view / pch.rsplit("/", 1)[1] / gch).stat().st_size == built.stat().st_size


def test_compile_error_shows_the_compiler_message(judge):
    result = run(judge, "cpp", CPP[Verdict.CE])
    assert "undefined_name" in result.compile_output
    result = run(judge, "python", PY[Verdict.CE])
    assert "SyntaxError" in result.compile_output


# --- output checking -------------------------------------------------------------------------------------------

def test_checker_is_token_wise_and_whitespace_insensitive():
    assert outputs_match(b"1  2\r\n3\n\n", "1 2 3")
    assert outputs_match(b"YES", "YES\n")
    assert not outputs_match(b"yes", "YES")
    assert not outputs_match(b"1 2", "1 2 3")
    assert not outputs_match(b"12", "1 2")
    assert not outputs_match(b"0.5000001", "0.5")
    assert outputs_match(b"0.5000001", "0.5", float_tolerance=1e-6)
    assert outputs_match(b"1000000.5", "1000000", float_tolerance=1e-6)  # relative
    assert not outputs_match(b"0.51", "0.5", float_tolerance=1e-6)
    assert not outputs_match(b"abc", "abd", float_tolerance=0.5)
    assert outputs_match(b"nan", "nan", float_tolerance=0.5)  # non-finite: exact tokens only
    assert not outputs_match(b"inf", "1e999", float_tolerance=0.5)


def test_float_tolerance_through_the_judge(judge):
    source = "print(1 / 3)"
    assert run(judge, "python", source, tests=[("", "0.333333")]).verdict is Verdict.WA
    assert run(judge, "python", source, tests=[("", "0.333333")], float_tolerance=1e-5).verdict is Verdict.OK


def test_binary_output_does_not_break_the_judge(judge):
    result = run(judge, "python", "import sys\nsys.stdout.buffer.write(bytes(range(256)))", tests=ADD_TESTS[:1])
    assert result.verdict is Verdict.WA


# --- API ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,message", [
    ({"language": "java"}, "unsupported language 'java'"),
    ({"time_limit": 0}, "time_limit must be a positive number of seconds, got 0"),
    ({"time_limit": float("nan")}, "time_limit"),
    ({"memory_limit_bytes": 100}, "memory_limit_bytes must be an int of at least 4 MiB, got 100"),
    ({"tests": []}, "tests is empty"),
    ({"tests": [("only input",)]}, "test 0 must be an (input, expected_output) pair"),
    ({"tests": [(1, "2")]}, "input of test 0 must be str or bytes"),
    ({"float_tolerance": 2.0}, "float_tolerance must be in [0, 1)"),
])
def test_bad_input_is_a_clear_error(judge, kwargs, message):
    args = {"language": "python", "source": "print(1)", "tests": [("", "1")], "time_limit": 1.0,
            "memory_limit_bytes": 64 * MB, **kwargs}
    with pytest.raises((ValueError, TypeError)) as info:
        judge.run(**args)
    assert message in str(info.value)


def test_bad_judge_arguments_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="isolation must be one of .* got 'docker'"):
        Judge(workers=1, isolation="docker")
    with pytest.raises(ValueError, match="workers must be an int from 1 to 1365"):
        Judge(workers=0)
    with pytest.raises(SandboxUnavailableError, match="does not exist"):
        Judge(workers=1, python="/usr/bin/python-does-not-exist")


def test_missing_bubblewrap_is_a_clear_error_or_the_container_tier(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH without bwrap: what a machine without it looks like
    with pytest.raises(SandboxUnavailableError, match="bubblewrap .* not on PATH.*setup_system.sh"):
        resolve_isolation("bwrap")
    if os.geteuid() == 0:  # a stock image (SageMaker's PyTorch DLC) has no bubblewrap: "auto" takes the container tier
        assert resolve_isolation("auto") == ("container", "bubblewrap (bwrap) is not installed here")
    else:
        with pytest.raises(SandboxUnavailableError, match="bubblewrap .* not on PATH.*setup_system.sh"):
            resolve_isolation("auto")


def test_unisolated_mode_must_be_asked_for_and_is_loud(recwarn):
    with Judge(workers=1, isolation="none") as unsafe:
        assert unsafe.mode == "none"
        assert run(unsafe, "python", PY[Verdict.OK]).verdict is Verdict.OK
        assert run(unsafe, "python", PY[Verdict.TLE], tests=ADD_TESTS[:1], time_limit=0.3).verdict is Verdict.TLE
        for verdict in (Verdict.OK, Verdict.CE, Verdict.TLE):
            result = run(unsafe, "cpp", CPP[verdict], tests=ADD_TESTS[:1])
            assert result.verdict is verdict, (result.compile_output, [t.note for t in result.tests])
    assert any("UNISOLATED" in str(w.message) for w in recwarn)


def test_results_and_submissions_pickle(judge):
    result = run(judge, "python", PY[Verdict.WA])
    clone = pickle.loads(pickle.dumps(result))
    assert clone == result and clone.verdict is Verdict.WA
    sub = Submission("py", "print(1)", [("", "1")], 1, 64 * MB)
    assert pickle.loads(pickle.dumps(sub)) == sub and sub.language == "python"
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(judge)
    assert result.to_dict()["verdict"] == "WA"


def test_run_many_keeps_order_and_mixes_languages(judge):
    subs = []
    for i in range(12):
        language, verdict = ("python", "cpp")[i % 2], (Verdict.OK, Verdict.WA, Verdict.RE)[i % 3]
        programs = PY if language == "python" else CPP
        subs.append(Submission(language, programs[verdict], ADD_TESTS, 1.0, 256 * MB))
    results = judge.run_many(subs)
    assert [r.verdict for r in results] == [(Verdict.OK, Verdict.WA, Verdict.RE)[i % 3] for i in range(12)]
    as_dicts = judge.run_many([{"language": "python", "source": PY[Verdict.OK], "tests": ADD_TESTS,
                                "time_limit": 1.0, "memory_limit_bytes": 256 * MB}])
    assert as_dicts[0].verdict is Verdict.OK
    with pytest.raises(ValueError, match="submission 0: .*time_limit"):
        judge.run_many([{"language": "python", "source": "", "tests": ADD_TESTS, "time_limit": -1,
                         "memory_limit_bytes": 256 * MB}])


def test_concurrent_callers_share_the_pool(judge):
    results = [None] * 8

    def call(i):
        results[i] = run(judge, "python", PY[Verdict.OK])

    threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r.verdict is Verdict.OK for r in results)


def test_harness(judge):
    """A function-call harness: the program's function answers the checks' calls from another process."""
    double = "def f(x):\n    return x * 2\n"
    ok = judge.run_harness(double, "assert candidate(2) == 4\nassert candidate(x=3) == 6\n", "f", timeout=2.0)
    assert (ok.verdict, ok.passed, ok.total) == (Verdict.OK, 1, 1) and "2 calls" in ok.tests[0].note
    failing = judge.run_harness("def f(x):\n    return x\n", "assert candidate(2) == 4, 'f(2)'\n", "f", timeout=2.0)
    assert failing.verdict is Verdict.WA and failing.tests[0].note == "a check failed: AssertionError: f(2)"
    raising = judge.run_harness("def f(x):\n    return 1 // 0\n", "candidate(1)\n", "f", timeout=2.0)
    assert raising.verdict is Verdict.RE and "ZeroDivisionError" in raising.tests[0].note
    looping = judge.run_harness("def f(x):\n    while True: pass\n", "candidate(1)\n", "f", timeout=0.3)
    assert looping.verdict is Verdict.TLE
    assert judge.run_harness("def (:\n", "candidate(1)\n", "f", timeout=1.0).verdict is Verdict.CE
    missing = judge.run_harness("def g(x):\n    return x\n", "candidate(1)\n", "f", timeout=1.0)
    assert missing.verdict is Verdict.RE and "defines no 'f'" in missing.tests[0].stderr
    method = judge.run_harness("class Solution:\n    def add(self, a, b):\n        return a + b\n",
                               "assert candidate(1, 2) == 3\n", "Solution.add", timeout=1.0)
    assert method.verdict is Verdict.OK
    broken = judge.run_harness(double, "def (:\n", "f", timeout=1.0)  # the checks themselves: the judge's fault
    assert broken.verdict is Verdict.JUDGE_ERROR and "checks.py" in broken.judge_error
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        judge.run_harness(double, "candidate(1)", "f", timeout=0)
    with pytest.raises(ValueError, match="call must name a function"):
        judge.run_harness(double, "candidate(1)", "f(1)", timeout=1.0)


_VALUES = ("None, True, False, 0, -7, 2**200, 0.1, -0.0, float('inf'), 1e308, 2+3j, 'x\\u00e9\\ud800', b'\\x00\\xff', "
           "bytearray(b'ab'), [1, (2, 3)], (), (1,), {1, 2}, frozenset({'a'}), {(1, 2): [3], 'k': {'n': None}}")


def test_harness_values_keep_their_python_types(judge):
    """What a function returns reaches the checks as the same plain value, types included (tuple is not list,
    floats exact, big ints whole); a subclass arrives as its base type; anything else is a wrong answer."""
    program = f"def f(i):\n    return [{_VALUES}][i]\n"
    check = (f"expected = [{_VALUES}]\n"
             "for i, value in enumerate(expected):\n"
             "    got = candidate(i)\n"
             "    assert type(got) is type(value) and repr(got) == repr(value), (i, got)\n")
    assert judge.run_harness(program, check, "f", timeout=2.0).verdict is Verdict.OK
    nan = judge.run_harness("def f():\n    return float('nan')\n",
                            "import math\nassert math.isnan(candidate())\n", "f", timeout=2.0)
    assert nan.verdict is Verdict.OK
    subclass = ("import collections\nP = collections.namedtuple('P', 'x y')\n"
                "def f():\n    return [P(1, 2), collections.Counter('aab'), True]\n")
    got = judge.run_harness(subclass, "assert candidate() == [(1, 2), {'a': 2, 'b': 1}, 1]\n"
                                      "assert type(candidate()[0]) is tuple\n", "f", timeout=2.0)
    assert got.verdict is Verdict.OK, got.tests[0].note
    for value in ("(x for x in [1])", "object()", "print", "[[]] * 0 or __import__('sys')"):
        wrong = judge.run_harness(f"def f():\n    return {value}\n", "candidate()\n", "f", timeout=2.0)
        assert wrong.verdict is Verdict.WA and "not plain data" in wrong.tests[0].note, (value, wrong)
    cyclic = judge.run_harness("def f():\n    x = []\n    x.append(x)\n    return x\n", "candidate()\n", "f",
                               timeout=2.0)
    assert cyclic.verdict is Verdict.WA and "too deep or cyclic" in cyclic.tests[0].note


# --- judge failures ------------------------------------------------------------------------------------------

def _kill_sandboxes(judge, stop: threading.Event):
    while not stop.is_set():
        for worker in judge._workers:
            server = worker.server
            if server is not None and server.alive:
                try:
                    os.killpg(server.proc.pid, signal.SIGKILL)
                except OSError:
                    pass
        time.sleep(0.05)


def test_a_crashed_sandbox_is_a_judge_error_and_the_worker_recovers():
    with Judge(workers=1) as j:
        stop = threading.Event()
        killer = threading.Thread(target=_kill_sandboxes, args=(j, stop))
        killer.start()
        try:
            result = run(j, "python", "import time\ntime.sleep(0.5)\nprint(3)\n", tests=ADD_TESTS[:1])
        finally:
            stop.set()
            killer.join()
        assert result.verdict is Verdict.JUDGE_ERROR
        assert result.judge_error and "sandbox" in result.judge_error
        assert result.passed == 0 and result.total == 1
        # the worker restarts its sandbox on the next sample
        assert run(j, "python", PY[Verdict.OK]).verdict is Verdict.OK


def test_one_crash_is_retried_transparently():
    with Judge(workers=1) as j:
        assert run(j, "python", PY[Verdict.OK]).verdict is Verdict.OK
        os.killpg(j._workers[0].server.proc.pid, signal.SIGKILL)
        j._workers[0].server.proc.wait()
        assert run(j, "python", PY[Verdict.OK]).verdict is Verdict.OK


def test_running_past_the_sample_budget_is_a_judge_error(judge):
    slow = "import time\ntime.sleep(0.4)\na, b = map(int, input().split())\nprint(a + b)\n"
    result = run(judge, "python", slow, timeout=0.5)
    assert result.verdict is Verdict.JUDGE_ERROR and "time budget" in result.judge_error


def test_a_closed_judge_refuses_work():
    j = Judge(workers=1)
    j.close()
    j.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        run(j, "python", PY[Verdict.OK])


# --- the process-wide judge ------------------------------------------------------------------------------

def test_default_judge_is_shared_and_replaced_after_fork(monkeypatch):
    monkeypatch.setenv("CODEFU_JUDGE_WORKERS", "1")
    shutdown_default_judge()
    first = get_judge()
    assert get_judge() is first and first.workers == 1
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # a forked child (verl's process pools do this) gets its own judge and leaves the parent's alone
        try:
            child = get_judge()
            ok = child is not first and run(child, "python", PY[Verdict.OK]).verdict is Verdict.OK
            shutdown_default_judge()  # os._exit skips atexit
            os.write(write, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1"
    assert run(first, "python", PY[Verdict.OK]).verdict is Verdict.OK  # the parent's judge still works
    shutdown_default_judge()
    assert first._closed


def _host_processes(name):
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if open(f"/proc/{pid}/comm").read().strip() == name:
                found.append(int(pid))
        except OSError:
            pass
    return found


def test_no_process_of_a_run_survives_it(judge):
    # children that would detach (setsid) and sleep, named so that the host could find them: refused outright
    source = ("import ctypes, os, time\nfor _ in range(3):\n    if os.fork() == 0:\n        os.setsid()\n"
              "        ctypes.CDLL(None).prctl(15, b'codefu-sleeper', 0, 0, 0)\n        time.sleep(30)\n"
              "time.sleep(0.2)\nprint(3)\n")
    result = run(judge, "python", source, tests=[("", "3")], time_limit=0.5)
    assert result.verdict is Verdict.RE and "PermissionError" in result.tests[0].stderr, result.tests[0].stderr
    # a thread that never ends keeps the program alive (Python waits for it) until the wall-clock backstop
    sleeper = ("import threading, time\nthreading.Thread(target=time.sleep, args=(60,)).start()\nprint(3)\n")
    result = run(judge, "python", sleeper, tests=[("", "3")], time_limit=0.5)
    assert result.verdict is Verdict.TLE and "wall-clock" in result.tests[0].note, result.tests[0].note
    assert _host_processes("codefu-sleeper") == []
