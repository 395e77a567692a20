"""When P-EAGLE wins: the published GPT-OSS-20B gain split into its two sources, and the conditions that decide
the comparison, each published figure beside the suite's own measurement (explained in notebook 07).

A ratio of throughputs at each method's best K is (tau_P / tau_E) x (EAGLE-3 step / P-EAGLE step): an acceptance
factor and a step-time factor, the one-pass saving (:func:`peagle_nb.compare.published.decomposition`). The
conditions: low concurrency (the published ratio falls as requests are added), deep slots that are accepted
(tau keeps growing from K=3 to K=7), a drafter pass that is cheap next to a target step, and outputs long
enough to repay the deeper drafter's prefill.
"""

from __future__ import annotations

from collections.abc import Mapping

from peagle_nb.analysis import step_phases
from peagle_nb.compare import published as pub
from peagle_nb.engine.sweep_summary import SweepSummary


def published_split(doc: Mapping) -> dict:
    """The largest published ratio split into acceptance x one-pass saving, at the blog's best K."""
    best = pub.published_best_k(doc)
    rows = pub.decomposition(pub.anchors_20b(doc), best)
    top = max(rows, key=lambda r: r["published_ratio"])
    kp, ke = best["peagle"]["k"], best["eagle3"]["k"]
    return {"workload": top["workload"], "concurrency": top["concurrency"], "ratio": top["published_ratio"],
            "k_peagle": kp, "k_eagle3": ke, "acceptance": top[f"tau_P(K={kp}) / tau_E(K={ke})"],
            "one_pass_saving": top["implied EAGLE-3 step / P-EAGLE step"]}


def when_peagle_wins(doc: Mapping, pf: pub.PublishedFit, measured: Mapping, prompt_set: str = "prose") -> dict:
    """The numbers behind the rule, flat: published (``doc``; ``pf``, the GPU model, for the pass costs the blog
    does not publish) and measured (``measured``: an engine results file with ``runs``, ``summary``, ``phases``,
    e.g. ``engine_h200.json``, on ``prompt_set``)."""
    anchors = pub.anchors_20b(doc)
    conc = sorted(next(iter(anchors.values()))["ratio"])
    out: dict = {"split": published_split(doc), "concurrency": (conc[0], conc[-1])}
    out["published_ratio_low_c"] = {w: a["ratio"][conc[0]] for w, a in anchors.items()}
    out["published_ratio_high_c"] = {w: a["ratio"][conc[-1]] for w, a in anchors.items()}
    out["published_deep_gain"] = {m: {w: a["tau"][m][7] - a["tau"][m][3] for w, a in anchors.items()}
                                  for m in ("peagle", "eagle3")}
    ke = out["split"]["k_eagle3"]  # the drafting each method does at the blog's best K, in target steps
    out["model_draft_over_target"] = {"peagle": pf.cost.draft_ms("peagle", 7, 1) / pf.cost.baseline_ms(1),
                                      "eagle3": pf.cost.draft_ms("eagle3", ke, 1) / pf.cost.baseline_ms(1)}
    runs, phases = measured["runs"], measured["phases"]
    summary = SweepSummary.from_dict(measured["summary"][prompt_set])
    tau = {m: {k: step_phases.tau_at(runs, m, k, prompt_set) for k in (3, 7)} for m in ("peagle", "eagle3")}
    out["suite_deep_gain"] = {m: tau[m][7] - tau[m][3] for m in tau}
    out["suite_acceptance"] = tau["peagle"][7] / tau["eagle3"][3]
    plain = step_phases.step_ms(step_phases.find_row(phases, "none"))
    out["suite_draft_over_target"] = {"peagle": step_phases.draft_ms_per_k(phases, "peagle")[7] / plain,
                                      "eagle3": step_phases.draft_ms_per_k(phases, "eagle3")[ke] / plain}
    best = {m: int(summary.method(m).best_k) for m in ("peagle", "eagle3")}
    parts = {m: step_phases.speedup_breakdown(runs, phases, m, k, prompt_set) for m, k in best.items()}
    out["suite_prefill_ratio"] = parts["peagle"]["prefill_ms"] / parts["eagle3"]["prefill_ms"]
    out["suite_decode_ratio"] = parts["peagle"]["decode"] / parts["eagle3"]["decode"]
    out["suite_end_to_end_ratio"] = parts["peagle"]["end_to_end"] / parts["eagle3"]["end_to_end"]
    out["suite_ratio"] = summary.peagle_over_eagle3_at_best_k.to_dict()
    out["suite_verdict"] = step_phases.verdict(out["suite_ratio"])
    out["suite_tokens"] = max(r.get("max_new_tokens", 0) for r in runs)
    return out


