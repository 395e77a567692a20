"""Build the held-out prompt sets ``prose.jsonl``, ``code.jsonl`` and ``ja.jsonl`` from the corpus's heldout split.

    python data/prompts/build_prompts.py --domains ja     # needs data/corpus/*.jsonl.gz
    python data/prompts/build_prompts.py --domains prose code --tokenizer PATH   # see below

Prompts start where a reader would ask a model to continue: prose at a speaker's line (``VIOLA.``),
code at a ``def``/``class`` line, Japanese at the start of a paragraph. Prose and code prompts end at a
line break and hold MIN..MAX tokens of the tokenizer given (the committed sets were cut with the first
tiny target's 4,096-token tokenizer and are kept fixed across model versions, so results stay comparable;
another tokenizer picks other prompts). Japanese prompts are measured in characters, independent of any
tokenizer: whole sentences (ending in ``。``) from a paragraph start, JA_MIN_CHARS..JA_MAX_CHARS characters.
Start points are spread evenly over each held-out document (deterministic), and any candidate that also
occurs verbatim in a train or validation document of any domain (boilerplate) is dropped.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
sys.path.insert(0, str(HERE.parent / "corpus"))

from japanese_docs import japanese_fraction  # noqa: E402
from peagle_nb.text.corpus import DOMAINS, document_ids, load_documents  # noqa: E402

N_PER_DOMAIN = 40
MIN_TOKENS, MAX_TOKENS = 20, 60
JA_MIN_CHARS, JA_MAX_CHARS = 40, 120
JA_MIN_FRACTION = 0.5  # a prompt is mostly Japanese, not a command line with a Japanese word
STARTS = {
    "prose": re.compile(r"^[A-Z][A-Z .'-]+\.\n(?=[A-Z])", re.M),  # a speaker heading, then the speech
    "code": re.compile(r"^[ ]*(?:def|class|async def) \w+", re.M),
    "ja": re.compile(r"^(?![0-9A-Z]+(?:\.[0-9]+)*\. )", re.M),  # a paragraph start that is not a numbered heading
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


def _ja_prompt_at(text: str, start: int, tok=None) -> str | None:
    """Longest run of whole sentences from ``start`` within its paragraph, JA_MIN..JA_MAX characters."""
    end = text.find("\n", start)
    para = text[start: end if end >= 0 else len(text)]
    best, cut = None, 0
    while True:
        nxt = para.find("。", cut)
        if nxt < 0 or nxt + 1 > JA_MAX_CHARS:
            break
        cut = nxt + 1
        if cut >= JA_MIN_CHARS:
            best = para[:cut]
    if best is None or japanese_fraction(best) < JA_MIN_FRACTION:
        return None
    return best


def _seen_texts() -> list[str]:
    """Every train and validation document of every domain: prompts must occur in none of them."""
    return [t for d in DOMAINS for split in ("train", "validation") for t in load_documents(d, split)]


def build(domain: str, tok, seen: list[str]) -> list[dict]:
    docs = load_documents(domain, "heldout")
    ids = document_ids(domain, "heldout")
    prompt_at = _ja_prompt_at if domain == "ja" else _prompt_at
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
            p = prompt_at(text, s, tok)
            if p is None or any(p == q for _, q in chosen) or any(p in t for t in seen):
                continue
            chosen.append((doc_id, p))
            picked += 1
    chosen = chosen[:N_PER_DOMAIN]
    if len(chosen) < 32:
        raise SystemExit(f"only {len(chosen)} {domain} prompts found; need >= 32")
    return [{"id": f"{domain}-{i:03d}", "domain": domain, "prompt": p, "source": doc_id}
            for i, (doc_id, p) in enumerate(chosen)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--domains", nargs="+", choices=DOMAINS, default=list(DOMAINS))
    ap.add_argument("--tokenizer", default=None,
                    help="model folder whose tokenizer measures prose/code prompts (default data/models/tiny-target)")
    args = ap.parse_args(argv)
    tok = None
    if set(args.domains) & {"prose", "code"}:
        from transformers import PreTrainedTokenizerFast

        from peagle_nb.models.target import default_path

        tok = PreTrainedTokenizerFast.from_pretrained(args.tokenizer or default_path())
    seen = _seen_texts()
    for domain in args.domains:
        rows = build(domain, tok, seen)
        with open(HERE / f"{domain}.jsonl", "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        lens = [len(tok(r["prompt"], add_special_tokens=False)["input_ids"]) if tok and domain != "ja"
                else len(r["prompt"]) for r in rows]
        unit = "characters" if domain == "ja" else "tokens"
        print(f"{domain}: {len(rows)} prompts from {len({r['source'] for r in rows})} documents, "
              f"{min(lens)}-{max(lens)} {unit} (mean {sum(lens) / len(lens):.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
