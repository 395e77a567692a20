import pytest

from peagle_nb.compare.acceptance import AcceptanceCurve, geometric_rates
from peagle_nb.compare.advisor import advise, best_k
from peagle_nb.compare.predict import leave_one_k_out, predict, summarize_errors, sweep
from peagle_nb.compare.step_model import StepCost
from tests.compare import synthetic


def test_plain_decoding_is_the_unit():
    p = predict(synthetic.TRUTH, None, "none", 0, 4)
    assert p["speedup"] == 1.0 and p["tau"] == 1.0
    assert p["tokens_per_s"] == pytest.approx(1000 * 4 / synthetic.TRUTH.baseline_ms(4))


def test_prediction_formula():
    c, curve = synthetic.TRUTH, synthetic.CURVES["peagle"]
    p = predict(c, curve, "peagle", 5, 2)
    step = c.draft_ms("peagle", 5, 2) + c.verify_ms(12)
    assert p["step_ms"] == pytest.approx(step)
    assert p["tokens_per_s"] == pytest.approx(1000 * 2 * curve.tau(5) / step)
    assert p["speedup"] == pytest.approx(curve.tau(5) * c.baseline_ms(2) / step)
    with pytest.raises(ValueError, match="concurrency"):
        predict(c, curve, "peagle", 5, 0)
    with pytest.raises(ValueError, match="acceptance curve"):
        predict(c, None, "eagle3", 3)


def test_sweep_covers_the_grid():
    rows = sweep(synthetic.TRUTH, synthetic.CURVES, [1, 2, 3], [1, 4])
    assert len(rows) == 2 * 3 * 2 and {r["method"] for r in rows} == {"eagle3", "peagle"}


def test_leave_one_k_out_is_exact_on_noiseless_data():
    recs = leave_one_k_out(synthetic.runs(ks=(1, 2, 3, 4, 5, 6)))
    assert len(recs) == 12
    s = summarize_errors(recs)
    assert s["step_max_abs"] < 1e-9
    inner = [r for r in recs if r["k"] < 6]  # K=6 held out needs the tail extrapolation
    assert max(abs(r["tau_rel_error"]) for r in inner) < 1e-9
    assert s["tokens_per_s_mean_abs"] < 0.05


def test_leave_one_k_out_reports_real_errors_on_noisy_data():
    s = summarize_errors(leave_one_k_out(synthetic.runs(noise=0.08, seed=3)))
    assert 0.001 < s["step_mean_abs"] < 0.15


def test_best_k_is_the_argmax():
    c, curve = synthetic.TRUTH, synthetic.CURVES["eagle3"]
    b = best_k(c, curve, "eagle3", 1, range(1, 9))
    brute = max(range(1, 9), key=lambda k: predict(c, curve, "eagle3", k, 1)["tokens_per_s"])
    assert b["k"] == brute


def test_parallel_drafting_favours_deeper_k_and_best_k_falls_with_concurrency():
    # Same acceptance for both methods; the only difference is how drafting scales with K.
    curve = AcceptanceCurve(tuple(geometric_rates(0.8, 16)), 0.8)
    cost = StepCost(v0=10, v1=0.05, e0=1.5, e1=0.01, p0=2.0, p1=0.01)
    rows = advise(cost, {"eagle3": curve, "peagle": curve}, [1, 64, 256], range(1, 16))
    assert rows[0]["peagle_best_k"] > rows[0]["eagle3_best_k"]
    assert rows[0]["peagle_over_eagle3"] > 1
    assert rows[-1]["peagle_best_k"] <= rows[0]["peagle_best_k"]
    assert rows[-1]["peagle_over_eagle3"] < rows[0]["peagle_over_eagle3"]
    assert rows[0]["recommendation"].startswith("peagle K=")


def test_advisor_says_none_when_speculation_does_not_pay():
    curve = AcceptanceCurve((0.05,), 0.05)
    cost = StepCost(v0=1, v1=1, e0=5, e1=0, p0=5, p1=0)
    row = advise(cost, {"eagle3": curve, "peagle": curve}, [1], range(1, 4))[0]
    assert row["recommendation"].startswith("none")


