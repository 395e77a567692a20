"""Notebook 03 in smoke mode: one pass per step, COD mask, acceptance vs EAGLE-3, placeholder ablation."""

import json

import pytest

from peagle_nb import paths

NOTEBOOK = "03_peagle_mask_token_drafter.ipynb"
SMOKE_PARAMETERS = {"SMOKE": True, "K_MAX": 8, "COD_ANCHORS": 8, "COD_K": 4}

pytestmark = pytest.mark.notebook


def test_notebook_03_records(run_notebook):
    rec = run_notebook(NOTEBOOK, **SMOKE_PARAMETERS).records
    assert rec["peagle.mask_token_id"] == 2
    assert rec["peagle.mask_hidden_width"] == 3 * 256
    assert rec["peagle.passes_per_step"] == 1.0  # ONE drafter pass per step
    kept = rec["peagle.cod.kept_per_depth"]
    assert kept[0] == 8 and kept == sorted(kept, reverse=True) and kept[-1] >= 2  # r_min keeps 20%
    assert 0.0 < rec["peagle.cod.mask_density"] < 1.0
    for method in ("peagle", "eagle3"):
        for name in ("prose", "code"):
            assert rec[f"{method}.{name}.lossless"] is True
            rates = rec[f"{method}.{name}.k8.accept_rate_per_position"]
            assert len(rates) == 8 and rates == sorted(rates, reverse=True)
    for m in ("peagle", "eagle3"):
        for name in ("prose", "code"):
            assert 1.5 < rec[f"{m}.{name}.k7.tau"] <= 8.0  # both trained heads get drafts accepted
    abl = rec["peagle.ablation.tau_k7"]
    assert set(abl) >= {"learned", "zero hidden", "random hidden"}
    # an ordinary token in the mask slots costs a lot; the learned hidden is at least as good as zero/random
    assert rec["peagle.ablation.learned_minus_ordinary_token"] > 0.2
    assert rec["peagle.ablation.learned_minus_best_replacement"] > -0.05
    for m in ("peagle", "eagle3"):
        assert sorted(rec[f"{m}.draft_ms_per_k"]) == [str(k) for k in range(1, 9)]
    for tag in ("engine_cpu", "engine_h200"):  # both sweeps are committed in data/results/: both are shown
        assert f"skipped.results_{tag}" not in rec
        summary = json.loads((paths.results_dir() / f"{tag}.json").read_text())["summary"]
        for name in ("prose", "code"):
            s = summary[name]
            assert rec[f"{tag}.{name}.speedup_peagle_over_eagle3"] == pytest.approx(
                s["speedup_peagle_over_eagle3_at_best_k"], abs=1e-4)
            assert rec[f"{tag}.{name}.best_k"] == {"eagle3": s["eagle3.best_k"], "peagle": s["peagle.best_k"]}
    # the committed H200 measurement of one drafting step: one pass is ~flat in K, K passes ~linear
    assert rec["engine_h200.peagle.draft_cost_ratio_k8_vs_k1"] <= 1.5
    assert rec["engine_h200.eagle3.draft_cost_ratio_k8_vs_k1"] >= 4.0
