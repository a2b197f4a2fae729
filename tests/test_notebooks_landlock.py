"""Notebooks 02, 03 and 05 as a SageMaker Studio user runs them: not root, and no namespaces (Docker's seccomp
profile refuses them), so the judge has only its landlock tier.

papermill and the kernel run as `nobody` under `docker_like` (tests/test_sandbox_container.py) with this
checkout's .venv and a kernelspec of their own; HOME, Jupyter's runtime files, the caches and RUN_DIR are nobody's.
Where the interpreter behind .venv lives in a directory nobody may not enter (pyenv under /root), a private mount
namespace lays a world-searchable tmpfs over that directory and binds the interpreter's tree back into it: the
files stay root's, read-only to nobody, and nothing on this machine changes.
"""

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from test_sandbox_container import docker_like

ROOT = Path(__file__).resolve().parent.parent
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"

_RUN = textwrap.dedent("""
    import json, sys
    from codefu_helpers.tutorial import execute_notebook
    out = {}
    for notebook, parameters in json.loads(sys.argv[2]):
        run = execute_notebook(notebook, sys.argv[1], parameters, timeout=1500)
        out[run.notebook] = {"status": run.status, "error": run.error and run.error[-4000:], "results": run.results}
    print(json.dumps(out))
""")

# as root in a fresh mount namespace: makes `blocked` (a directory nobody may not search) searchable by laying a
# tmpfs over it with `child` bound back in, then execs the rest of argv
_UNBLOCK = textwrap.dedent("""
    import os, subprocess, sys
    blocked, child, stash = sys.argv[1:4]
    def mount(*args):
        subprocess.run(["mount", *args], check=True)
    if blocked:
        mount("--bind", child, stash)
        mount("-t", "tmpfs", "-o", "mode=755,size=1m", "tmpfs", blocked)
        os.makedirs(child)
        mount("--bind", stash, child)
    os.execvp(sys.argv[4], sys.argv[4:])
""")


def _blocked_ancestor(path: Path) -> tuple[str, str]:
    """(the first ancestor of `path` that others may not search, its child on the way to `path`), or ("", "")."""
    parts = path.parts
    for end in range(2, len(parts)):
        if not os.stat(Path(*parts[:end])).st_mode & 0o001:
            return str(Path(*parts[:end])), str(Path(*parts[:end + 1]))
    return "", ""


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="runs the notebooks as `nobody`, which needs root to arrange")
def test_notebooks_02_03_05_as_a_user_without_namespaces():
    nobody = pwd.getpwnam("nobody")
    top = Path(tempfile.mkdtemp(prefix="codefu-studio-"))  # pytest's own tmp_path is root's alone
    os.chmod(top, 0o755)
    home = top / "home"
    (home / "jupyter" / "kernels" / "codefu").mkdir(parents=True)
    (home / "jupyter" / "kernels" / "codefu" / "kernel.json").write_text(json.dumps({
        "argv": [str(VENV_PYTHON), "-Xfrozen_modules=off", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "CodeFu (.venv)", "language": "python"}))
    run_dir = home / "run"
    run_dir.mkdir()
    for path in [home, *home.rglob("*")]:
        os.chown(path, nobody.pw_uid, nobody.pw_gid)
    stash = Path(tempfile.mkdtemp(prefix="codefu-unblock-"))
    blocked, child = _blocked_ancestor(Path(os.path.realpath(sys.base_prefix)))
    notebooks = [
        ("02_reward_validation.ipynb", {"MAX_PROBLEMS": 3, "THROUGHPUT_TESTS": 100, "ESCAPE_TIERS": "landlock"}),
        ("03_grpo_smoke_test.ipynb", {"CONFIG": "../configs/ci_tiny.yaml", "EVAL_SAMPLES": 2,
                                      "OVERRIDES": {"trainer.total_steps": 2}}),
        ("05_evaluation.ipynb", {"EVAL": {"n_samples": 2, "ks": [1, 2]}}),
    ]
    as_nobody = docker_like(["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups",
                             str(VENV_PYTHON), "-c", _RUN, str(run_dir), json.dumps(notebooks)])
    env = {"PATH": f"{ROOT / '.venv' / 'bin'}:/usr/bin:/bin", "HOME": str(home), "PYTHONPATH": str(ROOT),
           "JUPYTER_PATH": str(home / "jupyter"), "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
           "MPLCONFIGDIR": str(home / "mpl"), "LANG": "C.UTF-8"}
    try:
        proc = subprocess.run(["unshare", "--mount", "--propagation", "private", "--", "/usr/bin/python3", "-I",
                               "-c", _UNBLOCK, blocked, child, str(stash), *as_nobody],
                              env=env, cwd=home, capture_output=True, text=True, timeout=3000)
    finally:
        shutil.rmtree(stash, ignore_errors=True)
    try:
        assert proc.returncode == 0, proc.stderr[-4000:]
        _check(json.loads(proc.stdout.strip().splitlines()[-1]))
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _check(out: dict) -> None:
    for name, run in out.items():
        assert run["status"] == "ok" and run["results"], (name, run["error"])
    validation = out["02_reward_validation"]["results"]
    assert validation["judge"]["isolation"] == "landlock" and validation["judge_errors"] == 0
    assert validation["gold_pass_rate"] == 1.0 and validation["as_intended_rate"] == 1.0
    assert list(validation["escape_by_tier"]) == ["landlock"] and validation["all_contained"] is True
    assert validation["escape_judge_errors"] == 0
    smoke = out["03_grpo_smoke_test"]["results"]
    assert smoke["steps"] == 2 and smoke["judge_errors"] == 0
    assert smoke["before"]["judge_errors"] == 0 and smoke["after"]["judge_errors"] == 0
    evaluation = out["05_evaluation"]["results"]
    assert evaluation["oracle_pass_at_1"] == 1.0 and evaluation["judge_errors"] == 0
