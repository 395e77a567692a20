"""Notebook 08 in smoke mode: tokens per character, acceptance per domain (greedy + sampled seeds, repetition
fractions, fresh/repeated steps), what an accepted draft is worth, the in-notebook domain-shift pair, the
recorded GPU pair when the file is there, the gated GPT-OSS cell."""

import json

import pytest

from peagle_nb.files import paths
from peagle_nb.files.results import read_results

NOTEBOOK = "08_japanese_and_domain_shift.ipynb"
SMOKE_PARAMETERS = {"SMOKE": True, "K": 7, "SEEDS": [0, 1, 2]}

pytestmark = [pytest.mark.notebook, pytest.mark.slow]


@pytest.fixture(scope="module")
def rec(run_notebook):
    return run_notebook(NOTEBOOK, **SMOKE_PARAMETERS).records


def summary_text(executed_dir):
    """The markdown the executed notebook's last cell ("What we saw") displayed."""
    cells = json.loads((executed_dir / NOTEBOOK).read_text())["cells"]
    return "".join("".join(o.get("data", {}).get("text/markdown", "")) for o in cells[-1]["outputs"])


def test_japanese_costs_more_tokens_per_character(rec):
    for d in ("prose", "code"):
        assert rec["tokenizer.ja.tokens_per_char"] > rec[f"tokenizer.{d}.tokens_per_char"]
    # byte soup (a tokenizer without Japanese merges) is ~3 tokens per character, ~1 byte per token
    if rec["tokenizer.ja_is_byte_soup"]:
        assert rec["tokenizer.ja.tokens_per_char"] > 2.0
    else:
        assert rec["tokenizer.ja.tokens_per_char"] < 1.0
    # with no merges at all a byte-level tokenizer spends one token per UTF-8 byte: kana and kanji are 3 bytes
    assert 2.0 < rec["tokenizer.ja.utf8_bytes_per_char"] <= 3.0
    assert rec["tokenizer.ja.tokens_per_char"] < rec["tokenizer.ja.utf8_bytes_per_char"]


@pytest.mark.parametrize("head", ["eagle3", "peagle"])
@pytest.mark.parametrize("domain", ["prose", "code", "ja"])
def test_acceptance_per_domain_greedy_and_sampled(rec, head, domain):
    key = f"{head}.{domain}"
    assert 1.0 <= rec[f"{key}.greedy.tau"] <= 8.0
    greedy_rates = rec[f"{key}.greedy.accept_rate_per_position"]
    assert len(greedy_rates) == 7 and greedy_rates == sorted(greedy_rates, reverse=True)  # a_k never rises with k
    assert rec[f"{key}.greedy.tau"] == pytest.approx(1 + sum(greedy_rates))  # tau = 1 + sum_k a_k
    assert 0.0 <= rec[f"{key}.greedy.repetition_fraction"] <= 1.0
    seeds = rec[f"{key}.sampled.tau_seeds"]
    assert len(seeds) == 3 and all(1.0 <= t <= 8.0 for t in seeds)
    assert rec[f"{key}.sampled.tau_min"] == min(seeds) and rec[f"{key}.sampled.tau_max"] == max(seeds)
    assert rec[f"{key}.sampled.tau_mean"] == pytest.approx(sum(seeds) / 3)
    rates = rec[f"{key}.sampled.accept_rate_per_position_mean"]
    assert rec[f"{key}.sampled.tau_mean"] == pytest.approx(1 + sum(rates))
    assert 0.0 <= rec[f"{key}.draft_vocab_coverage"] <= 1.0


@pytest.mark.parametrize("head", ["eagle3", "peagle"])
def test_trained_heads_get_sampled_drafts_accepted_on_english_and_code(rec, head):
    for domain in ("prose", "code"):
        assert rec[f"{head}.{domain}.sampled.tau_mean"] > 1.2
        # a 4096-token draft vocabulary out of 8192 (v2 heads): a bound on acceptance per domain
        assert rec[f"{head}.{domain}.draft_vocab_coverage"] > 0.75


@pytest.mark.parametrize("head", ["eagle3", "peagle"])
def test_an_accepted_japanese_draft_moves_the_text_less(rec, head):
    assert rec[f"{head}.ja.sampled.chars_per_step"] < rec[f"{head}.prose.sampled.chars_per_step"]


def test_domain_shift_pair_trained_here(rec):
    with_ja, without = "shift.peagle-small", "shift.peagle-small-no-ja"
    assert rec[f"{with_ja}.steps_run"] == rec[f"{without}.steps_run"] == rec["shift.steps"]  # the same budget
    assert rec[f"{with_ja}.sequences_per_domain"]["ja"] > 0 and rec[f"{without}.sequences_per_domain"]["ja"] == 0
    for d in ("prose", "code"):  # the same English and Python sequences
        assert rec[f"{with_ja}.sequences_per_domain"][d] == rec[f"{without}.sequences_per_domain"][d]
    # a vocabulary chosen without Japanese holds far less of it
    assert rec[f"{without}.ja_draft_vocab_coverage"] < rec[f"{with_ja}.ja_draft_vocab_coverage"] - 0.1
    for head in ("peagle-small", "peagle-small-no-ja"):
        assert len(rec[f"shift.{head}.ja.sampled.tau_seeds"]) == 3
        assert 1.0 <= rec[f"shift.{head}.ja.greedy.tau"] <= rec["shift.k"] + 1
    assert rec["shift.ja.sampled_tau_lost"] == pytest.approx(
        rec["shift.peagle-small.ja.sampled.tau_mean"] - rec["shift.peagle-small-no-ja.ja.sampled.tau_mean"])


def test_recorded_gpu_pair_is_read_when_present(rec):
    recorded = paths.results_dir() / "domain_shift" / "domain_shift.json"
    if recorded.is_file():  # the committed GPU measurement: read, recomputed from its raw runs, recorded
        assert "skipped.domain_shift_recorded" not in rec
        assert rec["recorded.peagle.ja.sampled.tau_mean"] >= 1.0
        # the head that never saw Japanese loses most of its acceptance there (measured: 2.05 -> 1.23 sampled)
        assert rec["recorded.shift.ja.sampled_tau_lost"] > 0.3
    else:
        assert "domain_shift.json" in rec["skipped.domain_shift_recorded"]


def test_gpu_cell_says_why_it_skips(rec):
    assert "NVIDIA GPU" in rec["skipped.gpu_gpt_oss_ja"] and "RUN_GPU=True" in rec["skipped.gpu_gpt_oss_ja"]


def test_corpus_v3_totals_and_the_v3_family_gate(rec):
    from peagle_nb.text import corpus_v3

    manifest = corpus_v3.load_manifest()
    train = sum(t["train"]["tokens"] for t in manifest["totals"].values())
    assert rec["corpus_v3.train_tokens"] == train >= 75_000_000  # the floor: twenty times the tiny corpus
    assert rec["corpus_v3.over_tiny_train_tokens"] >= 20
    reserved = {p.lower() for p in rec["corpus_v3.reserved_packages"]}
    assert {"click", "jinja2", "attrs", "flask", "itsdangerous"} <= reserved
    if (paths.models_dir() / "v3-target" / "training_log.json").is_file():
        assert rec["family_v3.weights_match_card"] is True
    else:  # not in git: the cell says why it is skipped and how to make the folder
        assert "--family v3" in rec["skipped.family_v3"] and "too large for git" in rec["skipped.family_v3"]


def test_v3_training_determinism_is_printed_from_its_record(rec):
    det_path = paths.results_dir() / "family_v3" / "determinism_h200.json"
    if not det_path.is_file():
        assert "determinism --family v3" in rec["skipped.family_v3_determinism"]
        return
    det = json.loads(det_path.read_text())
    a, b = det["runs"].values()
    identical = a["weights_sha256"] == b["weights_sha256"]
    assert det["weights_identical"] is identical and rec["family_v3.gpu_bit_deterministic"] is identical
    worst = max(abs(a["heldout_loss"][d] - b["heldout_loss"][d]) for d in a["heldout_loss"])
    assert rec["family_v3.determinism_heldout_max_abs_diff"] == pytest.approx(worst)
    assert worst < 1e-3  # not the same bytes, the same model: held-out loss agrees to well under a thousandth


def test_v3_retraining_on_an_h100_is_the_same_curve_stopped_earlier(rec):
    """The re-training (same 420 s, another GPU) against the recorded card: outside the tolerance where the lost
    steps moved the curve more than the tolerance allows, within it at a step both runs logged."""
    from peagle_nb.training.target_card import retrain_tolerance

    folder = paths.results_dir() / "family_v3"
    card = json.loads((folder / "target_h200" / "training_log.json").read_text())
    rerun = json.loads((folder / "target_h100" / "training_log.json").read_text())
    assert "H100" in rec["family_v3.retrain.device"] and rerun["train_seconds"] == pytest.approx(420, abs=1)
    assert rec["family_v3.retrain.steps_ratio"] == pytest.approx(rerun["steps_run"] / card["steps_run"], abs=1e-3)
    assert rec["family_v3.retrain.steps_ratio"] < 1 - 0.1  # more steps lost than the card's window allows for
    tol = retrain_tolerance(card)
    outside = []
    for d in ("prose", "code", "ja"):
        diff = rerun["heldout"][d]["bits_per_byte"] - card["heldout"][d]["bits_per_byte"]
        assert rec[f"family_v3.retrain.difference.{d}"] == pytest.approx(diff, abs=1e-4)
        assert 0 < diff < 0.05  # fewer steps: a little higher on every domain
        outside += [d] if abs(diff) > tol[d] else []
    assert rec["family_v3.retrain.outside"] == outside == ["prose", "ja"]
    assert rec["family_v3.retrain.within_all"] is False
    assert rec["family_v3.retrain.equal_step_within_all"] is True
    assert rec["family_v3.retrain.equal_step_gap_max"] < 0.01
    # the card now gives the step-pinned command for another GPU
    assert f"--runs {card['steps_run']} " in (folder / "target_h200" / "model_card.md").read_text()


def test_r3_pair_in_lockstep_keeps_the_gap(rec):
    """Equal steps (the pair alone, in lockstep) on the re-trained target: P-EAGLE's tau is still well below
    EAGLE-3's; the ratio rises over the recorded side-by-side pair's (unequal steps, fewer for P-EAGLE)."""
    folder = paths.results_dir() / "family_v3"
    lock = json.loads((folder / "heads_h100_r3" / "family_heads.json").read_text())
    side = json.loads((folder / "heads_h200" / "family_heads.json").read_text())
    assert rec["family_v3.r3_lockstep.target_is_retrained"] is True
    assert rec["family_v3.r3_lockstep.equal_steps"] is True
    assert side["heads"]["v3-peagle-r3"]["steps_run"] < side["heads"]["v3-eagle3-r3"]["steps_run"]
    def p_over_e(doc, d):
        return (doc["heads"]["v3-peagle-r3"]["acceptance"][d]["tau"]
                / doc["heads"]["v3-eagle3-r3"]["acceptance"][d]["tau"])

    for d in ("prose", "code", "ja"):
        ratio, before = p_over_e(lock, d), p_over_e(side, d)
        assert rec[f"family_v3.r3_lockstep.p_over_e_tau.{d}"] == pytest.approx(ratio, abs=1e-3)
        assert before < ratio < 0.8


