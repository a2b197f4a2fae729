"""The landlock tier (issue 31): the judge for an ordinary user who may create no namespaces -- a SageMaker Studio
space (non-root, Docker's seccomp profile), Ubuntu 24.04 with AppArmor's user-namespace restriction.

Each test runs a script as `nobody` under `docker_like` (tests/test_sandbox_container.py: namespaces refused as
Docker's default profile refuses them; Landlock present, or answered by ENOSYS as a kernel without it would), so
bubblewrap cannot start and `isolation="auto"` has to find the landlock tier, or refuse with the ways out. Programs
run as that very user: what keeps them from the user's own files, the judge's processes and the host is Landlock
and seccomp, not a uid, and these tests attack exactly that. The whole probe battery runs in this tier too
(tests/test_sandbox_escape.py, tier "landlock").
"""

import json
import os
import pwd
import shutil
import subprocess
import tempfile
import textwrap
from pathlib import Path

import pytest

from test_sandbox_container import docker_like

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="runs the judge as `nobody` under a Docker-like profile")


def as_user_without_namespaces(script: str, *args: str, landlock: bool = True, files: dict | None = None,
                               env: dict | None = None) -> tuple[int, dict | None, str]:
    """Runs a Python script with the system interpreter as `nobody`, namespaces refused; `files` are written into
    its home first (owned by nobody, mode 0600). Returns (exit status, the JSON of its last stdout line, stderr)."""
    nobody = pwd.getpwnam("nobody")
    home = Path(tempfile.mkdtemp(prefix="codefu-landlock-"))
    try:
        for name, text in (files or {}).items():
            (home / name).write_text(text)
            (home / name).chmod(0o600)
        for path in [home, *home.iterdir()]:
            os.chown(path, nobody.pw_uid, nobody.pw_gid)
        argv = docker_like(["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups",
                            "/usr/bin/python3", "-c", script, str(home), *args], landlock=landlock)
        full_env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(home),
                    "CODEFU_JUDGE_CACHE": str(home / "cache"), **(env or {})}
        proc = subprocess.run(argv, env=full_env, cwd=home, capture_output=True, text=True, timeout=600)
        lines = proc.stdout.strip().splitlines()
        return proc.returncode, json.loads(lines[-1]) if proc.returncode == 0 and lines else None, proc.stderr
    finally:
        shutil.rmtree(home, ignore_errors=True)


# What a program of the same uid tries against its user, the judge and the host; the script passes the paths and
# pids in on stdin: the user's own 0600 file, the repository's dataset, the judge's cache and binary directories,
# /proc/<pid>/environ and mem of the judge's host process (it holds a secret in its environment) and of the
# program's server; signals to both; ptrace; a socket.
_ATTACK = textwrap.dedent("""
    import ctypes, json, os, signal, socket
    targets = json.loads(input())
    out = {}
    for name, path in targets["files"].items():
        try:
            with open(path, "rb") as fh:
                out[name] = "READ " + fh.read(64).decode("utf-8", "replace")
        except OSError as e:
            out[name] = type(e).__name__
    for name, path in targets["dirs"].items():
        try:
            out[name] = "LISTED " + ",".join(sorted(os.listdir(path))[:5])
        except OSError as e:
            out[name] = type(e).__name__
    for name, pid in (("host", targets["host_pid"]), ("server", os.getppid())):
        for what in ("environ", "mem"):
            try:
                with open(f"/proc/{pid}/{what}", "rb") as fh:
                    out[f"{name} {what}"] = "READ " + fh.read(4096).decode("utf-8", "replace")
            except OSError as e:
                out[f"{name} {what}"] = type(e).__name__
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            try:
                os.kill(pid, sig)
                out[f"{name} signal {sig}"] = "SENT"
            except OSError as e:
                out[f"{name} signal {sig}"] = type(e).__name__
    libc = ctypes.CDLL(None, use_errno=True)
    out["ptrace host"] = "ATTACHED" if libc.ptrace(16, targets["host_pid"], 0, 0) == 0 else os.strerror(ctypes.get_errno())
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        out["socket"] = "MADE"
    except OSError as e:
        out["socket"] = type(e).__name__
    print(json.dumps(out))
""")

