"""Is speculative decoding really on behind an endpoint? vLLM's own statistics, read where SageMaker AI
puts them. Explained in notebook 06.

An endpoint can answer every request correctly with speculation silently off (a head the container could
not attach, a speculative config that never reached vLLM): the text is the same, only slower. The only
proof is the engine's own count of drafts. vLLM logs one line per stats interval
(``VLLM_LOG_STATS_INTERVAL``, 10 s) while it decodes with a drafter::

    SpecDecoding metrics: Mean acceptance length: 2.50, Accepted throughput: 1.20 tokens/s, Drafted
    throughput: 3.20 tokens/s, Accepted: 30 tokens, Drafted: 80 tokens, Per-position acceptance rate:
    0.700, 0.500, 0.300, 0.000, Avg Draft acceptance rate: 37.5%

The line prints exact token totals (``Accepted``, ``Drafted``) but not the number of drafts, and a draft
is not always K tokens: vLLM's scheduler trims drafts to the step's token budget and to the model's maximum
length, and leaves out invalid draft tokens, so ``Drafted`` need not be a multiple of K. What the line does
fix is ``Mean acceptance length = 1 + Accepted / drafts`` (two decimals) and each per-position rate
``accepted at position i / drafts`` (three decimals, K of them, so K is read from the line). Per line,
:func:`drafts_in_line` finds every draft count consistent with all of that (integer per-position counts that
sum to ``Accepted`` and never grow with the position; at least ``Drafted / K`` drafts): one candidate gives
exact drafts and per-position counts; several give a range and the estimate nearest the printed mean
(``exact`` is False); with nothing accepted, ``tau`` is exactly 1 whatever the draft count.

SageMaker copies the container's output to CloudWatch Logs (log group ``/aws/sagemaker/Endpoints/<name>``);
:func:`read_endpoint_speculation` reads those lines and ALWAYS returns a record with a verdict (:func:`verdict`):
``active`` (drafts counted), ``inactive`` (the log was read and holds no draft) or ``unreadable`` (the log
could not be read: the missing IAM permission, e.g. ``logs:FilterLogEvents``, or a log group that does not
exist yet, is named). :func:`require_speculation` turns ``inactive`` into :class:`SpeculationOff` and
``unreadable`` into :class:`SpeculationUnverified`. The local emulation's server log holds the same lines,
and vLLM's ``/metrics`` counters (``peagle_nb.serving.metrics``) count the same drafts exactly.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
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
# Half a unit of the last printed digit (vLLM prints %.2f and %.3f), plus room for float rounding.
_MEAN_TOLERANCE = 0.005 + 1e-9
_RATE_TOLERANCE = 0.0005 + 1e-9
_MAX_CANDIDATES_SCANNED = 1_000_000
VERDICTS = ("active", "inactive", "unreadable")


class SpeculationOff(RuntimeError):
    """The engine made no drafts: the endpoint serves, but without speculative decoding."""


class SpeculationUnverified(RuntimeError):
    """The container log could not be read, so whether speculation is on is not known."""


class LogsUnreadable(RuntimeError):
    """CloudWatch Logs refused or could not serve the endpoint's log group; ``reason`` says why."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


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


@dataclass(frozen=True)
class LineDrafts:
    """The drafts one log line accounts for: ``estimate`` within ``[low, high]``; ``per_position`` accepted
    counts; ``exact`` when only one draft count fits the line."""

    estimate: int
    low: int
    high: int
    per_position: tuple[int, ...]
    exact: bool


def _per_position_counts(rates: list[float], drafts: int, accepted: int) -> tuple[int, ...] | None:
    """Accepted counts per position consistent with the printed ``rates`` over ``drafts`` drafts, summing to
    ``accepted`` and never growing with the position (a token is accepted only after all before it): the
    counts when exactly one choice fits, (-1, ...) when several do, None when none does."""
    low, high = [], []
    for rate in rates:  # each count lies where count / drafts prints as the rate
        low.append(max(0, math.ceil((rate - _RATE_TOLERANCE) * drafts)))
        high.append(min(drafts, math.floor((rate + _RATE_TOLERANCE) * drafts)))
    for i in range(1, len(rates)):  # never growing: a position holds at most what the one before can
        high[i] = min(high[i], high[i - 1])
    for i in range(len(rates) - 2, -1, -1):  # ... and at least what the one after needs
        low[i] = max(low[i], low[i + 1])
    if any(lo > hi for lo, hi in zip(low, high)) or not sum(low) <= accepted <= sum(high):
        return None
    if low == high:
        return tuple(low)
    if sum(low) == accepted:
        return tuple(low)
    if sum(high) == accepted:
        return tuple(high)
    return (-1,) * len(rates)


