"""Sweeps that write ``data/results/``: the engine over K, lengths and temperatures; vLLM over K and concurrency."""
