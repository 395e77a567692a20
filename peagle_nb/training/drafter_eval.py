"""Greedy acceptance of a draft head on held-out prompts: tau and per-position acceptance for K = 1..8.
Explained in notebook 02; the engine (``peagle_nb.engine``) measures the same quantities with its own
KV-cached draft-verify loop.

Greedy verification is lossless, so the text a draft-verify loop produces is the target's own greedy
continuation ``x``. A step whose verified prefix ends with the bonus token ``x[p+1]`` accepts the longest
prefix of its K drafts that matches ``x[p+2..]`` and moves to ``p + accepted + 1``. We compute every
anchor's drafts in one teacher-forced pass (:func:`all_anchor_drafts`) and walk that recurrence, which
gives exactly the numbers of the literal loop (``tests/naive_decoding.py``; the tests check both agree).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from peagle_nb.models.heads import DraftHead
from peagle_nb.models.target import target_features
from peagle_nb.training.drafter_data import generate_padded
from peagle_nb.training.drafter_forward import all_anchor_drafts


def read_prompt_ids(tokenizer, path, n: int | None = None) -> list[torch.Tensor]:
    """Token ids of the prompts in a ``data/prompts/*.jsonl`` file (first ``n``)."""
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    if n is not None:
        rows = rows[:n]
    out = []
    for r in rows:
        ids = tokenizer(r["prompt"], add_special_tokens=False)["input_ids"]
        if not ids:
            raise ValueError(f"{path}: prompt {r.get('id')} is empty")
        out.append(torch.tensor(ids, dtype=torch.long))
    return out


def accepted_lengths(drafts: torch.Tensor, target_next: torch.Tensor) -> torch.Tensor:
    """``drafts [T-1, K]`` vs the target's greedy next tokens ``target_next [T]`` (row t = argmax after
    token t) -> accepted drafts per anchor ``[T-1]`` (leading matches; anchor i's draft j is checked
    against ``target_next[i + 1 + j]``)."""
    n, k = drafts.shape
    idx = (torch.arange(n)[:, None] + 1 + torch.arange(k)[None]).to(drafts.device)
    valid = idx < target_next.shape[0]
    want = target_next[idx.clamp(max=target_next.shape[0] - 1)]
    match = (drafts == want) & valid & (drafts >= 0)
    return match.long().cumprod(dim=1).sum(dim=1)


def walk_steps(acc: torch.Tensor, prompt_len: int, total_len: int, k: int) -> list[int]:
    """Accepted drafts of each draft-verify step of a greedy run (first anchor ``prompt_len - 1``; a step
    runs while its K drafts and bonus fit in the ``total_len`` reference tokens)."""
    steps, p = [], prompt_len - 1
    acc = acc.tolist()
    while p + k + 2 <= total_len:
        a = min(acc[p], k)
        steps.append(a)
        p += a + 1
    return steps


def summarize(steps: list[int], k: int) -> dict:
    """tau (= 1 + mean accepted, bonus included) and unconditional per-position acceptance a_1..a_K."""
    n = max(len(steps), 1)
    s = torch.tensor(steps or [0], dtype=torch.float)
    return {"k": k, "steps": len(steps), "tau": 1.0 + float(s.sum()) / n,
            "accept_rate_per_position": [float((s >= j).sum()) / n for j in range(1, k + 1)]}


_REFERENCES: dict = {}  # (target id, prompts, max_new) -> greedy references, shared by the heads of one run


@torch.no_grad()
def greedy_references(target, prompts: list[torch.Tensor], max_new_tokens: int) -> list[torch.Tensor]:
    """Exact greedy continuations: one padded batch, each checked against an unpadded forward and cut at
    the first token a padding-induced near-tie flipped (rare)."""
    device = next(target.parameters()).device
    key = (id(target), tuple(tuple(p.tolist()) for p in prompts), max_new_tokens)
    if key in _REFERENCES:
        return _REFERENCES[key]
    refs = []
    for p, seq in zip(prompts, generate_padded(target, prompts, max_new_tokens, device=device)):
        nxt = target(input_ids=seq[None].to(device)).logits[0].argmax(-1).cpu()
        bad = (nxt[len(p) - 1:-1] != seq[len(p):]).nonzero()
        refs.append(seq[: len(p) + int(bad[0])] if len(bad) else seq)
    _REFERENCES.clear()
    _REFERENCES[key] = refs
    return refs


@torch.no_grad()
def evaluate_head(target, head: DraftHead, prompts: list[torch.Tensor], max_new_tokens: int = 128,
                  ks=range(1, 9)) -> dict:
    """Greedy acceptance on ``prompts`` for each K in ``ks`` -> ``{"K": summary}`` (steps pooled over prompts)."""
    device = next(target.parameters()).device
    k_max = max(ks)
    per_k = {k: [] for k in ks}
    for p, seq in zip(prompts, greedy_references(target, prompts, max_new_tokens)):
        seq = seq[None].to(device)
        res = target(input_ids=seq, output_hidden_states=True)
        feats = target_features(res.hidden_states, head.aux_layer_ids).float()
        target_next = res.logits[0].argmax(-1)
        drafts = all_anchor_drafts(head, seq, feats, k_max)
        acc = accepted_lengths(drafts, target_next)
        for k in ks:
            per_k[k] += walk_steps(acc.cpu(), len(p), seq.shape[1], k)
    return {str(k): {**summarize(v, k), "prompts": len(prompts)} for k, v in per_k.items()}
