"""The published numbers (transcription, builder, committed file) and what the GPU model makes of them."""

import pytest

from peagle_nb.files import paths
from peagle_nb.compare import published as pub
from peagle_nb.lab.records import published_sources as src
from peagle_nb.compare.data import runs_of, select

WORKLOADS = ("MT-Bench", "HumanEval", "SPEED-Bench (Code)")


@pytest.fixture(scope="module")
def doc():
    return pub.load_published()


@pytest.fixture(scope="module")
def fitted(doc):
    return pub.fit_profile(pub.anchors_20b(doc))


def test_committed_file_is_what_the_builder_writes():
    committed = (paths.results_dir() / "published.json").read_text(encoding="utf-8")
    assert committed == src.dumps(src.build_published()), \
        "published.json differs from its builder: run python -m peagle_nb.lab.records.published_sources"


def test_every_blog_figure_is_there_with_its_source(doc):
    runs = runs_of([doc])
    ratios = select(runs, kind="speedup_over_eagle3", target=pub.TARGET_20B)
    assert len(ratios) == 21
    assert {r["prompt_set"] for r in ratios} == set(WORKLOADS)
    assert sorted({r["concurrency"] for r in ratios}) == [1, 2, 4, 8, 16, 32, 64]
    figures = {"MT-Bench": "Figure 4", "HumanEval": "Figure 5", "SPEED-Bench (Code)": "Figure 6"}
    assert all(figures[r["prompt_set"]] in r["source_ref"] for r in ratios)
    acc = select(runs, kind="acceptance", target=pub.TARGET_20B)
    assert sorted((r["method"], r["k"]) for r in acc) == sorted([(m, k) for m in ("eagle3", "peagle")
                                                                for k in (3, 7)] * 3)
    assert all(r["source_ref"] for r in runs)
    # the blog's headline range is the min and max of its own captions
    (blog_range,) = select(runs, kind="speedup_over_eagle3_range", target=pub.TARGET_20B)
    values = [r["speedup_over_eagle3"] for r in ratios]
    assert (blog_range["speedup_over_eagle3_min"], blog_range["speedup_over_eagle3_max"]) == (min(values), max(values))
    paper = [r for r in select(runs, kind="speedup_over_eagle3_range") if "targets" in r]
    assert [(r["speedup_over_eagle3_min"], r["speedup_over_eagle3_max"]) for r in paper] == [(1.10, 1.36)]


def test_anchors_and_best_k(doc):
    a = pub.anchors_20b(doc)
    assert set(a) == set(WORKLOADS)
    assert a["MT-Bench"]["tau"] == {"peagle": {3: 2.87, 7: 3.70}, "eagle3": {3: 2.70, 7: 3.27}}
    assert a["SPEED-Bench (Code)"]["ratio"][1] == 1.69 and a["SPEED-Bench (Code)"]["ratio"][64] == 1.25
    for w in WORKLOADS:  # the published heads: P-EAGLE accepts more than EAGLE-3 at equal K
        for k in (3, 7):
            assert a[w]["tau"]["peagle"][k] > a[w]["tau"]["eagle3"][k]
    best = pub.published_best_k(doc)
    assert (best["peagle"]["k"], best["eagle3"]["k"]) == (7, 3)
    assert best["peagle"]["k_swept"] == best["eagle3"]["k_swept"] == (3, 5, 7)
    assert best["peagle"]["caveat"] is None and "occasionally" in best["eagle3"]["quote"]


def test_each_heads_curve_goes_through_its_own_points(fitted):
    for w, curves in fitted.curves.items():
        for m, curve in curves.items():
            for k, tau in fitted.anchors[w]["tau"][m].items():
                assert curve.tau(k) == pytest.approx(tau, abs=1e-6), (w, m, k)


def test_the_fit_and_its_held_out_errors(fitted):
    p = fitted.params
    assert fitted.fit_concurrencies == (1, 4, 16, 64)
    assert p["c"] == pytest.approx(0.2524, abs=2e-3) and p["a"] == pytest.approx(0.01267, abs=3e-4)
    assert p["v1"] == pytest.approx(0.01436, abs=3e-4)
    assert fitted.fit.at_bound == {"f": "lower"}  # no cost per layer beyond reading the weights
    assert fitted.fit.rms == pytest.approx(0.0302, abs=1e-3)
    rows = pub.ratio_table(fitted)
    held = {(r["workload"], r["concurrency"]): r["error"] for r in rows if r["role"] == "held out"}
    assert sorted(held) == sorted((w, c) for w in WORKLOADS for c in (2, 8, 32))
    assert held[("HumanEval", 32)] == pytest.approx(-0.0997, abs=0.003)  # the worst held-out point
    assert held[("MT-Bench", 2)] == pytest.approx(0.0859, abs=0.003)
    summary = pub.error_summary(rows)
    assert summary["n"] == 9
    assert summary["mean_abs"] == pytest.approx(0.0454, abs=0.002)
    assert summary["max_abs"] == pytest.approx(0.0997, abs=0.003)


