"""GPU instance types the launcher knows, for validation and cost estimates.

Prices are SageMaker Training on-demand public list prices in US East (N. Virginia), per instance-hour, as
of PRICES_AS_OF; they change (AWS cut P4/P5 prices in mid-2025), differ by region, and Spot, Savings Plans
and training plans are cheaper: pass `hourly_price=` to `estimate_cost` (or LaunchConfig.hourly_price) for
your own figure. See https://aws.amazon.com/sagemaker/pricing/ for current prices.

`efa` and `rdma` decide the job's libfabric environment: every EFA type gets FI_PROVIDER=efa, but only types whose
EFA supports RDMA read (the SageMaker SDK's own list, `SM_EFA_RDMA_INSTANCES` in its container drivers) get
FI_EFA_USE_DEVICE_RDMA=1; on ml.g5.48xlarge (EFA without RDMA) libfabric aborts with it.

`instance_type("local")` is the simulation's host (`codefu_helpers.launch.simulate`): no GPU, no price, never
submitted; its workers are CPU processes, trainer.gpus_per_node of them.

GPU memory: a GPU sold as "80 GB" is not 80 GiB to CUDA. `GPUS` gives each model's total as `nvidia-smi
--query-gpu=memory.total` prints it (MiB; public figures), and the memory plan (codefu_helpers.memory_plan) plans on
`GPU.usable_gib`: CUDA's total (`torch.cuda.get_device_properties(0).total_memory`) where it was measured, else
nvidia-smi's total less `DRIVER_RESERVE_MIB` (an estimate: on the H200 measured here CUDA reports 615 MiB less than
nvidia-smi). `gpu_of_instance` names the GPUs of the training types above and of SageMaker Studio's GPU spaces
(ml.g4dn, ml.g5, ml.g6, ml.p5e/p5en, with no price: they are not offered for submission here).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GPU", "GPUS", "InstanceType", "INSTANCE_TYPES", "LOCAL", "PRICES_AS_OF", "PRICE_SOURCE", "instance_type",
           "estimate_cost", "gpu_of_instance"]

PRICES_AS_OF = "2025-05"
PRICE_SOURCE = f"public list price, us-east-1, as of {PRICES_AS_OF} (SageMaker Training, on-demand)"


DRIVER_RESERVE_MIB = 1024  # assumed: what CUDA's total lacks of nvidia-smi's (measured 615 MiB on an H200)


@dataclass(frozen=True)
class GPU:
    """One GPU model: its name as CUDA reports it, nvidia-smi's total memory (MiB) and, where measured, CUDA's."""

    name: str
    nvidia_smi_mib: int
    cuda_total_bytes: int | None = None  # torch.cuda.get_device_properties(0).total_memory, where measured

    @property
    def usable_gib(self) -> float:
        """What CUDA can hand out: its measured total, else nvidia-smi's less DRIVER_RESERVE_MIB."""
        if self.cuda_total_bytes is not None:
            return self.cuda_total_bytes / (1 << 30)
        return (self.nvidia_smi_mib - DRIVER_RESERVE_MIB) / 1024

    @property
    def memory_source(self) -> str:
        if self.cuda_total_bytes is not None:
            return f"{self.name}: CUDA's total, measured ({self.nvidia_smi_mib} MiB in nvidia-smi)"
        return (f"{self.name}: nvidia-smi's {self.nvidia_smi_mib} MiB less {DRIVER_RESERVE_MIB} MiB assumed for the "
                "driver")


# nvidia-smi's memory.total of each model (public figures); the H200's CUDA total measured on an H200 with driver
# 580.159.04 (150,109,880,320 bytes, 143,156 MiB, against nvidia-smi's 143,771).
GPUS: dict[str, GPU] = {
    "A100-40GB": GPU("NVIDIA A100-SXM4-40GB", 40960),
    "A100-80GB": GPU("NVIDIA A100-SXM4-80GB", 81920),
    "H100": GPU("NVIDIA H100 80GB HBM3", 81559),
    "H200": GPU("NVIDIA H200", 143771, cuda_total_bytes=150_109_880_320),
    "A10G": GPU("NVIDIA A10G", 23028),
    "L4": GPU("NVIDIA L4", 23034),
    "T4": GPU("Tesla T4", 15360),
}


