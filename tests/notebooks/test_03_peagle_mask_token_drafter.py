"""Notebook 03 in smoke mode: a real step's drafter batch, one pass per step, COD mask and a head trained in the
notebook, acceptance vs EAGLE-3 (fresh vs repeated), cost vs K and step timelines from the lean engine's phases,
placeholder ablation, and each method at its best K from the recorded sweeps."""

import json
import math

import pytest

from peagle_nb.files import paths
from peagle_nb.files.results import read_results
from peagle_nb.analysis import step_phases

NOTEBOOK = "03_peagle_mask_token_drafter.ipynb"
SMOKE_PARAMETERS = {"SMOKE": True, "K_MAX": 8, "COD_ANCHORS": 8, "COD_K": 4, "SPLIT_SEEDS": [0, 1, 2]}

pytestmark = [pytest.mark.notebook, pytest.mark.slow]

RESULTS = ("engine_cpu", "engine_cpu_sampled", "engine_h200")


@pytest.fixture(scope="module")
def rec(run_notebook):
    return run_notebook(NOTEBOOK, **SMOKE_PARAMETERS).records


def test_placeholders_step_input_and_one_pass(rec):
    assert rec["peagle.mask_token_id"] == 2
    assert rec["peagle.mask_hidden_width"] == 3 * 256
    k, acc = rec["peagle.step_input.k"], rec["peagle.step_input.accepted"]
    assert k == 5 and 0 < acc < k  # a real step that kept some drafts and rejected the others
    assert rec["peagle.step_input.rows"] == 2 * k  # [accepted | bonus | <mask> x (K-1) | padding]: always 2K rows
    assert rec["peagle.step_input.n_masked"] == k - 1
    assert rec["peagle.step_input.n_padding"] == k - acc
    assert rec["peagle.step_input.sample_rows"] == list(range(acc, acc + k))  # bonus row, then the mask rows
    p0 = rec["peagle.step_input.first_position"]
    assert rec["peagle.step_input.positions"] == list(range(p0, p0 + acc + k))  # positions keep counting
    assert rec["peagle.step_input.shifted_tokens_match"] is True  # row j carries the token after position j
    assert rec["peagle.step_input.hidden_sources"] == {"target": acc + 1, "mask_hidden": k - 1, "zeros": k - acc}
    assert rec["peagle.step_input.padding_to_spare_slot"] is True
    assert rec["peagle.passes_per_step"] == 1.0  # ONE drafter pass per step


def test_cod_mask_and_training_here(rec):
    kept = rec["peagle.cod.kept_per_depth"]
    assert kept[0] == 8 and kept == sorted(kept, reverse=True) and kept[-1] >= 2  # r_min keeps 20%
    assert 0.0 < rec["peagle.cod.mask_density"] < 1.0
    steps, t = rec["peagle.train.steps"], rec["peagle.train.seq_len"]
    layouts = rec["peagle.train.kept_per_depth"]
    assert steps == 15 and len(layouts) == steps
    # every batch: all T-1 anchors at depth 0, then max(0.7^d, 0.2) of them at depth d
    want = [t - 1] + [math.ceil(max(0.7 ** d, 0.2) * (t - 1)) for d in range(1, 4)]
    assert all(layout == want for layout in layouts)
    assert rec["peagle.train.loss_last_mean"] < rec["peagle.train.loss_first_mean"]  # the loss falls
    assert rec["peagle.train.loss_last"] < rec["peagle.train.loss_first"]
    sees = rec["peagle.train.first_batch.chain_sees"]  # depth d sees its anchor's context + d chain elements
    assert sees == [sees[0] + d for d in range(len(sees))] and len(sees) == 4


