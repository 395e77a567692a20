"""Write clean notebooks from Python: used to author the series and by tests to plant violations.

    from peagle_nb.lab.notebooks.authoring import md, code, params, write_notebook
    write_notebook("notebooks/01_x.ipynb", [md("# Title"), params("SMOKE = False"), code("print(1)")])

Produces nbformat 4.5 JSON with kernel ``python3``, no outputs, and stable cell ids, so the committed
file passes the hygiene gates and diffs stay small.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}
LANGUAGE_INFO = {"name": "python"}


def _cell(cell_type: str, source: str, tags: list[str] | None = None) -> dict:
    source = source.strip("\n")
    cell = {"cell_type": cell_type, "metadata": {"tags": tags} if tags else {}, "source": source}
    if cell_type == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    return cell


def md(source: str) -> dict:
    return _cell("markdown", source)


def code(source: str) -> dict:
    return _cell("code", source)


def params(source: str) -> dict:
    """The one cell tagged ``parameters``: literal ``NAME = value`` lines only."""
    return _cell("code", source, ["parameters"])


def notebook(cells: list[dict]) -> dict:
    out = []
    for i, c in enumerate(cells):
        c = dict(c)
        digest = hashlib.sha1(f"{i}:{c['cell_type']}:{c['source']}".encode()).hexdigest()[:8]
        c["id"] = f"c{i:02d}-{digest}"
        out.append(c)
    return {"cells": out, "metadata": {"kernelspec": KERNELSPEC, "language_info": LANGUAGE_INFO},
            "nbformat": 4, "nbformat_minor": 5}


def write_notebook(path: str | Path, cells: list[dict]) -> Path:
    path = Path(path)
    path.write_text(json.dumps(notebook(cells), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
