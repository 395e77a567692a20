"""The engine notebooks' figures are built from the numbers they are given (no .show())."""

import plotly.graph_objects as go
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
