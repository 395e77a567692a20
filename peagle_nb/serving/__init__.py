"""Serving P-EAGLE and EAGLE-3 heads with real vLLM (integration layer; vLLM is imported lazily, install
the `cpu` or `gpu` extra). Explained in notebook 05.

- ``presets``: target + head + K + engine flags (tiny heads, public amazon/* P-EAGLE heads, EAGLE-3 baselines)
- ``config``: the speculative config, field by field; server / ``vllm.LLM`` arguments of a preset
- ``offline``: in-process ``vllm.LLM`` helpers, spec-decode counters, drafter pass counting
- ``server``: ``ManagedVllmServer``, the OpenAI-compatible server as a subprocess that never outlives us
- ``metrics``: acceptance from ``/metrics`` (Prometheus parser)
"""