def test_the_complete_v3_map_on_the_h100_is_recorded_and_its_words_hold(rec, executed_dir):
    """The lockstep pair's regime map (T = 0, 0.7, 1 x 64, 256, 512 tokens, three sets, 3 sweeps each): every point's
    ratio and verdict recomputed from the record, and each claim of the markdown after it."""
    from peagle_nb.analysis import step_phases
    from peagle_nb.compare import heads_v3
    from peagle_nb.files.results import read_results

    folder = paths.results_dir() / "family_v3"
    lock = read_results(folder / "engine_h100_v3_lockstep.json.gz")
    assert rec["family_v3.h100_map.target_is_retrained"] is True
    assert rec["family_v3.h100_map.heads_are_the_second_run"] is True
    assert rec["family_v3.h100_map.heads_same_data"] is True
    assert rec["family_v3.h100_map.heads_bit_identical"] is False  # "gives other weights"
    assert 0 < rec["family_v3.h100_map.heads_tau_moved_max"] < 0.02  # "within about a percent"
    table = heads_v3.regime_table(lock)
    assert rec["family_v3.h100_map.points"] == len(table) == 27 and rec["family_v3.h100_map.min_sweeps"] == 3
    for r in table:
        key = f"T{r['temperature']:g}.n{r['tokens']}.{r['prompt_set']}"
        assert rec[f"family_v3.h100_map.p_over_e_tpot.{key}"] == pytest.approx(r["p_over_e_tpot"], abs=1e-4)
        assert rec[f"family_v3.h100_map.verdict.{key}"] == r["tpot_verdict"]
    # "no P-EAGLE win at any point; three ties, all over 64 tokens (prose at both sampled temperatures, code at 0.7)"
    assert rec["family_v3.h100_map.peagle_faster_points"] == 0
    assert sorted(map(tuple, rec["family_v3.h100_map.ties"])) == [(0.7, 64, "code"), (0.7, 64, "prose"),
                                                                  (1.0, 64, "prose")]
    assert not any(rec[k] for k in rec if k.startswith("family_v3.h100_map.speed_goal_met."))
    # "greedy ... the step factor favours P-EAGLE; sampled (T=1) it falls to about 1"
    g_lo, _ = rec["family_v3.h100_map.step_factor.greedy"]
    assert g_lo > 1.1
    why = {(w["temperature"], w["tokens"], w["prompt_set"]): w for w in heads_v3.why_rows(lock)}
    assert all(abs(w["step_factor"] - 1) < 0.06 and w["predicted_k"]["eagle3"] == 3
               for k, w in why.items() if k[0] == 1.0)
    assert all(w["predicted_k"] == {"eagle3": 7, "peagle": 7} for k, w in why.items() if k[0] == 0)
    # "P-EAGLE comes closest on prose" (sampled)
    for t in (0.7, 1.0):
        for n in (64, 256, 512):
            ratios = {ps: rec[f"family_v3.h100_map.p_over_e_tpot.T{t:g}.n{n}.{ps}"] for ps in ("prose", "code", "ja")}
            assert max(ratios, key=ratios.get) == "prose"
    # "both heads' speed-up over plain decoding falls" from greedy to T=1
    by = {(r["temperature"], r["tokens"], r["prompt_set"]): r for r in table}
    for (t, n, ps), r in by.items():
        if t == 1.0:
            for m in ("eagle3", "peagle"):
                assert r[f"{m}_tpot_speedup"] < by[(0.0, n, ps)][f"{m}_tpot_speedup"]
    rises = rec["family_v3.h100_map.t1_over_t0_rises"]
    assert len(rises) == 9 and sum(rises.values()) >= 7
    # "reaches the goal only greedy, on code and Japanese"
    goal = heads_v3.CONDITIONAL_GOAL
    met = sorted((t, ps) for t in (0, 0.7) for ps in ("prose", "code", "ja")
                 if rec[f"family_v3.h100_map.served.weakest_2_4.T{t:g}.{ps}.peagle"] >= goal)
    assert met == [(0, "code"), (0, "ja")]
    # "past its training length P-EAGLE drafts worse": greedy and at 0.7 it falls on every set; EAGLE-3 holds or
    # rises on most; at T=1 both fall on code and Japanese and hold on prose
    prefix = "family_v3.h100_map.n512.tau_before_after."
    ba = {k[len(prefix):]: v for k, v in rec.items() if k.startswith(prefix)}
    assert len(ba) == 18
    for t in ("T0", "T0.7"):
        assert all(ba[f"{t}.{ps}.peagle"][1] < 0.9 * ba[f"{t}.{ps}.peagle"][0] for ps in ("prose", "code", "ja"))
    held = [ba[f"{t}.{ps}.eagle3"][1] >= 0.95 * ba[f"{t}.{ps}.eagle3"][0] for t in ("T0", "T0.7")
            for ps in ("prose", "code", "ja")]
    assert sum(held) >= 5
    for m in ("eagle3", "peagle"):
        assert all(ba[f"T1.{ps}.{m}"][1] < 0.92 * ba[f"T1.{ps}.{m}"][0] for ps in ("code", "ja"))
        assert ba[f"T1.prose.{m}"][1] > 0.95 * ba[f"T1.prose.{m}"][0]
    # "greedy text past that point is mostly loops": over 512 tokens at least 3/4 of it lies in repeated 8-grams,
    # so more than half of the last 256 tokens does
    assert all(by[(0.0, 512, ps)]["repetition_k7"] >= 0.75 for ps in ("prose", "code", "ja"))
    greedy = {n: max(rec[f"family_v3.h100_map.p_over_e_tpot.T0.n{n}.{ps}"] for ps in ("prose", "code", "ja"))
              for n in (64, 256, 512)}
    assert greedy[512] < min(greedy[64], greedy[256])  # "the greedy gap is widest over 512 tokens"
    # "the first token costs P-EAGLE a little more at every point ... end to end the verdicts are TPOT's but at ties"
    lo_ttft, hi_ttft = rec["family_v3.h100_map.ttft_p_over_e"]
    assert 1 < lo_ttft <= hi_ttft < 1.15
    assert min(r["peagle_ttft_ms"] / r["eagle3_ttft_ms"] for r in table) == pytest.approx(lo_ttft, abs=1e-3)
    differs = rec["family_v3.h100_map.e2e_verdict_differs"]
    assert len(differs) <= 2 and all(d[3] == "tie" for d in differs)
    # "the model's median error is a few percent; on the measured side of 1 wherever there is a winner"
    assert rec["family_v3.h100_map.model_median_abs_error"] < 0.05
    same, decided = rec["family_v3.h100_map.model_same_side"]
    assert same == decided == 24
    regs = {(r["temperature"], r["max_new_tokens"]) for r in lock["regimes"]}
    assert regs == {(t, n) for t in (0.0, 0.7, 1.0) for n in (64, 256, 512)}
    assert len(step_phases.regime_rows(lock)) == 27
    text = summary_text(executed_dir)
    lo, hi = min(r["p_over_e_tpot"] for r in table), max(r["p_over_e_tpot"] for r in table)
    assert f"27 points of at least 3 sweeps): P-EAGLE faster at 0, a tie at 3, {lo:.2f}-{hi:.2f}x" in text



def test_recorded_v3_target_is_held_to_its_goals_from_the_files(rec):
    from peagle_nb.compare import target_v3

    folder = paths.results_dir() / "family_v3"
    log = json.loads((folder / "target_h200" / "training_log.json").read_text())
    tiny = json.loads((paths.models_dir() / "tiny-target" / "training_log.json").read_text())
    tiny_on_v3 = json.loads((folder / "tiny_target_on_v3_heldout.json").read_text())
    from peagle_nb.models.checksums import weights_sha256

    assert tiny_on_v3["weights_sha256"] == weights_sha256(paths.models_dir() / "tiny-target")  # the shipped one
    rows = target_v3.bits_per_byte_rows(log, tiny, tiny_on_v3)
    ratio = {(r["held-out set"].split()[0], r["domain"]): r["ratio"] for r in rows}
    for (held, d), value in ratio.items():
        assert rec[f"family_v3.recorded.bpb_ratio.{held}.{d}"] == pytest.approx(value, abs=1e-3)
    assert rec["family_v3.recorded.bpb_goal_met"] is all(r["meets goal"] for r in rows)
    # the words of "what the recorded run shows"
    domains = ("prose", "code", "ja")
    assert all(ratio["v3", d] < ratio["v1", d] for d in domains)  # its own corpus's held-out split moved more
    assert all(ratio["v3", d] <= 0.7 for d in domains)  # the goal met there ...
    assert not all(ratio["v1", d] <= 0.7 for d in domains)  # ... and not on the set the goal names
    assert ratio["v1", "code"] < min(ratio["v1", "prose"], ratio["v1", "ja"])  # on v1's, code moved most
    assert rec["family_v3.prose_shakespeare_share"]["train"] < 0.15  # the plays are a small share of v3's prose
    assert log["train_tokens"]["ja"] / sum(log["train_tokens"].values()) < 0.02
    v3_cpu = json.loads((folder / "v3_target_on_cpu.json").read_text())
    assert rec["family_v3.cpu_check_weights_match"] is True  # the CPU check ran the weights the card names
    loops = target_v3.loop_rows(log, tiny_on_v3, v3_cpu)
    assert rec["family_v3.recorded.loop_goal_met"] is all(r["meets goal"] for r in loops)
    for r in loops:
        assert rec[f"family_v3.recorded.greedy_repeated.{r['prompt set']}"] == pytest.approx(r["greedy repeated"],
                                                                                              abs=1e-3)
        assert r["sampled repeated"] < 0.1 < r["greedy repeated"]  # greedy loops, sampled text hardly repeats
    same = {r["prompt set"]: (r["v3 greedy repeated, same check"], r["tiny greedy repeated, same check"])
            for r in loops}
    assert same["prose"][0] > same["prose"][1] and same["code"][0] > same["code"][1]  # more on prose and code,
    assert same["ja"][0] < same["ja"][1]  # less on Japanese
    assert all(v3 > 0.5 and tiny > 0.5 for v3, tiny in same.values())  # "about as much": both far past the goal
    facts = target_v3.training_facts(log)
    assert facts["train_seconds"] <= 900 and facts["device"] == "NVIDIA H200"
    assert rec["family_v3.recorded.h200_peak_share"] == pytest.approx(facts["h200_peak_share"], abs=1e-3)
    assert facts["h200_peak_share"] < 0.1  # "a small share of what the GPU can do"


def test_loops_by_temperature_from_the_file_and_the_words_about_it(rec):
    from peagle_nb.compare import target_v3
    from peagle_nb.models.checksums import weights_sha256

    doc = json.loads((paths.results_dir() / "family_v3" / "loops_by_temperature.json").read_text())
    tiny_c, v3_c = (target_v3.coolest_fresh_temperature(doc, n) for n in ("tiny", "v3"))
    assert rec["family_v3.loops.coolest_fresh_temperature.tiny"] == tiny_c
    assert rec["family_v3.loops.coolest_fresh_temperature.v3"] == v3_c
    assert doc["targets"]["tiny"]["weights_sha256"] == weights_sha256(paths.models_dir() / "tiny-target")
    v3_log = json.loads((paths.results_dir() / "family_v3" / "target_h200" / "training_log.json").read_text())
    assert doc["targets"]["v3"]["weights_sha256"] == v3_log["weights_sha256"]  # the weights the card names
    # "the deeper target needs hotter text": at the tiny target's coolest fresh temperature v3's code loops ~half
    assert tiny_c is not None and v3_c is not None and v3_c > tiny_c
    at = doc["targets"]["v3"]["repeated_share"][f"{tiny_c:g}"]["code"]
    assert 0.3 < at < 0.6 and rec[f"family_v3.loops.v3.T{tiny_c:g}.code"] == pytest.approx(at, abs=1e-3)
    for t in doc["temperatures"]:  # greedy loops, T=1 hardly does, for both targets
        row = {n: doc["targets"][n]["repeated_share"][f"{t:g}"] for n in ("tiny", "v3")}
        if t == 0:
            assert all(v > 0.5 for r in row.values() for v in r.values())
        if t == 1:
            assert all(v < 0.1 for r in row.values() for v in r.values())


def test_pass_cost_prediction_from_the_h200_phases_and_the_words_about_it(rec):
    from peagle_nb.compare import target_v3
    from peagle_nb.models.target import V3_LAYERS

    doc = json.loads((paths.results_dir() / "engine_h200.json").read_text())
    cost = target_v3.pass_cost_prediction(doc, 8, V3_LAYERS)
    for m in ("peagle", "eagle3"):
        assert rec[f"family_v3.pass_ratio_predicted.{m}"] == pytest.approx(cost["pass_ratio"][m], abs=1e-4)
        assert rec[f"family_v3.pass_ratio_goal_met_predicted.{m}"] is cost["meets_goal"][m]
    assert abs(rec["family_v3.pass_cost_check_error"]) < 0.05  # "within a few percent" of the unfitted point
    assert cost["tiny_ratio"]["peagle"] > 0.4  # "about half a target step" on the tiny family
    # "well inside its goal" for P-EAGLE, "just above its own" for EAGLE-3
    assert cost["pass_ratio"]["peagle"] < 0.85 * target_v3.PEAGLE_PASS_GOAL
    assert target_v3.EAGLE3_PASS_GOAL < cost["pass_ratio"]["eagle3"] < 1.25 * target_v3.EAGLE3_PASS_GOAL


