"""The public P-EAGLE heads, as their Hugging Face model cards describe them: the target each drafts for, the K
the card serves it with and the depth it was trained for.

One table for every place that needs these numbers: the serving presets (``peagle_nb.serving.presets``, notebook
05), the transcribed published numbers and the GPT-OSS-20B step-time model (``peagle_nb.compare``, notebook 07).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PublicHead:
    repo: str  # the head's Hugging Face repo id
    target: str  # the repo id of the target model it drafts for
    serve_k: int  # num_speculative_tokens its model card serves it with
    trained_k: int  # the deepest draft position it was trained for


PUBLIC_PEAGLE_HEADS: dict[str, PublicHead] = {h.repo: h for h in [
    PublicHead("amazon/gpt-oss-120b-p-eagle", "openai/gpt-oss-120b", serve_k=5, trained_k=8),
    PublicHead("amazon/GPT-OSS-20B-P-EAGLE", "openai/gpt-oss-20b", serve_k=7, trained_k=10),
    PublicHead("amazon/Qwen3-Coder-30B-A3B-Instruct-P-EAGLE", "Qwen/Qwen3-Coder-30B-A3B-Instruct", serve_k=10,
               trained_k=18),
]}


def public_head(repo: str) -> PublicHead:
    """The table's row for ``repo``; an unknown repo is an error that lists the known ones."""
    try:
        return PUBLIC_PEAGLE_HEADS[repo]
    except KeyError:
        raise KeyError(f"{repo!r} is not a public P-EAGLE head this suite knows; known: "
                       f"{', '.join(PUBLIC_PEAGLE_HEADS)} (add it to peagle_nb/models/public_heads.py with its "
                       "model card's serve K and trained K)") from None