def test_best_k_misses_are_listed_exactly(doc, fitted):
    rows = pub.best_k_check(fitted, pub.published_best_k(doc))
    assert len(rows) == 42
    misses = sorted((r["workload"], r["concurrency"], r["method"], r["model_best_k"]) for r in rows if not r["match"])
    expected = ([("MT-Bench", c, "peagle", 5) for c in (1, 16, 32, 64)]
                + [("HumanEval", c, "peagle", 5) for c in (1, 16, 32, 64)]
                + [("SPEED-Bench (Code)", c, "peagle", 5) for c in (1, 2, 4, 8, 16, 32, 64)])
    assert misses == sorted(expected)
    for r in rows:
        assert (r["why"] is None) == r["match"]
        if r["why"]:
            assert "Likely missing" in r["why"] and f"K={r['model_best_k']}" in r["why"]


def test_a_cheaper_eagle3_pass_would_move_its_best_k(doc, fitted):
    """The comparison can fail: with free EAGLE-3 passes the model no longer picks K=3 for it."""
    from dataclasses import replace

    cheap = pub.PublishedFit(replace(fitted.cost, e0=0.0, e_req=0.0, e1=0.0), fitted.fit, fitted.curves,
                             fitted.fit_concurrencies, fitted.anchors)
    rows = [r for r in pub.best_k_check(cheap, pub.published_best_k(doc)) if r["method"] == "eagle3"]
    missed = [r for r in rows if not r["match"]]
    assert len(missed) >= 10 and all(r["model_best_k"] == 5 for r in missed)
    assert all("caveat: occasionally higher" in r["why"] for r in missed)


def test_bad_fit_subset_is_named(doc):
    with pytest.raises(ValueError, match=r"no published ratio at \[3\]"):
        pub.fit_profile(pub.anchors_20b(doc), (1, 3))


def test_decomposition_is_the_published_arithmetic(doc):
    rows = pub.decomposition(pub.anchors_20b(doc), pub.published_best_k(doc))
    he1 = next(r for r in rows if r["workload"] == "HumanEval" and r["concurrency"] == 1)
    assert he1["tau_P(K=7) / tau_E(K=3)"] == pytest.approx(3.94 / 2.65, abs=1e-4)
    assert he1["implied EAGLE-3 step / P-EAGLE step"] == pytest.approx(1.55 / (3.94 / 2.65), abs=1e-4)


def test_a_measured_cost_per_layer_is_fixed_not_fitted(doc):
    anchors = pub.anchors_20b(doc)
    pf = pub.fit_profile(anchors, per_layer_ms=0.0244)
    assert pf.fixed == {"f": 0.0244} and pf.params["f"] == 0.0244 and "f" not in pf.fit.params
    assert list(pf.params) == list(pub.FITTED)
    assert pf.cost.p0 - pf.cost.e0 == pytest.approx(3 * 0.0244 + pub.WEIGHTS_MS["peagle"] - pub.WEIGHTS_MS["eagle3"])
    assert pf.fit.rms < 0.035  # the ratios are fitted about as well as with f free
    with pytest.raises(ValueError, match="per_layer_ms"):
        pub.fit_profile(anchors, per_layer_ms=-1.0)


def test_extrapolation_fits_each_side_and_predicts_the_other(doc):
    rows = pub.extrapolation_check(pub.anchors_20b(doc), split=8, per_layer_ms=0.0244)
    up, down = rows
    assert (up["fit_on"], up["predicted"]) == ([1, 2, 4, 8], [16, 32, 64]) and up["n"] == 9
    assert (down["fit_on"], down["predicted"]) == ([16, 32, 64], [1, 2, 4, 8]) and down["n"] == 12
    assert abs(up["worst_error"]) == up["max_abs"]
    assert down["mean_abs"] > 2 * up["mean_abs"]  # high-concurrency ratios do not pin the fixed costs
    with pytest.raises(ValueError, match="nothing on one side"):
        pub.extrapolation_check(pub.anchors_20b(doc), split=64)