def drafts_in_line(rec: dict) -> LineDrafts:
    """Every draft count consistent with one parsed line (see the module doc); never raises for a line
    vLLM could print. K is the number of per-position rates."""
    rates, accepted, drafted = rec["per_position"], int(rec["accepted"]), int(rec["drafted"])
    k = len(rates)
    low = max(1, math.ceil(drafted / k)) if k else 1  # a draft holds at most K tokens
    if accepted == 0:
        # Nothing accepted: the mean is 1.00 and every rate 0 for any draft count, so only the token count
        # bounds it (at most one draft per drafted token).
        high = max(low, drafted)
        return LineDrafts(low, low, high, (0,) * k, low == high)
    excess = rec["mean_acceptance_length"] - 1.0  # accepted / drafts, printed to two decimals
    low = max(low, math.ceil(accepted / (excess + _MEAN_TOLERANCE)), math.ceil(accepted / k) if k else 1)
    high = math.floor(accepted / (excess - _MEAN_TOLERANCE)) if excess > _MEAN_TOLERANCE else None
    if high is None or high - low > _MAX_CANDIDATES_SCANNED:
        high = low + _MAX_CANDIDATES_SCANNED
    fits = {n: c for n in range(low, high + 1) if (c := _per_position_counts(rates, n, accepted)) is not None}
    if not fits:  # printed numbers that fit no count (not seen from vLLM): fall back on the mean alone
        n = max(low, round(accepted / excess)) if excess > 0 else low
        return LineDrafts(n, n, n, tuple(round(r * n) for r in rates), False)
    nearest = min(fits, key=lambda n: (abs(1.0 + accepted / n - rec["mean_acceptance_length"]), n))
    counts = fits[nearest]
    exact = len(fits) == 1 and -1 not in counts
    if -1 in counts:  # several splits fit: the printed rates times the draft count, to the nearest token
        counts = tuple(round(r * nearest) for r in rates)
    return LineDrafts(nearest, min(fits), max(fits), counts, exact)


def spec_decode_from_log(lines: Iterable[str], k: int | None = None) -> dict:
    """Sum the spec-decode lines among ``lines``.

    Returns the record of ``peagle_nb.serving.metrics.summarize`` plus ``n_log_lines``, ``k_in_log`` (the
    server's K, from the per-position rates), ``drafts_exact`` and ``num_drafts_range``, and ``verdict`` /
    ``verdict_reason`` (:func:`verdict`). ``k``, when given, is the K the caller deployed: a server that
    runs another one is named in ``k_mismatch`` (speculation is still on, just not as planned).
    """
    if k is not None and k < 1:
        raise ValueError(f"k={k}: the number of speculative tokens must be >= 1")
    drafts = low = high = drafted = accepted = 0
    per_pos: list[int] = []
    exact, n, k_seen = True, 0, set()
    for line in lines:
        rec = parse_spec_decode_line(line)
        if rec is None:
            continue
        n += 1
        k_seen.add(len(rec["per_position"]))
        found = drafts_in_line(rec)
        drafts, low, high = drafts + found.estimate, low + found.low, high + found.high
        exact = exact and found.exact
        drafted += int(rec["drafted"])
        accepted += int(rec["accepted"])
        per_pos += [0] * (len(found.per_position) - len(per_pos))
        for i, count in enumerate(found.per_position):
            per_pos[i] += count
    out = summarize(drafts, drafted, accepted, per_pos)
    out.update(n_log_lines=n, k_in_log=max(k_seen) if k_seen else None, drafts_exact=exact,
               num_drafts_range=[low, high])
    if len(k_seen) > 1:
        out["k_mismatch"] = f"the lines show several K ({sorted(k_seen)}): more than one server wrote this log"
    elif k is not None and k_seen and k_seen != {k}:
        out["k_mismatch"] = (f"the server drafts K={max(k_seen)} tokens per step, not the K={k} the plan asked for: "
                             "check SM_VLLM_SPECULATIVE_CONFIG's num_speculative_tokens")
    out["verdict"], out["verdict_reason"] = verdict(out)
    return out


