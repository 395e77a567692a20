"""Speculative-decoding metrics from a vLLM server's ``/metrics`` (Prometheus text, parsed with
``prometheus_client.parser``). Explained in notebook 05.

vLLM's counters: ``vllm:spec_decode_num_drafts`` (verification steps that had drafts, per request),
``..._num_draft_tokens``, ``..._num_accepted_tokens`` and ``..._num_accepted_tokens_per_pos{position=i}``.
Acceptance length tau = 1 + accepted / drafts (bonus token included); per-position acceptance
a_i = accepted_per_pos[i] / drafts.
"""

from __future__ import annotations

from typing import Any

from peagle_nb.serving import _deps

_PREFIX = "vllm:spec_decode_"


def summarize(drafts: float, draft_tokens: float, accepted: float, per_pos: list[float],
              generation_tokens: float = 0.0) -> dict[str, Any]:
    tau = 1.0 + accepted / drafts if drafts else None
    return {
        "num_drafts": int(drafts), "num_draft_tokens": int(draft_tokens), "num_accepted_tokens": int(accepted),
        "accepted_per_position": [int(x) for x in per_pos],
        "accept_rate_per_position": [x / drafts for x in per_pos] if drafts else None,
        "tau": tau, "generation_tokens": int(generation_tokens),
    }


def parse_spec_decode_metrics(text: str) -> dict[str, Any]:
    """Sum the spec-decode counters over engines/models in a Prometheus exposition ``text``."""
    parser = _deps.require("prometheus_client.parser", "reading vLLM's /metrics")
    totals = {"num_drafts": 0.0, "num_draft_tokens": 0.0, "num_accepted_tokens": 0.0}
    per_pos: dict[int, float] = {}
    gen = 0.0
    for family in parser.text_string_to_metric_families(text):
        for sample in family.samples:
            if not sample.name.endswith("_total"):
                continue  # skip the *_created timestamps counters also export
            base = sample.name[: -len("_total")]
            if base == "vllm:generation_tokens":
                gen += sample.value
            if not base.startswith(_PREFIX):
                continue
            key = base[len(_PREFIX):]
            if key == "num_accepted_tokens_per_pos":
                pos = int(sample.labels["position"])
                per_pos[pos] = per_pos.get(pos, 0.0) + sample.value
            elif key in totals:
                totals[key] += sample.value
    pos_list = [per_pos[i] for i in sorted(per_pos)]
    return summarize(totals["num_drafts"], totals["num_draft_tokens"], totals["num_accepted_tokens"], pos_list, gen)


def fetch_metrics_text(base_url: str, timeout_s: float = 10.0) -> str:
    import urllib.request

    url = base_url.rstrip("/")
    url = url[: -len("/v1")] if url.endswith("/v1") else url
    with urllib.request.urlopen(url + "/metrics", timeout=timeout_s) as resp:  # noqa: S310 - local server
        return resp.read().decode("utf-8")


def read_spec_decode_metrics(base_url: str) -> dict[str, Any]:
    """The server's spec-decode counters now (cumulative since it started)."""
    return parse_spec_decode_metrics(fetch_metrics_text(base_url))


def delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Counters accumulated between two reads (a benchmark run's own acceptance)."""
    pb, pa = before.get("accepted_per_position") or [], after.get("accepted_per_position") or []
    pb = pb + [0] * (len(pa) - len(pb))
    return summarize(after["num_drafts"] - before["num_drafts"], after["num_draft_tokens"] - before["num_draft_tokens"],
                     after["num_accepted_tokens"] - before["num_accepted_tokens"],
                     [a - b for a, b in zip(pa, pb)],
                     after.get("generation_tokens", 0) - before.get("generation_tokens", 0))
