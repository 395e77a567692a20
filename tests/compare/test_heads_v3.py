"""The family-v3 heads and their regime map against the issue's goals, from the committed H200 records."""

from __future__ import annotations

import copy
import json

import pytest

from peagle_nb.compare import heads_v3
from peagle_nb.files import paths
from peagle_nb.files.results import read_results
from peagle_nb.lab.sweeps.engine_sweep import merge_parts

FOLDER = paths.results_dir() / "family_v3"


@pytest.fixture(scope="module")
def heads():
    return json.loads((FOLDER / "heads_h200" / "family_heads.json").read_text())


@pytest.fixture(scope="module")
def engine():
    return read_results(FOLDER / "engine_h200_v3.json.gz")


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
    by_length = heads_v3.speed_goal(engine, by_length=True)  # one length over 256 here: the same judgement
    assert {t: g for (t, n), g in by_length.items()} == goal and {n for _, n in by_length} == {256}


def test_speed_goal_by_length_counts_each_set_once_per_length():
    lock = read_results(paths.results_dir() / "family_v3" / "engine_h100_v3_lockstep.json.gz")
    pooled, apart = heads_v3.speed_goal(lock), heads_v3.speed_goal(lock, by_length=True)
    assert sorted(pooled[0.0]["sets"]) == ["code", "code", "ja", "ja", "prose", "prose"]  # 256 and 512 pooled
    assert set(apart) == {(t, n) for t in (0.0, 0.7, 1.0) for n in (256, 512)}
    assert all(sorted(g["sets"]) == ["code", "ja", "prose"] and not g["meets goal"] for g in apart.values())


def test_merge_leaves_out_a_regime_the_budget_cut_before_its_first_run(engine):
    part = {k: v for k, v in engine.items() if k not in ("parts",)}
    empty = {"temperature": 1.0, "max_new_tokens": 64, "runs": [], "summary": {}}
    merged = merge_parts([{**part, "regimes": [*part["regimes"], empty]}])
    assert (1.0, 64) not in {(r["temperature"], r["max_new_tokens"]) for r in merged["regimes"]}
    assert merged["parts"][0]["regimes"][-1] == (1.0, 64)  # the part still says what it was asked for


def test_a_merged_record_grows_by_one_part_and_keeps_its_parts(engine):
    assert len(engine["parts"]) == 2  # engine_h200_v3.json.gz: two calls merged
    t0 = [r for r in engine["regimes"] if r["temperature"] == 0]
    part = {k: v for k, v in engine.items() if k != "parts"}
    later = {**part, "generator": "a later call", "regimes": copy.deepcopy(t0)}
    for reg in later["regimes"]:
        reg["temperature"] = 1.0
    grown = merge_parts([engine, later])
    assert grown["parts"][:2] == engine["parts"] and grown["parts"][2]["generator"] == "a later call"
    assert {r["temperature"] for r in grown["regimes"]} == {0.0, 0.7, 1.0}


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


# --- the rung-10 pair: a second heads run on the same data, and its H200 sweep ---

def _heads_docs() -> list[dict]:
    return [json.loads((FOLDER / f / "family_heads.json").read_text()) for f in heads_v3.HEADS_RECORDS]


@pytest.fixture(scope="module")
def merged():
    return heads_v3.merged_heads(_heads_docs())


@pytest.fixture(scope="module")
def engine_r10():
    return read_results(FOLDER / "engine_h200_v3_r10.json.gz")


def test_rung_10_ran_in_lockstep_on_the_same_data_and_was_swept_with_its_own_weights(merged, engine_r10, engine):
    steps = merged["pair_steps_run"]
    assert steps["r10"]["eagle3"] == steps["r10"]["peagle"] and 2000 < steps["r10"]["peagle"] < 3000  # stopped by time
    assert "lockstep: the partner stopped after" in (FOLDER / "heads_h200_r10" / "family_heads.log").read_text()
    assert merged["runs"] == 2 and {h["run"] for n, h in merged["heads"].items() if n.endswith("-r10")} == {1}
    assert len(merged["heads"]) == 9
    for m in ("eagle3", "peagle"):  # the sweep names the weights the heads run wrote
        assert engine_r10["model"]["weights_sha256"][m] == merged["heads"][f"v3-{m}-r10"]["weights_sha256"]
    assert engine_r10["model"]["weights_sha256"]["target"] == engine["model"]["weights_sha256"]["target"]


