"""Which vLLM container image and inference AMI a plan uses, chosen among the combinations AWS ships.

Explained in notebook 06. AWS's vLLM images for SageMaker AI from the SDK's table
(``sagemaker.core.image_uris.retrieve("vllm", ...)``) are CUDA 13 builds (``...-cu130-...``); they need the
CUDA 13 inference AMI, which the SDK's ModelBuilder pairs only with the families in
:data:`CUDA13_AMI_FAMILIES`. ml.g7e is not among them, and there JumpStart's P-EAGLE configuration for
GPT-OSS-20B (``lmi-optimized``) runs a CUDA 12.9 vLLM 0.18 image on the default AMI instead. So:

- a family the SDK lists: the SDK's cu130 image + ``al2023-ami-sagemaker-inference-gpu-4-1``;
- any other family (ml.g7e, ml.g7): the cu129 image JumpStart runs there, default AMI (none set);
- an explicit ``image_uri``: used as given; the CUDA 13 AMI only when it is a cu13 image on a listed family,
  and :func:`image_problems` refuses a cu13 image on a family outside the list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CUDA13_AMI = "al2023-ami-sagemaker-inference-gpu-4-1"
# The families sagemaker-serve pairs with the CUDA 13 AMI (its ModelBuilder's own choice; the SDK has no public
# name for the list, so this is a copy, and a test compares the two).
CUDA13_AMI_FAMILIES = frozenset({"ml.g4dn", "ml.g5", "ml.g6", "ml.g6e", "ml.p4d", "ml.p4de", "ml.p5", "ml.p5e",
                                 "ml.p5en"})
# JumpStart's image for openai-reasoning-gpt-oss-20b / lmi-optimized on ml.g7e (its recorded spec).
CU129_VLLM_VERSION = "0.18.0"
CU129_TAG = "0.18.0-gpu-py312-cu129-ubuntu22.04-sagemaker"
DEFAULT_VLLM_VERSION = "0.30"


@dataclass(frozen=True)
class ImageChoice:
    uri: str | None  # None: the SDK could not name one (missing SDK, unknown region/version)
    vllm_version: str
    inference_ami_version: str | None  # None: SageMaker's default AMI
    source: str  # where the URI came from and why this combination


def instance_family(instance_type: str) -> str:
    """``ml.g6e.2xlarge`` -> ``ml.g6e``."""
    return instance_type.rsplit(".", 1)[0]


def cuda_major(image_uri: str) -> int | None:
    """13 for a ``...-cu130-...`` tag, 12 for ``cu129``; None when the tag names no CUDA version."""
    tag = image_uri.rpartition(":")[2]
    found = re.search(r"(?:^|-)cu(\d{2,3})(?:-|$)", tag)
    return int(found.group(1)[:2]) if found else None


def sdk_image_uri(region: str, vllm_version: str, instance_type: str | None = None) -> tuple[str | None, str]:
    """(uri, how) from ``sagemaker.core.image_uris.retrieve("vllm", ...)``; (None, reason) without one."""
    try:
        from sagemaker.core import image_uris
    except ImportError:
        return None, "SageMaker SDK not installed (extra `sagemaker`): pass image_uri explicitly"
    try:
        uri = image_uris.retrieve("vllm", region, version=vllm_version, image_scope="inference",
                                  instance_type=instance_type)
    except (ValueError, KeyError) as exc:
        return None, f"the SDK has no vLLM image for {region}/{vllm_version} ({exc}): pass image_uri explicitly"
    return uri, f"sagemaker.core.image_uris.retrieve('vllm', {region!r}, version={vllm_version!r})"


def choose_image(region: str | None, instance_type: str, *, vllm_version: str = DEFAULT_VLLM_VERSION,
                 image_uri: str | None = None, inference_ami_version: str | None = None) -> ImageChoice:
    """The image and AMI for ``instance_type`` (see the module doc); never contacts AWS."""
    family = instance_family(instance_type)
    if image_uri:
        ami = inference_ami_version
        if ami is None and cuda_major(image_uri) == 13 and family in CUDA13_AMI_FAMILIES:
            ami = CUDA13_AMI
        return ImageChoice(image_uri, vllm_version, ami, "explicit image_uri")
    listed = family in CUDA13_AMI_FAMILIES
    if region is None:
        return ImageChoice(None, vllm_version if listed else CU129_VLLM_VERSION,
                           inference_ami_version or (CUDA13_AMI if listed else None),
                           "no region yet (the image lives in the region's ECR)")
    if listed:
        uri, how = sdk_image_uri(region, vllm_version, instance_type)
        return ImageChoice(uri, vllm_version, inference_ami_version or CUDA13_AMI,
                           f"{how}; CUDA 13 image + the CUDA 13 AMI, which the SDK lists for {family}")
    # Outside the SDK's CUDA 13 list: the cu129 image JumpStart runs on these instances, default AMI.
    any_uri, how = sdk_image_uri(region, DEFAULT_VLLM_VERSION)
    if any_uri is None:
        return ImageChoice(None, CU129_VLLM_VERSION, inference_ami_version, how)
    uri = any_uri.rsplit(":", 1)[0] + ":" + CU129_TAG
    return ImageChoice(uri, CU129_VLLM_VERSION, inference_ami_version,
                       f"JumpStart's CUDA 12.9 vLLM {CU129_VLLM_VERSION} image on the default AMI: the SDK does not "
                       f"list {family} for the CUDA 13 AMI its own vLLM images need (registry from {how})")


def image_problems(image_uri: str | None, instance_type: str, inference_ami_version: str | None) -> list[str]:
    """Combinations AWS does not claim to support, with the fix."""
    if not image_uri:
        return []
    family = instance_family(instance_type)
    if cuda_major(image_uri) == 13:
        if family not in CUDA13_AMI_FAMILIES:
            return [f"{image_uri.rsplit(':', 1)[-1]} is a CUDA 13 image, and the SDK lists {family} for none of the "
                    f"AMIs such images need ({CUDA13_AMI} covers {', '.join(sorted(CUDA13_AMI_FAMILIES))}): leave "
                    f"image_uri unset for the CUDA 12.9 image JumpStart runs on {family}, or pick one of those "
                    "families"]
        if inference_ami_version != CUDA13_AMI:
            return [f"the image is built for CUDA 13 ({image_uri.rsplit(':', 1)[-1]}); its instances need "
                    f"inference_ami_version={CUDA13_AMI!r}, not {inference_ami_version!r}"]
    return []
