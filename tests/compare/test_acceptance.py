import math

import pytest

from peagle_nb.compare.acceptance import (AcceptanceCurve, alpha_from_tau, conditional_rates, curve_from_runs,
                                          curve_from_tau, fit_decay, tau_from_rates,
                                          tau_geometric)


def test_tau_includes_the_bonus_token():
    assert tau_from_rates([]) == 1.0
    assert tau_from_rates([0.8, 0.5]) == pytest.approx(2.3)


def test_conditional_rates():
    assert conditional_rates([0.8, 0.4, 0.0, 0.0]) == pytest.approx([0.8, 0.5, 0.0, 0.0])


@pytest.mark.parametrize("alpha,k", [(0.5, 1), (0.7, 7), (0.9, 12)])
def test_constant_alpha_matches_closed_form(alpha, k):
    assert tau_geometric(alpha, k) == pytest.approx((1 - alpha ** (k + 1)) / (1 - alpha))


@pytest.mark.parametrize("decay", [1.0, 0.97])
def test_alpha_from_tau_round_trips(decay):
    for alpha in (0.3, 0.62, 0.9):
        assert alpha_from_tau(tau_geometric(alpha, 7, decay), 7, decay) == pytest.approx(alpha, abs=1e-9)


def test_alpha_from_tau_rejects_impossible_tau():
    with pytest.raises(ValueError, match=r"\[1, k\+1\]"):
        alpha_from_tau(9.0, 7)
    with pytest.raises(ValueError, match="k must be"):
        alpha_from_tau(1.5, 0)


def test_fit_decay_recovers_known_curve():
    pts = [(k, tau_geometric(0.9, k, 0.98)) for k in (4, 10, 18)]
    alpha, decay = fit_decay(pts)
    assert alpha == pytest.approx(0.9, abs=0.01) and decay == pytest.approx(0.98, abs=0.005)


def test_curve_pools_runs_weighted_and_extends_with_tail():
    runs = [{"accept_rate_per_position": [0.8, 0.6], "n_prompts": 1},
            {"accept_rate_per_position": [0.6, 0.4, 0.3], "n_prompts": 3}]
    c = curve_from_runs(runs)
    assert c.rates[0] == pytest.approx((0.8 + 3 * 0.6) / 4)
    assert c.rates[2] == pytest.approx(0.3)  # only the second run covers position 3
    ext = c.rates_for(5)
    assert len(ext) == 5 and ext[3] == pytest.approx(0.3 * c.tail_alpha)
    assert c.tau(2) == pytest.approx(1 + c.rates[0] + c.rates[1])


def test_curve_from_runs_needs_rates():
    with pytest.raises(ValueError, match="accept_rate_per_position"):
        curve_from_runs([{"tau": 2.0}], label="x")


def test_curve_from_tau_matches_published_tau_and_decays():
    c = curve_from_tau(3.70, 7, decay=0.98)
    assert c.tau(7) == pytest.approx(3.70, abs=1e-6)
    cond = conditional_rates(c.rates_for(10))
    assert cond[9] < cond[0]


def test_curve_past_its_stored_positions_follows_the_closed_form():
    """A constant conditional rate alpha gives tau(K) = (1 - alpha^(K+1)) / (1 - alpha) at every K: the curve
    stores 32 positions, so tau(40) checks the tail continuing past them, not only the stored rates."""
    alpha = 0.8
    c = curve_from_tau((1 - alpha ** 8) / (1 - alpha), 7)
    assert len(c.rates) == 32
    assert c.tau(40) == pytest.approx((1 - alpha ** 41) / (1 - alpha), rel=1e-9)


def test_decaying_curve_continues_with_its_last_conditional_rate():
    """Past the stored positions each rate is the previous one times the last stored conditional rate: a
    geometric series added to the stored tau."""
    c = curve_from_tau(3.70, 7, decay=0.98)
    n, last, q = len(c.rates), c.rates[-1], conditional_rates(c.rates)[-1]
    assert c.tail_alpha == pytest.approx(q, rel=1e-9)
    assert c.tau(n + 8) == pytest.approx(c.tau(n) + last * sum(q ** m for m in range(1, 9)), rel=1e-12)
    assert math.isfinite(c.tau(1000)) and c.tau(1000) < 1 + n + last / (1 - q)


def test_curve_rejects_bad_rates():
    with pytest.raises(ValueError):
        AcceptanceCurve((1.2,), 0.5)
    with pytest.raises(ValueError):
        AcceptanceCurve((), 0.5)
