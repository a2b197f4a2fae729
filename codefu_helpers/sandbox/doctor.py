"""The judge's preflight: which isolation tier `Judge()` (isolation "auto") takes on this machine, why each better
tier is out of reach, and the exact fix for each cause.

    python -m codefu_helpers.sandbox.doctor          # or: make doctor
    python -m codefu_helpers.sandbox.doctor --json   # the same as one JSON object

It looks at the machine first (who runs it, bubblewrap, whether namespaces can be made, the AppArmor restriction of
Ubuntu 23.10+, Landlock, the seccomp bindings, g++), then starts the judge the way a notebook does and judges a
Python and a C++ program with it: the tier it names is the one that ran, not a guess. Exit status: 0 when a tier
protects the host's files, 1 when none can (the judge refuses to start, or runs only with
programs_may_read_host_files), 2 when the judge started but could not judge.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from .isolation import DEFAULT_PYTHON, SandboxUnavailableError, host_landlock_abi
from .protect import protected_paths_from_env

APPARMOR_SYSCTL = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"
TIER_ORDER = ("bwrap", "container", "landlock")  # best first, for the user who runs this


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _bwrap_works(as_root: bool) -> tuple[bool, str]:
    """Whether bubblewrap can make the namespaces the bwrap tier uses, as this process is (root: without a user
    namespace; anyone else: with one); bubblewrap's own complaint when it cannot."""
    argv = ["bwrap", "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
            "--symlink", "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev", "--unshare-pid", "--unshare-net",
            "--unshare-ipc", "--unshare-uts", "--die-with-parent", "--new-session"]
    if not as_root:
        argv.append("--unshare-user")
    try:
        proc = subprocess.run([*argv, "/usr/bin/true"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{type(exc).__name__}: {exc}"
    return proc.returncode == 0, (proc.stderr.strip().splitlines() or [""])[-1]


def _in_container() -> bool:
    return Path("/.dockerenv").exists() or Path("/run/.containerenv").exists() or any(
        word in (_read("/proc/1/cgroup") or "") for word in ("docker", "containerd", "kubepods"))


def _seccomp_bindings(python: str) -> bool:
    try:
        return subprocess.run([python, "-I", "-c", "import seccomp"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def examine(python: str = DEFAULT_PYTHON) -> dict:
    """What this machine offers each tier, with the cause and fix of whatever is missing (no judge started)."""
    root = os.geteuid() == 0
    facts = {"uid": os.geteuid(), "root": root, "kernel": os.uname().release, "in_container": _in_container(),
             "bwrap": shutil.which("bwrap"), "landlock_abi": host_landlock_abi(),
             "lsm": _read("/sys/kernel/security/lsm"), "apparmor_restrict_userns": _read(APPARMOR_SYSCTL),
             "max_user_namespaces": _read("/proc/sys/user/max_user_namespaces"),
             "seccomp_bindings": _seccomp_bindings(python), "gxx": shutil.which("g++"), "python": python}
    tiers = {}
    # bwrap: as root without a user namespace; as anyone else (and as root's fallback, `nobody`) with one
    if facts["bwrap"] is None:
        tiers["bwrap"] = {"available": False, "cause": "bubblewrap is not installed",
                          "fix": "`sudo apt-get install bubblewrap` (or `sudo scripts/setup_system.sh`)"}
    else:
        works, said = _bwrap_works(as_root=root)
        cause, fix = None, None
        if not works:
            cause = f"bubblewrap cannot create namespaces here ({said})"
            if facts["apparmor_restrict_userns"] == "1" and not root:
                fix = ("Ubuntu 23.10+ restricts unprivileged user namespaces with AppArmor: `sudo sysctl -w "
                       "kernel.apparmor_restrict_unprivileged_userns=0` (add it to /etc/sysctl.d/ to keep it), or "
                       "an AppArmor profile for /usr/bin/bwrap that allows `userns`")
            elif facts["max_user_namespaces"] == "0" and not root:
                fix = "user namespaces are switched off: `sudo sysctl -w user.max_user_namespaces=15000`"
            elif facts["in_container"]:
                fix = ("this container's seccomp profile or capabilities refuse namespaces: start it with "
                       "`--security-opt seccomp=unconfined --security-opt apparmor=unconfined` (Docker), or as "
                       "root with `--cap-add SYS_ADMIN`; the container tier needs neither")
            else:
                fix = "allow unprivileged user namespaces on this machine (its kernel or policy refuses them)"
        tiers["bwrap"] = {"available": works, "cause": cause, "fix": fix}
    # container: root only, Landlock for the files (without it only with programs_may_read_host_files)
    if not root:
        tiers["container"] = {"available": False, "cause": "the container tier runs each worker's programs as "
                              "uids of their own, which needs root", "fix": "run the judge as root (`sudo`, or a "
                              "container's root user, as a SageMaker training job does)"}
    elif facts["landlock_abi"] is None:
        tiers["container"] = {"available": False, "cause": "no Landlock on this kernel: programs could read every "
                              "world-readable file (the data channels with their answers)",
                              "fix": "a kernel with Landlock (Linux 5.13+, `landlock` in /sys/kernel/security/lsm); "
                              "bubblewrap with namespaces allowed (see above); or, as a SageMaker job's entry point "
                              "does, close the directories holding answers to others "
                              "(codefu_helpers.sandbox.protect.protect_host_files) and name them in "
                              "$CODEFU_JUDGE_PROTECTED_PATHS: the judge checks them with canaries"}
    else:
        tiers["container"] = {"available": True, "cause": None, "fix": None}
    if root and facts["landlock_abi"] is None and protected_paths_from_env():  # the job's protection stands in
        tiers["container"] = {"available": True, "cause": None, "fix": None}
    # landlock: anyone but root, with Landlock
    if root:
        tiers["landlock"] = {"available": False, "cause": "root has the container tier (a uid per worker)",
                             "fix": None}
    elif facts["landlock_abi"] is None:
        tiers["landlock"] = {"available": False, "cause": f"no Landlock on this kernel ({facts['kernel']})",
                             "fix": "Linux 5.13+ with the Landlock LSM enabled (`lsm=...,landlock` on the kernel "
                             "command line where it is not by default), not refused by a seccomp profile"}
    else:
        tiers["landlock"] = {"available": True, "cause": None, "fix": None}
    if not facts["seccomp_bindings"]:
        for tier in tiers.values():
            if tier["available"]:
                tier.update(available=False, cause=f"libseccomp's Python bindings are missing for {python}",
                            fix="`sudo apt-get install python3-seccomp` (or `sudo scripts/setup_system.sh`)")
    return {"facts": facts, "tiers": tiers}


def start_judge(python: str = DEFAULT_PYTHON) -> dict:
    """Starts the judge as a notebook does (isolation "auto") and judges a Python and a C++ program."""
    from .judge import Judge

    tests = [("2 3\n", "5\n")]
    cpp = '#include <cstdio>\nint main(){int a,b;std::scanf("%d %d",&a,&b);std::printf("%d\\n",a+b);}\n'
    try:
        with Judge(workers=1, python=python) as judge:
            info = judge.info()
            verdicts = {"python": judge.run("python", "a, b = map(int, input().split())\nprint(a + b)\n", tests,
                                            2.0, 256 << 20).verdict.value}
            verdicts["cpp"] = (judge.run("cpp", cpp, tests, 2.0, 256 << 20).verdict.value
                               if shutil.which("g++") else "no g++")
    except SandboxUnavailableError as exc:
        return {"started": False, "error": str(exc)}
    return {"started": True, "tier": info["isolation"], "mode": info["isolation_mode"],
            "line": info["isolation_line"], "reason": info["isolation_reason"], "verdicts": verdicts,
            "reads_host_files": info["programs_may_read_host_files"]}


def report(python: str = DEFAULT_PYTHON) -> tuple[dict, int]:
    seen = examine(python)
    seen["judge"] = start_judge(python)
    judge = seen["judge"]
    if not judge["started"] or judge.get("reads_host_files"):
        status = 1
    elif judge["verdicts"]["python"] != "OK" or judge["verdicts"]["cpp"] not in ("OK", "no g++"):
        status = 2
    else:
        status = 0
    seen["exit_status"] = status
    return seen, status


def render(seen: dict) -> str:
    facts, judge = seen["facts"], seen["judge"]
    who = "root" if facts["root"] else f"uid {facts['uid']} (not root)"
    lines = [f"codefu judge preflight: {who}, kernel {facts['kernel']}"
             f"{', in a container' if facts['in_container'] else ''}; bubblewrap "
             f"{facts['bwrap'] or 'not installed'}; Landlock ABI {facts['landlock_abi'] or 'none'}; "
             f"AppArmor userns restriction {facts['apparmor_restrict_userns'] or 'not present'}; seccomp bindings "
             f"{'yes' if facts['seccomp_bindings'] else 'MISSING'}; g++ {facts['gxx'] or 'MISSING'}", ""]
    if judge["started"]:
        lines.append(f"Judge() takes the {judge['tier'].upper()} tier here (mode {judge['mode']}): "
                     f"Python {judge['verdicts']['python']}, C++ {judge['verdicts']['cpp']}.")
        lines.append(f"  {judge['line']}")
    else:
        lines.append("Judge() cannot start here:")
        lines.append(f"  {judge['error']}")
    lines.append("")
    for name in TIER_ORDER:
        tier = seen["tiers"][name]
        if judge["started"] and name == judge["tier"]:
            continue
        if tier["available"]:
            lines.append(f"- {name}: available here")
            continue
        lines.append(f"- {name}: unavailable: {tier['cause']}")
        if tier["fix"]:
            lines.append(f"    fix: {tier['fix']}")
    status = seen["exit_status"]
    lines += ["", {0: "OK: the judge protects the host's files here.",
                   1: "NO TIER PROTECTS THE HOST'S FILES HERE: apply one of the fixes above.",
                   2: "the judge started but could not judge a sample: see its log above."}[status]]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the text")
    parser.add_argument("--python", default=DEFAULT_PYTHON, help="the interpreter the sandboxes run")
    args = parser.parse_args(argv)
    seen, status = report(args.python)
    print(json.dumps(seen, indent=1) if args.json else render(seen))
    return status


if __name__ == "__main__":
    sys.exit(main())