def test_acceptance_and_fresh_repeated_split(rec):
    for method in ("peagle", "eagle3"):
        for name in ("prose", "code"):
            assert rec[f"{method}.{name}.lossless"] is True
            rates = rec[f"{method}.{name}.k8.accept_rate_per_position"]
            assert len(rates) == 8 and rates == sorted(rates, reverse=True)
            assert 1.5 < rec[f"{method}.{name}.k7.tau"] <= 8.0  # both trained heads get drafts accepted
            key = f"split.{method}.{name}"
            rep = rec[f"{key}.greedy.repetition_fraction"]
            assert 0.0 <= rep <= 1.0
            tau, fresh, repeated = (rec[f"{key}.greedy.{x}"] for x in ("tau", "fresh_tau", "repeated_tau"))
            share = rec[f"{key}.greedy.repeated_step_fraction"]
            # tau is the step-weighted mean of the two classes (a class without steps has no tau)
            parts = [(1 - share, fresh), (share, repeated)]
            assert tau == pytest.approx(sum(w * v for w, v in parts if w > 0), abs=1e-9)
            assert all(v is None for w, v in parts if w == 0)
            assert len(rec[f"{key}.greedy.accept_rate_per_position"]) == 7
            seeds = rec[f"{key}.sampled.tau_seeds"]
            assert len(seeds) == 3 and all(1.0 <= s <= 8.0 for s in seeds)
            assert rec[f"{key}.sampled.tau_min"] <= rec[f"{key}.sampled.tau_mean"] <= rec[f"{key}.sampled.tau_max"]
            assert 0.0 <= rec[f"{key}.sampled.repetition_fraction_mean"] <= 1.0
    abl = rec["peagle.ablation.tau_k7"]
    assert set(abl) >= {"learned", "zero hidden", "random hidden"}
    # an ordinary token in the mask slots costs a lot; the learned hidden is at least as good as zero/random
    assert rec["peagle.ablation.learned_minus_ordinary_token"] > 0.2
    assert rec["peagle.ablation.learned_minus_best_replacement"] > -0.05
    # the words under the ablation: "swapping the token hurts more than swapping the vector"
    token_loss = rec["peagle.ablation.learned_minus_ordinary_token"]
    assert token_loss > max(abl["learned"] - abl["zero hidden"], abl["learned"] - abl["random hidden"])


def test_cost_vs_k_and_timelines_from_phases(rec):
    h200 = json.loads((paths.results_dir() / "engine_h200.json").read_text())
    for m in ("peagle", "eagle3"):
        per_k = rec[f"cpu.{m}.draft_ms_per_k"]
        assert sorted(per_k, key=int) == [str(k) for k in range(1, 9)] and all(v > 0 for v in per_k.values())
        # the H200 figures are the recorded phases, read back unchanged
        recorded = step_phases.draft_ms_per_k(h200["phases"], m)
        assert rec[f"h200.{m}.draft_ms_per_k"] == {str(k): pytest.approx(v, abs=1e-4) for k, v in recorded.items()}
    split = step_phases.chain_split(h200["phases"])
    assert rec["h200.eagle3.first_pass_ms"] == pytest.approx(split["first_pass_ms"], abs=1e-4)
    assert rec["h200.eagle3.chain_pass_ms"] == pytest.approx(split["chain_pass_ms"], abs=1e-4)
    # recorded on the H200: one P-EAGLE pass is ~flat in K, EAGLE-3's K passes ~linear
    assert rec["h200.peagle.draft_cost_ratio_k7_vs_k1"] <= 1.5
    assert rec["h200.eagle3.draft_cost_ratio_k7_vs_k1"] >= 4.0
    assert rec["h200.draft_breakeven_k"] == step_phases.breakeven_k(h200["phases"])
    assert rec["timeline.h200.peagle.k7.step_ms"] == pytest.approx(
        step_phases.step_ms(step_phases.find_row(h200["phases"], "peagle", 7)), abs=1e-4)
    tau7 = step_phases.tau_at(h200["runs"], "peagle", 7, "prose")
    for where in ("cpu", "h200"):  # tau x plain step / step, from the phases of the same machine
        t = {key: rec[f"timeline.{where}.{key}.step_ms"] for key in ("none", "peagle.k7")}
        assert rec[f"timeline.{where}.none.phases_predict_speedup"] == 1.0
        assert rec[f"timeline.{where}.peagle.k7.phases_predict_speedup"] == pytest.approx(
            tau7 * t["none"] / t["peagle.k7"], rel=2e-3)
    best = h200["summary"]["prose"]
    for m in ("eagle3", "peagle"):
        k = best[f"{m}.best_k"]
        b = step_phases.speedup_breakdown(h200["runs"], h200["phases"], m, k, "prose")
        for key in ("phases", "step_wall", "decode", "end_to_end", "tau_for_2x", "ceiling"):
            assert rec[f"h200.breakdown.{m}.k{k}.{key}"] == pytest.approx(b[key], abs=1e-4)
        # why the 2x target of the lean engine is missed on this tiny target: the heads' tau at their best K is
        # below what a step of these phases needs for 2x (recorded: needs ~3.7 at EAGLE-3's K=3, has ~2.3)
        assert b["tau"] < b["tau_for_2x"] and b["ceiling"] == pytest.approx((k + 1) * 2 / b["tau_for_2x"])
        # the prefill the takeaways quote: the drafter reads the prompt too, a deeper drafter for longer
        assert rec[f"h200.breakdown.{m}.prefill_ms"] == pytest.approx(b["prefill_ms"], abs=1e-4)
        assert b["prefill_ms"] > 0


