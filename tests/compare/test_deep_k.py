"""The deep-K forecast (peagle_nb.compare.deep_k): exact on runs made from a known model, checked on points it was not
fitted to, and what it says about the recorded rung-20 pair (notebook 08's deep-K section)."""

import pytest

from peagle_nb.compare import deep_k
from peagle_nb.compare.acceptance import AcceptanceCurve, geometric_rates
from peagle_nb.files import paths
from peagle_nb.files.results import read_results
from tests.compare import synthetic

FLAT = {"eagle3": AcceptanceCurve(tuple(geometric_rates(0.80, 16)), 0.80, "eagle3"),
        "peagle": AcceptanceCurve(tuple(geometric_rates(0.70, 16)), 0.70, "peagle")}


def _doc(ks=(1, 3, 5, 7, 10, 12), curves=FLAT, **kw) -> dict:
    return {"regimes": [{"temperature": 0.0, "max_new_tokens": 256,
                         "runs": synthetic.runs(ks=ks, curves=curves, **kw)}]}


def test_forecast_is_exact_on_runs_from_a_known_model():
    runs = _doc(ks=(1, 3, 5, 7))["regimes"][0]["runs"]
    fit = deep_k.fit_point(runs)
    t = synthetic.TRUTH
    for m in ("eagle3", "peagle"):
        for k in (2, 7, 12, 16):
            f = deep_k.forecast(fit, m, k)
            assert f["tau"] == pytest.approx(FLAT[m].tau(k), rel=1e-9)
            assert f["step_ms"] == pytest.approx(t.step_ms(m, k), rel=1e-6)
            assert f["tpot_ms"] == pytest.approx(t.step_ms(m, k) / FLAT[m].tau(k), rel=1e-6)


def test_check_rows_sets_the_forecast_beside_runs_it_was_not_fitted_to():
    rows = deep_k.check_rows(_doc(), fit_max_k=5)
    assert {(r["method"], r["k"]) for r in rows} == {(m, k) for m in ("eagle3", "peagle") for k in (7, 10, 12)}
    assert max(abs(r["tau_error"]) for r in rows) < 1e-9 and max(abs(r["tpot_error"]) for r in rows) < 1e-6
    capped = deep_k.check_rows(_doc(), fit_max_k=5, max_k={"peagle": 8})
    assert {r["k"] for r in capped if r["method"] == "peagle"} == {7}
    noisy = deep_k.check_rows(_doc(noise=0.05, seed=3), fit_max_k=5)
    assert 0 < max(abs(r["tau_error"]) for r in noisy) < 0.25  # noise moves it, it does not break it


def test_deep_k_rows_and_the_tail_p_eagle_would_need():
    row = deep_k.deep_k_rows(_doc(ks=(1, 3, 5, 7)))[0]
    assert row["swept_max_k"] == 7 and row["eagle3_tail_alpha"] == pytest.approx(0.80)
    for m in ("eagle3", "peagle"):  # the deep range holds the swept K: a method's best can only get faster
        assert row[f"deep_{m}_tpot_ms"] <= row[f"swept_{m}_tpot_ms"] + 1e-12
    fit = deep_k.fit_point(_doc(ks=(1, 2, 3))["regimes"][0]["runs"])  # measured to depth 3: the tail decides
    rates = fit["peagle"]["curve"].rates
    e3 = deep_k.best_k(fit, "eagle3", deep_k.DEEP_KS)["tpot_ms"]

    def ratio(tail):
        curve = AcceptanceCurve(rates, tail, "what-if", len(rates))
        return e3 / deep_k.best_k(fit, "peagle", deep_k.DEEP_KS, curve)["tpot_ms"]

    goal = (ratio(0.5) + ratio(0.95)) / 2
    need = deep_k.tail_needed(fit, goal)
    assert 0.5 < need < 0.95 and ratio(need) == pytest.approx(goal, rel=1e-6)  # the bisection lands on the goal
    assert deep_k.tail_needed(fit, 100.0) is None  # a goal no tail reaches
    assert row["peagle_tail_needed"] is None  # measured to depth 7, P-EAGLE's 0.7 per depth leaves too little to gain


def test_rung_20_deeper_k_does_not_turn_the_verdict():
    doc = read_results(paths.results_dir() / "family_v3" / "engine_h100_v3_r20.json.gz")
    rows = deep_k.deep_k_rows(doc)
    assert len(rows) == 12 and all(r["swept_max_k"] == 7 for r in rows)
    assert max(r["deep_ratio"] for r in rows) < 1.0  # P-EAGLE behind EAGLE-3 at every point even past K=7
    greedy = {r["prompt_set"]: r for r in rows if r["temperature"] == 0 and r["tokens"] == 256}
    for r in greedy.values():  # greedy, both heads' best K runs past the swept 7, EAGLE-3's tail is the higher
        assert r["deep_eagle3_best_k"] > 7 and r["eagle3_tail_alpha"] > r["peagle_tail_alpha"]
    assert greedy["code"]["peagle_tail_needed"] > greedy["code"]["peagle_tail_alpha"] + 0.05
    assert greedy["ja"]["peagle_tail_needed"] is None and greedy["prose"]["peagle_tail_needed"] is None
    check = deep_k.check_rows(doc, fit_max_k=5)
    assert len(check) == 24 and max(abs(r["tpot_error"]) for r in check) < 0.12


