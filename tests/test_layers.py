"""The direction of dependencies (see peagle_nb/__init__.py): a layer imports only the layers above it, and the
front never imports the lab.

Layer of a module = the first prefix in LAYERS that matches its dotted name. Integration modules
(vLLM, SageMaker, benchmark client) and presentation modules (notebook tools, plots, widgets, CLI) may
not be imported by core modules; ``peagle_kernels`` imports nothing of ``peagle_nb``.

Front and lab: ``peagle_nb.lab`` (sweeps, benchmark harnesses, training runs, results tables, the notebook runner)
imports the front, the modules the notebooks teach; no front module imports it, not even inside a function or
through ``importlib.import_module("...")``. The faces (``peagle_nb.cli`` here, ``notebooks/`` outside the
package) may use both.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Lower number = lower layer (more fundamental). Unlisted peagle_nb modules are core (2).
LAYERS = [
    ("peagle_kernels", 1),
    ("peagle_nb.cli", 5),
    ("peagle_nb.lab", 4),
    ("peagle_nb.notebook", 4),
    ("peagle_nb.viz", 4),
    ("peagle_nb.widgets", 4),
    ("peagle_nb.serving", 3),
    ("peagle_nb.bench", 3),
    ("peagle_nb.sagemaker", 3),
    ("peagle_nb", 2),
]


def layer_of(module: str) -> int | None:
    for prefix, layer in LAYERS:
        if module == prefix or module.startswith(prefix + "."):
            return layer
    return None


def module_name(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = list(rel.parts)
    if parts[0] == "kernels":
        parts[0] = "peagle_kernels"
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every module ``source`` (the text of ``module``) imports, relative imports resolved."""
    tree = ast.parse(source)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _is_import_module(node.func) and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            out.add(node.args[0].value)  # importlib.import_module("peagle_nb.x"): an import all the same
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import: resolve against the package
                parts = module.split(".")
                base = parts[: len(parts) - node.level + 1] if is_package else parts[: -node.level]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            out.add(name)
            out |= {f"{name}.{a.name}" for a in node.names}
    return out


def _is_import_module(func: ast.expr) -> bool:
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return name in ("import_module", "__import__")


def repository_modules() -> list[tuple[str, str, bool]]:
    """(module name, source, is a package) of every module in peagle_nb/ and kernels/."""
    files = list((REPO / "peagle_nb").rglob("*.py")) + list((REPO / "kernels").rglob("*.py"))
    return [(module_name(p), p.read_text(encoding="utf-8"), p.name == "__init__.py") for p in files]


def violations(modules: list[tuple[str, str, bool]]) -> list[str]:
    found = []
    for mod, source, is_package in modules:
        own = layer_of(mod)
        for imp in imports_of(source, mod, is_package):
            if mod.startswith("peagle_kernels") and imp.startswith("peagle_nb"):
                found.append(f"{mod} imports {imp}: kernels must not depend on peagle_nb")
                continue
            other = layer_of(imp)
            if other is not None and own is not None and other > own:
                found.append(f"{mod} (layer {own}) imports {imp} (layer {other})")
    return found


def test_dependencies_point_upwards():
    assert violations(repository_modules()) == []


def test_checker_catches_planted_violations():
    """Modules that exist only in memory: a core module importing the CLI, a kernel importing the package, and a
    relative import that resolves to an integration."""
    planted = [("peagle_nb._planted_core", "from peagle_nb.cli import main\n", False),
               ("peagle_kernels._planted", "import peagle_nb.files.paths\n", False),
               ("peagle_nb.engine._planted", "from ..serving import server\n", False)]
    found = violations(planted)
    assert any("peagle_nb._planted_core (layer 2) imports peagle_nb.cli" in v for v in found)
    assert any("peagle_kernels._planted imports peagle_nb.files.paths" in v for v in found)
    assert any("peagle_nb.engine._planted (layer 2) imports peagle_nb.serving" in v for v in found)
    assert violations([("peagle_nb.cli._planted", "from peagle_nb.engine import SpecDecoder\n", False)]) == []


LAB = "peagle_nb.lab"
FACES = ("peagle_nb.cli",)  # the command line: like a notebook, a face that may use the front and the lab


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def front_imports_of_lab(modules: list[tuple[str, str, bool]]) -> list[str]:
    """Every import of a lab module by a front module (any module of peagle_nb outside the lab and the faces)."""
    found = []
    for mod, source, is_package in modules:
        if not _within(mod, "peagle_nb") or _within(mod, LAB) or any(_within(mod, f) for f in FACES):
            continue
        found += [f"{mod} imports {imp}: the front never imports the lab" for imp in
                  sorted(imports_of(source, mod, is_package)) if _within(imp, LAB)]
    return found


