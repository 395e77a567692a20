"""Lazy imports of the optional AWS libraries, with an error that names the extra to install, and the SDK
range the suite is tested with (the ``sagemaker`` extra of pyproject.toml pins the same range)."""

from __future__ import annotations

import importlib
import os
import re

# The oldest releases the tests pass with (their image table knows vLLM 0.30; JumpStart heads reach the
# container) and the next major version, which may rename what this package calls.
SDK_RANGE = {"sagemaker": ((3, 23), (4,)), "sagemaker-core": ((2, 23), (3,)), "sagemaker-serve": ((1, 23), (2,))}
_PINS = "'sagemaker>=3.23,<4' 'sagemaker-core>=2.23,<3' 'sagemaker-serve>=1.23,<2' 'boto3>=1.43.90'"
_HINT = (f"pip install -e '.[sagemaker]' (or `make install`, which includes it; in SageMaker Studio: "
         f"pip install {_PINS})")


class MissingDependency(ImportError):
    pass


def require(module: str):
    """Import ``module`` (boto3, botocore, sagemaker.core...) or raise naming the ``sagemaker`` extra."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependency(f"{module} is needed for SageMaker deployment but is not installed: {_HINT}") from exc


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def sdk_version_problems() -> list[str]:
    """Installed SDK parts outside :data:`SDK_RANGE` (a Studio image may ship an older one), with the fix."""
    from importlib import metadata

    problems = []
    for dist, (low, high) in SDK_RANGE.items():
        try:
            installed = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue  # a missing part fails at import with MissingDependency instead
        if not low <= _version(installed) < high:
            problems.append(f"{dist} {installed} is outside the tested range "
                            f">={'.'.join(map(str, low))},<{'.'.join(map(str, high))}: pip install {_PINS}")
    return problems


def sdk_region_env(region: str | None) -> None:
    """``import sagemaker.serve`` (and parts of sagemaker.core) needs a default region to import at all."""
    if region and not os.environ.get("AWS_DEFAULT_REGION"):
        os.environ["AWS_DEFAULT_REGION"] = region
