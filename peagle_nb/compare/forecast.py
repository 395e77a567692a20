"""Forecast the regime points a GPU record lacks: the GPU's measured step costs times acceptance measured on another
machine. Explained in notebooks 03 (tiny family) and 08 (family v3, section 7).

A point's P-EAGLE / EAGLE-3 on time per output token is the step-time model's
(:func:`peagle_nb.compare.regime.best_k_prediction`): ``(draft + verify + bookkeeping) / tau`` for every method and
K, each at its best K. The two inputs come apart cleanly:

- the step costs are the machine's: fitted on the GPU record's regime of the same output length, at the nearest
  temperature of the same kind (greedy with greedy, sampled with sampled: every T > 0 runs the same sampling
  kernels; a sampled point takes another sampled temperature's costs where there is one, so that measured sampled
  points test the transfer), pooled over that regime's prompt sets;
- tau is the models' and the text's: measured by an engine sweep on any machine (a CPU here), the same heads, the
  same prompts, the same K.

Where the GPU record did measure a point, its measured ratio sits beside the forecast, so the forecast is checked on
points that were measured and trusted elsewhere only as far as those checks allow.
"""

from __future__ import annotations

from collections.abc import Mapping
from statistics import median

from peagle_nb.analysis import step_phases
from peagle_nb.compare.regime import best_k_prediction
from peagle_nb.compare.step_model import fit_step_cost

SPEC = ("eagle3", "peagle")


def cost_regime(gpu_doc: Mapping, temperature: float, tokens: int, other_temperature: bool = False) -> Mapping:
    """The GPU record's regime whose step costs stand for (``temperature``, ``tokens``): the same output length and
    sampling kind, the nearest temperature. With ``other_temperature`` a sampled point takes another sampled
    temperature's costs where the record has one, so a point the GPU measured checks that costs carry across
    temperatures (the forecast's assumption) rather than fitting its own. Raises ValueError naming what the record
    lacks."""
    same = [r for r in gpu_doc.get("regimes", []) if r["max_new_tokens"] == tokens
            and (r["temperature"] > 0) == (temperature > 0) and r["runs"]]
    if other_temperature and temperature > 0:
        same = [r for r in same if r["temperature"] != temperature] or same
    if not same:
        kind = "sampled" if temperature > 0 else "greedy"
        raise ValueError(f"the GPU record has no {kind} regime over {tokens} tokens to take step costs from: sweep "
                         f"one (`engine_sweep --temperatures ... --lengths {tokens}`)")
    return min(same, key=lambda r: abs(r["temperature"] - temperature))


def _tau_k7(runs: list[dict], method: str) -> float | None:
    taus = [r["tau"] for r in runs if r["method"] == method and r["k"] == 7]
    return median(taus) if taus else None


def forecast_rows(gpu_doc: Mapping, tau_doc: Mapping) -> list[dict]:
    """One row per (temperature, output length, prompt set) of ``tau_doc``'s regimes: the forecast P-EAGLE /
    EAGLE-3 on TPOT with its best K and factors, where its costs and tau came from, tau at K=7 on both machines, and
    the GPU's measured ratio and the forecast's error where the GPU record has the point."""
    measured = {(r["temperature"], r["tokens"], r["prompt_set"]): r for r in step_phases.regime_rows(gpu_doc)}
    gpu_runs = {(reg["temperature"], reg["max_new_tokens"]): reg["runs"] for reg in gpu_doc.get("regimes", [])}
    out = []
    for reg in tau_doc.get("regimes", []):
        t, n = reg["temperature"], reg["max_new_tokens"]
        src = cost_regime(gpu_doc, t, n, other_temperature=True)
        cost_runs = src["runs"]
        cost = fit_step_cost(cost_runs, label=f"GPU T={src['temperature']:g}, {n} tokens, all prompt sets")
        for ps in sorted({r["prompt_set"] for r in reg["runs"]}):
            tau_runs = [r for r in reg["runs"] if r["prompt_set"] == ps]
            if not all(any(r["method"] == m for r in tau_runs) for m in SPEC):
                continue
            gpu_here = [r for r in gpu_runs.get((t, n), []) if r["prompt_set"] == ps]
            row = {"temperature": t, "tokens": n, "prompt_set": ps, "costs_from_T": src["temperature"],
                   **best_k_prediction(cost, cost_runs, tau_runs),
                   **{f"{m}_tau_k7": _tau_k7(tau_runs, m) for m in SPEC},
                   **{f"{m}_tau_k7_gpu": _tau_k7(gpu_here, m) for m in SPEC}}
            point = measured.get((t, n, ps))
            row["forecast"] = row.pop("predicted")
            row.update({"measured": None, "measured_min": None, "measured_max": None, "verdict": None, "error": None})
            if point is not None:
                row.update({"measured": point["p_over_e_tpot"], "measured_min": point["p_over_e_tpot_min"],
                            "measured_max": point["p_over_e_tpot_max"], "verdict": point["tpot_verdict"],
                            "error": row["forecast"] / point["p_over_e_tpot"] - 1})
            out.append(row)
    return out