def test_front_never_imports_lab():
    assert front_imports_of_lab(repository_modules()) == []


def test_lab_checker_catches_planted_front_imports():
    """In memory: a front module importing the lab at its top, inside a function, by a relative import and through
    importlib; the lab and the CLI importing the front and the lab are fine."""
    planted = [("peagle_nb.engine._planted_top", "from peagle_nb.lab.sweeps import engine_sweep\n", False),
               ("peagle_nb.models._planted_lazy", "def f():\n    import peagle_nb.lab.benchmarks.kernel_bench\n",
                False),
               ("peagle_nb.notebook._planted_rel", "from ..lab.notebooks import runner\n", False),
               ("peagle_nb.compare._planted_importlib",
                "import importlib\nm = importlib.import_module('peagle_nb.lab.records.results_table')\n", False)]
    found = front_imports_of_lab(planted)
    assert {v.split(" imports ")[0] for v in found} == {name for name, _, _ in planted}, found
    assert any("peagle_nb.engine._planted_top imports peagle_nb.lab.sweeps" in v for v in found)
    assert any("peagle_nb.models._planted_lazy imports peagle_nb.lab.benchmarks.kernel_bench" in v for v in found)
    assert any("peagle_nb.notebook._planted_rel imports peagle_nb.lab.notebooks" in v for v in found)
    assert any("peagle_nb.compare._planted_importlib imports peagle_nb.lab.records.results_table" in v for v in found)
    fine = [("peagle_nb.lab.sweeps._planted", "from peagle_nb.engine import evaluate\nimport peagle_nb.lab.records\n",
             False),
            ("peagle_nb.cli._planted", "from peagle_nb.lab.notebooks import runner\n", False)]
    assert front_imports_of_lab(fine) == []


def test_lab_is_a_package():
    """The checks above would pass vacuously if the lab moved away."""
    assert (REPO / "peagle_nb" / "lab" / "__init__.py").is_file()


def test_every_listed_layer_exists():
    """A prefix in LAYERS that names no module would silently never match."""
    for prefix, _ in LAYERS:
        top, *rest = prefix.split(".")
        path = REPO.joinpath("kernels" if top == "peagle_kernels" else top, *rest)
        assert path.is_dir() or path.with_suffix(".py").is_file(), f"LAYERS names {prefix}, which does not exist"


def import_cycles(modules: dict) -> list[list[str]]:
    """The import cycles among ``modules`` (name -> ``module_map.Module``): each strongly connected group of two or
    more modules, sorted. An edge is any import statement, inside a function too (it runs when the function is
    called); ``from pkg import name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg``."""
    from peagle_nb.lab.notebooks.module_map import imported_modules

    edges = {m.name: sorted(imported_modules(m.source, m.name, m.is_package, modules) - {m.name})
             for m in modules.values()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while not group or group[-1] != v:
                group.append(stack.pop())
            if len(group) > 1:
                cycles.append(sorted(group))

    for name in sorted(edges):
        if name not in index:
            visit(name)
    return sorted(cycles)


def test_no_import_cycles():
    from peagle_nb.lab.notebooks.module_map import package_modules

    assert import_cycles(package_modules(REPO)) == []


def test_cycle_finder_catches_planted_cycles():
    """In memory: two modules that import each other, one of them only inside a function, and a cycle of three
    closed by a relative import; an acyclic pair has none."""
    from peagle_nb.lab.notebooks.module_map import Module

    def mods(*specs):
        return {name: Module(name, source, False) for name, source in specs}

    pair = mods(("peagle_nb.models.a", "from peagle_nb.models import b\n"),
                ("peagle_nb.models.b", "def f():\n    from peagle_nb.models.a import g\n"))
    assert import_cycles(pair) == [["peagle_nb.models.a", "peagle_nb.models.b"]]
    three = mods(("peagle_nb.x.a", "import peagle_nb.x.b\n"), ("peagle_nb.x.b", "import peagle_nb.y.c\n"),
                 ("peagle_nb.y.c", "from ..x import a\n"))
    assert import_cycles(three) == [["peagle_nb.x.a", "peagle_nb.x.b", "peagle_nb.y.c"]]
    assert import_cycles(mods(("peagle_nb.models.a", "from peagle_nb.models import b\n"),
                              ("peagle_nb.models.b", "import torch\n"))) == []


def test_no_module_at_the_top_level():
    """Every module lives in a subpackage that names its job; the top level holds only the package's __init__."""
    flat = sorted(p.name for p in (REPO / "peagle_nb").glob("*.py") if p.name != "__init__.py")
    assert flat == [], f"move these into a subpackage (models, text, analysis, files, machine, lab, ...): {flat}"
