"""The bounded least-squares fitter: recovers known parameters, reports bounds, agrees with scipy."""

import math

import numpy as np
import pytest

from peagle_nb.compare.acceptance import fit_acceptance, tau_geometric
from peagle_nb.compare.fitting import least_squares

X = np.linspace(0, 4, 9)


def _curve(p):
    return p["a"] * np.exp(-p["b"] * X) + p["c"]


def test_recovers_known_parameters_inside_the_bounds():
    truth = {"a": 2.0, "b": 0.7, "c": 0.3}
    y = _curve(truth)
    fit = least_squares(lambda p: _curve(p) - y, ("a", "b", "c"), (0, 0, 0), (10, 5, 5), [(1, 1, 1)])
    for k, v in truth.items():
        assert fit.params[k] == pytest.approx(v, abs=1e-6)
    assert fit.at_bound == {} and fit.rms < 1e-8


def test_a_parameter_pushed_past_its_bound_stops_there_and_is_reported():
    y = _curve({"a": 2.0, "b": 0.7, "c": -0.5})  # c < 0 is outside the box
    fit = least_squares(lambda p: _curve(p) - y, ("a", "b", "c"), (0, 0, 0), (10, 5, 5), [(1, 1, 1)])
    assert fit.params["c"] == 0.0 and fit.at_bound == {"c": "lower"}
    assert fit.rms > 0.01  # the data cannot be matched inside the bounds


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="same length"):
        least_squares(lambda p: [0.0], ("a",), (0, 0), (1, 1), [(0.5,)])
    with pytest.raises(ValueError, match="start"):
        least_squares(lambda p: [0.0], ("a",), (0,), (1,), [])


def test_acceptance_through_two_points_matches_scipy():
    scipy_opt = pytest.importorskip("scipy.optimize")
    pts = [(3, 3.02), (7, 3.94)]
    fit = fit_acceptance(pts)
    assert all(abs(math.log(tau_geometric(fit.params["alpha"], k, fit.params["decay"]) / t)) < 1e-9 for k, t in pts)
    ref = scipy_opt.least_squares(lambda x: [math.log(tau_geometric(x[0], k, x[1]) / t) for k, t in pts],
                                  [0.8, 0.9], bounds=([0, 0.5], [1, 1.5]))
    assert fit.params["alpha"] == pytest.approx(ref.x[0], abs=1e-5)
    assert fit.params["decay"] == pytest.approx(ref.x[1], abs=1e-5)


def test_acceptance_rejects_impossible_points():
    with pytest.raises(ValueError, match=r"\[1, K\+1\]"):
        fit_acceptance([(3, 4.5), (7, 5.0)])
