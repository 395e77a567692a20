"""The direction of dependencies (see peagle_nb/__init__.py): a layer imports only the layers above it.

Layer of a module = the first prefix in LAYERS that matches its dotted name. Integration modules
(vLLM, SageMaker, benchmark client) and presentation modules (notebook tools, plots, widgets, CLI) may
not be imported by core modules; ``peagle_kernels`` imports nothing of ``peagle_nb``.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Lower number = lower layer (more fundamental). Unlisted peagle_nb modules are core (2).
LAYERS = [
    ("peagle_kernels", 1),
    ("peagle_nb.cli", 5),
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
        if isinstance(node, ast.Import):
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
               ("peagle_kernels._planted", "import peagle_nb.paths\n", False),
               ("peagle_nb.engine._planted", "from ..serving import server\n", False)]
    found = violations(planted)
    assert any("peagle_nb._planted_core (layer 2) imports peagle_nb.cli" in v for v in found)
    assert any("peagle_kernels._planted imports peagle_nb.paths" in v for v in found)
    assert any("peagle_nb.engine._planted (layer 2) imports peagle_nb.serving" in v for v in found)
    assert violations([("peagle_nb.cli._planted", "from peagle_nb.engine import SpecDecoder\n", False)]) == []


def test_every_listed_layer_exists():
    """A prefix in LAYERS that names no module would silently never match."""
    for prefix, _ in LAYERS:
        top, *rest = prefix.split(".")
        path = REPO.joinpath("kernels" if top == "peagle_kernels" else top, *rest)
        assert path.is_dir() or path.with_suffix(".py").is_file(), f"LAYERS names {prefix}, which does not exist"
