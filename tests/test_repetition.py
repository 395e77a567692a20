"""Repetition fraction and fresh-vs-repeated acceptance, on sequences worked out by hand."""

from __future__ import annotations

import math

import pytest

from peagle_nb.engine.stats import StepStats
from peagle_nb.analysis.repetition import (
    acceptance,
    aggregate_seeds,
    classify_steps,
    drafting_report,
    repeated_mask,
    repetition_fraction,
    spread,
    step_starts,
)


def steps(*triples):
    return [StepStats(k, a, n, 0.0, 0.0) for k, a, n in triples]


def test_no_repeat_no_mark():
    assert repeated_mask([1, 2, 3], list(range(10, 30))) == [False] * 20
    assert repetition_fraction([], []) == 0.0


def test_a_loop_is_marked_from_its_first_copy_on():
    body = [10, 11, 12, 13]
    gen = body * 4  # 16 tokens; the first occurrence (4 tokens) is not a copy
    mask = repeated_mask([], gen, n=4)
    assert mask == [False] * 4 + [True] * 12
    assert repetition_fraction([], gen, n=4) == 12 / 16
    # n = 8: the first 8-gram that occurs earlier starts at index 4 (overlapping occurrence at 0)
    assert repeated_mask([], gen, n=8) == [False] * 4 + [True] * 12


def test_an_earlier_occurrence_in_the_prompt_counts():
    prompt = list(range(100, 108))  # 8 tokens
    gen = [1, 2] + prompt + [3]
    assert repeated_mask(prompt, gen, n=8) == [False, False] + [True] * 8 + [False]
    assert repeated_mask(prompt, gen, n=9) == [False] * 11  # a 9-gram copy needs 9 equal tokens


def test_a_repeat_shorter_than_n_is_not_marked():
    gen = [1, 2, 3, 4, 5, 6, 7, 9, 1, 2, 3, 4, 5, 6, 7, 8]  # a 7-token copy only
    assert not any(repeated_mask([], gen, n=8))
    assert sum(repeated_mask([], gen, n=7)) == 7
    with pytest.raises(ValueError, match="n-gram length"):
        repeated_mask([], gen, n=0)


def test_steps_start_after_the_prefill_token_and_are_clipped():
    st = steps((3, 2, 3), (3, 0, 1), (3, 3, 4), (3, 3, 4))
    assert step_starts(st, 20) == [1, 4, 5, 9]
    assert step_starts(st, 9) == [1, 4, 5]  # the 4th step would start past the end (truncation)
    assert step_starts(st, 20, first_index=0) == [0, 3, 4, 8]
    # dicts work as well as StepStats
    assert step_starts([{"num_drafts": 3, "accepted": 1, "new_tokens": 2}], 5) == [1]


def test_fresh_and_repeated_steps_and_their_acceptance():
    body = list(range(10, 18))  # 8 tokens
    gen = body + body + [1, 2, 3]  # 19 tokens: indices 8..15 are a copy
    # prefill gives gen[0]; steps then append 3, 4, 4, 4, 3 tokens -> starts 1, 4, 8, 12, 16
    st = steps((3, 2, 3), (3, 3, 4), (3, 3, 4), (3, 3, 4), (3, 2, 3))
    assert classify_steps([], gen, st) == ["fresh", "fresh", "repeated", "repeated", "fresh"]
    rep = drafting_report([([], gen, st)])
    assert rep["tokens"] == 19 and rep["repeated_tokens"] == 8
    assert rep["repetition_fraction"] == pytest.approx(8 / 19)
    assert rep["repeated_step_fraction"] == pytest.approx(2 / 5)
    assert rep["k"] == 3
    assert rep["all"]["tau"] == pytest.approx(1 + 13 / 5)
    assert rep["fresh"] == {"steps": 3, "tau": pytest.approx(1 + 7 / 3),
                            "accept_rate_per_position": [1.0, 1.0, pytest.approx(1 / 3)]}
    assert rep["repeated"] == {"steps": 2, "tau": 4.0, "accept_rate_per_position": [1.0, 1.0, 1.0]}


def test_pooling_two_generations_pools_steps():
    # a constant run: the 8-grams starting at 1..4 copy the one at 0 (overlapping), so tokens 1..11 are marked
    a = ([], [5] * 12, steps((2, 2, 3), (2, 2, 3), (2, 2, 3)))
    b = ([], list(range(12)), steps((2, 0, 1), (2, 1, 2)))
    rep = drafting_report([a, b])
    assert rep["tokens"] == 24 and rep["repeated_tokens"] == 11
    assert rep["all"]["steps"] == 5 and rep["repeated"]["steps"] == 3 and rep["fresh"]["steps"] == 2
    assert rep["repeated"]["tau"] == 3.0 and rep["fresh"]["tau"] == pytest.approx(1.5)


def test_acceptance_of_no_steps_is_nan_not_zero():
    res = acceptance([], 3)
    assert res["steps"] == 0 and math.isnan(res["tau"]) and len(res["accept_rate_per_position"]) == 3


def test_spread_quantiles_match_numpy_linear():
    s = spread([4.0, 1.0, 3.0, 2.0, float("nan")])
    assert s["n"] == 4 and s["mean"] == 2.5 and s["min"] == 1.0 and s["max"] == 4.0
    assert s["median"] == 2.5 and s["p10"] == pytest.approx(1.3) and s["p90"] == pytest.approx(3.7)
    assert spread([])["n"] == 0


def test_aggregate_seeds_spreads_every_number():
    body = list(range(10, 18))
    r1 = drafting_report([([], body + body, steps((2, 2, 3), (2, 2, 3), (2, 2, 3), (2, 1, 2)))])  # starts 1, 4, 7, 10
    assert r1["repeated"]["steps"] == 1
    r2 = drafting_report([([], list(range(16)), steps((2, 0, 1), (2, 2, 3)))])
    agg = aggregate_seeds([r1, r2])
    assert agg["seeds"] == 2
    assert agg["repetition_fraction"]["values"] == [r1["repetition_fraction"], r2["repetition_fraction"]]
    assert agg["all"]["tau"]["mean"] == pytest.approx((r1["all"]["tau"] + r2["all"]["tau"]) / 2)
    assert [p["max"] for p in agg["all"]["accept_rate_per_position"]] == [
        max(x, y) for x, y in zip(r1["all"]["accept_rate_per_position"], r2["all"]["accept_rate_per_position"])]
    # a class with no steps in one seed (NaN) is left out of that class's spread
    assert agg["repeated"]["tau"]["n"] == 1
    with pytest.raises(ValueError, match="no reports"):
        aggregate_seeds([])
