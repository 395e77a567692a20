"""Per-position acceptance: from measured rates (or one published acceptance length) to tau at any K.

Notation (``peagle_nb.analysis.metrics``, explained in notebooks 01 and 07): ``a_k`` is the unconditional rate at
which draft position k is accepted, ``alpha_k = a_k / a_(k-1)`` the conditional rate, and the
acceptance length ``tau(K) = 1 + a_1 + ... + a_K`` (bonus token included, vLLM's convention).

With greedy verification the K drafts of a step are a prefix of the drafts for any larger K (EAGLE-3
drafts sequentially; P-EAGLE's attention is causal), so ``a_k`` does not depend on K: one curve per
method, pooled over every run that covers position k, serves all K. Beyond the last measured position
the curve continues with a constant conditional rate (the tail), which is the documented assumption
behind every prediction past the measured K.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Sequence


def tau_from_rates(rates: Sequence[float]) -> float:
    """tau = 1 + sum of the unconditional per-position acceptance rates."""
    return 1.0 + float(sum(rates))


def conditional_rates(rates: Sequence[float]) -> list[float]:
    """alpha_k = a_k / a_(k-1) (a_0 = 1); 0 where the previous position was never accepted."""
    out, prev = [], 1.0
    for a in rates:
        out.append(float(a) / prev if prev > 0 else 0.0)
        prev = float(a)
    return out


def geometric_rates(alpha: float, k: int, decay: float = 1.0) -> list[float]:
    """a_1..a_k when the conditional rate at position j is ``min(1, alpha * decay**(j-1))``.

    ``decay = 1`` is the constant-conditional-rate model of ``peagle_nb.analysis.metrics.expected_tokens_per_step``
    (a_k = alpha^k);
    ``decay < 1`` lets deeper positions be accepted less often, as published curves show.
    """
    out, a = [], 1.0
    for j in range(k):
        a *= min(1.0, alpha * decay ** j)
        out.append(a)
    return out


def tau_geometric(alpha: float, k: int, decay: float = 1.0) -> float:
    """Acceptance length; with ``decay = 1`` this is (1 - alpha^(K+1)) / (1 - alpha)."""
    return tau_from_rates(geometric_rates(alpha, k, decay))


def alpha_from_tau(tau: float, k: int, decay: float = 1.0) -> float:
    """The conditional rate alpha (first position) that gives acceptance length ``tau`` at ``k`` (bisection)."""
    if k < 1:
        raise ValueError(f"alpha_from_tau: k must be >= 1, got {k}")
    if not 1.0 <= tau <= k + 1:
        raise ValueError(f"alpha_from_tau: tau={tau} must lie in [1, k+1] = [1, {k + 1}]")
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if tau_geometric(mid, k, decay) < tau:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


DECAY_BOUNDS = (0.5, 1.5)  # per-position change of the conditional rate: a wide, physical range


def fit_acceptance(points: Sequence[tuple[int, float]]):
    """Fit ``alpha`` and ``decay`` of :func:`tau_geometric` to (K, tau) points of ONE head (least squares in
    log tau, continuous, ``alpha`` in [0, 1], ``decay`` in :data:`DECAY_BOUNDS`). Two points (e.g. the
    published tau at K=3 and K=7) determine both exactly. Returns a :class:`~peagle_nb.compare.fitting.Fit`
    (``params["alpha"]``, ``params["decay"]``, ``at_bound``)."""
    from peagle_nb.compare.fitting import least_squares

    if len(points) < 2:
        raise ValueError("fit_acceptance needs tau at two or more K")
    for k, t in points:
        if not 1.0 <= t <= k + 1:
            raise ValueError(f"fit_acceptance: tau={t} at K={k} must lie in [1, K+1]")

    def residuals(p):
        return [math.log(tau_geometric(p["alpha"], k, p["decay"]) / t) for k, t in points]

    starts = [(a, d) for a in (0.6, 0.8, 0.95) for d in (0.9, 1.0)]
    return least_squares(residuals, ("alpha", "decay"), (0.0, DECAY_BOUNDS[0]), (1.0, DECAY_BOUNDS[1]), starts)


def fit_decay(points: Sequence[tuple[int, float]]) -> tuple[float, float]:
    """``(alpha, decay)`` of :func:`fit_acceptance`."""
    fit = fit_acceptance(points)
    return fit.params["alpha"], fit.params["decay"]


def curve_through(points: Sequence[tuple[int, float]], label: str = "", positions: int = 32) -> AcceptanceCurve:
    """The curve of one head through its published (K, tau) points (e.g. K=3 and K=7): its own alpha and
    depth decay, nothing borrowed from another head."""
    alpha, decay = fit_decay(points)
    rates = geometric_rates(alpha, positions, decay)
    return AcceptanceCurve(tuple(rates), min(1.0, alpha * decay ** (positions - 1)),
                           label or " ".join(f"tau={t} at K={k}" for k, t in points), 0)


@dataclass(frozen=True)
class AcceptanceCurve:
    """Unconditional per-position rates ``a_1..a_M`` plus a tail conditional rate for positions > M."""

    rates: tuple[float, ...]
    tail_alpha: float
    label: str = ""
    measured_positions: int = field(default=-1)  # how many leading positions were measured (-1: all)

    def __post_init__(self):
        if not self.rates:
            raise ValueError("AcceptanceCurve needs at least one per-position rate")
        if any(not 0.0 <= a <= 1.0 for a in self.rates) or not 0.0 <= self.tail_alpha <= 1.0:
            raise ValueError(f"AcceptanceCurve {self.label!r}: rates must lie in [0, 1]")

    def rates_for(self, k: int) -> list[float]:
        """a_1..a_k, extended past the known positions with the constant tail rate."""
        out = list(self.rates[:k])
        while len(out) < k:
            out.append(out[-1] * self.tail_alpha)
        return out

    def tau(self, k: int) -> float:
        return tau_from_rates(self.rates_for(k))


def curve_from_tau(tau: float, k: int, decay: float = 1.0, label: str = "", positions: int = 32) -> AcceptanceCurve:
    """A curve matching one published acceptance length (e.g. tau at K=7), conditional rate decaying by
    ``decay`` per position; ``positions`` rates are stored, the tail continues with the last conditional rate."""
    alpha = alpha_from_tau(tau, k, decay)
    rates = geometric_rates(alpha, max(k, positions), decay)
    return AcceptanceCurve(tuple(rates), min(1.0, alpha * decay ** (len(rates) - 1)),
                           label or f"tau={tau} at K={k}", 0)


def curve_from_runs(runs: Iterable[dict], label: str = "", tail_positions: int = 3) -> AcceptanceCurve:
    """Pool ``accept_rate_per_position`` over runs (weighted by ``n_prompts``) into one curve.

    The tail rate is the mean conditional rate of the last ``tail_positions`` measured positions,
    capped at 0.99 so predictions stay finite as K grows.
    """
    sums: list[float] = []
    weights: list[float] = []
    for run in runs:
        rates = run.get("accept_rate_per_position")
        if not rates:
            continue
        w = float(run.get("n_prompts") or 1)
        for i, a in enumerate(rates):
            if i == len(sums):
                sums.append(0.0)
                weights.append(0.0)
            sums[i] += w * float(a)
            weights[i] += w
    if not sums:
        raise ValueError(f"no run with accept_rate_per_position to build an acceptance curve {label!r} from; "
                         "measured runs need the per-position rates (see data/results/README.md)")
    rates = [s / w for s, w in zip(sums, weights)]
    cond = [c for c in conditional_rates(rates)[-tail_positions:]]
    tail = min(0.99, max(0.0, sum(cond) / len(cond)))
    return AcceptanceCurve(tuple(rates), tail, label, len(rates))
