"""docs/where_things_are.md is exactly what peagle_nb.lab.notebooks.module_map makes from the notebooks and the package,
and the import graph behind it resolves imports the way Python does."""

import json

import pytest

from peagle_nb.files import paths
from peagle_nb.lab.notebooks import module_map
from peagle_nb.notebook.series import SERIES

KNOWN = {"peagle_nb", "peagle_nb.files.paths", "peagle_nb.engine", "peagle_nb.engine.decoder", "peagle_nb.serving",
         "peagle_nb.serving.server", "peagle_kernels", "peagle_kernels.greedy_verify"}


@pytest.fixture(scope="module")
def built():
    return module_map.build()


def test_docs_page_is_the_generated_one(built):
    page = (paths.repo_root() / module_map.PAGE).read_text(encoding="utf-8")
    assert page == module_map.markdown(built), (
        "docs/where_things_are.md is stale: regenerate it with `python -m peagle_nb.lab.notebooks.module_map`")
    readme = (paths.repo_root() / "README.md").read_text(encoding="utf-8")
    assert "(docs/where_things_are.md)" in readme


@pytest.mark.parametrize("source,expected", [
    ("from peagle_nb.files import paths\n", {"peagle_nb.files.paths"}),  # a module, not the package around it
    ("from peagle_nb.engine import SpecDecoder\n", {"peagle_nb.engine"}),  # a name: the package's __init__
    ("import peagle_kernels.greedy_verify as gv\nimport numpy\n", {"peagle_kernels.greedy_verify"}),
    ("def f():\n    from peagle_nb.engine.decoder import SpecDecoder\n", {"peagle_nb.engine.decoder"}),
    ("from ..serving import server\n", {"peagle_nb.serving.server"}),  # relative, from peagle_nb.engine.x
])
def test_imports_resolve_to_modules(source, expected):
    assert module_map.imported_modules(source, "peagle_nb.engine.x", False, KNOWN) == expected


def test_notebook_magics_do_not_break_parsing(tmp_path):
    nb = {"cells": [{"cell_type": "markdown", "source": "import peagle_nb.serving"},
                    {"cell_type": "code", "source": ["%matplotlib inline\n", "!pip list\n",
                                                     "from peagle_nb.files import paths\n"]}]}
    path = tmp_path / "x.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    code = module_map.notebook_code(path)
    assert module_map.imported_modules(code, "__notebook__", False, KNOWN) == {"peagle_nb.files.paths"}


def test_docstrings_name_notebooks_with_ranges_and_lists():
    source = '"""Explained in notebooks 01-03 and notebook 07."""\n\ndef f():\n    """See notebooks 04, 05 and 08."""\n'
    assert module_map.named_notebooks(source) == ["01", "02", "03", "04", "05", "07", "08"]
    assert module_map.named_notebooks("# notebook 06 in a comment does not count\n") == []


def test_modules_reached_through_others_and_through_their_package(built):
    """Notebook 05 uses the serving presets, which read the public heads' table: used, though never imported by
    the notebook; importing any module of a package runs the package's __init__."""
    assert "peagle_nb.serving.presets" in built.direct["05"]
    assert "peagle_nb.models.public_heads" in built.used["05"] - built.direct["05"]
    assert "peagle_nb.models" in built.used["05"]
    assert not any("peagle_nb.cli.train_cmd" in used for used in built.used.values())


def test_docstrings_name_only_notebooks_that_exist(built):
    numbers = {s.number for s in SERIES}
    stale = {m: n for m, named in built.explained_in.items() for n in named if n not in numbers}
    assert stale == {}


def test_parts_count_modules_and_lines_by_longest_prefix():
    mods = {name: module_map.Module(name, "x = 1\n" * lines, False) for name, lines in
            [("peagle_nb.engine.decoder", 3), ("peagle_nb.lab.sweeps.engine_sweep", 5), ("peagle_nb.lab", 1),
             ("peagle_nb.cli.eval_cmd", 2), ("peagle_kernels.greedy_verify", 7), ("peagle_nb.labels", 4)]}
    sizes = module_map.part_sizes(mods)
    assert list(sizes.values()) == [(2, 7), (2, 6), (1, 2), (1, 7)]  # front, lab, CLI, kernels; labels is front
