"""Throughput against concurrency: the sweep of the batched lean engine at smoke size (its records and summary
recompute), the committed CPU record (vLLM's tokens equal the lean engine's, batching pays on this CPU, batch 1 is
not slowed), and the notebook-07 analysis of it (the step model fitted to the file's phases, the curve's shape)."""

import pytest

from peagle_nb.compare import concurrency as cc
from peagle_nb.files import paths
from peagle_nb.files.results import make_results, read_results
from peagle_nb.lab.sweeps import concurrency as sweep

CPU_RECORD = paths.results_dir() / "concurrency" / "concurrency_cpu.json"


@pytest.fixture(scope="module")
def shipped():
    from peagle_nb.models.heads import load_head
    from peagle_nb.models.target import load_target

    target, tok = load_target(paths.models_dir() / "tiny-target")
    return target, tok, {m: load_head(paths.models_dir() / f"tiny-{m}") for m in ("eagle3", "peagle")}


def test_sweep_at_smoke_size_records_every_run_and_summarizes(shipped):
    target, tok, heads = shipped
    runs = sweep.sweep_concurrency(target, tok, heads, [1, 2], [2], [0.0, 1.0], 4, 1, log=lambda *_: None)
    assert len(runs) == 2 * 3 * 2  # c x (plain, EAGLE-3, P-EAGLE) x T, one sweep
    for r in runs:
        assert r["new_tokens"] == 4 * r["concurrency"] and r["bucket"] == r["concurrency"]
        assert r["verify_ms_per_step"] > 0 and (r["method"] == "none") == (r["draft_ms_per_step"] is None)
        assert 1.0 <= r["tau"] <= r["k"] + 1
    doc = make_results("engine", runs)
    doc["summary"] = sweep.summarize(runs)
    sweep.check_recomputes(doc)
    cell = doc["summary"]["c2.T0"]
    assert cell["eagle3"]["best_k"] == cell["peagle"]["best_k"] == 2 and cell["none"]["over_c1"] > 0
    assert cell["peagle_over_eagle3"]["verdict"] in ("peagle faster", "eagle3 faster", "tie")
    doc["runs"][0]["tokens_per_s"] += 1  # a summary that no longer recomputes is refused
    with pytest.raises(ValueError, match="does not recompute"):
        sweep.check_recomputes(doc)


def test_concurrency_prompts_take_the_three_sets_in_turn(shipped):
    _, tok, _ = shipped
    four = sweep.concurrency_prompts(tok, 4)
    assert len(four) == 4 and four[:2] == sweep.concurrency_prompts(tok, 2) and len({tuple(p) for p in four}) == 4


def test_committed_cpu_record():
    doc = read_results(CPU_RECORD)
    sweep.check_recomputes(doc)
    assert sorted({r["concurrency"] for r in doc["runs"]}) == [1, 2, 4]
    assert {r["sweep"] for r in doc["runs"]} == {0, 1, 2}
    assert doc["vllm_beside"] and all(r["tokens_equal"] for r in doc["vllm_beside"])  # the same greedy tokens
    assert {(r["method"], r["concurrency"]) for r in doc["vllm_beside"]} == {
        (m, c) for m in ("none", "eagle3", "peagle") for c in (1, 2, 4)}
    rows = cc.concurrency_rows(doc, 0.0)
    assert rows[-1]["concurrency"] == 4 and rows[-1]["plain_over_c1"] > 1.5  # batching pays even on 2 cores
    for b in doc["batch_one"]:  # the batched path at batch 1 against the single-request path, same prompts
        assert 0.75 < b["batched_over_single"] < 1.25, b
    assert {r["verdict"] for r in rows} <= {"peagle faster", "eagle3 faster", "tie"}


def test_step_model_fitted_to_the_record_predicts_its_ratios():
    doc = read_results(CPU_RECORD)
    cost = cc.fit_own_step_cost(doc)
    assert cost.v0 > 0 and cost.p0 + cost.p1 > 0 and cost.e0 + cost.e1 > 0
    pv = cc.predicted_vs_measured(doc)
    assert [r["concurrency"] for r in pv] == [1, 2, 4]
    assert max(abs(r["error"]) for r in pv) < 0.3
    shape = cc.shapes(doc, {"MT-Bench": {1: 1.69, 4: 1.5, 64: 1.1}})
    assert shape[0]["measured"] == 1.0 and shape[0]["MT-Bench"] == 1.0
    assert shape[-1]["MT-Bench"] == pytest.approx(1.5 / 1.69) and "MT-Bench" not in shape[1]  # no published c=2
