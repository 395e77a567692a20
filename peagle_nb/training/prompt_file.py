"""The heads' self-distillation prompts as one file: drawn once where the corpus is (``family_v3 prompts``), read
where it is not (a GPU machine that gets 15 MiB per call: corpus v3's train split needs seven calls, the default
327,680 prompts one: 12.8 MiB). Explained in notebook 08.

The file (gzip of a ``torch.save``) holds the prompts end to end as int16/int32 ids with their lengths and domain
labels, and the key they were drawn with: counts, lengths, seed, domains, corpus and the sha256 of the tokenizer.
A run whose options or tokenizer differ refuses the file and says which field differs; a run that asks for fewer
sequences than the file holds gets the file's first ones (a random subset: the file's order is shuffled).
"""

from __future__ import annotations

import gzip
import io
import pickle
from pathlib import Path

import torch

from peagle_nb.models.checksums import file_sha256

FORMAT = "prompts-v1"


def prompts_key(n_sequences: int, prompt_lengths, seed: int, domains, corpus: str, tokenizer_json: Path) -> dict:
    """Everything the prompts depend on."""
    return {"format": FORMAT, "n_sequences": int(n_sequences), "prompt_lengths": [int(x) for x in prompt_lengths],
            "seed": int(seed), "domains": list(domains), "corpus": corpus,
            "tokenizer_sha256": file_sha256(Path(tokenizer_json))}


def save_prompts(path: Path, key: dict, prompts: list[torch.Tensor], labels: list[int]) -> dict:
    """Write the prompts -> what was written (path, bytes, sha256)."""
    ids = torch.cat(prompts) if prompts else torch.empty(0, dtype=torch.long)
    dtype = torch.int16 if (int(ids.max()) if ids.numel() else 0) < 2 ** 15 else torch.int32
    buf = io.BytesIO()
    torch.save({"key": key, "ids": ids.to(dtype), "lengths": torch.tensor([len(p) for p in prompts], dtype=torch.int16),
                "labels": torch.tensor(labels, dtype=torch.int8)}, buf)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(buf.getvalue(), compresslevel=9, mtime=0))
    return {"path": str(path), "bytes": path.stat().st_size, "sha256": file_sha256(path)}


def load_prompts(path: Path, key: dict) -> tuple[list[torch.Tensor], list[int]]:
    """The prompts and labels of ``path`` if they were drawn with ``key``, else a ValueError naming the difference."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no prompts file {path}. Fix: write it where corpus v3 is, with `python -m "
                                f"peagle_nb.lab.training_runs.family_v3 prompts --out {path}` (same --n-sequences and "
                                f"--seed), or leave out --prompts to draw them from the corpus")
    try:
        blob = torch.load(io.BytesIO(gzip.decompress(path.read_bytes())), map_location="cpu")
    except (OSError, EOFError, RuntimeError, pickle.UnpicklingError) as e:
        raise ValueError(f"{path} is not a prompts file ({e}). Fix: write it again with `family_v3 prompts`") from None
    have = blob.get("key", {})
    # fewer sequences than the file holds: its first ones (the file's order is a random permutation of every
    # domain's prompts, so a prefix is a random subset), e.g. a smaller heads' data for a shorter GPU session
    prefix = have.get("n_sequences") is not None and 0 < key["n_sequences"] <= have["n_sequences"]
    diff = [f"{k}: file {have.get(k)!r}, run {v!r}" for k, v in key.items()
            if have.get(k) != v and not (k == "n_sequences" and prefix)]
    if diff:
        raise ValueError(f"{path} was drawn for another run ({'; '.join(diff)}). Fix: write it again with the run's "
                         f"options (`family_v3 prompts`), or leave out --prompts")
    n = key["n_sequences"]
    lengths = blob["lengths"].long()[:n]
    ids = blob["ids"][:int(lengths.sum())].long()
    prompts = list(torch.split(ids, lengths.tolist()))
    return prompts, blob["labels"][:n].tolist()
