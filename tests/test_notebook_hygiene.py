"""Hygiene gates that run before any notebook executes, and proof that each gate fails when violated."""

from __future__ import annotations

import importlib
import json
import pkgutil
import shutil
from pathlib import Path

import pytest

from peagle_nb.lab.notebooks.authoring import code, md, params, write_notebook
from peagle_nb.lab.notebooks.hygiene import (
    ALLOWED_FIGURES,
    check_notebook,
    check_series,
    literal_parameters,
    published_figures,
    typed_figures,
)

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_notebook_is_clean(path):
    assert check_notebook(path) == []


def test_series_matches_registry_and_readme():
    assert check_series(REPO / "notebooks", REPO / "README.md") == []


def _notebook_test_modules():
    import tests.notebooks as pkg

    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.startswith("test_"):
            yield importlib.import_module(f"tests.notebooks.{info.name}")


def test_every_notebook_has_a_test_module():
    tested = {m.NOTEBOOK for m in _notebook_test_modules()}
    assert tested == {p.name for p in NOTEBOOKS}


def test_injected_parameters_are_declared():
    """Papermill warns, but does not fail, on an undeclared parameter: a typo would go unnoticed."""
    import papermill

    for module in _notebook_test_modules():
        declared = set(papermill.inspect_notebook(str(REPO / "notebooks" / module.NOTEBOOK)))
        injected = set(module.SMOKE_PARAMETERS) | {"SMOKE"}
        assert injected <= declared, f"{module.NOTEBOOK}: injects undeclared {sorted(injected - declared)}"


# ---- planted violations: each gate must catch its problem --------------------------------------

FIRST_SCREEN = "# demo\n\nFull mode costs one more print; `SMOKE = None` picks the mode from this machine."


def _clean(tmp_path: Path, name="00_demo.ipynb") -> Path:
    first_code = "from peagle_nb.notebook import record\nprint(K if SMOKE else 2 * K)"
    return write_notebook(tmp_path / name, [md(FIRST_SCREEN), params("SMOKE = None\nK = 7"), code(first_code)])


def _edit(path: Path, fn) -> Path:
    nb = json.loads(path.read_text())
    fn(nb)
    path.write_text(json.dumps(nb))
    return path


def test_clean_notebook_passes(tmp_path):
    assert check_notebook(_clean(tmp_path)) == []


@pytest.mark.parametrize(
    "plant, expected",
    [
        (lambda nb: nb["cells"][2].update(outputs=[{"output_type": "stream", "name": "stdout", "text": "7"}]),
         "committed outputs"),
        (lambda nb: nb["cells"][2].update(execution_count=3), "execution count"),
        (lambda nb: nb["metadata"]["kernelspec"].update(name="conda-env-py"), "kernelspec name"),
        (lambda nb: nb["metadata"].update(widgets={"state": {}}), "stray notebook metadata"),
        (lambda nb: nb["cells"][2]["metadata"].update(collapsed=True), "stray cell metadata"),
        (lambda nb: nb["cells"][1]["metadata"].update(tags=[]), "0 cells tagged 'parameters'"),
        (lambda nb: nb["cells"][2]["metadata"].update(tags=["parameters"]), "2 cells tagged 'parameters'"),
        (lambda nb: nb["cells"][1].update(source="SMOKE = None\nK = 3 + 4"), "not a literal"),
        (lambda nb: nb["cells"][1].update(source="SMOKE = None\nimport os"), "only `NAME = literal`"),
        (lambda nb: nb["cells"][1].update(source="K = 7"), "must declare SMOKE"),
        (lambda nb: nb["cells"][1].update(source="SMOKE = False\nK = 7"), "commit SMOKE = None"),
        (lambda nb: nb["cells"][0].update(source="# demo"), "what full mode costs"),
        (lambda nb: nb["cells"].insert(0, nb["cells"].pop(2)), "what full mode costs"),
        (lambda nb: nb["cells"][2].update(source="print(K if SMOKE else 0)\nfrom peagle_nb.notebook import record"),
         "reads SMOKE before importing peagle_nb.notebook"),
        (lambda nb: nb["cells"].append(md("P-EAGLE reached tau 2.37 here.")), "decimal figure 2.37 typed"),
        (lambda nb: nb["cells"][2].pop("id"), "no cell id"),
        (lambda nb: nb["cells"][2].update(id=nb["cells"][1]["id"]), "a repeated cell id"),
    ],
    ids=["outputs", "exec_count", "kernel", "nb_metadata", "cell_metadata", "no_params", "two_params",
         "computed_param", "import_in_params", "no_smoke", "smoke_committed_false", "first_screen_silent",
         "first_cell_code", "smoke_read_too_early", "typed_figure", "no_cell_id", "repeated_cell_id"],
)
def test_planted_violation_is_caught(tmp_path, plant, expected):
    path = _edit(_clean(tmp_path), plant)
    problems = check_notebook(path)
    assert any(expected in p for p in problems), problems


def test_literal_parameters_accepts_annotations_and_comments():
    assert literal_parameters("# c\nSMOKE: bool = True\nKS = [1, 2]  # list\nNAME = 'x'") == {
        "SMOKE": True, "KS": [1, 2], "NAME": "x"}


def test_series_gaps_and_readme_mismatch_are_caught(tmp_path):
    nbdir = tmp_path / "notebooks"
    nbdir.mkdir()
    for nb in NOTEBOOKS:
        shutil.copy(nb, nbdir / nb.name)
    readme = tmp_path / "README.md"
    shutil.copy(REPO / "README.md", readme)
    assert check_series(nbdir, readme) == []
    # a gap in the numbering
    _clean(nbdir, f"{len(NOTEBOOKS) + 1:02d}_gap.ipynb")
    problems = check_series(nbdir, readme)
    assert any("not contiguous" in p for p in problems), problems
    assert any("README notebook table" in p for p in problems), problems
    assert any("SERIES lists" in p for p in problems), problems


def test_typed_figures_spare_published_figures_versions_and_stated_constants():
    published = published_figures()
    assert {"1.69", "3.94", "2.87"} <= published  # the blog's ratio and acceptance lengths
    nb = {"cells": [md("The blog's 1.69x; tau 3.94 at K=7; arXiv 2602.01469; vLLM >= 0.16 and CUDA 12.9."),
                    md("COD keeps r = 0.7 of positions, at least 0.2; measured 4.13-4.19 here and 0.5 there."),
                    code("x = 1.23")]}
    found = typed_figures(nb, "03_peagle_mask_token_drafter.ipynb")
    assert [(cell, fig) for cell, fig, _ in found] == [(1, "4.13"), (1, "4.19"), (1, "0.5")]
    assert typed_figures(nb, "00_other.ipynb", published)[0][1] == "0.7"  # constants are allowed per notebook
    assert typed_figures(nb, "03_peagle_mask_token_drafter.ipynb", frozenset())[0][1] == "1.69"


def test_allowed_figures_are_few_and_each_has_its_reason():
    entries = [(nb, fig, why) for nb, figs in ALLOWED_FIGURES.items() for fig, why in figs.items()]
    assert len(entries) <= 8, "the allow-list is for stated constants only: print measured figures from data"
    for nb, fig, why in entries:
        assert (REPO / "notebooks" / nb).is_file(), nb
        assert len(why) > 15, (nb, fig)
        source = json.loads((REPO / "notebooks" / nb).read_text())["cells"]
        assert any(fig in c["source"] for c in source if c["cell_type"] == "markdown"), f"{nb}: {fig} no longer used"
