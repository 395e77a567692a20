"""A step's phases: measured with the lean engine, EAGLE-3's first/chain split, timelines, best-K rows, figures."""

import json

import plotly.graph_objects as go
import pytest
import torch

from peagle_nb.files import paths
from peagle_nb.analysis import step_phases
from peagle_nb.viz import step_plots

H200 = paths.results_dir() / "engine_h200.json"


def _row(method, k, build=0.1, draft=1.0, verify=2.0, update=0.05):
    return {"method": method, "k": k, "build_ms": build, "draft_ms": draft, "verify_ms": verify, "update_ms": update}


def test_linear_fit_and_chain_split_recover_a_known_line():
    rows = [_row("eagle3", k, draft=0.3 + 0.2 * (k - 1)) for k in (1, 2, 3, 5, 8)] + [_row("peagle", 1, draft=9.0)]
    split = step_phases.chain_split(rows)
    assert split["first_pass_ms"] == pytest.approx(0.3)
    assert split["chain_pass_ms"] == pytest.approx(0.2) and split["r2"] == pytest.approx(1.0)
    fit = step_phases.linear_fit([1, 2, 3], [1.0, 2.5, 2.0])
    assert fit["slope"] == pytest.approx(0.5) and 0 < fit["r2"] < 1
    with pytest.raises(ValueError, match="K=1"):
        step_phases.chain_split([_row("eagle3", 2), _row("eagle3", 3)])
    with pytest.raises(ValueError, match="two different x"):
        step_phases.linear_fit([2, 2], [1.0, 2.0])


def test_step_segments_add_up_to_the_measured_phases():
    e3 = _row("eagle3", 4, build=0.1, draft=1.3, verify=2.0, update=0.05)
    segs = step_phases.step_segments(e3, first_pass_ms=0.4)
    assert [s for s, _ in segs] == ["build", "draft pass 1", "draft pass 2", "draft pass 3", "draft pass 4",
                                    "verify", "update"]
    assert [ms for _, ms in segs][2:5] == pytest.approx([0.3, 0.3, 0.3])
    assert sum(ms for _, ms in segs) == pytest.approx(step_phases.step_ms(e3))
    pe = step_phases.step_segments(_row("peagle", 7, draft=0.9))
    assert [s for s, _ in pe] == ["build", "draft pass (7 slots)", "verify", "update"]
    assert step_phases.step_segments({"method": "none", "k": 0, "plain_ms": 1.5}) == [("target step", 1.5)]
    with pytest.raises(ValueError, match="first_pass_ms"):
        step_phases.step_segments(e3)
    assert step_phases.build_share(_row("peagle", 3, build=1.0, draft=1.0, verify=1.5, update=0.5)) == 0.25


def test_verdict_and_best_k_rows_follow_the_spread():
    assert step_phases.verdict({"min": 1.01, "median": 1.1, "max": 1.2}) == "peagle faster"
    assert step_phases.verdict({"min": 0.8, "median": 0.9, "max": 0.99}) == "eagle3 faster"
    assert step_phases.verdict({"min": 0.9, "median": 1.1, "max": 1.2}) == "tie"
    doc = json.loads(H200.read_text())
    rows = step_phases.best_k_rows(doc["summary"], "H200")
    assert {r["set"] for r in rows} == set(doc["summary"])
    for r in rows:  # the committed file's verdict is the same rule
        assert r["verdict"] == doc["summary"][r["set"]]["peagle_over_eagle3_verdict"]
        assert r["peagle.best_k"] == doc["summary"][r["set"]]["peagle.best_k"]


def test_recorded_h200_phases_split_and_timeline():
    doc = json.loads(H200.read_text())
    split = step_phases.chain_split(doc["phases"])
    assert split["r2"] > 0.99  # EAGLE-3's drafting is a straight line in K on the GPU
    assert 0 < split["chain_pass_ms"] < split["first_pass_ms"]
    row = step_phases.find_row(doc["phases"], "eagle3", 7)
    segs = step_phases.step_segments(row, split["first_pass_ms"])
    assert len([s for s, _ in segs if s.startswith("draft pass")]) == 7
    assert sum(ms for _, ms in segs) == pytest.approx(row.step_device_ms)
    with pytest.raises(ValueError, match="no phases row"):
        step_phases.find_row(doc["phases"], "peagle", 99)


@pytest.fixture(scope="module")
def shipped():
    from peagle_nb.models.heads import load_head
    from peagle_nb.models.target import load_target

    target, tok = load_target(paths.models_dir() / "tiny-target")
    return target, tok, load_head(paths.models_dir() / "tiny-eagle3")


