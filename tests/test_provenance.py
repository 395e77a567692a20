"""Every recorded number is reproducible from what is committed beside it: each results file in data/results/
names the machine, the versions and the command that wrote it, every summary it stores is recomputed here from
its raw runs with the current code, and the model cards are re-rendered from their training logs.

A check that a file recorded before its generator kept the needed raw data cannot pass is skipped with the reason
and the command that re-records it (``RECORDED_BEFORE``); once the file is re-recorded and passes, the test fails
until its entry is removed, so the list cannot outlive the problem.
"""

from __future__ import annotations

import json
import math
import shlex
import statistics
from pathlib import Path

import pytest

from peagle_nb.files import paths, results

RESULTS = sorted(p.name for pattern in ("*.json", "*.json.gz") for p in paths.results_dir().glob(pattern))
MEASURED = [name for name in RESULTS if name != "published.json"]

RECORDED_BEFORE: dict[tuple[str, str], str] = {}  # none left: every file passes every check


def recorded_before(name: str, check: str, run) -> None:
    """Run ``check`` (raises AssertionError when the file cannot pass it); skip with the reason where the file
    predates the data it needs, and fail once such a file passes (its entry is stale)."""
    reason = RECORDED_BEFORE.get((name, check))
    if reason is None:
        run()
        return
    try:
        run()
    except (AssertionError, KeyError) as exc:
        pytest.skip(f"{name}: {reason} ({type(exc).__name__}: {str(exc)[:120]})")
    pytest.fail(f"{name} now passes the {check!r} check: remove its entry from RECORDED_BEFORE")


def load(name: str) -> dict:
    return results.read_results(paths.results_dir() / name)


def close(a, b, rel=1e-9) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)


# ------------------------------------------------------------------------------------------- provenance
def _generator_is_this_repository(doc: dict) -> None:
    from peagle_nb.cli import COMMANDS

    words = shlex.split(doc["generator"])
    if words[:2] == ["python", "-m"]:
        module = Path(paths.repo_root(), *words[2].split(".")).with_suffix(".py")
        assert words[2].startswith("peagle_nb.") and module.is_file(), doc["generator"]
    else:
        assert words[0] == "peagle-nb" and words[1] in {name for name, _, _ in COMMANDS}, doc["generator"]


@pytest.mark.parametrize("name", MEASURED)
def test_measured_file_names_machine_versions_and_generator(name):
    doc = load(name)
    assert doc["machine"]["device"] and doc["machine"]["platform"] and doc["created"]
    assert {"python", "torch"} <= set(doc["versions"]) and all(doc["versions"].values())
    recorded_before(name, "generator", lambda: _generator_is_this_repository(doc))


def test_published_numbers_name_their_source():
    doc = load("published.json")
    assert doc["source"] == "published"
    assert all(run.get("source_ref") for run in doc["runs"])  # measured by others: each says where from


# ---------------------------------------------------------------------------------------------- engine
def _engine_file_recomputes(doc: dict) -> None:
    from peagle_nb.analysis import metrics
    from peagle_nb.engine.evaluate import spread, summarize_sweep

    for run in doc["runs"]:
        if run["method"] != "none":  # acceptance from the accepted count of every step
            s = metrics.summarize(run["accepted_per_step"], run["k"])
            assert run["steps"] == s["steps"] and close(run["tau"], s["tau"]), run
            assert all(close(a, b) for a, b in zip(run["accept_rate_per_position"], s["accept_rate_per_position"]))
        sp = spread(run["tokens_per_s_repeats"])  # the timing from every repeat of it
        assert (run["tokens_per_s"], run["tokens_per_s_p10"], run["tokens_per_s_p90"]) == (
            sp["median"], sp["p10"], sp["p90"]), run
    assert doc["summary"] == summarize_sweep(doc["runs"])


@pytest.mark.parametrize("name", ["engine_cpu.json", "engine_cpu_sampled.json", "engine_cpu_regimes.json",
                                  "engine_h200.json", "engine_h100.json.gz", "engine_h100_recheck.json.gz",
                                  "family_v3/engine_h100_v3_lockstep.json.gz"])
def test_engine_summaries_recompute_from_their_runs(name):
    doc = load(name)
    for run in doc["runs"]:  # what every file holds: tau from the per-position rates
        if run["method"] != "none":
            assert close(run["tau"], 1 + sum(run["accept_rate_per_position"])), run
    recorded_before(name, "summary", lambda: _engine_file_recomputes(doc))


