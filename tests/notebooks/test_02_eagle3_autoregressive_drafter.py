"""Notebook 02 in smoke mode: EAGLE-3's anatomy, K passes per step, acceptance, TTT, cost vs K (lean engine)."""

import pytest

NOTEBOOK = "02_eagle3_autoregressive_drafter.ipynb"
SMOKE_PARAMETERS = {"SMOKE": True, "K_MAX": 8}

pytestmark = pytest.mark.notebook


def test_notebook_02_records(run_notebook):
    rec = run_notebook(NOTEBOOK, **SMOKE_PARAMETERS).records
    assert rec["eagle3.feature_layers"] == [2, 4, 5]  # vLLM's (2, L//2, L-3) for the 8-layer target
    assert rec["eagle3.feature_layer_cosine_max"] < 0.999  # three distinct layers
    assert rec["eagle3.fused_input_width"] == 2 * 256
    assert rec["eagle3.passes_per_step_k4"] == 4.0  # K sequential passes
    for name in ("prose", "code"):
        assert rec[f"eagle3.{name}.lossless"] is True
        assert 0.0 < rec[f"eagle3.draft_vocab_coverage.{name}"] <= 1.0
        rates = rec[f"eagle3.{name}.k8.accept_rate_per_position"]
        assert len(rates) == 8 and rates == sorted(rates, reverse=True)
        assert 1.0 <= rec[f"eagle3.{name}.k7.tau"] <= 8.0
        assert rates[0] > 0.3  # the trained head's first draft is usually right
    # training-time test: the self-fed hidden state differs from the target feature, yet accuracy holds up
    acc = rec["eagle3.ttt.conditional_accuracy_by_depth"]
    cos = rec["eagle3.ttt.self_fed_cosine_by_depth"]
    assert len(acc) == 7 and len(cos) == 6
    assert acc[0] > 0.3 and min(acc[1:]) > acc[0] - 0.15
    assert all(0.2 < c < 0.9 for c in cos)
    tree = rec["eagle3.tree.first_draft_in_top"]  # a tree's first level: top-2 / top-4 candidates
    assert tree["2"] > tree["1"] + 0.03  # the second candidate is often right where the first is not
    # drafting cost per K from the lean engine's phase timing (the way notebook 03 measures it), with its spread
    med, p10, p90 = (rec[f"eagle3.draft_ms{x}_per_k"] for x in ("", "_p10", "_p90"))
    assert sorted(med, key=int) == [str(k) for k in range(1, 9)] and set(p10) == set(p90) == set(med)
    assert all(p10[k] <= med[k] <= p90[k] for k in med)
    assert rec["eagle3.draft_cost_ratio_kmax_vs_k1"] == pytest.approx(med["8"] / med["1"], rel=1e-2)
    assert 0.0 <= rec["eagle3.draft_fit_r2"] <= 1.0
