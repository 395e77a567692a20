import pytest

from peagle_nb.compare.step_model import StepCost, fit_step_cost
from tests.compare import synthetic


def test_step_time_structure():
    c = StepCost(v0=10, v1=1, e0=2, e1=0.5, p0=4, p1=0.25)
    assert c.baseline_ms(1) == 11
    assert c.step_ms("eagle3", 3, 2) == pytest.approx(3 * (2 + 1) + 10 + 2 * 4)  # K sequential passes
    assert c.step_ms("peagle", 3, 2) == pytest.approx(4 + 0.25 * 6 + 10 + 8)  # one pass of B*K tokens
    assert c.draft_ms("peagle", 0, 4) == 0.0
    with pytest.raises(ValueError, match="method"):
        c.draft_ms("medusa", 3)


def test_expert_term_grows_with_tokens_and_saturates():
    c = StepCost(v0=1, v1=0, e0=0, e1=0, p0=0, p1=0, v_expert=2.0, expert_fraction=0.125)
    assert c.verify_ms(1) == pytest.approx(1 + 2 * 0.125)
    assert c.verify_ms(8) > c.verify_ms(4) > c.verify_ms(1)
    assert c.verify_ms(500) == pytest.approx(3.0, abs=1e-6)


def test_fit_recovers_truth_from_noiseless_runs_over_k_and_batch():
    cost = fit_step_cost(synthetic.runs(batches=(1, 2, 4)))
    t = synthetic.TRUTH
    for name in ("v0", "v1", "e0", "e1", "p0", "p1"):
        assert getattr(cost, name) == pytest.approx(getattr(t, name), rel=1e-6, abs=1e-9), name


def test_fit_with_one_batch_size_apportions_eagle3_pass_like_the_target():
    cost = fit_step_cost(synthetic.runs(batches=(1,)))
    t = synthetic.TRUTH
    assert cost.v0 == pytest.approx(t.v0) and cost.v1 == pytest.approx(t.v1)
    assert cost.e0 + cost.e1 == pytest.approx(t.e0 + t.e1)  # the measured per-pass time at B=1
    assert cost.e1 / cost.e0 == pytest.approx(t.v1 / t.v0)


def test_fit_with_noise_stays_close():
    cost = fit_step_cost(synthetic.runs(batches=(1, 4), noise=0.03, seed=1))
    assert cost.step_ms("peagle", 5, 1) == pytest.approx(synthetic.TRUTH.step_ms("peagle", 5, 1), rel=0.05)
    assert cost.step_ms("eagle3", 5, 4) == pytest.approx(synthetic.TRUTH.step_ms("eagle3", 5, 4), rel=0.05)


def test_fit_names_what_is_missing():
    runs = [r for r in synthetic.runs() if r["method"] != "peagle"]
    with pytest.raises(ValueError, match="P-EAGLE draft_ms_per_step"):
        fit_step_cost(runs)