def test_phase_rows_give_each_phase_by_k():
    rows = deep_k.phase_rows(_doc(ks=(3, 7)))
    t = synthetic.TRUTH
    assert [(r["method"], r["k"], r["tokens verified"]) for r in rows] == [
        ("eagle3", 3, 4), ("eagle3", 7, 8), ("peagle", 3, 4), ("peagle", 7, 8)]
    for r in rows:
        assert r["draft_ms"] == pytest.approx(t.draft_ms(r["method"], r["k"], 1))
        assert r["verify_ms"] == pytest.approx(t.verify_ms(r["k"] + 1)) and r["bookkeeping_ms"] == 0.0
    assert deep_k.phase_rows(_doc(ks=(3, 7)), temperature=1.0) == []  # no runs at that temperature


def _served(accepted: dict, steps: dict) -> dict:
    """One greedy point, sweep 0: per (method, K) the drafts each step accepted and each prompt's steps."""
    runs = [{"method": m, "k": k, "prompt_set": "ja", "sweep": 0, "tau": 256 / (sum(steps[m]) / len(steps[m])),
             "accepted_per_step": accepted[m], "steps_per_prompt": steps[m], "step_ms": 2.0 if m == "eagle3" else 1.5,
             "draft_ms_per_step": 0.0, "verify_ms_per_step": 0.0} for m, k in (("eagle3", 4), ("peagle", 4))]
    summary = {"ja": {"eagle3.best_k_tpot": 4, "peagle.best_k_tpot": 4}}
    return {"regimes": [{"temperature": 0.0, "max_new_tokens": 256, "runs": runs, "summary": summary}]}


def test_reach_rows_count_the_steps_that_accepted_each_depth():
    doc = _served({"eagle3": [4, 4, 2, 0], "peagle": [1, 0, 0, 0]}, {"eagle3": [32, 32], "peagle": [64, 64]})
    rows = {r["method"]: r for r in deep_k.reach_rows(doc, 4, depths=(1, 2, 4))}
    assert [rows["eagle3"][f"reach {d}"] for d in (1, 2, 4)] == [0.75, 0.75, 0.5]
    assert [rows["peagle"][f"reach {d}"] for d in (1, 2, 4)] == [0.25, 0.0, 0.0] and rows["peagle"]["steps"] == 4
    with pytest.raises(ValueError, match="past K=4"):
        deep_k.reach_rows(doc, 4)  # the default depths run to 16


def test_prompt_pace_rows_name_the_prompts_where_p_eagle_is_faster_per_token():
    # P-EAGLE's step is 0.75 of EAGLE-3's: it is faster on a prompt when its tau is more than 0.75 of EAGLE-3's
    doc = _served({"eagle3": [4], "peagle": [4]}, {"eagle3": [20, 40, 40], "peagle": [22, 80, 50]})
    rows = deep_k.prompt_pace_rows(doc, 0.0, "ja")
    assert [r["p_over_e_step"] for r in rows] == [0.75] * 3
    assert [round(r["p_over_e_tau"], 3) for r in rows] == [round(20 / 22, 3), 0.5, 0.8]
    assert [r["peagle_ahead"] for r in rows] == [True, False, True]


def test_v3_deep_sweep_verification_steps_up_past_13_tokens():
    doc = read_results(paths.results_dir() / "deep_k" / "engine_h100_v3_deep_k.json.gz")
    rows = deep_k.phase_rows(doc)
    flat = [r["verify_ms"] for r in rows if r["k"] < 16]
    deep = [r["verify_ms"] for r in rows if r["k"] == 16]
    assert max(flat) / min(flat) < 1.05 and min(deep) / max(flat) > 1.2  # flat for 4-13 tokens, a step at 17
    check = deep_k.check_rows(doc, fit_max_k=7)
    assert all(r["tpot_error"] < 0 for r in check if r["k"] == 16)  # the straight line cannot see the step


def test_profiled_rows_forecast_with_a_measured_verification_shape():
    doc = _doc(ks=(1, 3, 5, 7))
    ks = (3, 5, 7, 10, 12, 16)
    t = synthetic.TRUTH

    def tpot(m, k):  # flat verification at the straight line's K=7 value
        return (t.draft_ms(m, k) + t.verify_ms(8)) / FLAT[m].tau(k)

    flat = deep_k.profiled_rows(doc, {k: 1.0 for k in ks})[0]
    best = {m: min(ks, key=lambda k, m=m: tpot(m, k)) for m in ("eagle3", "peagle")}
    assert (flat["eagle3_best_k"], flat["peagle_best_k"]) == (best["eagle3"], best["peagle"])
    assert flat["ratio"] == pytest.approx(tpot("eagle3", best["eagle3"]) / tpot("peagle", best["peagle"]), rel=1e-6)
    steep = deep_k.profiled_rows(doc, {**{k: 1.0 for k in ks}, 16: 10.0})[0]  # a step no best K crosses
    assert steep["eagle3_best_k"] < 16 and steep["peagle_best_k"] < 16
    profile = deep_k.verify_profile(_doc(ks=(3, 7, 12)))
    assert profile[7] == 1.0 and profile[12] == pytest.approx(t.verify_ms(13) / t.verify_ms(8))
    with pytest.raises(ValueError, match="base K=7 was not swept"):
        deep_k.verify_profile(_doc(ks=(3, 5)))
