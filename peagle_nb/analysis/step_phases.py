"""A decoding step taken apart, measured with the lean engine: each phase's time per K, EAGLE-3's drafting split
into its first pass and its chain passes, a step as a timeline of phases, and the best-K comparison of a sweep
with its spread. Explained in notebooks 02 (EAGLE-3's cost per K), 03 (timelines, cost vs K, best K) and 04
(the share of a step spent building the drafter's batch).

A step of the lean engine (``peagle_nb.engine.lean.LeanDecoder``) runs four phases: ``build`` (the drafter's
batch from the last verification), ``draft`` (P-EAGLE: one pass; EAGLE-3: one pass, then K-1 single-row passes),
``verify`` (the target over K+1 tokens) and ``update``. ``LeanDecoder.phase_ms`` times each phase alone: a
CUDA graph's device time on a GPU, the host time of one eager call on a CPU. A row is a
:class:`~peagle_nb.engine.phase_record.StepPhases`, or its flat form (the ``phases`` rows of
``data/results/engine_*.json``: ``build_ms``, ``draft_ms``, ``verify_ms``, ``update_ms``; ``plain_ms`` for plain
decoding), so measured and recorded rows go through the same functions; a sweep's summary is read as
:class:`~peagle_nb.engine.sweep_summary.SweepSummary`.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence

from peagle_nb.engine.phase_record import PHASES as PHASES  # the phases' names, read here by notebooks and tests
from peagle_nb.engine.phase_record import StepPhases, as_phases
from peagle_nb.engine.sweep_summary import OverSweeps, read_summaries

Row = StepPhases | Mapping  # a typed row or its flat form


def _spread(values: Sequence[float]) -> dict[str, float]:
    from peagle_nb.engine.evaluate import spread

    return spread(values)


def measure_phases(target, tokenizer, prompt_ids: Sequence[int], head=None, method: str = "none",
                   ks: Iterable[int] = (1,), repeats: int = 5, reps: int = 10, builder: str = "fused",
                   warm_tokens: int = 16) -> list[dict]:
    """Per K: a lean decoder generates ``warm_tokens`` greedily after ``prompt_ids`` (a real steady state), then
    ``phase_ms(reps)`` runs ``repeats`` times. Each row (a :class:`StepPhases` in its flat form, for tables) holds
    every phase's median over the repeats with its p10 / p90 (``<phase>_ms``, ``<phase>_ms_p10``,
    ``<phase>_ms_p90``) and ``step_ms``, the median over repeats of the sum of the phases."""
    from peagle_nb.engine.lean import LeanDecoder

    if repeats < 1 or reps < 1:
        raise ValueError(f"repeats and reps must be >= 1, got {repeats} and {reps}")
    rows = []
    for k in ([1] if method == "none" else list(ks)):
        dec = LeanDecoder(target, tokenizer, head, method, k, builder=builder)
        dec.generate(list(prompt_ids), warm_tokens)
        samples = [dec.phase_ms(reps) for _ in range(repeats)]
        spreads = {}
        for name in samples[0]:
            sp = _spread([s[name] for s in samples])
            spreads |= {f"{name}_ms": sp["median"], f"{name}_ms_p10": sp["p10"], f"{name}_ms_p90": sp["p90"]}
        row = StepPhases(method=method, k=dec.k, builder=builder, repeats=repeats, reps=reps, **spreads,
                         step_ms=_spread([sum(s.values()) for s in samples])["median"])
        rows.append(row.to_dict())
    return rows


def step_ms(row: Row) -> float:
    """A phases row's step time: the sum of its phases (plain decoding: its one target step)."""
    return as_phases(row).phase_sum_ms


def build_share(row: Row) -> float:
    """Share of a step's time spent building the drafter's batch (notebook 04)."""
    p = as_phases(row)
    return float(p.phase_ms("build")) / p.phase_sum_ms


def draft_ms_per_k(rows: Sequence[Row], method: str) -> dict[int, float]:
    """``{K: draft_ms}`` of one method's rows, sorted by K."""
    typed = sorted(map(as_phases, rows), key=lambda r: r.k)
    return {int(r.k): float(r.phase_ms("draft")) for r in typed if r.method == method}


def linear_fit(xs: Sequence[float], ys: Sequence[float]) -> dict[str, float]:
    """Least-squares ``y = intercept + slope * x`` and its R^2 (1.0 when the points are exactly on the line)."""
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError(f"a straight-line fit needs at least two (x, y) pairs, got {len(xs)} x and {len(ys)} y")
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError("a straight-line fit needs at least two different x values")
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    intercept = my - slope * mx
    ss_res = sum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys))
    ss_tot = sum((y - my) ** 2 for y in ys)
    return {"slope": slope, "intercept": intercept, "r2": 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0}