def _span(values: Mapping[str, float], fmt: str = "{:.2f}") -> str:
    lo, hi = min(values.values()), max(values.values())
    return fmt.format(lo) if lo == hi else f"{fmt.format(lo)} to {fmt.format(hi)}"


def rule_lines(n: Mapping, device: str = "H200") -> list[str]:
    """The rule as markdown bullets, every figure from ``n`` (:func:`when_peagle_wins`)."""
    s, (c_lo, c_hi) = n["split"], n["concurrency"]
    md, sd = n["model_draft_over_target"], n["suite_draft_over_target"]
    return [
        f"**The published gain, split.** {s['workload']} at concurrency {s['concurrency']}: P-EAGLE / EAGLE-3 "
        f"{s['ratio']:.2f} = acceptance {s['acceptance']:.2f}x (tau at K={s['k_peagle']} over tau at "
        f"K={s['k_eagle3']}) x one-pass saving {s['one_pass_saving']:.2f}x (the implied step-time ratio). Most of "
        "the gain is the better head; the single drafting pass adds the rest.",
        f"- **Low concurrency.** Published ratio {_span(n['published_ratio_low_c'])} at concurrency {c_lo}, "
        f"{_span(n['published_ratio_high_c'])} at {c_hi}: every request adds verified tokens, and a step at "
        "P-EAGLE's deeper K verifies more of them.",
        f"- **Deep slots that are accepted.** Published tau gain from K=3 to K=7: P-EAGLE "
        f"{_span(n['published_deep_gain']['peagle'], '{:+.2f}')}, EAGLE-3 "
        f"{_span(n['published_deep_gain']['eagle3'], '{:+.2f}')}. The suite's tiny heads on the {device}: P-EAGLE "
        f"{n['suite_deep_gain']['peagle']:+.2f}, EAGLE-3 {n['suite_deep_gain']['eagle3']:+.2f}; acceptance factor "
        f"(P-EAGLE K=7 / EAGLE-3 K=3) {n['suite_acceptance']:.2f} here against {s['acceptance']:.2f} published.",
        f"- **One drafter pass much cheaper than K of the other's.** Drafting at the blog's best K, in target "
        f"steps: P-EAGLE (one pass, K=7) {md['peagle']:.2f}, EAGLE-3 ({s['k_eagle3']} passes) {md['eagle3']:.2f} "
        f"in the GPU model of GPT-OSS-20B (saving {md['eagle3'] - md['peagle']:+.2f} of a target step per step); "
        f"the tiny heads on the {device} (measured phases) {sd['peagle']:.2f} and {sd['eagle3']:.2f} (saving "
        f"{sd['eagle3'] - sd['peagle']:+.2f}).",
        f"- **Long outputs.** P-EAGLE's deeper drafter makes the prefill {n['suite_prefill_ratio']:.2f}x "
        f"EAGLE-3's on the {device}; over {n['suite_tokens']}-token generations that takes P-EAGLE / EAGLE-3 "
        f"from {n['suite_decode_ratio']:.2f} (decoding) to {n['suite_end_to_end_ratio']:.2f} (with prefill).",
        f"- **The suite's verdict**: P-EAGLE / EAGLE-3 {n['suite_ratio']['median']:.2f} "
        f"[{n['suite_ratio']['min']:.2f}, {n['suite_ratio']['max']:.2f}] over its sweeps on the {device} "
        f"({n['suite_verdict']}).",
    ]


