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
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["InstanceType", "INSTANCE_TYPES", "LOCAL", "PRICES_AS_OF", "PRICE_SOURCE", "instance_type", "estimate_cost"]

PRICES_AS_OF = "2025-05"
PRICE_SOURCE = f"public list price, us-east-1, as of {PRICES_AS_OF} (SageMaker Training, on-demand)"


@dataclass(frozen=True)
class InstanceType:
    name: str
    gpus: int
    gpu: str
    gpu_memory_gib: int    # per GPU
    efa: bool              # Elastic Fabric Adapter: the fast path for NCCL between hosts
    hourly_price: float    # USD per instance-hour, see PRICE_SOURCE
    rdma: bool = False     # EFA with RDMA read (FI_EFA_USE_DEVICE_RDMA=1 is valid)


INSTANCE_TYPES: dict[str, InstanceType] = {t.name: t for t in (
    InstanceType("ml.p4d.24xlarge", 8, "A100", 40, True, 37.688, rdma=True),
    InstanceType("ml.p4de.24xlarge", 8, "A100", 80, True, 47.110, rdma=True),
    InstanceType("ml.p5.48xlarge", 8, "H100", 80, True, 113.068, rdma=True),
    InstanceType("ml.g5.12xlarge", 4, "A10G", 24, False, 7.090),
    InstanceType("ml.g5.48xlarge", 8, "A10G", 24, True, 20.360),  # EFA, but no RDMA read
)}
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
