"""`make setup-gpu`'s last step and notebook 03's warning (codefu_helpers.device_check), judged on made-up facts: no
GPU is needed to check what is said about one."""

import pytest

from codefu_helpers import device_check
from codefu_helpers.device_check import (GPUFacts, gpu_unused, has_kernels, parse_nvidia_smi, parse_proc_version,
                                         problems)

A10G = GPUFacts(nvidia_gpu=True, driver="580.65.06", gpu_name="NVIDIA A10G", torch_version="2.13.0",
                torch_cuda="13.0", cuda_available=True, capability=(8, 6), arch_list=("sm_80", "sm_90", "sm_100"))


def facts(**changes) -> GPUFacts:
    return GPUFacts(**{**A10G.__dict__, **changes})


def test_nvidia_smi_and_the_kernel_modules_version_are_read():
    assert parse_nvidia_smi("580.65.06, NVIDIA A10G, 8.6\n580.65.06, NVIDIA A10G, 8.6\n") == \
        ("580.65.06", "NVIDIA A10G", (8, 6))
    assert parse_nvidia_smi("535.104.05, Tesla T4\n") == ("535.104.05", "Tesla T4", None)  # no compute_cap field
    assert parse_nvidia_smi("") == (None, None, None)
    proc = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024\nGCC version: ..."
    assert parse_proc_version(proc) == "535.183.01"


def test_a_fitting_gpu_has_no_problem():
    assert problems(A10G) == []
    assert gpu_unused(A10G) is None


def test_a_driver_too_old_for_the_cuda_13_wheels_says_which_driver_is_needed():
    old = facts(driver="535.183.01", cuda_available=False, capability=None, arch_list=())
    (problem,) = problems(old)
    assert ">= 580" in problem and "535.183.01" in problem and "CUDA 13.0" in problem
    assert not problems(facts(driver="580.65.06"))
    assert ">= 525" in problems(facts(driver="470.82.01", torch_cuda="12.8", cuda_available=False))[0]


def test_bfloat16_on_a_gpu_below_compute_capability_8_asks_for_float32_or_another_gpu():
    t4 = facts(gpu_name="Tesla T4", capability=(7, 5), arch_list=("sm_75", "sm_80", "sm_90"))
    (problem,) = problems(t4)
    assert "7.5" in problem and ">= 8.0" in problem and "model.dtype float32" in problem
    assert problems(t4, dtype="float32") == []


def test_a_torch_without_kernels_for_the_gpu_is_named():
    assert has_kernels((8, 6), ("sm_80",)) and has_kernels((9, 0), ("sm_90a",))
    assert not has_kernels((7, 5), ("sm_80", "sm_90")) and not has_kernels((12, 0), ("sm_80", "sm_90", "sm_100"))
    assert has_kernels((12, 0), ("sm_90", "compute_90"))  # PTX is compiled for a newer GPU
    blackwell = facts(gpu_name="NVIDIA RTX PRO 6000", capability=(12, 0), arch_list=("sm_80", "sm_90", "sm_100"))
    assert any("no kernels" in p and "sm_120" in p for p in problems(blackwell))


def test_a_cpu_torch_or_a_gpu_torch_cannot_see_is_said_loudly():
    cpu_build = facts(torch_version="2.13.0+cpu", torch_cuda=None, cuda_available=False, capability=None)
    assert "CPU build" in problems(cpu_build)[0] and "make setup-gpu" in problems(cpu_build)[0]
    box = gpu_unused(cpu_build)
    assert box.startswith("!!!") and "WARNING" in box and "NVIDIA A10G" in box and "580.65.06" in box
    hidden = facts(cuda_available=False, capability=None)  # a new enough driver, yet torch sees no GPU
    assert "is_available() is False" in problems(hidden)[0]
    assert "driver: 580.65.06" in gpu_unused(hidden)


def test_no_gpu_at_all_is_no_warning_for_the_notebook_but_fails_setup_gpu():
    none = GPUFacts(nvidia_gpu=False, torch_version="2.13.0+cpu")
    assert gpu_unused(none) is None
    assert "no NVIDIA GPU" in problems(none)[0] and "make setup" in problems(none)[0]


def test_the_command_exits_non_zero_with_the_problem_and_zero_after_a_good_product(monkeypatch, capsys):
    monkeypatch.setattr(device_check, "gather_facts", lambda: facts(driver="550.54.15", cuda_available=False))
    assert device_check.main([]) == 1
    out = capsys.readouterr()
    assert "driver 550.54.15" in out.out and ">= 580" in out.err
    monkeypatch.setattr(device_check, "gather_facts", lambda: A10G)
    monkeypatch.setattr(device_check, "matmul_check", lambda dtype: f"{dtype} matmul: 60.0 TFLOP/s")
    assert device_check.main([]) == 0
    out = capsys.readouterr().out
    assert "compute capability 8.6" in out and "bfloat16 matmul" in out and "passed" in out

    def broken(dtype):
        raise RuntimeError("CUDA error: no kernel image is available for execution on the device")

    monkeypatch.setattr(device_check, "matmul_check", broken)
    assert device_check.main(["--dtype", "float32"]) == 1
    assert "no kernel image" in capsys.readouterr().err


@pytest.mark.gpu
def test_this_machines_gpu_passes_the_check():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    assert device_check.main([]) == 0
