"""Tools for the notebook series: run it, report it, check its hygiene, write notebooks, map notebooks to modules."""
