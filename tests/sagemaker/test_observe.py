"""Speculation checked from vLLM's own statistics, offline: log lines and a /metrics payload recorded from a
real vLLM server (tests/sagemaker/data/, written by record_vllm_observability.py), read as the endpoint's
CloudWatch log group would hold them (moto Logs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from peagle_nb.sagemaker.observe import (LogsUnreadable, SpeculationOff, SpeculationUnverified, cloudwatch_lines,
                                         log_group, parse_spec_decode_line, read_endpoint_speculation,
                                         require_speculation, spec_decode_from_log, verdict)

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


def test_a_k_that_does_not_match_the_server_is_named_but_speculation_is_still_on():
    stats = spec_decode_from_log(lines("vllm_cpu_peagle.log"), 5)
    assert stats["k_in_log"] == K and stats["verdict"] == "active"
    assert "drafts K=4 tokens per step, not the K=5 the plan asked for" in stats["k_mismatch"]


# A line vLLM printed for drafts trimmed by the scheduler (hand-checked): 7 drafts of K=4 whose tokens were cut
# to 4+4+3+2+2+1+1 = 17 (not a multiple of 4), accepting 2, 3, 1, 0, 2, 1, 0 tokens.
TRIMMED = ("(APIServer pid=7) INFO 12-04 03:10:11 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 2.29, "
           "Accepted throughput: 0.90 tokens/s, Drafted throughput: 1.70 tokens/s, Accepted: 9 tokens, Drafted: 17 "
           "tokens, Per-position acceptance rate: 0.714, 0.429, 0.143, 0.000, Avg Draft acceptance rate: 52.9%")


def test_trimmed_drafts_are_counted_exactly():
    stats = spec_decode_from_log([TRIMMED], K)
    assert stats["num_drafts"] == 7 and stats["drafts_exact"] and stats["num_drafts_range"] == [7, 7]
    assert stats["num_draft_tokens"] == 17 and stats["num_accepted_tokens"] == 9
    assert stats["accepted_per_position"] == [5, 3, 1, 0]
    assert stats["tau"] == pytest.approx(1 + 9 / 7) and stats["verdict"] == "active"


def test_nothing_accepted_still_proves_drafting():
    line = TRIMMED.replace("Mean acceptance length: 2.29", "Mean acceptance length: 1.00").replace(
        "Accepted: 9 tokens", "Accepted: 0 tokens").replace("0.714, 0.429, 0.143, 0.000", "0.000, 0.000, 0.000, 0.000")
    stats = spec_decode_from_log([line], K)
    assert stats["verdict"] == "active" and stats["tau"] == 1.0
    assert stats["num_drafts_range"] == [5, 17] and not stats["drafts_exact"]  # 17 tokens: 5 to 17 drafts
    assert stats["accepted_per_position"] == [0, 0, 0, 0]


def _vllm_lines(rng, k, intervals, drafts_per_interval):
    """Lines written by vLLM's own SpecDecodingLogging for random drafts trimmed below K, with the truth."""
    metrics = pytest.importorskip("vllm.v1.spec_decode.metrics")
    logger, out = metrics.SpecDecodingLogging(), []
    truth = {"drafts": 0, "drafted": 0, "accepted": 0, "per_position": [0] * k}
    for _ in range(intervals):
        step = metrics.SpecDecodingStats.new(k)
        for _ in range(rng.randint(1, drafts_per_interval)):
            tokens = rng.choice([k, k, k, rng.randint(1, k)])  # most drafts whole, some trimmed
            accepted = min(tokens, rng.choice([0, 1, 2, k, rng.randint(0, k)]))
            step.observe_draft(tokens, accepted)
            truth["drafts"] += 1
            truth["drafted"] += tokens
            truth["accepted"] += accepted
            for i in range(accepted):
                truth["per_position"][i] += 1
        logger.observe(step)
        logger.log(log_fn=lambda fmt, *args: out.append("(APIServer pid=1) INFO [metrics.py:120] " + fmt % args))
    return out, truth


