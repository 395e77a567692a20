"""Figures of the parallel-drafting kernel benchmarks (notebook 04): pure functions returning plotly figures.

Each takes a ``source="kernels"`` results document (``peagle_nb.lab.benchmarks.kernel_bench``,
``data/results/kernels_*.json``).
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

VARIANT_STYLE = {
    "triton": dict(name="Triton (one fused launch)", color="#d62728"),
    # draft_inputs only, in files that have them: the same kernel without seq_lens / without max_query_len
    "triton_positions": dict(name="Triton, positions from target_positions", color="#d62728", dash="dash"),
    "triton_loop": dict(name="Triton, looping programs (no max_query_len)", color="#ff9896", dash="dashdot"),
    "eager": dict(name="eager PyTorch ops (before fusion)", color="#1f77b4"),
    "reference": dict(name="PyTorch reference (host loop)", color="#7f7f7f"),
}
KERNEL_TITLES = {"greedy_verify": "Greedy verification", "draft_inputs": "Parallel-draft input builder",
                 "hidden_expand": "Hidden-state expansion"}


def _layout(fig: go.Figure, title: str, y: str, log_y: bool = True) -> go.Figure:
    fig.update_layout(title=title, xaxis_title="batch size (requests)", yaxis_title=y, template="plotly_white",
                      height=380, margin=dict(l=60, r=15, t=50, b=45), legend=dict(orientation="h", y=-0.2))
    fig.update_xaxes(type="log", dtick=0.30103)  # one tick per power of two
    if log_y:
        fig.update_yaxes(type="log")
    return fig


def _rows(doc: dict[str, Any], kernel: str, k: int, variant: str) -> list[dict[str, Any]]:
    rows = [r for r in doc["runs"] if r.get("kernel") == kernel and r.get("k") == k and r.get("variant") == variant]
    return sorted(rows, key=lambda r: r["batch_size"])


def kernel_time_figure(doc: dict[str, Any], kernel: str, k: int = 7, metric: str = "device_us") -> go.Figure:
    """Time per call vs batch size for each variant, with the empty-kernel launch floor.

    ``metric``: "device_us" (CUDA-graph device time; host-syncing variants fall back to their host
    time, drawn dotted) or "wall_us" (host time of one eager call, launch overhead included).
    """
    fig = go.Figure()
    for variant, style in VARIANT_STYLE.items():
        rows = _rows(doc, kernel, k, variant)
        if not rows:
            continue
        fallback = any(r.get(metric) is None for r in rows)
        key = "wall_us" if fallback else metric
        ys = [r.get(key) for r in rows]
        if all(y is None for y in ys):
            continue
        substituted = fallback and metric != key
        label = style["name"] + (" (host time: cannot be graph-captured)" if substituted else "")
        fig.add_trace(go.Scatter(x=[r["batch_size"] for r in rows], y=ys, mode="lines+markers", name=label,
                                 line=dict(color=style["color"],
                                           dash="dot" if substituted else style.get("dash", "solid"))))
    floor = next((r for r in doc["runs"] if r.get("variant") == "launch_floor"), None)
    if floor and floor.get(metric):
        fig.add_hline(y=floor[metric], line_dash="dash", line_color="#2ca02c",
                      annotation_text=f"empty-kernel launch {floor[metric]:.2g} us", annotation_position="bottom right")
    chain = next((r for r in doc["runs"] if r.get("kernel") == "dependent_loads" and r.get("depth") == 2
                  and r.get("programs") == 256), None)
    if chain and metric == "device_us":  # what two dependent trips to memory cost before any real work
        fig.add_hline(y=chain["device_us"], line_dash="dot", line_color="#7f7f7f",
                      annotation_text=f"two dependent loads, 256 programs {chain['device_us']:.2g} us",
                      annotation_position="top left")
    what = "device time per call (CUDA graph)" if metric == "device_us" else "host time per eager call"
    device = doc.get("machine", {}).get("device", "")
    return _layout(fig, f"{KERNEL_TITLES.get(kernel, kernel)}, K={k} on {device}", f"{what} [us]")


def expand_bandwidth_figure(doc: dict[str, Any]) -> go.Figure:
    """Hidden-state expansion: achieved bandwidth of the kernel and of vLLM's two passes vs a plain copy."""
    fig = go.Figure()
    ks = sorted({r["k"] for r in doc["runs"] if r.get("kernel") == "hidden_expand" and "k" in r and "batch_size" in r})
    dashes = ("solid", "dash", "dot")
    for i, k in enumerate(ks):
        for variant in ("triton", "eager"):
            rows = [r for r in _rows(doc, "hidden_expand", k, variant) if r.get("achieved_gbs")]
            if rows:
                fig.add_trace(go.Scatter(x=[r["batch_size"] for r in rows], y=[r["achieved_gbs"] for r in rows],
                                         mode="lines+markers", name=f"{VARIANT_STYLE[variant]['name']}, K={k}",
                                         line=dict(color=VARIANT_STYLE[variant]["color"], dash=dashes[i % 3])))
        rows = [r for r in _rows(doc, "hidden_expand", k, "triton") if r.get("copy_gbs")]
        if rows:
            fig.add_trace(go.Scatter(x=[r["batch_size"] for r in rows], y=[r["copy_gbs"] for r in rows],
                                     mode="lines", name=f"device copy of the same size, K={k}",
                                     line=dict(color="#2ca02c", dash=dashes[i % 3], width=1)))
    device = doc.get("machine", {}).get("device", "")
    return _layout(fig, f"Hidden-state expansion bandwidth on {device} (bytes that must move / time)",
                   "GB/s", log_y=False)


def speedup_figure(doc: dict[str, Any]) -> go.Figure:
    """Eager-chain time over Triton time, per kernel and K, vs batch size."""
    fig = go.Figure()
    colors = {"greedy_verify": "#9467bd", "draft_inputs": "#d62728", "hidden_expand": "#ff7f0e"}
    dashes = {3: "dot", 7: "solid", 10: "dash"}
    for kernel in ("greedy_verify", "draft_inputs", "hidden_expand"):
        m = "flushed_us" if kernel == "hidden_expand" else "device_us"
        for k in sorted({r["k"] for r in doc["runs"] if r.get("kernel") == kernel and "k" in r}):
            tri = {r["batch_size"]: r for r in _rows(doc, kernel, k, "triton")}
            eag = {r["batch_size"]: r for r in _rows(doc, kernel, k, "eager")}
            xs = [b for b in sorted(tri) if b in eag and tri[b].get(m) and eag[b].get(m)]
            if xs:
                fig.add_trace(go.Scatter(x=xs, y=[eag[b][m] / tri[b][m] for b in xs], mode="lines+markers",
                                         name=f"{KERNEL_TITLES[kernel]}, K={k}",
                                         line=dict(color=colors[kernel], dash=dashes.get(k, "solid"))))
    fig.add_hline(y=1.0, line_color="#555", line_dash="dot")
    return _layout(fig, "Speedup of the fused Triton kernel over the eager op chain", "eager time / Triton time")