def forecast_verdict(ratio: float, model_error: float) -> str:
    """The verdict a forecast supports when it may be off by ``model_error`` (a fraction) either way: a win or a
    loss only if the whole band lies on one side of 1."""
    if ratio * (1 + model_error) < 1:
        return "eagle3 faster"
    if ratio * (1 - model_error) > 1:
        return "peagle faster"
    return "too close to call"


def summarize(rows: list[dict]) -> dict:
    """The check on measured points (largest |error|, verdicts that agree) and the verdict of each point the GPU did
    not measure, within that largest error."""
    checked = [r for r in rows if r["measured"] is not None]
    if not checked:
        raise ValueError("no forecast point was measured on the GPU: nothing checks the forecast")
    worst = max(abs(r["error"]) for r in checked)
    agree = [r for r in checked if forecast_verdict(r["forecast"], worst) in (r["verdict"], "too close to call")]
    new = [{**{k: r[k] for k in ("temperature", "tokens", "prompt_set", "forecast", "predicted_k")},
            "verdict": forecast_verdict(r["forecast"], worst)} for r in rows if r["measured"] is None]
    return {"checked_points": len(checked), "max_abs_error": worst,
            "median_abs_error": median(abs(r["error"]) for r in checked),
            "verdicts_consistent": len(agree), "forecast_points": new}


def against_measured(points: list[dict], measured_doc: Mapping) -> list[dict]:
    """Forecast points (``summarize(...)["forecast_points"]``) beside a later GPU record's measurement of the same
    (temperature, length, prompt set): the measured ratio, its spread and verdict, and whether the forecast's
    verdict holds (a "too close to call" holds against any measurement). Points the record lacks are left out."""
    measured = {(r["temperature"], r["tokens"], r["prompt_set"]): r for r in step_phases.regime_rows(measured_doc)}
    out = []
    for p in points:
        m = measured.get((p["temperature"], p["tokens"], p["prompt_set"]))
        if m is None:
            continue
        out.append({"temperature": p["temperature"], "tokens": p["tokens"], "prompt_set": p["prompt_set"],
                    "forecast": p["forecast"], "forecast_verdict": p["verdict"], "measured": m["p_over_e_tpot"],
                    "measured_min": m["p_over_e_tpot_min"], "measured_max": m["p_over_e_tpot_max"],
                    "measured_verdict": m["tpot_verdict"],
                    "holds": p["verdict"] in (m["tpot_verdict"], "too close to call")})
    return out


def _first_prompts_tau(run: Mapping, prompts: int | None) -> float:
    """tau of a drafter-window run over its first ``prompts`` prompts (None: all)."""
    n = sum(run["steps_per_prompt"][:prompts]) if prompts else len(run["accepted_per_step"])
    steps = run["accepted_per_step"][:n]
    return 1.0 + sum(steps) / len(steps)


PAIR = ("eagle3", "peagle")


def _k7_prediction(gpu_doc: Mapping, temperature: float, tokens: int, tau_eagle3: float, tau_peagle: float):
    """The GPU regime whose step costs stand for (temperature, tokens) and :func:`best_k_prediction` at K=7 with
    these two tau (raises ValueError where the record has no such regime)."""
    src = cost_regime(gpu_doc, temperature, tokens)
    cost = fit_step_cost(src["runs"], label=f"GPU T={src['temperature']:g}, {tokens} tokens, all prompt sets")
    taus = [{"method": "eagle3", "k": 7, "tau": tau_eagle3}, {"method": "peagle", "k": 7, "tau": tau_peagle}]
    return src, best_k_prediction(cost, src["runs"], taus)