def test_best_k_from_every_recorded_sweep(rec):
    for tag in RESULTS:  # every engine results file in data/results/ is shown; a missing one is a named skip
        path = paths.results_dir() / f"{tag}.json"
        if not path.is_file():
            assert "not found" in rec[f"skipped.results_{tag}"]
            continue
        assert f"skipped.results_{tag}" not in rec
        summary = json.loads(path.read_text())["summary"]
        for name in ("prose", "code"):
            s = summary[name]
            ratio = rec[f"{tag}.{name}.peagle_over_eagle3"]
            assert ratio == {k: pytest.approx(v, abs=1e-4) for k, v in s["peagle_over_eagle3_at_best_k"].items()}
            assert ratio["min"] <= ratio["median"] <= ratio["max"]
            assert rec[f"{tag}.{name}.verdict"] == s["peagle_over_eagle3_verdict"] == step_phases.verdict(ratio)
            assert rec[f"{tag}.{name}.best_k"] == {"eagle3": s["eagle3.best_k"], "peagle": s["peagle.best_k"]}
            for m in ("eagle3", "peagle"):
                assert rec[f"{tag}.{name}.{m}.speedup_vs_none"]["median"] == pytest.approx(
                    s[f"{m}.speedup_vs_none_at_best_k"]["median"], abs=1e-4)


def test_regimes_long_outputs_and_prefill_from_the_h200_record(rec, repo_root):
    import json

    from peagle_nb.analysis.step_phases import regime_rows

    doc = json.loads((repo_root / "data" / "results" / "engine_h200.json").read_text())
    rows = regime_rows(doc)
    assert rows
    for r in rows:  # the printed verdicts are the file's, regime by regime
        key = f"regime.h200.t{r['temperature']:g}.n{r['tokens']}.{r['prompt_set']}"
        assert rec[f"{key}.tpot_verdict"] == r["tpot_verdict"] and rec[f"{key}.e2e_verdict"] == r["e2e_verdict"]
    # past the heads' training length (256 positions) acceptance falls, for both heads, at both temperatures
    splits = {k: v for k, v in rec.items() if k.endswith(".tau_before_after")}
    assert len(splits) == 12 and all(after < before for before, after in splits.values())
    # prefill captured per length bucket: the drafter's prefill on top of the target's, P-EAGLE's deeper head more
    for ps in ("prose", "code", "ja"):
        assert 0 < rec[f"prefill.h200.{ps}.eagle3.drafter_over_target"] < rec[f"prefill.h200.{ps}.peagle"
                                                                               ".drafter_over_target"] < 1