_DRIVER = textwrap.dedent("""
    import json, os, sys
    from codefu_helpers.sandbox import Judge
    home = sys.argv[1]
    with Judge(workers=2) as judge:
        info = judge.info()
        targets = {"files": {"own file": f"{home}/private.txt", "dataset": sys.argv[2],
                             "server log": str(judge._workers[0].log_path)},
                   "dirs": {"home": home, "cache": str(judge.cache_root), "binaries": str(judge._bin_dir),
                            "judge scratch": str(judge._scratch)},
                   "host_pid": os.getpid()}
        attack = judge.run("python", sys.argv[3], [(json.dumps(targets) + "\\n", "")], 2.0, 256 << 20)
        tests = [("2 3\\n", "5\\n")]
        cpp = '#include <cstdio>\\nint main(){int a,b;std::scanf("%d %d",&a,&b);std::printf("%d\\\\n",a+b);}\\n'
        after = [judge.run("python", "print(sum(map(int, input().split())))", tests, 1.0, 64 << 20).verdict.value
                 for _ in range(4)] + [judge.run("cpp", cpp, tests, 1.0, 64 << 20).verdict.value for _ in range(2)]
        harness = judge.run_harness("def f(n):\\n    return n + 1\\n", "assert candidate(41) == 42\\n", "f", 2.0)
    print(json.dumps({"info": {k: info[k] for k in ("isolation", "isolation_mode", "landlock", "isolation_line",
                                                    "programs_may_read_host_files")},
                      "attack": attack.tests[0].output if attack.tests else attack.judge_error,
                      "attack_verdict": attack.verdict.value, "after": after, "harness": harness.verdict.value,
                      "secret_seen": os.environ.get("CODEFU_TEST_SECRET")}))
""")


@pytest.mark.parametrize("abi", [None, 4, 1])
def test_auto_takes_the_landlock_tier_and_a_program_of_the_same_uid_reaches_nothing(abi):
    """As the user itself, a program reads none of the user's files (its own 0600 file, the repository's dataset,
    the judge's cache, binaries and logs), nothing of the judge's processes (/proc is closed; the servers are not
    dumpable), signals neither the judge's host process nor its own server, cannot ptrace or open a socket; the
    judge goes on judging Python, C++ and a harness. With this kernel's Landlock ABI, and as on older kernels
    (ABI 4: Ubuntu 24.04's 6.8; ABI 1: 5.13-5.18), where Landlock cannot scope signals and seccomp refuses them."""
    secret = "landlock-secret-" + os.urandom(6).hex()
    dataset = ROOT / "data" / "sample" / "code_contests_sample.jsonl"
    status, out, stderr = as_user_without_namespaces(
        _DRIVER, str(dataset), _ATTACK, files={"private.txt": f"private-{secret}"},
        env={"CODEFU_TEST_SECRET": secret, **({"CODEFU_JUDGE_LANDLOCK_ABI": str(abi)} if abi else {})})
    assert status == 0, stderr[-3000:]
    info = out["info"]
    assert (info["isolation"], info["isolation_mode"]) == ("landlock", "landlock"), info
    assert info["landlock"] and not info["programs_may_read_host_files"] and "LANDLOCK tier" in info["isolation_line"]
    assert info["landlock"] == abi if abi else info["landlock"] >= 1
    assert ("signals and abstract sockets scoped to the run" if info["landlock"] >= 6 else
            "no signals (Landlock before ABI 6") in info["isolation_line"], info["isolation_line"]
    assert "bubblewrap cannot start a sandbox here" in info["isolation_line"]
    assert out["secret_seen"] == secret  # the host process does hold it: the attack below had something to find
    seen = json.loads(out["attack"])
    assert secret not in out["attack"], seen
    assert not [k for k, v in seen.items() if v.startswith(("READ", "LISTED", "SENT", "ATTACHED", "MADE"))], seen
    assert out["after"] == ["OK"] * 6 and out["harness"] == "OK", out


