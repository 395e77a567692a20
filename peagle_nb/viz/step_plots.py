"""Figures of a decoding step and what it buys, from measured numbers (notebooks 02-04): a step drawn as a timeline
of its phases, a phase's cost vs K (absolute and relative to K=1), the best-K comparison with its spread over
sweeps, and acceptance per draft position split into fresh and repeated text. Pure functions returning plotly
figures (``peagle_nb.analysis.step_phases`` makes their inputs); none calls ``.show()``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import plotly.graph_objects as go

from peagle_nb.viz.engine_plots import COLORS, NAMES

PHASE_COLORS = {"build": "#8c564b", "verify": "#2ca02c", "update": "#9467bd", "target step": "#7f7f7f"}
EAGLE3_PASSES = ("#1f77b4", "#6baed6")  # alternating, so every sequential pass shows as its own block
PEAGLE_PASS = "#d62728"


def _layout(fig: go.Figure, title: str, x: str, y: str, height: int = 360) -> go.Figure:
    fig.update_layout(title=title, xaxis_title=x, yaxis_title=y, template="plotly_white", height=height,
                      margin=dict(l=55, r=15, t=50, b=45), legend=dict(orientation="h", y=-0.25))
    return fig


def _phase_kind(label: str) -> str:
    return "draft pass" if label.startswith("draft pass") else label


def _segment_color(label: str, row_label: str) -> str:
    if not label.startswith("draft pass"):
        return PHASE_COLORS.get(label, "#bbbbbb")
    if "EAGLE-3" in row_label or "eagle3" in row_label:
        number = label.removeprefix("draft pass ").split(" ")[0]
        return EAGLE3_PASSES[(int(number) - 1) % 2] if number.isdigit() else EAGLE3_PASSES[0]
    return PEAGLE_PASS


def step_timeline_figure(timelines: Mapping[str, Sequence[tuple[str, float]]], title: str = "One decoding step",
                         unit: str = "ms", notes: Mapping[str, str] | None = None) -> go.Figure:
    """One horizontal timeline per row label: its ``(phase, duration)`` segments laid end to end from 0, each a
    block of its own (EAGLE-3's passes alternate two blues, P-EAGLE's one pass is red). ``notes[label]`` is
    written after the row's end (e.g. tokens per step)."""
    fig = go.Figure()
    shown: set[str] = set()
    labels = list(timelines)
    for label in labels:
        start = 0.0
        for phase, ms in timelines[label]:
            kind = _phase_kind(phase)
            legend = kind if kind != "draft pass" else ("EAGLE-3 drafter pass" if "EAGLE-3" in label
                                                        else "P-EAGLE drafter pass")
            fig.add_bar(y=[label], x=[ms], base=[start], orientation="h", name=legend, legendgroup=legend,
                        showlegend=legend not in shown, marker=dict(color=_segment_color(phase, label),
                                                                    line=dict(color="white", width=1)),
                        hovertemplate=f"{label}<br>{phase}: %{{x:.4f}} {unit}<br>starts at {start:.4f} {unit}"
                                      "<extra></extra>")
            shown.add(legend)
            start += ms
        text = f"{start:.3g} {unit}" + (f" · {notes[label]}" if notes and label in notes else "")
        fig.add_annotation(x=start, y=label, text=text, showarrow=False, xanchor="left", xshift=4, font=dict(size=11))
    fig.update_layout(barmode="overlay")
    fig.update_yaxes(autorange="reversed", categoryorder="array", categoryarray=labels)
    fig.update_xaxes(rangemode="tozero")
    return _layout(fig, title, f"time within the step ({unit})", "", height=max(300, 60 * len(labels) + 140))


