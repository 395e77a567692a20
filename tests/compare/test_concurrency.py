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


def _run(c, method, k, sweep, tokens_per_s, tau, total_ms, steps, prefill_ms=1.0, step_ms=1.0, temperature=0.0):
    return {"concurrency": c, "method": method, "k": k, "sweep": sweep, "temperature": temperature,
            "new_tokens": round(tokens_per_s * total_ms / 1e3),
            "tokens_per_s": tokens_per_s, "tau": tau, "total_ms": total_ms, "steps": steps, "prefill_ms": prefill_ms,
            "step_wall_ms_p50": step_ms}


def test_ratio_split_is_acceptance_times_step_time_at_each_best_k():
    # c=1: EAGLE-3 K=3 best (30 tokens in 300 ms over 10 steps), P-EAGLE K=7 best (40 tokens in 200 ms, 10 steps)
    runs = [_run(1, "eagle3", 3, s, 100.0, 3.0, 300.0, 10) for s in range(3)]
    runs += [_run(1, "eagle3", 7, s, 90.0, 3.5, 400.0, 10) for s in range(3)]
    runs += [_run(1, "peagle", 7, s, 200.0, 4.0, 200.0, 10) for s in range(3)]
    runs += [_run(1, "peagle", 3, s, 150.0, 3.5, 200.0, 10) for s in range(3)]
    (row,) = cc.ratio_split({"runs": runs})
    assert (row["eagle3_k"], row["peagle_k"]) == (3, 7)
    assert row["acceptance_factor"] == pytest.approx(40 / 30) and row["step_factor"] == pytest.approx(30 / 20)
    assert (row["tau_eagle3"], row["tau_peagle"]) == (3.0, 4.0)
    assert row["ratio"] == pytest.approx(2.0)
    assert cc.tau_by_k({"runs": runs}) == [{"k": 3, "tau_eagle3": 3.0, "tau_peagle": 3.5},
                                           {"k": 7, "tau_eagle3": 3.5, "tau_peagle": 4.0}]


def test_time_split_separates_prefill_steps_and_host_work():
    runs = [_run(c, "none", 0, s, 1.0, 1.0, total_ms=100.0 * c, steps=10, prefill_ms=20.0 * c, step_ms=5.0)
            for c in (1, 4) for s in range(3)]
    rows = cc.time_split({"runs": runs})
    assert [r["concurrency"] for r in rows] == [1, 4]
    one, four = rows
    assert (one["prefill_ms"], one["steps_ms"], one["host_ms"]) == (20.0, 50.0, 30.0)
    assert four["prefill_share"] == pytest.approx(0.2) and four["host_share"] == pytest.approx(270 / 400)


@pytest.mark.parametrize("name", ["concurrency_h200", "concurrency_h200_prefill_one_by_one"])
def test_the_h200_records_recompute_and_say_what_the_notebook_says(name):
    doc = read_results(paths.results_dir() / "concurrency" / f"{name}.json")
    sweep.check_recomputes(doc)
    assert doc["machine"]["device"] == "NVIDIA H200"
    for row in cc.ratio_split(doc):  # the split multiplies back to the ratio of medians
        assert row["acceptance_factor"] * row["step_factor"] == pytest.approx(row["ratio"], rel=0.05)
    for r in doc["runs"]:  # greedy and sampled both decoded the requested tokens, c requests each
        assert r["new_tokens"] == r["concurrency"] * r["max_new_tokens"]


def test_plain_scaling_end_to_end_and_decoding_alone():
    runs = [_run(c, "none", 0, s, 1.0, 1.0, total_ms=100.0 + 10 * c, steps=10, prefill_ms=2.0 * c, step_ms=5.0 + c)
            for c in (1, 4) for s in range(3)]
    for r in runs:
        r["tokens_per_s"] = 1000.0 * r["concurrency"] * 10 / r["total_ms"]
    sc = cc.plain_scaling({"runs": runs})
    assert (sc["from_c"], sc["to_c"]) == (1, 4)
    assert sc["end_to_end"] == pytest.approx((4 / 140) / (1 / 110))
    # decoding alone: c / (total - prefill): 4 / 132 against 1 / 108
    assert sc["decode_only"] == pytest.approx((4 / 132) / (1 / 108))


def test_the_results_file_names_the_exact_weights_it_measured(tmp_path):
    from peagle_nb.models.checksums import file_sha256

    out = tmp_path / "c.json"
    assert sweep.main(["--device", "cpu", "--concurrency", "1", "--ks", "2", "--temperatures", "0", "--max-new-tokens",
                       "3", "--sweeps", "1", "--batch-one-repeats", "1", "--out", str(out)]) == 0
    named = read_results(out)["model"]["weights_sha256"]
    assert set(named) == {"target", "eagle3", "peagle"}
    for name, files in named.items():
        folder = paths.models_dir() / f"tiny-{name}"
        assert files and all(file_sha256(folder / f) == h for f, h in files.items())
