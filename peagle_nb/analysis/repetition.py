"""Acceptance that measures drafting, not copying: how much of a generation repeats earlier text, and tau and
per-position acceptance split into steps that draft fresh text and steps that draft a repeat. Pure functions
over token ids and per-step records. Explained in notebook 08.

Small models fall into loops, and a drafter that has seen a loop once predicts its next turn almost
perfectly, so a headline tau measured on looping text says more about the loops than about drafting.

Definitions (``n`` = ``MIN_REPEAT``, 8 unless given):

- The text is ``prompt + generated``. A generated token is **inside a repeated n-gram** when some window of
  ``n`` consecutive tokens of the text contains it and the same ``n`` tokens also occur starting at an
  EARLIER position of the text (the prompt included; the two occurrences may overlap). Every window inside a
  repeat of ``m >= n`` tokens is itself a repeated ``n``-gram, so "n >= 8" and "n = 8" mark the same tokens.
  The first occurrence is not marked: only the copies, the part a drafter could have copied.
- **Repetition fraction**: marked generated tokens / generated tokens.
- **Steps**: one record per draft-verify step with ``num_drafts`` (K), ``accepted`` and ``new_tokens`` (what
  the step appended; the engine's :class:`peagle_nb.engine.stats.StepStats`). The engine's first generated
  token comes from the prefill, not from a step, so step 1 starts at generated index ``first_index = 1`` and
  step j+1 starts where step j ended (the running sum of ``new_tokens``); a last step that ran past the end
  (``max_new_tokens`` truncation) is clipped.
- A step is **repeated** when the first token it appended (generated index = its start) is inside a repeated
  n-gram, else **fresh**. The first appended token is the first draft position, the one every step must get
  right to accept anything; classifying by it does not depend on how many drafts were accepted.
- **tau** = 1 + mean accepted drafts per step (bonus token included, vLLM's convention); **per-position
  acceptance** a_k = fraction of steps whose k-th draft was accepted (accepted >= k), k = 1..K.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

MIN_REPEAT = 8


def _field(step: Any, name: str) -> int:
    return int(step[name] if isinstance(step, Mapping) else getattr(step, name))


def repeated_mask(prompt_ids: Sequence[int], generated_ids: Sequence[int], n: int = MIN_REPEAT) -> list[bool]:
    """Per generated token: is it inside an n-gram that also occurs earlier in prompt + generated text?"""
    if n < 1:
        raise ValueError(f"n-gram length must be >= 1, got {n}")
    text = [int(t) for t in prompt_ids] + [int(t) for t in generated_ids]
    p = len(prompt_ids)
    marked = [False] * len(text)
    first_start: dict[tuple[int, ...], int] = {}
    for s in range(len(text) - n + 1):
        gram = tuple(text[s:s + n])
        if gram in first_start:
            for i in range(s, s + n):
                marked[i] = True
        else:
            first_start[gram] = s
    return marked[p:]


def repetition_fraction(prompt_ids: Sequence[int], generated_ids: Sequence[int], n: int = MIN_REPEAT) -> float:
    """Fraction of generated tokens inside a repeated n-gram (0.0 for an empty generation)."""
    mask = repeated_mask(prompt_ids, generated_ids, n)
    return sum(mask) / len(mask) if mask else 0.0


def step_starts(steps: Sequence[Any], n_generated: int, first_index: int = 1) -> list[int]:
    """Generated index of each step's first appended token (running sum of ``new_tokens`` from
    ``first_index``); steps that start past the end of the generation are dropped."""
    starts, pos = [], first_index
    for st in steps:
        if pos >= n_generated:
            break
        starts.append(pos)
        pos += _field(st, "new_tokens")
    return starts


def classify_steps(prompt_ids: Sequence[int], generated_ids: Sequence[int], steps: Sequence[Any],
                   n: int = MIN_REPEAT, first_index: int = 1) -> list[str]:
    """``"repeated"`` or ``"fresh"`` per step (steps starting past the generation's end are left out)."""
    mask = repeated_mask(prompt_ids, generated_ids, n)
    return ["repeated" if mask[s] else "fresh" for s in step_starts(steps, len(generated_ids), first_index)]


def acceptance(accepted: Sequence[int], k: int) -> dict:
    """tau and per-position acceptance a_1..a_K of a list of accepted-draft counts (one per step)."""
    n = len(accepted)
    if n == 0:
        return {"steps": 0, "tau": float("nan"), "accept_rate_per_position": [float("nan")] * k}
    return {"steps": n, "tau": 1.0 + sum(accepted) / n,
            "accept_rate_per_position": [sum(a >= j for a in accepted) / n for j in range(1, k + 1)]}


def drafting_report(runs: Iterable[tuple[Sequence[int], Sequence[int], Sequence[Any]]], n: int = MIN_REPEAT,
                    first_index: int = 1) -> dict:
    """Pool several generations (``(prompt_ids, generated_ids, steps)`` each, e.g. a prompt set) into:
    ``repetition_fraction`` (marked / generated tokens over all runs), ``tokens``, ``repeated_tokens``, and
    ``all`` / ``fresh`` / ``repeated``: :func:`acceptance` of the pooled steps of each class, plus
    ``repeated_step_fraction``. K is the largest ``num_drafts`` seen."""
    tokens = marked = 0
    by_class: dict[str, list[int]] = {"fresh": [], "repeated": []}
    k = 0
    for prompt_ids, generated_ids, steps in runs:
        mask = repeated_mask(prompt_ids, generated_ids, n)
        tokens += len(mask)
        marked += sum(mask)
        starts = step_starts(steps, len(generated_ids), first_index)
        for st, s in zip(steps, starts):
            k = max(k, _field(st, "num_drafts"))
            by_class["repeated" if mask[s] else "fresh"].append(_field(st, "accepted"))
    every = by_class["fresh"] + by_class["repeated"]
    return {"n": n, "tokens": tokens, "repeated_tokens": marked,
            "repetition_fraction": marked / tokens if tokens else 0.0,
            "repeated_step_fraction": len(by_class["repeated"]) / len(every) if every else 0.0,
            "k": k, "all": acceptance(every, k), "fresh": acceptance(by_class["fresh"], k),
            "repeated": acceptance(by_class["repeated"], k)}


def _quantile(sorted_vals: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default) of already sorted values."""
    pos = q * (len(sorted_vals) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def spread(values: Sequence[float]) -> dict:
    """Mean and spread of one quantity over seeds: ``n``, ``mean``, ``min``, ``p10``, ``median``, ``p90``,
    ``max`` and the ``values`` themselves (NaNs, e.g. a class with no steps in one seed, are left out)."""
    vals = sorted(float(v) for v in values if not math.isnan(float(v)))
    if not vals:
        return {"n": 0, "mean": float("nan"), "min": float("nan"), "p10": float("nan"), "median": float("nan"),
                "p90": float("nan"), "max": float("nan"), "values": []}
    return {"n": len(vals), "mean": sum(vals) / len(vals), "min": vals[0], "p10": _quantile(vals, 0.1),
            "median": _quantile(vals, 0.5), "p90": _quantile(vals, 0.9), "max": vals[-1],
            "values": [float(v) for v in values]}


def aggregate_seeds(reports: Sequence[Mapping]) -> dict:
    """Several :func:`drafting_report` results (one per seed) -> the same shape with every number replaced by
    its :func:`spread` over the seeds; per-position lists become a list of spreads (position by position)."""
    if not reports:
        raise ValueError("no reports to aggregate: pass one drafting_report per seed")

    def merge(items: list):
        first = items[0]
        if isinstance(first, Mapping):
            keys = [key for key in first if all(key in it for it in items)]
            return {key: merge([it[key] for it in items]) for key in keys}
        if isinstance(first, (list, tuple)):
            width = min(len(it) for it in items)
            return [merge([it[j] for it in items]) for j in range(width)]
        return spread(items)

    return {"seeds": len(reports), **merge(list(reports))}