def test_what_if_changes_the_answer_in_the_expected_direction():
    from peagle_nb.compare.published import load_published
    from peagle_nb.compare.scenario import published_scenarios, scale_acceptance, what_if

    scn = published_scenarios(load_published())["MT-Bench"]
    rows = what_if(scn, {
        "EAGLE-3 passes free": {"cost": {"e0": 0.0, "e1": 0.0}},
        "weaker P-EAGLE": {"accept": {"peagle": 0.8}},
    })
    by = {(r["variant"], r["concurrency"]): r for r in rows}
    assert by[("EAGLE-3 passes free", 1)]["eagle3_best_k"] > by[("as fitted", 1)]["eagle3_best_k"]
    assert by[("weaker P-EAGLE", 1)]["peagle_over_eagle3"] < by[("as fitted", 1)]["peagle_over_eagle3"]
    c = scale_acceptance(scn.curves["peagle"], 0.5)
    assert c.tau(7) < scn.curves["peagle"].tau(7)


def test_measured_best_from_end_to_end_runs():
    from peagle_nb.compare.advisor import measured_best

    runs = [{"method": "none", "k": 0, "concurrency": 1, "tokens_per_s": 10.0},
            {"method": "eagle3", "k": 2, "concurrency": 1, "tokens_per_s": 14.0, "tau": 2.1},
            {"method": "eagle3", "k": 4, "concurrency": 1, "tokens_per_s": 12.0},
            {"method": "peagle", "k": 4, "concurrency": 1, "tokens_per_s": 17.5},
            {"method": "peagle", "k": 4, "concurrency": 4, "tokens_per_s": 30.0},
            {"kind": "other"}]
    rows = measured_best(runs)
    assert [r["concurrency"] for r in rows] == [1, 4]
    assert rows[0]["eagle3_best_k"] == 2 and rows[0]["eagle3_tau"] == 2.1
    assert rows[0]["peagle_over_eagle3"] == pytest.approx(1.25)
    assert rows[0]["peagle_speedup"] == pytest.approx(1.75)
    assert "peagle_over_eagle3" not in rows[1]
    assert rows[0]["winner"] == "peagle K=4" and rows[1]["winner"] == "peagle K=4"


def test_tau_cross_check_matches_runs_across_runtimes():
    from peagle_nb.compare.advisor import tau_cross_check

    engine = [{"method": "peagle", "k": 4, "prompt_set": "prose", "tau": 2.5},
              {"method": "none", "k": 0, "prompt_set": "prose", "tau": 1.0}]
    vllm = [{"method": "peagle", "k": 4, "prompt_set": "prose.jsonl", "tau": 2.4, "concurrency": 1},
            {"method": "peagle", "k": 4, "prompt_set": "prose.jsonl", "tau": 2.4, "concurrency": 4},
            {"method": "eagle3", "k": 4, "prompt_set": "prose.jsonl", "tau": 2.0}]
    rows = tau_cross_check(engine, vllm)
    assert len(rows) == 1 and rows[0]["rel_diff"] == pytest.approx(-0.04)


def test_tau_same_prompts_check_pairs_vllm_and_engine_on_the_same_runs():
    from peagle_nb.compare import tau_same_prompts_check

    runs = [
        {"method": "peagle", "k": 4, "concurrency": 1, "prompt_set": "prose", "tau": 2.5, "tau_engine": 2.5},
        {"method": "peagle", "k": 4, "concurrency": 4, "prompt_set": "prose", "tau": 2.5, "tau_engine": 2.5},
        {"method": "eagle3", "k": 3, "concurrency": 1, "prompt_set": "prose", "tau": 2.2, "tau_engine": 2.0},
        {"method": "none", "k": 0, "concurrency": 1, "tokens_per_s": 400.0},
        {"method": "eagle3", "k": 5, "concurrency": 1, "tau": 3.0},  # no engine twin: not compared
    ]
    rows = tau_same_prompts_check(runs)
    assert [(r["method"], r["k"]) for r in rows] == [("peagle", 4), ("eagle3", 3)]
    assert rows[0]["rel_diff"] == 0.0 and abs(rows[1]["rel_diff"] - 0.1) < 1e-12
