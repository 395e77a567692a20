"""Load results files (``data/results/*.json`` and a user's own) for the comparison.

Every file uses the one schema in :mod:`peagle_nb.files.results`; its README is ``data/results/README.md``.
Explained in notebook 07.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Sequence

from peagle_nb.files import paths
from peagle_nb.files.results import ResultsFormatError, read_results

HINT = ("every results file must follow peagle_nb/files/results.py (see data/results/README.md); "
        "write it with peagle_nb.files.results.make_results + write_results")


def load_results(files: Sequence[str | Path] | None = None, directory: str | Path | None = None) -> list[dict]:
    """Read and validate results files.

    ``files``: explicit paths (a user's own runs); ``directory``: every ``*.json`` and ``*.json.gz`` in it (default
    ``data/results/`` when neither is given). Each returned doc gets ``"_path"``. A missing or
    malformed file raises :class:`ResultsFormatError` naming the file, the problem and the fix.
    """
    if files is None:
        folder = Path(directory) if directory is not None else paths.results_dir()
        if not folder.is_dir():
            raise ResultsFormatError(f"{folder}: results folder not found; pass directory= or files=")
        files = sorted([*folder.glob("*.json"), *folder.glob("*.json.gz")])
    docs = []
    for f in files:
        f = Path(f)
        if not f.is_file():
            raise ResultsFormatError(f"{f}: no such results file")
        try:
            doc = read_results(f)
        except ResultsFormatError as exc:
            raise ResultsFormatError(f"{exc}. Fix: {HINT}") from None
        except (UnicodeDecodeError, AttributeError, TypeError) as exc:
            raise ResultsFormatError(f"{f}: not a results document ({exc}). Fix: {HINT}") from None
        docs.append({**doc, "_path": str(f)})
    return docs


def runs_of(docs: Iterable[dict]) -> list[dict]:
    """Flatten documents into run records tagged with ``source``, ``device`` and ``file``."""
    out = []
    for doc in docs:
        device = (doc.get("machine") or {}).get("device", "unknown")
        name = Path(doc.get("_path", "")).name
        for run in doc["runs"]:
            out.append({"source": doc["source"], "device": device, "file": name, **run})
    return out


def select(runs: Iterable[dict], **equal: Any) -> list[dict]:
    """Runs whose fields equal every given value (``select(runs, method="peagle", k=7)``)."""
    return [r for r in runs if all(r.get(key) == val for key, val in equal.items())]


def measured_groups(docs: Iterable[dict]) -> dict[str, list[dict]]:
    """Measured speculative-decoding runs grouped by file and prompt set, e.g.
    ``"engine_cpu.json · prose"``: the data sets the step model can be fitted on (they need
    ``draft_ms_per_step`` and ``verify_ms_per_step``)."""
    groups: dict[str, list[dict]] = {}
    for run in runs_of(d for d in docs if d["source"] != "published"):
        if run.get("method") not in ("none", "eagle3", "peagle"):
            continue
        key = f"{run['file']} · {run.get('prompt_set') or 'all'}"
        groups.setdefault(key, []).append(run)
    return {k: v for k, v in groups.items()
            if any(r.get("draft_ms_per_step") is not None for r in v)}


def dumps(doc: dict) -> str:
    """JSON text of a document without the loader's private keys."""
    return json.dumps({k: v for k, v in doc.items() if not k.startswith("_")}, indent=1)
