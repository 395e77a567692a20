"""GPU memory and on-demand hourly price of SageMaker AI real-time inference instances.

Used by the plan's memory check and cost estimate (notebook 06). GPU counts and memory come from the
SageMaker SDK's own table (``sagemaker.core.instance_types_gpu_info``) where it lists the type, else from
``INSTANCES`` below (instance pages on aws.amazon.com/ec2/instance-types). Prices are APPROXIMATE list
prices for real-time inference in us-east-1 (source: ``PRICE_SOURCE``); other regions cost more or less,
so the notebook prints the estimate with its source and date and tells the user to check.
"""

from __future__ import annotations

from dataclasses import dataclass

PRICE_SOURCE = ("approximate on-demand list prices, SageMaker AI real-time inference, us-east-1, USD per "
                "instance-hour, as read from aws.amazon.com/sagemaker/ai/pricing and summaries of it (not fetched at "
                "run time; prices change); ml.g7e.2xlarge (~$4.20/h) from the AWS blog 'Parallelize speculative "
                "decoding with P-EAGLE on Amazon SageMaker AI' (2026). Check the pricing page for your region.")


@dataclass(frozen=True)
class InstanceInfo:
    instance_type: str
    gpus: int
    gpu: str
    gpu_memory_gib: float  # total over all GPUs
    usd_per_hour: float | None



# (gpus, gpu model, total GPU memory GiB, approx. USD/hour us-east-1)
INSTANCES: dict[str, tuple[int, str, float, float | None]] = {
    "ml.g5.xlarge": (1, "A10G", 24, 1.41),
    "ml.g5.2xlarge": (1, "A10G", 24, 1.52),
    "ml.g5.12xlarge": (4, "A10G", 96, 7.09),
    "ml.g5.48xlarge": (8, "A10G", 178.8, 20.36),
    "ml.g6.xlarge": (1, "L4", 24, 1.01),
    "ml.g6.2xlarge": (1, "L4", 24, 1.22),
    "ml.g6.12xlarge": (4, "L4", 96, 5.75),
    "ml.g6e.xlarge": (1, "L40S", 48, 2.34),
    "ml.g6e.2xlarge": (1, "L40S", 48, 2.81),
    "ml.g6e.12xlarge": (4, "L40S", 192, 13.12),
    "ml.g6e.48xlarge": (8, "L40S", 384, 37.63),
    "ml.g7e.2xlarge": (1, "RTX PRO 6000 Blackwell", 96, 4.20),
    "ml.p4d.24xlarge": (8, "A100 40GB", 320, 37.69),
    "ml.p4de.24xlarge": (8, "A100 80GB", 640, 47.11),
    "ml.p5.48xlarge": (8, "H100", 640, 113.07),
    "ml.p5e.48xlarge": (8, "H200", 1128, None),
    "ml.p5en.48xlarge": (8, "H200", 1128, None),
}


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


def instance_info(instance_type: str, region: str = "us-east-1") -> InstanceInfo:
    """GPU count/memory/price of ``instance_type``; KeyError naming the known types when unknown."""
    sdk = sdk_gpu_info(region).get(instance_type)
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
        gpus, gpu, mem, _ = ours
    return InstanceInfo(instance_type, gpus, gpu, round(float(mem), 1), ours[3] if ours else None)


def smallest_fitting(min_gpu_memory_gib: float, region: str = "us-east-1") -> InstanceInfo | None:
    """The cheapest priced instance with at least ``min_gpu_memory_gib`` of GPU memory."""
    fits = [instance_info(t, region) for t in INSTANCES]
    fits = [i for i in fits if i.gpu_memory_gib >= min_gpu_memory_gib and i.usd_per_hour is not None]
    return min(fits, key=lambda i: i.usd_per_hour, default=None)


def hourly_cost(instance_type: str, instance_count: int = 1) -> float | None:
    info = instance_info(instance_type)
    return None if info.usd_per_hour is None else round(info.usd_per_hour * instance_count, 2)