def test_v3_heads_and_regime_map_are_printed_from_their_records(rec):
    from peagle_nb.compare import heads_v3, target_v3

    folder = paths.results_dir() / "family_v3"
    engine = read_results(folder / "engine_h200_v3.json.gz")
    heads = heads_v3.merged_heads([json.loads((folder / f / "family_heads.json").read_text())
                                   for f in heads_v3.HEADS_RECORDS])
    cost = heads_v3.measured_pass_costs(engine, target_v3.pass_cost_prediction(
        json.loads((paths.results_dir() / "engine_h200.json").read_text()), 8, 32))
    for m in ("peagle", "eagle3"):
        assert rec[f"family_v3.pass_ratio_measured.{m}"] == pytest.approx(cost[m]["ratio"], abs=1e-4)
        assert rec[f"family_v3.pass_ratio_goal_met.{m}"] is True  # "both cost goals are met"
        assert 0.1 < rec[f"family_v3.pass_ratio_prediction_error.{m}"] < 0.2  # "about a seventh too high"
    assert rec["family_v3.draft_k7_over_k1.peagle"] < 1.1 < 4 < rec["family_v3.draft_k7_over_k1.eagle3"]
    assert rec["family_v3.heads.data_sequences"] == heads["data"]["n_sequences"]
    for r in heads_v3.conditional_rows(heads):
        assert rec[f"family_v3.heads.weakest_conditional.{r['head']}.{r['domain']}"] == pytest.approx(
            r["weakest 2-4"], abs=1e-4)
        if r["head"] in ("v3-peagle-r1", "v3-peagle-r3") and r["domain"] != "ja":  # "under the goal on prose and code"
            assert r["weakest 2-4"] < heads_v3.CONDITIONAL_GOAL
        if r["head"] == "v3-peagle-r10":  # "clears the goal at depths 2-4 on every domain"
            assert r["weakest 2-4"] >= heads_v3.CONDITIONAL_GOAL
    for rung, steps in heads["pair_steps_run"].items():
        assert rec[f"family_v3.heads.pair_steps.{rung}"] == steps
    # the regime map: every measured point is printed with its verdict, and "P-EAGLE loses at every measured point"
    rows = heads_v3.regime_table(engine)
    assert len(rows) >= 6
    for r in rows:
        key = f"T{r['temperature']:g}.n{r['tokens']}.{r['prompt_set']}"
        assert rec[f"family_v3.regime.p_over_e_tpot.{key}"] == pytest.approx(r["p_over_e_tpot"], abs=1e-4)
        assert rec[f"family_v3.regime.verdict.{key}"] == "eagle3 faster"
    assert 1.0 < rec["family_v3.regime.step_factor_max"] < 1.2  # "under a fifth"
    assert rec["family_v3.regime.acceptance_factor_max"] < 0.95  # "up to nine tenths"
    assert rec["family_v3.regime.speed_goal_met.T0"] is False and rec["family_v3.regime.speed_goal_met.T0.7"] is False


def test_the_ladder_cannot_be_extended_by_a_line_and_its_words_hold(rec):
    from peagle_nb.compare import heads_v3

    folder = paths.results_dir() / "family_v3"
    heads = heads_v3.merged_heads([json.loads((folder / f / "family_heads.json").read_text())
                                   for f in heads_v3.HEADS_RECORDS])
    ext = heads_v3.ladder_extrapolation(heads)
    fits = [r for r in ext if r["method"] != "peagle / eagle3"]
    assert rec["family_v3.ladder.fit_max_abs_error"] == pytest.approx(max(abs(r["error"]) for r in fits), abs=1e-4)
    assert rec["family_v3.ladder.fit_max_abs_error"] > 1  # "the lines miss rung 10"
    # "in opposite directions": EAGLE-3's line overshoots on every domain, P-EAGLE's falls short on every domain
    assert rec["family_v3.ladder.eagle3_line_overshoots"] == 3 and rec["family_v3.ladder.peagle_line_falls_short"] == 3
    for r in ext[-3:]:
        got = rec[f"family_v3.ladder.p_over_e_tau.{r['domain']}"]
        assert got == pytest.approx([r["tau r1"], r["tau r3"], r["tau r10"]], abs=1e-4)
        assert got[2] > got[1] < got[0]  # "from rung 3 to rung 10 the gap narrowed ...; from rung 1 to 3 it did not"
    pe10 = heads["heads"]["v3-peagle-r10"]
    rate = pe10["steps_run"] / pe10["train_seconds"]
    assert rec["family_v3.ladder.r10_pair_steps_per_s"] == pytest.approx(rate, abs=1e-3)
    assert 9000 / rate > 3 * pe10["train_seconds"]  # rung 30's training: "more than three times rung 10's"


def test_where_a_training_step_goes_is_printed_from_its_record_and_its_words_hold(rec, executed_dir):
    from peagle_nb.lab.benchmarks import head_train_step as hts

    folder = paths.results_dir() / "family_v3"
    doc = read_results(folder / "head_train_step_h100.json")
    rates = {}
    for L, run in ((256, "heads_h100_r3_rerun"), (512, "heads_h100_s512e_rerun")):
        h = json.loads((folder / run / "family_heads.json").read_text())["heads"]["v3-peagle-r3"]
        rates[L] = h["steps_run"] / h["train_seconds"]
    costs = {r["seq_len"]: r for r in hts.pair_costs(doc, rates)}
    for L, r in costs.items():
        assert rec[f"family_v3.train_step.teacher_share.L{L}"] == pytest.approx(r["teacher share"], abs=1e-4)
        assert 0.45 < r["teacher share"] < 0.55  # "half of every head's step is the teacher"
        got = rec[f"family_v3.train_step.recorded_over_serial_sum.L{L}"]
        assert got == pytest.approx(r["recorded / serial-sum"], abs=1e-4)
        assert 0.85 < got < 1  # "a little under the serial sum's rate": the sum is the model of today's cost
    for L, r in costs.items():  # "each estimate lands within a few percent of the measured median at both lengths"
        for name, key in (("one teacher", "one_teacher"), ("one TF32 teacher", "one_tf32_teacher")):
            got = rec[f"family_v3.train_step.{key}_speedup.L{L}"]
            assert got == pytest.approx([r[f"{name}: speed-up ({w})"] for w in
                                         ("estimate", "measured", "measured, min", "measured, max")], abs=1e-4)
            est, med, lo, hi = got
            assert abs(est / med - 1) < 0.07 and lo <= med <= hi and lo > 1 and r["rounds measured"] >= 3
    # "the 256-position rounds spread widely ...; the 512-position rounds agree to a percent"
    spread = {L: r["one TF32 teacher: speed-up (measured, max)"] / r["one TF32 teacher: speed-up (measured, min)"]
              for L, r in costs.items()}
    assert spread[512] < 1.01 and spread[256] > 1.2
    # "whose soft labels stay within a few thousandths of fp32's"
    tf32 = [v for r in doc["runs"] if r["measures"] == "teacher variants" for v in r["variants"]
            if v["variant"] == "tf32"]
    assert all(v["features_max_abs_diff"] < 0.01 for v in tf32)
    assert rec["family_v3.train_step.tf32_teacher_argmax_agreement_min"] == pytest.approx(
        min(v["argmax_agreement"] for v in tf32), abs=1e-4)
    # "in training ... beats the recorded lockstep pair's by more than the benchmark's median predicts", and rung 30's
    # training "fits in one session's device time beside its data" (1,800 s; the data took ~160 s)
    pe20 = json.loads((folder / "heads_h100_r20" / "family_heads.json").read_text())["heads"]["v3-peagle-r20"]
    rate20 = pe20["steps_run"] / pe20["train_seconds"]
    assert rec["family_v3.train_step.r20_pair_steps_per_s"] == pytest.approx(rate20, abs=1e-3)
    assert rec["family_v3.train_step.r20_over_recorded_lockstep"] == pytest.approx(rate20 / rates[256], abs=1e-4)
    at = costs[256]
    assert rate20 / rates[256] > at["one TF32 teacher: speed-up (measured)"] / at["recorded / serial-sum"]
    assert rec["family_v3.train_step.rung30_seconds_at_r20_rate"] == pytest.approx(9000 / rate20, abs=1)
    assert 9000 / rate20 + 160 < 1800 * 0.7
    # the estimate's check on this CPU, where the pair step was measured too: "falls inside the range"
    cpu = hts.pair_costs(read_results(folder / "head_train_step_cpu.json"), {})[0]
    got = [cpu[f"one teacher: speed-up ({w})"] for w in ("estimate", "measured", "measured, min", "measured, max")]
    assert rec["family_v3.train_step.cpu_one_teacher_speedup"] == pytest.approx(got, abs=1e-4)
    est, med, lo, hi = got
    assert lo <= est <= hi and lo <= med <= hi and lo > 1 and cpu["rounds measured"] >= 3
    cell = next(c for c in json.loads((executed_dir / NOTEBOOK).read_text())["cells"] if c.get("id") == "c35-cost-code")
    printed = "".join("".join(o.get("text", "")) for o in cell["outputs"] if o.get("name") == "stdout")
    assert printed.strip().splitlines()[-1].startswith("the estimate checked on this CPU")  # the words: "the last line"


def test_the_heads_data_loops_more_than_the_eight_prompt_table_said():
    folder = paths.results_dir() / "family_v3"
    data = json.loads((folder / "heads_h200" / "family_heads.json").read_text())["data"]
    loops = json.loads((folder / "loops_by_temperature.json").read_text())["targets"]["v3"]["repeated_share"]
    t = f"{data['sample_temperature']:g}"
    by_domain = data["repetition_fraction"]["by_domain"]
    assert data["repetition_fraction"]["sequences_per_domain"] >= 1000  # "about a thousand sequences per domain"
    assert by_domain["prose"] > 3 * loops[t]["prose"]  # "several times more of its prose"
    assert abs(by_domain["code"] - loops[t]["code"]) < 0.05  # "code is as the table said"


def test_the_summary_says_what_the_v3_family_showed(rec, executed_dir):
    text = summary_text(executed_dir)
    lo = min(v for k, v in rec.items() if k.startswith("family_v3.regime.p_over_e_tpot."))
    hi = max(v for k, v in rec.items() if k.startswith("family_v3.regime.p_over_e_tpot."))
    assert hi < 1  # "not P-EAGLE's win"
    assert "A deeper target makes drafting cheap but not P-EAGLE's win" in text and f"{lo:.2f}-{hi:.2f}x" in text


def test_served_acceptance_and_the_parallel_ceiling_from_their_records(rec, executed_dir):
    from peagle_nb.compare import heads_v3

    folder = paths.results_dir() / "family_v3"
    ceiling = json.loads((folder / "parallel_ceiling.json").read_text())
    for r in heads_v3.ceiling_rows(ceiling):
        assert rec[f"family_v3.ceiling.lowest_2_4.{r['target']}.T{r['temperature']:g}.{r['prompt_set']}"] == \
            pytest.approx(r["lowest"], abs=1e-4)
    assert rec["family_v3.ceiling.goal_room_sets"] == ["code"]  # "out of reach on prose and Japanese"
    assert rec["family_v3.ceiling.points_above.eagle3"] == 6  # "passes the ceiling ... on every set and temperature"
    assert rec["family_v3.served.weakest_2_4.T0.7.prose.peagle"] < heads_v3.CONDITIONAL_GOAL
    text = summary_text(executed_dir)
    assert "no mask slot can reach the goal on prose, ja" in text


def test_the_rung_10_pair_is_printed_from_its_records(rec, executed_dir):
    from peagle_nb.compare import heads_v3

    engine = read_results(paths.results_dir() / "family_v3" / "engine_h200_v3_r10.json.gz")
    for r in heads_v3.regime_table(engine):
        key = f"T{r['temperature']:g}.{r['prompt_set']}"
        assert rec[f"family_v3.r10.p_over_e_tpot.{key}"] == pytest.approx(r["p_over_e_tpot"], abs=1e-4)
        assert rec[f"family_v3.r10.verdict.{key}"] == r["tpot_verdict"]
        assert rec[f"family_v3.r10.sweeps.{key}"] == (3 if r["temperature"] == 0 else 1)
    # the words: "a tie on code ... behind on prose and Japanese"; "at the heads' temperature behind on every set"
    assert rec["family_v3.r10.verdict.T0.code"] == "tie"
    assert rec["family_v3.r10.verdict.T0.prose"] == rec["family_v3.r10.verdict.T0.ja"] == "eagle3 faster"
    assert all(rec[f"family_v3.r10.verdict.T0.7.{ps}"] == "eagle3 faster" for ps in ("prose", "code", "ja"))
    assert rec["family_v3.r10.p_over_e_e2e.T0.prose"] > 1 > rec["family_v3.r10.p_over_e_tpot.T0.prose"]
    assert rec["family_v3.r10.speed_goal_met.T0"] is False and rec["family_v3.r10.speed_goal_met.T0.7"] is False
    for ps in ("prose", "code", "ja"):
        assert rec[f"family_v3.r10.served.weakest_2_4.T0.{ps}.peagle"] >= heads_v3.CONDITIONAL_GOAL
        assert rec[f"family_v3.r10.served.weakest_2_4.T0.7.{ps}.peagle"] < heads_v3.CONDITIONAL_GOAL
    assert rec["family_v3.r10.above_ceiling.T0.7.prose.peagle"] == []  # "on prose under the ceiling at every depth"
    assert rec["family_v3.r10.above_ceiling.T0.7.ja.peagle"] == [3, 4]
    assert rec["family_v3.r10.above_ceiling.T0.7.code.peagle"] == [3]
    assert rec["family_v3.r10.prose_t0.peagle_ahead_on_two_hardest"] is True
    assert rec["family_v3.r10.prose_t0.prompts_peagle_ahead"] < 4  # "on most other prompts EAGLE-3 accepts more"
    text = summary_text(executed_dir)
    greedy = [rec[f"family_v3.r10.p_over_e_tpot.T0.{ps}"] for ps in ("prose", "code", "ja")]
    lo, hi = min(greedy), max(greedy)
    assert f"{lo:.2f}-{hi:.2f}x EAGLE-3 per output token" in text and "still no win" in text


