"""Build the held-out prompt sets ``prose.jsonl`` and ``code.jsonl`` from the corpus's heldout split.

    python data/prompts/build_prompts.py        # needs data/corpus/*.jsonl.gz and data/models/tiny-target

Prompts start where a reader would ask a model to continue: prose at a speaker's line (``VIOLA.``),
code at a ``def``/``class`` line. Each ends at a line break and holds MIN..MAX target tokens. Start
points are spread evenly over each held-out document (deterministic), and any candidate that also
occurs verbatim in the train split (boilerplate such as licence headers) is dropped.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from peagle_nb.corpus import document_ids, load_documents  # noqa: E402
from peagle_nb.models.target import load_target  # noqa: E402

N_PER_DOMAIN = 40
MIN_TOKENS, MAX_TOKENS = 20, 60
STARTS = {
    "prose": re.compile(r"^[A-Z][A-Z .'-]+\.\n(?=[A-Z])", re.M),  # a speaker heading, then the speech
    "code": re.compile(r"^[ ]*(?:def|class|async def) \w+", re.M),
}


def _prompt_at(text: str, start: int, tok) -> str | None:
    """Longest run of whole lines from ``start`` with <= MAX_TOKENS tokens, if it has >= MIN_TOKENS."""
    best = None
    end = start
    while True:
        nl = text.find("\n", end)
        if nl < 0:
            return best
        candidate = text[start: nl + 1]
        n = len(tok(candidate, add_special_tokens=False)["input_ids"])
        if n > MAX_TOKENS:
            return best
        if n >= MIN_TOKENS and candidate.strip():
            best = candidate
        end = nl + 1


def build(domain: str, tok) -> list[dict]:
    docs = load_documents(domain, "heldout")
    ids = document_ids(domain, "heldout")
    train = load_documents(domain, "train")
    per_doc = -(-N_PER_DOMAIN // len(docs))  # ceil
    chosen: list[tuple[str, str]] = []
    for doc_id, text in zip(ids, docs):
        starts = [m.start() for m in STARTS[domain].finditer(text)]
        # skip the first tenth (title pages, imports) and take evenly spaced starts
        starts = [s for s in starts if s > len(text) // 10]
        order = [starts[(j * len(starts)) // per_doc] for j in range(per_doc)] + starts if starts else []
        picked = 0
        for s in order:
            if picked >= per_doc:
                break
            p = _prompt_at(text, s, tok)
            if p is None or any(p == q for _, q in chosen) or any(p in t for t in train):
                continue
            chosen.append((doc_id, p))
            picked += 1
    chosen = chosen[:N_PER_DOMAIN]
    if len(chosen) < 32:
        raise SystemExit(f"only {len(chosen)} {domain} prompts found; need >= 32")
    return [{"id": f"{domain}-{i:03d}", "domain": domain, "prompt": p, "source": doc_id}
            for i, (doc_id, p) in enumerate(chosen)]


def main() -> int:
    _, tok = load_target()
    for domain in ("prose", "code"):
        rows = build(domain, tok)
        with open(HERE / f"{domain}.jsonl", "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        lens = [len(tok(r["prompt"], add_special_tokens=False)["input_ids"]) for r in rows]
        print(f"{domain}: {len(rows)} prompts from {len({r['source'] for r in rows})} documents, "
              f"{min(lens)}-{max(lens)} tokens (mean {sum(lens) / len(lens):.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
