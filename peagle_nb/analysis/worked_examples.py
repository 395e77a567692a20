"""Real examples picked from the tiny models' own greedy decoding, for the lessons of notebook 01.

- :func:`find_long_step`: a draft-verify step that kept at least ``min_accepted`` drafts (the "one target
  pass, several tokens" example), preferably one that drafts fresh text rather than a copy of a loop;
- :func:`find_loop`: a prompt whose greedy continuation repeats itself;
- :func:`mark_repeats`: the continuation as text with its repeated spans marked.

"Repeated" is ``peagle_nb.analysis.repetition``'s definition: inside an n-gram (n = 8) that already occurred earlier
in prompt + generated text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from peagle_nb.analysis.repetition import MIN_REPEAT, repeated_mask, step_starts


def greedy_runs(decoder, prompts: Sequence[Sequence[int]], max_new_tokens: int, batch: int = 8):
    """Each prompt's greedy run, in order, lazily. A decoder with a batched twin (the lean engine) decodes ``batch``
    prompts per step, each one exactly as it would alone, about twice as fast on a CPU; any other decoder decodes
    them one by one."""
    from peagle_nb.engine.lean.batch import batched_twin  # torch and the kernels: only when a search runs

    twin = batched_twin(decoder, batch)
    if twin is None:
        for prompt in prompts:
            yield decoder.generate(list(prompt), max_new_tokens)
        return
    for i in range(0, len(prompts), batch):
        yield from twin.generate([list(p) for p in prompts[i:i + batch]], max_new_tokens).results


def find_long_step(decoder, prompts: Sequence[Sequence[int]], max_new_tokens: int, min_accepted: int = 4,
                   prefer_fresh: bool = True, kept_ok: Callable[[list[int]], bool] | None = None) -> dict | None:
    """Greedy-decode ``prompts`` in order with ``decoder`` (``generate`` as the engine's) until a step kept at
    least ``min_accepted`` drafts (and, with ``kept_ok``, drafts for which ``kept_ok(kept draft ids)`` is true);
    with ``prefer_fresh`` a step that starts in fresh text is returned as soon as one is found, a step inside a
    repeat only when no prompt has a fresh one. None when no step qualifies.

    Returned: ``prompt_index``, ``step_index``, ``accepted``, ``repeated`` (the step's first token is inside a
    repeat), ``generated`` (the whole continuation), ``start`` (generated index of the step's first appended
    token), ``prefix`` (prompt + generated tokens before the step's bonus token) and ``bonus`` (the token the
    step drafts after: the target's last output before the step)."""
    if min_accepted < 1:
        raise ValueError(f"min_accepted must be >= 1, got {min_accepted}")
    fallback = None
    for i, (prompt, res) in enumerate(zip(prompts, greedy_runs(decoder, prompts, max_new_tokens))):
        mask = repeated_mask(prompt, res.tokens)
        for j, (step, start) in enumerate(zip(res.steps, step_starts(res.steps, len(res.tokens)))):
            if step.accepted < min_accepted or start + step.accepted > len(res.tokens):
                continue  # too short, or its kept drafts were cut by the token limit (kept_ok would see only part)
            if kept_ok and not kept_ok(res.tokens[start:start + step.accepted]):
                continue
            found = {"prompt_index": i, "step_index": j, "accepted": step.accepted, "repeated": mask[start],
                     "generated": list(res.tokens), "start": start,
                     "prefix": list(prompt) + list(res.tokens[:start - 1]), "bonus": res.tokens[start - 1]}
            if not (prefer_fresh and found["repeated"]):
                return found
            fallback = fallback or found
    return fallback


def find_loop(decoder, prompts: Sequence[Sequence[int]], max_new_tokens: int, min_fraction: float = 0.3,
              n: int = MIN_REPEAT) -> dict:
    """Greedy-decode ``prompts`` in order until a continuation has at least ``min_fraction`` of its tokens inside
    a repeated n-gram; if none does, the most repetitive one. Returned: ``prompt_index``, ``generated``,
    ``mask`` (per generated token), ``fraction``, ``searched`` (prompts decoded)."""
    if not prompts:
        raise ValueError("no prompts to search for a loop")
    best = None
    for i, prompt in enumerate(prompts):
        res = decoder.generate(list(prompt), max_new_tokens)
        mask = repeated_mask(prompt, res.tokens, n)
        found = {"prompt_index": i, "generated": list(res.tokens), "mask": mask,
                 "fraction": sum(mask) / len(mask), "searched": i + 1}
        if best is None or found["fraction"] > best["fraction"]:
            best = found
        if found["fraction"] >= min_fraction:
            return found
    best["searched"] = len(prompts)
    return best


def mark_repeats(decode: Callable[[list[int]], str], ids: Sequence[int], mask: Sequence[bool],
                 open_mark: str = "⟦", close_mark: str = "⟧") -> str:
    """The text of ``ids`` with every run of masked tokens wrapped in ``open_mark`` / ``close_mark`` (each run is
    decoded as a whole, so a character split over several tokens stays intact)."""
    if len(ids) != len(mask):
        raise ValueError(f"{len(ids)} token ids but {len(mask)} mask values: give one mask value per token")
    out, run, marked = [], [], None
    for t, m in zip(ids, mask):
        if run and bool(m) != marked:
            out.append(open_mark + decode(run) + close_mark if marked else decode(run))
            run = []
        run.append(int(t))
        marked = bool(m)
    if run:
        out.append(open_mark + decode(run) + close_mark if marked else decode(run))
    return "".join(out)
