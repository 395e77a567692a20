"""The engine notebooks' figures are built from the numbers they are given (no .show())."""

import plotly.graph_objects as go
import pytest
import torch

from peagle_nb.viz import engine_plots


def test_figures_carry_the_data():
    f = engine_plots.per_position_figure({"peagle prose": [0.9, 0.7], "eagle3 code": [0.8, 0.5]})
    assert isinstance(f, go.Figure) and list(f.data[0].y) == [0.9, 0.7] and len(f.data) == 2
    rows = [{"method": m, "k": k, "draft_ms": k * (m == "eagle3") + 1.0, "draft_ms_p10": 0.9, "draft_ms_p90": 5.0}
            for m in ("eagle3", "peagle") for k in (1, 2, 3)]
    f = engine_plots.draft_cost_figure(rows)
    assert [tr.name for tr in f.data] == ["EAGLE-3", "P-EAGLE"] and list(f.data[0].y) == [2.0, 3.0, 4.0]
    runs = [{"method": "none", "k": 0, "tokens_per_s": 10.0, "prompt_set": "prose"},
            {"method": "peagle", "k": 1, "tokens_per_s": 12.0, "prompt_set": "prose"},
            {"method": "peagle", "k": 2, "tokens_per_s": 15.0, "prompt_set": "prose"}]
    f = engine_plots.sweep_figure(runs, prompt_set="prose")
    assert list(f.data[0].y) == [12.0, 15.0] and f.layout.shapes  # 'none' drawn as a line
    mask = torch.tensor([[True, False], [True, True]])
    f = engine_plots.attention_mask_figure(mask, ["a0d0", "a0d1"])
    assert f.data[0].z == ((1, 0), (1, 1)) or [list(r) for r in f.data[0].z] == [[1, 0], [1, 1]]
    f = engine_plots.distribution_figure(["a", "b"], [0.5, 0.5], {"x": [0.4, 0.6]})
    assert len(f.data) == 2
    f = engine_plots.bars_figure({"learned": 3.1, "zero": 2.0}, "t", "tau", ref=1.0)
    assert list(f.data[0].y) == [3.1, 2.0]


def _rec(method, k, verify, draft, book, tau=1.0):
    return {"method": method, "k": k, "verify_ms_per_step": verify, "draft_ms_per_step": draft,
            "bookkeeping_ms_per_step": book, "step_ms": verify + draft + book, "tau": tau}


def test_step_breakdown_stacks_the_phases_beside_the_plain_step():
    recs = [_rec("none", 0, 2.0, 0.0, 0.5), _rec("peagle", 7, 4.0, 3.0, 1.0, tau=2.2),
            _rec("eagle3", 3, 3.0, 1.5, 0.5, tau=2.0)]
    f = engine_plots.step_breakdown_figure(recs)
    assert [tr.name for tr in f.data] == ["verify", "draft", "bookkeeping"] and f.layout.barmode == "stack"
    assert list(f.data[0].x) == ["no speculation", "P-EAGLE K=7", "EAGLE-3 K=3"]
    assert list(f.data[1].y) == [0.0, 3.0, 1.5] and list(f.data[2].y) == [0.5, 1.0, 0.5]
    notes = [a.text for a in f.layout.annotations]
    assert "τ 2.20 · needs 3.20" in notes and "τ 2.00 · needs 2.00" in notes  # step / plain step (8 / 2.5, 5 / 2.5)
    assert f.layout.shapes[0].y0 == 2.5  # one plain step
    rel = engine_plots.step_breakdown_figure(recs, relative=True)
    assert list(rel.data[0].y) == [0.8, 1.6, 1.2] and rel.layout.shapes[0].y0 == 1.0
    with pytest.raises(ValueError, match="exactly one plain-decoding record"):
        engine_plots.step_breakdown_figure(recs[1:])


def test_rows_cost_is_relative_to_one_row():
    f = engine_plots.rows_cost_figure({"cpu": ([1, 2, 8], [2.0, 2.5, 6.0]), "gpu": ([1, 8], [0.2, 0.22])})
    assert list(f.data[0].y) == [1.0, 1.25, 3.0] and list(f.data[1].y) == pytest.approx([1.0, 1.1])
    assert list(f.data[2].x) == [1, 8] and list(f.data[2].y) == [1, 8]  # T separate steps
    with pytest.raises(ValueError, match="no 1-row time"):
        engine_plots.rows_cost_figure({"cpu": ([2, 4], [1.0, 2.0])})


def test_ablation_lines_are_told_apart_by_colour_marker_and_dash():
    rates = {"peagle learned": [0.6, 0.3], "peagle zero hidden": [0.6, 0.3], "peagle random hidden": [0.6, 0.29],
             "peagle token ' the'": [0.6, 0.1]}
    fig = engine_plots.ablation_figure(rates)
    assert [t.name for t in fig.data] == list(rates)
    for attr in (lambda t: t.line.color, lambda t: t.marker.symbol, lambda t: t.line.dash):
        assert len({attr(t) for t in fig.data}) == len(rates)
    assert list(fig.data[3].y) == [0.6, 0.1]
