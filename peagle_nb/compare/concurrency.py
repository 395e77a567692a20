"""Throughput against concurrency on the suite's own engine, beside the published curve. Explained in notebook 07.

Reads a concurrency results file (``data/results/concurrency_*.json``, written by the batched lean engine's
sweep): per concurrency c, each method's best K and tokens/s, P-EAGLE / EAGLE-3 with its verdict over sweeps;
fits the step-time model (``step_model.fit_step_cost``) to the file's own step phases and predicts the ratio at
every c from it and the measured acceptance; and sets the measured curve's shape (the ratio at c over the ratio
at the smallest c) beside the published GPT-OSS-20B curve's shape.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from peagle_nb.compare.step_model import StepCost, fit_step_cost


def concurrency_rows(doc: dict, temperature: float = 0.0) -> list[dict]:
    """One row per concurrency from the file's summary at ``temperature``: plain tokens/s and its gain over the
    smallest c, each method's best K and tokens/s, P-EAGLE / EAGLE-3 (median over sweeps, min, max, verdict)."""
    rows = []
    for key, cell in doc["summary"].items():
        c, t = key.split(".T")
        if float(t) != temperature:
            continue
        row = {"concurrency": int(c.removeprefix("c"))}
        if "none" in cell:
            row["plain_tokens_per_s"] = cell["none"]["tokens_per_s"]
            row["plain_over_c1"] = cell["none"].get("over_c1")
        for m in ("eagle3", "peagle"):
            if m in cell:
                row[f"{m}_best_k"] = cell[m]["best_k"]
                row[f"{m}_tokens_per_s"] = cell[m]["tokens_per_s"]
        ratio = cell.get("peagle_over_eagle3")
        if ratio:
            row.update(ratio=ratio["median"], ratio_min=min(ratio["sweeps"]), ratio_max=max(ratio["sweeps"]),
                       verdict=ratio["verdict"])
        rows.append(row)
    return sorted(rows, key=lambda r: r["concurrency"])


def _median_by(runs: Sequence[dict], key: str) -> dict[tuple, float]:
    groups: dict[tuple, list[float]] = {}
    for r in runs:
        groups.setdefault((r["concurrency"], r["method"], r["k"]), []).append(r[key])
    return {g: statistics.median(v) for g, v in groups.items()}


def fit_own_step_cost(doc: dict, temperature: float = 0.0) -> StepCost:
    """The step-time model fitted to the file's step phases at ``temperature`` (every concurrency and K)."""
    runs = [r for r in doc["runs"] if r["temperature"] == temperature]
    return fit_step_cost(runs, label=f"{doc['machine'].get('device', 'this machine')} (measured curve)")


def predicted_vs_measured(doc: dict, temperature: float = 0.0) -> list[dict]:
    """Per concurrency: P-EAGLE / EAGLE-3 at each one's best K as measured (median tokens/s over sweeps) and as the
    model fitted to the same file predicts it (its step times, the measured acceptance length of each K)."""
    cost = fit_own_step_cost(doc, temperature)
    runs = [r for r in doc["runs"] if r["temperature"] == temperature and r["method"] != "none"]
    tau, rate = _median_by(runs, "tau"), _median_by(runs, "tokens_per_s")
    rows = []
    for c in sorted({g[0] for g in tau}):
        best = {}
        for m in ("eagle3", "peagle"):
            ks = sorted(g[2] for g in tau if g[0] == c and g[1] == m)
            pred = {k: 1000.0 * c * tau[(c, m, k)] / (cost.draft_ms(m, k, c) + cost.verify_ms(c * (k + 1), c))
                    for k in ks}
            best[m] = (max(ks, key=lambda k: rate[(c, m, k)]), max(ks, key=pred.get), max(pred.values()),
                       max(rate[(c, m, k)] for k in ks))
        rows.append({"concurrency": c, "measured_ratio": best["peagle"][3] / best["eagle3"][3],
                     "predicted_ratio": best["peagle"][2] / best["eagle3"][2],
                     "measured_best_k": {m: best[m][0] for m in best},
                     "predicted_best_k": {m: best[m][1] for m in best}})
    for r in rows:
        r["error"] = r["predicted_ratio"] / r["measured_ratio"] - 1
    return rows


def shapes(doc: dict, published_ratios: dict[str, dict[int, float]], temperature: float = 0.0) -> list[dict]:
    """The measured ratio at each c over the ratio at the file's smallest c, beside the same for each published
    workload (``published.anchors_20b``' ``ratio`` maps): a falling curve has values below 1."""
    rows = concurrency_rows(doc, temperature)
    base = rows[0]["ratio"]
    out = []
    for r in rows:
        c = r["concurrency"]
        row = {"concurrency": c, "measured": r["ratio"] / base}
        for workload, ratio in published_ratios.items():
            low = min(ratio)
            if c in ratio:
                row[workload] = ratio[c] / ratio[low]
        out.append(row)
    return out


