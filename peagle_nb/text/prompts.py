"""Prompt files: the one reader used by the engine, the benchmark client, serving and the notebooks.

A prompt file is JSONL with one object per line holding a string ``"prompt"`` (the held-out sets
``data/prompts/prose.jsonl``, ``code.jsonl`` and ``ja.jsonl`` also carry ``id``, ``domain`` and ``source``), or plain
text with one prompt per line. ``"prose"`` / ``"code"`` / ``"ja"`` name the shipped held-out sets.
"""

from __future__ import annotations

import json
from pathlib import Path

from peagle_nb.files import paths

DOMAINS = ("prose", "code", "ja")


def resolve(path_or_domain: str | Path) -> Path:
    """``"prose"``/``"code"``/``"ja"`` -> the shipped held-out set; anything else is a path."""
    if str(path_or_domain) in DOMAINS:
        return paths.prompts_dir() / f"{path_or_domain}.jsonl"
    return Path(path_or_domain)


def load_prompt_records(path_or_domain: str | Path, limit: int | None = None) -> list[dict]:
    """Every prompt as a dict (at least ``{"prompt": str}``), in file order; clear errors on bad lines."""
    path = resolve(path_or_domain)
    if not path.is_file():
        raise FileNotFoundError(
            f"prompt file {path} not found. Fix: pass 'prose', 'code', a JSONL file with a 'prompt' field per line "
            "(e.g. data/prompts/prose.jsonl) or a text file with one prompt per line.")
    records: list[dict] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        if path.suffix == ".jsonl":
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{n}: not a JSON object ({exc})") from None
            if not isinstance(obj, dict) or not isinstance(obj.get("prompt"), str):
                raise ValueError(f"{path}:{n}: each line needs a string field 'prompt'")
        else:
            obj = {"prompt": line}
        if not obj["prompt"].strip():
            raise ValueError(f"{path}:{n}: empty prompt; remove the line or give it text")
        records.append(obj)
    if not records:
        raise ValueError(f"{path} holds no prompts")
    return records[:limit] if limit else records


def load_prompts(path_or_domain: str | Path, limit: int | None = None) -> list[str]:
    """The prompt texts of a prompt file (see :func:`load_prompt_records`)."""
    return [r["prompt"] for r in load_prompt_records(path_or_domain, limit)]
