"""Lazy imports of the optional AWS libraries, with an error that names the extra to install."""

from __future__ import annotations

import importlib
import os

_HINT = ("pip install -e '.[sagemaker]' (or `make install`, which includes it; in SageMaker Studio the "
         "SDK is preinstalled: pip install 'sagemaker>=3' boto3)")


class MissingDependency(ImportError):
    pass


def require(module: str):
    """Import ``module`` (boto3, botocore, sagemaker.core...) or raise naming the ``sagemaker`` extra."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependency(f"{module} is needed for SageMaker deployment but is not installed: {_HINT}") from exc


def sdk_region_env(region: str | None) -> None:
    """``import sagemaker.serve`` (and parts of sagemaker.core) needs a default region to import at all."""
    if region and not os.environ.get("AWS_DEFAULT_REGION"):
        os.environ["AWS_DEFAULT_REGION"] = region
