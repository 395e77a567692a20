"""The benchmark client's bookkeeping (TTFT, TPOT, throughput, acceptance deltas, failures) over a
scripted in-memory backend with known timings; the real OpenAI backend against real vLLM is tested in
tests/serving/test_server.py."""

from __future__ import annotations

import asyncio
import json

import pytest

from peagle_nb import results
from peagle_nb.bench.client import Backend, UsageChunk, run_benchmark
from peagle_nb.prompts import load_prompts


class VirtualClock:
    """Stands in for ``time.perf_counter`` in the client: the scripted backend advances it instead of sleeping,
    so the timings the client derives are exact and the test never depends on how busy the machine is."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


class ScriptedBackend:
    """Emits one token every `step_s` after a first-token delay (on `clock` when given, else real sleeps); keeps
    server-like spec counters and the largest number of streams it had open at once."""

    def __init__(self, first_s=0.02, step_s=0.005, k=3, accepted_per_step=2, fail_on=None, clock=None):
        self.first_s, self.step_s, self.k, self.acc, self.fail_on = first_s, step_s, k, accepted_per_step, fail_on
        self.clock, self.open_streams, self.max_open_streams = clock, 0, 0
        self.counters = {"num_drafts": 0, "num_draft_tokens": 0, "num_accepted_tokens": 0,
                         "accepted_per_position": [0] * k, "generation_tokens": 0}

    async def _wait(self, seconds):
        if self.clock is None:
            await asyncio.sleep(seconds)
        else:
            self.clock.now += seconds
            await asyncio.sleep(0)  # let the other streams run, as a real wait would

    async def stream(self, prompt, max_tokens, temperature):
        if prompt == self.fail_on:
            raise ConnectionError("endpoint closed the stream")
        self.open_streams += 1
        self.max_open_streams = max(self.max_open_streams, self.open_streams)
        try:
            await self._wait(self.first_s)
            for i in range(max_tokens):
                if i:
                    await self._wait(self.step_s)
                yield f"t{i} "
        finally:
            self.open_streams -= 1
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


@pytest.fixture
def clock(monkeypatch):
    from peagle_nb.bench import client

    virtual = VirtualClock()
    monkeypatch.setattr(client, "time", virtual)
    return virtual


def test_levels_timings_and_acceptance(clock):
    be = ScriptedBackend(clock=clock)
    assert isinstance(be, Backend)
    doc = run_benchmark(be, ["a", "b", "c", "d"], concurrency=[1], max_tokens=9, method="peagle", k=3,
                        source="endpoint", warmup_requests=0)
    results.validate(doc)
    one = doc["runs"][0]
    assert one["n_requests"] == 4 and one["output_tokens"] == 36
    # one request: 20 ms to the first token, then 8 tokens 5 ms apart; four of them one after another
    assert one["ttft_ms"] == pytest.approx(20) and one["ttft_ms_p90"] == pytest.approx(20)
    assert one["tpot_ms"] == pytest.approx(5) and one["tpot_ms_p50"] == pytest.approx(5)
    assert one["wall_s"] == pytest.approx(4 * 0.060) and one["tokens_per_s"] == pytest.approx(36 / 0.240)
    assert one["request_throughput"] == pytest.approx(4 / 0.240)
    # acceptance over each run only: 9 tokens/request -> 3 steps of (2 accepted + bonus)
    assert one["num_drafts"] == 12 and one["tau"] == pytest.approx(3.0)
    assert one["accept_rate_per_position"] == [1.0, 1.0, 0.0]


def test_concurrency_keeps_that_many_requests_in_flight(clock):
    be = ScriptedBackend(clock=clock)
    doc = run_benchmark(be, ["a", "b", "c", "d", "e"], concurrency=[1, 4], max_tokens=6, warmup_requests=0)
    assert [r["concurrency"] for r in doc["runs"]] == [1, 4]
    assert all(r["n_requests"] == 5 and r["output_tokens"] == 30 for r in doc["runs"])
    assert be.max_open_streams == 4  # level 4 opened four streams at once, never more


def test_failed_requests_are_counted_not_fatal():
    doc = run_benchmark(ScriptedBackend(fail_on="bad"), ["ok", "bad"], concurrency=[2], max_tokens=4,
                        warmup_requests=0)
    run = doc["runs"][0]
    assert run["n_failed"] == 1 and "ConnectionError" in run["errors"][0] and run["output_tokens"] == 4


def test_runs_inside_a_running_event_loop():  # as in Jupyter
    async def inside():
        return run_benchmark(ScriptedBackend(), ["x"], concurrency=[1], max_tokens=3, warmup_requests=0)

    assert asyncio.run(inside())["runs"][0]["output_tokens"] == 3


def test_bad_inputs(tmp_path):
    with pytest.raises(ValueError, match="no prompts"):
        run_benchmark(ScriptedBackend(), [], concurrency=[1])
    with pytest.raises(ValueError, match=">= 1"):
        run_benchmark(ScriptedBackend(), ["a"], concurrency=[0])
    with pytest.raises(FileNotFoundError, match="Fix"):
        load_prompts(tmp_path / "missing.jsonl")
    bad = tmp_path / "p.jsonl"
    bad.write_text('{"text": "x"}\n')
    with pytest.raises(ValueError, match="p.jsonl:1: .*'prompt'"):
        load_prompts(bad)
