"""Can this machine's GPU run the tutorial? The last step of `make setup-gpu`, and notebook 03's device cell.

    python -m codefu_helpers.device_check            # exit status 1, with what to do, when the GPU cannot be used
    python -m codefu_helpers.device_check --dtype float32

Key idea: gather the facts once (`gather_facts`: nvidia-smi's driver and GPU, /dev/nvidia0, torch's CUDA build and
what it sees), then judge them in a pure function (`problems`), so every verdict is tested on a CPU with made-up
facts. The rules: torch's CUDA 13 wheels (torch 2.13 on PyPI) need an NVIDIA driver >= 580 (CUDA 12: >= 525); the
configs' bfloat16 needs compute capability >= 8.0 (a T4 is 7.5); the torch build must carry kernels for the GPU's
architecture; and a matrix product on the GPU must agree with the CPU's. A machine with an NVIDIA GPU that torch
does not see (the driver too old, a CPU build of torch) is the case that silently trains on the CPU: `gpu_unused`
says so, and notebook 03 prints it in a box.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

# The oldest Linux driver each CUDA major version runs on (NVIDIA's CUDA toolkit release notes, minor-version
# compatibility): torch's wheels for CUDA 13 need 580, for CUDA 12 525.
MIN_DRIVER = {13: 580, 12: 525, 11: 450}
BF16_CAPABILITY = (8, 0)  # Ampere and later have bfloat16 tensor cores
NVIDIA_DEVICE = "/dev/nvidia0"


@dataclass
class GPUFacts:
    """What this machine says about its GPU; None where it did not say."""

    nvidia_gpu: bool                  # nvidia-smi listed a GPU, or /dev/nvidia0 exists
    driver: str | None = None         # "580.65.06" (nvidia-smi, else /proc/driver/nvidia/version)
    gpu_name: str | None = None       # "NVIDIA A10G"
    torch_version: str | None = None  # None: torch is not installed
    torch_cuda: str | None = None     # torch.version.cuda: "13.0"; None for a CPU build
    cuda_available: bool = False      # torch.cuda.is_available()
    capability: tuple[int, int] | None = None  # (8, 6)
    arch_list: tuple[str, ...] = ()   # torch.cuda.get_arch_list(): the GPU architectures the build has kernels for


def _major(version: str | None) -> int | None:
    match = re.match(r"\s*(\d+)", version or "")
    return int(match.group(1)) if match else None


def parse_nvidia_smi(output: str) -> tuple[str | None, str | None, tuple[int, int] | None]:
    """(driver, name, capability) from the first line of
    `nvidia-smi --query-gpu=driver_version,name,compute_cap --format=csv,noheader`."""
    lines = [line for line in output.splitlines() if line.strip()]
    if not lines:
        return None, None, None
    fields = [f.strip() for f in lines[0].split(",")]
    driver = fields[0] if fields and re.match(r"\d+\.\d+", fields[0]) else None
    name = fields[1] if len(fields) > 1 else None
    capability = None
    if len(fields) > 2 and re.fullmatch(r"\d+\.\d+", fields[2]):
        major, minor = fields[2].split(".")
        capability = (int(major), int(minor))
    return driver, name, capability


def parse_proc_version(text: str) -> str | None:
    """The driver version from /proc/driver/nvidia/version ("NVRM version: NVIDIA UNIX x86_64 Kernel Module
    580.65.06 ...")."""
    match = re.search(r"Kernel Module\s+(\d+\.\d+(?:\.\d+)?)", text)
    return match.group(1) if match else None


def _nvidia_smi() -> str | None:
    if shutil.which("nvidia-smi") is None:
        return None
    for query in ("driver_version,name,compute_cap", "driver_version,name"):  # compute_cap: drivers >= 510
        try:
            done = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
                                  capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if done.returncode == 0 and done.stdout.strip():
            return done.stdout
    return None


def gather_facts() -> GPUFacts:
    """This machine's facts: nvidia-smi, /dev/nvidia0 and /proc/driver/nvidia/version, then torch (when installed)."""
    smi = _nvidia_smi()
    driver, name, capability = parse_nvidia_smi(smi) if smi else (None, None, None)
    if driver is None and os.path.exists("/proc/driver/nvidia/version"):
        with open("/proc/driver/nvidia/version") as f:
            driver = parse_proc_version(f.read())
    facts = GPUFacts(nvidia_gpu=bool(name) or os.path.exists(NVIDIA_DEVICE), driver=driver, gpu_name=name,
                     capability=capability)
    try:
        import torch
    except ImportError:
        return facts
    facts.torch_version, facts.torch_cuda = torch.__version__, torch.version.cuda
    facts.cuda_available = torch.cuda.is_available()
    if facts.cuda_available:
        facts.gpu_name = torch.cuda.get_device_name(0)
        facts.capability = tuple(torch.cuda.get_device_capability(0))
        facts.arch_list = tuple(torch.cuda.get_arch_list())
    return facts


def has_kernels(capability: tuple[int, int], arch_list: tuple[str, ...]) -> bool:
    """Whether a build for `arch_list` (torch.cuda.get_arch_list(): "sm_80", "sm_90a", "compute_120") runs on a GPU
    of this capability: a binary for the same major version and a minor one at most the GPU's, or PTX for an
    architecture at most the GPU's (compiled on the fly)."""
    for arch in arch_list:
        match = re.fullmatch(r"(sm|compute)_(\d+)(\d)[a-z]?", arch)
        if not match:
            continue
        built = (int(match.group(2)), int(match.group(3)))
        if (match.group(1) == "sm" and built[0] == capability[0] and built[1] <= capability[1]) or \
                (match.group(1) == "compute" and built <= capability):
            return True
    return False


def problems(facts: GPUFacts, dtype: str = "bfloat16") -> list[str]:
    """Why this machine cannot run the GPU tutorial in `dtype`, each with what to do; [] when it can."""
    found = []
    driver = f"NVIDIA driver {facts.driver}" if facts.driver else "an NVIDIA driver of unknown version"
    if not facts.nvidia_gpu and not facts.cuda_available:
        return ["no NVIDIA GPU here (no nvidia-smi answer, no /dev/nvidia0): on a CPU machine run `make setup`, "
                "which installs the CPU builds"]
    if facts.torch_version is None:
        return ["torch is not installed in this environment: run `make setup-gpu`"]
    if facts.torch_cuda is None:
        found.append(f"torch {facts.torch_version} is a CPU build, on a machine with an NVIDIA GPU "
                     f"({facts.gpu_name or 'name unknown'}, {driver}): run `make setup-gpu`, which installs the "
                     "CUDA build")
    needed = MIN_DRIVER.get(_major(facts.torch_cuda) or -1)
    too_old = needed is not None and _major(facts.driver) is not None and _major(facts.driver) < needed
    if too_old:
        found.append(f"torch {facts.torch_version} is built for CUDA {facts.torch_cuda}, which needs an NVIDIA driver "
                     f">= {needed}; this machine has {driver}: update the driver (on EC2, a Deep Learning AMI or "
                     f"a Studio image with driver >= {needed}), or install a torch built for an older CUDA "
                     f"(TORCH_GPU=... in `make setup-gpu`)")
    if facts.torch_cuda is not None and not facts.cuda_available and not too_old:
        found.append(f"torch {facts.torch_version} (CUDA {facts.torch_cuda}) cannot use this machine's NVIDIA GPU "
                     f"({facts.gpu_name or 'name unknown'}, {driver}): torch.cuda.is_available() is False; check "
                     "`nvidia-smi`, CUDA_VISIBLE_DEVICES, and that the driver is loaded")
    if facts.cuda_available and facts.capability is not None:
        sm = f"sm_{facts.capability[0]}{facts.capability[1]}"
        if facts.arch_list and not has_kernels(tuple(facts.capability), facts.arch_list):
            found.append(f"this torch build has no kernels for {facts.gpu_name} ({sm}; it has "
                         f"{', '.join(facts.arch_list)}): install a torch build that supports it")
        if dtype == "bfloat16" and tuple(facts.capability) < BF16_CAPABILITY:
            found.append(f"{facts.gpu_name} has compute capability {facts.capability[0]}.{facts.capability[1]}; the "
                         "configs' model.dtype bfloat16 needs >= 8.0: set model.dtype float32 (notebook 03: "
                         'OVERRIDES = {"model.dtype": "float32"}; the CLI: --set model.dtype=float32) or use a GPU '
                         "with compute capability >= 8.0 (A10G, L4, A100, H100)")
    return found


def gpu_unused(facts: GPUFacts | None = None) -> str | None:
    """A boxed warning when this machine has an NVIDIA GPU that torch cannot use (so the work falls back to the
    CPU), with the reason; None otherwise."""
    facts = facts or gather_facts()
    if facts.cuda_available or not facts.nvidia_gpu:
        return None
    lines = ["WARNING: this machine has an NVIDIA GPU, but torch cannot use it: running on the CPU.",
             f"GPU: {facts.gpu_name or 'name unknown'}; driver: {facts.driver or 'unknown'}; "
             f"torch {facts.torch_version} ({'CUDA ' + facts.torch_cuda if facts.torch_cuda else 'CPU build'})"]
    lines += problems(facts)
    return _box(lines)


def _box(lines: list[str], width: int = 100) -> str:
    import textwrap

    wrapped = [piece for line in lines for piece in (textwrap.wrap(line, width - 4) or [""])]
    bar = "!" * width
    return "\n".join([bar, *(f"! {piece:<{width - 4}} !" for piece in wrapped), bar])


def visible_gpu_name() -> str | None:
    """torch's name for the first GPU it can use ("NVIDIA A10G"); None when it can use none (or is not installed)."""
    try:
        import torch
    except ImportError:
        return None
    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


def warn_if_gpu_unused() -> bool:
    """Prints gpu_unused's box (notebook 03's device cell); True when it did."""
    box = gpu_unused()
    if box:
        print(box, flush=True)
    return box is not None


def matmul_check(dtype: str = "bfloat16", size: int = 4096) -> str:
    """A (size x size) matrix product on the GPU, compared with the CPU's in float32; returns a line with its
    TFLOP/s. Raises RuntimeError when the result is wrong."""
    import time

    import torch

    torch_dtype = getattr(torch, dtype)
    generator = torch.Generator().manual_seed(0)
    a, b = (torch.randn(size, size, generator=generator) for _ in range(2))
    ga, gb = a.to("cuda", torch_dtype), b.to("cuda", torch_dtype)
    product = ga @ gb  # warm-up: cuBLAS initialisation
    torch.cuda.synchronize()
    repeats = 10
    start = time.perf_counter()
    for _ in range(repeats):
        product = ga @ gb
    torch.cuda.synchronize()
    seconds = (time.perf_counter() - start) / repeats
    rows = 256  # compared on the first rows: the CPU's product of the whole takes seconds
    expected = ga[:rows].float().cpu() @ gb.float().cpu()  # the same rounded inputs, in float32 on the CPU
    error = float((product[:rows].float().cpu() - expected).abs().max() / expected.abs().max())
    tolerance = 1e-2 if torch_dtype in (torch.bfloat16, torch.float16) else 1e-3
    if not error < tolerance:
        raise RuntimeError(f"a {dtype} matrix product on the GPU differs from the CPU's by {error:.2g} (relative): "
                           "the GPU, its driver or this torch build is broken")
    return f"{dtype} matmul {size}x{size}: {2 * size ** 3 / seconds / 1e12:.1f} TFLOP/s, relative error {error:.1e}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16", "float32"),
                        help="the model.dtype to check for (the configs': bfloat16)")
    args = parser.parse_args(argv)
    facts = gather_facts()
    print(f"GPU: {facts.gpu_name or 'none found'} | driver {facts.driver or 'unknown'} | compute capability "
          f"{'.'.join(map(str, facts.capability)) if facts.capability else 'unknown'} | torch {facts.torch_version} "
          f"(CUDA {facts.torch_cuda or 'none: CPU build'}) | torch sees the GPU: {facts.cuda_available}")
    found = problems(facts, args.dtype)
    if not found:
        try:
            print(matmul_check(args.dtype))
        except Exception as exc:  # noqa: BLE001 - any failure of the product is the answer
            found.append(f"a {args.dtype} matrix product on the GPU failed: {type(exc).__name__}: {exc}")
    if found:
        print(_box(["the GPU check failed:", *found]), file=sys.stderr)
        return 1
    print("GPU check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
