"""The parallel-drafting ceiling (``analysis.parallel_ceiling``): its estimator on the tiny target, the command, and
the recorded file for both targets."""

from __future__ import annotations

import json
import statistics

import pytest
import torch

from peagle_nb.analysis import parallel_ceiling as pc
from peagle_nb.files import paths
from peagle_nb.lab.benchmarks import parallel_ceiling as cmd
from peagle_nb.models.target import default_path, load_target

RECORD = paths.results_dir() / "family_v3" / "parallel_ceiling.json"


@pytest.fixture(scope="module")
def tiny():
    return load_target(default_path())


def _context(tok):
    return tok("The theory of speculative decoding")["input_ids"]


def test_the_first_slot_sees_everything_and_a_cold_target_leaves_little_to_guess(tiny):
    model, tok = tiny
    gen = torch.Generator().manual_seed(0)
    warm = pc.slot_ceilings(model, _context(tok), 4, 16, 1.0, gen)
    c, r = warm["ceiling"], warm["reach"]
    assert c[0] == pytest.approx(1.0, abs=1e-4) and r[0] == pytest.approx(1.0, abs=1e-4)  # slot 1 sees everything
    assert all(0.0 <= x <= 1.0 for x in c + r) and min(c[1:]) < 0.99
    assert all(r[d] <= r[d - 1] + 1e-6 and r[d] <= c[d] + 1e-6 for d in range(1, 4))  # passing all is rarer
    cold = pc.slot_ceilings(model, _context(tok), 4, 16, 0.02, gen)["ceiling"]  # nearly greedy: the paths agree
    assert min(cold) > 0.9 and sum(cold[1:]) > sum(c[1:])


def test_the_conditional_ceiling_pools_anchors_like_the_engine_pools_steps():
    # anchor A always passes, anchor B never passes slot 2: slot 3 is judged on A alone
    reach = [[1.0, 1.0, 0.5], [1.0, 0.0, 0.0]]
    assert pc.conditional(reach) == [1.0, 0.5, 0.5]
    per = [{"ceiling": [1.0, 1.0, 0.5], "reach": reach[0]}, {"ceiling": [1.0, 0.0, 0.4], "reach": reach[1]}]
    s = pc.summarize(per)
    assert s["mean"] == [1.0, 0.5, 0.45] and s["conditional"] == [1.0, 0.5, 0.5] and s["anchors"] == 2
    lo, hi = s["conditional_p10_p90"][1]  # resampling the two anchors: slot 2 passes at 0, 1/2 or 1
    assert 0.0 <= lo <= 0.5 <= hi <= 1.0 and s["conditional_p10_p90"][0] == [1.0, 1.0]


def test_a_marginal_that_is_the_target_itself_passes_everything(tiny):
    model, tok = tiny
    gen = torch.Generator().manual_seed(3)
    # a context whose next tokens the tiny target is sure of at a low temperature: every slot's marginal is its p
    sure = pc.slot_ceilings(model, _context(tok), 3, 2, 1e-3, gen)
    assert sure["ceiling"] == pytest.approx([1.0] * 3, abs=1e-3) and sure["reach"] == pytest.approx([1.0] * 3, abs=3e-3)


def test_greedy_and_bad_settings_are_refused(tiny):
    model, tok = tiny
    with pytest.raises(ValueError, match="greedy has none"):
        pc.slot_ceilings(model, _context(tok), 3, 8, 0.0)
    with pytest.raises(ValueError, match="n_paths >= 2"):
        pc.slot_ceilings(model, _context(tok), 3, 1, 1.0)
    with pytest.raises(SystemExit, match="greedy decoding has no parallel ceiling"):
        cmd.main(["--targets", f"t={default_path()}", "--temperatures", "0", "--out", "x.json"])


def test_the_command_keeps_every_anchor(tmp_path):
    out = tmp_path / "ceiling.json"
    assert cmd.main(["--targets", f"tiny={default_path()}", "--temperatures", "1", "--prompts-per-set", "1",
                     "--anchors", "2", "--stride", "4", "--paths", "4", "--depth", "3", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    sets = doc["targets"]["tiny"]["by_temperature"]["1"]
    assert set(sets) == {"prose", "code", "ja"}
    for s in sets.values():
        assert s["anchors"] == len(s["per_anchor"]) == 2
        assert all(len(a["ceiling"]) == len(a["reach"]) == 3 for a in s["per_anchor"])
        assert s["mean"][0] == pytest.approx(1.0, abs=1e-4) and s["conditional"][0] == pytest.approx(1.0, abs=1e-4)


def test_the_recorded_ceilings_recompute_and_name_the_measured_v3_weights():
    doc = json.loads(RECORD.read_text())
    card = json.loads((paths.results_dir() / "family_v3" / "target_h200" / "training_log.json").read_text())
    assert doc["targets"]["v3"]["weights_sha256"] == card["weights_sha256"]
    assert set(doc["targets"]) == {"tiny", "v3"} and doc["temperatures"] == [0.7, 1.0]
    for target in doc["targets"].values():
        for sets in target["by_temperature"].values():
            for s in sets.values():
                assert s["anchors"] == len(s["per_anchor"]) == doc["prompts_per_set"] * doc["anchors"]
                for d in range(doc["depth"]):
                    col = [a["ceiling"][d] for a in s["per_anchor"]]
                    assert s["mean"][d] == pytest.approx(statistics.fmean(col))
                    assert s["stderr"][d] == pytest.approx(statistics.stdev(col) / len(col) ** 0.5)
                reach = [a["reach"] for a in s["per_anchor"]]
                assert s["conditional"] == pytest.approx(pc.conditional(reach))
                assert s["conditional_p10_p90"] == pc.bootstrap(reach)
                assert s["mean"][0] == pytest.approx(1.0, abs=1e-4)
