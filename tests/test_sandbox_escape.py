"""The probe battery, as an attacker would write it, in every isolation tier this machine offers.

Escape probes (`PROBES`): programs that try to reach the network (TCP and abstract AF_UNIX sockets), write or read
host files, read secrets, fork-bomb, memory-bomb, spin, ignore signals, outlive the judge, flood stdout, kill the
judge, poke the kernel, leave files for the next test or find the expected answer. Integrity probes
(`INTEGRITY_PROBES`, issue 18): programs that try to get OK without solving the problem -- by finding an earlier
sample's output in memory or running its binary, by hiding CPU time or memory in children, threads, memfds or
files, by filling the disk, breaking the worker's clean-up, starving a concurrent sample, reading the host's data,
holding capabilities, exiting before a harness's checks -- plus the oversize binary (a clear CE) and the stderr
flood (a correct answer stays OK). Every one is judged by host-side evidence (codefu_helpers/sandbox/probes.py),
and after every one, honest samples on every worker must still be OK.

Tiers, one battery each (a module fixture), the rows asserted one test per probe:
  bwrap         bubblewrap as root (CI)
  userns        bubblewrap in user namespaces, as `nobody` (a laptop; the tier that kept capabilities before)
  container     the container tier, as root, with Landlock
  docker-like   inside a process that may not create namespaces, as Docker's default profile runs a container
                (`docker_like`, tests/test_sandbox_container.py): `isolation="auto"` has to pick the container tier
  no-landlock   the same, with Landlock answered by ENOSYS (a kernel before 5.13): the judge refuses to start
                unless programs_may_read_host_files=True, and with it every probe is contained except that data
                reads are exposed, as accepted
  protected     the same kernel without Landlock, but the data channel's directory protected by its mode, as the
                SageMaker entry point does (protect.py): the judge checks it with canaries, and nothing is exposed
  landlock      an ordinary user (`nobody`) whom namespaces are refused: `auto` has to find the landlock tier

The same checks run against an *unisolated* judge must report the attacks that work there: that is what shows
the checks can fail (and notebook 02's table gives the verdicts the battery got before issue 18).
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
import threading
from pathlib import Path

import pytest

from codefu_helpers.sandbox import Judge
from codefu_helpers.sandbox.probes import (DAEMON_NAME, INSPECT_NAME, INTEGRITY_PROBES, PROBES, SECRET_ENV,
                                           _host_processes_named, _judge_mappings, run_escape_probes)
from test_sandbox_container import docker_like, run_docker_like

ROOT = Path(__file__).resolve().parent.parent
SECRET = "5ec7e7000000000000c0ffee"
TIERS = ["bwrap", "userns", "container", "docker-like", "no-landlock", "protected", "landlock"]
ALL_PROBES = [p.name for p in PROBES] + [p.name for p in INTEGRITY_PROBES]
EXPOSED_WITHOUT_LANDLOCK = "read the data channels"  # what programs_may_read_host_files accepts

_BATTERY = textwrap.dedent("""
    import json, os, sys
    from codefu_helpers.sandbox import Judge, Verdict
    from codefu_helpers.sandbox.probes import run_escape_probes
    kwargs = json.loads(sys.argv[1])
    channel_root = None
    if kwargs.pop("protect", False):  # as a SageMaker job's entry point does where Landlock is missing
        import tempfile
        from codefu_helpers.sandbox.protect import protect_host_files
        channel_root = tempfile.mkdtemp(prefix="codefu-protected-")
        os.chmod(channel_root, 0o755)
        kwargs["protected_paths"] = protect_host_files([channel_root])
    with Judge(workers=2, **kwargs) as judge:  # docker-like: auto, bubblewrap cannot create namespaces there
        tests = [("2 3\\n", "5\\n")]
        ok = "a, b = map(int, input().split())\\nprint(a + b)\\n"
        cpp = "#include <cstdio>\\nint main(){int a,b;scanf(\\"%d %d\\",&a,&b);printf(\\"%d\\\\n\\",a+b);}\\n"
        verdicts = [judge.run("python", ok, tests, 1.0, 256 << 20).verdict.value,
                    judge.run("python", "while True: pass", tests, 0.5, 256 << 20).verdict.value,
                    judge.run("cpp", cpp, tests, 1.0, 256 << 20).verdict.value]
        print(json.dumps({"isolation": judge.isolation, "mode": judge.mode, "info": judge.info(),
                          "verdicts": verdicts, "rows": run_escape_probes(judge, channel_root=channel_root)}))
