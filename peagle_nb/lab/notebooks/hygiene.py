"""Cheap checks a notebook must pass before anything executes (nbdev-style hygiene gates).

- no outputs or execution counts committed;
- kernel name ``python3`` and no stray metadata (only ``kernelspec`` and ``language_info`` at the
  notebook level, only ``tags`` on cells);
- exactly one cell tagged ``parameters``, holding literal assignments only (papermill injects
  values after it, so anything computed there would be silently stale), with ``SMOKE = None`` committed
  (decided from the machine, :mod:`peagle_nb.notebook.modes`);
- the first cell is markdown and says what full mode costs (the first screen a reader sees);
- ``SMOKE`` is read only after the notebook imports ``peagle_nb.notebook`` (which resolves ``None``);
- no decimal figure typed in a markdown cell unless it is a published figure (a value in
  ``data/results/published.json``), a version or arXiv number, or a stated constant in the reviewed
  :data:`ALLOWED_FIGURES`: a measured number in prose goes stale when the data is re-recorded, so prose
  quoting one renders it from data (``display(Markdown(...))`` or a printed line);
- the series: files numbered contiguously from 00, matching ``series.SERIES`` and the README table.

``peagle-nb check-notebooks`` and tests/test_notebook_hygiene.py both call these.
"""

from __future__ import annotations

import ast
import json
import re
from functools import lru_cache
from pathlib import Path

from peagle_nb.files import paths
from peagle_nb.notebook.series import SERIES

ALLOWED_NOTEBOOK_METADATA = {"kernelspec", "language_info"}
ALLOWED_CELL_METADATA = {"tags"}
NAME_RE = re.compile(r"^(\d\d)_([a-z0-9_]+)\.ipynb$")


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return src if isinstance(src, str) else "".join(src)


def parameters_cells(nb: dict) -> list[int]:
    return [i for i, c in enumerate(nb.get("cells", [])) if "parameters" in (c.get("metadata", {}).get("tags") or [])]


def literal_parameters(source: str) -> dict:
    """Parse a parameters cell: ``NAME = <literal>`` lines (comments allowed); raise ValueError otherwise."""
    tree = ast.parse(source)
    values = {}
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            target, value = node.target, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0], node.value
        else:
            raise ValueError(f"line {node.lineno}: only `NAME = literal` assignments belong in the parameters cell")
        try:
            values[target.id] = ast.literal_eval(value)
        except ValueError:
            raise ValueError(
                f"line {node.lineno}: {target.id} is not a literal; compute derived values in a later cell"
            ) from None
    return values


IMPORTS_NOTEBOOK = re.compile(r"^\s*(from peagle_nb\.notebook(\.\w+)* import|import peagle_nb\.notebook)", re.M)
READS_SMOKE = re.compile(r"\bSMOKE\b")


def smoke_read_before_import(nb: dict) -> int | None:
    """Index of the first cell that reads ``SMOKE`` before any cell (or earlier line) imported
    ``peagle_nb.notebook``; ``None`` when the order is right."""
    imported = False
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code" or "parameters" in (cell.get("metadata", {}).get("tags") or []):
            continue
        for line in _source(cell).splitlines():
            if IMPORTS_NOTEBOOK.search(line):
                imported = True
            elif READS_SMOKE.search(line.split("#", 1)[0]) and not imported:
                return i
    return None


FIGURE_RE = re.compile(r"(?<![\w.])\d+\.\d+(?!\.?\d)")  # 1.5, 0.23 (not 0.16.0, v1.2, 2503.01840x)
# Not measurements: arXiv identifiers and software versions.
NOT_A_FIGURE_RE = re.compile(r"arXiv \d{4}\.\d{4,5}|(?:vLLM|CUDA|Python|version|>=)\s*\d+\.\d+")
# Stated constants a markdown cell may type, per notebook, each with why it is not a measurement. Keep it
# small: everything measured is printed from data instead.
ALLOWED_FIGURES: dict[str, dict[str, str]] = {
    "02_eagle3_autoregressive_drafter.ipynb": {"0.8": "training-time-test loss weight 0.8^k (recipe constant)"},
    "03_peagle_mask_token_drafter.ipynb": {"0.7": "COD keep rate r (recipe constant)",
                                           "0.2": "COD floor r_min (recipe constant)"},
    "05_serve_peagle_in_vllm.ipynb": {"0.01": "a temperature the text names (an input, not a result)"},
    "06_deploy_to_sagemaker_ai.ipynb": {"1.41": "ml.g5.xlarge's hourly price in peagle_nb/sagemaker/instances.py"},
    "08_japanese_and_domain_shift.ipynb": {"0.7": "family v3's bits-per-byte goal (compare.target_v3.BPB_RATIO_GOAL)"},
}


def _numbers(value) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in _numbers(v)]
    return []


@lru_cache(maxsize=4)
def published_figures(path: str | None = None) -> frozenset[str]:
    """Every number in ``published.json``'s runs as prose would type it (``1.55``, ``3.9``); empty when the
    file is absent (then no figure counts as published)."""
    path = Path(path) if path else paths.results_dir() / "published.json"
    if not path.is_file():
        return frozenset()
    runs = json.loads(path.read_text(encoding="utf-8")).get("runs", [])
    return frozenset(f"{n:g}" for n in _numbers(runs))