def chain_split(rows: Sequence[Row]) -> dict[str, float]:
    """EAGLE-3's drafting at K = its first pass + K-1 chain passes. ``first_pass_ms``: the drafting phase at K=1
    (the first pass alone); ``chain_pass_ms``: the slope of the drafting phase over K (least squares), i.e. what
    one more draft adds; ``r2``: how straight the line is."""
    per_k = draft_ms_per_k(rows, "eagle3")
    if 1 not in per_k or len(per_k) < 2:
        raise ValueError(f"EAGLE-3's split needs its drafting phase at K=1 and at least one other K; got K = "
                         f"{sorted(per_k)}")
    fit = linear_fit(list(per_k), list(per_k.values()))
    return {"first_pass_ms": per_k[1], "chain_pass_ms": fit["slope"], "fit_intercept_ms": fit["intercept"],
            "r2": fit["r2"]}


def step_segments(row: Row, first_pass_ms: float | None = None) -> list[tuple[str, float]]:
    """One step as ``[(phase, ms), ...]`` in the order it runs. EAGLE-3's drafting is drawn as its passes: the
    first one (``first_pass_ms``, from :func:`chain_split`) and K-1 chain passes sharing the rest of the measured
    drafting phase at this K equally, so the segments add up to the row's measured phases."""
    p = as_phases(row)
    if p.plain:
        return [("target step", float(p.plain_ms))]
    method, k, draft = p.method, int(p.k), float(p.draft_ms)
    segs = [("build", float(p.build_ms))]
    if method == "eagle3" and k > 1:
        if first_pass_ms is None:
            raise ValueError("EAGLE-3 at K > 1 needs first_pass_ms (chain_split of its rows) to draw its passes")
        first = min(float(first_pass_ms), draft)
        segs.append(("draft pass 1", first))
        segs += [(f"draft pass {j}", (draft - first) / (k - 1)) for j in range(2, k + 1)]
    elif method == "eagle3":
        segs.append(("draft pass 1", draft))
    else:
        segs.append((f"draft pass ({k} slots)", draft))
    return segs + [("verify", float(p.verify_ms)), ("update", float(p.update_ms))]


def find_row(rows: Sequence[Row], method: str, k: int | None = None, **equal) -> StepPhases:
    """The row of ``method`` at ``k`` (plain decoding: ``k`` ignored) whose other fields equal ``equal``."""
    typed = [as_phases(r) for r in rows]
    for r in typed:
        if r.method == method and (method == "none" or k is None or int(r.k) == k) and \
                all(getattr(r, key, None) == v for key, v in equal.items()):
            return r
    have = sorted({(r.method, r.k) for r in typed})
    raise ValueError(f"no phases row for {method} K={k} {equal or ''}; rows hold {have}")


def verdict(ratio: OverSweeps | Mapping[str, float]) -> str:
    """P-EAGLE / EAGLE-3 at each one's best K over sweeps: faster only if every sweep says so (min > 1 or
    max < 1); a spread that straddles 1 is a tie (``engine.evaluate.ratio_verdict``, the sweep summary's rule)."""
    from peagle_nb.engine.evaluate import ratio_verdict

    spread = ratio if isinstance(ratio, OverSweeps) else OverSweeps.from_dict(ratio)
    return ratio_verdict([spread.min, spread.max])


def best_k_rows(summary: Mapping[str, Mapping], label: str) -> list[dict]:
    """One row per prompt set of a sweep's ``summary``: each method's best K (median over sweeps, and per sweep),
    its speedup over plain decoding and the P-EAGLE / EAGLE-3 ratio at each one's best K, min / median / max over
    the sweeps, with the verdict that spread supports."""
    rows = []
    for ps, s in read_summaries(summary).items():
        ratio = s.peagle_over_eagle3_at_best_k
        row = {"results": label, "set": ps, "sweeps": s.sweeps, "ratio": ratio.to_dict(), "verdict": verdict(ratio)}
        for m in ("eagle3", "peagle"):
            ms = s.method(m)
            row[f"{m}.best_k"] = ms.best_k
            row[f"{m}.best_k_per_sweep"] = list(ms.best_k_per_sweep)
            row[f"{m}.speedup_vs_none"] = ms.speedup_vs_none_at_best_k.to_dict()
        rows.append(row)
    return rows


LABELS = {"none": "plain decoding", "eagle3": "EAGLE-3", "peagle": "P-EAGLE"}


def label(method: str, k: int) -> str:
    """``"EAGLE-3 K=3"``; plain decoding has no K."""
    return LABELS[method] if method == "none" else f"{LABELS[method]} K={k}"


def _runs_at(runs: Sequence[Mapping], method: str, k: int, prompt_set: str) -> list[Mapping]:
    return [r for r in runs if r["method"] == method and r.get("prompt_set") == prompt_set
            and (method == "none" or int(r["k"]) == k)]


