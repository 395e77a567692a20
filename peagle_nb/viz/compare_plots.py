"""Figures of the P-EAGLE vs EAGLE-3 comparison (notebook 07): pure functions returning plotly figures.

Each takes a :class:`~peagle_nb.compare.scenario.Scenario` plus the dashboard's selection and returns
a ``go.Figure``; the dashboard copies them into ``go.FigureWidget``s, and a notebook without a widget
frontend (papermill, HTML export) displays the same figures directly. ``show_model`` draws the step
model's predictions as lines, ``show_points`` the measured runs or published anchors as markers.
"""

from __future__ import annotations

from typing import Sequence

import plotly.graph_objects as go

from peagle_nb.compare.predict import predict
from peagle_nb.compare.scenario import Scenario

COLORS = {"eagle3": "#1f77b4", "peagle": "#d62728", "none": "#7f7f7f"}
NAMES = {"eagle3": "EAGLE-3", "peagle": "P-EAGLE", "none": "no speculation"}
CONCURRENCY_COLORS = ("#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")
FIGURE_NAMES = ("acceptance", "per_position", "drafting", "throughput", "speedup", "advisor")


def _layout(fig: go.Figure, title: str, x: str, y: str, k: int | None = None) -> go.Figure:
    fig.update_layout(title=title, xaxis_title=x, yaxis_title=y, template="plotly_white", height=330,
                      margin=dict(l=55, r=15, t=45, b=45), legend=dict(orientation="h", y=-0.25))
    if k is not None:  # the dashboard's selected K
        fig.add_vline(x=k, line_dash="dot", line_color="#555", annotation_text=f"K={k}",
                      annotation_position="top")
    return fig


def _conc_color(scn: Scenario, c: int) -> str:
    """The same colour for a concurrency in every panel (the combined figure shares one legend)."""
    i = scn.concurrencies.index(c) if c in scn.concurrencies else len(scn.concurrencies)
    return CONCURRENCY_COLORS[i % len(CONCURRENCY_COLORS)]


def _k_range(scn: Scenario) -> list[int]:
    return list(range(1, max(max(v) for v in scn.ks.values()) + 1))


def _points(scn: Scenario, method: str, key: str, **equal) -> tuple[list, list]:
    pts = [p for p in scn.points if p.get("method") == method and p.get(key) is not None and p.get("k") is not None
           and all(p.get(a, 1) == b for a, b in equal.items())]
    pts.sort(key=lambda p: p["k"])
    return [p["k"] for p in pts], [float(p[key]) for p in pts]


def acceptance_length(scn: Scenario, k: int | None = None, show_model: bool = True,
                      show_points: bool = True) -> go.Figure:
    """tau (tokens per step, bonus included) vs K for each method."""
    fig, ks = go.Figure(), _k_range(scn)
    for m, curve in scn.curves.items():
        if show_model:
            kk = [x for x in ks if x in scn.ks[m]]
            fig.add_scatter(x=kk, y=[curve.tau(x) for x in kk], mode="lines", name=f"{NAMES[m]} (model)",
                            line_color=COLORS[m])
        if show_points:
            x, y = _points(scn, m, "tau")
            if x:
                fig.add_scatter(x=x, y=y, mode="markers", name=f"{NAMES[m]} ({scn.source})",
                                marker=dict(color=COLORS[m], size=9, symbol="diamond"))
    return _layout(fig, "Acceptance length vs K", "K (draft tokens per step)", "tau (tokens / step)", k)


def per_position(scn: Scenario, k: int, method: str | None = None) -> go.Figure:
    """Unconditional acceptance rate a_j of draft position j = 1..K (the selected method first)."""
    fig = go.Figure()
    methods = sorted(scn.curves, key=lambda m: m != method)
    for m in methods:
        rates = scn.curves[m].rates_for(k)
        fig.add_bar(x=list(range(1, k + 1)), y=rates, name=NAMES[m], marker_color=COLORS[m],
                    opacity=1.0 if (method in (None, m)) else 0.45)
    fig.update_layout(barmode="group", yaxis_range=[0, 1])
    return _layout(fig, f"Per-position acceptance at K={k}", "draft position j", "a_j (accepted share)")


def drafting_time(scn: Scenario, concurrency: int = 1, k: int | None = None, show_model: bool = True,
                  show_points: bool = True) -> go.Figure:
    """Drafting ms per step vs K: EAGLE-3 grows with K (sequential passes), P-EAGLE stays ~flat."""
    fig, ks = go.Figure(), _k_range(scn)
    for m in scn.curves:
        if show_model:
            fig.add_scatter(x=ks, y=[scn.cost.draft_ms(m, x, concurrency) for x in ks], mode="lines",
                            name=f"{NAMES[m]} (model)", line_color=COLORS[m])
        if show_points:
            x, y = _points(scn, m, "draft_ms_per_step", batch_size=concurrency)
            if x:
                fig.add_scatter(x=x, y=y, mode="markers", name=f"{NAMES[m]} ({scn.source})",
                                marker=dict(color=COLORS[m], size=9, symbol="diamond"))
    if show_model:
        fig.add_scatter(x=ks, y=[scn.cost.verify_ms(concurrency * (x + 1), concurrency) for x in ks], mode="lines",
                        name="verification (model)", line=dict(color=COLORS["none"], dash="dash"))
    return _layout(fig, f"Drafting time vs K (concurrency {concurrency})", "K", "ms per step", k)


