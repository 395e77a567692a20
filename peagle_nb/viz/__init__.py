"""Plotly figures for the notebooks (presentation layer): functions return figures, never ``.show()``."""