def test_merged_heads_refuses_runs_that_do_not_form_a_ladder():
    first, second = _heads_docs()
    other_data = {**second, "data": {**second["data"], "n_sequences": 1}}
    with pytest.raises(ValueError, match="other data than run 0 .differs in n_sequences"):
        heads_v3.merged_heads([first, other_data])
    with pytest.raises(ValueError, match="another target"):
        heads_v3.merged_heads([first, {**second, "target_weights_sha256": {"x": "y"}}])
    with pytest.raises(ValueError, match="v3-eagle3-r10 is in two heads runs"):
        heads_v3.merged_heads([first, second, second])
    timing_only = {**second, "data": {**second["data"], "generate_seconds": 1.0}}  # rebuilding takes its own time
    assert heads_v3.merged_heads([first, timing_only])["runs"] == 2


def test_rung_10_lifts_peagle_most_and_clears_the_greedy_conditional_goal(merged):
    ladder = {(r["method"], r["rung"]): r for r in heads_v3.ladder_rows(merged)}
    assert [r["rung"] for r in heads_v3.ladder_rows(merged)][:3] == ["r1", "r3", "r10"]  # in budget order
    for d in heads_v3.DOMAINS:
        gain = {m: ladder[(m, "r10")][f"tau {d}"] / ladder[(m, "r3")][f"tau {d}"] for m in ("eagle3", "peagle")}
        assert gain["peagle"] > gain["eagle3"] > 1  # "lifted P-EAGLE's tau far more than EAGLE-3's"
    rows = [r for r in heads_v3.conditional_rows(merged) if r["head"] == "v3-peagle-r10"]
    assert len(rows) == 3 and all(r["meets goal"] for r in rows)  # "clears the goal ... on every domain"


def test_rung_10_map_narrows_the_gap_without_a_win(engine_r10, engine):
    table = {(r["temperature"], r["prompt_set"]): r for r in heads_v3.regime_table(engine_r10)}
    assert {r["sweeps"] for k, r in table.items() if k[0] == 0} == {3}
    assert {r["sweeps"] for k, r in table.items() if k[0] == 0.7} == {1}  # "one sweep ... provisional"
    assert table[(0, "code")]["tpot_verdict"] == "tie" and table[(0, "code")]["p_over_e_tpot_max"] > 1
    assert table[(0, "prose")]["tpot_verdict"] == table[(0, "ja")]["tpot_verdict"] == "eagle3 faster"
    assert 0.9 < table[(0, "prose")]["p_over_e_tpot"] < 1 < table[(0, "prose")]["p_over_e_e2e"]  # the summaries split
    assert all(r["tpot_verdict"] == "eagle3 faster" for k, r in table.items() if k[0] == 0.7)
    assert not any(g["meets goal"] for g in heads_v3.speed_goal(engine_r10).values())
    rungs = {(r["rung"], r["temperature"], r["prompt_set"]): r
             for r in heads_v3.rung_rows({"r3": engine, "r10": engine_r10}) if r["tokens"] == 256}
    for ps in ("prose", "code"):  # "from well behind to close"
        assert rungs[("r10", 0, ps)]["p_over_e_tpot"] > rungs[("r3", 0, ps)]["p_over_e_tpot"] + 0.2


def test_rung_10_served_acceptance_and_the_ceiling(engine_r10):
    served = {(r["temperature"], r["prompt_set"], r["method"]): r for r in heads_v3.served_conditional_rows(engine_r10)}
    for ps in heads_v3.DOMAINS:
        assert served[(0, ps, "peagle")]["meets goal"]  # greedy: clears the goal on every set
        assert not served[(0.7, ps, "peagle")]["meets goal"]  # sampled: under it
    ceiling = json.loads((FOLDER / "parallel_ceiling.json").read_text())
    rows = [dict(r, machine="H200") for r in served.values()]
    above = {(r["prompt_set"], r["method"]): r["above ceiling"] for r in heads_v3.served_against_ceiling(rows, ceiling)}
    assert above[("prose", "peagle")] == [] and above[("ja", "peagle")] == [3, 4] and above[("code", "peagle")] == [3]


