"""Smoke or full: the default a notebook picks when its parameters cell says ``SMOKE = None``.

Opening a notebook on a laptop must not start a long full configuration by surprise, so every
parameters cell commits ``SMOKE = None  # None: decided from this machine``. The value is decided by
:func:`decide_smoke` from :func:`peagle_nb.machine.capabilities.detect` and the notebook's entry in
:data:`~peagle_nb.notebook.series.SERIES` (``peagle-nb env`` prints the same decision per notebook):

- full mode when everything it needs is here (``full_needs``) AND either it is cheap on any CPU
  (``full_on_cpu``) or a CUDA GPU is present;
- smoke mode otherwise, with the reason.

``peagle-nb run-notebooks`` injects the decided value (or ``--smoke`` / ``--full``). In an interactive
kernel, importing :mod:`peagle_nb.notebook` (every notebook does so before it first reads ``SMOKE``,
checked by the hygiene gate) resolves a ``None`` in the kernel's namespace, and an IPython hook does it
again before every later cell, so re-running the parameters cell keeps working. The notebook is
identified from the kernel (``__session__`` in JupyterLab, ``__vsc_ipynb_file__`` in VS Code, or
``PEAGLE_NB_NOTEBOOK`` set by the runner); an unidentified notebook gets full mode only on a CUDA GPU.
Explained in notebook 00.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from peagle_nb.notebook.series import SERIES, NotebookSpec

_decided: dict[str | None, tuple[bool, str]] = {}
_installed = False


def spec_for(name: str | None) -> NotebookSpec | None:
    """The series entry of a notebook path or file name (``None`` when it is not one of the series)."""
    if not name:
        return None
    m = re.match(r"(\d\d)_", Path(str(name)).name)
    return next((s for s in SERIES if m and s.number == m.group(1)), None)


def decide_smoke(spec: NotebookSpec | None, caps=None) -> tuple[bool, str]:
    """``(smoke, reason)`` for one notebook on this machine (``spec=None``: a notebook outside the series)."""
    from peagle_nb.machine.capabilities import can_run_full, detect

    caps = caps or detect()
    if spec is None:
        if caps.cuda_available:
            return False, "full mode: a CUDA GPU is present"
        return True, "smoke mode: no CUDA GPU"
    ok, missing = can_run_full(caps, spec.full_needs)
    if not ok:
        return True, f"smoke mode: full mode needs what is missing here ({missing})"
    if spec.full_on_cpu:
        return False, "full mode: it needs nothing this machine lacks and is short on any CPU"
    if caps.cuda_available:
        return False, "full mode: a CUDA GPU and everything full mode needs are present"
    return True, f"smoke mode: no CUDA GPU, and full mode costs {spec.full_cost}"


def _kernel_notebook(ns: dict) -> str | None:
    return ns.get("__session__") or ns.get("__vsc_ipynb_file__") or os.environ.get("PEAGLE_NB_NOTEBOOK")


def resolve(ns: dict) -> None:
    """Replace ``SMOKE = None`` in a kernel namespace by the decided value, print why and record it."""
    if "SMOKE" not in ns or ns["SMOKE"] is not None:
        return
    name = _kernel_notebook(ns)
    spec = spec_for(name)
    key = spec.number if spec else None
    if key not in _decided:
        _decided[key] = decide_smoke(spec)
    smoke, reason = _decided[key]
    ns["SMOKE"] = smoke
    from peagle_nb.notebook.record import record

    print(f"SMOKE = None -> {smoke} ({reason}); set SMOKE = True or False in the parameters cell to choose")
    record("mode.smoke", smoke)
    record("mode.reason", reason)


def install() -> None:
    """In an IPython kernel: resolve ``SMOKE`` now and before every later cell (idempotent)."""
    global _installed
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    resolve(shell.user_ns)
    if not _installed:
        shell.events.register("pre_run_cell", lambda *_: resolve(shell.user_ns))
        _installed = True