""")


def _as_nobody(script: str, kwargs: dict, namespaces: bool = True) -> dict:
    """The battery as an ordinary user (bubblewrap then makes a user namespace): `nobody`, when this runs as root.
    Without namespaces: as a Docker container's processes run (tests/test_sandbox_container.py's `docker_like`),
    where `auto` must pick the landlock tier."""
    if os.geteuid() != 0:
        proc = subprocess.run([sys.executable, "-c", script, json.dumps(kwargs)], capture_output=True, text=True,
                              timeout=900, env={**os.environ, SECRET_ENV: SECRET, "PYTHONPATH": str(ROOT)})
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])
    home = Path(tempfile.mkdtemp(prefix="codefu-userns-"))
    nobody = pwd.getpwnam("nobody")
    os.chown(home, nobody.pw_uid, nobody.pw_gid)
    try:
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "CODEFU_JUDGE_CACHE": str(home / "cache"),
               "HOME": str(home), SECRET_ENV: SECRET}
        argv = ["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups",
                "/usr/bin/python3", "-c", script, json.dumps(kwargs)]
        proc = subprocess.run(argv if namespaces else docker_like(argv), env=env, cwd=home, capture_output=True,
                              text=True, timeout=900)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(home, ignore_errors=True)


class _Inspector(threading.Thread):
    """Looks, from the host, at every program that names itself INSPECT_NAME while it waits (the "nothing of the
    judge in a program" probes): its descriptors and its shared mappings, as /proc shows them to root outside any
    sandbox -- the evidence for the tiers where the program itself may not read /proc."""

    def __init__(self):
        super().__init__(daemon=True)
        self.seen: dict[int, dict] = {}
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            for pid in _host_processes_named(INSPECT_NAME):
                if pid in self.seen:
                    continue
                try:
                    fds = {int(fd): os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
                    with open(f"/proc/{pid}/maps") as fh:
                        shared = [f[1] + ":" + (f[5] if len(f) > 5 else "anonymous") for f in map(str.split, fh)
                                  if f[1][3] == "s"]
                    self.seen[pid] = {"exe": os.readlink(f"/proc/{pid}/exe"), "fds": fds, "shared": shared}
                except OSError:  # gone before the look was complete: the next one is taken
                    pass
            self.done.wait(0.1)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.join()


@pytest.fixture(scope="module", params=TIERS)
def battery(request):
    """{"tier", "isolation", "mode", "info", "verdicts", "rows": {probe: row}} of one tier's battery."""
    tier = request.param
    if tier in ("container", "docker-like", "no-landlock", "protected", "landlock") and os.geteuid() != 0:
        pytest.skip("the container tier runs as root (as SageMaker jobs do)")
    with _Inspector() as inspector:
        out = _battery(tier)
    out["inspected"] = list(inspector.seen.values())
    out["tier"] = tier
    if os.environ.get("CODEFU_PROBE_TABLE"):  # the tier x probe table of benchmarks/RESULTS.md, written when asked
        Path(os.environ["CODEFU_PROBE_TABLE"]).mkdir(parents=True, exist_ok=True)
        (Path(os.environ["CODEFU_PROBE_TABLE"]) / f"{tier}.json").write_text(json.dumps(out, indent=1, default=str))
    out["rows"] = {row["probe"]: row for row in out["rows"]}
    return out


def _battery(tier: str) -> dict:
    if tier == "userns":
        out = _as_nobody(_BATTERY, {"isolation": "bwrap"})
    elif tier == "landlock":  # an ordinary user whom namespaces are refused: auto picks it
        out = _as_nobody(_BATTERY, {}, namespaces=False)
    elif tier == "docker-like":
        out, _ = run_docker_like(_BATTERY, json.dumps({}), env={SECRET_ENV: SECRET})
    elif tier == "protected":  # no Landlock, the data channel's directory protected as the entry point does
        out, _ = run_docker_like(_BATTERY, json.dumps({"protect": True}), landlock=False, env={SECRET_ENV: SECRET})
    elif tier == "no-landlock":
        out, _ = run_docker_like(_BATTERY, json.dumps({"programs_may_read_host_files": True}), landlock=False,
                                 env={SECRET_ENV: SECRET})
    else:
        previous = os.environ.get(SECRET_ENV)
        os.environ[SECRET_ENV] = SECRET  # as credentials would be on a training host, before the judge starts
        try:
            with Judge(workers=2, isolation=tier) as judge:
                out = {"isolation": judge.isolation, "mode": judge.mode, "info": judge.info(), "verdicts": None,
                       "rows": run_escape_probes(judge)}
        finally:
            if previous is None:
                os.environ.pop(SECRET_ENV, None)
            else:
                os.environ[SECRET_ENV] = previous
    return out


@pytest.mark.slow
def test_the_tier_is_the_one_asked_for_and_judges_plainly(battery):
    expected = {"bwrap": ("bwrap", "root"), "userns": ("bwrap", "userns"), "container": ("container", "container"),
                "docker-like": ("container", "container"), "no-landlock": ("container", "container"),
                "protected": ("container", "container"),
                "landlock": ("landlock", "landlock")}
    assert (battery["isolation"], battery["mode"]) == expected[battery["tier"]]
    assert battery["verdicts"] in (None, ["OK", "TLE", "OK"])
    assert battery["info"]["landlock"] is None if battery["tier"] in ("no-landlock", "protected") else True
    if battery["tier"] == "protected":  # no exposure: what holds the answers is closed, and checked at start
        info = battery["info"]
        assert not info["programs_may_read_host_files"] and len(info["protected_paths"]) == 1, info
        assert set(info["protection"].values()) == {"PermissionError"}, info["protection"]
    assert "one process per program" in battery["info"]["isolation_line"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ALL_PROBES)
def test_probe_is_contained(battery, name):
    row = battery["rows"][name]
    assert row["honest_after"], row  # the judge still judges honest samples right after it
    assert row["judge_error"] is None, row
    if battery["tier"] == "no-landlock" and name == EXPOSED_WITHOUT_LANDLOCK:
        assert not row["contained"] and "EXPOSED, as accepted" in row["evidence"], row  # the accepted exposure
        return
    assert row["contained"], row


@pytest.mark.slow
def test_no_judge_error_in_the_battery(battery):
    """No program of the battery, attack or not, made the judge fail: every run got a verdict."""
    assert {name: row["judge_errors"] for name, row in battery["rows"].items() if row["judge_errors"]} == {}


@pytest.mark.slow
def test_nothing_of_the_judge_seen_from_the_host(battery):
    """Seen from the host while they ran, the inspect probes held descriptors 0-2 only -- their own stdin and stdout
    memfds and the stderr pipe -- and no shared mapping of the judge's, in Python and in C++."""
    seen = battery["inspected"]
    assert sum("python" in s["exe"] for s in seen) >= 2 and sum("python" not in s["exe"] for s in seen) >= 2, seen
    for s in seen:
        fds = {int(fd): link for fd, link in s["fds"].items()}
        assert sorted(fds) == [0, 1, 2], s
        assert fds[0].startswith("/memfd:stdin") and fds[1].startswith("/memfd:stdout"), s
        assert fds[2].startswith("pipe:"), s
        assert _judge_mappings(",".join(s["shared"])) == [], s


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


def test_the_planted_secret_puts_a_real_credential_back_as_it_was(monkeypatch):
    """Notebook 02 plants a fake $AWS_SECRET_ACCESS_KEY for the read probe: a user's real key must come back
    unchanged, and an absent one stay absent."""
    from codefu_helpers.sandbox.probes import SECRET_ENV, planted_secret

    monkeypatch.setenv(SECRET_ENV, "a-real-key-of-the-user")
    with planted_secret() as fake:
        assert os.environ[SECRET_ENV] == fake != "a-real-key-of-the-user"
    assert os.environ[SECRET_ENV] == "a-real-key-of-the-user"
    monkeypatch.delenv(SECRET_ENV)
    with pytest.raises(RuntimeError):
        with planted_secret():
            raise RuntimeError("a probe failed")
    assert SECRET_ENV not in os.environ
