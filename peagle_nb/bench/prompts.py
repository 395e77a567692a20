"""Prompt files for the benchmark: JSONL with a ``"prompt"`` field per line (``data/prompts/*.jsonl``)
or plain text, one prompt per line."""

from __future__ import annotations

import json
from pathlib import Path


def load_prompts(path: str | Path, limit: int | None = None) -> list[str]:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"prompt file {path} not found. Fix: pass a JSONL file with a 'prompt' field per "
                                f"line (e.g. data/prompts/prose.jsonl) or a text file with one prompt per line.")
    out: list[str] = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        if path.suffix == ".jsonl":
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{i}: not JSON ({exc})") from None
            if not isinstance(obj, dict) or not isinstance(obj.get("prompt"), str):
                raise ValueError(f"{path}:{i}: each line needs a string field 'prompt'")
            out.append(obj["prompt"])
        else:
            out.append(line)
    if not out:
        raise ValueError(f"{path} holds no prompts")
    return out[:limit] if limit else out
