"""The speculative config vLLM takes, built field by field, and the engine arguments of a preset.
Explained in notebook 05; notebook 06 deploys the same config (``peagle_nb.sagemaker.plan`` calls
:func:`speculative_config` and :func:`speculative_config_json` too, so a preset reaches vLLM identically
through ``peagle-nb serve`` and through the SageMaker AI container).

    {"method": "eagle3",            # always: P-EAGLE is served by vLLM's EAGLE-3 drafter code path
     "model": "<head folder or repo>",
     "num_speculative_tokens": K,   # draft tokens per step
     "parallel_drafting": true}     # P-EAGLE: all K drafts in ONE drafter pass (omit for EAGLE-3)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from peagle_nb.models import checkpoint
from peagle_nb.serving.presets import Preset, get_preset


def speculative_config(head: str | Path, k: int, parallel_drafting: bool, **extra: Any) -> dict[str, Any]:
    """vLLM's ``speculative_config`` for an EAGLE-3 (``parallel_drafting=False``) or P-EAGLE head."""
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"num_speculative_tokens must be a positive integer, got {k!r}")
    cfg: dict[str, Any] = {"method": "eagle3", "model": str(head), "num_speculative_tokens": k}
    if parallel_drafting:
        cfg["parallel_drafting"] = True
    cfg.update(extra)
    return cfg


def speculative_config_json(spec: dict[str, Any]) -> str:
    """One line, no spaces: the value of ``--speculative-config`` and of ``SM_VLLM_SPECULATIVE_CONFIG`` (the
    container passes an environment value as one argument, so the JSON must not contain a newline)."""
    return json.dumps(spec, separators=(",", ":"))


def check_local_head(head: str | Path, target: str | Path, k: int, method: str) -> dict | None:
    """Run ``checkpoint.check_head_against_target`` when both are local folders (hub ids are checked by
    vLLM itself), and make sure the method matches the head: a P-EAGLE config on an EAGLE-3 head would
    fail deep in vLLM with a less helpful message."""
    head, target = Path(head), Path(target)
    if not (head / "config.json").is_file() or not (target / "config.json").is_file():
        return None
    info = checkpoint.check_head_against_target(head, target, k=k)
    if method == "peagle" and info["kind"] != "peagle":
        raise checkpoint.HeadCheckpointError(
            f"{head} is an EAGLE-3 head (no mask_token_id / mask_hidden) but parallel drafting was asked for. "
            f"Fix: serve it with method 'eagle3' (no parallel_drafting), or use a P-EAGLE head.")
    return info


def preset_speculative_config(preset: str | Preset, k: int | None = None,
                              head: str | None = None) -> dict[str, Any] | None:
    """The preset's speculative config; ``head`` replaces where the head is read from (the SageMaker
    container mounts it at ``/opt/ml/additional-model-data-sources/<channel>``)."""
    p = get_preset(preset) if isinstance(preset, str) else preset
    if p.method == "none":
        return None
    return speculative_config(head or p.head_path(), k or p.k, parallel_drafting=(p.method == "peagle"))


def server_args(preset: str | Preset, k: int | None = None, check: bool = True,
                extra: list[str] | None = None) -> list[str]:
    """Arguments for ``python -m vllm.entrypoints.openai.api_server`` (host/port added by the server)."""
    p = get_preset(preset) if isinstance(preset, str) else preset
    spec = preset_speculative_config(p, k)
    if check and spec is not None:
        check_local_head(p.head_path(), p.target_path(), spec["num_speculative_tokens"], p.method)
    args = ["--model", p.target_path(), *p.engine_flags]
    if spec is not None:
        args += ["--speculative-config", speculative_config_json(spec)]
    return args + list(extra or [])


def llm_kwargs(preset: str | Preset, k: int | None = None, check: bool = True) -> dict[str, Any]:
    """Keyword arguments for ``vllm.LLM`` equivalent to :func:`server_args` (offline engine)."""
    p = get_preset(preset) if isinstance(preset, str) else preset
    spec = preset_speculative_config(p, k)
    if check and spec is not None:
        check_local_head(p.head_path(), p.target_path(), spec["num_speculative_tokens"], p.method)
    kw: dict[str, Any] = {"model": p.target_path(), "speculative_config": spec}
    flags = list(p.engine_flags)
    i = 0
    while i < len(flags):  # map the CLI flags we use onto LLM kwargs
        name = flags[i].lstrip("-").replace("-", "_")
        if i + 1 < len(flags) and not flags[i + 1].startswith("--"):
            value: Any = flags[i + 1]
            kw[name] = int(value) if value.isdigit() else value
            i += 2
        else:
            if name.startswith("no_"):
                kw[name[3:]] = False
            else:
                kw[name] = True
            i += 1
    return kw
