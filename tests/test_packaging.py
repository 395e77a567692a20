"""pyproject lists packages explicitly (kernels/ is mapped to peagle_kernels): keep the list complete."""

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, from PyPI (the dev extra installs it there)
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent


def test_every_subpackage_is_listed():
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(cfg["packages"])
    found = {"peagle_kernels"} | {
        ".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "peagle_nb").rglob("__init__.py")
    }
    assert found <= listed, f"add to [tool.setuptools].packages: {sorted(found - listed)}"
    assert cfg["package-dir"]["peagle_kernels"] == "kernels"


def test_kernels_importable_under_unclashing_name():
    import peagle_kernels

    # resolved: a development checkout may reach kernels/ through a peagle_kernels symlink
    assert Path(peagle_kernels.__file__).resolve().parent == (REPO / "kernels").resolve()
