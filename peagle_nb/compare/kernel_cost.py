"""What the parallel-drafting kernels are worth per step, from kernel benchmarks (``kernels_h200.json``).

P-EAGLE prepares its one wide drafter pass with extra work EAGLE-3 does not have: building the input
batch (bonus token + K-1 ``<mask>`` slots per request, ``draft_inputs``) and expanding hidden states
(``hidden_expand``). Notebook 04 fuses each into one Triton launch; notebook 07 adds the measured
difference to P-EAGLE's fixed pass cost ``p0`` to show what unfused preparation would do to the advice.
"""

from __future__ import annotations

from typing import Sequence

P_EAGLE_PREP_KERNELS = ("draft_inputs", "hidden_expand")


def _nearest(rows: list[dict], batch: int, k: int) -> dict | None:
    rows = [r for r in rows if r.get("batch_size") is not None and r.get("k") is not None]
    if not rows:
        return None
    return min(rows, key=lambda r: (abs(r["batch_size"] - batch) / max(batch, 1), abs(r["k"] - k)))


def prep_overhead(kernel_runs: Sequence[dict], batch: int = 1, k: int = 7, metric: str = "device_us",
                  kernels: Sequence[str] = P_EAGLE_PREP_KERNELS) -> dict:
    """Per kernel and in total: fused (``triton``) vs unfused (``eager``) time in ms per drafting pass,
    at the measured configuration nearest to ``batch`` and ``k``. Raises ValueError when missing."""
    out: dict = {"batch": batch, "k": k, "metric": metric, "kernels": {}}
    for name in kernels:
        pair = {}
        for variant in ("triton", "eager"):
            rows = [r for r in kernel_runs if r.get("kernel") == name and r.get("variant") == variant
                    and r.get(metric) is not None]
            pair[variant] = _nearest(rows, batch, k)
        if pair["triton"] is None or pair["eager"] is None:
            raise ValueError(f"kernel benchmarks lack {name!r} triton/eager rows with {metric!r} "
                             "(notebook 04 writes them to data/results/kernels_h200.json)")
        t, e = pair["triton"][metric] / 1000, pair["eager"][metric] / 1000
        out["kernels"][name] = {"triton_ms": t, "eager_ms": e, "saved_ms": e - t,
                                "measured_at": {"batch_size": pair["triton"]["batch_size"], "k": pair["triton"]["k"]}}
    out["saved_ms"] = sum(v["saved_ms"] for v in out["kernels"].values())
    return out


def builder_at_batches(kernel_doc: dict, batches: Sequence[int], k: int = 7) -> list[dict]:
    """The input builder's recorded device time (fused and eager, microseconds) at each batch size an engine ran,
    from the nearest recorded configuration (notebook 04: the builder at the batches of the concurrency sweeps)."""
    rows = []
    for b in batches:
        row: dict = {"batch_size": b}
        for variant in ("triton", "eager"):
            runs = [r for r in kernel_doc["runs"] if r.get("kernel") == "draft_inputs" and r.get("variant") == variant
                    and r.get("device_us") is not None]
            near = _nearest(runs, b, k)
            if near is None:
                raise ValueError("the kernel file has no draft_inputs triton/eager rows with device_us")
            row[f"{variant}_device_us"] = round(near["device_us"], 2)
            row["recorded_at"] = {"batch_size": near["batch_size"], "k": near["k"]}
        rows.append(row)
    return rows
