"""Is speculative decoding really on behind an endpoint? vLLM's own statistics, read where SageMaker AI
puts them. Explained in notebook 06.

An endpoint can answer every request correctly with speculation silently off (a head the container could
not attach, a speculative config that never reached vLLM): the text is the same, only slower. The only
proof is the engine's own count of drafts. vLLM logs one line per stats interval
(``VLLM_LOG_STATS_INTERVAL``, 10 s) while it decodes with a drafter::

    SpecDecoding metrics: Mean acceptance length: 2.50, Accepted throughput: 1.20 tokens/s, Drafted
    throughput: 3.20 tokens/s, Accepted: 30 tokens, Drafted: 80 tokens, Per-position acceptance rate:
    0.700, 0.500, 0.300, 0.000, Avg Draft acceptance rate: 37.5%

SageMaker copies the container's output to CloudWatch Logs (log group ``/aws/sagemaker/Endpoints/<name>``),
so :func:`cloudwatch_lines` reads those lines and :func:`spec_decode_from_log` sums them into the same
record as ``peagle_nb.serving.metrics`` makes from ``/metrics`` (drafts, drafted and accepted tokens, tau,
per-position acceptance); :func:`require_speculation` fails when no draft was made. Each line gives
``Drafted`` tokens, and every draft has K tokens, so drafts = Drafted / K exactly. The local emulation's
server log holds the same lines. Endpoint configs created now also publish the container's ``/metrics``
to CloudWatch (``MetricsConfig.EnableDetailedObservability``, on by default for new configs): that
exposition is what ``peagle_nb.serving.metrics.parse_spec_decode_metrics`` reads.
"""

from __future__ import annotations

import re
from typing import Iterable

from peagle_nb.serving.metrics import summarize

SPEC_LINE_MARKER = "SpecDecoding metrics:"
_NUMBER = r"([0-9]+(?:\.[0-9]+)?)"
_FIELDS = {
    "mean_acceptance_length": re.compile(r"Mean acceptance length: " + _NUMBER),
    "accepted": re.compile(r"Accepted: ([0-9]+) tokens"),
    "drafted": re.compile(r"Drafted: ([0-9]+) tokens"),
}
_PER_POSITION = re.compile(r"Per-position acceptance rate: ([0-9.]+(?:, [0-9.]+)*)")


class SpeculationOff(RuntimeError):
    """The engine made no drafts: the endpoint serves, but without speculative decoding."""


def log_group(endpoint_name: str) -> str:
    return f"/aws/sagemaker/Endpoints/{endpoint_name}"


def parse_spec_decode_line(line: str) -> dict | None:
    """The numbers of one ``SpecDecoding metrics:`` line, or None for any other line."""
    if SPEC_LINE_MARKER not in line:
        return None
    text = line[line.index(SPEC_LINE_MARKER):]
    out = {}
    for name, pattern in _FIELDS.items():
        found = pattern.search(text)
        if found is None:
            raise ValueError(f"a spec-decode log line without '{name}': {line.strip()[:200]!r}")
        out[name] = float(found.group(1))
    found = _PER_POSITION.search(text)
    out["per_position"] = [float(x) for x in found.group(1).split(", ")] if found else []
    return out


def spec_decode_from_log(lines: Iterable[str], k: int) -> dict:
    """Sum the spec-decode lines among ``lines`` (vLLM with ``num_speculative_tokens=k``).

    Returns the record of ``peagle_nb.serving.metrics.summarize`` plus ``n_log_lines``; per-position
    counts are rebuilt from the printed rates (three decimals), the totals are exact.
    """
    if k < 1:
        raise ValueError(f"k={k}: the number of speculative tokens must be >= 1")
    drafts = drafted = accepted = 0
    per_pos = [0.0] * k
    n = 0
    for line in lines:
        rec = parse_spec_decode_line(line)
        if rec is None:
            continue
        n += 1
        d_tokens = int(rec["drafted"])
        if d_tokens % k:
            raise ValueError(f"a line reports {d_tokens} drafted tokens, not a multiple of K={k}: the server runs "
                             f"another num_speculative_tokens ({line.strip()[:160]!r})")
        line_drafts = d_tokens // k
        drafts += line_drafts
        drafted += d_tokens
        accepted += int(rec["accepted"])
        for i, rate in enumerate(rec["per_position"][:k]):
            per_pos[i] += rate * line_drafts
    out = summarize(drafts, drafted, accepted, [round(x) for x in per_pos])
    if drafts:
        out["accept_rate_per_position"] = [x / drafts for x in per_pos]
    out["n_log_lines"] = n
    return out


def require_speculation(stats: dict, where: str) -> dict:
    """``stats`` unchanged when the engine drafted; :class:`SpeculationOff` naming ``where`` otherwise."""
    if not stats.get("num_drafts"):
        lines = stats.get("n_log_lines")
        seen = "" if lines is None else f" ({lines} spec-decode log lines)"
        raise SpeculationOff(
            f"no drafts in {where}{seen}: the endpoint answers, but speculative decoding is off. Check that "
            "SM_VLLM_SPECULATIVE_CONFIG reached vLLM (the container log's 'vLLM server arguments' / "
            "'speculative_config' lines) and that the head's channel is mounted where its \"model\" points.")
    return stats


def cloudwatch_lines(session, endpoint_name: str, *, since_s: float | None = None, region: str | None = None,
                     marker: str = SPEC_LINE_MARKER) -> list[str]:
    """Messages containing ``marker`` in the endpoint's container log group since ``since_s`` (epoch
    seconds), oldest first; [] when the group does not exist yet (the container has not logged)."""
    logs = session.client("logs", region_name=region)
    kwargs = {"logGroupName": log_group(endpoint_name), "filterPattern": f'"{marker}"'}
    if since_s is not None:
        kwargs["startTime"] = int(since_s * 1000)
    events = []
    try:
        for page in logs.get_paginator("filter_log_events").paginate(**kwargs):
            events += page.get("events", [])
    except Exception as exc:
        code = ((getattr(exc, "response", None) or {}).get("Error") or {}).get("Code", "")
        if code != "ResourceNotFoundException":
            raise
    events.sort(key=lambda e: (e.get("timestamp", 0), e.get("ingestionTime", 0)))
    return [e["message"] for e in events if marker in e.get("message", "")]
