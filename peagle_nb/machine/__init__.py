"""This machine: what it can run, its CPU thread count for timing, environment defaults for vLLM."""
