"""Forecasting the regime points a GPU record lacks (``compare.forecast``): GPU step costs x tau measured on a CPU,
checked on the points the GPU did measure."""

from __future__ import annotations

import copy

import pytest

from peagle_nb.compare import forecast
from peagle_nb.compare.regime import predicted_regimes
from peagle_nb.files import paths
from peagle_nb.files.results import read_results

RESULTS = paths.results_dir()


def _load(*parts: str) -> dict:
    return read_results(RESULTS.joinpath(*parts))


@pytest.fixture(scope="module")
def v3_gpu():
    return _load("family_v3", "engine_h200_v3.json.gz")


@pytest.fixture(scope="module")
def v3_cpu():
    return _load("family_v3", "engine_cpu_v3.json")


@pytest.fixture(scope="module")
def tiny_gpu():
    return _load("engine_h200.json")


@pytest.fixture(scope="module")
def tiny_cpu():
    return _load("engine_cpu_regimes.json")


def test_with_the_gpus_own_tau_on_one_prompt_set_the_forecast_is_the_step_model(v3_gpu):
    one = copy.deepcopy(v3_gpu)  # costs pooled over one set are that set's costs: regime.predicted_regimes
    for reg in one["regimes"]:
        reg["runs"] = [r for r in reg["runs"] if r["prompt_set"] == "code"]
    one["regimes"] = [reg for reg in one["regimes"] if reg["temperature"] == 0]
    got = {(r["temperature"], r["tokens"]): r for r in forecast.forecast_rows(one, one)}
    want = {(r["temperature"], r["tokens"]): r for r in predicted_regimes(one)}
    assert got.keys() == want.keys() and len(got) == 2
    for key, r in got.items():
        assert r["forecast"] == pytest.approx(want[key]["predicted"], rel=1e-12)
        assert r["predicted_k"] == want[key]["predicted_k"] and r["error"] == pytest.approx(want[key]["error"])


def test_costs_come_from_the_same_length_and_sampling_kind(v3_gpu):
    assert forecast.cost_regime(v3_gpu, 1.0, 256)["temperature"] == 0.7  # sampled with sampled, nearest T
    assert forecast.cost_regime(v3_gpu, 0.0, 256)["temperature"] == 0.0
    with pytest.raises(ValueError, match="no sampled regime over 512 tokens.*--lengths 512"):
        forecast.cost_regime(v3_gpu, 1.0, 512)


def test_a_measured_sampled_point_takes_another_sampled_temperatures_costs(v3_gpu):
    two = copy.deepcopy(v3_gpu)
    hot = copy.deepcopy([r for r in two["regimes"] if r["temperature"] == 0.7])
    for reg in hot:
        reg["temperature"] = 1.0
    two["regimes"] += hot
    assert forecast.cost_regime(two, 0.7, 256)["temperature"] == 0.7
    assert forecast.cost_regime(two, 0.7, 256, other_temperature=True)["temperature"] == 1.0
    assert forecast.cost_regime(two, 1.0, 64, other_temperature=True)["temperature"] == 0.7
    # greedy has one temperature; a lone sampled one is its own
    assert forecast.cost_regime(two, 0.0, 256, other_temperature=True)["temperature"] == 0.0
    assert forecast.cost_regime(v3_gpu, 0.7, 256, other_temperature=True)["temperature"] == 0.7


def test_a_forecast_names_a_winner_only_outside_its_error_band():
    assert forecast.forecast_verdict(0.8, 0.1) == "eagle3 faster"
    assert forecast.forecast_verdict(0.95, 0.1) == "too close to call"
    assert forecast.forecast_verdict(1.2, 0.1) == "peagle faster"


def test_the_cpu_tau_records_ran_the_gpu_records_models_prompts_and_ks(v3_gpu, v3_cpu, tiny_gpu, tiny_cpu):
    assert v3_cpu["machine"]["device"] == tiny_cpu["machine"]["device"] == "cpu"
    assert v3_cpu["model"]["weights_sha256"] == v3_gpu["model"]["weights_sha256"]
    assert v3_cpu["model"]["heads"] == v3_gpu["model"]["heads"]
    for gpu, cpu in ((v3_gpu, v3_cpu), (tiny_gpu, tiny_cpu)):
        def configs(doc):
            return {(r["method"], r["k"], r["n_prompts"]) for reg in doc["regimes"] for r in reg["runs"]}
        assert configs(cpu) == configs(gpu)


