"""Step-time model of one speculative-decoding step, per method, fitted from measurements.

One step = draft K tokens + verify them (plus the bonus token) in one target pass. Explained in
notebook 07. With ``B`` concurrent requests:

- verification processes ``n = B * (K + 1)`` tokens of ``B`` requests:
  ``verify = v0 + v_req * B + v_expert * (1 - (1 - r)^n) + v1 * n``. ``v0`` is the fixed cost of a target
  pass (launches, scheduling), ``v_req`` a cost per request that does not grow with its number of query
  tokens (attention reading the request's KV cache), ``v1`` the cost per token (compute), and the
  ``v_expert`` term the expert weights a mixture-of-experts target reads: each token routes to a fraction
  ``r`` of the experts, so more tokens touch more experts (``v_expert = 0`` for a dense target such as the
  tiny model). Plain decoding is the same pass with ``n = B`` tokens.
- EAGLE-3 drafts with K sequential passes: ``K * (e0 + (e_req + e1) * B)``.
- P-EAGLE drafts with ONE pass: ``p0 + p_req * B + p1 * B * K``. In vLLM that pass holds about 2K rows per
  request (the tokens the last verification accepted, padding for the rejected ones, the bonus token and
  K-1 ``<mask>`` slots: ``copy_and_expand_eagle_inputs_kernel``), so ``p1`` is the cost of two rows.

Throughput = ``B * tau(K) / step_ms``; speedup over plain decoding = ``tau(K) * verify(B) / step_ms``.
The per-request terms are zero unless set (the measured fits below leave them at zero).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Iterable

import numpy as np

SPEC_METHODS = ("eagle3", "peagle")


@dataclass(frozen=True)
class StepCost:
    """Parameters of the step-time model, all in milliseconds (see the module docstring)."""

    v0: float
    v1: float
    e0: float
    e1: float
    p0: float
    p1: float
    v_expert: float = 0.0
    expert_fraction: float = 0.0
    label: str = ""
    v_req: float = 0.0
    e_req: float = 0.0
    p_req: float = 0.0

    def verify_ms(self, tokens: float, requests: int = 0) -> float:
        """One target pass over ``tokens`` query tokens of ``requests`` requests."""
        cover = 1.0 - (1.0 - self.expert_fraction) ** tokens if self.v_expert else 0.0
        return self.v0 + self.v_req * requests + self.v_expert * cover + self.v1 * tokens

    def baseline_ms(self, batch: int) -> float:
        """One plain decoding step for ``batch`` requests (one token each)."""
        return self.verify_ms(batch, batch)

    def draft_ms(self, method: str, k: int, batch: int = 1) -> float:
        _check_method(method)
        if k == 0:
            return 0.0
        if method == "eagle3":
            return k * (self.e0 + (self.e_req + self.e1) * batch)
        return self.p0 + self.p_req * batch + self.p1 * batch * k

    def step_ms(self, method: str, k: int, batch: int = 1) -> float:
        return self.draft_ms(method, k, batch) + self.verify_ms(batch * (k + 1), batch)

    def to_dict(self) -> dict:
        return asdict(self)


def _check_method(method: str) -> None:
    if method not in SPEC_METHODS:
        raise ValueError(f"method must be one of {SPEC_METHODS}, got {method!r}")


def _batch(run: dict) -> int:
    return int(run.get("batch_size") or run.get("concurrency") or 1)


def _nonneg_line(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Least-squares ``y = a + b x`` with a, b >= 0 (b = 0 when x does not vary)."""
    if len(x) == 0:
        raise ValueError("no measurements to fit")
    if np.ptp(x) == 0:
        return max(float(np.mean(y)), 0.0), 0.0
    b, a = np.polyfit(x, y, 1)
    if b < 0:
        return max(float(np.mean(y)), 0.0), 0.0
    if a < 0:  # refit through the origin
        return 0.0, float(np.dot(x, y) / np.dot(x, x))
    return float(a), float(b)


def fit_step_cost(runs: Iterable[dict], label: str = "fitted", v_expert: float = 0.0,
                  expert_fraction: float = 0.0) -> StepCost:
    """Fit a :class:`StepCost` from runs with ``draft_ms_per_step`` / ``verify_ms_per_step``.

    Uses every run's verification time (method "none" runs count as 1 token per request), EAGLE-3
    runs' drafting time per pass and P-EAGLE runs' drafting time per pass. When all runs share one
    batch size the per-request slope of EAGLE-3's draft pass is not identifiable; it is then set
    with the assumption that the drafter scales with batch like the target does (``e1 = e0 * v1 /
    v0``), stated in notebook 07. Raises ValueError naming what is missing.
    """
    runs = [r for r in runs if r.get("method") in ("none", *SPEC_METHODS)]
    vx, vy, ex, ey, px, py = [], [], [], [], [], []
    for r in runs:
        b, k = _batch(r), int(r.get("k") or 0)
        if r.get("verify_ms_per_step") is not None:
            n = b * (k + 1) if r["method"] != "none" else b
            vx.append(n)
            vy.append(float(r["verify_ms_per_step"]) - v_expert * _cover(n, expert_fraction))
        elif r["method"] == "none" and r.get("tokens_per_s"):
            vx.append(b)
            vy.append(1000.0 * b / float(r["tokens_per_s"]) - v_expert * _cover(b, expert_fraction))
        if k > 0 and r.get("draft_ms_per_step") is not None:
            if r["method"] == "eagle3":
                ex.append(b)
                ey.append(float(r["draft_ms_per_step"]) / k)
            elif r["method"] == "peagle":
                px.append(b * k)
                py.append(float(r["draft_ms_per_step"]))
    missing = [name for name, xs in (("verify_ms_per_step", vx), ("EAGLE-3 draft_ms_per_step", ex),
                                     ("P-EAGLE draft_ms_per_step", px)) if not xs]
    if missing:
        raise ValueError(f"cannot fit the step-time model {label!r}: no runs with {', '.join(missing)}; "
                         "an engine sweep (`peagle-nb eval --sweep`) writes them")
    v0, v1 = _nonneg_line(np.array(vx, float), np.array(vy, float))
    e0, e1 = _nonneg_line(np.array(ex, float), np.array(ey, float))
    if np.ptp(ex) == 0 and v0 > 0:  # one batch size only: apportion the pass like the target's
        b = ex[0]
        per_pass = e0
        e0 = per_pass / (1 + b * v1 / v0)
        e1 = e0 * v1 / v0
    p0, p1 = _nonneg_line(np.array(px, float), np.array(py, float))
    return StepCost(v0, v1, e0, e1, p0, p1, v_expert, expert_fraction, label)


def _cover(n: float, r: float) -> float:
    return 1.0 - (1.0 - r) ** n if r else 0.0


