"""The family-v3 target's report: bits per byte against the tiny target on both held-out sets, the loop check,
and the recorded H200 run read back (notebook 08, section 7)."""

import json

import pytest

from peagle_nb.compare import target_v3
from peagle_nb.files import paths


def _log(bpb: dict, v3: dict | None = None, greedy: float = 0.5) -> dict:
    log = {"heldout": {d: {"bits_per_byte": b} for d, b in bpb.items()},
           "continuations": {"prose": {"max_new_tokens": 256, "greedy": {"repetition_fraction": greedy},
                                       "sampled": {"repetition_fraction": 0.02}}}}
    if v3 is not None:
        log["heldout_v3"] = {d: {"bits_per_byte": b} for d, b in v3.items()}
    return log


def test_ratios_and_goals_on_both_held_out_sets():
    v3, tiny = _log({"prose": 1.4, "code": 0.7}, v3={"prose": 1.0, "code": 0.6}), _log({"prose": 2.0, "code": 0.8})
    tiny_on_v3 = {"heldout_v3": {"prose": {"bits_per_byte": 2.0}, "code": {"bits_per_byte": 0.6}}}
    rows = {(r["held-out set"], r["domain"]): r for r in target_v3.bits_per_byte_rows(v3, tiny, tiny_on_v3)}
    assert rows["v1 held-out", "prose"]["ratio"] == pytest.approx(0.7) and rows["v1 held-out", "prose"]["meets goal"]
    code = rows["v1 held-out", "code"]
    assert code["ratio"] == pytest.approx(0.875) and not code["meets goal"]
    assert rows["v3 held-out", "prose"]["ratio"] == pytest.approx(0.5)
    assert len(target_v3.bits_per_byte_rows(v3, tiny)) == 2  # without the tiny target on v3: the v1 set only


def test_loop_rows_hold_greedy_to_the_goal_and_show_the_tiny_target_beside():
    rows = target_v3.loop_rows(_log({}, greedy=0.9), _log({}, greedy=0.8), _log({}, greedy=0.85))
    assert rows == [{"prompt set": "prose", "new tokens": 256, "greedy repeated": 0.9, "sampled repeated": 0.02,
                     "meets goal": False, "v3 greedy repeated, same check": 0.85,
                     "tiny greedy repeated, same check": 0.8}]
    assert target_v3.loop_rows(_log({}, greedy=0.1))[0]["meets goal"] is True


def test_training_flops_count_parameters_and_attention():
    assert target_v3.training_flops_per_token(1000, 2, 8, 4) == 6 * 1000 + 6 * 2 * 8 * 4
    log = {"params": 1000, "layers": 2, "hidden_size": 4, "config": {"seq_len": 8}, "tokens_seen": 1e12,
           "train_seconds": 1.0, "steps_run": 1, "best_step": 1, "device": "x", "train_tokens": {"code": 1}}
    facts = target_v3.training_facts(log)
    assert facts["model_tflops_per_s"] == pytest.approx(6384)
    assert facts["h200_peak_share"] == pytest.approx(6384 / target_v3.H200_DENSE_BF16_TFLOPS)


def test_the_recorded_h200_run_reads_back():
    folder = paths.results_dir() / "family_v3" / "target_h200"
    log = json.loads((folder / "training_log.json").read_text())
    facts = target_v3.training_facts(log)
    assert facts["device"] == "NVIDIA H200" and facts["layers"] == 32 and facts["train_seconds"] <= 900
    run = json.loads((folder / "family_all.json").read_text())["target"]
    assert run["weights_sha256"] == log["weights_sha256"]  # the summary and the log name the same weights
    tiny = json.loads((paths.models_dir() / "tiny-target" / "training_log.json").read_text())
    for r in target_v3.bits_per_byte_rows(log, tiny):  # the card's own ratios
        assert r["tiny bits/byte"] == pytest.approx(log["baseline_heldout_bits_per_byte"][r["domain"]])


def test_the_tiny_target_measured_on_a_v3_held_out_split(tmp_path, monkeypatch):
    from peagle_nb.lab.benchmarks import heldout_v3
    from tests.test_family import _mini_corpus_v3

    corpus = tmp_path / "v3"
    _mini_corpus_v3(corpus, chars=20_000)
    monkeypatch.setenv("PEAGLE_CORPUS_V3", str(corpus))
    monkeypatch.setenv("PEAGLE_CORPUS_V3_MANIFEST", str(corpus / "manifest_v3.json"))
    out = tmp_path / "tiny_on_v3.json"
    assert heldout_v3.main(["--out", str(out), "--windows", "2", "--seq-len", "64", "--continuations", "1",
                            "--continuation-tokens", "8"]) == 0
    doc = json.loads(out.read_text())
    assert set(doc["heldout_v3"]) == {"prose", "code", "ja"} and "--windows 2" in doc["generator"]
    for r in doc["heldout_v3"].values():
        assert r["windows_measured"] <= 2 and 0 < r["bits_per_byte"] < 8
    assert doc["weights_sha256"] and set(doc["continuations"]) == {"prose", "code", "ja"}
    assert doc["continuations"]["prose"]["greedy"]["tokens"] == 8
    assert doc["prose_sources"]["heldout"]["shakespeare_share"] == 0.0  # the mini corpus's ids name no play
    with pytest.raises(SystemExit, match="no target"):
        heldout_v3.main(["--out", str(out), "--target", str(tmp_path)])