@pytest.mark.parametrize("k, drafts_per_interval", [(3, 40), (4, 300), (7, 3000)])
def test_real_vllm_lines_with_trimmed_drafts(k, drafts_per_interval):
    """vLLM's own logger formats the lines: token totals are exact, drafts exact where the printed rates
    allow only one count, and the true count always inside the range given."""
    import random

    rng = random.Random(k)
    exact_seen = 0
    for _ in range(5):
        out, truth = _vllm_lines(rng, k, intervals=4, drafts_per_interval=drafts_per_interval)
        assert truth["drafted"] < k * truth["drafts"]  # some drafts were trimmed below K tokens
        stats = spec_decode_from_log(out, k)
        assert stats["n_log_lines"] == 4 and stats["k_in_log"] == k and "k_mismatch" not in stats
        assert stats["num_draft_tokens"] == truth["drafted"] and stats["num_accepted_tokens"] == truth["accepted"]
        low, high = stats["num_drafts_range"]
        assert low <= truth["drafts"] <= high and stats["verdict"] == "active"
        if stats["drafts_exact"]:
            exact_seen += 1
            assert stats["num_drafts"] == truth["drafts"]
            assert stats["accepted_per_position"] == truth["per_position"]
        assert stats["tau"] == pytest.approx(1 + truth["accepted"] / truth["drafts"], abs=0.01)
    if drafts_per_interval <= 300:
        assert exact_seen == 5  # up to hundreds of drafts per 10 s, the three-decimal rates pin the count


class _DeniedSession:
    """A session whose logs client answers FilterLogEvents with the error AWS sends without the permission."""

    def __init__(self, code="AccessDeniedException"):
        self.code = code

    def client(self, service, region_name=None):
        import boto3
        from botocore.stub import Stubber

        client = boto3.client(service, region_name=region_name or "us-east-1", aws_access_key_id="x",
                              aws_secret_access_key="x")
        stub = Stubber(client)
        stub.add_client_error("filter_log_events", service_error_code=self.code, http_status_code=400,
                              service_message="User: arn:aws:sts::123456789012:assumed-role/R/s is not authorized "
                                              "to perform: logs:FilterLogEvents")
        stub.activate()
        return client


def test_access_denied_is_a_verdict_naming_the_permission():
    pytest.importorskip("boto3")
    stats = read_endpoint_speculation(_DeniedSession(), "peagle-x", k=K, region="us-east-1")
    assert stats["verdict"] == "unreadable" and stats["num_drafts"] == 0 and stats["n_log_lines"] is None
    assert "AccessDeniedException on logs:FilterLogEvents for /aws/sagemaker/Endpoints/peagle-x" in \
        stats["verdict_reason"]
    with pytest.raises(SpeculationUnverified, match="cannot read the logs: AccessDeniedException on "
                                                    "logs:FilterLogEvents.*neither confirmed nor ruled out"):
        require_speculation(stats, "CloudWatch")


def test_other_log_errors_are_not_hidden():
    pytest.importorskip("boto3")
    with pytest.raises(Exception, match="ThrottlingException"):
        read_endpoint_speculation(_DeniedSession("ThrottlingException"), "peagle-x", k=K, region="us-east-1")


def test_every_record_has_a_verdict(aws):
    name = "peagle-none-12031200abcd"
    missing = read_endpoint_speculation(aws, name, k=K)
    assert missing["verdict"] == "unreadable" and f"log group {log_group(name)} does not exist" in \
        missing["verdict_reason"]
    logs = aws.client("logs")
    logs.create_log_group(logGroupName=log_group(name))
    logs.create_log_stream(logGroupName=log_group(name), logStreamName="AllTraffic/i-0aaa")
    logs.put_log_events(logGroupName=log_group(name), logStreamName="AllTraffic/i-0aaa",
                        logEvents=[{"timestamp": 1_796_300_000_000 + i, "message": m}
                                   for i, m in enumerate(lines("vllm_cpu_none.log"))])
    plain = read_endpoint_speculation(aws, name, k=K)
    assert plain["verdict"] == "inactive" and plain["n_log_lines"] == 0
    assert verdict(plain)[0] == "inactive"


def test_lines_are_read_from_the_endpoints_log_group(aws):
    """The container's output lands in /aws/sagemaker/Endpoints/<name>, one stream per instance."""
    name = "peagle-tiny-peagle-12031200abcd"
    logs = aws.client("logs")
    with pytest.raises(LogsUnreadable, match="does not exist"):  # no group yet: the container has not logged
        cloudwatch_lines(aws, name)
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
