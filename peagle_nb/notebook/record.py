"""``record(name, value)``: how a notebook publishes a number it computed.

Every notebook calls ``record`` for each figure it measures (acceptance length, latency, speedup...).
Inside Jupyter the value is displayed as an output with its own MIME type, so it is stored in the
executed ``.ipynb`` and :func:`read_records` can read it back without re-running anything: that is
how ``peagle-nb run-notebooks`` builds ``summary.json`` and how the tests assert the numbers.
Outside Jupyter (a script, a test) the value is kept in memory and printed.
Idea borrowed from scrapbook/microsoft-recommenders; explained in notebook 00.
"""

from __future__ import annotations

import json
import math
import numbers
from pathlib import Path
from typing import Any

RECORD_MIME = "application/vnd.peagle-nb.record+json"

_session: dict[str, Any] = {}


def to_jsonable(value: Any) -> Any:
    """Convert numpy / torch scalars and arrays, tuples and paths into plain JSON values."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        f = float(value)
        if math.isnan(f) or math.isinf(f):
            raise ValueError(f"record(): {value!r} is not a finite number; record None or a string instead")
        return f
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    for attr in ("tolist", "item"):  # numpy arrays/scalars, torch tensors
        if hasattr(value, attr):
            return to_jsonable(getattr(value, attr)())
    raise TypeError(
        f"record(): cannot store a {type(value).__name__}; record numbers, strings, bools, "
        "or lists/dicts of them"
    )


def _in_ipython_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def record(name: str, value: Any) -> Any:
    """Publish ``value`` under ``name`` (dotted names group figures, e.g. ``"peagle.k7.tau"``).

    Returns the JSON-converted value so a cell can ``record`` and use the number in one line.
    """
    if not isinstance(name, str) or not name or any(c.isspace() for c in name):
        raise ValueError(f"record(): name must be a non-empty string without spaces, got {name!r}")
    data = to_jsonable(value)
    _session[name] = data
    text = f"[record] {name} = {json.dumps(data)[:200]}"
    if _in_ipython_kernel():
        from IPython.display import display

        display({RECORD_MIME: {"name": name, "value": data}, "text/plain": text}, raw=True)
    else:
        print(text)
    return data


def recorded() -> dict[str, Any]:
    """What this Python session has recorded so far (outside Jupyter too)."""
    return dict(_session)


def read_records(notebook: str | Path | dict) -> dict[str, Any]:
    """Read every recorded value back from an executed notebook (path or nbformat dict).

    A name recorded twice keeps its last value, as in the live session.
    """
    if isinstance(notebook, (str, Path)):
        nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    else:
        nb = notebook
    out: dict[str, Any] = {}
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []) or []:
            payload = (output.get("data") or {}).get(RECORD_MIME)
            if payload is not None:
                out[payload["name"]] = payload["value"]
    return out