def phase_cost_figure(rows: Sequence[Mapping], phase: str = "draft", title: str | None = None,
                      unit: str = "ms") -> go.Figure:
    """A phase's median time vs K, one line per method, p10-p90 over repeats as error bars where the rows have
    them (rows of ``peagle_nb.analysis.step_phases.measure_phases`` or a results file's ``phases``)."""
    fig = go.Figure()
    key = f"{phase}_ms"
    for method in ("eagle3", "peagle"):
        rs = sorted((r for r in rows if r["method"] == method), key=lambda r: r["k"])
        if not rs:
            continue
        spread = all(f"{key}_p10" in r for r in rs)
        fig.add_scatter(x=[r["k"] for r in rs], y=[r[key] for r in rs], mode="lines+markers", name=NAMES[method],
                        line=dict(color=COLORS[method]),
                        error_y=dict(type="data", symmetric=False, array=[r[f"{key}_p90"] - r[key] for r in rs],
                                     arrayminus=[r[key] - r[f"{key}_p10"] for r in rs]) if spread else None)
    fig.update_yaxes(rangemode="tozero")
    return _layout(fig, title or f"{phase} phase vs K", "K (drafts per step)", f"{phase} {unit} per step")


def relative_cost_figure(series: Mapping[str, Mapping[int, float]], title: str = "Drafting cost relative to K=1"
                         ) -> go.Figure:
    """``{label: {K: ms}}`` drawn as ms(K) / ms(1): machines with different absolute times on one scale. A label
    starting with ``EAGLE-3`` / ``P-EAGLE`` takes that method's colour; a label containing ``H200`` is dashed."""
    fig = go.Figure()
    for label, per_k in series.items():
        if 1 not in per_k:
            raise ValueError(f"{label}: relative cost needs K=1 (got K = {sorted(per_k)})")
        ks = sorted(per_k)
        method = "eagle3" if label.startswith("EAGLE-3") else "peagle" if label.startswith("P-EAGLE") else None
        fig.add_scatter(x=ks, y=[per_k[k] / per_k[1] for k in ks], mode="lines+markers", name=label,
                        line=dict(color=COLORS.get(method), dash="dash" if "H200" in label else "solid"))
    fig.add_hline(y=1.0, line_dash="dot", line_color="#7f7f7f")
    fig.update_yaxes(rangemode="tozero")
    return _layout(fig, title, "K (drafts per step)", "drafting time / drafting time at K=1")


def best_k_figure(rows: Sequence[Mapping], title: str = "At each method's best K: speedup over plain decoding"
                  ) -> go.Figure:
    """Rows of ``peagle_nb.analysis.step_phases.best_k_rows``: per results file and prompt set, each method's speedup
    over plain decoding at its best K and the P-EAGLE / EAGLE-3 ratio, medians with min-max over sweeps as error
    bars; the dotted line at 1 is 'as fast as' (a bar whose range crosses it is a tie)."""
    x = [f"{r['results']} {r['set']}" for r in rows]
    fig = go.Figure()

    def bars(name, color, values, text=None):
        fig.add_bar(x=x, y=[v["median"] for v in values], name=name, marker_color=color, text=text,
                    textposition="outside",
                    error_y=dict(type="data", symmetric=False, array=[v["max"] - v["median"] for v in values],
                                 arrayminus=[v["median"] - v["min"] for v in values]))

    for m in ("eagle3", "peagle"):
        bars(f"{NAMES[m]} / plain (best K)", COLORS[m], [r[f"{m}.speedup_vs_none"] for r in rows],
             [f"K={r[f'{m}.best_k']}" for r in rows])
    bars("P-EAGLE / EAGLE-3", "#ff7f0e", [r["ratio"] for r in rows], [r["verdict"] for r in rows])
    fig.add_hline(y=1.0, line_dash="dot", line_color="#333")
    fig.update_layout(barmode="group")
    return _layout(fig, title, "", "ratio of tokens/s (median, min-max over sweeps)", height=420)


