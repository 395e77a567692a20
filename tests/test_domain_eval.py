"""Per-domain drafting measurement: the greedy walk equals a literal draft-verify loop, sampled runs come from the
engine, and a domain-shift results file recomputes from its raw runs (and says so when it does not)."""

from __future__ import annotations

import copy

import pytest
import torch

from peagle_nb.lab.benchmarks.domain_eval import (
    check_recomputes,
    evaluate_heads,
    flat_summary,
    greedy_runs,
    make_domain_shift_doc,
    run_record,
    sampled_runs,
    summarize,
    summary_table,
)
from peagle_nb.engine.stats import StepStats


@pytest.fixture(scope="module")
def shipped():
    from peagle_nb.files import paths
    from peagle_nb.models.heads import load_head
    from peagle_nb.models.target import load_target
    from peagle_nb.training.drafter_eval import read_prompt_ids

    torch.set_num_threads(1)
    target, tok = load_target()
    head = load_head(paths.models_dir() / "tiny-peagle")
    prompts = read_prompt_ids(tok, paths.prompts_dir() / "code.jsonl", 1)
    return target, tok, head, prompts


def test_greedy_walk_equals_the_literal_loop(shipped):
    from tests.naive_decoding import naive_greedy_decode

    target, _, head, prompts = shipped
    (prompt_ids, generated, steps), = greedy_runs(target, head, prompts, k=4, max_new_tokens=24)
    tokens, naive_steps = naive_greedy_decode(target, head, prompts[0], 4, 24)
    assert [s["accepted"] for s in steps] == naive_steps
    assert prompt_ids + generated == tokens.tolist()
    assert all(s["new_tokens"] == s["accepted"] + 1 and s["num_drafts"] == 4 for s in steps)


def test_sampled_runs_come_from_the_engine_with_one_seed_per_prompt(shipped):
    target, tok, head, prompts = shipped
    (p, gen, steps), = sampled_runs(target, tok, head, "peagle", prompts, k=3, max_new_tokens=12, seed=2)
    assert p == prompts[0].tolist() and len(gen) == 12
    assert all(isinstance(s, StepStats) and s.num_drafts == 3 for s in steps)
    assert 1 + sum(s.new_tokens for s in steps) >= len(gen)  # the prefill's token, then the steps'
    (_, again, _), = sampled_runs(target, tok, head, "peagle", prompts, k=3, max_new_tokens=12, seed=2)
    assert again == gen  # seeded: reproducible
    (_, lean, lean_steps), = sampled_runs(target, tok, head, "peagle", prompts, k=3, max_new_tokens=12, seed=2,
                                          engine="lean")
    assert lean == gen and [s.accepted for s in lean_steps] == [s.accepted for s in steps]  # same tokens, same steps


def _toy_runs(accepted_lists, body_repeats):
    runs = []
    for acc, rep in zip(accepted_lists, body_repeats):
        body = list(range(10, 18))
        gen = body * rep + list(range(50, 50 + sum(a + 1 for a in acc)))
        runs.append(([1, 2], gen, [StepStats(3, a, a + 1, 0.0, 0.0) for a in acc]))
    return runs


def test_results_file_recomputes_from_its_raw_runs_and_catches_edits():
    recs = []
    for head, accepted in (("peagle", [3, 3, 2, 1]), ("peagle-no-ja", [0, 1, 0, 0])):
        recs.append(run_record(head, "peagle", "ja", "greedy", None, 3, 16, _toy_runs([accepted], [2])))
        for seed in (0, 1, 2):
            recs.append(run_record(head, "peagle", "ja", "sampled", seed, 3, 16,
                                   _toy_runs([accepted[seed:] + [1]], [1])))
    doc = make_domain_shift_doc(recs, {"peagle": {}, "peagle-no-ja": {}}, notes="toy")
    check_recomputes(doc)
    gap = doc["summary"]["domain_shift"]["peagle vs peagle-no-ja"]
    assert gap["prompt_set"] == "ja"
    assert gap["greedy"]["tau_lost"] == pytest.approx((1 + 9 / 4) - (1 + 1 / 4))
    assert doc["summary"]["by_head"]["peagle"]["ja"]["sampled"]["tau"]["n"] == 3
    flat = flat_summary(doc["summary"], prefix="x.")
    assert flat["x.peagle.ja.greedy.tau"] == pytest.approx(1 + 9 / 4)
    assert len(flat["x.peagle-no-ja.ja.sampled.tau_seeds"]) == 3
    assert flat["x.peagle.ja.sampled.tau_mean"] == pytest.approx(sum(flat["x.peagle.ja.sampled.tau_seeds"]) / 3)
    rows = summary_table(doc["summary"])
    assert [(r["head"], r["set"]) for r in rows] == [("peagle", "ja"), ("peagle-no-ja", "ja")]
    assert rows[0]["greedy tau"] == flat["x.peagle.ja.greedy.tau"]
    tampered = copy.deepcopy(doc)
    tampered["runs"][0]["tau"] += 0.5
    with pytest.raises(ValueError, match=r"runs\[0\]\.tau"):
        check_recomputes(tampered)
    tampered = copy.deepcopy(doc)
    tampered["summary"]["domain_shift"]["peagle vs peagle-no-ja"]["greedy"]["tau_lost"] = 0.0
    with pytest.raises(ValueError, match="summary differs"):
        check_recomputes(tampered)


def test_evaluate_heads_stops_at_the_deadline(shipped):
    target, tok, head, prompts = shipped
    recs = evaluate_heads(target, tok, {"peagle": ("peagle", head)}, {"code": prompts}, k=3, max_new_tokens=8,
                          seeds=(0,), deadline=0.0, log=lambda *_: None)
    assert recs == []
    recs = evaluate_heads(target, tok, {"peagle": ("peagle", head)}, {"code": prompts}, k=3, max_new_tokens=8,
                          seeds=(0,), log=lambda *_: None)
    assert [(r["mode"], r["seed"]) for r in recs] == [("greedy", None), ("sampled", 0)]
    assert summarize(recs)["by_head"]["peagle"]["code"]["sampled"]["seeds"] == 1
