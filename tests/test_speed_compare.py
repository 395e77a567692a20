"""Configurations timed side by side (notebook 01): one record each, paired with plain decoding round by round."""

import pytest
import torch

from peagle_nb.lab.benchmarks.speed_compare import compare
from tests.engine.helpers import tiny_target
from tests.engine.test_lean_engine import random_head


@pytest.fixture(scope="module")
def setup():
    target = tiny_target(dtype=torch.float32, seed=3)
    heads = {"eagle3": random_head(target, "eagle3", 1), "peagle": random_head(target, "peagle", 2, seed=1)}
    prompts = [[1, 5, 9, 2], [7, 3, 3, 8, 1]]
    return target, heads, prompts


def test_each_configuration_is_paired_with_plain_decoding(setup):
    target, heads, prompts = setup
    configs = [("none", 0), ("eagle3", 2), ("peagle", 3)]
    recs = compare(target, None, heads, configs, prompts, 12, repeats=2)
    assert [(r["method"], r["k"]) for r in recs] == configs
    plain = recs[0]
    assert plain["speedup"]["repeats"] == [1.0, 1.0] and plain["step_over_plain"] == 1.0
    assert plain["draft_ms_per_step"] == 0.0 and plain["draft_share"] == 0.0
    for r in recs:
        assert r["repeats"] == 2 and len(r["tokens_per_s_repeats"]) == 2
        assert r["speedup"]["repeats"] == pytest.approx(
            [a / b for a, b in zip(r["tokens_per_s_repeats"], plain["tokens_per_s_repeats"])])
        assert r["step_over_plain"] == pytest.approx(r["step_ms"] / plain["step_ms"])
        assert r["verify_over_plain"] == pytest.approx(r["verify_ms_per_step"] / plain["step_ms"])
        assert r["lossless"] is True  # same tokens as plain greedy decoding (the reference engine's)
    # the step is made of its phases: bookkeeping is the wall time the draft and verify clocks did not see
    for r in recs[1:]:
        parts = r["draft_ms_per_step"] + r["verify_ms_per_step"] + r["bookkeeping_ms_per_step"]
        assert parts == pytest.approx(r["step_ms"], rel=0.02)
        assert 1.0 <= r["tau"] <= r["k"] + 1


@pytest.mark.parametrize("configs, kw, message", [
    ([("peagle", 3)], {}, "must include plain decoding"),
    ([("none", 0), ("medusa", 2)], {}, "no head given for \\['medusa'\\]"),
    ([("none", 0)], {"repeats": 0}, "repeats must be >= 1"),
])
def test_bad_configurations_are_named(setup, configs, kw, message):
    target, heads, prompts = setup
    with pytest.raises(ValueError, match=message):
        compare(target, None, heads, configs, prompts, 8, **kw)