def test_loop_temperature_rows_and_the_coolest_fresh_temperature():
    from peagle_nb.compare.target_v3 import coolest_fresh_temperature, loop_temperature_rows

    a = {"0": {"prose": 0.9, "code": 0.8}, "0.7": {"prose": 0.1, "code": 0.3}, "0.85": {"prose": 0.05, "code": 0.1},
         "1": {"prose": 0.0, "code": 0.02}}
    doc = {"targets": {"a": {"repeated_share": a},
                       "b": {"repeated_share": {"0": {"prose": 0.1, "code": 0.1}, "0.5": {"prose": 0.2, "code": 0.0},
                                                "1": {"prose": 0.0, "code": 0.0}}},
                       "c": {"repeated_share": {"1": {"prose": 0.5, "code": 0.0}}}}}
    rows = loop_temperature_rows(doc)
    assert len(rows) == 8 and rows[1] == {"target": "a", "temperature": 0.7, "prose": 0.1, "code": 0.3,
                                          "meets goal": False}
    assert coolest_fresh_temperature(doc, "a") == 0.85
    assert coolest_fresh_temperature(doc, "b") == 1.0  # 0 meets the goal but 0.5 does not: from 1 on
    assert coolest_fresh_temperature(doc, "c") is None


def test_pass_cost_prediction_is_a_line_through_the_two_heads():
    from peagle_nb.compare.target_v3 import pass_cost_prediction

    def phase(method, k, ms):
        return {"method": method, "k": k, "mode": "greedy", ("plain_ms" if method == "none" else "draft_ms"): ms}

    doc = {"model": {"heads": {"eagle3": {"layers": 1}, "peagle": {"layers": 4}}},
           "phases": [phase("eagle3", 1, 0.05), phase("peagle", 1, 0.11), phase("none", 0, 0.2),
                      {"method": "eagle3", "k": 1, "mode": "sampled", "draft_ms": 9.0}]}  # sampled rows are ignored
    c = pass_cost_prediction(doc, 8, 32)
    assert c["per_layer_ms"] == pytest.approx(0.02) and c["fixed_ms"] == pytest.approx(0.03)
    assert c["check"]["predicted_ms"] == pytest.approx(0.19) and c["check"]["error"] == pytest.approx(-0.05)
    assert c["deep_step_ms"] == pytest.approx(0.67)
    assert c["pass_ratio"]["peagle"] == pytest.approx(0.11 / 0.67) and c["meets_goal"]["peagle"] is True
    assert c["pass_ratio"]["eagle3"] == pytest.approx(0.05 / 0.67) and c["meets_goal"]["eagle3"] is False


def test_retraining_check_tells_the_same_curve_stopped_earlier_from_another_model():
    import copy
    import json

    from peagle_nb.compare.target_v3 import retraining_check
    from peagle_nb.files import paths
    from peagle_nb.training.target_card import retrain_tolerance

    card = json.loads((paths.results_dir() / "family_v3" / "target_h200" / "training_log.json").read_text())
    tol = retrain_tolerance(card)
    same = copy.deepcopy(card)
    for d in same["heldout"]:
        same["heldout"][d]["bits_per_byte"] += tol[d] / 2
    c = retraining_check(card, same)
    assert c["within_all"] and c["equal_step_within_all"] and c["equal_step_gap_max"] == 0
    assert c["shared_step"] == card["history"][-1]["step"] and c["steps_ratio"] == 1
    other = copy.deepcopy(card)  # another model: worse held out, and its curve above the card's at every step
    for d in other["heldout"]:
        other["heldout"][d]["bits_per_byte"] += 3 * tol[d]
    for h in other["history"]:
        if "validation_loss" in h:
            h["validation_loss"] = {d: v + 0.5 for d, v in h["validation_loss"].items()}
    c = retraining_check(card, other)
    assert not c["within_all"] and not c["equal_step_within_all"]
    assert [r["domain"] for r in c["rows"] if not r["within"]] == list(tol)
    wider = copy.deepcopy(card)
    wider["config"]["arch"] = {**wider["config"]["arch"], "hidden_size": 512}
    with pytest.raises(ValueError, match="another architecture"):
        retraining_check(card, wider)
