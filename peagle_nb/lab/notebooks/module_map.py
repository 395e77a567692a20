"""Where things are: which package modules each notebook uses, and which notebook explains each module.

Made from the code itself, so it cannot drift: the import statements of the notebooks' code cells and of every
module in ``peagle_nb/`` and ``kernels/`` (read with ``ast``, imports inside functions included, since those run
when the function is called), and the notebooks each module's docstrings name ("explained in notebook 05").
``python -m peagle_nb.lab.notebooks.module_map`` writes ``docs/where_things_are.md``;
``tests/test_module_map.py`` checks that the committed page is exactly what this module makes.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from peagle_nb.files import paths
from peagle_nb.notebook.series import SERIES

PAGE = Path("docs") / "where_things_are.md"
ROOTS = {"peagle_nb": "peagle_nb", "peagle_kernels": "kernels"}  # import name -> folder in the repository
# "notebook 05", "notebooks 01-03", "notebooks 01, 03 and 04"
_NAMED = re.compile(r"[Nn]otebooks?\s+(\d\d(?:\s*(?:,|and|or|-|–)\s*\d\d)*)")


@dataclass(frozen=True)
class Module:
    name: str  # dotted import name; a package is its __init__.py
    source: str
    is_package: bool


def package_modules(root: Path | None = None) -> dict[str, Module]:
    """Every module of ``peagle_nb`` and ``peagle_kernels`` under the repository ``root``, by dotted name."""
    root = root or paths.repo_root()
    out = {}
    for name, folder in ROOTS.items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = [name, *path.relative_to(root / folder).with_suffix("").parts]
            is_package = parts[-1] == "__init__"
            if is_package:
                parts = parts[:-1]
            out[".".join(parts)] = Module(".".join(parts), path.read_text(encoding="utf-8"), is_package)
    return out


def imported_modules(source: str, module: str, is_package: bool, known: set[str] | dict) -> set[str]:
    """The known modules ``source`` imports: ``from pkg import name`` counts ``pkg.name`` where that is a module
    and ``pkg`` (its ``__init__``) otherwise; relative imports are resolved against ``module``."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out |= {_longest_known(a.name, known) for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")
                parts = parts[: len(parts) - node.level + 1] if is_package else parts[: -node.level]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                out.add(full if full in known else _longest_known(base, known))
    out.discard(None)
    return out


def _longest_known(name: str, known) -> str | None:
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in known:
            return ".".join(parts[:end])
    return None


def _parent(name: str, known) -> set[str]:
    """The package whose ``__init__`` Python runs before ``name`` (importing a module imports its package)."""
    parent = name.rpartition(".")[0]
    return {parent} if parent in known else set()


