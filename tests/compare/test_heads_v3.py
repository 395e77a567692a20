"""The family-v3 heads and their regime map against the issue's goals, from the committed H200 records."""

from __future__ import annotations

import json

import pytest

from peagle_nb.compare import heads_v3
from peagle_nb.files import paths
from peagle_nb.lab.sweeps.engine_sweep import merge_parts

FOLDER = paths.results_dir() / "family_v3"


@pytest.fixture(scope="module")
def heads():
    return json.loads((FOLDER / "heads_h200" / "family_heads.json").read_text())


@pytest.fixture(scope="module")
def engine():
    return json.loads((FOLDER / "engine_h200_v3.json").read_text())


def test_the_heads_were_trained_on_the_recorded_target_from_equal_data(heads):
    card = json.loads((FOLDER / "target_h200" / "training_log.json").read_text())
    assert heads["target_weights_sha256"] == card["weights_sha256"]
    data = heads["data"]
    assert data["sample_temperature"] == 0.7 and data["decoding"].startswith("all sampled")
    assert data["n_sequences"] == sum(data["sequences_per_domain"].values()) == 90112
    assert data["prompts_file"]["sha256"].startswith("9023014b291d53bd")  # the committed-recipe prompts file
    assert heads["pair_steps_run"]["r1"] == {"eagle3": 300, "peagle": 300}  # rung 1: equal steps
    r3 = heads["pair_steps_run"]["r3"]  # rung 3: the time budget stopped the pair apart (before lockstep existed)
    assert r3["eagle3"] > r3["peagle"] and "--lockstep" not in (FOLDER / "heads_h200" / "family_heads.log").read_text()


def test_conditional_acceptance_rows_follow_the_logs(heads):
    rows = {(r["head"], r["domain"]): r for r in heads_v3.conditional_rows(heads)}
    assert len(rows) == 7 * 3
    pe = rows[("v3-peagle-r3", "prose")]
    cond = heads["heads"]["v3-peagle-r3"]["acceptance"]["prose"]["conditional"]
    assert pe["weakest 2-4"] == pytest.approx(min(cond[1:4]))
    assert not pe["meets goal"] and 0.3 < pe["weakest 2-4"] < 0.4
    assert not rows[("v3-eagle3-r3", "prose")]["meets goal"]  # the goal is P-EAGLE's


def test_ladder_rises_and_ablations_are_relative_to_the_full_recipe(heads):
    ladder = {(r["method"], r["rung"]): r for r in heads_v3.ladder_rows(heads)}
    for m in ("eagle3", "peagle"):
        for d in heads_v3.DOMAINS:
            assert ladder[(m, "r3")][f"tau {d}"] > ladder[(m, "r1")][f"tau {d}"]
    ab = {r["variant"]: r for r in heads_v3.ablation_rows(heads)}
    assert set(ab) == {"full recipe", "zeros", "nocod", "2layers"}
    assert all(ab["full recipe"][f"vs full {d}"] == 0 for d in heads_v3.DOMAINS)
    assert all(-0.35 < ab["nocod"][f"vs full {d}"] < -0.2 for d in heads_v3.DOMAINS)  # COD matters most
    assert all(abs(ab["zeros"][f"vs full {d}"]) < 0.05 for d in heads_v3.DOMAINS)  # mask_hidden: equal
    assert ab["2layers"]["layers"] == 2


def test_measured_pass_costs_meet_the_goals_and_check_the_prediction(engine):
    cost = heads_v3.measured_pass_costs(engine, {"pass_ratio": {"eagle3": 0.066, "peagle": 0.15},
                                                  "deep_step_ms": 0.8})
    assert cost["peagle"]["meets goal"] and cost["eagle3"]["meets goal"]
    assert cost["peagle"]["ratio"] == pytest.approx(cost["peagle"]["pass_ms"] / cost["target_step_ms"])
    assert cost["eagle3"]["prediction_error"] == pytest.approx(0.066 / cost["eagle3"]["ratio"] - 1)
    assert "predicted_ratio" not in heads_v3.measured_pass_costs(engine)["peagle"]


def test_regime_map_and_speed_goal(engine):
    rows = heads_v3.regime_table(engine)
    assert {(r["temperature"], r["tokens"]) for r in rows} == {(0.0, 64), (0.0, 256), (0.7, 64), (0.7, 256)}
    assert all(r["sweeps"] >= 1 and r["peagle_tau_fresh_k7"] <= r["peagle_tau_k7"] for r in rows)
    goal = heads_v3.speed_goal(engine)
    assert set(goal) == {0.0, 0.7} and not any(g["meets goal"] for g in goal.values())
    assert goal[0.0]["both_over_plain"] == ["code", "prose"]
    why = heads_v3.why_rows(engine)
    assert all(w["acceptance_factor"] < 1 < w["step_factor"] for w in why)


def test_merge_leaves_out_a_regime_the_budget_cut_before_its_first_run(engine):
    part = {k: v for k, v in engine.items() if k not in ("parts",)}
    empty = {"temperature": 1.0, "max_new_tokens": 64, "runs": [], "summary": {}}
    merged = merge_parts([{**part, "regimes": [*part["regimes"], empty]}])
    assert (1.0, 64) not in {(r["temperature"], r["max_new_tokens"]) for r in merged["regimes"]}
    assert merged["parts"][0]["regimes"][-1] == (1.0, 64)  # the part still says what it was asked for
