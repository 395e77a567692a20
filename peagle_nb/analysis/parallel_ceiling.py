"""How much a parallel drafter can accept at all: the ceiling the target's own uncertainty puts on P-EAGLE's deep
slots when decoding is sampled. Explained in notebook 08 (section 7).

At a drafting step the verified text ends with the bonus token. Slot 1 drafts the token after it and sees all of
its context, like every EAGLE-3 pass. A P-EAGLE mask slot d >= 2 drafts the token after ``x_1 .. x_(d-1)`` without
seeing them: one forward pass fills every slot before any of them is chosen. So its draft distribution ``q_d``
cannot depend on those tokens, while the target's distribution ``p(. | context, x_1 .. x_(d-1))`` does. EAGLE-3's
chain feeds each drafted token to the next pass and has no such limit.

With rejection sampling a draft at slot d is accepted with probability ``sum_x min(p(x), q_d(x))``. A head trained
by cross-entropy against the target's distribution learns, for tokens it cannot see, their average: the marginal
``m_d = E[p(. | context, x_<d)]`` over ``x_<d`` drawn from the target. The ceiling estimated here is that head's
acceptance at slot d as served, estimated
by Monte Carlo at each anchor with two sets of ``n_paths`` continuations run side by side. Training paths draw
every token from the target at the serving temperature; their mean distribution at slot d is the marginal ``m_d``
the head learns. Served paths follow what a served step keeps: at slot d a draft from ``m_d`` is accepted with
probability ``a_d = sum_x min(p(x), m_d(x))`` and the accepted token is distributed as ``min(p, m_d) / a_d``, so the
served path continues with such a token. ``c_d`` is the mean of ``a_d`` over served paths; each also carries the
chance that slots 1..d all pass, ``r_d = a_1 ... a_d``. The served figure to set beside it is conditional, slot d's
acceptance among the steps that accepted slot d-1 (and those steps are the predictable ones): pooled over paths and
anchors as the engine pools steps, ``sum r_d / sum r_(d-1)`` (:func:`conditional`). ``c_1`` is 1 (slot 1 is drafted
from its whole context). Greedy decoding has no such ceiling (every path is the same), so a greedy gap between the
heads is learning alone. A head trained for acceptance rather than cross-entropy could beat the marginal
somewhat; the marginal is what the recipe here (and the public ones) trains toward.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch


@torch.no_grad()
def slot_ceilings(target, context: Sequence[int], depth: int, n_paths: int, temperature: float,
                  generator: torch.Generator | None = None) -> dict[str, list[float]]:
    """At one anchor: ``{"ceiling": [c_1 .. c_depth], "reach": [r_1 .. r_depth]}`` (``reach``: the mean over served
    paths of the chance that slots 1..d all pass), from ``context`` (token ids ending with the bonus token) and
    ``n_paths`` training and ``n_paths`` served continuations at ``temperature`` (> 0), with the target's KV cache."""
    if temperature <= 0:
        raise ValueError("the parallel ceiling is for sampled decoding (temperature > 0); greedy has none: "
                         "every continuation is the same, so a mask slot can know it")
    if n_paths < 2 or depth < 1 or not context:
        raise ValueError(f"need n_paths >= 2, depth >= 1 and a non-empty context (got {n_paths}, {depth}, "
                         f"{len(context)} tokens)")
    dev = next(target.parameters()).device
    out = target(input_ids=torch.tensor([list(context)], device=dev), use_cache=True)
    cache = out.past_key_values
    cache.batch_repeat_interleave(2 * n_paths)  # rows [0, n): training paths; [n, 2n): served paths
    logits = out.logits[:, -1].expand(2 * n_paths, -1)  # [2n, V]
    ceilings, reach = [], []
    passed = torch.ones(n_paths)  # [n]: chance that every slot so far passed, per served path
    for _ in range(depth):
        p = torch.softmax(logits.float() / temperature, dim=-1).cpu()  # [2n, V]: p(. | context, the path's x_<d)
        marginal = p[:n_paths].mean(0, keepdim=True)  # [1, V]: m_d, what the head learns for this slot
        kept = torch.minimum(p[n_paths:], marginal)  # [n, V]: min(p, m_d) per served path
        accept = kept.sum(-1).clamp(max=1.0)  # [n]: a_d
        passed = passed * accept
        ceilings.append(float(accept.mean()))
        reach.append(float(passed.mean()))
        x_train = torch.multinomial(p[:n_paths], 1, generator=generator)  # [n, 1]: drawn from the target
        x_served = torch.multinomial(kept.clamp(min=1e-12), 1, generator=generator)  # [n, 1]: an accepted token
        x = torch.cat([x_train, x_served]).to(dev)  # [2n, 1]
        out = target(input_ids=x, past_key_values=cache, use_cache=True)
        cache, logits = out.past_key_values, out.logits[:, -1]
    return {"ceiling": ceilings, "reach": reach}


