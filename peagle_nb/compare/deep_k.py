"""Would a deeper K change the verdict? Each method's time per output token forecast past the K it was measured at.
Explained in notebook 08 (the deep-K section).

P-EAGLE's promise is a drafting cost that stays flat in K, so it can afford a deeper K than EAGLE-3, whose every
extra draft costs a drafter pass. The regime map sweeps K up to 7 (the blog's range), and where both methods' best
K is the deepest measured, the map alone cannot say whether going deeper would turn the verdict. The forecast for one
regime point (temperature, output length, prompt set) uses only that point's own runs:

- acceptance: :func:`peagle_nb.compare.acceptance.curve_from_runs` (the per-position rates pooled over the runs, then
  the mean conditional rate of the last three measured depths held constant); with greedy verification the drafts
  of a step are a prefix of the drafts for any larger K, and sampled drafts are drawn in the same order, so one curve
  serves every K;
- step: :func:`peagle_nb.compare.step_model.fit_step_cost` on the point's phases (EAGLE-3 one drafter pass per draft,
  P-EAGLE one pass over K slots, verification linear in the tokens verified), plus each method's bookkeeping (its
  median over K).

Assumptions, generous to the deeper K: a head keeps its tail rate past the depth it was trained to (the recorded
heads train 7 EAGLE-3 unroll steps and 8 P-EAGLE slots; an untrained slot is accepted far less: the tiny family's
deep-K sweep shows it), and verification stays linear in the tokens verified. :func:`check_rows` fits both parts on
the runs with K up to ``fit_max_k`` only and sets the forecast beside the runs above it: the model checked on points
it was not fitted to. Measured on the H100 (both families, ``data/results/deep_k/``), the second assumption holds
from 4 to 13 verified tokens (flat) and breaks at 17 (K=16): :func:`phase_rows` shows the step, which a forecast
fitted below it cannot see; :func:`profiled_rows` forecasts with the measured shape (:func:`verify_profile`)
instead. :func:`reach_rows` (how deep a served head's drafts are accepted) and :func:`prompt_pace_rows` (per prompt,
who is faster per token) read a deep sweep beside the forecast.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence

from peagle_nb.compare.acceptance import AcceptanceCurve, curve_from_runs
from peagle_nb.compare.heads_v3 import per_prompt_tau
from peagle_nb.compare.predict import predict
from peagle_nb.compare.step_model import fit_step_cost

METHODS = ("eagle3", "peagle")
TAIL_CAP = 0.99  # the highest tail tried (curve_from_runs caps a tail there too, so that tau stays finite)
DEEP_KS = tuple(range(1, 17))  # past the map's 7 to 16, the deepest K the GPU sweep measured (data/results/deep_k/)


def _points(doc: Mapping) -> Iterable[tuple[float, int, str, list[dict]]]:
    for reg in doc.get("regimes", []):
        for ps in sorted({r["prompt_set"] for r in reg["runs"]}):
            yield reg["temperature"], reg["max_new_tokens"], ps, [r for r in reg["runs"] if r["prompt_set"] == ps]


def _bookkeeping(runs: Sequence[dict], method: str) -> float:
    return statistics.median(r.get("bookkeeping_ms_per_step") or 0.0 for r in runs if r["method"] == method)


def _step_ms(run: Mapping) -> float:
    """A run's whole step: its recorded ``step_ms``, else the sum of its phases."""
    return run.get("step_ms") or (run["draft_ms_per_step"] + run["verify_ms_per_step"]
                                  + (run.get("bookkeeping_ms_per_step") or 0.0))


