"""GPU memory and on-demand hourly price of SageMaker AI real-time inference instances.

Used by the plan's memory check and cost estimate (notebook 06). GPU counts and memory come from the
SageMaker SDK's own table (``sagemaker.core.instance_types_gpu_info``) where it lists the type, else from
``INSTANCES`` below (instance pages on aws.amazon.com/ec2/instance-types). Prices are in ``PRICES``, one
entry per (region, instance type), each with the date it was read and its source: APPROXIMATE on-demand list
prices that change. A region without entries has no price (:func:`price` returns None and the plan says
"no price for <region>"): prices differ between regions, so another region's figure is never used. With no
region at all (the local emulation), the table's reference region is used and named.
"""

from __future__ import annotations

from dataclasses import dataclass

REFERENCE_REGION = "us-east-1"
_LIST_PAGE = ("aws.amazon.com/sagemaker/ai/pricing, real-time inference, on-demand, read when this table was "
              "written (not fetched at run time)")
_BLOG = "AWS blog 'Parallelize speculative decoding with P-EAGLE on Amazon SageMaker AI' (2026)"


@dataclass(frozen=True)
class Price:
    usd_per_hour: float
    region: str
    as_of: str  # the date the figure was read
    source: str

    def describe(self) -> str:
        return f"~${self.usd_per_hour:.2f}/h in {self.region}, as of {self.as_of} ({self.source})"


@dataclass(frozen=True)
class InstanceInfo:
    instance_type: str
    gpus: int
    gpu: str
    gpu_memory_gib: float  # total over all GPUs
    price: Price | None  # None: no price for the region asked

    @property
    def usd_per_hour(self) -> float | None:
        return None if self.price is None else self.price.usd_per_hour


# (gpus, gpu model, total GPU memory GiB)
INSTANCES: dict[str, tuple[int, str, float]] = {
    "ml.g5.xlarge": (1, "A10G", 24),
    "ml.g5.2xlarge": (1, "A10G", 24),
    "ml.g5.12xlarge": (4, "A10G", 96),
    "ml.g5.48xlarge": (8, "A10G", 178.8),
    "ml.g6.xlarge": (1, "L4", 24),
    "ml.g6.2xlarge": (1, "L4", 24),
    "ml.g6.12xlarge": (4, "L4", 96),
    "ml.g6e.xlarge": (1, "L40S", 48),
    "ml.g6e.2xlarge": (1, "L40S", 48),
    "ml.g6e.12xlarge": (4, "L40S", 192),
    "ml.g6e.48xlarge": (8, "L40S", 384),
    "ml.g7e.2xlarge": (1, "RTX PRO 6000 Blackwell", 96),
    "ml.p4d.24xlarge": (8, "A100 40GB", 320),
    "ml.p4de.24xlarge": (8, "A100 80GB", 640),
    "ml.p5.48xlarge": (8, "H100", 640),
    "ml.p5e.48xlarge": (8, "H200", 1128),
    "ml.p5en.48xlarge": (8, "H200", 1128),
}

_US_EAST_1 = {"ml.g5.xlarge": 1.41, "ml.g5.2xlarge": 1.52, "ml.g5.12xlarge": 7.09, "ml.g5.48xlarge": 20.36,
              "ml.g6.xlarge": 1.01, "ml.g6.2xlarge": 1.22, "ml.g6.12xlarge": 5.75, "ml.g6e.xlarge": 2.34,
              "ml.g6e.2xlarge": 2.81, "ml.g6e.12xlarge": 13.12, "ml.g6e.48xlarge": 37.63, "ml.p4d.24xlarge": 37.69,
              "ml.p4de.24xlarge": 47.11, "ml.p5.48xlarge": 113.07}
# (region, instance type) -> Price. ml.p5e/p5en have no list price here (capacity-block / quote only).
PRICES: dict[tuple[str, str], Price] = {
    **{("us-east-1", t): Price(usd, "us-east-1", "2026-12-02", _LIST_PAGE) for t, usd in _US_EAST_1.items()},
    ("us-east-1", "ml.g7e.2xlarge"): Price(4.20, "us-east-1", "2026-12-02", _BLOG),
}
PRICE_SOURCE = ("approximate on-demand list prices, USD per instance-hour, each with its region, date and source "
                f"(peagle_nb/sagemaker/instances.py); priced regions: {sorted({r for r, _ in PRICES})}. Check "
                "aws.amazon.com/sagemaker/ai/pricing for your region.")


def price(instance_type: str, region: str | None) -> Price | None:
    """The table's price of ``instance_type`` in ``region`` (None: the reference region), or None when the
    table has none for that region: never another region's figure."""
    return PRICES.get((region or REFERENCE_REGION, instance_type))


def sdk_gpu_info(region: str = "us-east-1") -> dict[str, dict[str, int]]:
    """The SDK's own GPU table ({instance: {Count, TotalGpuMemoryInMiB}}), or {} without the SDK."""
    try:
        from sagemaker.core import instance_types_gpu_info
    except ImportError:
        return {}
    try:
        return instance_types_gpu_info.retrieve(region)
    except ValueError:
        return {}


def instance_info(instance_type: str, region: str | None = None) -> InstanceInfo:
    """GPU count/memory and ``region``'s price of ``instance_type``; KeyError naming the known types when
    unknown. ``region`` None: the reference region's price (see the module doc)."""
    sdk = sdk_gpu_info(region or REFERENCE_REGION).get(instance_type)
    ours = INSTANCES.get(instance_type)
    if ours is None and sdk is None:
        known = ", ".join(sorted(INSTANCES))
        raise KeyError(f"unknown instance type {instance_type!r}: the plan checks GPU memory against a table "
                       f"of known GPU instances ({known}); pick one of them or add it to "
                       "peagle_nb/sagemaker/instances.py")
    if sdk is not None:
        gpus, mem = int(sdk["Count"]), sdk["TotalGpuMemoryInMiB"] / 1024
        gpu = ours[1] if ours else "GPU"
    else:
        gpus, gpu, mem = ours
    return InstanceInfo(instance_type, gpus, gpu, round(float(mem), 1), price(instance_type, region))


def smallest_fitting(min_gpu_memory_gib: float, region: str | None = None) -> InstanceInfo | None:
    """The cheapest instance priced in ``region`` with at least ``min_gpu_memory_gib`` of GPU memory."""
    fits = [instance_info(t, region) for t in INSTANCES]
    fits = [i for i in fits if i.gpu_memory_gib >= min_gpu_memory_gib and i.usd_per_hour is not None]
    return min(fits, key=lambda i: i.usd_per_hour, default=None)


def hourly_cost(instance_type: str, instance_count: int = 1, region: str | None = None) -> float | None:
    """The hourly price of ``instance_count`` instances in ``region``; None when the table has no price there."""
    found = price(instance_type, region)
    return None if found is None else round(found.usd_per_hour * instance_count, 2)
