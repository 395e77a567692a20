"""Choosing the thread count from a timed probe (notebooks 00 and 01)."""

import os

import pytest
import torch

from peagle_nb.machine.cpu_threads import fastest_threads, thread_cap
from tests.engine.helpers import tiny_target


@pytest.fixture
def keep_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_the_fastest_candidate_is_set_and_reported(keep_threads):
    target = tiny_target(dtype=torch.float32)
    got = fastest_threads(target, candidates=(1, 2), rounds=2)
    usable = [c for c in (1, 2) if c <= thread_cap()]
    assert sorted(got["probe_ms"]) == usable and all(v > 0 for v in got["probe_ms"].values())
    assert got["threads"] == min(got["probe_ms"], key=got["probe_ms"].get) == torch.get_num_threads()
    # thread counts this machine does not have are not tried
    only = fastest_threads(target, candidates=(1, 10**6), rounds=1)
    assert list(only["probe_ms"]) == [1] and only["threads"] == 1
    with pytest.raises(ValueError, match="rounds must be >= 1"):
        fastest_threads(target, rounds=0)
    with pytest.raises(ValueError, match="exceed the model's 512 positions"):
        fastest_threads(target, rows=(1, 600))


@pytest.mark.parametrize(("omp", "cap"), [(None, None), ("1", 1), ("1,1", 1), ("64", None), ("", None), ("x", None)])
def test_omp_num_threads_caps_the_candidates(keep_threads, monkeypatch, omp, cap):
    """A user's OMP_NUM_THREADS (or the parallel test run's) is never exceeded; without it, the CPU count caps."""
    if omp is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", omp)
    assert thread_cap() == (cap or os.cpu_count())
    got = fastest_threads(tiny_target(dtype=torch.float32), candidates=(1, 2), rounds=1)
    assert sorted(got["probe_ms"]) == [c for c in (1, 2) if c <= thread_cap()]