def tau_at(runs: Sequence[Mapping], method: str, k: int, prompt_set: str) -> float | None:
    """tau of ``method`` at ``k`` on ``prompt_set`` in a sweep's runs (median over sweeps; None if not run)."""
    if method == "none":
        return 1.0
    rs = _runs_at(runs, method, k, prompt_set)
    return statistics.median(r["tau"] for r in rs) if rs else None


def timelines(phases: Sequence[Row], configs: Sequence[tuple[str, int]], taus: Mapping[tuple[str, int], float]
              ) -> tuple[dict[str, list[tuple[str, float]]], list[dict]]:
    """For each ``(method, K)`` in ``configs``: its step as :func:`step_segments` (EAGLE-3's passes from
    :func:`chain_split` of ``phases``) and a summary row: step ms, tau (``taus``), ms per generated token and the
    speedup over plain decoding these phase times alone predict, ``tau x plain step / step``."""
    first = chain_split(phases)["first_pass_ms"] if any(as_phases(r).method == "eagle3" for r in phases) else None
    plain = step_ms(find_row(phases, "none"))
    lines, rows = {}, []
    for method, k in configs:
        row = find_row(phases, method, k)
        name = label(method, k)
        lines[name] = step_segments(row, first)
        ms, tau = step_ms(row), taus.get((method, k))
        rows.append({"step": name, "method": method, "k": 0 if method == "none" else k, "step_ms": ms, "tau": tau,
                     "ms_per_token": ms / tau if tau else None,
                     "phases_predict_speedup": tau * plain / ms if tau else None})
    return lines, rows


def speedup_breakdown(runs: Sequence[Mapping], phases: Sequence[Row], method: str, k: int,
                      prompt_set: str) -> dict[str, float]:
    """From what a step's phases predict to what a sweep measured, one cause at a time (medians over sweeps):

    - ``phases``: tau x plain step / step, both from the phases timed alone (device time on a GPU);
    - ``step_wall``: the same with the sweep's wall time per step (host work between and around the phases);
    - ``decode``: decoding tokens/s over plain decoding's (the steps of real generations, no prefill);
    - ``end_to_end``: tokens/s over plain decoding's, prefill included (what the sweep's best K is chosen on);
    - ``prefill_ms`` and ``plain_prefill_ms``: one prompt's prefill (the drafter's included);
    - ``tau_for_2x``: the tau a step of these phases needs to decode twice as fast as plain decoding;
      ``ceiling``: the phases' speedup if every draft were accepted (K+1 tokens per step)."""
    tau = tau_at(runs, method, k, prompt_set)
    if tau is None:
        raise ValueError(f"no {method} K={k} runs on {prompt_set!r} in this sweep")
    row, plain = find_row(phases, method, k), find_row(phases, "none")
    sweeps = sorted({r.get("sweep", 0) for r in runs})
    by = {s: {m: [r for r in _runs_at(runs, m, k, prompt_set) if r.get("sweep", 0) == s]
              for m in ("none", method)} for s in sweeps}
    pairs = [(v["none"][0], v[method][0]) for v in by.values() if v["none"] and v[method]]

    def med(f) -> float:  # median over the sweeps of f(plain run, method's run)
        return statistics.median(f(b, r) for b, r in pairs)

    return {"tau": tau, "phases": tau * step_ms(plain) / step_ms(row),
            "tau_for_2x": 2 * step_ms(row) / step_ms(plain), "ceiling": (k + 1) * step_ms(plain) / step_ms(row),
            "step_wall": med(lambda b, r: r["tau"] * b["step_ms"] / r["step_ms"]),
            "decode": med(lambda b, r: r["decode_tokens_per_s"] / b["decode_tokens_per_s"]),
            "end_to_end": med(lambda b, r: r["tokens_per_s"] / b["tokens_per_s"]),
            "prefill_ms": med(lambda b, r: r["prefill_ms"]), "plain_prefill_ms": med(lambda b, r: b["prefill_ms"])}


def breakeven_k(rows: Sequence[Row]) -> int | None:
    """The smallest measured K at which EAGLE-3's drafting phase costs more than P-EAGLE's (None: never)."""
    e3, pe = draft_ms_per_k(rows, "eagle3"), draft_ms_per_k(rows, "peagle")
    return next((k for k in sorted(set(e3) & set(pe)) if e3[k] > pe[k]), None)


