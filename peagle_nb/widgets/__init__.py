"""ipywidgets dashboards (presentation layer): thin callbacks over pure functions."""
