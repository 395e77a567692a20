"""The loop measurement across temperatures: every target and temperature in one file, recomputable from its report."""

from __future__ import annotations

import json

import pytest

from peagle_nb.lab.benchmarks import loops_by_temperature as lbt
from peagle_nb.models.target import default_path


def test_one_target_three_temperatures(tmp_path):
    out = tmp_path / "loops.json"
    assert lbt.main(["--targets", f"tiny={default_path()}", "--temperatures", "0", "0.7", "1", "--prompts-per-set",
                     "1", "--new-tokens", "16", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    tiny = doc["targets"]["tiny"]
    assert set(tiny["repeated_share"]) == {"0", "0.7", "1"}
    for t, row in tiny["repeated_share"].items():
        assert set(row) == {"prose", "code", "ja"} and all(0.0 <= v <= 1.0 for v in row.values())
        for d, v in row.items():  # the table is the report's figure
            assert v == tiny["report"][d][lbt.mode_name(float(t))]["repetition_fraction"]
    assert tiny["report"]["prose"]["T0.7"]["tokens"] == 16 and len(tiny["weights_sha256"]) >= 1


def test_bad_targets_and_options_are_named(tmp_path):
    with pytest.raises(SystemExit, match="NAME=FOLDER"):
        lbt.main(["--targets", str(default_path()), "--out", str(tmp_path / "x.json")])
    with pytest.raises(SystemExit, match="--temperatures must be >= 0"):
        lbt.main(["--targets", f"t={default_path()}", "--temperatures", "-1", "--out", str(tmp_path / "x.json")])
