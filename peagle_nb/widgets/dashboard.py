"""The comparison dashboard of notebook 07: ipywidgets controls driving a plotly ``FigureWidget``.

Thin by design: every callback calls :func:`peagle_nb.viz.compare_plots.dashboard_figures` and
:func:`~peagle_nb.viz.compare_plots.combine` (pure, tested directly) and copies the result into the
figure widget in place. All panels share ONE ``FigureWidget``: each one carries plotly.js (~5 MB) in
its widget state, which would otherwise be saved once per panel in an executed notebook. Without a
widget frontend (papermill, HTML export) use :func:`static_figures`, which returns the same figures.
"""

from __future__ import annotations

from typing import Mapping

import plotly.graph_objects as go

from peagle_nb.compare.scenario import Scenario
from peagle_nb.viz.compare_plots import NAMES, combine, dashboard_figures

SOURCES = ("measured", "model", "published")


def static_figures(scenario: Scenario, method: str = "peagle", k: int = 7, concurrency: int = 1,
                   mode: str = "model") -> dict[str, go.Figure]:
    """The dashboard's figures for one selection, as plain figures (no widget frontend needed)."""
    return dashboard_figures(scenario, method, k, concurrency, mode)


def replace_figure(target: go.FigureWidget, source: go.Figure) -> None:
    """Make ``target`` show ``source`` (traces and layout) in place, in one front-end update."""
    with target.batch_update():
        target.data = ()
        target.add_traces(list(source.data))
        target.layout = source.layout


class Dashboard:
    """Controls: data source, workload, method, K, concurrency. ``scenarios`` maps "measured" and
    "published" to ``{workload: Scenario}``; "model" uses the measured scenarios' fitted model."""

    def __init__(self, scenarios: Mapping[str, Mapping[str, Scenario]], source: str | None = None,
                 method: str = "peagle", k: int = 7, concurrency: int = 1):
        try:
            import anywidget  # noqa: F401  (plotly's FigureWidget is an anywidget)
            import ipywidgets as w
        except ImportError as exc:
            raise ImportError(f"the dashboard needs ipywidgets and anywidget ({exc}); install the notebooks "
                              "extra: pip install -e '.[notebooks]', or use static_figures()") from None
        self._w = w
        self.scenarios = {s: dict(scenarios.get("measured" if s == "model" else s) or {}) for s in SOURCES}
        available = [s for s in SOURCES if self.scenarios[s]]
        if not available:
            raise ValueError("Dashboard: no scenarios to show (no measured results and no published numbers)")
        source = source if source in available else available[0]
        self.source = w.ToggleButtons(options=available, value=source, description="data")
        self.workload = w.Dropdown(description="workload")
        self.method = w.Dropdown(description="method")
        self.k = w.IntSlider(min=1, max=10, value=k, description="K", continuous_update=False)
        self.concurrency = w.Dropdown(description="concurrency")
        self.summary = w.HTML()
        self.figure: go.FigureWidget | None = None  # built from the first selection in refresh()
        self._busy = False
        self._sync_options(method, concurrency)
        for ctl in (self.source, self.workload):
            ctl.observe(self._on_scenario_change, names="value")
        for ctl in (self.method, self.k, self.concurrency):
            ctl.observe(lambda _change: self.refresh(), names="value")
        self.refresh()

    # -- state -------------------------------------------------------------------------------
    @property
    def scenario(self) -> Scenario:
        return self.scenarios[self.source.value][self.workload.value]

    def state(self) -> dict:
        return {"source": self.source.value, "workload": self.workload.value, "method": self.method.value,
                "k": self.k.value, "concurrency": self.concurrency.value}

    def _sync_options(self, method: str | None = None, concurrency: int | None = None) -> None:
        """Fit the dependent controls to the chosen source/workload, keeping the selection if possible."""
        self._busy = True
        try:
            workloads = list(self.scenarios[self.source.value])
            if self.workload.value not in workloads:
                self.workload.options = workloads
                self.workload.value = workloads[0]
            elif list(self.workload.options) != workloads:
                keep = self.workload.value
                self.workload.options = workloads
                self.workload.value = keep
            scn = self.scenario
            methods = [(NAMES[m], m) for m in scn.curves]
            want = method or self.method.value
            self.method.options = methods
            self.method.value = want if want in scn.curves else methods[-1][1]
            cs = scn.concurrencies
            want_c = concurrency or self.concurrency.value
            self.concurrency.options = cs
            self.concurrency.value = want_c if want_c in cs else cs[0]
            kmax = max(max(v) for v in scn.ks.values())
            self.k.max = kmax
            self.k.value = min(self.k.value, kmax)
        finally:
            self._busy = False

    def _on_scenario_change(self, _change) -> None:
        if self._busy:
            return
        self._sync_options()
        self.refresh()

    # -- update ------------------------------------------------------------------------------
    def refresh(self) -> dict[str, go.Figure]:
        """Recompute every figure for the current selection and update the widgets in place."""
        if self._busy:
            return {}
        s = self.state()
        figs = dashboard_figures(self.scenario, s["method"], s["k"], s["concurrency"], s["source"])
        combined = combine(figs)
        if self.figure is None:  # created with its content: no update messages for a view to replay
            self.figure = go.FigureWidget(combined)
        else:
            replace_figure(self.figure, combined)
        self.summary.value = summary_html(self.scenario, s["method"], s["k"], s["concurrency"])
        return figs

    def widget(self):
        w = self._w
        controls = w.HBox([w.VBox([self.source, self.workload]), w.VBox([self.method, self.concurrency, self.k])])
        return w.VBox([controls, self.summary, self.figure])


def summary_html(scn: Scenario, method: str, k: int, concurrency: int) -> str:
    """One line: the prediction for the selection and the advisor's pick at this concurrency."""
    from peagle_nb.compare.predict import predict

    p = predict(scn.cost, scn.curves[method], method, k, concurrency)
    row = next(r for r in scn.advice() if r["concurrency"] == concurrency)
    return (f"<b>{scn.name}</b>: {NAMES[method]} K={k}, concurrency {concurrency}: tau {p['tau']:.2f}, "
            f"step {p['step_ms']:.2f} ms, {p['tokens_per_s']:.0f} tok/s, "
            f"<span class='peagle-speedup'>{p['speedup']:.2f}x</span> over plain decoding. "
            f"Advisor: <b>{row['recommendation']}</b>.")