def test_per_prompt_tau_shows_why_the_prose_summaries_disagree(engine_r10):
    rows = heads_v3.per_prompt_tau(engine_r10, 0.0, "prose", best_by="e2e")
    assert len(rows) == 8 and {r["eagle3_k"] for r in rows} == {r["peagle_k"] for r in rows} == {7}
    hardest = sorted(rows, key=lambda r: r["eagle3_tau"])[:2]
    assert all(r["p_over_e_tau"] > 1 for r in hardest)  # ahead where EAGLE-3 accepts least
    assert sum(r["p_over_e_tau"] > 1 for r in rows) < len(rows) / 2  # behind on most prompts
    run = next(r for r in engine_r10["regimes"][0]["runs"] if r["prompt_set"] == "prose" and r["method"] == "peagle"
               and r["k"] == 7 and r["sweep"] == 0)
    assert sum(256 / r["peagle_tau"] for r in rows) == pytest.approx(sum(run["steps_per_prompt"]))
    tpot_rows = heads_v3.per_prompt_tau(engine_r10, 0.0, "prose")  # each method's K with the lowest median TPOT
    assert {r["eagle3_k"] for r in tpot_rows} == {5}
    with pytest.raises(ValueError, match="best_by='fast'"):
        heads_v3.per_prompt_tau(engine_r10, 0.0, "prose", best_by="fast")


def test_rung_10_summaries_recompute_from_their_runs(engine_r10):
    from peagle_nb.engine.evaluate import summarize_sweep

    assert [(r["temperature"], r["max_new_tokens"]) for r in engine_r10["regimes"]] == [(0.0, 256), (0.7, 256)]
    for reg in engine_r10["regimes"]:
        assert reg["summary"] == summarize_sweep(reg["runs"])
        if reg["temperature"] == 0:  # greedy: every output equals plain greedy decoding (sampled: not checkable)
            assert all(r["lossless"] is True for r in reg["runs"])


def test_pair_rows_set_one_rungs_pair_from_several_runs_side_by_side(heads):
    doc = json.loads((paths.results_dir() / "family_v3" / "heads_h100_r3" / "family_heads.json").read_text())
    rows = heads_v3.pair_rows({"a": heads, "b": doc})
    assert [(r["run"], r["domain"]) for r in rows] == [(run, d) for run in "ab" for d in heads_v3.DOMAINS]
    for r in rows:
        src = heads if r["run"] == "a" else doc
        pe = src["heads"]["v3-peagle-r3"]["acceptance"][r["domain"]]
        e3 = src["heads"]["v3-eagle3-r3"]["acceptance"][r["domain"]]
        assert r["p_over_e_tau"] == pytest.approx(pe["tau"] / e3["tau"])
        assert r["peagle weakest 2-4"] == min(pe["conditional"][1:4])
    assert rows[0]["target sha256"] != rows[-1]["target sha256"]  # two targets: a recipe compared, not one ladder


def test_merge_refuses_parts_of_different_drafter_windows(engine):
    part = {k: v for k, v in engine.items() if k != "parts"}
    windowed = {**part, "model": {**part["model"], "drafter_window": 192, "drafter_sinks": 0}}
    with pytest.raises(ValueError, match="different drafter windows"):
        merge_parts([part, windowed])


def test_merge_refuses_parts_measured_with_different_weights(engine):
    part = {k: v for k, v in engine.items() if k != "parts"}
    sha = part["model"]["weights_sha256"]
    retrained = {**part, "model": {**part["model"], "weights_sha256": {**sha, "peagle": {"model.safetensors": "0"}}}}
    with pytest.raises(ValueError, match="different weights"):
        merge_parts([part, retrained])
    assert merge_parts([part, copy.deepcopy(part)])["model"]["weights_sha256"] == sha  # the same model merges


def test_a_windowed_engine_record_runs_the_regime_sweep_only_and_names_its_window(tmp_path):
    from peagle_nb.lab.sweeps.engine_sweep import RecordSettings, main

    with pytest.raises(ValueError, match="--sections none"):
        RecordSettings(ks=(1,), drafter_window=8)
    out = tmp_path / "windowed.json"
    assert main(["--out", str(out), "--limit", "1", "--ks", "3", "--sweeps", "1", "--repeats", "1",
                 "--max-new-tokens", "24", "--sections", "none", "--drafter-window", "8", "--drafter-sinks", "1",
                 "--prompts", "data/prompts/code.jsonl"]) == 0
    doc = read_results(out)
    assert (doc["model"]["drafter_window"], doc["model"]["drafter_sinks"]) == (8, 1)
    assert all(r["lossless"] for r in doc["runs"] if r["method"] != "none")


