"""The benchmark client's bookkeeping (TTFT, TPOT, throughput, acceptance deltas, failures) over a
scripted in-memory backend on a fake clock, so the expected times are exact and nothing here depends on how
fast this machine is; the real OpenAI backend against real vLLM is tested in tests/serving/test_server.py."""

from __future__ import annotations

import asyncio
import json

import pytest

from peagle_nb.files import results
from peagle_nb.bench.client import Backend, UsageChunk, run_benchmark
from peagle_nb.text.prompts import load_prompts


class FakeClock:
    """``time.perf_counter`` for the client: advanced only by the scripted backend."""

    def __init__(self):
        self.now = 1000.0

    def perf_counter(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    from peagle_nb.bench import client

    fake = FakeClock()
    monkeypatch.setattr(client, "time", fake)
    return fake


class ScriptedBackend:
    """Emits one token every `step_s` (of the fake clock) after a first-token delay; counts requests in
    flight; keeps server-like spec counters."""

    def __init__(self, clock, first_s=0.02, step_s=0.005, k=3, accepted_per_step=2, fail_on=None):
        self.clock = clock
        self.first_s, self.step_s, self.k, self.acc, self.fail_on = first_s, step_s, k, accepted_per_step, fail_on
        self.in_flight = self.max_in_flight = 0
        self.counters = {"num_drafts": 0, "num_draft_tokens": 0, "num_accepted_tokens": 0,
                         "accepted_per_position": [0] * k, "generation_tokens": 0}

    async def stream(self, prompt, max_tokens, temperature):
        if prompt == self.fail_on:
            raise ConnectionError("endpoint closed the stream")
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self.clock.now += self.first_s
        await asyncio.sleep(0)  # let the other requests in flight run
        for i in range(max_tokens):
            if i:
                self.clock.now += self.step_s
                await asyncio.sleep(0)
            yield f"t{i} "
        self.in_flight -= 1
        steps = max_tokens // (self.acc + 1)
        c = self.counters
        c["num_drafts"] += steps
        c["num_draft_tokens"] += steps * self.k
        c["num_accepted_tokens"] += steps * self.acc
        for p in range(self.acc):
            c["accepted_per_position"][p] += steps
        yield UsageChunk(max_tokens)

    def spec_metrics(self):
        return json.loads(json.dumps(self.counters))


def test_levels_timings_and_acceptance(clock):
    be = ScriptedBackend(clock)
    assert isinstance(be, Backend)
    doc = run_benchmark(be, ["a", "b", "c", "d"], concurrency=[1, 4], max_tokens=9, method="peagle", k=3,
                        source="endpoint", warmup_requests=0)
    results.validate(doc)
    one, four = doc["runs"]
    assert one["n_requests"] == four["n_requests"] == 4 and one["output_tokens"] == four["output_tokens"] == 36
    # One request at a time: every request takes 20 ms to its first token, then 5 ms per token.
    assert one["ttft_ms"] == pytest.approx(20) and one["tpot_ms"] == pytest.approx(5)
    assert one["wall_s"] == pytest.approx(4 * (0.020 + 8 * 0.005))
    assert one["tokens_per_s"] == pytest.approx(36 / one["wall_s"])
    assert be.max_in_flight == 4  # the second level really had 4 requests in flight
    # acceptance over each run only: 9 tokens/request -> 3 steps of (2 accepted + bonus)
    assert one["num_drafts"] == 12 and one["tau"] == pytest.approx(3.0)
    assert one["accept_rate_per_position"] == [1.0, 1.0, 0.0]


def test_failed_requests_are_counted_not_fatal(clock):
    doc = run_benchmark(ScriptedBackend(clock, fail_on="bad"), ["ok", "bad"], concurrency=[2], max_tokens=4,
                        warmup_requests=0)
    run = doc["runs"][0]
    assert run["n_failed"] == 1 and "ConnectionError" in run["errors"][0] and run["output_tokens"] == 4


def test_runs_inside_a_running_event_loop(clock):  # as in Jupyter
    async def inside():
        return run_benchmark(ScriptedBackend(clock), ["x"], concurrency=[1], max_tokens=3, warmup_requests=0)

    assert asyncio.run(inside())["runs"][0]["output_tokens"] == 3


def test_bad_inputs(tmp_path, clock):
    with pytest.raises(ValueError, match="no prompts"):
        run_benchmark(ScriptedBackend(clock), [], concurrency=[1])
    with pytest.raises(ValueError, match=">= 1"):
        run_benchmark(ScriptedBackend(clock), ["a"], concurrency=[0])
    with pytest.raises(FileNotFoundError, match="Fix"):
        load_prompts(tmp_path / "missing.jsonl")
    bad = tmp_path / "p.jsonl"
    bad.write_text('{"text": "x"}\n')
    with pytest.raises(ValueError, match="p.jsonl:1: .*'prompt'"):
        load_prompts(bad)