# ------------------------------------------------------------------------------------------------ vLLM
def _vllm_run_consistent(run: dict) -> None:
    if run.get("num_drafts"):
        accepted = run["num_accepted_tokens"] / run["num_drafts"]
        assert close(run["tau"], 1 + accepted) and close(sum(run["accept_rate_per_position"]), accepted), run
        assert run["num_draft_tokens"] == run["k"] * run["num_drafts"], run
        assert [c / run["num_drafts"] for c in run["accepted_per_position"]] == run["accept_rate_per_position"]
    if "wall_s" in run:
        assert close(run["tokens_per_s"], run["output_tokens"] / run["wall_s"]), run
        assert close(run["request_throughput"], run["n_prompts"] / run["wall_s"]), run
        assert close(run["tokens_per_cpu_s"], run["output_tokens"] / run["cpu_s"]), run
        assert close(run["ttft_ms"], statistics.fmean(run["ttft_ms_requests"])), run
        assert close(run["tpot_ms"], statistics.fmean(run["tpot_ms_requests"])), run
    if run.get("drafter_passes_per_step") is not None and run["target_passes"]:
        assert close(run["drafter_passes_per_step"], run["drafter_passes"] / run["target_passes"]), run
    if "tau_engine" in run and run.get("temperature", 0) == 0:
        assert close(run["tau_vllm_over_engine"], run["tau"] / run["tau_engine"]), run
    if "tau_agrees" in run:  # sampled: the verdict follows from the two taus and the recorded tolerance
        assert run["tau_agrees"] == (abs(run["tau"] - run["tau_engine"]) <= run["tau_tolerance"]), run


def test_vllm_sampled_acceptance_agrees_with_the_engine_only_with_the_cpu_fix():
    """Greedy: vLLM's tau equals the engine's. Sampled at T=1 with ``cpu_sampling_fix``: within 3 standard errors
    in every run. As shipped (the CPU build's sampler broken): far below the engine in every run."""
    doc = load("vllm_cpu.json")
    acc = [r for r in doc["runs"] if r.get("measures") == "acceptance"]
    greedy = [r for r in acc if r["temperature"] == 0]
    fixed = [r for r in acc if r["temperature"] > 0 and r["cpu_sampling_fix"]]
    shipped = [r for r in acc if r["temperature"] > 0 and not r["cpu_sampling_fix"]]
    assert greedy and all(r["tau"] == r["tau_engine"] and r["lossless"] for r in greedy)
    from peagle_nb.lab.records.results_table import sampled_pooled_gaps, sampled_pooled_z

    assert len({r["seed"] for r in fixed}) >= 3
    # prompt-level standard errors (steps of one prompt are correlated; step-level ones gave 13 of 18 in an
    # earlier recording): recorded 18 of 18 within 3 of them, where one miss in 18 runs is expected ~5% of the
    # time. The means over 3 seeds are within 3 standard errors of that mean too (recorded: at most 2.5, a gap
    # of 4.1%), though vLLM is lower in 5 of 6 pairs, as in the earlier recording: a small difference in the
    # same direction that these runs cannot resolve
    assert all(r["standard_error"] == "prompt-level" for r in fixed)
    assert sum(r["tau_agrees"] for r in fixed) >= len(fixed) - 1
    assert all(abs(z) < 3 for z in sampled_pooled_z(fixed).values())
    assert all(abs(g) < 0.06 for g in sampled_pooled_gaps(fixed).values())
    # as shipped the logits are divided by whatever memory the unwritten buffer held: how much is lost varies
    # from run to run (recorded 0.05-0.43 accepted drafts per step vs the engine's 0.41-0.56), but every run is
    # below the engine, outside the tolerance, and the runs together lose more than half
    assert shipped and all(not r["tau_agrees"] and r["tau"] < r["tau_engine"] for r in shipped)
    assert sum(r["tau"] - 1 for r in shipped) < 0.5 * sum(r["tau_engine"] - 1 for r in shipped)


def test_vllm_runs_recompute_from_their_counters_and_timings():
    doc = load("vllm_cpu.json")
    for run in doc["runs"]:  # what every file holds: tau from the per-position rates
        if run["method"] != "none":
            assert close(run["tau"], 1 + sum(run["accept_rate_per_position"])), run
    for run in doc["runs"]:
        _vllm_run_consistent(run)

    def fastest_repeat_kept():
        for run in doc["runs"]:
            if "wall_s" in run:
                assert run["wall_s"] == min(run["wall_s_repeats"]), run
                assert len(run["wall_s_repeats"]) == run["repeats"], run

    recorded_before("vllm_cpu.json", "raw", fastest_repeat_kept)


# -------------------------------------------------------------------------------------- torch.compile
def test_compile_check_figures_recompute_from_their_steps():
    import statistics as st

    doc = load("torch_compile_cpu.json")
    (run,) = doc["runs"]
    for name in ("eager", "compiled_static", "compiled_dynamic"):
        v = run[name]
        steady = [t for times in v["step_ms"][1:] for t in times]  # pass 1 pays for compilation
        q = st.quantiles(steady, n=10)
        assert (v["step_ms_median"], v["step_ms_p10"], v["step_ms_p90"]) == (st.median(steady), q[0], q[-1])
        assert v["first_call_ms"] == v["step_ms"][0][0] and close(v["first_pass_ms"], sum(v["step_ms"][0]))
    for name in ("compiled_static", "compiled_dynamic"):
        c, e = run[name], run["eager"]
        assert close(c["over_eager"], c["step_ms_median"] / e["step_ms_median"])
        expected = ("compile helps" if c["step_ms_p90"] < e["step_ms_p10"] else
                    "compile hurts" if c["step_ms_p10"] > e["step_ms_p90"] else "tie")
        assert c["verdict"] == expected