def typed_figures(nb: dict, name: str, published: frozenset[str] | None = None) -> list[tuple[int, str, str]]:
    """``(cell, figure, context)`` for each decimal figure typed in a markdown cell that is not published,
    not a version or arXiv number and not in ``ALLOWED_FIGURES[name]``."""
    published = published_figures() if published is None else published
    allowed = ALLOWED_FIGURES.get(name, {})
    found = []
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "markdown":
            continue
        text = _source(cell)
        exempt = [m.span() for m in NOT_A_FIGURE_RE.finditer(text)]
        for m in FIGURE_RE.finditer(text):
            fig = m.group()
            if any(a <= m.start() < b for a, b in exempt) or fig in allowed or f"{float(fig):g}" in published:
                continue
            found.append((i, fig, " ".join(text[max(0, m.start() - 40):m.end() + 20].split())))
    return found


def check_notebook(path: str | Path) -> list[str]:
    """Return a list of human-readable problems (empty when the notebook is clean)."""
    path = Path(path)
    problems: list[str] = []
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        return [f"{path.name}: not valid JSON ({exc})"]
    kernel = nb.get("metadata", {}).get("kernelspec", {}).get("name")
    if kernel != "python3":
        problems.append(f"{path.name}: kernelspec name is {kernel!r}, must be 'python3'")
    stray = set(nb.get("metadata", {})) - ALLOWED_NOTEBOOK_METADATA
    if stray:
        problems.append(f"{path.name}: stray notebook metadata {sorted(stray)}")
    ids: set[str] = set()
    for i, cell in enumerate(nb.get("cells", [])):
        where = f"{path.name} cell {i}"
        # nbformat 4.5 cells need a unique id; without one, papermill and nbformat rewrite the file on every run
        if not cell.get("id") or cell["id"] in ids:
            problems.append(f"{where}: {'a repeated' if cell.get('id') else 'no'} cell id (give it a new unique "
                            "`id`, e.g. `nbformat.validator.normalize`)")
        ids.add(cell.get("id", ""))
        if cell.get("outputs"):
            problems.append(f"{where}: has committed outputs (clear them before committing)")
        if cell.get("execution_count") is not None:
            problems.append(f"{where}: has an execution count (clear outputs before committing)")
        stray_cell = set(cell.get("metadata", {})) - ALLOWED_CELL_METADATA
        if stray_cell:
            problems.append(f"{where}: stray cell metadata {sorted(stray_cell)}")
    pcells = parameters_cells(nb)
    if len(pcells) != 1:
        problems.append(f"{path.name}: {len(pcells)} cells tagged 'parameters', need exactly one")
    else:
        try:
            params = literal_parameters(_source(nb["cells"][pcells[0]]))
            if "SMOKE" not in params:
                problems.append(f"{path.name}: the parameters cell must declare SMOKE (the runner injects it)")
            elif params["SMOKE"] is not None:
                problems.append(f"{path.name}: commit SMOKE = None (decided from the machine when the notebook "
                                f"runs), not SMOKE = {params['SMOKE']!r}")
        except (ValueError, SyntaxError) as exc:
            problems.append(f"{path.name}: parameters cell: {exc}")
    cells = nb.get("cells", [])
    first = _source(cells[0]) if cells and cells[0].get("cell_type") == "markdown" else ""
    if "full mode" not in first.lower() or "SMOKE = None" not in first:
        problems.append(f"{path.name}: the first cell must be markdown saying what full mode costs and that "
                        "`SMOKE = None` picks the mode from this machine")
    for i, fig, context in typed_figures(nb, path.name):
        problems.append(f"{path.name} cell {i}: decimal figure {fig} typed in markdown (...{context}...): print a "
                        "measured number from data (display(Markdown(...)) or a printed line); a published figure "
                        "must be in data/results/published.json, a stated constant in ALLOWED_FIGURES "
                        "(peagle_nb/lab/notebooks/hygiene.py) with its reason")
    late = smoke_read_before_import(nb)
    if late is not None:
        problems.append(f"{path.name} cell {late}: reads SMOKE before importing peagle_nb.notebook, which resolves "
                        "SMOKE = None; import it earlier")
    return problems


def readme_table_numbers(readme: str | Path) -> list[tuple[str, str]]:
    """(number, filename) for each row of the README's notebook table (rows linking notebooks/NN_x.ipynb)."""
    text = Path(readme).read_text(encoding="utf-8")
    return re.findall(r"^\|\s*(\d\d)\s*\|.*?notebooks/(\d\d_[a-z0-9_]+\.ipynb)", text, flags=re.M)


def check_series(notebooks_dir: str | Path, readme: str | Path) -> list[str]:
    notebooks_dir = Path(notebooks_dir)
    problems: list[str] = []
    files = sorted(p.name for p in notebooks_dir.glob("*.ipynb"))
    for name in files:
        if not NAME_RE.match(name):
            problems.append(f"{name}: notebook names must look like NN_lower_snake.ipynb")
    numbers = [n[:2] for n in files if NAME_RE.match(n)]
    expected = [f"{i:02d}" for i in range(len(numbers))]
    if numbers != expected:
        problems.append(f"notebook numbers {numbers} are not contiguous from 00 ({expected})")
    registered = [s.filename for s in SERIES]
    if files != registered:
        problems.append(f"notebooks/ holds {files} but peagle_nb.notebook.series.SERIES lists {registered}")
    table = [f for _, f in readme_table_numbers(readme)]
    if table != files:
        problems.append(f"README notebook table lists {table} but notebooks/ holds {files}")
    return problems