def fit_point(runs: Sequence[dict], max_k: int | None = None, label: str = "") -> dict:
    """The two halves of the forecast from one point's runs with K <= ``max_k`` (all when None): ``cost`` (the
    fitted :class:`StepCost`), per method its ``curve`` (:class:`AcceptanceCurve`) and ``bookkeeping`` (ms)."""
    use = [r for r in runs if max_k is None or r["method"] == "none" or r["k"] <= max_k]
    out: dict = {"cost": fit_step_cost(use, label=label or "deep-K forecast")}
    for m in METHODS:
        mine = [r for r in use if r["method"] == m]
        out[m] = {"curve": curve_from_runs(mine, label=f"{m} {label}"),  # pooled over K, as the scenarios pool
                  "bookkeeping": _bookkeeping(mine, m)}
    return out


def forecast(fit: Mapping, method: str, k: int, curve: AcceptanceCurve | None = None) -> dict:
    """tau, step time and time per output token (ms) of ``method`` at ``k`` from a :func:`fit_point` result
    (``curve`` replaces the fitted acceptance curve, for what-ifs)."""
    p = predict(fit["cost"], curve or fit[method]["curve"], method, k)
    step = p["step_ms"] + fit[method]["bookkeeping"]  # the model's draft + verify, and the engine's bookkeeping
    return {"k": k, "tau": p["tau"], "step_ms": step, "tpot_ms": step / p["tau"]}


def best_k(fit: Mapping, method: str, ks: Iterable[int], curve: AcceptanceCurve | None = None) -> dict:
    """The K in ``ks`` with the lowest forecast time per output token, with its forecast."""
    return min((forecast(fit, method, k, curve) for k in ks), key=lambda f: f["tpot_ms"])


def tail_needed(fit: Mapping, ratio_goal: float, ks: Sequence[int] = DEEP_KS) -> float | None:
    """The smallest constant conditional rate past P-EAGLE's measured depths (its measured rates kept up to there)
    at which P-EAGLE at its best K in ``ks`` reaches ``ratio_goal`` x EAGLE-3 at EAGLE-3's best K in ``ks`` on time
    per output token; None when even ``TAIL_CAP`` does not."""
    e3 = best_k(fit, "eagle3", ks)["tpot_ms"]
    rates = fit["peagle"]["curve"].rates

    def ratio(tail: float) -> float:
        return e3 / best_k(fit, "peagle", ks, AcceptanceCurve(rates, tail, "what-if", len(rates)))["tpot_ms"]

    lo, hi = 0.0, TAIL_CAP
    if ratio(hi) < ratio_goal:
        return None
    if ratio(lo) >= ratio_goal:
        return lo
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if ratio(mid) >= ratio_goal else (mid, hi)
    return hi


def deep_k_rows(doc: Mapping, ks: Sequence[int] = DEEP_KS, ratio_goal: float = 1.10) -> list[dict]:
    """Per regime point of an engine record: each method's best K, its tau there and P-EAGLE / EAGLE-3 on time per
    output token as the model forecasts them among the swept K (``swept_*``) and among ``ks`` (``deep_*``); each
    method's tail conditional rate; one EAGLE-3 pass and the verification at K=7 (ms, the fitted model); and the tail
    P-EAGLE would need for ``ratio_goal`` (:func:`tail_needed`). The model's time per output token is the step's over
    tau (every request's decode time over its tokens, pooled), the end-to-end view: a sweep summary's TPOT is the
    median over requests, which weights a request that loops (short steps, high tau) like one that does not."""
    rows = []
    for t, n, ps, runs in _points(doc):
        fit = fit_point(runs, label=f"T={t:g}, {n} tokens, {ps}")
        measured_ks = sorted({r["k"] for r in runs if r["method"] in METHODS})
        row: dict = {"temperature": t, "tokens": n, "prompt_set": ps, "swept_max_k": max(measured_ks)}
        for scope, scope_ks in (("swept", measured_ks), ("deep", list(ks))):
            best = {m: best_k(fit, m, scope_ks) for m in METHODS}
            row[f"{scope}_ratio"] = best["eagle3"]["tpot_ms"] / best["peagle"]["tpot_ms"]
            for m in METHODS:
                row[f"{scope}_{m}_best_k"] = best[m]["k"]
                row[f"{scope}_{m}_tau"] = best[m]["tau"]
                row[f"{scope}_{m}_tpot_ms"] = best[m]["tpot_ms"]
        for m in METHODS:
            row[f"{m}_tail_alpha"] = fit[m]["curve"].tail_alpha
        row["eagle3_pass_ms"] = fit["cost"].draft_ms("eagle3", 1)  # what one more EAGLE-3 draft adds to a step
        row["verify_ms_k7"] = fit["cost"].verify_ms(8)
        row["peagle_tail_needed"] = tail_needed(fit, ratio_goal, ks)
        rows.append(row)
    return rows


