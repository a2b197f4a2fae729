"""The job's dependencies, resolved by pip together against the PyPI packages the pinned PyTorch DLC holds.

On the stock DLC the job installs docker/requirements-job.txt (+ verl==0.9.1 for trainer.engine=verl) with
docker/requirements-job.lock as constraints, on top of what the image has
(docker/dlc-pytorch-2.11.0-cu130-amzn2023-sagemaker.txt, from the image's own uv.lock). This test asks pip's resolver
for exactly that install, for the image's interpreter and platform (CPython 3.12, glibc 2.34), without installing
anything: pip must find one consistent set, keep the image's torch, torchvision and torchaudio, change no other
package of the image but IMAGE_CHANGES (numpy: vLLM's mistral-common caps it below 2.4; setuptools: vLLM 0.24 asks
< 81 on Python 3.12, the image has 81.0.0), and every package it adds must be pinned in the lock. pip's
--python-version sets wheel tags and Requires-Python only; dependency markers are evaluated for the interpreter pip
runs in, so pip runs here with the marker environment of Python 3.12 (`_PIP_FOR_TARGET`): under 3.11's markers it
would miss vLLM's setuptools cap and claim that only numpy changes. PyPI must be reachable (a failing resolution
fails the test); AWS is not needed.

    python tests/test_launch_requirements.py --write   # re-resolve without the lock and rewrite it
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCKER = REPO / "docker"
DLC = DOCKER / "dlc-pytorch-2.11.0-cu130-amzn2023-sagemaker.txt"
REQUIREMENTS = DOCKER / "requirements-job.txt"
LOCK = DOCKER / "requirements-job.lock"
PYTHON_VERSION = "3.12"   # the DLC's interpreter
PYTHON_FULL_VERSION = "3.12.0"  # python_full_version for markers (none of the resolved set compares the patch release)
GLIBC = (2, 34)           # Amazon Linux 2023
# in the image, but published on PyPI as a source archive only: pip's cross-platform resolution takes wheels only,
# so the test builds this (pure Python) wheel from PyPI's sdist first
SDIST_ONLY = ["antlr4-python3-runtime==4.9.3"]
IMAGE_CHANGES = {"numpy", "setuptools"}  # packages of the image the job's install replaces (see the module docstring)


# pip, run with packaging's marker environment of the target Python (argv[1]): every marker pip evaluates goes through
# packaging.markers.default_environment()
_PIP_FOR_TARGET = """
import sys
from pip._vendor.packaging import markers
full = sys.argv.pop(1)
native = markers.default_environment
markers.default_environment = lambda: {**native(), "python_version": ".".join(full.split(".")[:2]),
                                       "python_full_version": full, "implementation_version": full}
from pip._internal.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def _name(text: str) -> str:
    return re.sub(r"[-_.]+", "-", text).lower()


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            name, _, version = line.partition("==")
            pins[_name(name.split("[")[0])] = version
    return pins


def resolve(tmp: Path, with_lock: bool = True) -> dict[str, str]:
    """{package: version} pip would install into the DLC for the job (verl included)."""
    image = _pins(DLC)
    lock = _pins(LOCK) if with_lock else {}
    constraints = tmp / "constraints.txt"
    constraints.write_text("".join(f"{n}=={v}\n" for n, v in {**{n: v for n, v in image.items()
                                                                   if n not in IMAGE_CHANGES}, **lock}.items()))
    wheels = tmp / "wheels"
    pip = [sys.executable, "-m", "pip"]
    built = subprocess.run([*pip, "wheel", "--isolated", "--no-deps", "-q", "-w", str(wheels), *SDIST_ONLY],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    platforms = [f"manylinux_2_{minor}_x86_64" for minor in range(GLIBC[1], 16, -1)]
    platforms += ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64", "linux_x86_64"]
    report = tmp / "report.json"
    # pip takes --python-version for wheel tags and Requires-Python, but evaluates dependency markers
    # (`setuptools<81; python_version > "3.11"`) for the interpreter it runs in: it runs with the marker environment
    # of the DLC's Python instead
    cmd = [sys.executable, "-c", _PIP_FOR_TARGET, PYTHON_FULL_VERSION, "install", "--isolated",
           "--use-feature=fast-deps", "--dry-run", "--ignore-installed", "--quiet", "--report", str(report),
           "--python-version", PYTHON_VERSION, "--implementation", "cp",
           "--only-binary=:all:", "--target", str(tmp / "target"), "--find-links", str(wheels),
           *[arg for p in platforms for arg in ("--platform", p)],
           "-r", str(REQUIREMENTS), "verl==0.9.1", "-c", str(constraints)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, f"pip could not resolve the job's requirements:\n{done.stderr[-4000:]}"
    return {_name(i["metadata"]["name"]): i["metadata"]["version"] for i in json.loads(report.read_text())["install"]}


@pytest.mark.slow
def test_the_job_requirements_resolve_against_the_dlc_without_touching_its_torch(tmp_path):
    image = _pins(DLC)
    top = REQUIREMENTS.read_text().splitlines()
    pinned = [line for line in top if line.strip() and not line.startswith("#")]
    assert pinned and all(re.fullmatch(r"[A-Za-z0-9_.\[\]-]+==[0-9][\w.]*", line) for line in pinned), pinned
    resolved = resolve(tmp_path)
    for package in ("torch", "torchvision", "torchaudio"):
        assert resolved[package] == image[package], f"pip would replace the image's {package}"
    assert (resolved["torch"], resolved["vllm"], resolved["verl"], resolved["transformers"]) == \
        ("2.11.0", "0.24.0", "0.9.1", "5.9.0")  # verl 0.9.1's own [vllm] combination
    changed = {n for n, v in resolved.items() if n in image and image[n] != v}
    assert changed == IMAGE_CHANGES, changed
    lock = _pins(LOCK)
    added = {n: v for n, v in resolved.items() if n not in image or n in IMAGE_CHANGES}
    assert added == {n: v for n, v in lock.items() if n in resolved}, "the lock pins every package the job adds"
    assert set(lock) - set(resolved) == set(), f"stale lock entries: {sorted(set(lock) - set(resolved))}"
    print(f"resolved {len(resolved)} packages: {len(added)} added or changed, the rest the image's own")


if __name__ == "__main__" and "--write" in sys.argv:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        found = resolve(Path(tmp), with_lock=False)
    image = _pins(DLC)
    header = [line for line in LOCK.read_text().splitlines() if line.startswith("#")]
    body = [f"{n}=={v}" for n, v in sorted(found.items()) if image.get(n) != v]
    LOCK.write_text("\n".join(header + body) + "\n")
    print(f"wrote {len(body)} pins to {LOCK}")
