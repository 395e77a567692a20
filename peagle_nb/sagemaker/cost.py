"""What a million output tokens cost on an endpoint: hourly price / (tokens per second x 3600) x 1e6.

Explained in notebook 06. An endpoint bills by the instance-hour whether it is busy or not, so its cost per
token is the price divided by the throughput it sustains; at each concurrency P-EAGLE, EAGLE-3 and plain
decoding sustain different throughputs on the same instance, hence different costs.

- :func:`measured_cost_rows`: from benchmark results (``peagle_nb.bench``) of each method on one
  instance type, one row per method and concurrency, with each method's cost relative to plain decoding
  and to EAGLE-3 at the same concurrency.
- :func:`published_cost_rows`: from ``data/results/published.json``. The published GPT-OSS-20B figures are
  P-EAGLE/EAGLE-3 throughput ratios measured on one B200 (the blog's figures, no tokens/s in the file), so
  the cost they imply is relative: on any instance, P-EAGLE's cost per million tokens is EAGLE-3's divided
  by the ratio (the price cancels). To show it in dollars on the listed instance types, each row also prices
  a stated reference EAGLE-3 throughput; the dollar figures scale with 1 / the throughput actually reached.
"""

from __future__ import annotations

from typing import Any, Iterable

from peagle_nb.sagemaker import instances

REFERENCE_EAGLE3_TOKENS_PER_S = 1000.0  # a round reference for pricing published ratios, not a measurement


def usd_per_million_tokens(usd_per_hour: float, tokens_per_s: float) -> float:
    """Price of one million output tokens on an instance billed ``usd_per_hour`` serving ``tokens_per_s``."""
    if usd_per_hour is None or usd_per_hour <= 0:
        raise ValueError(f"usd_per_hour={usd_per_hour!r}: an hourly price must be positive (see instances.py)")
    if tokens_per_s is None or tokens_per_s <= 0:
        raise ValueError(f"tokens_per_s={tokens_per_s!r}: no output was measured, so there is no cost per token")
    return usd_per_hour / (tokens_per_s * 3600.0) * 1e6


def measured_cost_rows(bench: dict[str, dict], usd_per_hour: float, instance_type: str) -> list[dict[str, Any]]:
    """One row per (method, concurrency) of ``bench`` ({method: benchmark results document})."""
    tps = {(m, r["concurrency"]): r["tokens_per_s"] for m, doc in bench.items() for r in doc["runs"]}
    rows = []
    for (method, c), value in sorted(tps.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        row = {"method": method, "concurrency": c, "tokens_per_s": value, "instance_type": instance_type,
               "usd_per_hour": usd_per_hour, "usd_per_million_tokens": usd_per_million_tokens(usd_per_hour, value)}
        for base in ("none", "eagle3"):
            if base != method and (base, c) in tps:
                # cost ratio = throughput ratio inverted: the same instance-hours buy more tokens
                row[f"cost_vs_{base}"] = tps[(base, c)] / value
        rows.append(row)
    return rows


def published_ratio_records(published: dict, target: str = "openai/gpt-oss-20b") -> list[dict]:
    """The P-EAGLE / EAGLE-3 throughput ratios published for ``target`` (one per workload and concurrency)."""
    return [r for r in published["runs"] if r.get("kind") == "speedup_over_eagle3" and r.get("target") == target
            and r.get("concurrency") is not None]


def published_cost_rows(published: dict, instance_types: Iterable[str], target: str = "openai/gpt-oss-20b",
                        reference_tokens_per_s: float = REFERENCE_EAGLE3_TOKENS_PER_S,
                        region: str | None = None) -> list[dict[str, Any]]:
    """Per published ratio and listed instance type: P-EAGLE's cost relative to EAGLE-3 (1 / ratio), and
    both costs in USD per million tokens at ``reference_tokens_per_s`` of EAGLE-3 throughput, at ``region``'s
    prices (instance types without a price there are left out)."""
    rows = []
    for rec in published_ratio_records(published, target):
        ratio = float(rec["speedup_over_eagle3"])
        for itype in instance_types:
            found = instances.price(itype, region)
            if found is None:
                continue
            price = found.usd_per_hour
            eagle3 = usd_per_million_tokens(price, reference_tokens_per_s)
            rows.append({"prompt_set": rec.get("prompt_set"), "concurrency": rec["concurrency"],
                         "hardware": rec.get("hardware"), "speedup_over_eagle3": ratio,
                         "peagle_cost_vs_eagle3": 1.0 / ratio, "instance_type": itype, "usd_per_hour": price,
                         "eagle3_usd_per_million_at_reference": eagle3,
                         "peagle_usd_per_million_at_reference": eagle3 / ratio,
                         "reference_eagle3_tokens_per_s": reference_tokens_per_s,
                         "source_ref": rec.get("source_ref", ""), "price_region": found.region,
                         "price_as_of": found.as_of})
    return rows


def instances_for(min_gpu_memory_gib: float, region: str | None = None) -> list[str]:
    """Instance types priced in ``region`` with at least that much GPU memory, cheapest first."""
    fits = [instances.instance_info(t, region) for t in instances.INSTANCES]
    fits = [i for i in fits if i.usd_per_hour is not None and i.gpu_memory_gib >= min_gpu_memory_gib]
    return [i.instance_type for i in sorted(fits, key=lambda i: (i.usd_per_hour, i.instance_type))]