def check_rows(doc: Mapping, fit_max_k: int, max_k: Mapping[str, int] | None = None) -> list[dict]:
    """The forecast fitted on the runs with K <= ``fit_max_k`` beside every measured K above it, per regime point and
    method (``max_k`` caps a method's checked K, e.g. ``{"peagle": 8}``: slots past a P-EAGLE head's trained depth
    are outside the forecast's assumption): forecast and measured tau and time per output token (medians over the
    sweeps; the measured time is the step's, ``step_ms / tau``, as the forecast's) and their relative errors."""
    rows = []
    for t, n, ps, runs in _points(doc):
        fit = fit_point(runs, max_k=fit_max_k, label=f"T={t:g}, {n} tokens, {ps}, K<={fit_max_k}")
        for m in METHODS:
            for k in sorted({r["k"] for r in runs if r["method"] == m and r["k"] > fit_max_k}):
                if max_k and k > max_k.get(m, k):
                    continue
                mine = [r for r in runs if r["method"] == m and r["k"] == k]
                tau = statistics.median(r["tau"] for r in mine)
                tpot = statistics.median(_step_ms(r) / r["tau"] for r in mine)
                f = forecast(fit, m, k)
                rows.append({"temperature": t, "tokens": n, "prompt_set": ps, "method": m, "k": k,
                             "tau": tau, "tau_forecast": f["tau"], "tau_error": f["tau"] / tau - 1,
                             "tpot_ms": tpot, "tpot_forecast_ms": f["tpot_ms"], "tpot_error": f["tpot_ms"] / tpot - 1})
    return rows


def phase_rows(doc: Mapping, temperature: float = 0.0) -> list[dict]:
    """Per method and K at ``temperature``: the tokens one verification checks (K+1) and the median over every run
    (prompt sets and sweeps pooled) of the drafting, verification and bookkeeping ms per step. The verification
    column is what :func:`forecast` assumes linear in the tokens checked."""
    runs = [r for reg in doc.get("regimes", []) if reg["temperature"] == temperature for r in reg["runs"]]
    rows = []
    for m in METHODS:
        for k in sorted({r["k"] for r in runs if r["method"] == m}):
            mine = [r for r in runs if r["method"] == m and r["k"] == k]
            rows.append({"method": m, "k": k, "tokens verified": k + 1,
                         "draft_ms": statistics.median(r["draft_ms_per_step"] for r in mine),
                         "verify_ms": statistics.median(r["verify_ms_per_step"] for r in mine),
                         "verify_ms_min": min(r["verify_ms_per_step"] for r in mine),  # the spread over the runs
                         "verify_ms_max": max(r["verify_ms_per_step"] for r in mine),
                         "bookkeeping_ms": statistics.median(r.get("bookkeeping_ms_per_step") or 0.0 for r in mine)})
    return rows


def reach_rows(doc: Mapping, k: int, depths: Sequence[int] = (1, 4, 8, 12, 16)) -> list[dict]:
    """How deep a head's drafts are accepted where it is served at ``k``: per regime point and method, the share of
    verification steps (every run at ``k``, sweeps pooled) that accepted at least d drafts, for each d in ``depths``
    (<= ``k``). A slot a head was never trained for shows as a share that drops to zero past its trained depth."""
    if max(depths) > k:
        raise ValueError(f"depths {list(depths)} go past K={k}: a step accepts at most K drafts")
    rows = []
    for t, n, ps, runs in _points(doc):
        for m in METHODS:
            accepted = [a for r in runs if r["method"] == m and r["k"] == k for a in r["accepted_per_step"]]
            if accepted:
                rows.append({"temperature": t, "tokens": n, "prompt_set": ps, "method": m, "steps": len(accepted),
                             **{f"reach {d}": sum(a >= d for a in accepted) / len(accepted) for d in depths}})
    return rows