def test_measure_phases_rows_carry_every_phase_with_spread(shipped):
    target, tok, head = shipped
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        ids = tok("def main():")["input_ids"]
        rows = step_phases.measure_phases(target, tok, ids, head, "eagle3", ks=(1, 3), repeats=3, reps=2,
                                          warm_tokens=8)
        plain = step_phases.measure_phases(target, tok, ids, repeats=2, reps=2, warm_tokens=8)
    finally:
        torch.set_num_threads(before)
    assert [r["k"] for r in rows] == [1, 3] and plain[0]["k"] == 0 and "plain_ms" in plain[0]
    for r in rows:
        for p in step_phases.PHASES:
            assert r[f"{p}_ms_p10"] <= r[f"{p}_ms"] <= r[f"{p}_ms_p90"]
            assert r[f"{p}_ms"] > 0
    assert list(step_phases.draft_ms_per_k(rows, "eagle3")) == [1, 3]
    with pytest.raises(ValueError, match="repeats and reps"):
        step_phases.measure_phases(target, tok, ids, repeats=0)


def test_figures_carry_the_numbers_they_are_given():
    f = step_plots.step_timeline_figure({"EAGLE-3 K=2": [("build", 0.1), ("draft pass 1", 0.4), ("draft pass 2", 0.3),
                                                         ("verify", 1.0)],
                                         "P-EAGLE K=2": [("build", 0.1), ("draft pass (2 slots)", 0.5)]},
                                        notes={"P-EAGLE K=2": "tau 2.0"})
    assert isinstance(f, go.Figure) and len(f.data) == 6
    assert [tuple(b.base) for b in f.data[:4]] == [(0.0,), (0.1,), (0.5,), (0.8,)]  # laid end to end
    assert f.data[1].marker.color != f.data[2].marker.color  # each sequential pass its own block
    assert any("tau 2.0" in a.text for a in f.layout.annotations)
    rows = [{**_row("eagle3", k, draft=0.5 * k), "draft_ms_p10": 0.4 * k, "draft_ms_p90": 0.6 * k} for k in (1, 2)]
    f = step_plots.phase_cost_figure(rows)
    assert list(f.data[0].y) == [0.5, 1.0] and list(f.data[0].error_y.array) == pytest.approx([0.1, 0.2])
    f = step_plots.relative_cost_figure({"EAGLE-3 CPU": {1: 2.0, 2: 4.0}, "P-EAGLE H200": {1: 1.0, 2: 1.1}})
    assert list(f.data[0].y) == [1.0, 2.0] and f.data[1].line.dash == "dash"
    with pytest.raises(ValueError, match="K=1"):
        step_plots.relative_cost_figure({"x": {2: 1.0}})
    doc = json.loads(H200.read_text())
    rows = step_phases.best_k_rows(doc["summary"], "H200")
    f = step_plots.best_k_figure(rows)
    assert len(f.data) == 3 and list(f.data[2].y) == [r["ratio"]["median"] for r in rows]
    f = step_plots.split_acceptance_figure({"peagle": {"fresh": [0.6, 0.3], "repeated": [0.9, None]}})
    assert [t.name for t in f.data] == ["peagle fresh", "peagle repeated"] and f.data[1].y[1] is None


def test_sampled_phase_rows_and_figure_from_the_recorded_file():
    from peagle_nb.files import paths
    from peagle_nb.files.results import read_results
    from peagle_nb.analysis.step_phases import sampled_phase_rows
    from peagle_nb.viz.step_plots import sampled_phases_figure

    doc = read_results(paths.results_dir() / "engine_h200.json")
    rows = sampled_phase_rows(doc["phases"], doc["sampler_comparison"], 7)
    assert {r["phase"] for r in rows} == {"plain step", "verify K+1 (K=7)", "P-EAGLE draft (K=7)",
                                          "EAGLE-3 draft (K=7)"}
    assert all(r["over_greedy"] == 1.0 for r in rows if r["mode"] == "greedy")
    fused = {r["phase"]: r["over_greedy"] for r in rows if r["mode"] == "sampled, fused kernels"}
    chain = {r["phase"]: r["over_greedy"] for r in rows if r["mode"] == "sampled, PyTorch op chain"}
    assert all(fused[p] < chain[p] for p in fused)  # fusion makes every sampled phase cheaper (recorded on an H200)
    assert len(sampled_phases_figure(rows).data) == 3


def test_regime_rows_and_tau_split_from_the_recorded_file():
    import pytest as _pytest

    from peagle_nb.files import paths
    from peagle_nb.files.results import read_results
    from peagle_nb.analysis.step_phases import regime_rows, tau_before_after
    from peagle_nb.viz.step_plots import regime_figure

    doc = read_results(paths.results_dir() / "engine_h200.json")
    rows = regime_rows(doc)
    assert {(r["temperature"], r["tokens"]) for r in rows} == {(t, n) for t in (0.0, 1.0) for n in (64, 256, 512)}
    for r in rows:  # the verdict follows the spread over sweeps
        expect = ("peagle faster" if r["p_over_e_tpot_min"] > 1 else "eagle3 faster" if r["p_over_e_tpot_max"] < 1
                  else "tie")
        assert r["tpot_verdict"] == expect
    split = tau_before_after(doc, 1.0, 512, 256)
    assert len(split) == 6 and all(s["tau_after"] < s["tau_before"] for s in split)  # past the trained length
    assert len(regime_figure(rows).data) == 6
    with _pytest.raises(ValueError, match="no regime at temperature"):
        tau_before_after(doc, 0.5, 512, 256)