def verdict(stats: dict, unreadable: str | None = None) -> tuple[str, str]:
    """(``active`` | ``inactive`` | ``unreadable``, why) for a record of :func:`spec_decode_from_log`."""
    if unreadable:
        return "unreadable", f"cannot read the logs: {unreadable}"
    if stats.get("num_drafts"):
        how = "" if stats.get("drafts_exact", True) else f" (between {stats['num_drafts_range'][0]} and " \
                                                         f"{stats['num_drafts_range'][1]})"
        return "active", (f"{stats['num_drafts']} drafts{how}, {stats['num_accepted_tokens']} of "
                          f"{stats['num_draft_tokens']} draft tokens accepted over {stats.get('n_log_lines')} "
                          "spec-decode log lines")
    return "inactive", (f"no drafts ({stats.get('n_log_lines', 0)} spec-decode log lines): the endpoint answers, but "
                        "speculative decoding is off")


def require_speculation(stats: dict, where: str) -> dict:
    """``stats`` unchanged when the engine drafted; :class:`SpeculationOff` naming ``where`` when it did
    not, :class:`SpeculationUnverified` when the log could not be read."""
    if stats.get("verdict") == "unreadable":
        raise SpeculationUnverified(f"{where}: {stats['verdict_reason']}; speculation is neither confirmed nor "
                                    "ruled out")
    if not stats.get("num_drafts"):
        lines = stats.get("n_log_lines")
        seen = "" if lines is None else f" ({lines} spec-decode log lines)"
        raise SpeculationOff(
            f"no drafts in {where}{seen}: the endpoint answers, but speculative decoding is off. Check that "
            "SM_VLLM_SPECULATIVE_CONFIG reached vLLM (the container log's 'vLLM server arguments' / "
            "'speculative_config' lines) and that the head's channel is mounted where its \"model\" points.")
    return stats


def _error_code(exc: BaseException) -> str:
    return ((getattr(exc, "response", None) or {}).get("Error") or {}).get("Code", "")


def logs_unreadable_reason(exc: BaseException, group: str) -> str | None:
    """Why CloudWatch Logs could not serve ``group`` (the permission to grant, or the missing group), or
    None for an error that says nothing of the kind (re-raised by the caller)."""
    code = _error_code(exc)
    operation = getattr(exc, "operation_name", None) or "FilterLogEvents"
    if code in ("AccessDeniedException", "AccessDenied", "UnauthorizedOperation"):
        return (f"{code} on logs:{operation} for {group}: grant the caller's IAM identity logs:{operation} "
                f"on arn:aws:logs:*:*:log-group:{group}:* (the AWS managed CloudWatchLogsReadOnlyAccess policy "
                "has it)")
    if code == "ResourceNotFoundException":
        return (f"log group {group} does not exist: the container has not written anything yet, or its logs "
                "go elsewhere; wait and read again")
    return None


def cloudwatch_lines(session, endpoint_name: str, *, since_s: float | None = None, region: str | None = None,
                     marker: str = SPEC_LINE_MARKER) -> list[str]:
    """Messages containing ``marker`` in the endpoint's container log group since ``since_s`` (epoch
    seconds), oldest first. :class:`LogsUnreadable` when access is denied or the group does not exist."""
    logs = session.client("logs", region_name=region)
    group = log_group(endpoint_name)
    kwargs = {"logGroupName": group, "filterPattern": f'"{marker}"'}
    if since_s is not None:
        kwargs["startTime"] = int(since_s * 1000)
    events = []
    try:
        for page in logs.get_paginator("filter_log_events").paginate(**kwargs):
            events += page.get("events", [])
    except Exception as exc:
        reason = logs_unreadable_reason(exc, group)
        if reason is None:
            raise
        raise LogsUnreadable(reason) from exc
    events.sort(key=lambda e: (e.get("timestamp", 0), e.get("ingestionTime", 0)))
    return [e["message"] for e in events if marker in e.get("message", "")]


def read_endpoint_speculation(session, endpoint_name: str, *, k: int | None = None, since_s: float | None = None,
                              region: str | None = None) -> dict:
    """:func:`spec_decode_from_log` over the endpoint's CloudWatch lines; when they cannot be read, the same
    record with no drafts and the verdict ``unreadable`` naming why. Always a verdict, never a traceback for
    a log that could not be read."""
    try:
        lines = cloudwatch_lines(session, endpoint_name, since_s=since_s, region=region)
    except LogsUnreadable as exc:
        stats = spec_decode_from_log([], k)
        stats["n_log_lines"] = None
        stats["verdict"], stats["verdict_reason"] = verdict(stats, unreadable=exc.reason)
        return stats
    return spec_decode_from_log(lines, k)