def test_why_past_the_training_length_the_drafter_window_and_its_words_hold(rec, executed_dir):
    """The drafter-window test: every recorded figure recomputed from the record, and each claim of the markdown
    after it (the distance is the cause; the sinks; EAGLE-3; the tiny pair; sampled; the forecast)."""
    from peagle_nb.analysis import drafter_window as dwin
    from peagle_nb.compare.forecast import window_forecast

    folder = paths.results_dir() / "family_v3"
    win = read_results(folder / "drafter_window_cpu.json.gz")
    lock = read_results(folder / "engine_h100_v3_lockstep.json.gz")
    sets = ("prose", "code", "ja")
    # provenance: committed code wrote it, from the map's weights; every tau recomputes from the steps
    assert all(c.startswith("python -m peagle_nb.lab.benchmarks.drafter_window ") for c in win["calls"])
    assert rec["family_v3.window.heads_are_the_maps"] is True
    for r in win["runs"]:
        assert r["tau"] == pytest.approx(1 + sum(r["accepted_per_step"]) / len(r["accepted_per_step"]))
        assert sum(r["steps_per_prompt"]) == len(r["step_fresh"]) and len(r["outputs_sha256"]) == r["n_prompts"] == 8
    assert rec["family_v3.window.greedy_same_text"] is True  # "every configuration writes the same text"
    # the live demo on the tiny pair (smoke: one prompt per set): the same text, and the window lifts tau past 256
    assert rec["family_v3.window.live_same_text"] is True
    for ps in sets:
        assert rec[f"family_v3.window.live.{ps}.peagle.192"][1] > rec[f"family_v3.window.live.{ps}.peagle.all"][1]
    cols = ("before_all", "after_all", "before_window", "after_window", "eagle3_before_all", "eagle3_after_all",
            "eagle3_after_window")
    rows = {(fam, r["prompt_set"]): r for fam in ("v3", "tiny") for r in dwin.recovery(win, fam, 0.0, "peagle", 192)}
    for (fam, ps), r in rows.items():
        assert rec[f"family_v3.window.{fam}.greedy.{ps}"] == pytest.approx([r[c] for c in cols], abs=1e-4)
    ladder = {r["window"]: r for r in dwin.window_ladder(win)}
    for w, r in ladder.items():
        assert rec[f"family_v3.window.ladder.{w}"] == pytest.approx([r[ps] for ps in sets], abs=1e-4)
    for ps in sets:
        v3 = rows[("v3", ps)]
        # "rises on every set with any window of 256 or less, and moves far less with windows of 320 and 384"
        gain = {w: ladder[w][ps] - ladder[None][ps] for w in ladder if w is not None}
        assert all(gain[w] > 0.8 for w in (64, 128, 192, 224, 256))
        assert all(gain[w] < gain[256] / 4 for w in (320, 384))
        # "with the window it accepts more past the edge than before it"
        assert v3["after_window"] > v3["before_window"]
        # "a window hardly moves EAGLE-3's tau past token 256" (v3, greedy)
        assert abs(v3["eagle3_after_window"] / v3["eagle3_after_all"] - 1) < 0.05
        # the tiny pair: "both heads fall past the edge and both come back with the window"
        tiny = rows[("tiny", ps)]
        assert tiny["after_all"] < 0.8 * tiny["before_all"]
        assert tiny["eagle3_after_all"] < 0.9 * tiny["eagle3_before_all"]
        assert tiny["after_window"] > 1.4 * tiny["after_all"]
        assert tiny["eagle3_after_window"] > 1.5 * tiny["eagle3_after_all"]
    # "keeping the first 4 positions brings a large share of the drop back"
    assert all(v >= 0.4 for v in rec["family_v3.window.sinks_bring_back"].values())
    # sampled: "at the heads' temperature the window lifts P-EAGLE's tau past the edge on every set, on fresh text
    # too" and EAGLE-3's ("raises it on every set, on fresh text as well"); "at T=1 the lift is small"
    by = {(r["temperature"], r["prompt_set"], r["method"], r["window"]): r for r in dwin.rows(win)
          if r["family"] == "v3" and r["sinks"] == 0}
    for ps in sets:
        for m in ("peagle", "eagle3"):
            assert by[(0.7, ps, m, 192)]["tau_after"] > by[(0.7, ps, m, None)]["tau_after"]
            assert by[(0.7, ps, m, 192)]["tau_after_fresh"] > by[(0.7, ps, m, None)]["tau_after_fresh"]
        assert abs(by[(1.0, ps, "peagle", 192)]["tau_after"] - by[(1.0, ps, "peagle", None)]["tau_after"]) < 0.25
        for t in (0.7, 1.0):
            want = [by[(t, ps, "peagle", None)]["tau_after_fresh"], by[(t, ps, "peagle", 192)]["tau_after_fresh"]]
            got = [rec[f"family_v3.window.fresh_after.T{t:g}.{ps}.{w}"] for w in ("all", "192")]
            assert got == pytest.approx(want, abs=1e-4)
    # the forecast: recomputed; checked against the map where measured; "narrows the gap over 512 greedy tokens but
    # leaves EAGLE-3 ahead, and nowhere reaches 1.1x"
    four, eight = window_forecast(lock, win, 192, prompts=4), {(r["temperature"], r["prompt_set"]): r
                                                                 for r in window_forecast(lock, win, 192)}
    assert len(four) == 9
    for r in four:
        key = (r["temperature"], r["prompt_set"])
        assert rec[f"family_v3.window.forecast.T{key[0]:g}.{key[1]}"] == pytest.approx(
            [r["forecast_all"], r["measured"], r["forecast_window"], eight[key]["forecast_window"]], abs=1e-4)
        assert r["forecast_window"] < 1.1 and eight[key]["forecast_window"] < 1.1
        if r["temperature"] == 0:
            assert abs(r["error_all"]) < 0.15 and r["measured"] < r["forecast_window"] < 1
            assert eight[key]["forecast_window"] < 1
    text = summary_text(executed_dir)
    assert "- Why: the distance its attention spans." in text


def test_the_512_position_pair_and_the_served_window_and_their_words_hold(rec, executed_dir):
    """The lease that trained the pair on 512-position sequences and served the window: every recorded figure
    recomputed from the records, and each claim of the markdown after it."""
    from peagle_nb.compare import heads_v3
    from peagle_nb.compare.forecast import window_forecast

    folder = paths.results_dir() / "family_v3"
    s512, base, w192, lock = (read_results(folder / f) for f in (
        "engine_h100_v3_s512.json.gz", "engine_h100_v3_s512_baseline.json.gz", "engine_h100_v3_w192.json.gz",
        "engine_h100_v3_lockstep.json.gz"))
    heads512 = json.loads((folder / "heads_h100_s512" / "family_heads.json").read_text())
    heads256 = json.loads((folder / "heads_h100_r3_rerun" / "family_heads.json").read_text())
    sets = ("prose", "code", "ja")
    # provenance: the records name the weights; the new pair saw the map pair's tokens at twice the length
    assert rec["family_v3.s512.names_its_weights"] is True and rec["family_v3.s512.baseline_is_the_maps_pair"] is True
    positions = {n: d["data"]["n_sequences"] * d["data"].get("seq_len", 256) for n, d in (("256", heads256),
                                                                                       ("512", heads512))}
    assert heads512["data"]["seq_len"] == 512 and positions["512"] == positions["256"] == 90112 * 256
    # "21.6 M of them generated, against 20.2 M: fewer prompts"
    assert [round(d["data"]["generated_tokens"] / 1e6, 1) for d in (heads512, heads256)] == [21.6, 20.2]
    assert all(p["generator"].startswith("python -m peagle_nb.lab.sweeps.engine_sweep --device cuda ")
               for doc in (s512, base, w192) for p in doc["parts"])
    # "542 steps ... where the map's pair ran its 900-step cap"
    assert heads512["pair_steps_run"]["r3"] == {"eagle3": 542, "peagle": 542}
    held = {(r["run"], r["domain"]): r for r in heads_v3.pair_rows({"256": heads256, "512": heads512})}
    for (run, ps), r in held.items():
        assert rec[f"family_v3.s512.heldout.{run}.{ps}"] == pytest.approx(
            [r["eagle3 steps"], r["peagle tau"], r["p_over_e_tau"], r["peagle weakest 2-4"]], abs=1e-4)
    for ps in sets:  # "its held-out tau falls more than EAGLE-3's on every set ... well under 0.6"
        new, old = held[("512", ps)], held[("256", ps)]
        assert new["peagle tau"] / old["peagle tau"] < new["eagle3 tau"] / old["eagle3 tau"] < 1
        assert new["peagle weakest 2-4"] < heads_v3.CONDITIONAL_GOAL - 0.15
    rows = heads_v3.training_length_rows({"s256": base, "s512": s512, "map": lock})
    by = {(r["trained_on"], r["temperature"], r["prompt_set"]): r for r in rows}
    for (name, t, ps), r in by.items():
        if t == 0:
            assert rec[f"family_v3.s512.T0.{ps}.{name}"] == pytest.approx(
                [r[c] for c in ("p_over_e_tpot", "peagle_tau_before", "peagle_tau_after", "eagle3_tau_before",
                                "eagle3_tau_after")], abs=1e-4)
        elif t == 0.7 and name != "s256":
            assert rec[f"family_v3.s512.T0.7.{ps}.{name}"] == pytest.approx(
                [r[c] for c in ("p_over_e_tpot", "peagle_tau_before", "peagle_tau_after")], abs=1e-4)
    offset = {ps: by[("map", 0.0, ps)]["p_over_e_tpot"] - by[("s256", 0.0, ps)]["p_over_e_tpot"] for ps in sets}
    assert rec["family_v3.s512.machine_offset"] == pytest.approx(offset, abs=1e-4)
    assert all(0 < v < 0.03 for v in offset.values())  # README: "0.015-0.024 higher"
    for ps in sets:
        new, old = by[("s512", 0.0, ps)], by[("s256", 0.0, ps)]
        # "higher than before it on every set, as EAGLE-3's is, where the 256-position P-EAGLE's falls by 40 % or more"
        assert new["peagle_tau_after"] > new["peagle_tau_before"] and new["eagle3_tau_after"] > new["eagle3_tau_before"]
        assert old["peagle_tau_after"] < 0.6 * old["peagle_tau_before"]
        # "fewer updates cost the new pair acceptance before token 256"; "EAGLE-3 stays faster on every set"
        assert new["peagle_tau_before"] < old["peagle_tau_before"] and new["verdict"] == "eagle3 faster"
        assert by[("s512", 0.7, ps)]["verdict"] == "eagle3 faster"
        # "at T=0.7 likewise (... above its tau before on every set, where the map's P-EAGLE falls)"
        assert by[("s512", 0.7, ps)]["peagle_tau_after"] > by[("s512", 0.7, ps)]["peagle_tau_before"]
        assert by[("map", 0.7, ps)]["peagle_tau_after"] < by[("map", 0.7, ps)]["peagle_tau_before"]
    # "the ratio rises on code and Japanese and falls on prose"
    assert [by[("s512", 0.0, ps)]["p_over_e_tpot"] > by[("s256", 0.0, ps)]["p_over_e_tpot"] for ps in sets] == [
        False, True, True]
    # T=0.7: "up on Japanese and down on prose, within about the two machines' offset on code"
    t07 = {ps: by[("s512", 0.7, ps)]["p_over_e_tpot"] - by[("map", 0.7, ps)]["p_over_e_tpot"] for ps in sets}
    assert t07["ja"] > 0.05 and t07["prose"] < -0.05 and abs(t07["code"]) < max(offset.values())
    # the window served at T=1: "lifts both heads, EAGLE-3 as much as P-EAGLE or more", "moves little (most on
    # Japanese) and stays under 1 on every set"; the forecast "close on Japanese and high on prose and code", "prose,
    # the one point the forecast put above 1, measured below it"
    fc = {r["prompt_set"]: r for r in window_forecast(lock, read_results(folder / "drafter_window_cpu.json.gz"), 192,
                                                      prompts=4, windowed_gpu_doc=w192) if r["temperature"] == 1.0}
    wt = {(r["trained_on"], r["prompt_set"]): r for r in heads_v3.training_length_rows({"all": lock, "192": w192})
          if r["temperature"] == 1.0}
    moved = {ps: fc[ps]["measured_window"] - fc[ps]["measured"] for ps in sets}
    assert max(moved, key=moved.get) == "ja" and all(abs(v) < 0.1 for v in moved.values())
    for ps in sets:
        lift = {m: wt[("192", ps)][f"{m}_tau_after"] - wt[("all", ps)][f"{m}_tau_after"] for m in ("eagle3", "peagle")}
        assert lift["peagle"] > 0 and lift["eagle3"] > lift["peagle"] - 0.05
        assert fc[ps]["measured_window"] < 1
        assert rec[f"family_v3.w192.T1.{ps}"] == pytest.approx(
            [fc[ps][c] for c in ("measured", "forecast_window", "measured_window")]
            + [wt[(w, ps)][f"{m}_tau_after"] for m in ("eagle3", "peagle") for w in ("all", "192")], abs=1e-4)
    assert abs(fc["ja"]["error_window"]) < 0.05
    assert fc["code"]["error_window"] > 0.1 and fc["prose"]["error_window"] > 0.1
    assert fc["prose"]["forecast_window"] > 1 > fc["prose"]["measured_window"]
    assert [ps for ps in sets if fc[ps]["forecast_window"] > 1] == ["prose"]
    text = summary_text(executed_dir)
    assert "- Measured on the GPU: trained on 512-position sequences" in text