def test_the_step_model_beside_every_regime_point_and_the_rule_it_states(rec, repo_root):
    import json

    from peagle_nb.compare.regime import predicted_regimes

    pred = predicted_regimes(json.loads((repo_root / "data" / "results" / "engine_h200.json").read_text()))
    assert rec["regime.h200.points"] == len(pred) == 18  # T 0/1 x 64/256/512 tokens x three sets
    assert rec["regime.h200.model_max_abs_error"] < 0.1  # the parts explain every point within 10 %
    assert rec["regime.h200.model_within_spread"] >= len(pred) // 2
    for p in pred:  # the prediction is its two factors' product, and agrees with the verdict where one is faster
        assert p["predicted"] == pytest.approx(p["acceptance_factor"] * p["step_factor"], rel=1e-9)
        if p["verdict"] == "eagle3 faster":
            assert p["predicted"] < 1
    # the rule's words: the step factor is near 1 where both methods pick the same K, so acceptance decides
    same_k = [p for p in pred if p["predicted_k"]["eagle3"] == p["predicted_k"]["peagle"]]
    assert same_k and all(0.9 < p["step_factor"] < 1.1 for p in same_k)



def test_the_v3_map_beside_the_tiny_one_and_the_rule_across_both(rec, repo_root):

    from peagle_nb.compare.regime import predicted_regimes

    v3 = predicted_regimes(read_results(repo_root / "data" / "results" / "family_v3" / "engine_h200_v3.json.gz"))
    assert rec["regime.v3.peagle_faster_points"] == sum(p["measured"] > 1 for p in v3) == 0  # "below 1 everywhere"
    lo, hi = rec["regime.v3.acceptance_factor_range"]
    assert hi < 1 and lo == pytest.approx(min(p["acceptance_factor"] for p in v3), abs=1e-4)
    # "depth moved the step factor the expected way ... but it saves little"
    assert rec["regime.tiny.step_factor_max"] < rec["regime.v3.step_factor_max"] < 1.25
    assert rec["regime.v3.model_max_abs_error"] < 0.2


def test_the_v3_model_errs_mostly_for_peagle_and_agrees_on_every_verdict(repo_root):

    from peagle_nb.compare.regime import predicted_regimes

    v3 = predicted_regimes(read_results(repo_root / "data" / "results" / "family_v3" / "engine_h200_v3.json.gz"))
    assert all(p["predicted"] < 1 for p in v3)  # EAGLE-3's verdict at every point, as measured
    assert sum(p["error"] > 0 for p in v3) > len(v3) / 2  # "mostly erring in P-EAGLE's favour"


def test_the_forecast_of_the_points_the_gpu_did_not_reach(rec):
    from peagle_nb.compare import forecast

    for fam, gpu, cpu in (("tiny", "engine_h200.json", "engine_cpu_regimes.json"),
                          ("v3", "family_v3/engine_h200_v3.json.gz", "family_v3/engine_cpu_v3.json")):
        s = forecast.summarize(forecast.forecast_rows(*(read_results(paths.results_dir() / f)
                                                        for f in (gpu, cpu))))
        assert rec[f"forecast.{fam}.checked_points"] == s["checked_points"]
        assert rec[f"forecast.{fam}.verdicts_consistent"] == s["checked_points"]  # "agrees with its verdict"
        assert rec[f"forecast.{fam}.max_abs_error"] == pytest.approx(s["max_abs_error"], abs=1e-4)
        assert s["max_abs_error"] < 0.1
        # "within a few percent ... sampling noise of a few prompts"
        assert rec[f"forecast.{fam}.cpu_vs_h200_tau_gap"] < 0.2
    # the words: tiny T=0.7 no P-EAGLE win, Japanese EAGLE-3 at both lengths; v3 T=1 about nine tenths, below 1
    tiny = {k: v for k, v in rec.items() if k.startswith("forecast.tiny.T0.7.") and k.endswith(".verdict")}
    assert len(tiny) == 6 and "peagle faster" not in tiny.values()
    assert rec["forecast.tiny.T0.7.n64.ja.verdict"] == rec["forecast.tiny.T0.7.n256.ja.verdict"] == "eagle3 faster"
    assert rec["forecast.tiny.T0.7.n256.prose.verdict"] == "eagle3 faster"
    for ps in ("prose", "code", "ja"):
        assert 0.9 < rec[f"forecast.v3.T1.n256.{ps}.p_over_e_tpot"] < 1
        assert rec[f"forecast.v3.T1.n256.{ps}.verdict"] == "too close to call"
    assert rec["forecast.v3.T0.n256.ja.verdict"] == rec["forecast.v3.T0.7.n256.ja.verdict"] == "eagle3 faster"


