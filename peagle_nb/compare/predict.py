"""Predict tokens/s and speedup for any method, K and concurrency; validate on held-out measurements.

Combines a :class:`~peagle_nb.compare.step_model.StepCost` with an
:class:`~peagle_nb.compare.acceptance.AcceptanceCurve`. Explained in notebook 07.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from peagle_nb.compare.acceptance import AcceptanceCurve, curve_from_runs
from peagle_nb.compare.step_model import SPEC_METHODS, StepCost, fit_step_cost


def predict(cost: StepCost, curve: AcceptanceCurve | None, method: str, k: int, concurrency: int = 1) -> dict:
    """One predicted configuration: tau, draft/verify/step ms, tokens/s (all requests) and speedup.

    ``method="none"`` (or k=0) is plain decoding: tau 1, speedup 1.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    base_ms = cost.baseline_ms(concurrency)
    if method == "none" or k == 0:
        tau, draft, verify = 1.0, 0.0, base_ms
    else:
        if curve is None:
            raise ValueError(f"predict({method!r}): an acceptance curve is needed for speculative decoding")
        tau = curve.tau(k)
        draft, verify = cost.draft_ms(method, k, concurrency), cost.verify_ms(concurrency * (k + 1), concurrency)
    step = draft + verify
    return {
        "method": method, "k": k, "concurrency": concurrency, "tau": tau,
        "draft_ms": draft, "verify_ms": verify, "step_ms": step,
        "tokens_per_s": 1000.0 * concurrency * tau / step,
        "speedup": tau * base_ms / step,
    }


def sweep(cost: StepCost, curves: Mapping[str, AcceptanceCurve], ks: Sequence[int],
          concurrencies: Sequence[int]) -> list[dict]:
    """Predictions for every method in ``curves`` x K x concurrency (flat records, plot-ready)."""
    return [predict(cost, curve, method, k, c) for method, curve in curves.items() for c in concurrencies
            for k in ks]


def leave_one_k_out(runs: Iterable[dict], **fit_kwargs) -> list[dict]:
    """For each measured (method, K): refit the step model and the acceptance curve WITHOUT that K,
    predict it, and compare with the measurement.

    Returns one record per held-out run: measured and predicted step ms and tokens/s and their
    relative errors (``(predicted - measured) / measured``). Measured tokens/s includes costs the
    step model leaves out (prefill, sampling, Python overhead), so its error is the honest one.
    """
    runs = [r for r in runs if r.get("method") in ("none", *SPEC_METHODS)]
    out = []
    for held in runs:
        method, k = held.get("method"), int(held.get("k") or 0)
        if method not in SPEC_METHODS or k == 0:
            continue
        rest = [r for r in runs if not (r.get("method") == method and int(r.get("k") or 0) == k
                                        and r.get("batch_size", 1) == held.get("batch_size", 1))]
        try:
            cost = fit_step_cost(rest, label=f"without {method} K={k}", **fit_kwargs)
            curve = curve_from_runs([r for r in rest if r.get("method") == method], label=method)
        except ValueError:
            continue  # too few points left to fit (e.g. only two K measured)
        pred = predict(cost, curve, method, k, int(held.get("batch_size") or held.get("concurrency") or 1))
        rec = {"method": method, "k": k, "predicted_step_ms": pred["step_ms"],
               "predicted_tokens_per_s": pred["tokens_per_s"], "predicted_tau": pred["tau"]}
        if held.get("draft_ms_per_step") is not None and held.get("verify_ms_per_step") is not None:
            measured = float(held["draft_ms_per_step"]) + float(held["verify_ms_per_step"])
            rec.update(measured_step_ms=measured, step_rel_error=(pred["step_ms"] - measured) / measured)
        if held.get("tau") is not None:
            rec.update(measured_tau=float(held["tau"]),
                       tau_rel_error=(pred["tau"] - float(held["tau"])) / float(held["tau"]))
        if held.get("tokens_per_s"):
            m = float(held["tokens_per_s"])
            rec.update(measured_tokens_per_s=m, tokens_per_s_rel_error=(pred["tokens_per_s"] - m) / m)
        out.append(rec)
    return out


def summarize_errors(records: Sequence[dict]) -> dict:
    """Mean and max absolute relative error of each kind in a leave-one-K-out result."""
    out = {"n": len(records)}
    for key in ("step_rel_error", "tau_rel_error", "tokens_per_s_rel_error"):
        vals = [abs(r[key]) for r in records if key in r]
        if vals:
            out[key.replace("rel_error", "mean_abs")] = sum(vals) / len(vals)
            out[key.replace("rel_error", "max_abs")] = max(vals)
    return out
