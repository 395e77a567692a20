"""Speculation checked from vLLM's own statistics, offline: log lines and a /metrics payload recorded from a
real vLLM server (tests/sagemaker/data/, written by record_vllm_observability.py), read as the endpoint's
CloudWatch log group would hold them (moto Logs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from peagle_nb.sagemaker.observe import (SpeculationOff, cloudwatch_lines, log_group, parse_spec_decode_line,
                                         require_speculation, spec_decode_from_log)

DATA = Path(__file__).parent / "data"
RECORDING = json.loads((DATA / "recording.json").read_text())
K = RECORDING["k"]


def lines(name: str) -> list[str]:
    return (DATA / name).read_text(encoding="utf-8").splitlines()


def test_one_line_parsed_field_by_field():
    line = ("(APIServer pid=1) INFO 12-03 14:37:06 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: "
            "2.54, Accepted throughput: 12.26 tokens/s, Drafted throughput: 31.81 tokens/s, Accepted: 148 tokens, "
            "Drafted: 384 tokens, Per-position acceptance rate: 0.729, 0.417, 0.250, 0.146, Avg Draft acceptance "
            "rate: 38.5%")
    assert parse_spec_decode_line(line) == {"mean_acceptance_length": 2.54, "accepted": 148, "drafted": 384,
                                            "per_position": [0.729, 0.417, 0.25, 0.146]}
    assert parse_spec_decode_line("INFO [loggers.py:335] Engine 000: Avg prompt throughput: 4.8 tokens/s") is None
    with pytest.raises(ValueError, match="without 'drafted'"):
        parse_spec_decode_line("SpecDecoding metrics: Mean acceptance length: 2.54, Accepted: 148 tokens")


def test_recorded_log_lines_agree_with_the_recorded_counters():
    """Two independent outputs of the same server over the same requests: the periodic log lines summed by
    our parser, and vLLM's Prometheus counters."""
    from peagle_nb.serving.metrics import parse_spec_decode_metrics

    log = spec_decode_from_log(lines("vllm_cpu_peagle.log"), K)
    counters = parse_spec_decode_metrics((DATA / "vllm_cpu_peagle_metrics.txt").read_text())
    assert log["n_log_lines"] >= 2
    for key in ("num_drafts", "num_draft_tokens", "num_accepted_tokens", "accepted_per_position"):
        assert log[key] == counters[key], key
    assert log["tau"] == pytest.approx(counters["tau"]) and 1.0 < log["tau"] <= K + 1
    assert log["accept_rate_per_position"] == pytest.approx(counters["accept_rate_per_position"], abs=1e-3)
    assert require_speculation(log, "the recorded log") is log


def test_a_server_without_speculation_is_caught():
    plain = lines("vllm_cpu_none.log")
    assert plain and all("SpecDecoding" not in line for line in plain)  # it served: throughput lines only
    stats = spec_decode_from_log(plain, K)
    assert stats["num_drafts"] == 0 and stats["n_log_lines"] == 0
    with pytest.raises(SpeculationOff, match="no drafts in endpoint peagle-x .0 spec-decode log lines.: the "
                                             "endpoint answers, but speculative decoding is off"):
        require_speculation(stats, "endpoint peagle-x")


def test_a_k_that_does_not_match_the_server_is_an_error():
    with pytest.raises(ValueError, match="not a multiple of K=5"):
        spec_decode_from_log(lines("vllm_cpu_peagle.log"), 5)


def test_lines_are_read_from_the_endpoints_log_group(aws):
    """The container's output lands in /aws/sagemaker/Endpoints/<name>, one stream per instance."""
    name = "peagle-tiny-peagle-12031200abcd"
    logs = aws.client("logs")
    assert cloudwatch_lines(aws, name) == []  # no group yet: nothing logged, not an error
    logs.create_log_group(logGroupName=log_group(name))
    recorded = lines("vllm_cpu_peagle.log") + lines("vllm_cpu_none.log")
    stamped = [(1_796_300_000_000 + i, m) for i, m in enumerate(recorded)]  # one ms apart, in order
    for stream, chunk in (("AllTraffic/i-0aaa", stamped[:3]), ("AllTraffic/i-0bbb", stamped[3:])):
        logs.create_log_stream(logGroupName=log_group(name), logStreamName=stream)
        logs.put_log_events(logGroupName=log_group(name), logStreamName=stream,
                            logEvents=[{"timestamp": t, "message": m} for t, m in chunk])
    found = cloudwatch_lines(aws, name)
    assert found == [m for m in recorded if "SpecDecoding metrics:" in m]
    assert spec_decode_from_log(found, K) == spec_decode_from_log(lines("vllm_cpu_peagle.log"), K)
    second = next(t for t, m in stamped if m == found[1])
    assert cloudwatch_lines(aws, name, since_s=second / 1000) == found[1:]  # startTime filters by event time