def ratio_split(doc: dict, temperature: float = 0.0) -> list[dict]:
    """Why the ratio is what it is, per concurrency: P-EAGLE / EAGLE-3 at each one's best K (medians over sweeps) as
    the product of an acceptance factor (P-EAGLE's tokens per batch step over EAGLE-3's: c x tau while every request
    runs, less once some have finished) and a step factor (EAGLE-3's wall time per batch step over P-EAGLE's, prefill
    and host time included). The split notebook 07 reads from the published numbers, here from the suite's own runs;
    each head's tau at its best K is shown beside it."""
    runs = [r for r in doc["runs"] if r["temperature"] == temperature and r["method"] != "none"]
    rate, tau = _median_by(runs, "tokens_per_s"), _median_by(runs, "tau")

    def per_step(g, f) -> float:  # median over sweeps of f(run) / batch steps
        return statistics.median(f(r) / r["steps"] for r in runs if (r["concurrency"], r["method"], r["k"]) == g)

    rows = []
    for c in sorted({g[0] for g in rate}):
        best = {m: max((g for g in rate if g[0] == c and g[1] == m), key=rate.get) for m in ("eagle3", "peagle")}
        e, p = best["eagle3"], best["peagle"]
        tokens = {g: per_step(g, lambda r: r["new_tokens"]) for g in (e, p)}
        wall = {g: per_step(g, lambda r: r["total_ms"]) for g in (e, p)}
        rows.append({"concurrency": c, "eagle3_k": e[2], "peagle_k": p[2], "tau_eagle3": tau[e], "tau_peagle": tau[p],
                     "acceptance_factor": tokens[p] / tokens[e], "step_factor": wall[e] / wall[p],
                     "ratio": rate[p] / rate[e]})
    return rows


def time_split(doc: dict, method: str = "none", k: int = 0, temperature: float = 0.0) -> list[dict]:
    """Where one batch's wall time goes, per concurrency (medians over sweeps): the prompts' prefill, the batch steps
    (their median wall time times their number) and the host work between steps (the rest: per-request draws at
    T > 0, bookkeeping), in ms and as shares of the total."""
    rows = []
    runs = [r for r in doc["runs"] if r["method"] == method and r["k"] == k and r["temperature"] == temperature]
    for c in sorted({r["concurrency"] for r in runs}):
        rs = [r for r in runs if r["concurrency"] == c]
        total = statistics.median(r["total_ms"] for r in rs)
        prefill = statistics.median(r["prefill_ms"] for r in rs)
        steps = statistics.median(r["steps"] * r["step_wall_ms_p50"] for r in rs)
        host = max(total - prefill - steps, 0.0)
        rows.append({"concurrency": c, "total_ms": total, "prefill_ms": prefill, "steps_ms": steps, "host_ms": host,
                     "prefill_share": prefill / total, "host_share": host / total,
                     "tokens_per_s": statistics.median(r["tokens_per_s"] for r in rs)})
    return rows


def tau_by_k(doc: dict, temperature: float = 0.0) -> list[dict]:
    """Acceptance length per K for each head, median over every concurrency and sweep (the heads' accuracy at equal
    depth, apart from which K each method picked)."""
    runs = [r for r in doc["runs"] if r["temperature"] == temperature and r["method"] != "none"]
    rows = []
    for k in sorted({r["k"] for r in runs}):
        row = {"k": k}
        for m in ("eagle3", "peagle"):
            taus = [r["tau"] for r in runs if r["method"] == m and r["k"] == k]
            if taus:
                row[f"tau_{m}"] = statistics.median(taus)
        rows.append(row)
    return rows


def plain_scaling(doc: dict, temperature: float = 0.0) -> dict:
    """How plain decoding scales from the smallest to the largest concurrency (medians over sweeps): tokens/s end to
    end (prefill included), and tokens per second of decoding alone (batch steps and the host work between them,
    the time per output token's side), each as the largest c over the smallest."""
    rows = time_split(doc, temperature=temperature)
    lo, hi = rows[0], rows[-1]

    def decode_rate(r: dict) -> float:
        return r["concurrency"] / (r["steps_ms"] + r["host_ms"])

    return {"from_c": lo["concurrency"], "to_c": hi["concurrency"],
            "end_to_end": hi["tokens_per_s"] / lo["tokens_per_s"], "decode_only": decode_rate(hi) / decode_rate(lo)}