def throughput(scn: Scenario, method: str, k: int | None = None, concurrencies: Sequence[int] | None = None,
               show_model: bool = True, show_points: bool = True) -> go.Figure:
    """Predicted tokens/s (all requests together) vs K, one line per concurrency."""
    fig, ks = go.Figure(), scn.ks.get(method, _k_range(scn))
    for c in concurrencies or scn.concurrencies:
        if show_model:
            fig.add_scatter(x=ks, y=[predict(scn.cost, scn.curves[method], method, x, c)["tokens_per_s"] for x in ks],
                            mode="lines", name=f"concurrency {c}", line_color=_conc_color(scn, c))
        if show_points:
            x, y = _points(scn, method, "tokens_per_s", batch_size=c)
            if x:
                fig.add_scatter(x=x, y=y, mode="markers", name=f"measured, concurrency {c}",
                                marker=dict(size=9, symbol="diamond", color=_conc_color(scn, c)))
    title = f"{NAMES[method]} throughput vs K" + (" (model)" if show_model else "")
    return _layout(fig, title, "K", "tokens / s", k)


def speedup(scn: Scenario, method: str, k: int | None = None, concurrencies: Sequence[int] | None = None,
            over: str = "none") -> go.Figure:
    """Predicted speedup vs K, one line per concurrency: over plain decoding (``over="none"``), or over
    the other method at ITS best K (``over="eagle3"``), which is how the blog compares them."""
    fig, ks = go.Figure(), scn.ks.get(method, _k_range(scn))
    for c in concurrencies or scn.concurrencies:
        if over == "none":
            ys = [predict(scn.cost, scn.curves[method], method, x, c)["speedup"] for x in ks]
        else:
            ref = max(predict(scn.cost, scn.curves[over], over, x, c)["tokens_per_s"] for x in scn.ks[over])
            ys = [predict(scn.cost, scn.curves[method], method, x, c)["tokens_per_s"] / ref for x in ks]
        fig.add_scatter(x=ks, y=ys, mode="lines+markers", name=f"concurrency {c}", line_color=_conc_color(scn, c))
    fig.add_hline(y=1.0, line_color="#999", line_width=1)
    what = "plain decoding" if over == "none" else f"{NAMES[over]} at its best K"
    return _layout(fig, f"{NAMES[method]} speedup over {what} (model)", "K", "speedup (x)", k)


WORKLOAD_COLORS = ("#1f77b4", "#2ca02c", "#d62728", "#9467bd")


def published_ratio_check(rows: Sequence[dict]) -> go.Figure:
    """P-EAGLE / EAGLE-3 throughput per concurrency: the blog's ratios (filled: fitted, open: held out)
    and the model's prediction, one colour per workload (rows of ``published.ratio_table``)."""
    fig = go.Figure()
    for i, w in enumerate(dict.fromkeys(r["workload"] for r in rows)):
        color = WORKLOAD_COLORS[i % len(WORKLOAD_COLORS)]
        mine = sorted((r for r in rows if r["workload"] == w), key=lambda r: r["concurrency"])
        fig.add_scatter(x=[r["concurrency"] for r in mine], y=[r["predicted"] for r in mine], mode="lines",
                        name=f"{w}: model", line_color=color)
        for role, symbol in (("fit", "circle"), ("held out", "circle-open")):
            pts = [r for r in mine if r["role"] == role]
            fig.add_scatter(x=[r["concurrency"] for r in pts], y=[r["published"] for r in pts], mode="markers",
                            name=f"{w}: published ({role})", marker=dict(color=color, size=10, symbol=symbol,
                                                                          line=dict(width=2, color=color)))
    fig.update_xaxes(type="log", tickvals=sorted({r["concurrency"] for r in rows}))
    return _layout(fig, "P-EAGLE / EAGLE-3 throughput, GPT-OSS-20B on B200: blog vs model (open: held out)",
                   "concurrency", "ratio (each at its best K in {3, 5, 7})")


