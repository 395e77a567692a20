"""``gate``: run a cell only when its requirement holds, and say clearly why it was skipped.

Cells that need a GPU, AWS credentials or a hub download start with::

    if gate(USE_GPU and caps.gpu, "needs an NVIDIA GPU: set USE_GPU=True on a GPU machine"):
        ...

A skipped gate prints a visible notice and is recorded as ``skipped.<name>`` so the run summary
lists every cell that did not run and why; nothing is silently dead. Explained in notebook 00.
"""

from __future__ import annotations

import re

from peagle_nb.notebook.record import record

_skipped: dict[str, str] = {}


def gate(condition: bool, reason: str, name: str | None = None) -> bool:
    """Return ``bool(condition)``; when false, print and record why the guarded cell is skipped."""
    if condition:
        return True
    key = name or re.sub(r"[^a-z0-9]+", "_", reason.lower()).strip("_")[:60] or "cell"
    _skipped[key] = reason
    print(f"SKIPPED ({key}): {reason}")
    record(f"skipped.{key}", reason)
    return False


def skipped_gates() -> dict[str, str]:
    return dict(_skipped)