_REFUSED = textwrap.dedent("""
    import json, sys
    from codefu_helpers.sandbox import Judge, SandboxUnavailableError
    try:
        with Judge(workers=1) as judge:
            print(json.dumps({"started": judge.isolation}))
    except SandboxUnavailableError as exc:
        print(json.dumps({"refused": str(exc)}))
""")


def test_without_landlock_the_judge_refuses_and_names_the_three_ways_out():
    status, out, stderr = as_user_without_namespaces(_REFUSED, landlock=False)
    assert status == 0, stderr[-3000:]
    message = out.get("refused", "")
    assert "no Landlock for the landlock tier" in message, out
    for way in ("kernel.apparmor_restrict_unprivileged_userns=0", "Linux 5.13+", "as root"):
        assert way in message, (way, message)


def test_doctor_says_which_tier_and_why_not_a_better_one():
    """`python -m codefu_helpers.sandbox.doctor` as that user: with Landlock it names the landlock tier (exit 0) and
    why bwrap and the container tier are out of reach, with their fixes; without Landlock it exits 1."""
    for landlock, expected_status in ((True, 0), (False, 1)):
        nobody = pwd.getpwnam("nobody")
        home = Path(tempfile.mkdtemp(prefix="codefu-doctor-"))
        os.chown(home, nobody.pw_uid, nobody.pw_gid)
        try:
            argv = docker_like(["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups",
                                "/usr/bin/python3", "-m", "codefu_helpers.sandbox.doctor", "--json"],
                               landlock=landlock)
            proc = subprocess.run(argv, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(home),
                                             "CODEFU_JUDGE_CACHE": str(home / "cache")},
                                  cwd=home, capture_output=True, text=True, timeout=300)
        finally:
            shutil.rmtree(home, ignore_errors=True)
        assert proc.returncode == expected_status, (landlock, proc.stdout[-2000:], proc.stderr[-2000:])
        seen = json.loads(proc.stdout)
        tiers = seen["tiers"]
        assert not tiers["bwrap"]["available"] and "namespaces" in tiers["bwrap"]["cause"] and tiers["bwrap"]["fix"]
        assert not tiers["container"]["available"] and "root" in tiers["container"]["fix"]
        if landlock:
            assert seen["judge"]["tier"] == "landlock" and seen["judge"]["verdicts"] == {"python": "OK", "cpp": "OK"}
        else:
            assert not seen["judge"]["started"] and "Three ways out" in seen["judge"]["error"]
            assert not tiers["landlock"]["available"] and "5.13" in tiers["landlock"]["fix"]


_APPARMOR = textwrap.dedent("""
    import json, sys
    from codefu_helpers.sandbox import doctor
    doctor.APPARMOR_SYSCTL = sys.argv[2]  # Ubuntu 23.10+'s sysctl, as that kernel shows it (no AppArmor here)
    print(json.dumps(doctor.examine()["tiers"]["bwrap"]))
""")


def test_doctor_names_ubuntus_sysctl_when_apparmor_restricts_user_namespaces():
    """Ubuntu 23.10+: bubblewrap fails for an ordinary user because AppArmor restricts user namespaces. AppArmor is
    not on this machine, so its sysctl is a file saying 1; bubblewrap really fails (namespaces refused), and the
    fix the doctor gives is the sysctl, not the container advice."""
    folder = Path(tempfile.mkdtemp(prefix="codefu-sysctl-"))  # readable by nobody, unlike pytest's tmp_path
    try:
        sysctl = folder / "apparmor_restrict_unprivileged_userns"
        sysctl.write_text("1\n")
        folder.chmod(0o755)
        sysctl.chmod(0o644)
        status, out, stderr = as_user_without_namespaces(_APPARMOR, str(sysctl))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert status == 0, stderr[-2000:]
    assert not out["available"] and "kernel.apparmor_restrict_unprivileged_userns=0" in out["fix"], out
