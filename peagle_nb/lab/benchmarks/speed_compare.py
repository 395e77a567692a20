"""Decoding configurations timed side by side on one machine: plain decoding, EAGLE-3 and P-EAGLE at several K,
interleaved round by round so that every configuration sees the same machine state, with what each step's time
is made of and the acceptance it needs to pay for itself. Explained in notebook 01.

A speculative step yields tau tokens on average for one step time; a plain step yields one token. Speculation
wins exactly when ``tau > step_ms / plain step_ms``, the **break-even tau** (``step_over_plain`` below).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from peagle_nb.engine.evaluate import evaluate, make_decoder, spread


def compare(target, tokenizer, heads: Mapping[str, object], configs: Sequence[tuple[str, int]], prompts: Sequence,
            max_new_tokens: int, repeats: int = 3, reference: list[list[int]] | None = None,
            engine: str = "lean") -> list[dict]:
    """Greedy decoding of ``prompts`` with every ``(method, k)`` in ``configs`` (one of them ``("none", 0)``),
    ``repeats`` rounds, each round running every configuration once in turn (the first round after a warm-up).

    One record per configuration, in ``configs`` order: the ``evaluate`` record of its median round (its per-step
    breakdown: ``draft_ms_per_step``, ``verify_ms_per_step``, ``bookkeeping_ms_per_step``, ``step_ms``), with
    ``tokens_per_s`` (median, ``_p10``, ``_p90``, ``_repeats``: every round) over the rounds; ``speedup`` (p10 /
    median / p90 and every round of tokens/s over plain decoding's tokens/s in the same round);
    ``step_over_plain`` (step time / the plain step time of its median round: the break-even tau);
    ``verify_over_plain`` (the verify pass over K+1 rows / one plain step) and ``draft_share`` (draft ms / step
    ms). ``reference``: plain greedy outputs to check losslessness against (computed once when not given)."""
    configs = [(m, int(k)) for m, k in configs]
    if ("none", 0) not in configs:
        raise ValueError("configs must include plain decoding, ('none', 0): every speed is compared with it")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    missing = sorted({m for m, _ in configs if m != "none" and m not in heads})
    if missing:
        raise ValueError(f"no head given for {missing}: pass heads={{'eagle3': ..., 'peagle': ...}}")
    if reference is None and any(m != "none" for m, _ in configs):
        from peagle_nb.engine.evaluate import encode_prompts, greedy_reference

        reference = greedy_reference(target, encode_prompts(tokenizer, prompts), max_new_tokens)
    decoders = {c: make_decoder(engine, target, tokenizer, heads.get(c[0]), c[0], max(c[1], 1)) for c in configs}
    rounds: dict[tuple[str, int], list[dict]] = {c: [] for c in configs}
    for r in range(repeats):
        for (method, k), dec in decoders.items():
            rounds[(method, k)].append(evaluate(target, tokenizer, heads.get(method), method, max(k, 1), prompts,
                                                max_new_tokens, reference=reference, decoder=dec, warmup=r == 0))
    plain_tps = [x["tokens_per_s"] for x in rounds[("none", 0)]]
    out = []
    for c in configs:
        recs = rounds[c]
        tps = [x["tokens_per_s"] for x in recs]
        mid = sorted(recs, key=lambda x: x["tokens_per_s"])[len(recs) // 2]
        sp = spread(tps)
        ratios = [a / b for a, b in zip(tps, plain_tps)]
        out.append({**mid, "tokens_per_s": sp["median"], "tokens_per_s_p10": sp["p10"],
                    "tokens_per_s_p90": sp["p90"], "tokens_per_s_repeats": tps, "repeats": repeats,
                    "speedup": spread(ratios) | {"repeats": ratios}})
    plain_step = out[configs.index(("none", 0))]["step_ms"]
    for rec in out:
        rec["step_over_plain"] = rec["step_ms"] / plain_step
        rec["verify_over_plain"] = rec["verify_ms_per_step"] / plain_step
        rec["draft_share"] = rec["draft_ms_per_step"] / rec["step_ms"] if rec["step_ms"] else 0.0
    return out
