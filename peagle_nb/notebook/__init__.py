"""Notebook-facing helpers: ``record`` numbers, ``gate`` optional cells, run and check notebooks."""

from peagle_nb.notebook.gates import gate, skipped_gates
from peagle_nb.notebook.record import RECORD_MIME, read_records, record, recorded

__all__ = ["RECORD_MIME", "gate", "read_records", "record", "recorded", "skipped_gates"]