# --------------------------------------------------------------------------------------------- kernels
def test_kernel_rows_and_repeat_recompute():
    from peagle_nb.lab.benchmarks.kernel_bench import summarize

    doc = load("kernels_h200.json")
    for run in doc["runs"]:
        if run["kernel"] == "hidden_expand" and run["variant"] in ("triton", "eager", "reference"):
            gbs = run["bytes_moved"] / (run["flushed_us"] * 1e-6) / 1e9
            assert close(run["achieved_gbs"], gbs) and close(run["fraction_of_copy"], gbs / run["copy_gbs"]), run
    summarize(doc)  # the headline figures are computed from the runs on every read, never stored

    def repeat_recomputes():
        repeat = doc["repeat"]
        assert repeat["machine"]["device"] == doc["machine"]["device"] and repeat["versions"]["torch"]
        assert repeat["summary"] == summarize({"runs": repeat["runs"], "machine": repeat["machine"]})

    recorded_before("kernels_h200.json", "repeat", repeat_recomputes)


# ----------------------------------------------------------------------------------------- model cards
@pytest.mark.parametrize("name", ["tiny-eagle3", "tiny-peagle"])
def test_head_cards_render_from_their_training_logs(name):
    from peagle_nb.training.model_cards import drafter_card

    folder = paths.models_dir() / name
    log = json.loads((folder / "training_log.json").read_text())
    compare = None
    if log["kind"] == "peagle":  # the P-EAGLE card compares with the EAGLE-3 head beside it
        compare = json.loads((folder.parent / "tiny-eagle3" / "training_log.json").read_text())["acceptance"]
    assert (folder / "README.md").read_text() == drafter_card(log, compare)
    for result in log["acceptance"].values():  # tau and a_j of each K are one measurement
        for r in result.values():
            assert close(r["tau"], 1 + sum(r["accept_rate_per_position"])), r


def test_recorded_v3_target_card_renders_from_its_log_with_v3_corpus_and_a_retraining_tolerance():
    from peagle_nb.training.target import model_card
    from peagle_nb.training.target_card import retrain_tolerance

    folder = paths.results_dir() / "family_v3" / "target_h200"
    log = json.loads((folder / "training_log.json").read_text())
    card = (folder / "model_card.md").read_text()
    assert card == model_card(log)
    assert "build_corpus_v3.py" in card and "manifest_v3.json" in card and "Shakespeare texts" not in card
    tol = retrain_tolerance(log)
    assert set(tol) == set(log["heldout"]) and all(0.01 <= v <= 0.05 for v in tol.values())
    for d, v in tol.items():
        assert f"| {d} | {log['heldout'][d]['bits_per_byte']:.3f} | ± {v:.2f} |" in card
    # the tolerance is the curve's movement over the last tenth of the steps, rounded up to 0.01
    hist = log["history"]
    last, before = hist[-1], min(hist, key=lambda h: abs(h["step"] - 0.9 * hist[-1]["step"]))
    for d, v in tol.items():
        moved = abs(before["validation_loss"][d] - last["validation_loss"][d]) * (
            log["heldout"][d]["bits_per_byte"] / log["heldout_loss"][d])
        assert moved <= v < moved + 0.01 or (v == 0.01 and moved <= 0.01)
    assert "Re-training" not in model_card(json.loads((paths.models_dir() / "tiny-target" /
                                                       "training_log.json").read_text()))  # v3 only


def test_target_card_renders_from_its_training_log():
    from peagle_nb.training.target import model_card

    folder = paths.models_dir() / "tiny-target"
    log = json.loads((folder / "training_log.json").read_text())

    def renders():
        assert (folder / "README.md").read_text() == model_card(log)

    recorded_before("tiny-target", "card", renders)


# ------------------------------------------------------------------------------------------ vLLM server start
def test_server_start_figures_recompute_and_every_mode_serves_the_same():
    from peagle_nb.lab.benchmarks.server_start import MODES, summarize

    doc = load("server_start_cpu.json")
    summary = summarize(doc["runs"])
    assert doc["summary"] == summary and set(summary) == set(MODES)
    assert all(s["repeats"] >= 3 for s in summary.values())
    for r in doc["runs"]:
        assert len(r["startup_s"]) == r["servers"] == MODES[r["mode"]][1] and max(r["startup_s"]) <= r["wall_s"]
        assert min(r["n_processes"]) >= 2  # an API server and an engine core at least
    # the check that the saving costs nothing: every server of every mode wrote the same tokens with the same drafts
    assert len({json.dumps(s, sort_keys=True) for r in doc["runs"] for s in r["served"]}) == 1
    # what the README and peagle_nb.serving.server say: no worker process takes about a third off a start, with no
    # repeat overlapping; and notebook 06: two servers at once take about as long as one
    core, default, two = (summary[m] for m in ("engine_core_runs_model", "worker_process", "two_at_once"))
    assert core["verdict"] == "faster" and 0.55 <= core["over_worker_process"] <= 0.75
    assert two["wall_s_median"] <= 1.25 * core["wall_s_median"]