def split_acceptance_figure(split: Mapping[str, Mapping[str, Sequence[float | None]]],
                            title: str = "Acceptance per draft position, fresh vs repeated text") -> go.Figure:
    """``{label: {"fresh": a_1..a_K, "repeated": a_1..a_K}}``: one line per label and class (solid fresh, dashed
    repeated); a label starting with ``eagle3`` / ``peagle`` takes that method's colour; missing values (a class
    with no steps) are gaps."""
    fig = go.Figure()
    for label, classes in split.items():
        method = next((m for m in COLORS if label.startswith(m)), None)
        for cls, rates in classes.items():
            fig.add_scatter(x=list(range(1, len(rates) + 1)), y=[None if r is None else float(r) for r in rates],
                            mode="lines+markers", name=f"{label} {cls}",
                            line=dict(color=COLORS.get(method), dash="dash" if cls == "repeated" else "solid"))
    fig.update_yaxes(range=[0, 1.02])
    return _layout(fig, title, "draft position j", "acceptance rate a_j")


def loss_curve_figure(history: Sequence[Mapping], keys: Sequence[str] = ("loss",),
                      title: str = "Training loss per logged step") -> go.Figure:
    """A training log's ``history`` rows (``{"step": n, "loss": ..., ...}``): one line per key."""
    fig = go.Figure()
    for key in keys:
        rs = [h for h in history if key in h]
        fig.add_scatter(x=[h["step"] for h in rs], y=[h[key] for h in rs], mode="lines+markers", name=key)
    return _layout(fig, title, "training step", ", ".join(keys))


def sampled_phases_figure(rows: Sequence[Mapping], title: str = "A sampled step's phases before and after fusion"
                          ) -> go.Figure:
    """Grouped bars: each phase's device time greedy, sampled with the fused kernels and sampled with their PyTorch op
    chains. ``rows``: ``peagle_nb.analysis.step_phases.sampled_phase_rows`` (notebooks 01 and 04)."""
    fig = go.Figure()
    colors = {"greedy": "#7f7f7f", "sampled, fused kernels": "#2ca02c", "sampled, PyTorch op chain": "#d62728"}
    for mode, color in colors.items():
        rs = [r for r in rows if r["mode"] == mode]
        fig.add_bar(name=mode, x=[r["phase"] for r in rs], y=[r["ms"] for r in rs], marker_color=color,
                    text=[f"{r['ms']:.3f}" for r in rs], textposition="outside")
    fig.update_layout(barmode="group")
    return _layout(fig, title, "phase", "device time per call (ms)", height=380)


def regime_figure(rows: Sequence[Mapping], title: str = "P-EAGLE / EAGLE-3 time per output token, by regime"
                  ) -> go.Figure:
    """P-EAGLE's speed over EAGLE-3's on time per output token (each at its best K; bars: min-max over sweeps) per
    prompt set, against output length, one line per temperature. Above 1: P-EAGLE faster. ``rows``:
    ``peagle_nb.analysis.step_phases.regime_rows``."""
    fig = go.Figure()
    dashes = {0.0: "solid", 1.0: "dash"}
    colors = {"prose": "#1f77b4", "code": "#ff7f0e", "ja": "#2ca02c"}
    for (ps, t) in sorted({(r["prompt_set"], r["temperature"]) for r in rows}):
        rs = sorted((r for r in rows if r["prompt_set"] == ps and r["temperature"] == t), key=lambda r: r["tokens"])
        fig.add_scatter(x=[r["tokens"] for r in rs], y=[r["p_over_e_tpot"] for r in rs], name=f"{ps}, T={t:g}",
                        mode="lines+markers", line=dict(color=colors.get(ps), dash=dashes.get(t, "dot")),
                        error_y=dict(type="data", symmetric=False,
                                     array=[r["p_over_e_tpot_max"] - r["p_over_e_tpot"] for r in rs],
                                     arrayminus=[r["p_over_e_tpot"] - r["p_over_e_tpot_min"] for r in rs]))
    fig.add_hline(y=1.0, line=dict(color="#444", width=1))
    fig.update_xaxes(type="log", tickvals=sorted({r["tokens"] for r in rows}))
    return _layout(fig, title, "output tokens per request", "P-EAGLE / EAGLE-3 (TPOT)", height=380)
