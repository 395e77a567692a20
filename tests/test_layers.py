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
    ("peagle_nb.dashboard", 4),
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


def imports_of(path: Path, module: str) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import: resolve against the package
                base = module.split(".")[: -node.level] if not path.name == "__init__.py" else module.split(".")[
                    : len(module.split(".")) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            out.add(name)
            out |= {f"{name}.{a.name}" for a in node.names}
    return out


def violations() -> list[str]:
    found = []
    files = list((REPO / "peagle_nb").rglob("*.py")) + list((REPO / "kernels").rglob("*.py"))
    for path in files:
        mod = module_name(path)
        own = layer_of(mod)
        for imp in imports_of(path, mod):
            if mod.startswith("peagle_kernels") and imp.startswith("peagle_nb"):
                found.append(f"{mod} imports {imp}: kernels must not depend on peagle_nb")
                continue
            other = layer_of(imp)
            if other is not None and own is not None and other > own:
                found.append(f"{mod} (layer {own}) imports {imp} (layer {other})")
    return found


def test_dependencies_point_upwards():
    assert violations() == []


def test_checker_catches_a_planted_violation(tmp_path, monkeypatch):
    bad = REPO / "peagle_nb" / "_planted_violation_test.py"
    bad.write_text("from peagle_nb.cli import main\n")
    try:
        assert any("_planted_violation_test" in v for v in violations())
    finally:
        bad.unlink()
