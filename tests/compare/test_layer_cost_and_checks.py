"""The cost per layer from step phases, the advisor against a measured sweep, and the rule of when P-EAGLE wins."""

import pytest

from peagle_nb.files import paths
from peagle_nb.compare import published as pub
from peagle_nb.compare.layer_cost import gpu_per_layer_ms, per_layer_cost
from peagle_nb.compare.measured_check import advice_vs_measured, explain
from peagle_nb.compare.regime import published_split, rule_lines, when_peagle_wins
from peagle_nb.files.results import read_results


def _phases(per_pass, per_layer, target_layers=8):
    rows = [{"method": "none", "k": 0, "plain_ms": per_pass + target_layers * per_layer}]
    for method, layers in (("eagle3", 1), ("peagle", 4)):
        for k in (1, 3):
            draft = (per_pass + layers * per_layer) * (k if method == "eagle3" else 1)
            rows.append({"method": method, "k": k, "build_ms": 0.01, "draft_ms": draft, "verify_ms": 0.2,
                         "update_ms": 0.01})
    return rows


def test_per_layer_cost_recovers_a_known_line_and_checks_the_target():
    out = per_layer_cost(_phases(0.03, 0.025), {"eagle3": 1, "peagle": 4}, target_layers=8)
    assert out["per_layer_ms"] == pytest.approx(0.025) and out["per_pass_ms"] == pytest.approx(0.03)
    assert out["target_error"] == pytest.approx(0.0, abs=1e-9)
    off = per_layer_cost(_phases(0.03, 0.025, target_layers=12), {"eagle3": 1, "peagle": 4}, target_layers=8)
    assert off["target_error"] < -0.2  # a target that does not fit the line shows it
    with pytest.raises(ValueError, match="K=1"):
        per_layer_cost([r for r in _phases(0.03, 0.025) if r["k"] != 1], {"eagle3": 1, "peagle": 4})
    with pytest.raises(ValueError, match="same depth"):
        per_layer_cost(_phases(0.03, 0.025), {"eagle3": 4, "peagle": 4})


def test_gpu_per_layer_ms_reads_only_a_gpu_engine_sweep():
    heads = {"eagle3": {"layers": 1}, "peagle": {"layers": 4}}
    gpu = {"source": "engine", "machine": {"cuda": "13.0"}, "model": {"heads": heads}, "phases": _phases(0.03, 0.02)}
    cpu = {**gpu, "machine": {"device": "cpu"}, "phases": _phases(0.5, 0.4)}
    assert gpu_per_layer_ms([cpu, gpu]) == pytest.approx(0.02)
    assert gpu_per_layer_ms([cpu]) is None


@pytest.fixture(scope="module")
def h200():
    path = paths.results_dir() / "engine_h200.json"
    if not path.is_file():
        pytest.skip("engine_h200.json not recorded")
    return read_results(path)


def test_advice_vs_measured_takes_the_ratio_apart(h200):
    row = {"peagle_over_eagle3": 1.1, "peagle_best_k": 6, "eagle3_best_k": 2}
    chk = advice_vs_measured(row, h200, "prose")
    summary = h200["summary"]["prose"]
    assert chk["measured"] == summary["peagle_over_eagle3_at_best_k"]
    assert chk["measured_verdict"] == summary["peagle_over_eagle3_verdict"]  # the sweep's own rule
    assert chk["predicted_verdict"] == "peagle faster"
    assert set(chk["chain"]) == {"phases", "step_wall", "decode", "end_to_end"}
    assert chk["largest_step"] in chk["moves"] and chk["moves"][chk["largest_step"]] == min(chk["moves"].values())
    text = explain(chk)
    assert "predicted 1.10" in text and f"{chk['chain']['end_to_end']:.2f}" in text
    with pytest.raises(ValueError, match="summary"):
        advice_vs_measured(row, {**h200, "phases": []}, "prose")


def test_the_published_split_and_the_rule(h200):
    doc = pub.load_published()
    split = published_split(doc)
    assert (split["workload"], split["concurrency"], split["ratio"]) == ("SPEED-Bench (Code)", 1, 1.69)
    assert split["acceptance"] == pytest.approx(3.38 / 2.24, abs=1e-3)
    assert split["one_pass_saving"] == pytest.approx(1.69 / (3.38 / 2.24), abs=1e-3)
    pf = pub.fit_profile(pub.anchors_20b(doc), per_layer_ms=0.0244)
    numbers = when_peagle_wins(doc, pf, h200, "prose")
    assert numbers["published_ratio_low_c"]["SPEED-Bench (Code)"] == 1.69
    assert numbers["published_deep_gain"]["peagle"]["HumanEval"] == pytest.approx(0.92)
    assert numbers["suite_verdict"] == h200["summary"]["prose"]["peagle_over_eagle3_verdict"]
    lines = rule_lines(numbers)
    assert "1.51x" in lines[0] and "1.12x" in lines[0] and len(lines) == 6