def test_the_equal_steps_pair_its_acceptance_and_forecast_and_their_words_hold(rec, executed_dir):
    """The 512-position pair trained again to the map pair's steps: every recorded figure recomputed from the records,
    and each claim of the markdown after it."""
    from peagle_nb.analysis import drafter_window as dwin
    from peagle_nb.compare import heads_v3
    from peagle_nb.compare.forecast import PAIR, pair_forecast

    folder = paths.results_dir() / "family_v3"
    s512, lock = (read_results(folder / f) for f in ("engine_h100_v3_s512.json.gz", "engine_h100_v3_lockstep.json.gz"))
    win, acc = (read_results(folder / f) for f in ("drafter_window_cpu.json.gz", "drafter_window_cpu_s512.json.gz"))
    heads = {n: json.loads((folder / d / "family_heads.json").read_text()) for n, d in (
        ("256", "heads_h100_r3_rerun"), ("512", "heads_h100_s512"), ("512e", "heads_h100_s512e"))}
    sets = ("prose", "code", "ja")
    assert rec["family_v3.s512e.cpu_runs_name_their_weights"] is True and rec["family_v3.s512e.same_data"] is True
    assert rec["family_v3.s512e.steps"] == {"eagle3": 900, "peagle": 900} == heads["256"]["pair_steps_run"]["r3"]
    assert heads["512"]["pair_steps_run"]["r3"] == {"eagle3": 542, "peagle": 542}
    held = {(r["run"], r["domain"]): r for r in heads_v3.pair_rows(heads)}
    for ps in sets:
        new, fewer, map_ = held[("512e", ps)], held[("512", ps)], held[("256", ps)]
        assert rec[f"family_v3.s512e.heldout.{ps}"] == pytest.approx(
            [new["eagle3 steps"], new["eagle3 tau"], new["peagle tau"], new["p_over_e_tau"], new["peagle weakest 2-4"]],
            abs=1e-4)
        # "both heads draft better than at the fewer steps on every held-out set, P-EAGLE most"
        assert new["peagle tau"] / fewer["peagle tau"] > new["eagle3 tau"] / fewer["eagle3 tau"] > 1
        # "P-EAGLE / EAGLE-3 on tau a little above [the map pair's] on every set"
        assert 0 < new["p_over_e_tau"] - map_["p_over_e_tau"] < 0.05
        # "weakest conditional acceptance at depths 2-4 climbs back to the map pair's level"
        assert new["peagle weakest 2-4"] > fewer["peagle weakest 2-4"] + 0.1
        assert abs(new["peagle weakest 2-4"] - map_["peagle weakest 2-4"]) < 0.07
    # "the goal met on code only, as for the map's pair"
    for run in ("512e", "256"):
        assert [ps for ps in sets if held[(run, ps)]["peagle weakest 2-4"] >= heads_v3.CONDITIONAL_GOAL] == ["code"]
    # tau before / after token 256 on this CPU, all three pairs
    families = {"map": ("v3", win), "s512": ("v3-s512", acc), "s512e": ("v3-s512e", acc)}
    edge = {(p, r["temperature"], r["prompt_set"], r["method"]): r for p, (fam, doc) in families.items()
            for r in dwin.rows(doc) if r["family"] == fam and r["window"] is None and r["sinks"] == 0}
    for (p, t, ps, m), r in edge.items():
        if m == "eagle3":
            pe = edge[(p, t, ps, "peagle")]
            got = rec[f"family_v3.s512e.edge.T{t:g}.{ps}.{p}"]
            want = [r["tau_before"], r["tau_after"], pe["tau_before"], pe["tau_after"], pe["repeated_share_after"],
                    r["tau_after_fresh"], pe["tau_after_fresh"]]
            assert [g is None for g in got] == [w is None for w in want]
            assert [g for g in got if g is not None] == pytest.approx([w for w in want if w is not None], abs=1e-4)
    # "after the edge every greedy step on prose and code, and nearly every one on Japanese, starts inside a
    # repeated 8-gram"; "at T=0.7 most steps after the edge start on fresh text (on code about half)"
    for p in families:
        for m in PAIR:
            assert edge[(p, 0.0, "prose", m)]["repeated_share_after"] == edge[(p, 0.0, "code", m)][
                "repeated_share_after"] == 1.0
            assert edge[(p, 0.0, "ja", m)]["repeated_share_after"] > 0.9
        shares = {ps: edge[(p, 0.7, ps, "peagle")]["repeated_share_after"] for ps in sets}
        assert shares["prose"] < 0.3 and shares["ja"] < 0.3 and 0.4 < shares["code"] < 0.65

    def fresh_ratio(p, ps):
        return edge[(p, 0.7, ps, "peagle")]["tau_after_fresh"] / edge[(p, 0.7, ps, "eagle3")]["tau_after_fresh"]

    for ps in sets:  # "both 512-position pairs stand above the map's pair on every set"; "below 1 on every set"
        assert min(fresh_ratio("s512", ps), fresh_ratio("s512e", ps)) > fresh_ratio("map", ps)
        assert max(fresh_ratio(p, ps) for p in families) < 1
    # "the equal-steps pair leads the fewer-steps one on prose only"
    assert [ps for ps in sets if fresh_ratio("s512e", ps) > fresh_ratio("s512", ps)] == ["prose"]

    def after_ratio(p, t, ps):
        return edge[(p, t, ps, "peagle")]["tau_after"] / edge[(p, t, ps, "eagle3")]["tau_after"]

    for ps in sets:  # "accepts more after token 256 than before on every set"; "the highest of the three pairs"
        assert edge[("s512e", 0.0, ps, "peagle")]["tau_after"] > edge[("s512e", 0.0, ps, "peagle")]["tau_before"]
        for t in (0.0, 0.7):
            assert after_ratio("s512e", t, ps) > max(after_ratio("map", t, ps), after_ratio("s512", t, ps))
    # "At T=1 every head's tau stays under two and a half ... and no pair leads on every set"
    assert max(r[k] for (p, t, ps, m), r in edge.items() if t == 1.0 for k in ("tau_before", "tau_after")) < 2.5
    leaders = {max(families, key=lambda p: after_ratio(p, 1.0, ps)) for ps in sets}
    assert len(leaders) > 1
    # the forecast: checks on the served pairs, then the equal-steps pair
    checks = ([dict(r, pair="map") for r in pair_forecast(s512, win, "v3", prompts=4, measured_doc=lock)]
              + [dict(r, pair="s512") for r in pair_forecast(s512, acc, "v3-s512", prompts=4, measured_doc=s512)])
    checks = [r for r in checks if r["measured"] is not None]
    greedy = [r for r in checks if r["temperature"] == 0]
    sampled = [r for r in checks if r["temperature"] > 0]
    assert len(greedy) == 6 and len(sampled) == 9
    assert rec["family_v3.s512e.greedy_tau_cpu_equals_gpu"] is True
    assert all(r[f"{m}_tau"] == r[f"measured_{m}_tau"] for r in greedy for m in PAIR)  # "equals the GPU's exactly"
    err = {k: (min(r["error"] for r in g), max(r["error"] for r in g)) for k, g in (("greedy", greedy),
                                                                                    ("sampled", sampled))}
    for k, v in err.items():
        assert rec[f"family_v3.s512e.forecast_error_range.{k}"] == pytest.approx(list(v), abs=1e-4)
    for r in checks:
        assert rec[f"family_v3.s512e.check.{r['pair']}.T{r['temperature']:g}.{r['prompt_set']}"] == pytest.approx(
            [r["forecast"], r["measured"]], abs=1e-4)
    assert err["greedy"][0] > 0  # "it runs high on all six greedy points"
    assert err["sampled"][0] < 0 < err["sampled"][1] and err["sampled"][1] - err["sampled"][0] > err["greedy"][1] - \
        err["greedy"][0]  # "err both ways and more widely"
    fc = {(r["temperature"], r["prompt_set"]): r for r in pair_forecast(s512, acc, "v3-s512e", prompts=4)}
    band = {}
    for (t, ps), r in fc.items():
        lo, hi = err["greedy" if t == 0 else "sampled"]
        band[(t, ps)] = (r["forecast"] / (1 + hi), r["forecast"] / (1 + lo))
        assert rec[f"family_v3.s512e.forecast.T{t:g}.{ps}"] == pytest.approx(
            [r["eagle3_tau"], r["peagle_tau"], r["forecast"], *band[(t, ps)]], abs=1e-4)
    greedy_top = {ps: band[(0.0, ps)][1] for ps in sets}
    assert max(greedy_top.values()) < 1 and max(greedy_top, key=greedy_top.get) == "code"  # "under 1, code closest"
    measured = {p: {r["prompt_set"]: r["measured"] for r in greedy if r["pair"] == p} for p in ("map", "s512")}
    assert all(fc[(0.0, ps)]["forecast"] > max(measured["map"][ps], measured["s512"][ps]) + 0.05 for ps in sets)
    assert len({round(r["step_factor"], 9) for r in fc.values() if r["temperature"] == 0}) == 1
    # "the bands at T=0.7 and 1 straddle 1 on prose and code"; "only the widest sampled bands (prose) pass [1.10]"
    for t in (0.7, 1.0):
        assert all(band[(t, ps)][0] < 1 < band[(t, ps)][1] for ps in ("prose", "code"))
    assert sorted(k for k, b in band.items() if b[1] >= heads_v3.SPEED_RATIO_GOAL) == [(0.7, "prose"), (1.0, "prose")]
    text = summary_text(executed_dir)
    assert "- At equal steps the 512-position pair drafts before token 256" in text


