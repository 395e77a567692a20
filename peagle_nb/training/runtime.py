"""Where a training run runs: the torch device it asks for, that device's name in the logs and model cards,
and the progress lines it prints. Shared by the trainers (notebooks 01-03)."""

from __future__ import annotations

import platform

import torch


def resolve_device(device: str) -> torch.device:
    """``auto`` -> CUDA when torch sees a GPU, else CPU; ``cuda`` without a GPU is a clear error."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("--device cuda but torch sees no CUDA GPU. Fix: use --device cpu (or auto).")
    return torch.device(device)


def device_name(device: torch.device) -> str:
    """``NVIDIA H200`` or ``CPU (x86_64)``: the device a training log and its model card name."""
    return torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU ({platform.machine()})"


def log_line(msg: str) -> None:
    """A progress line, flushed at once (training runs are followed from their output)."""
    print(msg, flush=True)
