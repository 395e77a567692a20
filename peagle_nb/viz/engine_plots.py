"""Figures of the engine notebooks (01-03), all from measured data: pure functions returning plotly figures.

Each function takes plain numbers (lists, dicts, records of ``peagle_nb.engine.evaluate``) so a test
can call it directly; none calls ``.show()``.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import plotly.graph_objects as go

COLORS = {"eagle3": "#1f77b4", "peagle": "#d62728", "none": "#7f7f7f"}
NAMES = {"eagle3": "EAGLE-3", "peagle": "P-EAGLE", "none": "no speculation"}


def _layout(fig: go.Figure, title: str, x: str, y: str, height: int = 360) -> go.Figure:
    fig.update_layout(title=title, xaxis_title=x, yaxis_title=y, template="plotly_white", height=height,
                      margin=dict(l=55, r=15, t=50, b=45), legend=dict(orientation="h", y=-0.2))
    return fig


def distribution_figure(labels: Sequence[str], target: Sequence[float], series: Mapping[str, Sequence[float]],
                        title: str = "Output distribution vs the target's") -> go.Figure:
    """Grouped bars: the target's probabilities and each empirical distribution (notebook 01)."""
    fig = go.Figure(go.Bar(x=list(labels), y=list(target), name="target p (exact)", marker_color="#333"))
    palette = ["#2ca02c", "#ff7f0e", "#9467bd"]
    for i, (name, vals) in enumerate(series.items()):
        fig.add_bar(x=list(labels), y=list(vals), name=name, marker_color=palette[i % len(palette)])
    fig.update_layout(barmode="group")
    return _layout(fig, title, "token", "probability")


def per_position_figure(rates: Mapping[str, Sequence[float]], title: str = "Acceptance per draft position"
                        ) -> go.Figure:
    """Lines of a_j (share of steps whose j-th draft was accepted) per labelled run (notebooks 01-03)."""
    fig = go.Figure()
    for name, r in rates.items():
        method = next((m for m in COLORS if name.startswith(m)), None)
        fig.add_scatter(x=list(range(1, len(r) + 1)), y=list(r), mode="lines+markers", name=name,
                        line=dict(color=COLORS.get(method), dash="dot" if "code" in name else "solid")
                        if method else None)
    fig.update_yaxes(range=[0, 1.02])
    return _layout(fig, title, "draft position j", "acceptance rate a_j")


def draft_cost_figure(rows: Sequence[Mapping], title: str = "Drafting cost per step vs K") -> go.Figure:
    """Median drafting ms per step vs K, one line per method, p10-p90 as error bars (notebooks 02-03)."""
    fig = go.Figure()
    for method in sorted({r["method"] for r in rows}):
        rs = sorted((r for r in rows if r["method"] == method), key=lambda r: r["k"])
        fig.add_scatter(
            x=[r["k"] for r in rs], y=[r["draft_ms"] for r in rs], mode="lines+markers",
            name=NAMES.get(method, method), line=dict(color=COLORS.get(method)),
            error_y=(dict(type="data", symmetric=False, array=[r["draft_ms_p90"] - r["draft_ms"] for r in rs],
                          arrayminus=[r["draft_ms"] - r["draft_ms_p10"] for r in rs])
                     if "draft_ms_p90" in rs[0] else None))
    fig.update_yaxes(rangemode="tozero")
    return _layout(fig, title, "K (drafts per step)", "drafting ms per step")


def sweep_figure(runs: Sequence[Mapping], y: str = "tokens_per_s", prompt_set: str | None = None,
                 title: str | None = None) -> go.Figure:
    """A measured sweep (``peagle_nb.files.results`` runs): ``y`` vs K per method; 'none' as a horizontal line."""
    rs = [r for r in runs if prompt_set is None or r.get("prompt_set") == prompt_set]
    fig = go.Figure()
    for method in ("eagle3", "peagle"):
        mr = sorted((r for r in rs if r["method"] == method), key=lambda r: r["k"])
        if mr:
            fig.add_scatter(x=[r["k"] for r in mr], y=[r[y] for r in mr], mode="lines+markers",
                            name=NAMES[method], line=dict(color=COLORS[method]))
    none = [r for r in rs if r["method"] == "none"]
    if none and y in none[0]:
        fig.add_hline(y=none[0][y], line_dash="dash", line_color=COLORS["none"],
                      annotation_text=NAMES["none"], annotation_position="bottom right")
    return _layout(fig, title or f"{y} vs K" + (f" ({prompt_set})" if prompt_set else ""), "K", y)


def attention_mask_figure(mask, labels: Sequence[str], title: str = "COD training attention mask") -> go.Figure:
    """Heatmap of a boolean attention mask (row = query element, column = key element) (notebook 03)."""
    z = [[int(v) for v in row] for row in (mask.tolist() if hasattr(mask, "tolist") else mask)]
    fig = go.Figure(go.Heatmap(z=z, x=list(labels), y=list(labels), colorscale=[[0, "#f4f4f4"], [1, "#d62728"]],
                               showscale=False, xgap=1, ygap=1))
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(height=max(360, 18 * len(labels) + 120))
    return _layout(fig, title, "key (attended to)", "query", height=max(360, 18 * len(labels) + 120))


