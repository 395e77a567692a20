"""Lazy imports of the optional AWS libraries, with an error that names the extra to install, and the SDK
range the suite is tested with (the ``sagemaker`` extra of pyproject.toml pins the same range)."""

from __future__ import annotations

import importlib
import os
import re

# The floor: sagemaker-core keeps a resource's session and region with the resource only from 2.24 (before,
# refresh/wait/delete/invoke used one process-wide client, so a second region's calls could go to the first
# one's); sagemaker 3.27 is the release the suite is built on, and it requires sagemaker-core >= 2.27 and
# sagemaker-serve >= 1.27. The ceiling: the next major versions, which may rename what this package calls.
# pyproject.toml's `sagemaker` extra says the same (a test compares them); CI runs the SageMaker tests
# against exactly these floors (tests/sagemaker/sdk_floor.py).
SDK_RANGE = {"sagemaker": ((3, 27), (4,)), "sagemaker-core": ((2, 27), (3,)), "sagemaker-serve": ((1, 27), (2,))}
BOTO3_FLOOR = (1, 43, 90)
PINS = (*(f"{dist}>={'.'.join(map(str, low))},<{'.'.join(map(str, high))}" for dist, (low, high) in SDK_RANGE.items()),
        f"boto3>={'.'.join(map(str, BOTO3_FLOOR))}")
_PINS = " ".join(f"'{pin}'" for pin in PINS)
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
