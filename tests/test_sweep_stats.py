"""The statistics behind vLLM-vs-engine acceptance at temperature 1 (peagle_nb.serving.sweep): pure functions."""

import math
import random

from peagle_nb.serving.sweep import compare_sampled, tau_standard_error


def counters(accepted, k):
    """vLLM's per-position counters of a list of per-step accepted counts."""
    return [sum(a >= j for a in accepted) for j in range(1, k + 1)]


def test_standard_error_from_counters_equals_the_direct_one():
    rng = random.Random(0)
    accepted = [rng.randint(0, 5) for _ in range(400)]
    n = len(accepted)
    mean = sum(accepted) / n
    direct = math.sqrt(sum((a - mean) ** 2 for a in accepted) / n) / math.sqrt(n)
    assert math.isclose(tau_standard_error(counters(accepted, 5), n), direct, rel_tol=1e-12)
    assert tau_standard_error([3, 2], 1) == math.inf  # one step: no spread to estimate


def test_same_distribution_agrees_and_a_shifted_one_does_not():
    rng = random.Random(1)
    draw = lambda p, n: [sum(rng.random() < p for _ in range(7)) for _ in range(n)]  # noqa: E731
    vllm_steps, engine_steps = draw(0.4, 600), draw(0.4, 600)
    run = {"tau": 1 + sum(vllm_steps) / 600, "accepted_per_position": counters(vllm_steps, 7), "num_drafts": 600}
    same = compare_sampled(run, {"tau": 1 + sum(engine_steps) / 600, "accepted_per_step": engine_steps})
    assert same["tau_agrees"] is True and same["tau_tolerance"] > 0
    shifted = draw(0.6, 600)
    other = compare_sampled(run, {"tau": 1 + sum(shifted) / 600, "accepted_per_step": shifted})
    assert other["tau_agrees"] is False  # 0.4 vs 0.6 per draft: ~1.4 tokens per step apart, far past 3 SE
