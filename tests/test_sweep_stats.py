"""The statistics behind vLLM-vs-engine acceptance at temperature 1 (peagle_nb.lab.sweeps.vllm_sweep): pure
functions."""

import math
import random

import pytest

from peagle_nb.lab.sweeps.vllm_sweep import compare_sampled, tau_standard_error


def draw_steps(rng: random.Random, p: float, n: int) -> list[int]:
    """Accepted counts of ``n`` steps of K=7 whose drafts are each accepted with probability ``p``."""
    return [sum(rng.random() < p for _ in range(7)) for _ in range(n)]


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

    def draw(p: float, n: int) -> list[int]:
        return draw_steps(rng, p, n)

    vllm_steps, engine_steps = draw(0.4, 600), draw(0.4, 600)
    run = {"tau": 1 + sum(vllm_steps) / 600, "accepted_per_position": counters(vllm_steps, 7), "num_drafts": 600}
    same = compare_sampled(run, {"tau": 1 + sum(engine_steps) / 600, "accepted_per_step": engine_steps})
    assert same["tau_agrees"] is True and same["tau_tolerance"] > 0
    shifted = draw(0.6, 600)
    other = compare_sampled(run, {"tau": 1 + sum(shifted) / 600, "accepted_per_step": shifted})
    assert other["tau_agrees"] is False  # 0.4 vs 0.6 per draft: ~1.4 tokens per step apart, far past 3 SE


def test_prompt_level_error_widens_when_prompts_differ_and_matches_steps_when_they_do_not():
    """Steps of one prompt share its text: when prompts differ in how easy they are, the prompt-level standard
    error is larger than the step-level one, and the tolerance follows it."""
    from peagle_nb.lab.sweeps.vllm_sweep import prompt_level_standard_error

    rng = random.Random(2)

    def draw(p: float, n: int) -> list[int]:
        return draw_steps(rng, p, n)

    easy_hard = draw(0.7, 50) + draw(0.2, 50) + draw(0.7, 50) + draw(0.2, 50)  # 4 prompts, 2 easy, 2 hard
    alike = draw(0.45, 200)
    n = 200

    def step_se(a: list[int]) -> float:
        return (sum((x - sum(a) / n) ** 2 for x in a) / (n - 1)) ** 0.5 / n ** 0.5

    assert prompt_level_standard_error(easy_hard, [50] * 4) > 1.5 * step_se(easy_hard)
    assert 0.3 < prompt_level_standard_error(alike, [50] * 4) / step_se(alike) < 2.0  # 4 clusters: a rough estimate
    run = {"tau": 1 + sum(easy_hard) / n, "accepted_per_position": counters(easy_hard, 7), "num_drafts": n}
    res = compare_sampled(run, {"tau": 1 + sum(easy_hard) / n, "accepted_per_step": easy_hard,
                                "steps_per_prompt": [50] * 4})
    assert res["standard_error"] == "prompt-level" and res["design_factor"] > 1.5
    assert res["tau_se_vllm"] == res["tau_se_vllm_steps"] * res["design_factor"]
    with pytest.raises(ValueError, match="does not add up"):
        prompt_level_standard_error(easy_hard, [50] * 3)