def test_the_equal_steps_recipe_trained_again_and_served_and_its_words_hold(rec, executed_dir):
    """The whole chain trained again (target, equal-steps pair) and the pair served on an H100: every recorded figure
    recomputed from the records, and each claim of the markdown after it."""
    from peagle_nb.compare import heads_v3, target_v3
    from peagle_nb.compare.forecast import PAIR, pair_forecast

    folder = paths.results_dir() / "family_v3"
    target_first, target_again = (json.loads((folder / d / "training_log.json").read_text())
                                  for d in ("target_h100", "target_h100_rerun"))
    heads = {n: json.loads((folder / d / "family_heads.json").read_text()) for n, d in (
        ("first", "heads_h100_s512e"), ("again", "heads_h100_s512e_rerun"), ("map", "heads_h100_r3_rerun"))}
    served, s512, base512, lock = (read_results(folder / f) for f in (
        "engine_h100_v3_s512e_rerun.json.gz", "engine_h100_v3_s512.json.gz", "engine_h100_v3_s512_baseline.json.gz",
        "engine_h100_v3_lockstep.json.gz"))
    acc_first, acc_again, win = (read_results(folder / f) for f in (
        "drafter_window_cpu_s512.json.gz", "drafter_window_cpu_s512e_rerun.json.gz", "drafter_window_cpu.json.gz"))
    sets = ("prose", "code", "ja")
    assert rec["family_v3.s512e_rerun.records_name_one_set_of_weights"] is True
    assert rec["family_v3.s512e_rerun.new_weights"] is True and rec["family_v3.s512e_rerun.same_recipe"] is True
    # "the same command on the same GPU kind ran a few more steps ... within the card's tolerance on every domain,
    # prose closest to its edge"
    check = target_v3.retraining_check(target_first, target_again)
    assert rec["family_v3.s512e_rerun.target_within_all"] is True is check["within_all"]
    assert check["rerun_device"] == check["recorded_device"] and 1 < check["steps_ratio"] < 1.05
    assert rec["family_v3.s512e_rerun.target_steps"] == [check["recorded_steps"], check["rerun_steps"]]
    for r in check["rows"]:
        assert rec[f"family_v3.s512e_rerun.target.{r['domain']}"] == pytest.approx([r["difference"], r["tolerance"]],
                                                                                  abs=1e-4)
    assert max(check["rows"], key=lambda r: r["difference"] / r["tolerance"])["domain"] == "prose"
    # one recipe, two trainings
    held = {(r["run"], r["domain"]): r for r in heads_v3.pair_rows(heads)}
    for ps in sets:
        a, f = held[("again", ps)], held[("first", ps)]
        assert rec[f"family_v3.s512e_rerun.heldout.{ps}"] == pytest.approx(
            [a["eagle3 tau"], a["peagle tau"], a["p_over_e_tau"], a["peagle weakest 2-4"]], abs=1e-4)
        assert a["p_over_e_tau"] > f["p_over_e_tau"]  # "rises on every set"
    e3 = {ps: held[("again", ps)]["eagle3 tau"] / held[("first", ps)]["eagle3 tau"] for ps in sets}
    pe = {ps: held[("again", ps)]["peagle tau"] / held[("first", ps)]["peagle tau"] for ps in sets}
    assert 0.9 < e3["prose"] < 1 and 0.9 < e3["code"] < 1 and e3["ja"] > 1.05  # "a little worse ... better on ja"
    assert all(abs(pe[ps] - 1) < 0.03 for ps in ("prose", "code")) and pe["ja"] > 1.1  # "much better on Japanese"
    goal = heads_v3.CONDITIONAL_GOAL
    assert [ps for ps in sets if held[("again", ps)]["peagle weakest 2-4"] >= goal] == ["code", "ja"]
    assert [ps for ps in sets if held[("first", ps)]["peagle weakest 2-4"] >= goal] == ["code"]
    # "a training's spread is as large as the differences the sections above compared" (the first training vs the
    # map's pair: 0 to 0.05 on tau's ratio)
    assert max(abs(held[("again", ps)]["p_over_e_tau"] - held[("first", ps)]["p_over_e_tau"]) for ps in sets) > max(
        abs(held[("first", ps)]["p_over_e_tau"] - held[("map", ps)]["p_over_e_tau"]) for ps in sets)
    # served
    table = {(r["temperature"], r["prompt_set"]): r for r in heads_v3.regime_table(served)}
    assert set(table) == {(t, ps) for t in (0.0, 0.7) for ps in sets}
    for (t, ps), r in table.items():
        assert r["sweeps"] == 3
        assert rec[f"family_v3.s512e_rerun.served.T{t:g}.{ps}"] == pytest.approx(
            [r["sweeps"], r["p_over_e_tpot"], r["p_over_e_tpot_min"], r["p_over_e_tpot_max"], r["tpot_verdict"],
             r["p_over_e_e2e"], r["p_over_e_e2e_min"], r["p_over_e_e2e_max"], r["e2e_verdict"],
             r["eagle3_tpot_speedup"], r["peagle_tpot_speedup"], r["eagle3_tau_fresh_k7"], r["peagle_tau_fresh_k7"]],
            abs=1e-4)
        assert min(r["eagle3_tpot_speedup"], r["peagle_tpot_speedup"]) >= 1.5  # "at least 1.5x plain decoding"
        assert r["p_over_e_tpot"] < heads_v3.SPEED_RATIO_GOAL  # "nowhere 1.10x"
    earlier = [r["p_over_e_tpot"] for doc in (s512, base512, lock) for r in heads_v3.regime_table(doc)
               if r["temperature"] == 0 and r["tokens"] == 512]
    for ps in sets:  # greedy: "EAGLE-3 stays faster on every set", "the highest ... every sweep on the same side"
        g = table[(0.0, ps)]
        assert g["tpot_verdict"] == "eagle3 faster" and g["p_over_e_tpot_max"] < 1 and g["p_over_e_tpot"] > max(earlier)
        assert g["repetition_k7"] > 0.85 and g["peagle_tau_fresh_k7"] < g["eagle3_tau_fresh_k7"]  # loops; fresh text
    assert [table[(0.7, ps)]["tpot_verdict"] for ps in sets] == ["tie", "tie", "eagle3 faster"]
    code7 = table[(0.7, "code")]  # "just above 1 on TPOT and end to end, each inside a spread that crosses 1"
    assert 1 < code7["p_over_e_tpot"] < 1.05 and code7["p_over_e_tpot_min"] < 1 < code7["p_over_e_tpot_max"]
    assert code7["p_over_e_e2e"] > 1 and code7["e2e_verdict"] == "tie"
    assert code7["p_over_e_e2e_min"] < 1 < code7["p_over_e_e2e_max"]
    # the forecast on the new pair
    fc = {(r["temperature"], r["prompt_set"]): r for r in pair_forecast(s512, acc_again, "v3-s512e2", prompts=4,
                                                                       measured_doc=served) if r["measured"]}
    assert set(fc) == set(table)  # T=1 was decoded on this CPU, not served
    assert rec["family_v3.s512e_rerun.greedy_tau_cpu_equals_gpu"] is True
    for (t, ps), r in fc.items():
        assert rec[f"family_v3.s512e_rerun.forecast.T{t:g}.{ps}"] == pytest.approx(
            [r["forecast"], r["measured"], r["error"]], abs=1e-4)
        if t == 0:
            assert all(r[f"{m}_tau"] == r[f"measured_{m}_tau"] for m in PAIR)
    greedy_err = [fc[(0.0, ps)]["error"] for ps in sets]
    assert max(abs(e) for e in greedy_err) < 0.05 and sum(e < 0 for e in greedy_err) == 2  # "below zero on two"
    earlier_checks = [r for r in pair_forecast(s512, win, "v3", prompts=4, measured_doc=lock)
                      + pair_forecast(s512, acc_first, "v3-s512", prompts=4, measured_doc=s512)
                      if r["measured"] is not None and r["temperature"] == 0]
    assert min(r["error"] for r in earlier_checks) > 0  # "(always high)"
    assert rec["family_v3.s512e_rerun.in_band"][:3] == [True, False, False]  # (code, ja, prose): "missed them"
    sampled_err = {ps: fc[(0.7, ps)]["error"] for ps in sets}
    assert min(sampled_err.values()) > 0 and max(sampled_err, key=sampled_err.get) == "ja" and sampled_err["ja"] > 0.3
    ja7 = table[(0.7, "ja")]
    assert abs(fc[(0.7, "ja")]["forecast"] - ja7["p_over_e_tpot_max"]) < 0.01  # "a spread whose top is the forecast"
    # "the measured median sits at the bottom of [the] spread"
    lo, mid, hi = (ja7[f"p_over_e_tpot{s}"] for s in ("_min", "", "_max"))
    assert mid - lo < 0.25 * (hi - lo)
    spread = {(r["temperature"], r["prompt_set"], r["method"]): r for r in heads_v3.tau_spread_rows(served)}
    for (t, ps, m), r in spread.items():
        assert rec[f"family_v3.s512e_rerun.tau_k7_range.T{t:g}.{ps}.{m}"] == pytest.approx(
            [r["tau_min"], r["tau_max"], r["sweeps"]], abs=1e-4)
    ja_e3 = spread[(0.7, "ja", "eagle3")]
    assert ja_e3["tau_max"] - ja_e3["tau_min"] > max(1.0, ja7["eagle3_tau_k7"] - ja7["peagle_tau_k7"])
    text = summary_text(executed_dir)
    assert "- The equal-steps recipe trained again from nothing" in text
    assert text.count("- At equal steps the 512-position pair drafts before token 256") == 1


