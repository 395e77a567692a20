"""Timing a target forward by row count (notebook 00): every row count timed, bad arguments named."""

import pytest
import torch

from peagle_nb.lab.benchmarks.verify_cost import forward_ms_by_rows
from tests.engine.helpers import tiny_target


def test_every_row_count_is_timed_reps_times():
    torch.manual_seed(0)
    target = tiny_target(dtype=torch.float32)
    got = forward_ms_by_rows(target, rows=(1, 3, 8), context=16, reps=3, warmup=1)
    assert sorted(got) == [1, 3, 8]
    for t, s in got.items():
        assert len(s["values"]) == 3 and all(v > 0 for v in s["values"])
        assert min(s["values"]) <= s["p10"] <= s["median"] <= s["p90"] <= max(s["values"])


@pytest.mark.parametrize("kw, message", [
    (dict(rows=()), "non-empty list of positive"),
    (dict(rows=(0, 2)), "non-empty list of positive"),
    (dict(reps=0), "reps must be >= 1"),
    (dict(context=600), "must fit the model's 512 positions"),
])
def test_bad_arguments_are_named(kw, message):
    with pytest.raises(ValueError, match=message):
        forward_ms_by_rows(tiny_target(dtype=torch.float32), **kw)
