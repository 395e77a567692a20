"""Measure a decoding method over a prompt set: tau, per-position acceptance, speed, losslessness.

``evaluate`` is what ``peagle-nb eval --json`` prints; ``sweep`` runs none / EAGLE-3 / P-EAGLE over
K = 1..10 and returns run records for ``peagle_nb.results`` (data/results/engine_*.json).
Explained in notebooks 01-03.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from peagle_nb import metrics
from peagle_nb.engine.decoder import SpecDecoder


def encode_prompts(tokenizer, prompts: Sequence) -> list[list[int]]:
    """Strings -> token id lists (id lists pass through)."""
    out = []
    for p in prompts:
        ids = tokenizer(p)["input_ids"] if isinstance(p, str) else list(p)
        if len(ids) == 0:
            raise ValueError(f"prompt {p!r} encodes to no tokens; give a non-empty prompt")
        out.append(list(ids))
    return out


def greedy_reference(target, prompt_ids: list[list[int]], max_new_tokens: int) -> list[list[int]]:
    """Plain greedy decoding of every prompt: what lossless speculative decoding must reproduce."""
    dec = SpecDecoder(target, method="none")
    return [dec.generate(p, max_new_tokens).tokens for p in prompt_ids]


def evaluate(target, tokenizer, head=None, method: str = "none", k: int = 1, prompts: Sequence = (),
             max_new_tokens: int = 64, temperature: float = 0.0, seed: int = 0,
             reference: list[list[int]] | None = None, warmup: bool = True, decoder: SpecDecoder | None = None,
             repeats: int = 1) -> dict:
    """One configuration over a prompt set -> the ``peagle-nb eval --json`` record.

    ``lossless`` (temperature 0): every output equals plain greedy decoding (``reference``, computed
    when not given). At temperature > 0 it is None: the distribution is checked statistically instead.
    """
    prompt_ids = encode_prompts(tokenizer, prompts)
    if not prompt_ids:
        raise ValueError("no prompts to evaluate")
    dec = decoder or SpecDecoder(target, tokenizer, head, method, k)
    if warmup:  # first calls pay for allocation / kernel selection; keep them out of the timings
        dec.generate(prompt_ids[0], min(8, max_new_tokens), temperature, seed)
    results = [min((dec.generate(p, max_new_tokens, temperature, seed + i) for _ in range(max(repeats, 1))),
                   key=lambda r: r.total_ms) for i, p in enumerate(prompt_ids)]
    steps = [s for r in results for s in r.steps]
    accepted = [s.accepted for s in steps]
    n_tokens = sum(len(r.tokens) for r in results)
    total_ms = sum(r.total_ms for r in results)
    kk = dec.k
    summary = metrics.summarize(accepted, kk)
    lossless = None
    if temperature <= 0:
        if method == "none":
            lossless = True
        else:
            ref = reference if reference is not None else greedy_reference(target, prompt_ids, max_new_tokens)
            lossless = all(r.tokens == g for r, g in zip(results, ref))
    n_steps = max(len(steps), 1)
    return {
        "method": method,
        "k": kk,
        "n_prompts": len(prompt_ids),
        "max_new_tokens": max_new_tokens,
        "temperature": temperature,
        "tau": summary["tau"] if method != "none" else 1.0,
        "accept_rate_per_position": summary["accept_rate_per_position"],
        "conditional_alpha": summary["conditional_alpha"],
        "steps": len(steps),
        "tokens": n_tokens,
        "tokens_per_s": n_tokens / (total_ms / 1e3) if total_ms > 0 else 0.0,
        "draft_ms_per_step": sum(s.draft_ms for s in steps) / n_steps,
        "verify_ms_per_step": sum(s.verify_ms for s in steps) / n_steps,
        "step_ms": sum(s.draft_ms + s.verify_ms for s in steps) / n_steps,
        "prefill_ms": sum(r.prefill_ms for r in results) / len(results),
        "lossless": lossless,
    }


def sweep(target, tokenizer, heads: dict, prompt_sets: dict[str, Sequence], ks: Iterable[int] = range(1, 11),
          max_new_tokens: int = 64, temperature: float = 0.0, progress=None, deadline: float | None = None,
          repeats: int = 1) -> list[dict]:
    """none + each method in ``heads`` ({"eagle3": head, "peagle": head}) x K, on each prompt set.

    Returns flat run records (``prompt_set`` added) for ``peagle_nb.results.make_results``. Past
    ``deadline`` (a ``time.monotonic()`` value) no further configuration starts (a time-boxed GPU run).
    """
    import time

    runs = []
    for set_name, prompts in prompt_sets.items():
        if deadline is not None and time.monotonic() > deadline:
            break
        ids = encode_prompts(tokenizer, prompts)
        ref = greedy_reference(target, ids, max_new_tokens) if temperature <= 0 else None
        base = evaluate(target, tokenizer, None, "none", 1, ids, max_new_tokens, temperature, repeats=repeats)
        runs.append({"prompt_set": set_name, **base})
        if progress:
            progress(runs[-1])
        for method, head in heads.items():
            for k in ks:
                if deadline is not None and time.monotonic() > deadline:
                    break
                rec = evaluate(target, tokenizer, head, method, k, ids, max_new_tokens, temperature, reference=ref,
                               repeats=repeats)
                rec["speedup_vs_none"] = rec["tokens_per_s"] / base["tokens_per_s"] if base["tokens_per_s"] else None
                runs.append({"prompt_set": set_name, **rec})
                if progress:
                    progress(runs[-1])
    return runs


def best_k(runs: Sequence[dict], method: str, prompt_set: str | None = None, key: str = "tokens_per_s") -> dict:
    """The run of ``method`` with the highest ``key`` (tokens/s by default)."""
    cand = [r for r in runs if r["method"] == method and (prompt_set is None or r.get("prompt_set") == prompt_set)]
    if not cand:
        raise ValueError(f"no runs of method {method!r}" + (f" on {prompt_set!r}" if prompt_set else ""))
    return max(cand, key=lambda r: r[key])


def summarize_sweep(runs: Sequence[dict]) -> dict:
    """Per prompt set: each method's best K (tokens/s), P-EAGLE's speedup over EAGLE-3 at the best K of
    each, tau at K=7, and the drafting-cost ratio K_max / K=1 (P-EAGLE ~flat, EAGLE-3 ~linear)."""
    out = {}
    for ps in sorted({r.get("prompt_set") for r in runs}, key=str):
        rs = [r for r in runs if r.get("prompt_set") == ps]
        s: dict = {}
        methods = sorted({r["method"] for r in rs} - {"none"})
        for m in methods:
            b = best_k(rs, m)
            s[f"{m}.best_k"] = b["k"]
            s[f"{m}.best_tokens_per_s"] = b["tokens_per_s"]
            mr = sorted((r for r in rs if r["method"] == m), key=lambda r: r["k"])
            k7 = [r for r in mr if r["k"] == 7]
            if k7:
                s[f"{m}.k7.tau"] = k7[0]["tau"]
            if len(mr) > 1 and mr[0]["draft_ms_per_step"] > 0:
                s[f"{m}.draft_cost_ratio_k{mr[-1]['k']}_vs_k{mr[0]['k']}"] = (
                    mr[-1]["draft_ms_per_step"] / mr[0]["draft_ms_per_step"])
            s[f"{m}.lossless_all"] = all(r["lossless"] is not False for r in mr)
        none = [r for r in rs if r["method"] == "none"]
        if none:
            s["none.tokens_per_s"] = none[0]["tokens_per_s"]
        if {"eagle3", "peagle"} <= set(methods):
            s["speedup_peagle_over_eagle3_at_best_k"] = s["peagle.best_tokens_per_s"] / s["eagle3.best_tokens_per_s"]
            if none:
                s["peagle.speedup_vs_none_at_best_k"] = s["peagle.best_tokens_per_s"] / s["none.tokens_per_s"]
                s["eagle3.speedup_vs_none_at_best_k"] = s["eagle3.best_tokens_per_s"] / s["none.tokens_per_s"]
        out[ps] = s
    return out


def sweep_to_results(target, tokenizer, heads: dict, prompt_sets: dict, ks=range(1, 11), max_new_tokens: int = 64,
                     progress=None, notes: str | None = None, draft_cost: list[dict] | None = None,
                     deadline: float | None = None, repeats: int = 1) -> dict:
    """Run :func:`sweep` and wrap it as a ``peagle_nb.results`` document (plus a ``summary`` object)."""
    from peagle_nb import results

    runs = sweep(target, tokenizer, heads, prompt_sets, ks, max_new_tokens, progress=progress, deadline=deadline,
                 repeats=repeats)
    doc = results.make_results(
        "engine", runs,
        model={"target": getattr(target.config, "_name_or_path", "") or "tiny-target",
               "heads": {m: {"layers": h.config.num_hidden_layers, "trained_k": h.trained_k} for m, h in heads.items()},
               "dtype": str(next(target.parameters()).dtype)},
        notes=notes or f"batch 1, greedy, {max_new_tokens} new tokens per prompt, ignore EOS; "
                       "draft/verify ms are wall-clock per verification step; tokens_per_s = generated tokens / "
                       "wall time of generate() incl. prefill, after one warm-up generation per configuration"
                       + (f"; fastest of {repeats} runs per prompt" if repeats > 1 else ""))
    doc["summary"] = summarize_sweep(runs)
    if draft_cost:
        doc["draft_cost"] = draft_cost
    return results.validate(doc)
