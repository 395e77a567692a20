"""The typed sweep summary keeps the results files' schema: every committed summary (each engine results file's and
each of its regimes') reads back through SweepSummary unchanged, key order included, and summarising the committed
runs again gives the committed summary."""

import json

import pytest

from peagle_nb.engine.evaluate import summarize_sweep, summarize_sweep_sets
from peagle_nb.engine.sweep_summary import OverSweeps, SweepSummary, read_summaries
from peagle_nb.files import paths

ENGINE_FILES = sorted(paths.results_dir().glob("engine_*.json"))


def _sweeps_of(doc: dict) -> list[tuple[str, dict]]:
    """(name, part) of a results file's top-level sweep and each regime: each has ``runs`` and ``summary``."""
    return [("top", doc)] + [(f"T={r['temperature']} n={r['max_new_tokens']}", r) for r in doc.get("regimes", [])]


@pytest.fixture(scope="module")
def committed() -> list[tuple[str, dict]]:
    assert ENGINE_FILES, "no data/results/engine_*.json to read"
    return [(f"{path.name} {name}", part) for path in ENGINE_FILES
            for name, part in _sweeps_of(json.loads(path.read_text(encoding="utf-8")))]


def test_every_committed_summary_reads_back_unchanged(committed):
    kinds = set()
    for where, part in committed:
        for ps, flat in part["summary"].items():
            typed = SweepSummary.from_dict(flat)
            again = typed.to_dict()
            assert list(again) == list(flat) and again == flat, f"{where} {ps}"
            kinds.add((typed.peagle_over_eagle3_tpot is not None, typed.method("peagle").at_k7 is not None))
    assert (True, True) in kinds and (False, True) in kinds  # summaries with and without TPOT were read


def test_summarising_the_committed_runs_gives_the_committed_summary(committed):
    for where, part in committed:
        typed = summarize_sweep_sets(part["runs"])
        assert {ps: s.to_dict() for ps, s in typed.items()} == part["summary"], where
        assert all(list(summarize_sweep(part["runs"])[ps]) == list(part["summary"][ps]) for ps in typed), where


def test_fields_are_the_summary_figures(committed):
    where, part = committed[0]
    flat = part["summary"]["prose"]
    s = read_summaries(part["summary"])["prose"]
    assert s.method("peagle").best_k == flat["peagle.best_k"]
    assert s.method("eagle3").at_k7.tau == flat["eagle3.k7.tau"]
    cost = s.method("eagle3").draft_cost
    assert flat[f"eagle3.draft_cost_ratio_k{cost.k_high}_vs_k{cost.k_low}"] == cost.ratio and cost.k_low == 1
    assert s.peagle_over_eagle3_at_best_k == OverSweeps.from_dict(flat["peagle_over_eagle3_at_best_k"])
    with pytest.raises(ValueError, match="no 'medusa' runs"):
        s.method("medusa")


def test_an_unknown_key_or_a_foreign_object_is_refused(committed):
    flat = committed[0][1]["summary"]["prose"]
    with pytest.raises(ValueError, match="does not know.*peagle.best_k_typo"):
        SweepSummary.from_dict({**flat, "peagle.best_k_typo": 3})
    with pytest.raises(ValueError, match="not a sweep summary"):
        SweepSummary.from_dict({"none": {"tau": 1.0}})
    assert read_summaries({"incomplete": "no complete sweep on 'prose'"}) == {}  # a regime the budget cut short