@torch.no_grad()
def sampled_text(target, prompt: Sequence[int], new_tokens: int, temperature: float,
                 generator: torch.Generator | None = None) -> list[int]:
    """``prompt`` + ``new_tokens`` sampled from the target at ``temperature``: the text a served request has
    written when it reaches a drafting step (anchors are taken along it)."""
    dev = next(target.parameters()).device
    ids = list(prompt)
    out = target(input_ids=torch.tensor([ids], device=dev), use_cache=True)
    for _ in range(new_tokens):
        p = torch.softmax(out.logits[:, -1].float() / temperature, dim=-1).cpu()
        nxt = int(torch.multinomial(p, 1, generator=generator))
        ids.append(nxt)
        out = target(input_ids=torch.tensor([[nxt]], device=dev), past_key_values=out.past_key_values,
                     use_cache=True)
    return ids


def conditional(reach_per_anchor: Sequence[Sequence[float]]) -> list[float | None]:
    """The conditional ceiling per slot, pooled over anchors: ``sum r_d / sum r_(d-1)`` (slot 1: ``sum r_1`` over the
    anchors, i.e. 1 when slot 1 always passes)."""
    depth = len(reach_per_anchor[0])
    totals = [sum(a[d] for a in reach_per_anchor) for d in range(depth)]
    before = [float(len(reach_per_anchor))] + totals[:-1]
    return [t / b if b > 0 else None for t, b in zip(totals, before)]


def summarize(per_anchor: Sequence[Mapping[str, Sequence[float]]]) -> dict:
    """Per slot over anchors: the mean ceiling and its standard error (anchors are the independent units), and the
    conditional ceiling (:func:`conditional`)."""
    import statistics

    depth = len(per_anchor[0]["ceiling"])
    cols = [[a["ceiling"][d] for a in per_anchor] for d in range(depth)]
    se = [statistics.stdev(c) / len(c) ** 0.5 if len(c) > 1 else None for c in cols]
    reach = [a["reach"] for a in per_anchor]
    return {"anchors": len(per_anchor), "mean": [statistics.fmean(c) for c in cols], "stderr": se,
            "conditional": conditional(reach), "conditional_p10_p90": bootstrap(reach)}


def bootstrap(reach_per_anchor: Sequence[Sequence[float]], resamples: int = 200, seed: int = 0
              ) -> list[list[float] | None]:
    """p10 and p90 of the conditional ceiling per slot over ``resamples`` resamplings of the anchors (seeded)."""
    import random

    rng = random.Random(seed)
    n, depth = len(reach_per_anchor), len(reach_per_anchor[0])
    draws = [conditional([reach_per_anchor[rng.randrange(n)] for _ in range(n)]) for _ in range(resamples)]
    out = []
    for d in range(depth):
        vals = sorted(x[d] for x in draws if x[d] is not None)
        out.append([vals[int(0.1 * (len(vals) - 1))], vals[int(0.9 * (len(vals) - 1))]] if vals else None)
    return out


__all__ = ["slot_ceilings", "sampled_text", "conditional", "bootstrap", "summarize"]
