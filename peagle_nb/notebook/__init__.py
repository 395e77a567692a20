"""Notebook-facing helpers: ``record`` numbers, ``gate`` optional cells, smoke or full mode, the series' list.
Running, reporting and checking the notebooks is lab work: ``peagle_nb.lab.notebooks``.

Importing this package in a notebook kernel also resolves ``SMOKE = None`` from the parameters cell
(:mod:`peagle_nb.notebook.modes`): every notebook imports it before it first reads ``SMOKE``.
"""

from peagle_nb.notebook import modes as _modes
from peagle_nb.notebook.gates import gate, skipped_gates
from peagle_nb.notebook.record import RECORD_MIME, read_records, record, recorded

__all__ = ["RECORD_MIME", "gate", "read_records", "record", "recorded", "skipped_gates"]

_modes.install()