def test_v3_forecast_is_checked_on_the_measured_points_and_fills_t1_and_japanese(v3_gpu, v3_cpu):
    rows = forecast.forecast_rows(v3_gpu, v3_cpu)
    checked = [r for r in rows if r["measured"] is not None]
    assert {(r["temperature"], r["prompt_set"]) for r in checked} == {(0.0, "prose"), (0.0, "code"), (0.7, "prose"),
                                                                       (0.7, "code")}
    for r in checked:  # greedy tau is the same arithmetic on both machines; sampled tau within its noise
        for m in ("eagle3", "peagle"):
            gap = abs(r[f"{m}_tau_k7"] / r[f"{m}_tau_k7_gpu"] - 1)
            assert gap < (1e-9 if r["temperature"] == 0 else 0.15), (r, m)
    s = forecast.summarize(rows)
    assert s["checked_points"] == 4 and s["verdicts_consistent"] == 4 and s["max_abs_error"] < 0.12
    new = {(p["temperature"], p["prompt_set"]): p for p in s["forecast_points"]}
    assert set(new) == {(0.0, "ja"), (0.7, "ja"), (1.0, "prose"), (1.0, "code"), (1.0, "ja")}
    assert new[(0.0, "ja")]["verdict"] == new[(0.7, "ja")]["verdict"] == "eagle3 faster"
    # T=1: about nine tenths on every set, like the best measured point; under 1 but inside the error band
    assert all(0.9 < new[(1.0, ps)]["forecast"] < 1 for ps in ("prose", "code", "ja"))
    assert all(new[(1.0, ps)]["verdict"] == "too close to call" for ps in ("prose", "code", "ja"))
    assert all(r["costs_from_T"] == 0.7 for r in rows if r["temperature"] == 1.0)


def test_tiny_forecast_is_checked_at_t0_and_t1_and_fills_t07(tiny_gpu, tiny_cpu):
    rows = forecast.forecast_rows(tiny_gpu, tiny_cpu)
    checked = [r for r in rows if r["measured"] is not None]
    assert len(checked) == 12 and {r["temperature"] for r in checked} == {0.0, 1.0}
    for r in checked:
        if r["temperature"] == 0:  # greedy: the same tau on both machines
            assert r["peagle_tau_k7"] == r["peagle_tau_k7_gpu"] and r["eagle3_tau_k7"] == r["eagle3_tau_k7_gpu"]
    s = forecast.summarize(rows)
    assert s["verdicts_consistent"] == 12 and s["max_abs_error"] < 0.1 and s["median_abs_error"] < 0.05
    new = {(p["tokens"], p["prompt_set"]): p for p in s["forecast_points"]}
    assert set(new) == {(n, ps) for n in (64, 256) for ps in ("prose", "code", "ja")}
    assert all(p["temperature"] == 0.7 for p in new.values())
    # T=0.7 as forecast: Japanese an EAGLE-3 win at both lengths; no set a P-EAGLE win
    assert all(new[key]["verdict"] == "eagle3 faster" for key in ((64, "ja"), (256, "ja"), (256, "prose")))
    assert not any(p["verdict"] == "peagle faster" for p in new.values())


def test_the_v3_cpu_record_recomputes_from_its_raw_runs(v3_cpu):
    from tests.test_provenance import _engine_file_recomputes, _generator_is_this_repository

    _engine_file_recomputes(v3_cpu)  # tau from every step's accepted count, the summary from the runs
    _generator_is_this_repository(v3_cpu)


def test_forecast_points_beside_a_later_measurement(v3_gpu, v3_cpu):
    """``against_measured``: each forecast point the later record measured, with its verdict; a "too close to call"
    holds against any measurement, a named winner only against the same one; points the record lacks are left out."""
    from peagle_nb.files.results import read_results

    points = forecast.summarize(forecast.forecast_rows(v3_gpu, v3_cpu))["forecast_points"]
    lock = read_results(RESULTS / "family_v3" / "engine_h100_v3_lockstep.json.gz")
    rows = forecast.against_measured(points, lock)
    assert [(r["temperature"], r["tokens"], r["prompt_set"]) for r in rows] == [
        (p["temperature"], p["tokens"], p["prompt_set"]) for p in points]
    assert all(r["holds"] and r["measured_min"] <= r["measured"] <= r["measured_max"] for r in rows)
    fake = [dict(points[0], verdict="peagle faster"), dict(points[0], verdict="too close to call"),
            dict(points[0], tokens=1024)]
    assert [r["holds"] for r in forecast.against_measured(fake, lock)] == [False, True]