def predicted_regimes(doc: Mapping) -> list[dict]:
    """The step-time model beside every measured regime point (temperature, output length, prompt set).

    For each point the model (:func:`peagle_nb.compare.step_model.fit_step_cost`) is fitted to that point's own step
    phases (draft and verify time per step of every method and K); each method's bookkeeping (building the drafter
    input, the state update) is its median over K. With the measured tau of every K it predicts each method's time
    per output token, ``(draft + verify + bookkeeping) / tau``, picks each method's best K and predicts P-EAGLE /
    EAGLE-3 on TPOT, beside the measured ratio (each at its measured best K) and its verdict, split into the
    acceptance factor (tau_P / tau_E) and the step factor (EAGLE-3's step / P-EAGLE's) at the predicted best K. The
    model is fitted to each point's own phases: it explains a point from its parts, it does not forecast it."""
    from peagle_nb.compare.step_model import fit_step_cost

    measured = {(r["temperature"], r["tokens"], r["prompt_set"]): r for r in step_phases.regime_rows(doc)}
    out = []
    for reg in doc.get("regimes", []):
        for ps in sorted({r["prompt_set"] for r in reg["runs"]}):
            point = measured.get((reg["temperature"], reg["max_new_tokens"], ps))
            runs = [r for r in reg["runs"] if r["prompt_set"] == ps]
            if point is None or not runs:
                continue
            cost = fit_step_cost(runs, label=f"T={reg['temperature']:g}, {reg['max_new_tokens']} tokens, {ps}")
            pred = best_k_prediction(cost, runs, runs)
            out.append({"temperature": reg["temperature"], "tokens": reg["max_new_tokens"], "prompt_set": ps,
                        "measured": point["p_over_e_tpot"], "measured_min": point["p_over_e_tpot_min"],
                        "measured_max": point["p_over_e_tpot_max"], "verdict": point["tpot_verdict"],
                        **pred, "error": pred["predicted"] / point["p_over_e_tpot"] - 1,
                        "within_spread": point["p_over_e_tpot_min"] <= pred["predicted"] <= point["p_over_e_tpot_max"]})
    return out


def best_k_prediction(cost, cost_runs: list[dict], tau_runs: list[dict]) -> dict:
    """Each method's predicted time per output token, ``(draft + verify + bookkeeping) / tau``, at every K that
    ``tau_runs`` measured, with the step costs of ``cost`` (a fitted ``StepCost``) and each method's bookkeeping
    (its median over ``cost_runs``); the best K of each and P-EAGLE / EAGLE-3 on TPOT there, split into the
    acceptance factor (tau_P / tau_E) and the step factor (EAGLE-3's step / P-EAGLE's)."""
    from statistics import median

    best = {}
    for m in ("eagle3", "peagle"):
        book = median(r.get("bookkeeping_ms_per_step") or 0.0 for r in cost_runs if r["method"] == m)
        mine = [r for r in tau_runs if r["method"] == m]
        step = {k: cost.draft_ms(m, k) + cost.verify_ms(k + 1) + book for k in sorted({r["k"] for r in mine})}
        tau = {k: median(r["tau"] for r in mine if r["k"] == k) for k in step}
        k_best = min(step, key=lambda k: step[k] / tau[k])
        best[m] = k_best, step[k_best] / tau[k_best], tau[k_best], step[k_best]
    return {"predicted": best["eagle3"][1] / best["peagle"][1], "predicted_k": {m: best[m][0] for m in best},
            "acceptance_factor": best["peagle"][2] / best["eagle3"][2],
            "step_factor": best["eagle3"][3] / best["peagle"][3]}
