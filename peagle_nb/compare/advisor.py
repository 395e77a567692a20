"""Best-K advisor: per method and concurrency, the K that maximises predicted throughput.

Explained in notebook 07. Works on any :class:`StepCost` (fitted from this machine's measurements,
or the GPU profile derived from published numbers in :mod:`peagle_nb.compare.published`).
"""

from __future__ import annotations

from typing import Mapping, Sequence

from peagle_nb.compare.acceptance import AcceptanceCurve
from peagle_nb.compare.predict import predict
from peagle_nb.compare.step_model import StepCost


def best_k(cost: StepCost, curve: AcceptanceCurve, method: str, concurrency: int,
           ks: Sequence[int]) -> dict:
    """The prediction with the highest tokens/s over ``ks`` (ties go to the smaller K)."""
    if not ks:
        raise ValueError("best_k: no candidate K given")
    preds = [predict(cost, curve, method, k, concurrency) for k in sorted(ks)]
    return max(preds, key=lambda p: (p["tokens_per_s"], -p["k"]))


def advise(cost: StepCost, curves: Mapping[str, AcceptanceCurve], concurrencies: Sequence[int],
           ks: Mapping[str, Sequence[int]] | Sequence[int]) -> list[dict]:
    """One row per concurrency: each method's best K and speedup over plain decoding, P-EAGLE's
    predicted speedup over EAGLE-3 (both at their best K), and the recommended configuration.

    ``ks`` is one K range for all methods or a per-method mapping (P-EAGLE is limited by the depth
    its head was trained for, e.g. ``range(1, 11)`` for amazon/GPT-OSS-20B-P-EAGLE).
    """
    rows = []
    for c in concurrencies:
        row: dict = {"concurrency": c}
        for method, curve in curves.items():
            cand = ks[method] if isinstance(ks, Mapping) else ks
            b = best_k(cost, curve, method, c, cand)
            row[f"{method}_best_k"] = b["k"]
            row[f"{method}_tau"] = b["tau"]
            row[f"{method}_tokens_per_s"] = b["tokens_per_s"]
            row[f"{method}_speedup"] = b["speedup"]
        if "peagle" in curves and "eagle3" in curves:
            row["peagle_over_eagle3"] = row["peagle_tokens_per_s"] / row["eagle3_tokens_per_s"]
        best = max(curves, key=lambda m: row[f"{m}_tokens_per_s"])
        if row[f"{best}_speedup"] <= 1.0:
            row["recommendation"] = "none (speculation does not pay off)"
        else:
            row["recommendation"] = f"{best} K={row[f'{best}_best_k']}"
        rows.append(row)
    return rows


def measured_best(runs: Sequence[dict]) -> list[dict]:
    """From end-to-end measurements alone (e.g. vLLM benchmarks: tokens/s per method, K and concurrency):
    per concurrency, each method's best measured K and tokens/s, and P-EAGLE over EAGLE-3."""
    by_c: dict[int, dict] = {}
    for r in runs:
        if r.get("method") not in ("none", "eagle3", "peagle") or not r.get("tokens_per_s"):
            continue
        c = int(r.get("concurrency") or r.get("batch_size") or 1)
        row = by_c.setdefault(c, {"concurrency": c})
        m = r["method"]
        if r["tokens_per_s"] > row.get(f"{m}_tokens_per_s", 0.0):
            row[f"{m}_tokens_per_s"] = float(r["tokens_per_s"])
            row[f"{m}_best_k"] = int(r.get("k") or 0)
            if r.get("tau") is not None:
                row[f"{m}_tau"] = float(r["tau"])
    rows = []
    for c in sorted(by_c):
        row = by_c[c]
        if "eagle3_tokens_per_s" in row and "peagle_tokens_per_s" in row:
            row["peagle_over_eagle3"] = row["peagle_tokens_per_s"] / row["eagle3_tokens_per_s"]
        for m in ("eagle3", "peagle"):
            if f"{m}_tokens_per_s" in row and "none_tokens_per_s" in row:
                row[f"{m}_speedup"] = row[f"{m}_tokens_per_s"] / row["none_tokens_per_s"]
        best = max((m for m in ("none", "eagle3", "peagle") if f"{m}_tokens_per_s" in row),
                   key=lambda m: row[f"{m}_tokens_per_s"])
        row["winner"] = best if best == "none" else f"{best} K={row[f'{best}_best_k']}"
        rows.append(row)
    return rows


def tau_same_prompts_check(runs: Sequence[dict]) -> list[dict]:
    """Runs of an end-to-end file that also carry ``tau_engine`` (the suite's engine on the SAME prompts,
    generation length and K, see ``peagle_nb.lab.sweeps.vllm_sweep``): the acceptance length vLLM counted vs the
    engine's. Same heads and inputs, greedy: these should agree."""
    rows, seen = [], set()
    for r in runs:
        if r.get("tau") and r.get("tau_engine") and r.get("method") in ("eagle3", "peagle"):
            kk = (r["method"], int(r["k"]), str(r.get("prompt_set") or ""))
            if kk not in seen:
                seen.add(kk)
                rows.append({"method": kk[0], "k": kk[1], "prompt_set": kk[2], "tau_vllm": float(r["tau"]),
                             "tau_engine": float(r["tau_engine"]),
                             "rel_diff": (float(r["tau"]) - float(r["tau_engine"])) / float(r["tau_engine"])})
    return rows


def tau_cross_check(runs_a: Sequence[dict], runs_b: Sequence[dict]) -> list[dict]:
    """Acceptance length of the same (method, K, prompt set) measured by two runtimes (e.g. the suite's
    engine and vLLM) in two different files: acceptance is a property of the heads, but the files may use
    different prompt counts and generation lengths, so expect only rough agreement (see
    :func:`tau_same_prompts_check` for the exact comparison)."""
    def key(r):
        ps = str(r.get("prompt_set") or "").removesuffix(".jsonl")
        return (r.get("method"), int(r.get("k") or 0), ps)

    a = {key(r): float(r["tau"]) for r in runs_a if r.get("method") in ("eagle3", "peagle") and r.get("tau")}
    rows = []
    for r in runs_b:
        kk = key(r)
        if kk in a and r.get("tau") and all(kk != (x["method"], x["k"], x["prompt_set"]) for x in rows):
            rows.append({"method": kk[0], "k": kk[1], "prompt_set": kk[2], "tau_a": a[kk], "tau_b": float(r["tau"]),
                         "rel_diff": (float(r["tau"]) - a[kk]) / a[kk]})
    return rows
