"""Escape probes: programs that try to reach the network (TCP and abstract AF_UNIX sockets), write or read host
files, read secrets, fork-bomb, memory-bomb, spin, ignore signals, outlive the judge, flood stdout, kill the
judge, poke the kernel, leave files for the next test or find the expected answer. Every one must be contained,
judged by host-side evidence (see codefu_helpers/sandbox/probes.py).

The same checks run against an *unisolated* judge must report the attacks that work there: that is what shows
the checks can fail. And the whole battery runs in both isolation tiers: bwrap (as root, this is CI) and
container, the latter inside a process that may not create namespaces, as in a Docker container with the default
seccomp profile (`docker_like`, tests/test_sandbox_container.py), where `isolation="auto"` has to pick it. Parts
of it also run through a subprocess as `nobody`, as an ordinary user (a laptop: bubblewrap with a user namespace).
"""

import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from codefu_helpers.sandbox import Judge
from codefu_helpers.sandbox.probes import DAEMON_NAME, PROBES, SECRET_ENV, _host_processes_named, run_escape_probes
from test_sandbox_container import run_docker_like

ROOT = Path(__file__).resolve().parent.parent
SECRET = "5ec7e7000000000000c0ffee"

_DOCKER_LIKE_PROBES = textwrap.dedent("""
    import json
    from codefu_helpers.sandbox import Judge
    from codefu_helpers.sandbox.probes import run_escape_probes
    with Judge(workers=2) as judge:  # auto: bubblewrap cannot create namespaces here
        print(json.dumps({"isolation": judge.isolation, "rows": run_escape_probes(judge)}))
""")


@pytest.fixture(scope="module", params=["bwrap", "container"])
def probe_rows(request):
    if request.param == "container":  # where it is used: namespaces refused, the secret in the environment
        out, _ = run_docker_like(_DOCKER_LIKE_PROBES, env={SECRET_ENV: SECRET})
        assert out["isolation"] == "container"
        return {row["probe"]: row for row in out["rows"]}
    previous = os.environ.get(SECRET_ENV)
    os.environ[SECRET_ENV] = SECRET  # as credentials would be on a training host, before the judge starts
    try:
        with Judge(workers=2, isolation="bwrap") as judge:
            rows = run_escape_probes(judge)
    finally:
        if previous is None:
            os.environ.pop(SECRET_ENV, None)
        else:
            os.environ[SECRET_ENV] = previous
    return {row["probe"]: row for row in rows}


@pytest.mark.slow
@pytest.mark.parametrize("name", [p.name for p in PROBES])
def test_probe_is_contained(probe_rows, name):
    row = probe_rows[name]
    assert row["contained"], row
    assert row["judge_error"] is None, row


def test_the_checks_catch_attacks_that_work_without_isolation():
    """Unisolated, the network, file, secret-file and daemon probes succeed, and the checks must say so."""
    names = ["network", "abstract unix socket", "write outside tmp", "read host secrets", "daemon outliving the judge"]
    try:
        with Judge(workers=1, isolation="none") as unsafe:
            rows = {r["probe"]: r for r in run_escape_probes(unsafe, names=names)}
    finally:
        for pid in _host_processes_named(DAEMON_NAME):  # the daemon did escape: clean up after it
            os.kill(pid, signal.SIGKILL)
    assert {name: rows[name]["contained"] for name in names} == {name: False for name in names}


_USERNS_SCRIPT = textwrap.dedent("""
    import json, os, sys
    from codefu_helpers.sandbox import Judge, Verdict
    from codefu_helpers.sandbox.probes import run_escape_probes
    out = {}
    with Judge(workers=1) as judge:
        out["mode"] = judge.mode
        tests = [("2 3\\n", "5\\n")]
        ok = "a, b = map(int, input().split())\\nprint(a + b)\\n"
        cpp = "#include <cstdio>\\nint main(){int a,b;scanf(\\"%d %d\\",&a,&b);printf(\\"%d\\\\n\\",a+b);}\\n"
        out["verdicts"] = [judge.run("python", ok, tests, 1.0, 256 << 20).verdict.value,
                           judge.run("python", "while True: pass", tests, 0.5, 256 << 20).verdict.value,
                           judge.run("cpp", cpp, tests, 1.0, 256 << 20).verdict.value]
        out["probes"] = run_escape_probes(judge, names=sys.argv[1:])
    print(json.dumps(out))
""")


@pytest.fixture
def user_dir(tmp_path):
    """A working directory the unprivileged user can use (pytest's own tmp tree is private to root)."""
    if os.geteuid() != 0:
        yield tmp_path
        return
    path = Path(tempfile.mkdtemp(prefix="codefu-userns-"))
    nobody = pwd.getpwnam("nobody")
    os.chown(path, nobody.pw_uid, nobody.pw_gid)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.mark.slow
def test_ordinary_user_mode(user_dir):
    """bubblewrap with a user namespace (no root): the verdicts and the escape probes hold there too."""
    names = ["network", "write outside tmp", "read host secrets", "fork bomb", "daemon outliving the judge",
             "kill the judge", "kernel attack surface", "leftovers between tests", "memory bomb"]
    script = user_dir / "userns.py"
    script.write_text(_USERNS_SCRIPT)
    script.chmod(0o644)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "CODEFU_JUDGE_CACHE": str(user_dir / "cache"),
           "HOME": str(user_dir), SECRET_ENV: SECRET}
    if os.geteuid() == 0:  # CI runs as root: drop to nobody, who can still use bubblewrap unprivileged
        nobody = pwd.getpwnam("nobody")
        cmd = ["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups",
               "/usr/bin/python3", str(script), *names]
    else:
        cmd = [sys.executable, str(script), *names]
    proc = subprocess.run(cmd, env=env, cwd=user_dir, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["mode"] == "userns"
    assert out["verdicts"] == ["OK", "TLE", "OK"]
    assert {row["probe"]: row["contained"] for row in out["probes"]} == {name: True for name in names}, out["probes"]


_NO_SYS_ADMIN_SCRIPT = textwrap.dedent("""
    import json
    from codefu_helpers.sandbox import Judge
    with Judge(workers=1) as judge:
        tests = [("2 3\\n", "5\\n")]
        verdicts = [judge.run("python", "a, b = map(int, input().split())\\nprint(a + b)", tests, 1.0, 256 << 20),
                    judge.run("python", "while True: pass", tests, 0.5, 256 << 20),
                    judge.run("python", "import os\\nprint(os.getuid())", [("", "1000")], 1.0, 256 << 20)]
        print(json.dumps({"mode": judge.mode, "run_as": judge.info()["run_as"],
                          "verdicts": [r.verdict.value for r in verdicts]}))
""")


@pytest.mark.slow
def test_root_without_namespace_capabilities_falls_back_to_user_namespaces(tmp_path):
    """Root in an unprivileged container (no CAP_SYS_ADMIN): bubblewrap cannot work as root, so the judge runs
    its sandboxes as `nobody` with user namespaces rather than failing or running unisolated."""
    if os.geteuid() != 0:  # an ordinary user is always in that mode; the rest of the suite covers it
        with Judge(workers=1) as judge:
            assert judge.mode == "userns"
        return
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    proc = subprocess.run(["setpriv", "--bounding-set=-sys_admin", sys.executable, "-c", _NO_SYS_ADMIN_SCRIPT],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    nobody = pwd.getpwnam("nobody")
    assert out == {"mode": "userns", "run_as": [nobody.pw_uid, nobody.pw_gid], "verdicts": ["OK", "TLE", "OK"]}
    assert "bubblewrap cannot run as root here" in proc.stderr
