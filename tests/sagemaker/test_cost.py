"""Cost per million output tokens: the formula on hand-computed cases, measured runs, published ratios."""

import json

import pytest

from peagle_nb.files import paths
from peagle_nb.sagemaker.cost import (instances_for, measured_cost_rows, published_cost_rows, published_ratio_records,
                                      usd_per_million_tokens)


def test_formula_on_hand_computed_cases():
    assert usd_per_million_tokens(3.6, 1.0) == pytest.approx(1000.0)  # $0.001 per token
    assert usd_per_million_tokens(4.20, 500.0) == pytest.approx(2.3333333)  # 4.20 / 1.8M tokens per hour
    assert usd_per_million_tokens(1.41, 20.0) == pytest.approx(19.583333)
    with pytest.raises(ValueError, match="no output was measured"):
        usd_per_million_tokens(1.41, 0.0)
    with pytest.raises(ValueError, match="must be positive"):
        usd_per_million_tokens(None, 10.0)


def _doc(*tps_by_concurrency):
    return {"runs": [{"concurrency": c, "tokens_per_s": t} for c, t in tps_by_concurrency]}


def test_measured_rows_per_method_and_concurrency():
    bench = {"none": _doc((1, 10.0), (4, 30.0)), "eagle3": _doc((1, 20.0), (4, 40.0)), "peagle": _doc((1, 25.0))}
    rows = {(r["method"], r["concurrency"]): r for r in measured_cost_rows(bench, 3.6, "ml.g5.xlarge")}
    assert sorted(rows) == [("eagle3", 1), ("eagle3", 4), ("none", 1), ("none", 4), ("peagle", 1)]
    assert rows[("none", 1)]["usd_per_million_tokens"] == pytest.approx(100.0)
    assert rows[("peagle", 1)]["usd_per_million_tokens"] == pytest.approx(40.0)
    assert rows[("peagle", 1)]["cost_vs_none"] == pytest.approx(0.4)  # 40 / 100
    assert rows[("peagle", 1)]["cost_vs_eagle3"] == pytest.approx(0.8)  # 40 / 50
    assert rows[("eagle3", 4)]["cost_vs_none"] == pytest.approx(0.75)
    assert "cost_vs_eagle3" not in rows[("eagle3", 4)] and "cost_vs_none" not in rows[("none", 4)]


def test_published_ratios_priced_on_the_listed_instances():
    published = json.loads((paths.data_dir() / "results" / "published.json").read_text())
    ratios = published_ratio_records(published)
    assert len(ratios) >= 6 and all(r["target"] == "openai/gpt-oss-20b" for r in ratios)
    rows = published_cost_rows(published, ["ml.g6e.2xlarge", "ml.g7e.2xlarge", "ml.p5e.48xlarge"])
    assert len(rows) == 2 * len(ratios)  # ml.p5e.48xlarge has no price in the table: left out
    row = next(r for r in rows if r["instance_type"] == "ml.g6e.2xlarge" and r["concurrency"] == 1
               and r["prompt_set"].startswith("SPEED-Bench"))
    assert row["speedup_over_eagle3"] == 1.69 and row["peagle_cost_vs_eagle3"] == pytest.approx(0.591716)
    assert row["eagle3_usd_per_million_at_reference"] == pytest.approx(2.81 / 3.6)  # at 1000 tok/s
    assert row["peagle_usd_per_million_at_reference"] == pytest.approx(2.81 / 3.6 / 1.69)


def test_instances_that_hold_a_model_cheapest_first():
    fits = instances_for(40)
    assert fits[0] == "ml.g6e.xlarge" and "ml.g7e.2xlarge" in fits and "ml.g5.xlarge" not in fits