@dataclass(frozen=True)
class InstanceType:
    name: str
    gpus: int
    gpu: str
    gpu_memory_gib: int    # per GPU
    efa: bool              # Elastic Fabric Adapter: the fast path for NCCL between hosts
    hourly_price: float    # USD per instance-hour, see PRICE_SOURCE
    rdma: bool = False     # EFA with RDMA read (FI_EFA_USE_DEVICE_RDMA=1 is valid)
    gpu_model: str = ""    # key of GPUS

    @property
    def usable_gpu_memory_gib(self) -> float:
        """Per GPU, what CUDA can hand out (GPUS), not the marketing figure of gpu_memory_gib."""
        return GPUS[self.gpu_model].usable_gib if self.gpu_model else float(self.gpu_memory_gib)

    @property
    def gpu_name(self) -> str:
        return GPUS[self.gpu_model].name if self.gpu_model else self.gpu


INSTANCE_TYPES: dict[str, InstanceType] = {t.name: t for t in (
    InstanceType("ml.p4d.24xlarge", 8, "A100", 40, True, 37.688, rdma=True, gpu_model="A100-40GB"),
    InstanceType("ml.p4de.24xlarge", 8, "A100", 80, True, 47.110, rdma=True, gpu_model="A100-80GB"),
    InstanceType("ml.p5.48xlarge", 8, "H100", 80, True, 113.068, rdma=True, gpu_model="H100"),
    InstanceType("ml.g5.12xlarge", 4, "A10G", 24, False, 7.090, gpu_model="A10G"),
    InstanceType("ml.g5.48xlarge", 8, "A10G", 24, True, 20.360, gpu_model="A10G"),  # EFA, but no RDMA read
)}
# GPUs (model, count) of SageMaker's GPU instance types beyond the training types above: Studio spaces and notebook
# instances run on these (AWS's instance type pages).
_OTHER_GPU_INSTANCES = {
    **{f"ml.g4dn.{size}": ("T4", 1) for size in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge")},
    "ml.g4dn.12xlarge": ("T4", 4),
    **{f"ml.g5.{size}": ("A10G", 1) for size in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge")},
    "ml.g5.24xlarge": ("A10G", 4),
    **{f"ml.g6.{size}": ("L4", 1) for size in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge")},
    "ml.g6.12xlarge": ("L4", 4), "ml.g6.24xlarge": ("L4", 4), "ml.g6.48xlarge": ("L4", 8),
    "ml.p5e.48xlarge": ("H200", 8), "ml.p5en.48xlarge": ("H200", 8),
}


def gpu_of_instance(name: str) -> tuple[GPU, int]:
    """(GPU model, GPUs per instance) of SageMaker instance type `name`; ValueError listing the known ones."""
    if name in INSTANCE_TYPES:
        itype = INSTANCE_TYPES[name]
        return GPUS[itype.gpu_model], itype.gpus
    if name in _OTHER_GPU_INSTANCES:
        model, count = _OTHER_GPU_INSTANCES[name]
        return GPUS[model], count
    known = ", ".join(sorted([*INSTANCE_TYPES, *_OTHER_GPU_INSTANCES]))
    raise ValueError(f"instance type {name!r} has no GPU this table knows; known: {known}")
LOCAL = InstanceType("local", 0, "none (simulated host)", 0, False, 0.0)


def instance_type(name: str) -> InstanceType:
    """The known instance type `name` (or LOCAL, the simulation's host); ValueError listing the known ones otherwise."""
    if name == LOCAL.name:
        return LOCAL
    if name not in INSTANCE_TYPES:
        known = ", ".join(f"{t.name} ({t.gpus} x {t.gpu})" for t in INSTANCE_TYPES.values())
        raise ValueError(f"instance_type={name!r} is not a GPU training instance this launcher knows: use one of "
                         f"{known}, or add it to codefu_helpers/launch/instances.py")
    return INSTANCE_TYPES[name]


def estimate_cost(name: str, count: int, hours: float | None = None, hourly_price: float | None = None) -> dict:
    """Cost per hour of `count` instances (and of a run of `hours`, when given) at the list price."""
    itype = instance_type(name)
    price = itype.hourly_price if hourly_price is None else hourly_price
    out = {"instance_type": name, "instance_count": count, "gpus": count * itype.gpus,
           "price_per_instance_hour": price, "per_hour": round(price * count, 2),
           "source": PRICE_SOURCE if hourly_price is None else "given by the caller"}
    if hours is not None:
        out["hours"] = hours
        out["per_run"] = round(price * count * hours, 2)
    return out
