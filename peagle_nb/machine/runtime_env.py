"""Environment defaults that real vLLM needs on the machines this suite runs on.

Explained in notebook 00. vLLM's CPU build sizes its KV cache from NUMA node 0, which on small VMs
reports far less memory than the machine has, so it needs an explicit ``VLLM_CPU_KVCACHE_SPACE``
(GiB); nothing may be fetched from the HuggingFace hub at run time, so ``HF_HUB_OFFLINE=1``.
Values the user already set are kept.
"""

from __future__ import annotations

import os

DEFAULTS: dict[str, str] = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def apply_defaults(environ: dict[str, str] | None = None) -> dict[str, str]:
    """Set each default that is not already set; return the ones that were set now."""
    env = os.environ if environ is None else environ
    applied = {}
    for key, value in DEFAULTS.items():
        if key not in env:
            env[key] = value
            applied[key] = value
    return applied