def advisor_table(rows: Sequence[dict], highlight: int | None = None) -> go.Figure:
    """The advisor's rows as a table (best K, speedup over plain decoding, P-EAGLE over EAGLE-3)."""
    cols = [("concurrency", "concurrency", "{}"), ("eagle3_best_k", "EAGLE-3 best K", "{}"),
            ("eagle3_speedup", "EAGLE-3 speedup", "{:.2f}x"), ("peagle_best_k", "P-EAGLE best K", "{}"),
            ("peagle_speedup", "P-EAGLE speedup", "{:.2f}x"), ("peagle_over_eagle3", "P-EAGLE / EAGLE-3", "{:.2f}x"),
            ("recommendation", "advice", "{}")]
    cols = [c for c in cols if rows and c[0] in rows[0]]
    fill = [["#fff3cd" if r["concurrency"] == highlight else "white" for r in rows]] * len(cols)
    fig = go.Figure(go.Table(header=dict(values=[c[1] for c in cols], fill_color="#e8e8e8"),
                             cells=dict(values=[[f.format(r[key]) for r in rows] for key, _, f in cols],
                                        fill_color=fill)))
    fig.update_layout(title="Best-K advisor", height=80 + 32 * max(len(rows), 1), margin=dict(l=10, r=10, t=40, b=10))
    return fig


def dashboard_figures(scn: Scenario, method: str = "peagle", k: int = 7, concurrency: int = 1,
                      mode: str = "model") -> dict[str, go.Figure]:
    """Every dashboard figure for one selection. ``mode``: "measured" (points only), "model" (model
    lines + points), "published" (lines from the published GPU profile + published anchors)."""
    show_model = mode != "measured"
    return {
        "acceptance": acceptance_length(scn, k, show_model=show_model),
        "per_position": per_position(scn, k, method),
        "drafting": drafting_time(scn, concurrency, k, show_model=show_model),
        "throughput": throughput(scn, method, k, show_model=show_model),
        "speedup": speedup(scn, method, k),
        "advisor": advisor_table(scn.advice(), highlight=concurrency),
    }


def combine(figs: dict[str, go.Figure], order: Sequence[str] = FIGURE_NAMES, cols: int = 2) -> go.Figure:
    """All panels in one figure (a 3x2 grid, the advisor table last): what the dashboard's single
    ``FigureWidget`` shows. Each trace keeps its panel name in ``meta`` (see :func:`panel_traces`)."""
    from plotly.subplots import make_subplots

    rows = -(-len(order) // cols)
    specs = [[{"type": "table"} if order[r * cols + c] == "advisor" else {} if r * cols + c < len(order) else None
              for c in range(cols)] for r in range(rows)]
    fig = make_subplots(rows=rows, cols=cols, specs=specs, vertical_spacing=0.09, horizontal_spacing=0.08,
                        subplot_titles=[figs[n].layout.title.text for n in order])
    seen: set[str] = set()
    for i, name in enumerate(order):
        r, c = i // cols + 1, i % cols + 1
        src = figs[name]
        for trace in src.data:
            trace = trace.to_plotly_json()
            trace["meta"] = {"panel": name}
            if "name" in trace:
                trace["legendgroup"] = trace["name"]
                trace["showlegend"] = trace["name"] not in seen
                seen.add(trace["name"])
            fig.add_trace(go.Figure(data=[trace]).data[0], row=r, col=c)
        if name == "advisor":
            continue
        fig.update_xaxes(title_text=src.layout.xaxis.title.text, row=r, col=c)
        fig.update_yaxes(title_text=src.layout.yaxis.title.text, range=src.layout.yaxis.range, row=r, col=c)
        for shape in src.layout.shapes:
            if shape.x0 == shape.x1 and shape.type == "line":  # the selected-K marker
                fig.add_vline(x=shape.x0, line_dash="dot", line_color="#555", row=r, col=c)
            elif shape.y0 == shape.y1:
                fig.add_hline(y=shape.y0, line_color="#999", line_width=1, row=r, col=c)
    fig.update_layout(template="plotly_white", height=330 * rows + 60, barmode="group",
                      margin=dict(l=55, r=15, t=60, b=110), legend=dict(orientation="h", y=-0.05, yanchor="top"))
    return fig


def panel_traces(fig: go.Figure, panel: str) -> list:
    """The traces of one panel of a :func:`combine`d figure."""
    return [t for t in fig.data if (t.meta or {}).get("panel") == panel]


def selected_k(fig: go.Figure) -> list:
    """x of every vertical marker line (the selected K) in a figure."""
    return [s.x0 for s in fig.layout.shapes if s.type == "line" and s.x0 == s.x1]


def concurrency_shapes(rows: Sequence[dict], measured_name: str = "measured") -> go.Figure:
    """P-EAGLE / EAGLE-3 at each concurrency over its value at the smallest one (``compare.concurrency.shapes``):
    the suite's measured curve (solid) beside each published workload (dotted). Below 1: the gain falls with c."""
    fig = go.Figure()
    xs = [r["concurrency"] for r in rows]
    names = [k for k in rows[0] if k != "concurrency"] if rows else []
    for name in names:
        pts = [(r["concurrency"], r[name]) for r in rows if name in r]
        fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="lines+markers",
                                 name=measured_name if name == "measured" else f"{name} (published)",
                                 line=dict(dash="solid" if name == "measured" else "dot")))
    fig.add_hline(y=1.0, line_color="#999", line_dash="dash")
    fig.update_xaxes(type="log", tickvals=xs)
    return _layout(fig, "The gain's shape over concurrency", "concurrent requests", "ratio / ratio at the smallest c")
