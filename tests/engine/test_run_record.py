"""The engine's typed run record keeps the results files' schema: the flat record has the keys, in the order, of the
runs the current sweep wrote to data/results/engine_h200.json (its runs and those of its regimes), and a recorded run
reads back unchanged."""

import json

import pytest
import torch

from peagle_nb.engine.evaluate import RunSettings, evaluate, evaluate_run
from peagle_nb.engine.run_record import DraftingSplit, EngineRun
from peagle_nb.files import paths
from peagle_nb.models.heads import DraftHead, config_for_target
from tests.engine.helpers import tiny_target

SWEEP_KEYS = {"prompt_set", "sweep", "speedup_vs_none"}  # what sweep() adds around evaluate()'s record


def _current(run: dict) -> bool:
    """A run recorded since every key of today's record existed (older parts lack e.g. ``prefill``)."""
    try:
        EngineRun.from_dict(run)
    except ValueError:
        return False
    return True


@pytest.fixture(scope="module")
def recorded_runs() -> list[dict]:
    doc = json.loads((paths.results_dir() / "engine_h200.json").read_text(encoding="utf-8"))
    runs = doc["runs"] + [r for regime in doc.get("regimes", []) for r in regime["runs"]]
    return [r for r in runs if _current(r)]


def _without_sweep_keys(run: dict) -> dict:
    return {k: v for k, v in run.items() if k not in SWEEP_KEYS}


def test_recorded_runs_read_back_unchanged(recorded_runs):
    """Every current run of the file: read as an EngineRun and written back, the same keys in the same order and
    the same values; the runs cover plain and speculative decoding, greedy and sampled."""
    assert {_kind(r) for r in recorded_runs} == {(False, False), (False, True), (True, False), (True, True)}
    for run in recorded_runs:
        flat = _without_sweep_keys(run)
        again = EngineRun.from_dict(run).to_dict()
        assert list(again) == list(flat) and again == flat


def _kind(run: dict) -> tuple[bool, bool]:
    return run["method"] != "none", run["temperature"] > 0


@pytest.mark.parametrize("method,temperature", [("none", 0.0), ("peagle", 0.0), ("peagle", 1.0)])
def test_fresh_record_has_the_recorded_keys(recorded_runs, method, temperature):
    """A record measured now has the key list of a recorded run of its kind (plain / speculative, greedy /
    sampled): the typed record writes the schema the files hold."""
    torch.manual_seed(0)
    target = tiny_target(dtype=torch.float32)
    head = None if method == "none" else DraftHead(config_for_target(
        target.config, "peagle", num_layers=2, draft_vocab_size=32, mask_token_id=63, trained_k=4)).eval()
    rec = evaluate(target, None, head, method, 1 if method == "none" else 3, [[5, 6, 7, 8], [9, 10, 11]],
                   max_new_tokens=12, temperature=temperature, warmup=False)
    same_kind = [r for r in recorded_runs if _kind(r) == (method != "none", temperature > 0)
                 and ("tpot_ms" in r) == ("tpot_ms" in rec)]
    assert same_kind, f"engine_h200.json has no {method} run at temperature {temperature}"
    assert list(rec) == list(_without_sweep_keys(same_kind[0]))


def test_typed_and_flat_records_agree():
    target = tiny_target(dtype=torch.float32)
    head = DraftHead(config_for_target(target.config, "peagle", num_layers=2, draft_vocab_size=32, mask_token_id=63,
                                       trained_k=4)).eval()
    run = evaluate_run(target, None, head, "peagle", 2, [[5, 6, 7, 8]], RunSettings(max_new_tokens=10, warmup=False))
    assert isinstance(run.drafting_split, DraftingSplit) and run.draft_sampling is None  # greedy: no sampler
    flat = run.to_dict()
    assert flat["tau"] == run.tau and flat["tau_fresh"] == run.drafting_split.tau_fresh
    assert "drafting_split" not in flat and "draft_sampling" not in flat
    assert EngineRun.from_dict(flat) == run


def test_absent_fields_stay_absent_and_a_foreign_record_is_refused(recorded_runs):
    plain = next(r for r in recorded_runs if r["method"] == "none")
    run = EngineRun.from_dict(plain)
    assert run.drafting_split is None and run.draft_sampling is None
    assert not {"tau_fresh", "draft_sampling"} & set(run.to_dict())
    no_tpot = EngineRun.from_dict({k: v for k, v in plain.items() if k not in ("tpot_ms", "tpot_ms_p90")})
    assert "tpot_ms" not in no_tpot.to_dict()  # a run whose requests made one token each has no TPOT
    with pytest.raises(ValueError, match="lacks.*ttft_ms"):
        EngineRun.from_dict({k: v for k, v in plain.items() if k != "ttft_ms"})