def sampled_phase_rows(phases: Sequence[Row], sampler_rows: Sequence[Row], k: int) -> list[dict]:
    """The three phases that sampling touches, from a results file's ``phases`` (greedy) and ``sampler_comparison``
    rows: a plain step, P-EAGLE's verification of K+1 rows, P-EAGLE's draft pass and EAGLE-3's K draft passes, each
    greedy, sampled with the fused kernels and sampled with their PyTorch op chains (notebooks 01 and 04). Each row
    carries its ratio to the greedy phase (the comparison's own greedy rows where it has them, else ``phases``)."""
    phases, sampler_rows = [as_phases(r) for r in phases], [as_phases(r) for r in sampler_rows]
    greedy = {(r.method, r.k): r for r in phases if (r.mode or "greedy") == "greedy"}
    greedy.update({(r.method, r.k): r for r in sampler_rows if r.mode == "greedy"})  # the same run: preferred
    sampled = {(r.sampler, r.method, r.k): r for r in sampler_rows if (r.mode or "sampled") == "sampled"}
    picks = [("plain step", "plain", "none", 0, "plain"),
             (f"verify K+1 (K={k})", f"verify_k{k}", "peagle", k, "verify"),
             (f"P-EAGLE draft (K={k})", f"peagle_draft_k{k}", "peagle", k, "draft"),
             (f"EAGLE-3 draft (K={k})", f"eagle3_draft_k{k}", "eagle3", k, "draft")]
    out = []
    for label, key, method, kk, phase in picks:
        g = greedy.get((method, kk))
        if g is None or ("fused", method, kk) not in sampled:
            continue
        base = float(g.phase_ms(phase))
        for mode, ms in (("greedy", base), ("sampled, fused kernels", sampled[("fused", method, kk)].phase_ms(phase)),
                         ("sampled, PyTorch op chain", sampled[("reference", method, kk)].phase_ms(phase))):
            out.append({"phase": label, "key": key, "mode": mode, "ms": float(ms), "over_greedy": float(ms) / base})
    return out


def regime_rows(doc: Mapping) -> list[dict]:
    """One row per (temperature, output length, prompt set) of an engine record's ``regimes``: each method's speed
    over plain decoding at its best K on time per output token (decode only) and end to end, the P-EAGLE / EAGLE-3
    ratios with their spread over sweeps and verdicts, tau at K=7 and TTFT (notebooks 01 and 03)."""
    rows = []
    for reg in doc.get("regimes", []):
        for ps, s in sorted(read_summaries(reg["summary"]).items()):
            if s.peagle_over_eagle3_tpot is None:
                continue
            e3, pe = s.method("eagle3"), s.method("peagle")
            rows.append({
                "temperature": reg["temperature"], "tokens": reg["max_new_tokens"], "prompt_set": ps,
                "prefill": reg["runs"][0].get("prefill", "eager") if reg["runs"] else None,
                "eagle3_tpot_speedup": e3.tpot.tpot_speedup_vs_none.median,
                "peagle_tpot_speedup": pe.tpot.tpot_speedup_vs_none.median,
                "eagle3_e2e_speedup": e3.speedup_vs_none_at_best_k.median,
                "peagle_e2e_speedup": pe.speedup_vs_none_at_best_k.median,
                "p_over_e_tpot": s.peagle_over_eagle3_tpot.median,
                "p_over_e_tpot_min": s.peagle_over_eagle3_tpot.min,
                "p_over_e_tpot_max": s.peagle_over_eagle3_tpot.max,
                "tpot_verdict": s.peagle_over_eagle3_tpot_verdict,
                "p_over_e_e2e": s.peagle_over_eagle3_at_best_k.median,
                "p_over_e_e2e_min": s.peagle_over_eagle3_at_best_k.min,
                "p_over_e_e2e_max": s.peagle_over_eagle3_at_best_k.max,
                "e2e_verdict": s.peagle_over_eagle3_verdict,
                "eagle3_tau_k7": e3.at_k7.tau if e3.at_k7 else None,
                "peagle_tau_k7": pe.at_k7.tau if pe.at_k7 else None,
                "none_ttft_ms": s.none_ttft_ms, "eagle3_ttft_ms": e3.tpot.ttft_ms, "peagle_ttft_ms": pe.tpot.ttft_ms})
    return rows


def tau_before_after(doc: Mapping, temperature: float, tokens: int, edge: int, k: int = 7) -> list[dict]:
    """tau at K before and after output token ``edge`` in the ``tokens``-long regime (first sweep), per method and
    prompt set: a head trained on sequences of ``edge`` positions drafts worse past them (notebook 03)."""
    from peagle_nb.analysis.metrics import tau_by_output_position

    reg = next((r for r in doc.get("regimes", []) if r["temperature"] == temperature and r["max_new_tokens"] == tokens),
               None)
    if reg is None:
        raise ValueError(f"no regime at temperature {temperature} and {tokens} tokens in this record")
    out = []
    for r in reg["runs"]:
        if r["method"] != "none" and r["k"] == k and r.get("sweep", 0) == 0:
            early, late = tau_by_output_position(r["accepted_per_step"], r["steps_per_prompt"], edge)
            out.append({"method": r["method"], "prompt_set": r["prompt_set"], "tau_before": early, "tau_after": late})
    return out