def prompt_pace_rows(doc: Mapping, temperature: float, prompt_set: str, tokens: int = 256,
                     sweep: int = 0) -> list[dict]:
    """Every prompt's tau at each method's best K by median TPOT (``heads_v3.per_prompt_tau``), beside the two
    methods' step times there (this sweep's runs): P-EAGLE is faster per token on a prompt when its share of
    EAGLE-3's tau exceeds its share of EAGLE-3's step (``peagle_ahead``). The median TPOT counts prompts; the
    end-to-end rate pools their steps, so a few prompts where P-EAGLE accepts far less can outweigh the rest."""
    rows = per_prompt_tau(doc, temperature, prompt_set, tokens, sweep)
    reg = next(r for r in doc["regimes"] if r["temperature"] == temperature and r["max_new_tokens"] == tokens)
    step = {m: _step_ms(next(r for r in reg["runs"] if r["prompt_set"] == prompt_set and r["sweep"] == sweep
                             and r["method"] == m and r["k"] == rows[0][f"{m}_k"])) for m in METHODS}
    ratio = step["peagle"] / step["eagle3"]
    return [{**r, "p_over_e_step": ratio, "peagle_ahead": r["p_over_e_tau"] > ratio} for r in rows]


def verify_profile(doc: Mapping, temperature: float = 0.0, base_k: int = 7) -> dict[int, float]:
    """Each swept K's verification time over base_k's (:func:`phase_rows`, the methods' medians pooled): the shape of
    the verification cost in K as a GPU measured it, to replace the forecast's straight line."""
    rows = phase_rows(doc, temperature)
    verify = {k: statistics.median(r["verify_ms"] for r in rows if r["k"] == k) for k in sorted({r["k"] for r in rows})}
    if base_k not in verify:
        raise ValueError(f"base K={base_k} was not swept (swept: {sorted(verify)})")
    return {k: v / verify[base_k] for k, v in verify.items()}


def profiled_rows(doc: Mapping, profile: Mapping[int, float], base_k: int = 7) -> list[dict]:
    """Per regime point of ``doc``: each method's best K among ``profile``'s K and P-EAGLE / EAGLE-3 on time per
    output token there, as :func:`deep_k_rows` forecasts them but with the verification at K set to the fitted one
    at ``base_k`` times ``profile[K]`` (:func:`verify_profile` of a deeper sweep of the same target shape on the same
    GPU kind) instead of the straight line."""
    rows = []
    for t, n, ps, runs in _points(doc):
        fit = fit_point(runs, label=f"T={t:g}, {n} tokens, {ps}")
        verify_base = fit["cost"].verify_ms(base_k + 1)

        def tpot(m: str, k: int) -> float:
            p = predict(fit["cost"], fit[m]["curve"], m, k)
            return (p["draft_ms"] + verify_base * profile[k] + fit[m]["bookkeeping"]) / p["tau"]

        best = {m: min(profile, key=lambda k, m=m: tpot(m, k)) for m in METHODS}
        rows.append({"temperature": t, "tokens": n, "prompt_set": ps,
                     **{f"{m}_best_k": best[m] for m in METHODS},
                     "ratio": tpot("eagle3", best["eagle3"]) / tpot("peagle", best["peagle"])})
    return rows


__all__ = ["TAIL_CAP", "DEEP_KS", "fit_point", "forecast", "best_k", "tail_needed", "deep_k_rows", "check_rows",
           "phase_rows", "reach_rows", "prompt_pace_rows", "verify_profile", "profiled_rows"]
