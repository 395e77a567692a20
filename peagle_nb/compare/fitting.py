"""Bounded nonlinear least squares (projected Levenberg-Marquardt), small enough to read.

The comparison fits a handful of parameters (the step-time model of the published GPU numbers, the
acceptance curve through two published acceptance lengths) continuously, inside physical bounds, and
must say when a parameter ends on a bound: a grid would silently return its edge instead. numpy only,
so the core package needs no optimisation library. Explained in notebook 07.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np


@dataclass(frozen=True)
class Fit:
    """Result of :func:`least_squares`: parameters by name, residuals at the optimum, bound hits."""

    params: dict[str, float]
    residuals: np.ndarray
    at_bound: dict[str, str] = field(default_factory=dict)  # name -> "lower" / "upper"
    iterations: int = 0

    @property
    def rms(self) -> float:
        return float(np.sqrt(np.mean(np.square(self.residuals)))) if len(self.residuals) else 0.0


def _jacobian(fun, x, r, lb, ub):
    jac = np.empty((len(r), len(x)))
    for i in range(len(x)):
        h = 1e-7 * max(1.0, abs(x[i]))
        step = h if x[i] + h <= ub[i] else -h  # stay inside the box
        xi = x.copy()
        xi[i] += step
        jac[:, i] = (fun(xi) - r) / step
    return jac


def _solve(fun, x0, lb, ub, max_iter, tol):
    x = np.clip(np.asarray(x0, float), lb, ub)
    r = fun(x)
    cost, lam, it = float(r @ r), 1e-3, 0
    for it in range(1, max_iter + 1):
        jac = _jacobian(fun, x, r, lb, ub)
        grad = jac.T @ r
        # a parameter on a bound whose gradient points outward stays there this iteration
        free = ~(((x <= lb) & (grad > 0)) | ((x >= ub) & (grad < 0)))
        if not free.any():
            break
        jf = jac[:, free]
        jtj = jf.T @ jf
        improved = False
        while lam < 1e12:
            a = jtj + lam * np.diag(np.maximum(np.diag(jtj), 1e-12))
            try:
                step = np.linalg.solve(a, -jf.T @ r)
            except np.linalg.LinAlgError:
                lam *= 10
                continue
            trial = x.copy()
            trial[free] = np.clip(x[free] + step, lb[free], ub[free])
            rt = fun(trial)
            ct = float(rt @ rt)
            if ct < cost:
                done = cost - ct <= tol * max(cost, 1e-300)
                x, r, cost, lam, improved = trial, rt, ct, max(lam / 3, 1e-12), True
                break
            lam *= 4
        if not improved or done:
            break
    return x, r, cost, it


def least_squares(residuals: Callable[[dict[str, float]], Sequence[float]], names: Sequence[str],
                  lower: Sequence[float], upper: Sequence[float], starts: Sequence[Sequence[float]],
                  max_iter: int = 300, tol: float = 1e-14) -> Fit:
    """Minimise the sum of squared ``residuals(params)`` with ``lower <= params <= upper``.

    Every start in ``starts`` is refined and the lowest cost wins (deterministic: no random restarts).
    A parameter within 1e-9 (relative) of a bound is reported in ``Fit.at_bound``.
    """
    lb, ub = np.asarray(lower, float), np.asarray(upper, float)
    if not (len(names) == len(lb) == len(ub)) or np.any(lb > ub):
        raise ValueError("least_squares: names, lower and upper must have the same length with lower <= upper")
    if not starts:
        raise ValueError("least_squares: give at least one start")

    def fun(x):
        return np.asarray(residuals(dict(zip(names, map(float, x)))), float)

    best = None
    for x0 in starts:
        x, r, cost, it = _solve(fun, x0, lb, ub, max_iter, tol)
        if best is None or cost < best[2]:
            best = (x, r, cost, it)
    x, r, _, it = best
    span = np.maximum(np.abs(ub - lb), 1e-12)
    at_bound = {}
    for n, v, lo, hi, s in zip(names, x, lb, ub, span):
        if abs(v - lo) <= 1e-9 * s:
            at_bound[n] = "lower"
        elif abs(v - hi) <= 1e-9 * s:
            at_bound[n] = "upper"
    return Fit(dict(zip(names, map(float, x))), r, at_bound, it)
