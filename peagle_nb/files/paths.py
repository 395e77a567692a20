"""Where the suite's files live. Every path helper resolves from the repository checkout, and can be
redirected with ``PEAGLE_NB_ROOT`` (e.g. when the package is installed non-editable elsewhere)."""

from __future__ import annotations

import os
from pathlib import Path


def repo_root() -> Path:
    """The checkout that holds ``notebooks/`` and ``data/``."""
    env = os.environ.get("PEAGLE_NB_ROOT")
    if env:
        return Path(env).resolve()
    here = Path(__file__).resolve().parents[2]  # peagle_nb/files/paths.py -> the checkout
    if (here / "notebooks").is_dir():
        return here
    cwd = Path.cwd().resolve()
    for candidate in (cwd, *cwd.parents):
        if (candidate / "notebooks").is_dir() and (candidate / "peagle_nb").is_dir():
            return candidate
    raise FileNotFoundError(
        "Cannot find the peagle-notebooks checkout (a folder with notebooks/ and peagle_nb/). "
        "Run from inside the clone or set PEAGLE_NB_ROOT=/path/to/peagle-notebooks."
    )


def notebooks_dir() -> Path:
    return repo_root() / "notebooks"


def data_dir() -> Path:
    return repo_root() / "data"


def models_dir() -> Path:
    return data_dir() / "models"


def prompts_dir() -> Path:
    return data_dir() / "prompts"


def results_dir() -> Path:
    return data_dir() / "results"
