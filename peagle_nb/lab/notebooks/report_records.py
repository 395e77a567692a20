"""The ``[record] name = value`` outputs of a notebook, gathered out of its cells into one folded table.

Every ``record(...)`` call shows one such line under its cell: useful while a notebook runs, but in a report they
outnumber the outputs a reader came for. :func:`fold_records` takes them out of the cells and
:func:`records_html` shows them once per notebook behind a closed ``<details>`` toggle. Used by
:mod:`peagle_nb.lab.notebooks.report`.
"""

from __future__ import annotations

import copy
import html
import json
from dataclasses import dataclass

from peagle_nb.notebook.record import RECORD_MIME

RECORD_PREFIX = "[record] "


@dataclass(frozen=True)
class RecordLine:
    name: str
    value: str  # as JSON text, cut at the length the record line itself shows


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _from_line(line: str) -> RecordLine:
    name, _, value = line[len(RECORD_PREFIX):].partition(" = ")
    return RecordLine(name, value)


def fold_records(nb: dict) -> tuple[dict, list[RecordLine]]:
    """A copy of ``nb`` without record outputs (nor ``[record]`` lines in printed text), and those records in
    order. A stream that held only record lines disappears; other lines of it stay where they were."""
    nb = copy.deepcopy(nb)
    records: list[RecordLine] = []
    for cell in nb.get("cells", []):
        kept = []
        for out in cell.get("outputs", []) or []:
            data = out.get("data") or {}
            if RECORD_MIME in data:
                rec = data[RECORD_MIME]
                records.append(RecordLine(str(rec.get("name")), json.dumps(rec.get("value"))[:200]))
                continue
            if out.get("output_type") == "stream":  # record() outside a kernel prints the line instead
                lines = _text(out.get("text", "")).splitlines(keepends=True)
                records += [_from_line(ln.rstrip("\n")) for ln in lines if ln.startswith(RECORD_PREFIX)]
                rest = [ln for ln in lines if not ln.startswith(RECORD_PREFIX)]
                if not rest:
                    continue
                out["text"] = "".join(rest)
            kept.append(out)
        if "outputs" in cell:
            cell["outputs"] = kept
    return nb, records


def records_html(records: list[RecordLine]) -> str:
    """One closed toggle with every recorded value of a notebook as a two-column table ('' when none)."""
    if not records:
        return ""
    rows = "".join(f"<tr><td>{html.escape(r.name)}</td><td>{html.escape(r.value)}</td></tr>" for r in records)
    return (f'<details class="records"><summary>{len(records)} recorded value(s): the numbers that tests and '
            f"summary.json read from this notebook</summary><table><thead><tr><th>name</th><th>value</th></tr>"
            f"</thead><tbody>{rows}</tbody></table></details>")
