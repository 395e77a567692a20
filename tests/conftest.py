"""Shared fixtures. Notebook tests execute notebooks through the same runner as `peagle-nb run-notebooks`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from peagle_nb.machine import runtime_env

runtime_env.apply_defaults()

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def executed_dir(tmp_path_factory) -> Path:
    """Where notebook tests write executed notebooks (kept under build/ when PEAGLE_NB_KEEP is set)."""
    keep = os.environ.get("PEAGLE_NB_KEEP")
    if keep:
        path = Path(keep)
        path.mkdir(parents=True, exist_ok=True)
        return path
    return tmp_path_factory.mktemp("executed")


@pytest.fixture(scope="session")
def run_notebook(executed_dir):
    """run_notebook(filename, **extra_params) -> NotebookResult, in smoke mode; fails with the cell's error."""
    from peagle_nb.lab.notebooks.runner import execute_notebook
    from peagle_nb.notebook.series import SERIES

    budgets = {s.filename: s.timeout_s for s in SERIES}

    def _run(filename: str, **extra):
        params = {"SMOKE": True, **extra}
        result = execute_notebook(filename, executed_dir, params, timeout_s=budgets.get(filename, 900),
                                  raise_on_failure=False)
        if result.status != "ok":
            pytest.fail(f"{filename} {result.status}: {result.error}", pytrace=False)
        return result

    return _run