def notebook_code(path: Path) -> str:
    """The code cells of a notebook as one Python source; IPython lines (``%magic``, ``!shell``) become comments."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    chunks = []
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        chunks.append("\n".join("# " + line if line.lstrip().startswith(("%", "!")) else line
                                for line in text.splitlines()))
    return "\n\n".join(chunks) + "\n"


def reachable(start: set[str], edges: dict[str, set[str]]) -> set[str]:
    """``start`` and every module it imports, directly or through others."""
    seen, todo = set(), list(start)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(edges.get(name, ()))
    return seen


def named_notebooks(source: str) -> list[str]:
    """The notebook numbers a module's docstrings (module, classes, functions) name, in order."""
    tree = ast.parse(source)
    docs = [ast.get_docstring(n) or "" for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
    found: list[str] = []
    for match in _NAMED.finditer("\n".join(docs)):
        numbers = re.findall(r"\d\d", match.group(1))
        if re.search(r"\d\d\s*[-–]\s*\d\d", match.group(1)) and len(numbers) == 2:  # a range, 01-03
            numbers = [f"{n:02d}" for n in range(int(numbers[0]), int(numbers[1]) + 1)]
        found += [n for n in numbers if n not in found]
    return sorted(found)


@dataclass(frozen=True)
class ModuleMap:
    modules: dict[str, Module]
    direct: dict[str, set[str]]  # notebook number -> modules its code cells import
    used: dict[str, set[str]]  # notebook number -> modules it runs, directly or through others
    explained_in: dict[str, list[str]]  # module -> notebook numbers its docstrings name


def build(root: Path | None = None) -> ModuleMap:
    root = root or paths.repo_root()
    modules = package_modules(root)
    edges = {m.name: (imported_modules(m.source, m.name, m.is_package, modules) | _parent(m.name, modules)) - {m.name}
             for m in modules.values()}
    direct, used = {}, {}
    for spec in SERIES:
        code = notebook_code(root / "notebooks" / spec.filename)
        direct[spec.number] = imported_modules(code, "__notebook__", False, modules)
        used[spec.number] = reachable(direct[spec.number], edges)
    explained = {name: named_notebooks(m.source) for name, m in modules.items()}
    return ModuleMap(modules, direct, used, explained)


def _names(modules) -> str:
    return ", ".join(f"`{m}`" for m in sorted(modules)) or "-"


def markdown(mm: ModuleMap | None = None) -> str:
    """The ``docs/where_things_are.md`` page."""
    mm = mm or build()
    numbers = [s.number for s in SERIES]
    lines = ["# Where things are", "",
             "Generated by `python -m peagle_nb.lab.notebooks.module_map` from the notebooks' code cells and the "
             "package's imports; `tests/test_module_map.py` checks that this page is what it generates. A module "
             "counts as used by a notebook when a code cell imports it or when a module used by the notebook "
             "imports it (imports inside functions included; a package's `__init__` runs before its modules).", "",
             "## Each notebook and the modules it uses", ""]
    for spec in SERIES:
        n = spec.number
        lines += [f"### {n} [{spec.slug.replace('_', ' ')}](../notebooks/{spec.filename})", "",
                  f"- imports: {_names(mm.direct[n])}",
                  f"- through those: {_names(mm.used[n] - mm.direct[n])}", ""]
    lines += ["## Each module and the notebook that explains it", "",
              "*Explained in*: the notebooks its docstrings name. *Imported by* / *used through others by*: the "
              "notebooks whose code cells import it, and those that reach it only through other modules.", "",
              "| module | explained in | imported by | used through others by |", "|---|---|---|---|"]
    for name in sorted(mm.modules):
        importers = [n for n in numbers if name in mm.direct[n]]
        through = [n for n in numbers if name in mm.used[n] and name not in mm.direct[n]]
        lines.append(f"| `{name}` | {', '.join(mm.explained_in[name]) or '-'} | "
                     f"{', '.join(importers) or '-'} | {', '.join(through) or '-'} |")
    unused = sorted(set(mm.modules) - set().union(*mm.used.values()))
    lines += ["", "## Modules no notebook uses", "",
              f"{len(unused)} modules that no notebook reaches, "
              "even through other modules: the command line, the lab's tools behind the notebooks (sweeps, "
              "training on a GPU, results tables, the notebook runner) and the trainers `peagle-nb train` runs.", "",
              _names(unused), "", "## Front and lab", "",
              "The front is what the notebooks teach; the lab (`peagle_nb.lab`) is the tooling behind it, which "
              "imports the front and is never imported by it (`tests/test_layers.py`).", "",
              "| part | modules | lines |", "|---|---|---|"]
    for part, (count, size) in part_sizes(mm.modules).items():
        lines.append(f"| {part} | {count} | {size} |")
    return "\n".join(lines + [""])


PARTS = {"peagle_nb": "front (`peagle_nb` outside the lab and the CLI)", "peagle_nb.lab": "lab (`peagle_nb.lab`)",
         "peagle_nb.cli": "CLI (`peagle_nb.cli`)", "peagle_kernels": "kernels (`peagle_kernels`)"}


def part_sizes(modules: dict[str, Module]) -> dict[str, tuple[int, int]]:
    """(modules, lines) of each part of ``PARTS``: a module belongs to the longest prefix that holds it."""
    sizes = {label: (0, 0) for label in PARTS.values()}
    for m in modules.values():
        prefix = max((p for p in PARTS if m.name == p or m.name.startswith(p + ".")), key=len)
        count, lines = sizes[PARTS[prefix]]
        sizes[PARTS[prefix]] = (count + 1, lines + len(m.source.splitlines()))
    return sizes


def write(root: Path | None = None) -> Path:
    root = root or paths.repo_root()
    out = root / PAGE
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(markdown(build(root)), encoding="utf-8")
    return out


if __name__ == "__main__":
    print(f"wrote {write()}", file=sys.stderr)