def test_the_retrained_pair_over_eight_prompts_and_at_t1_and_its_words_hold(rec, executed_dir):
    """The re-trained pair served again over 8 prompts per set (T=1, T=0.7, greedy): every recorded figure recomputed
    from the records, and each claim of the markdown after it."""
    from peagle_nb.compare import heads_v3
    from peagle_nb.compare.forecast import pair_forecast

    folder = paths.results_dir() / "family_v3"
    p8, p4, s512 = (read_results(folder / f) for f in (
        "engine_h100_v3_s512e_p8.json.gz", "engine_h100_v3_s512e_rerun.json.gz", "engine_h100_v3_s512.json.gz"))
    acc = read_results(folder / "drafter_window_cpu_s512e_rerun.json.gz")
    sets = ("prose", "code", "ja")
    assert rec["family_v3.s512e_p8.same_weights"] is True and rec["family_v3.s512e_p8.prompts_per_set"] == [8]
    # "every run of the first lease came back step for step as the first 4 prompts of this one, sampled included"
    again = heads_v3.prefix_reproduced(p4, p8)
    assert rec["family_v3.s512e_p8.prefix_reproduced"] == [again["same"], again["compared"]]
    assert again["same"] == again["compared"] == 90  # 2 temperatures x 3 sets x 5 (method, K) x 3 sweeps
    table = {(r["temperature"], r["prompt_set"]): r for r in heads_v3.regime_table(p8)}
    assert set(table) == {(t, ps) for t in (0.0, 0.7, 1.0) for ps in sets}
    for (t, ps), r in table.items():
        assert rec[f"family_v3.s512e_p8.served.T{t:g}.{ps}"] == pytest.approx(
            [r["sweeps"], r["p_over_e_tpot"], r["p_over_e_tpot_min"], r["p_over_e_tpot_max"], r["tpot_verdict"],
             r["p_over_e_e2e"], r["p_over_e_e2e_min"], r["p_over_e_e2e_max"], r["e2e_verdict"],
             r["eagle3_tpot_speedup"], r["peagle_tpot_speedup"], r["eagle3_tau_fresh_k7"], r["peagle_tau_fresh_k7"]],
            abs=1e-4)
        assert r["p_over_e_tpot"] < 1 and r["tpot_verdict"] != "peagle faster"  # "P-EAGLE wins nowhere"
        assert r["sweeps"] == 3  # "3 sweeps each" (T=1's from a later lease)
    four = {(r["temperature"], r["prompt_set"]): r for r in heads_v3.regime_table(p4)}
    for ps in sets:  # greedy: "EAGLE-3 faster on every set and the ratio fell on prose and code"
        assert table[(0.0, ps)]["tpot_verdict"] == "eagle3 faster"
        assert rec[f"family_v3.s512e_p8.four_vs_eight.T0.{ps}"] == pytest.approx(
            [four[(0.0, ps)]["p_over_e_tpot"], table[(0.0, ps)]["p_over_e_tpot"]], abs=1e-4)
    assert all(table[(0.0, ps)]["p_over_e_tpot"] < four[(0.0, ps)]["p_over_e_tpot"] - 0.03 for ps in ("prose", "code"))
    code7 = table[(0.7, "code")]  # "a tie only because one sweep's text favoured P-EAGLE"
    assert code7["tpot_verdict"] == "tie" and code7["p_over_e_tpot"] < 0.9 < 1 < code7["p_over_e_tpot_max"]
    assert four[(0.7, "code")]["p_over_e_tpot"] > 1
    assert [table[(0.7, ps)]["tpot_verdict"] for ps in ("prose", "ja")] == ["eagle3 faster"] * 2
    for ps in sets:  # T=1: "EAGLE-3 faster on every set ... and no sweep of the three reaches 1"
        r = table[(1.0, ps)]
        assert r["tpot_verdict"] == "eagle3 faster" and r["p_over_e_tpot_max"] < 1
    slower = [round(100 * (1 - table[(1.0, ps)]["p_over_e_tpot"])) for ps in sets]  # "by 6-12 % at the median"
    assert (min(slower), max(slower)) == (6, 12)
    goal = heads_v3.PLAIN_SPEEDUP_GOAL  # "at T=1 neither head keeps the margin over plain on every set"
    assert min(table[(1.0, ps)]["eagle3_tpot_speedup"] for ps in sets) < goal
    assert min(table[(1.0, ps)]["peagle_tpot_speedup"] for ps in sets) < goal
    assert all(table[(1.0, ps)][f"{m}_tau_k7"] < 2.5 for ps in sets for m in ("eagle3", "peagle"))  # "tau near 2"
    for t, g in heads_v3.speed_goal(p8).items():
        assert rec[f"family_v3.s512e_p8.speed_goal.T{t:g}"] == [g["peagle_wins"], g["both_over_plain"]]
        assert g["peagle_wins"] == []
    # "why sampled points scatter: loops"
    spread = {(r["temperature"], r["prompt_set"], r["method"]): r for r in heads_v3.tau_spread_rows(p8)}
    for (t, ps, m), r in spread.items():
        if t == 0:
            continue
        assert rec[f"family_v3.s512e_p8.tau_k7_range.T{t:g}.{ps}.{m}"] == pytest.approx(
            [r["tau_min"], r["tau_max"], r["tau_fresh_min"], r["tau_fresh_max"], r["sweeps"]], abs=1e-4)
        if t == 0.7:  # "tau on fresh text moves far less across the same sweeps"
            assert r["tau_fresh_max"] - r["tau_fresh_min"] < r["tau_max"] - r["tau_min"]
        else:  # "at T=1 the text barely loops and tau holds within about a tenth of a token"
            assert r["repetition_max"] < 0.2 and r["tau_max"] - r["tau_min"] <= 0.12
    for m in ("eagle3", "peagle"):  # code at T=0.7: "about half its K=7 steps inside a repeated 8-gram"
        c = spread[(0.7, "code", m)]
        assert 0.4 < c["repetition_min"] and c["repetition_max"] < 0.7
        assert 2 * (c["tau_fresh_max"] - c["tau_fresh_min"]) < c["tau_max"] - c["tau_min"]
    # "two methods sampled with the same seed still write different texts": the repeated share differs within a sweep
    reg7 = next(reg for reg in p8["regimes"] if reg["temperature"] == 0.7)
    k7 = {(r["prompt_set"], r["sweep"], r["method"]): r for r in reg7["runs"] if r["k"] == 7}
    assert any(k7[(ps, s, "eagle3")]["repetition_fraction"] != k7[(ps, s, "peagle")]["repetition_fraction"]
               for ps in sets for s in range(3))
    # the forecast over the same 8 prompts
    fc = {(r["temperature"], r["prompt_set"]): r for r in pair_forecast(s512, acc, "v3-s512e2", prompts=8,
                                                                       measured_doc=p8) if r["measured"]}
    assert set(fc) == set(table)
    for (t, ps), r in fc.items():
        assert rec[f"family_v3.s512e_p8.forecast.T{t:g}.{ps}"] == pytest.approx(
            [r["forecast"], r["measured"], r["error"]], abs=1e-4)
    assert all(0.05 <= fc[(1.0, ps)]["error"] < 0.07 for ps in sets)  # "runs high by 5 to 7 % on every set"
    sampled7 = {ps: fc[(0.7, ps)]["error"] for ps in sets}
    assert min(sampled7.values()) > 0 and max(sampled7, key=sampled7.get) == "ja"  # "still runs high, most on ja"
    ja = fc[(0.7, "ja")]  # "the CPU's own sampled text accepted differently from the GPU's"
    assert abs(ja["eagle3_tau"] - ja["measured_eagle3_tau"]) > 0.2
    text = summary_text(executed_dir)
    assert "- Served again with 8 prompts per set" in text and "ties: T=0.7 code" in text


def test_the_rung_20_pair_its_ladder_and_why_and_its_words_hold(rec, executed_dir):
    from peagle_nb.compare import heads_v3

    folder = paths.results_dir() / "family_v3"
    engine = read_results(folder / "engine_h100_v3_r20.json.gz")
    assert rec["family_v3.r20.swept_the_trained_heads"] is True and rec["family_v3.r20.target_is_the_rerun"] is True
    assert rec["family_v3.r20.pair_steps"] == [6000, 6000]  # equal steps, "twice rung 10's step cap"
    assert rec["family_v3.r20.pair_teacher"] == ["shared", True]
    table = heads_v3.regime_table(engine)
    assert {(r["temperature"], r["tokens"]) for r in table} == {(0.0, 256), (0.7, 256), (1.0, 256), (0.0, 512)}
    for r in table:
        key = f"T{r['temperature']:g}.n{r['tokens']}.{r['prompt_set']}"
        assert rec[f"family_v3.r20.p_over_e_tpot.{key}"] == pytest.approx(
            [r["p_over_e_tpot"], r["p_over_e_tpot_min"], r["p_over_e_tpot_max"]], abs=1e-4)
        assert rec[f"family_v3.r20.sweeps.{key}"] == 3
        assert rec[f"family_v3.r20.verdict.{key}"] == r["tpot_verdict"] == "eagle3 faster"  # "faster per output token"
        assert (r["e2e_verdict"] == "tie") == (key == "T0.7.n256.prose")  # "end to end too, but for one tie"
    n512 = [r["p_over_e_tpot"] for r in table if r["tokens"] == 512]
    assert max(n512) < min(r["p_over_e_tpot"] for r in table if r["tokens"] == 256)  # "over 512 ... widest"
    slow = [(r["temperature"], r["prompt_set"]) for r in table
            if min(r["eagle3_tpot_speedup"], r["peagle_tpot_speedup"]) < heads_v3.PLAIN_SPEEDUP_GOAL]
    assert slow == [(1.0, "prose")]  # "clear the bar over plain decoding on every set but prose at T=1"
    assert not any(v for k, v in rec.items() if k.startswith("family_v3.r20.speed_goal_met."))
    # the ladder, greedy over 256 tokens: "Japanese came closer, code stayed a few percent behind, prose fell back"
    lad = {ps: [rec[f"family_v3.r20.ladder_t0.{ps}.r{n}"] for n in (3, 10, 20)] for ps in ("prose", "code", "ja")}
    assert lad["ja"][2] > lad["ja"][1] and lad["prose"][2] < lad["prose"][1] - 0.05
    assert 0.93 < lad["code"][2] < 1 and abs(lad["code"][2] - lad["code"][1]) < 0.03
    assert all(v < 1 for r in lad.values() for v in r)  # "no rung has P-EAGLE ahead" (TPOT)
    # why: "saves a little over a tenth of EAGLE-3's step at K=7 ... needs tau within a few percent ... greedy it is
    # a seventh to a quarter below"; "the best K is 7 for both"
    why = [r for r in heads_v3.why_rows(engine) if r["temperature"] == 0 and r["tokens"] == 256]
    for r in why:
        got = rec[f"family_v3.r20.why.T0.n256.{r['prompt_set']}"]
        assert got == pytest.approx([r["acceptance_factor"], r["step_factor"]], abs=1e-4)
        assert 1.1 < r["step_factor"] < 1.2 and 0.95 < heads_v3.SPEED_RATIO_GOAL / r["step_factor"] < 1
        assert 1 / 7 - 0.01 < 1 - r["acceptance_factor"] < 0.25 and r["predicted_k"] == {"eagle3": 7, "peagle": 7}
    # "on fresh text alone P-EAGLE's tau is still a tenth to a fifth below EAGLE-3's", under what a win needs
    for r in table:
        if r["temperature"] == 0 and r["tokens"] == 256:
            ratio = r["peagle_tau_fresh_k7"] / r["eagle3_tau_fresh_k7"]
            assert rec[f"family_v3.r20.fresh_tau_ratio_t0.{r['prompt_set']}"] == pytest.approx(ratio, abs=1e-4)
            assert 0.08 < 1 - ratio < 0.21 and ratio < min(heads_v3.SPEED_RATIO_GOAL / w["step_factor"] for w in why)
            assert r["repetition_k7"] > 0.5  # "most of that greedy text lies inside repeated 8-grams"
    # conditional: "served greedily ... clears the goal at depths 2-4 on every set, as in its own held-out evaluation;
    # at the heads' temperature it stays under it on every set (code comes closest)"
    sets = ("prose", "code", "ja")
    assert all(rec[f"family_v3.r20.served.weakest_2_4.T0.{ps}"] >= heads_v3.CONDITIONAL_GOAL for ps in sets)
    assert all(rec[f"family_v3.r20.heldout.peagle_weakest_2_4.{ps}"] >= heads_v3.CONDITIONAL_GOAL for ps in sets)
    # "at depth 1 ... the two heads accept alike greedily (P-EAGLE as often or more on every set); from depth 2 ...
    # EAGLE-3 accepts more on every set"
    served = {(r["prompt_set"], r["method"]): r for r in heads_v3.served_conditional_rows(engine)
              if r["temperature"] == 0}
    for ps in sets:
        pe, e3 = served[(ps, "peagle")], served[(ps, "eagle3")]
        assert pe["depth 1"] >= e3["depth 1"] - 1e-9 and pe["depth 2"] < e3["depth 2"]
    t07 = {ps: rec[f"family_v3.r20.served.weakest_2_4.T0.7.{ps}"] for ps in sets}
    assert max(t07.values()) < heads_v3.CONDITIONAL_GOAL and max(t07, key=t07.get) == "code"
    text = summary_text(executed_dir)
    ratios = [r["p_over_e_tpot"] for r in table]
    assert f"{min(ratios):.2f}-{max(ratios):.2f}x EAGLE-3 per output token over every measured point" in text
    assert "acceptance, not cost, decides" in text
    # the ladder's words: "no rung has P-EAGLE ahead per output token (rung 10's end-to-end lead on greedy prose ...)"
    r10 = read_results(folder / "engine_h200_v3_r10.json.gz")
    e2e_leads = [(r["temperature"], r["prompt_set"]) for doc in (engine, r10) for r in heads_v3.regime_table(doc)
                 if r["tokens"] == 256 and r["e2e_verdict"] == "peagle faster"]
    assert e2e_leads == [(0.0, "prose")]
    assert all(r["tpot_verdict"] != "peagle faster" for r in heads_v3.regime_table(r10))


def test_a_deeper_k_is_forecast_from_the_rung_20_record_and_its_words_hold(rec, executed_dir):
    from peagle_nb.compare import deep_k, heads_v3

    engine = read_results(paths.results_dir() / "family_v3" / "engine_h100_v3_r20.json.gz")
    check = deep_k.check_rows(engine, fit_max_k=5)
    tau_err = [r["tau_error"] for r in check]
    tpot_err = [r["tpot_error"] for r in check]
    assert rec["family_v3.deep_k.check_k5_to_k7.tau_error"] == pytest.approx([min(tau_err), max(tau_err)], abs=1e-4)
    assert rec["family_v3.deep_k.check_k5_to_k7.tpot_error"] == pytest.approx([min(tpot_err), max(tpot_err)], abs=1e-4)
    assert max(abs(e) for e in tpot_err) < 0.1 and max(abs(e) for e in tau_err) < 0.14  # "a tenth ... an eighth"
    rows = deep_k.deep_k_rows(engine)
    for r in rows:
        key = f"T{r['temperature']:g}.n{r['tokens']}.{r['prompt_set']}"
        assert rec[f"family_v3.deep_k.ratio.{key}"] == pytest.approx([r["swept_ratio"], r["deep_ratio"]], abs=1e-4)
        assert rec[f"family_v3.deep_k.best_k.{key}"] == [r["deep_eagle3_best_k"], r["deep_peagle_best_k"]]
        assert r["deep_ratio"] < 1  # "At no point does the forecast put P-EAGLE ahead at K <= 16"
        if r["temperature"] > 0:  # "Sampled, the best K stays between 3 and 11 and the ratio moves by less than 0.01"
            assert abs(r["deep_ratio"] - r["swept_ratio"]) < 0.01
            assert all(3 <= r[f"deep_{m}_best_k"] <= 11 for m in ("eagle3", "peagle"))
    # "EAGLE-3's tail conditional rate is the higher there, as at every point"
    lower = [r for r in rows if r["eagle3_tail_alpha"] <= r["peagle_tail_alpha"]]
    assert lower == []
    greedy = {r["prompt_set"]: r for r in rows if r["temperature"] == 0 and r["tokens"] == 256}
    for r in greedy.values():  # "both heads' best K moves past 7, and EAGLE-3 gains more from it"
        assert r["eagle3_tail_alpha"] > r["peagle_tail_alpha"]
        assert min(r["deep_eagle3_best_k"], r["deep_peagle_best_k"]) > 7
        assert r["deep_eagle3_tau"] - r["swept_eagle3_tau"] > r["deep_peagle_tau"] - r["swept_peagle_tau"]
    assert greedy["code"]["deep_ratio"] > 0.98 and max(r["deep_ratio"] for r in rows if r is not greedy["code"]) < 0.95
    assert greedy["ja"]["deep_ratio"] < greedy["ja"]["swept_ratio"] - 0.05  # "greedy, it widens the gap"
    assert greedy["prose"]["deep_ratio"] < greedy["prose"]["swept_ratio"] - 0.05
    # "a verification over twenty times longer" than one EAGLE-3 pass
    assert 20 < rec["family_v3.deep_k.verify_over_eagle3_pass"] < 30
    # "Only greedy code comes within reach, with a tail several points above its own ... On Japanese and prose, and at
    # every sampled point, no tail is enough"
    code = greedy["code"]
    assert rec["family_v3.deep_k.tail_needed.T0.n256.code"] == pytest.approx(code["peagle_tail_needed"], abs=1e-4)
    assert 0.04 < code["peagle_tail_needed"] - code["peagle_tail_alpha"] < 0.1
    assert all(r["peagle_tail_needed"] is None for r in rows if r is not code)
    assert heads_v3.SPEED_RATIO_GOAL == 1.10
    ratios = [r["deep_ratio"] for r in rows]
    higher = len(rows) - len(lower)
    assert (f"P-EAGLE reaches {min(ratios):.2f}-{max(ratios):.2f}x EAGLE-3; EAGLE-3's tail conditional rate is the "
            f"higher at {higher} of {len(rows)} points" in summary_text(executed_dir))