def test_training_length_rows_set_two_pairs_side_by_side_at_one_length():
    lock = read_results(paths.results_dir() / "family_v3" / "engine_h100_v3_lockstep.json.gz")
    rows = heads_v3.training_length_rows({"256": lock, "again": lock})
    assert len(rows) == 18  # 3 temperatures x 3 sets at 512 tokens, per record
    first, second = rows[:9], rows[9:]
    assert [{k: v for k, v in r.items() if k != "trained_on"} for r in first] == \
        [{k: v for k, v in r.items() if k != "trained_on"} for r in second]
    greedy = {r["prompt_set"]: r for r in first if r["temperature"] == 0}
    # the map's finding, read through this table: greedy, P-EAGLE drafts worse past token 256 on every set
    assert all(r["peagle_tau_after"] < r["peagle_tau_before"] for r in greedy.values())
    assert all(r["p_over_e_tpot_min"] <= r["p_over_e_tpot"] <= r["p_over_e_tpot_max"] for r in rows)
    assert heads_v3.training_length_rows({"256": lock}, tokens=300) == []  # a length the record did not sweep


def test_prefix_reproduced_compares_each_run_prompt_for_prompt():
    def doc(steps_by_sweep):
        return {"regimes": [{"temperature": 0.7, "max_new_tokens": 512, "runs": [
            {"prompt_set": "code", "method": "eagle3", "k": 7, "sweep": s, "steps_per_prompt": st}
            for s, st in enumerate(steps_by_sweep)]}]}

    few = doc([[10, 20], [30, 40]])
    assert heads_v3.prefix_reproduced(few, doc([[10, 20, 5, 6], [30, 40, 7, 8]])) == {"compared": 2, "same": 2}
    # one prompt took another number of steps: that run is not the same; a run the longer sweep lacks is not compared
    assert heads_v3.prefix_reproduced(few, doc([[10, 21, 5, 6]])) == {"compared": 1, "same": 0}


def test_tau_spread_rows_set_fresh_tau_and_loops_beside_tau():
    runs = [{"prompt_set": "ja", "method": "peagle", "k": 7, "tau": t, "tau_fresh": f, "repetition_fraction": rep}
            for t, f, rep in ((3.0, 2.0, 0.5), (2.0, 1.9, 0.1))]
    [row] = heads_v3.tau_spread_rows({"regimes": [{"temperature": 0.7, "max_new_tokens": 512, "runs": runs}]})
    assert (row["tau_min"], row["tau_max"], row["tau_fresh_min"], row["tau_fresh_max"]) == (2.0, 3.0, 1.9, 2.0)
    assert (row["repetition_min"], row["repetition_max"], row["sweeps"]) == (0.1, 0.5, 2)


def test_ladder_extrapolation_is_exact_on_a_log_line_and_names_its_misses():
    import math

    from peagle_nb.compare.heads_v3 import DOMAINS, ladder_extrapolation

    def head(steps, tau):
        return {"steps_cap": steps, "steps_run": steps, "train_seconds": 1.0,
                "acceptance": {d: {"tau": tau} for d in DOMAINS}}

    steps = {"r1": 100, "r3": 300, "r10": 1000}
    doc = {"heads": {**{f"v3-eagle3-{r}": head(s, 2 + 0.5 * math.log(s)) for r, s in steps.items()},
                     **{f"v3-peagle-{r}": head(s, 1 + 0.5 * math.log(s) + (1.0 if r == "r10" else 0.0))
                        for r, s in steps.items()}}}
    rows = ladder_extrapolation(doc)
    e3 = [r for r in rows if r["method"] == "eagle3"]
    pe = [r for r in rows if r["method"] == "peagle"]
    assert all(abs(r["error"]) < 1e-9 and abs(r["slope per e-fold of steps"] - 0.5) < 1e-9 for r in e3)
    assert all(abs(r["error"] + 1.0) < 1e-9 for r in pe)  # the line falls short of the measured rung 10 by 1
    ratio = next(r for r in rows if r["method"] == "peagle / eagle3")
    assert abs(ratio["tau r10"] - (2 + 0.5 * math.log(1000)) / (2 + 0.5 * math.log(1000))) < 1e-9