def test_the_tiny_t07_points_measured_on_an_h100_against_the_forecast(rec):
    """The H100 record's numbers recompute from the file, and the words hold: no P-EAGLE win at T=0.7 (EAGLE-3 on
    code and Japanese, a tie on prose, at both lengths), one narrow win (greedy prose over 64 tokens, where the two
    heads' tau nearly meet), the card moves only verdicts at the edge, and the CPU-tau forecast's worst point is
    tau's."""
    from peagle_nb.compare import forecast

    h100 = read_results(paths.results_dir() / "engine_h100.json.gz")
    rows = {(r["temperature"], r["tokens"], r["prompt_set"]): r for r in step_phases.regime_rows(h100)}
    assert {(t, n) for t, n, _ in rows} == {(t, n) for t in (0.0, 0.7, 1.0) for n in (64, 256)}
    for (t, n, ps), r in rows.items():
        assert rec[f"regime.h100.t{t:g}.n{n}.{ps}.p_over_e_tpot"] == pytest.approx(r["p_over_e_tpot"], abs=1e-4)
        assert rec[f"regime.h100.t{t:g}.n{n}.{ps}.tpot_verdict"] == r["tpot_verdict"]
    for n in (64, 256):
        t07 = {ps: rec[f"regime.h100.t0.7.n{n}.{ps}.tpot_verdict"] for ps in ("prose", "code", "ja")}
        assert t07 == {"prose": "tie", "code": "eagle3 faster", "ja": "eagle3 faster"}
        assert rows[(0.7, n, "prose")]["p_over_e_tpot_max"] >= 1 > rows[(0.7, n, "prose")]["p_over_e_tpot_min"]
        assert all(rows[(1.0, n, ps)]["tpot_verdict"] == "eagle3 faster" for ps in ("prose", "code", "ja"))
    # "one win, a narrow one": every sweep above 1 but by a few percent, where the heads' tau at K=7 nearly meet
    assert rec["regime.h100.peagle_wins"] == [[0.0, 64, "prose"]]
    win, long = rows[(0.0, 64, "prose")], rows[(0.0, 256, "prose")]
    assert 1 < win["p_over_e_tpot_min"] and win["p_over_e_tpot"] < 1.05 and 1 < win["p_over_e_e2e"] < 1.05
    assert win["e2e_verdict"] == "peagle faster"  # every sweep ahead end to end too
    assert win["peagle_tau_k7"] / win["eagle3_tau_k7"] > 0.9 > 0.75 > long["peagle_tau_k7"] / long["eagle3_tau_k7"]
    # "nearly equal on fresh text at both lengths; most of the text fresh over 64, repeated over 256; EAGLE-3 follows
    # the loops much further": the reason, from the runs the notebook recorded
    short, longer = rec["regime.h100.t0.n64.prose.k7_text"], rec["regime.h100.t0.n256.prose.k7_text"]
    for t in (short, longer):
        assert t["peagle"]["tau_fresh"] / t["eagle3"]["tau_fresh"] > 0.9
    assert short["peagle"]["repetition_fraction"] < 0.5 < longer["peagle"]["repetition_fraction"]
    assert longer["eagle3"]["tau_repeated"] > 1.4 * longer["peagle"]["tau_repeated"]
    assert long["tpot_verdict"] == "eagle3 faster" and max(win["peagle_tpot_speedup"], win["eagle3_tpot_speedup"]) < 1.2
    # "within the printed gap"; the verdicts the card moves are those where one card's spread touches 1
    h200 = {(r["temperature"], r["tokens"], r["prompt_set"]): r for r in step_phases.regime_rows(
        json.loads((paths.results_dir() / "engine_h200.json").read_text()))}
    same, both = rec["regime.h100.card_same_verdicts"]
    assert both == 12 and same == both - len(rec["regime.h100.card_moved_verdicts"]) >= 10
    assert rec["regime.h100.card_gap_max"] < 0.1
    for t, n, ps in rec["regime.h100.card_moved_verdicts"]:
        assert "tie" in (rows[(t, n, ps)]["tpot_verdict"], h200[(t, n, ps)]["tpot_verdict"])
    assert rec["forecast.h100.checked_points"] == 18 == rec["forecast.h100.verdicts_consistent"]
    # "about half": the GPU's own tau halves the largest error
    assert rec["forecast.h100.own_tau_max_abs_error"] < 0.6 * rec["forecast.h100.max_abs_error"]
    assert rec["forecast.h100.worst_point"] == [0.7, 256, "code"]
    w = rec["forecast.h100.worst_point_tau"]  # P-EAGLE's CPU tau above every GPU sweep, EAGLE-3's in their low part
    assert w["peagle"]["cpu"][0] > max(w["peagle"]["gpu"])
    assert min(w["eagle3"]["gpu"]) <= w["eagle3"]["cpu"][0] < sorted(w["eagle3"]["gpu"])[1]
    # the forecast had code level (too close to call), the GPU measured EAGLE-3 faster
    cpu = json.loads((paths.results_dir() / "engine_cpu_regimes.json").read_text())
    fc = {(r["temperature"], r["tokens"], r["prompt_set"]): r for r in forecast.forecast_rows(
        json.loads((paths.results_dir() / "engine_h200.json").read_text()), cpu)}
    assert 0.97 < fc[(0.7, 256, "code")]["forecast"] < 1.1