def bars_figure(values: Mapping[str, float], title: str, y: str, ref: float | None = None) -> go.Figure:
    """Simple labelled bars (the ablation in notebook 03); ``ref`` draws a horizontal reference line."""
    fig = go.Figure(go.Bar(x=list(values), y=list(values.values()), marker_color="#d62728",
                           text=[f"{v:.2f}" for v in values.values()], textposition="outside"))
    if ref is not None:
        fig.add_hline(y=ref, line_dash="dash", line_color="#7f7f7f")
    return _layout(fig, title, "", y)


PHASE_COLORS = {"verify": "#2ca02c", "draft": "#d62728", "bookkeeping": "#bdbdbd"}


def config_label(r: Mapping) -> str:
    """A configuration's name: "P-EAGLE K=7", "EAGLE-3 K=3", "no speculation" (or the record's own ``label``)."""
    return r.get("label") or (NAMES["none"] if r["method"] == "none" else f"{NAMES.get(r['method'], r['method'])} "
                              f"K={r['k']}")


def step_breakdown_figure(records: Sequence[Mapping], title: str = "Where a decoding step's time goes",
                          relative: bool = False) -> go.Figure:
    """One stacked bar per configuration: verify / draft / bookkeeping ms per step (``evaluate`` records:
    ``method``, ``k``, ``verify_ms_per_step``, ``draft_ms_per_step``, ``bookkeeping_ms_per_step``, ``step_ms``,
    ``tau``; an optional ``label``), beside the plain-decoding step (the ``method == "none"`` record, whose step
    is all verify: one target pass). Each speculative bar is annotated with its tau and the tau it needs to break
    even with plain decoding (its step time / the plain step time); a dashed line marks one plain step.
    ``relative``: in units of one plain step instead of ms (notebook 01)."""
    plain = [r for r in records if r["method"] == "none"]
    if len(plain) != 1:
        raise ValueError(f"step_breakdown_figure needs exactly one plain-decoding record (method 'none'), "
                         f"got {len(plain)}")
    unit = plain[0]["step_ms"] if relative else 1.0
    if unit <= 0:
        raise ValueError("the plain-decoding step time must be positive")
    labels = [config_label(r) for r in records]
    fig = go.Figure()
    for phase in ("verify", "draft", "bookkeeping"):
        fig.add_bar(x=labels, y=[r[f"{phase}_ms_per_step"] / unit for r in records], name=phase,
                    marker_color=PHASE_COLORS[phase])
    fig.update_layout(barmode="stack")
    for lab, r in zip(labels, records):
        if r["method"] != "none":
            need = r["step_ms"] / plain[0]["step_ms"]
            fig.add_annotation(x=lab, y=r["step_ms"] / unit, yshift=14, showarrow=False,
                               text=f"τ {r['tau']:.2f} · needs {need:.2f}")
    fig.add_hline(y=plain[0]["step_ms"] / unit, line_dash="dash", line_color=COLORS["none"],
                  annotation_text="one plain step", annotation_position="top left")
    return _layout(fig, title, "", "plain steps per step" if relative else "ms per step", height=420)


def rows_cost_figure(series: Mapping[str, tuple[Sequence[int], Sequence[float]]],
                     title: str = "One target forward: cost vs rows, relative to one row") -> go.Figure:
    """Cost of a forward over T rows relative to the 1-row forward (a plain decoding step), one line per machine
    (``{name: (rows, ms)}``, rows including 1), with the "T separate steps" line for scale (notebook 00)."""
    fig = go.Figure()
    top = 1
    palette = ["#d62728", "#1f77b4", "#2ca02c"]
    for i, (name, (rows, ms)) in enumerate(series.items()):
        one = dict(zip(rows, ms)).get(1)
        if not one:
            raise ValueError(f"series {name!r} has no 1-row time to compare against")
        fig.add_scatter(x=list(rows), y=[m / one for m in ms], mode="lines+markers", name=name,
                        line=dict(color=palette[i % len(palette)]))
        top = max(top, *rows)
    fig.add_scatter(x=[1, top], y=[1, top], mode="lines", name="T separate decoding steps",
                    line=dict(color=COLORS["none"], dash="dot"))
    fig.update_yaxes(rangemode="tozero")
    return _layout(fig, title, "rows in one forward (T = K+1 when verifying K drafts)", "cost / one-row forward")


ABLATION_STYLES = (("#d62728", "circle", "solid"), ("#1f77b4", "square", "dash"), ("#2ca02c", "diamond", "dot"),
                   ("#ff7f0e", "x", "dashdot"), ("#9467bd", "triangle-up", "longdash"))


def ablation_figure(rates: Mapping[str, Sequence[float]], title: str = "Ablation: acceptance per position"
                    ) -> go.Figure:
    """One line per variant of the same head (notebook 03's placeholder ablation), each with its own colour,
    marker and dash, so lines that lie on top of each other stay distinguishable."""
    fig = go.Figure()
    for i, (name, r) in enumerate(rates.items()):
        color, symbol, dash = ABLATION_STYLES[i % len(ABLATION_STYLES)]
        fig.add_scatter(x=list(range(1, len(r) + 1)), y=list(r), mode="lines+markers", name=name,
                        line=dict(color=color, dash=dash), marker=dict(symbol=symbol, size=9))
    fig.update_yaxes(range=[0, 1.02])
    return _layout(fig, title, "draft position j", "acceptance rate a_j")
