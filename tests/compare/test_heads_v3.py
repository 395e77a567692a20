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


def test_served_conditional_acceptance_pools_every_step_of_the_k7_runs(engine):
    rows = heads_v3.served_conditional_rows(engine)
    assert {(r["temperature"], r["prompt_set"]) for r in rows} == {(0.0, "code"), (0.0, "prose"), (0.7, "code"),
                                                                     (0.7, "prose")}
    reg = next(r for r in engine["regimes"] if r["temperature"] == 0.7 and r["max_new_tokens"] == 256)
    runs = [r for r in reg["runs"] if r["method"] == "peagle" and r["k"] == 7 and r["prompt_set"] == "prose"]
    row = next(r for r in rows if r["temperature"] == 0.7 and r["prompt_set"] == "prose" and r["method"] == "peagle")
    assert row["steps"] == sum(r["steps"] for r in runs)
    steps = [a for r in runs for a in r["accepted_per_step"]]
    assert row["depth 2"] == sum(a >= 2 for a in steps) / sum(a >= 1 for a in steps)
    # depth 1 given depth 0 is the per-position rate of position 1, pooled over the sweeps by their steps
    assert row["depth 1"] == pytest.approx(
        sum(r["accept_rate_per_position"][0] * r["steps"] for r in runs) / row["steps"])
    # served, the rung-3 P-EAGLE head misses the goal at T <= 0.7 on both sets; EAGLE-3 holds more at depths 2-4
    pe = [r for r in rows if r["method"] == "peagle"]
    assert pe and not any(r["meets goal"] for r in pe)
    for r in pe:
        e3 = next(x for x in rows if x["method"] == "eagle3" and x["temperature"] == r["temperature"]
                  and x["prompt_set"] == r["prompt_set"])
        assert e3["weakest 2-4"] > r["weakest 2-4"]


def test_the_parallel_ceiling_against_the_heads_as_served(engine):
    cpu = json.loads((FOLDER / "engine_cpu_v3.json").read_text())
    ceiling = json.loads((FOLDER / "parallel_ceiling.json").read_text())
    served = heads_v3.served_rows_both_machines(engine, cpu)
    # the H200 where it measured (T = 0, 0.7 on prose and code), the CPU sweep of the same heads elsewhere
    assert {(r["temperature"], r["prompt_set"], r["machine"]) for r in served if r["method"] == "peagle"} == {
        (0.0, "prose", "H200"), (0.0, "code", "H200"), (0.7, "prose", "H200"), (0.7, "code", "H200"),
        (0.0, "ja", "CPU"), (0.7, "ja", "CPU"), (1.0, "prose", "CPU"), (1.0, "code", "CPU"), (1.0, "ja", "CPU")}
    rows = {(r["target"], r["temperature"], r["prompt_set"]): r for r in heads_v3.ceiling_rows(ceiling)}
    # "out of reach on prose and Japanese at the heads' temperature; only code leaves room"
    assert [ps for ps in ("prose", "code", "ja") if rows[("v3", 0.7, ps)]["room for goal"]] == ["code"]
    # "at T=1 the v3 target's ceiling is lower still on every set"
    assert all(rows[("v3", 1.0, ps)]["lowest"] < rows[("v3", 0.7, ps)]["lowest"] for ps in ("prose", "code", "ja"))
    against = heads_v3.served_against_ceiling(served, ceiling)
    assert len(against) == 12
    # "EAGLE-3 passes the parallel ceiling at deep slots on every set and temperature"
    assert all(r["above ceiling"] for r in against if r["method"] == "eagle3")
    # "P-EAGLE below its ceiling on prose and code at every depth"
    assert not any(r["above ceiling"] for r in against if r["method"] == "peagle" and r["prompt_set"] != "ja")