def test_the_one_tiny_win_holds_in_six_more_sweeps(rec):
    """The re-check (greedy, 64 tokens, 6 more sweeps on the same card): P-EAGLE ahead on prose in every sweep, on
    TPOT and end to end; code and Japanese stay EAGLE-3's, as in the first record."""
    from peagle_nb.files.results import read_results

    doc = read_results(paths.results_dir() / "engine_h100_recheck.json.gz")
    assert doc["machine"]["device"] == "NVIDIA H100 80GB HBM3"
    rows = {r["prompt_set"]: r for r in step_phases.regime_rows(doc)}
    assert all(len(doc["regimes"][0]["summary"][ps]["eagle3.best_k_per_sweep"]) == 6 for ps in rows)
    for ps, r in rows.items():
        assert rec[f"regime.h100_recheck.t0.n64.{ps}.p_over_e_tpot"] == pytest.approx(r["p_over_e_tpot"], abs=1e-4)
    prose = rows["prose"]
    assert prose["p_over_e_tpot_min"] > 1 and prose["p_over_e_tpot"] < 1.1  # "a narrow one"
    assert rec["regime.h100_recheck.t0.n64.prose.verdicts"] == ["peagle faster", "peagle faster"]
    assert rec["regime.h100_recheck.t0.n64.code.verdicts"][0] == "eagle3 faster"
    assert rec["regime.h100_recheck.t0.n64.ja.verdicts"][0] == "eagle3 faster"
    assert rec["regime.h100_recheck.same_verdicts"] is True


def test_the_v3_forecast_verdicts_hold_on_the_complete_h100_map(rec):
    """Every forecast point of family v3 measured on the H100 map (a sibling pair): the verdicts hold; the step-time
    model beside every point; the product of the two factors passes 1 only at ties."""
    from peagle_nb.compare.regime import predicted_regimes
    from peagle_nb.files.results import read_results

    held, total = rec["forecast.v3.verdicts_hold_on_the_h100_map"]
    assert total == 5 == held  # T=1 on three sets, Japanese greedy and at 0.7, all over 256 tokens
    lock = read_results(paths.results_dir() / "family_v3" / "engine_h100_v3_lockstep.json.gz")
    pred = predicted_regimes(lock)
    assert rec["regime.v3_h100.points"] == len(pred) == 27
    assert rec["regime.v3_h100.peagle_faster_points"] == 0
    assert rec["regime.v3_h100.verdicts_where_product_over_1"] == ["tie"]
    assert 1.15 < rec["regime.v3_h100.step_factor_max"] < 1.25  # "at most about a fifth of a step"
    deepest = max(pred, key=lambda r: r["step_factor"])
    assert deepest["predicted_k"]["eagle3"] == 7  # "where EAGLE-3 drafts seven deep"
    assert rec["regime.v3_h100.model_max_abs_error"] == pytest.approx(max(abs(r["error"]) for r in pred), abs=1e-4)
