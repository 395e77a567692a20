"""Shared fixtures. Notebook tests execute notebooks through the same runner as `peagle-nb run-notebooks`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from peagle_nb.machine import runtime_env

runtime_env.apply_defaults()

REPO = Path(__file__).resolve().parent.parent

# `make test` runs two test files at once (pytest-xdist, one worker per core of a 2-core CI machine). Every process
# then gets one thread unless the user chose otherwise: two workers whose torch (or a notebook kernel's, a vLLM
# server's: they inherit this) runs two threads each contend for the cores, and a step that waits for a
# descheduled thread is far slower (560-590 ms instead of 3-4 ms, measured in peagle_nb.machine.cpu_threads).
PARALLEL_RUN = bool(os.environ.get("PYTEST_XDIST_WORKER"))
if PARALLEL_RUN and "OMP_NUM_THREADS" not in os.environ:
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch

    torch.set_num_threads(1)  # torch may already have read the variable

# Under xdist each worker takes whole files from one queue: the heaviest first (marks say which), so that no long
# file starts last while the other worker has nothing left to do.
HEAVY_MARKS = {"slow": 4, "notebook": 2, "vllm": 1}


# Files that start a vLLM engine or server slow each other down when both workers start one at once (notebooks 05
# and 06 took 219-251 s side by side in CI, 111-125 s one at a time): at least this many other files separate two of
# them in the queue (measured after: 164-171 s and 197-201 s, two fresh-clone CI runs).
VLLM_GAP = 2


def heavy_files_first(items) -> None:
    """Sort ``items`` so that files with heavier marks come first, files marked ``vllm`` spread ``VLLM_GAP`` apart
    where other files allow it; each file's tests stay together and in order."""
    weight: dict = {}
    vllm: set = set()
    for item in items:
        w = sum(v for m, v in HEAVY_MARKS.items() if item.get_closest_marker(m))
        weight[item.path] = max(weight.get(item.path, 0), w)
        if item.get_closest_marker("vllm"):
            vllm.add(item.path)
    files = sorted(weight, key=lambda path: -weight[path])  # stable: the files' own order among equals
    order, waiting = [], []
    for path in files:
        if path in vllm and (waiting or vllm & set(order[-VLLM_GAP:])):
            waiting.append(path)  # after enough other files, before any lighter vllm file
        else:
            order.append(path)
        while waiting and not vllm & set(order[-VLLM_GAP:]):
            order.append(waiting.pop(0))
    rank = {path: i for i, path in enumerate(order + waiting)}
    items.sort(key=lambda item: rank[item.path])


def pytest_collection_modifyitems(config, items):
    if PARALLEL_RUN:  # one process: the files' own order
        heavy_files_first(items)


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
