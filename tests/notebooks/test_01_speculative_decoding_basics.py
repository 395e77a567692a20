"""Notebook 01 in smoke mode: lossless greedy verification, rejection sampling matches the target."""

import pytest

NOTEBOOK = "01_speculative_decoding_basics.ipynb"
SMOKE_PARAMETERS = {"SMOKE": True, "K": 5}

pytestmark = pytest.mark.notebook


def test_notebook_01_records(run_notebook):
    rec = run_notebook(NOTEBOOK, **SMOKE_PARAMETERS).records
    assert rec["basics.lossless_greedy"] is True and rec["basics.eval.lossless"] is True
    assert 1.0 <= rec["basics.tau"] <= 6.0
    rates = rec["basics.eval.accept_rate_per_position"]
    assert len(rates) == 5 and rates == sorted(rates, reverse=True)  # accepted as a prefix
    assert rec["basics.eval.tau"] == pytest.approx(1 + sum(rates), abs=1e-3)
    # the trained P-EAGLE head drafts the tiny target well enough to be worth it: a verification step keeps
    # 1.5 tokens or more, so the target runs for well under two thirds of the tokens
    assert rec["basics.eval.tau"] > 1.5 and rec["basics.tau"] > 1.5
    assert rec["basics.target_passes_saved_fraction"] > 0.25
    # rejection sampling: output as close to p as direct sampling from p; acceptance = 1 - TV(p, q)
    assert rec["basics.sampling.n_samples"] == 20000
    assert rec["basics.sampling.tv_target_vs_output"] <= 1.5 * rec["basics.sampling.tv_noise_floor"] + 0.01
    assert rec["basics.sampling.accept_rate_measured"] == pytest.approx(
        rec["basics.sampling.accept_rate_predicted"], abs=0.02)
