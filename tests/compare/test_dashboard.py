"""The figures (pure) and the dashboard driven programmatically: set widget values, check the figures."""

import pytest

from peagle_nb.compare.published import load_published
from peagle_nb.compare.scenario import published_scenarios, scenario_from_runs
from peagle_nb.viz import compare_plots as cp
from peagle_nb.widgets.dashboard import Dashboard, static_figures
from tests.compare import synthetic


@pytest.fixture(scope="module")
def published():
    return published_scenarios(load_published())


@pytest.fixture(scope="module")
def measured():
    return {"engine_cpu.json · prose": scenario_from_runs("synthetic", synthetic.runs(batches=(1, 2)))}


def _vline_x(fig):
    return [s.x0 for s in fig.layout.shapes if s.type == "line" and s.x0 == s.x1]


def test_static_figures_hold_the_model_and_the_anchors(published):
    scn = published["MT-Bench"]
    figs = static_figures(scn, "peagle", 7, 1, "published")
    assert set(figs) == set(cp.FIGURE_NAMES)
    acc = figs["acceptance"]
    lines = {t.name: t for t in acc.data if t.mode == "lines"}
    # each head's curve goes through its published tau at K=3 and K=7
    assert lines["P-EAGLE (model)"].y[2] == pytest.approx(2.87, abs=1e-6)
    assert lines["P-EAGLE (model)"].y[6] == pytest.approx(3.70, abs=1e-6)
    assert lines["EAGLE-3 (model)"].y[2] == pytest.approx(2.70, abs=1e-6)
    markers = {t.name: t for t in acc.data if t.mode == "markers"}
    assert list(markers["EAGLE-3 (published)"].x) == [3, 7]
    assert list(markers["EAGLE-3 (published)"].y) == [2.70, 3.27]
    assert _vline_x(acc) == [7]
    draft = {t.name: t.y for t in figs["drafting"].data}
    e3, pe = draft["EAGLE-3 (model)"], draft["P-EAGLE (model)"]
    assert e3[9] == pytest.approx(10 * e3[0])  # K sequential passes
    assert pe[9] - pe[0] < e3[9] - e3[0]  # one wider pass
    assert len(figs["per_position"].data[0].y) == 7
    table = figs["advisor"].data[0]
    assert list(table.cells.values[0]) == ["1", "4", "16", "64"]
    html = acc.to_html(include_plotlyjs=False, full_html=False)  # renders without a widget frontend
    assert "P-EAGLE (model)" in html


def test_measured_mode_shows_points_only(measured):
    scn = next(iter(measured.values()))
    figs = cp.dashboard_figures(scn, "eagle3", 3, 1, mode="measured")
    assert {t.mode for t in figs["acceptance"].data} == {"markers"}
    assert {t.mode for t in figs["drafting"].data} == {"markers"}
    model = cp.dashboard_figures(scn, "eagle3", 3, 1, mode="model")
    assert "lines" in {t.mode for t in model["acceptance"].data}


def test_combined_figure_keeps_every_panel(published):
    figs = cp.dashboard_figures(published["HumanEval"], "peagle", 5, 4, "published")
    both = cp.combine(figs)
    for name in cp.FIGURE_NAMES:
        assert len(cp.panel_traces(both, name)) == len(figs[name].data), name
    assert cp.selected_k(both) == [5, 5, 5, 5]  # acceptance, drafting, throughput, speedup panels
    names = [t.name for t in both.data if getattr(t, "showlegend", None) is not False and t.name]
    assert len(names) == len(set(names))  # one legend entry per series name


def test_dashboard_controls_update_the_figure_in_place(published, measured):
    d = Dashboard({"measured": measured, "published": published}, source="published", k=7)
    fig = d.figure
    assert set(cp.selected_k(fig)) == {7}

    d.k.value = 3  # the K slider
    assert set(cp.selected_k(fig)) == {3}
    assert len(cp.panel_traces(fig, "per_position")[0].y) == 3
    assert "K=3" in d.summary.value

    tput_peagle = list(cp.panel_traces(fig, "throughput")[0].y)
    d.method.value = "eagle3"
    assert list(cp.panel_traces(fig, "throughput")[0].y) != tput_peagle
    assert any(a.text.startswith("EAGLE-3 throughput") for a in fig.layout.annotations)

    d.concurrency.value = 64
    assert any("concurrency 64" in a.text for a in fig.layout.annotations)
    assert cp.panel_traces(fig, "advisor")[0].cells.fill.color[0][-1] == "#fff3cd"  # highlighted row

    d.workload.value = "SPEED-Bench (Code)"
    assert "SPEED-Bench (Code)" in d.summary.value

    d.source.value = "model"  # the fitted model of the measured data
    assert d.workload.options == ("engine_cpu.json · prose",)
    assert d.concurrency.value in (1, 2, 4, 8) and d.k.max == 8
    assert "synthetic" in d.summary.value
    d.source.value = "measured"
    assert {t.mode for t in cp.panel_traces(fig, "acceptance")} == {"markers"}
    assert d.figure is fig  # the same widget, updated in place


def test_dashboard_without_any_data_fails_clearly():
    with pytest.raises(ValueError, match="no scenarios"):
        Dashboard({"measured": {}, "published": {}})