def test_the_deep_k_forecast_is_checked_past_k7_on_the_tiny_familys_gpu_sweep(rec):
    from peagle_nb.compare import deep_k
    from peagle_nb.models.checksums import weights_sha256

    doc = read_results(paths.results_dir() / "deep_k" / "engine_h100_tiny_deep_k.json.gz")
    for m in ("target", "eagle3", "peagle"):  # measured with the shipped weights
        assert doc["model"]["weights_sha256"][m] == weights_sha256(paths.models_dir() / f"tiny-{m}")
    assert doc["model"]["heads"]["peagle"]["trained_k"] == 8
    check = deep_k.check_rows(doc, fit_max_k=7, max_k={"peagle": 8})
    e3 = [r for r in check if r["method"] == "eagle3"]
    assert sorted({r["k"] for r in e3}) == [8, 10, 12, 16] and len(e3) == 24
    assert {r["k"] for r in check if r["method"] == "peagle"} == {8}
    for m in ("eagle3", "peagle"):
        mine = [r for r in check if r["method"] == m]
        assert rec[f"family_v3.deep_k.tiny_check.{m}.tau_error"] == pytest.approx(
            [min(r["tau_error"] for r in mine), max(r["tau_error"] for r in mine)], abs=1e-4)
    # "sets EAGLE-3's tau at K = 8-16 within a few percent, and its time per output token mostly slower than measured"
    assert max(abs(r["tau_error"]) for r in e3) < 0.07
    assert sum(r["tpot_error"] > 0 for r in e3) > 0.75 * len(e3) and min(r["tpot_error"] for r in e3) > -0.05
    # "P-EAGLE's slots past the 8 it was trained for accepted nothing"
    reached, beyond = rec["family_v3.deep_k.tiny_peagle_past_trained"]
    assert reached > 0 and beyond == 0
    # "neither head's best K lies past P-EAGLE's trained depth, and EAGLE-3 stays faster at every point"
    assert max(rec["family_v3.deep_k.tiny_best_k_max"]) <= 8 and rec["family_v3.deep_k.tiny_p_over_e_tpot"][1] < 1
    verdicts = {s["peagle_over_eagle3_tpot_verdict"] for reg in doc["regimes"] for s in reg["summary"].values()}
    assert verdicts == {"eagle3 faster"}


def test_deep_k_measured_on_v3_with_a_head_trained_to_16_slots_and_its_words_hold(rec, executed_dir):
    """The v3 lease with P-EAGLE trained to 16 slots and K swept to 16: every recorded figure recomputed from the
    records, and each claim of the findings and the summary line."""
    from peagle_nb.compare import deep_k, heads_v3, target_v3

    folder = paths.results_dir() / "deep_k"
    doc = read_results(folder / "engine_h100_v3_deep_k.json.gz")
    assert {m: h["trained_k"] for m, h in doc["model"]["heads"].items()} == {"eagle3": 7, "peagle": 16}
    heads16 = json.loads((folder / "v3_k16" / "family_heads.json").read_text())
    for m, name in (("eagle3", "v3-eagle3-r3"), ("peagle", "v3-peagle-r3")):  # the record names the trained weights
        assert doc["model"]["weights_sha256"][m] == heads16["heads"][name]["weights_sha256"]
    assert doc["model"]["weights_sha256"]["target"] == heads16["target_weights_sha256"]
    table = heads_v3.regime_table(doc)
    assert len(table) == 6 and min(r["sweeps"] for r in table) == 3
    for r in table:
        key = f"T{r['temperature']:g}.{r['prompt_set']}"
        assert rec[f"family_v3.deep_k.v3.p_over_e.{key}"] == pytest.approx([r["p_over_e_tpot"], r["p_over_e_e2e"]],
                                                                            abs=1e-4)
        assert rec[f"family_v3.deep_k.v3.verdict.{key}"] == [r["tpot_verdict"], r["e2e_verdict"]]
    # "EAGLE-3 is faster end to end at every point, and the speed goal is met nowhere"
    assert {r["e2e_verdict"] for r in table} == {"eagle3 faster"}
    assert [rec[f"family_v3.deep_k.v3.speed_goal_met.T{t}"] for t in ("0", "0.7")] == [False, False]
    # "the one point where P-EAGLE leads on median TPOT, greedy Japanese, is the loops"
    leads = [(r["temperature"], r["prompt_set"]) for r in table if r["tpot_verdict"] == "peagle faster"]
    assert leads == [(0.0, "ja")]
    pace = deep_k.prompt_pace_rows(doc, 0.0, "ja")
    ahead = [r for r in pace if r["peagle_ahead"]]
    assert rec["family_v3.deep_k.v3.prompts_ahead.T0.ja"] == pytest.approx(
        [len(ahead), len(pace), min(r["eagle3_tau"] for r in ahead)], abs=1e-4)
    k = ahead[0]["eagle3_k"]
    assert len(ahead) > len(pace) / 2 and min(r["eagle3_tau"] for r in ahead) > 0.85 * (k + 1)  # nearly every draft
    assert {r["prompt"] for r in ahead} == {r["prompt"] for r in pace
                                            if r["eagle3_tau"] >= min(a["eagle3_tau"] for a in ahead)}
    assert max(r["p_over_e_tau"] for r in pace if not r["peagle_ahead"]) < 0.5  # "far slower on the others"
    # "at K = 10 and 12 it stays within a fifth on tau and a sixth on time per output token; at K=16 it is faster
    # than measured at every point"
    check = deep_k.check_rows(doc, fit_max_k=7)
    mid, deep = [r for r in check if r["k"] < 16], [r for r in check if r["k"] == 16]
    assert len(mid) == 24 and len(deep) == 12
    assert max(abs(r["tau_error"]) for r in mid) < 0.2 and max(abs(r["tpot_error"]) for r in mid) < 1 / 6
    assert all(r["tpot_error"] < 0 for r in deep)
    for label, part in (("k_10_12", mid), ("k_16", deep)):
        assert rec[f"family_v3.deep_k.v3_check.{label}.tpot_error"] == pytest.approx(
            [min(r["tpot_error"] for r in part), max(r["tpot_error"] for r in part)], abs=1e-4)
    # "verification costs the same for 4 to 13 tokens and close to a third more for 17, on the tiny family's too"
    for name, key in (("engine_h100_v3_deep_k.json.gz", "v3_verify_ms"), ("engine_h100_tiny_deep_k.json.gz",
                                                                          "tiny_verify_ms")):
        ph = deep_k.phase_rows(read_results(folder / name))
        flat = [r["verify_ms"] for r in ph if r["k"] < 16]
        at16 = [r["verify_ms"] for r in ph if r["k"] == 16]
        assert rec[f"family_v3.deep_k.{key}"] == pytest.approx([min(flat), max(flat), min(at16), max(at16)], abs=1e-4)
        assert max(flat) / min(flat) < 1.05 and 1.25 < min(at16) / max(flat) and max(at16) / min(flat) < 1.4
        assert min(r["verify_ms_min"] for r in ph if r["k"] == 16) > max(r["verify_ms_max"] for r in ph if r["k"] < 16)
    # "forecast again with the verification measured at the swept K, the rung-20 pair's best K stays at 12 or less and
    # P-EAGLE still reaches a tie at most"
    r20 = read_results(paths.results_dir() / "family_v3" / "engine_h100_v3_r20.json.gz")
    profiled = deep_k.profiled_rows(r20, deep_k.verify_profile(doc))
    assert rec["family_v3.deep_k.r20_profiled_ratio"] == pytest.approx(
        [min(r["ratio"] for r in profiled), max(r["ratio"] for r in profiled)], abs=1e-4)
    assert max(max(r["eagle3_best_k"], r["peagle_best_k"]) for r in profiled) <= 12
    assert 0.99 < max(r["ratio"] for r in profiled) < 1.0
    # "served at K=16 its drafts past depth 8 are accepted almost only on greedy Japanese ... EAGLE-3's chain reaches
    # depth 8 on at least three times P-EAGLE's share of greedy steps on every set"
    reach = {(r["temperature"], r["prompt_set"], r["method"]): r for r in deep_k.reach_rows(doc, 16)}
    assert [key[:2] for key, r in reach.items() if key[2] == "peagle" and r["reach 8"] > 0.05] == [(0.0, "ja")]
    for ps in ("prose", "code", "ja"):
        assert reach[(0.0, ps, "eagle3")]["reach 8"] >= 3 * reach[(0.0, ps, "peagle")]["reach 8"]
    # "at equal steps the P-EAGLE trained to 16 slots holds a smaller share of EAGLE-3's tau on prose and code than
    # the two pairs trained to 8 (on Japanese about the same), and its weakest conditional acceptance at depths 2-4
    # falls; EAGLE-3 on the same target is where it was, or a little above"
    fv3 = paths.results_dir() / "family_v3"
    pairs = heads_v3.pair_rows({"16": heads16, **{d: json.loads((fv3 / d / "family_heads.json").read_text())
                                                  for d in ("heads_h100_r3", "heads_h100_r3_rerun")}})
    by = {(r["run"], r["domain"]): r for r in pairs}
    for d in ("prose", "code", "ja"):
        deep16, eights = by[("16", d)], [by[(run, d)] for run in ("heads_h100_r3", "heads_h100_r3_rerun")]
        assert all(r["eagle3 steps"] == r["peagle steps"] == 900 for r in (deep16, *eights))
        assert deep16["peagle weakest 2-4"] < min(r["peagle weakest 2-4"] for r in eights)
        assert deep16["eagle3 tau"] > 0.99 * max(r["eagle3 tau"] for r in eights)
        share = [r["p_over_e_tau"] for r in eights]
        assert rec[f"family_v3.deep_k.v3_trained16.{d}"] == pytest.approx([deep16["p_over_e_tau"], *sorted(share)],
                                                                          abs=1e-4)
        if d == "ja":
            assert abs(deep16["p_over_e_tau"] - min(share)) < 0.02
        else:
            assert deep16["p_over_e_tau"] < min(share) - 0.05
    # the lease's target: a re-training from nothing, within the card's tolerance
    check_t = target_v3.retraining_check(json.loads((fv3 / "target_h100" / "training_log.json").read_text()),
                                         json.loads((folder / "v3_k16" / "training_log.json").read_text()))
    assert rec["family_v3.deep_k.v3_target_within"] is True is check_t["within_all"]
    assert heads16["target_weights_sha256"] == json.loads((folder / "v3_k16" / "training_log.json").read_text())[
        "weights_sha256"]
    assert "- Measured on v3 with P-EAGLE trained to 16 slots" in summary_text(executed_dir)