def window_forecast(gpu_doc: Mapping, window_doc: Mapping, window: int, family: str = "v3",
                    prompts: int | None = None, windowed_gpu_doc: Mapping | None = None) -> list[dict]:
    """P-EAGLE / EAGLE-3 on TPOT at K=7 for every (temperature, prompt set) of a drafter-window record
    (``lab/benchmarks/drafter_window.py``) whose output length the GPU record swept: the GPU's step costs of that
    regime (:func:`cost_regime`) with tau from the window record, once with both heads attending every position
    (``forecast_all``: a check, since the GPU measured that point, ``measured``) and once with both limited to
    ``window`` positions (``forecast_window``: what the window would do on the GPU, not yet measured there; the
    window changes which keys a drafter reads, not its step's shape, so the step costs stay).
    ``prompts``: the first N prompts of each set only (the GPU record's count). ``windowed_gpu_doc``: a GPU sweep with
    both drafters windowed (``engine_sweep --drafter-window``, ``v3_lease.sh WINDOW=``) puts its measurement of the
    same point beside the forecast (``measured_window``, ``error_window``)."""
    measured = {(r["temperature"], r["tokens"], r["prompt_set"]): r for r in step_phases.regime_rows(gpu_doc)}
    measured_w = {}
    if windowed_gpu_doc is not None:
        swept = windowed_gpu_doc.get("model", {}).get("drafter_window")
        if swept != window:
            raise ValueError(f"the windowed GPU record swept drafter window {swept!r}, not {window}. Fix: pass the "
                             f"record of `engine_sweep --drafter-window {window}`")
        measured_w = {(r["temperature"], r["tokens"], r["prompt_set"]): r
                      for r in step_phases.regime_rows(windowed_gpu_doc)}
    runs = [r for r in window_doc["runs"] if r["family"] == family and r["k"] == 7 and r.get("sinks", 0) == 0]
    out = []
    for t, n, ps in sorted({(r["temperature"], r["max_new_tokens"], r["prompt_set"]) for r in runs}):
        here = {(r["method"], r["window"]): r for r in runs
                if (r["temperature"], r["max_new_tokens"], r["prompt_set"]) == (t, n, ps)}
        if not {("eagle3", None), ("peagle", None), ("eagle3", window), ("peagle", window)} <= set(here):
            continue
        try:
            src, full = _k7_prediction(gpu_doc, t, n, *(_first_prompts_tau(here[(m, None)], prompts) for m in PAIR))
            _, win = _k7_prediction(gpu_doc, t, n, *(_first_prompts_tau(here[(m, window)], prompts) for m in PAIR))
        except ValueError:
            continue
        point, point_w = measured.get((t, n, ps)), measured_w.get((t, n, ps))
        out.append({"temperature": t, "tokens": n, "prompt_set": ps, "costs_from_T": src["temperature"],
                    "forecast_all": full["predicted"], "forecast_window": win["predicted"],
                    "acceptance_factor_all": full["acceptance_factor"],
                    "acceptance_factor_window": win["acceptance_factor"], "step_factor": win["step_factor"],
                    "measured": None if point is None else point["p_over_e_tpot"],
                    "error_all": None if point is None else full["predicted"] / point["p_over_e_tpot"] - 1,
                    **({} if windowed_gpu_doc is None else {
                        "measured_window": None if point_w is None else point_w["p_over_e_tpot"],
                        "error_window": None if point_w is None else
                        win["predicted"] / point_w["p_over_e_tpot"] - 1})})
    return out


def pair_forecast(gpu_doc: Mapping, tau_doc: Mapping, family: str, prompts: int | None = None,
                  measured_doc: Mapping | None = None) -> list[dict]:
    """P-EAGLE / EAGLE-3 on TPOT at K=7 for a pair decoded on a CPU (``family`` of a drafter-window record, every
    position attended) with the step costs of ``gpu_doc``, a GPU sweep of heads of the same shapes over the same
    output length (a step's cost depends on the heads' shapes, not their weights). Explained in notebook 08: it
    forecasts a pair the GPU has not served; ``measured_doc``, the GPU's sweep of this very pair, checks the forecast
    (``measured``, ``error``). The costs are fitted to a sweep's step times, never to its P-EAGLE / EAGLE-3 ratios;
    a check is out of sample where ``gpu_doc`` is another pair's sweep, in part where it is this pair's own."""
    runs = [r for r in tau_doc["runs"] if r["family"] == family and r["k"] == 7 and r["window"] is None
            and r.get("sinks", 0) == 0]
    if not runs:
        raise ValueError(f"the acceptance record has no runs of family {family!r} at K=7 over every position. Fix: "
                         f"`python -m peagle_nb.lab.benchmarks.drafter_window --family {family} --windows all "
                         f"--eagle3-windows all ...`")
    measured = {} if measured_doc is None else {(r["temperature"], r["tokens"], r["prompt_set"]): r
                                                for r in step_phases.regime_rows(measured_doc)}
    out = []
    for t, n, ps in sorted({(r["temperature"], r["max_new_tokens"], r["prompt_set"]) for r in runs}):
        here = {r["method"]: r for r in runs if (r["temperature"], r["max_new_tokens"], r["prompt_set"]) == (t, n, ps)}
        if set(here) != set(PAIR):
            continue
        taus = [_first_prompts_tau(here[m], prompts) for m in PAIR]
        try:
            src, pred = _k7_prediction(gpu_doc, t, n, *taus)
        except ValueError:
            continue
        point = measured.get((t, n, ps))
        out.append({"temperature": t, "tokens": n, "prompt_set": ps, "costs_from_T": src["temperature"],
                    "eagle3_tau": taus[0], "peagle_tau": taus[1], "forecast": pred["predicted"],
                    "acceptance_factor": pred["acceptance_factor"], "step_factor": pred["step_factor"],
                    "measured": None if point is None else point["p_over_e_tpot"],
                    "error": None if point is None else pred["predicted"] / point["p_over_e_tpot"] - 1,
                    # the GPU's own tau at K=7: an error from tau (CPU fp32 vs GPU) or from the costs
                    **{f"measured_{m}_tau": None if point is None else point[f"{m}_tau_k7"] for m in PAIR}})
    return out


__all__ = ["against_measured", "cost_regime", "forecast_rows", "forecast_verdict", "pair_forecast", "summarize",
           "window_forecast"]
