"""Acceptance metrics of speculative decoding (vLLM's conventions). Explained in notebook 01.

For a run of verification steps, each with ``accepted`` = number of drafts the target kept:

- acceptance length ``tau = 1 + accepted / steps`` (the bonus token counts, vLLM's convention);
- per-position (unconditional) rate ``a_j`` = fraction of steps whose draft j was accepted, i.e.
  ``accepted >= j`` (drafts are accepted as a prefix);
- conditional rate ``alpha_j = a_j / a_(j-1)`` (``a_0 = 1``): how often draft j survives given that
  draft j-1 did. With a constant alpha, E[tokens/step] = (1 - alpha^(K+1)) / (1 - alpha).
"""

from __future__ import annotations

from typing import Sequence


def acceptance_length(accepted: Sequence[int]) -> float:
    """tau = 1 + mean accepted drafts per verification step (1.0 for no steps)."""
    return 1.0 + (sum(accepted) / len(accepted) if accepted else 0.0)


def per_position_rates(accepted: Sequence[int], k: int) -> list[float]:
    """a_j for j = 1..k: share of steps whose j-th draft was accepted."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    n = len(accepted)
    if n == 0:
        return [0.0] * k
    return [sum(1 for a in accepted if a >= j) / n for j in range(1, k + 1)]


def conditional_alphas(rates: Sequence[float]) -> list[float | None]:
    """alpha_j = a_j / a_(j-1) with a_0 = 1; None where the previous position was never accepted."""
    out: list[float | None] = []
    prev = 1.0
    for a in rates:
        out.append(a / prev if prev > 0 else None)
        prev = a
    return out


def expected_tokens_per_step(alpha: float, k: int) -> float:
    """E[tokens per step] for a constant conditional acceptance alpha and K drafts (bonus included)."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    if alpha == 1.0:
        return float(k + 1)
    return (1.0 - alpha ** (k + 1)) / (1.0 - alpha)


def summarize(accepted: Sequence[int], k: int) -> dict:
    """tau, per-position rates and conditional alphas for one run of steps."""
    rates = per_position_rates(accepted, k)
    return {
        "steps": len(accepted),
        "tau": acceptance_length(accepted),
        "accept_rate_per_position": rates,
        "conditional_alpha": conditional_alphas(rates),
    }


def tau_by_output_position(accepted_per_step: Sequence[int], steps_per_prompt: Sequence[int],
                           edge: int) -> tuple[float, float]:
    """tau of the steps that start before output token ``edge`` and of those that start at or after it (each prompt's
    steps in order; the first output token comes from the prefill). A drafter trained on sequences of ``edge``
    positions sees positions past its training length in the second group (notebook 03)."""
    if sum(steps_per_prompt) != len(accepted_per_step):
        raise ValueError(f"steps_per_prompt sums to {sum(steps_per_prompt)}, but there are {len(accepted_per_step)} "
                         "steps: pass the lists of one run record")
    early, late, i = [], [], 0
    for n in steps_per_prompt:
        produced = 1
        for a in accepted_per_step[i:i + n]:
            (early if produced < edge else late).append(a)
            produced += a + 1
        i += n
    return acceptance_length(early), acceptance_length(late)
