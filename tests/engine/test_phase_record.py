"""The typed step-phases row keeps the results files' schema: every committed row of ``phases``,
``sampler_comparison`` and ``builder_comparison`` reads back through StepPhases unchanged (keys in order), and a row
without its phases is refused."""

import json

import pytest

from peagle_nb.analysis import step_phases
from peagle_nb.engine.phase_record import PHASES, StepPhases, as_phases
from peagle_nb.files import paths

SECTIONS = ("phases", "sampler_comparison", "builder_comparison")


@pytest.fixture(scope="module")
def committed_rows() -> list[tuple[str, dict]]:
    files = sorted(paths.results_dir().glob("engine_*.json"))
    assert files, "no data/results/engine_*.json to read"
    docs = {f.name: json.loads(f.read_text(encoding="utf-8")) for f in files}
    return [(f"{name} {sec}", row) for name, doc in docs.items() for sec in SECTIONS for row in doc.get(sec, [])]


def test_every_committed_row_reads_back_unchanged(committed_rows):
    assert {where.split()[1] for where, _ in committed_rows} == set(SECTIONS)
    for where, row in committed_rows:
        again = StepPhases.from_dict(row).to_dict()
        assert list(again) == list(row) and again == row, where


def test_typed_and_flat_rows_give_the_same_step(committed_rows):
    for where, row in committed_rows:
        typed = StepPhases.from_dict(row)
        if "step_device_ms" in row:  # the sweep recorded the sum of its phases beside them
            assert typed.phase_sum_ms == pytest.approx(row["step_device_ms"]), where
        assert step_phases.step_ms(typed) == step_phases.step_ms(row)
        assert typed.plain == ("plain_ms" in row)
        if not typed.plain:
            assert [typed.phase_ms(p) for p in PHASES] == [row[f"{p}_ms"] for p in PHASES]


def test_a_row_without_its_phases_or_with_an_unknown_key_is_refused():
    with pytest.raises(ValueError, match="needs plain_ms .* or all of build_ms"):
        StepPhases.from_dict({"method": "peagle", "k": 3, "build_ms": 0.1, "draft_ms": 0.2, "verify_ms": 0.3})
    with pytest.raises(ValueError, match="unknown keys \\['drafts_ms'\\]"):
        StepPhases.from_dict({"method": "none", "k": 0, "plain_ms": 1.0, "drafts_ms": 0.2})
    plain = as_phases({"method": "none", "k": 0, "plain_ms": 1.5})
    assert as_phases(plain) is plain and plain.to_dict() == {"method": "none", "k": 0, "plain_ms": 1.5}
    with pytest.raises(ValueError, match="no 'draft' phase"):
        plain.phase_ms("draft")


def test_measured_rows_name_each_phase():
    row = StepPhases.measured("peagle", 3, {"build": 0.1, "draft": 0.2, "verify": 0.3, "update": 0.05},
                              builder="fused", step_device_ms=0.65)
    assert row.to_dict() == {"method": "peagle", "k": 3, "builder": "fused", "build_ms": 0.1, "draft_ms": 0.2,
                             "verify_ms": 0.3, "update_ms": 0.05, "step_device_ms": 0.65}
    assert row.phase_sum_ms == pytest.approx(0.65)
