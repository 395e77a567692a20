"""Notebook 00 in smoke mode: the capability report, and what a target forward costs by rows on this machine
beside the recorded H200 phases."""

import json
from pathlib import Path

import pytest

NOTEBOOK = "00_setup_and_environment_check.ipynb"
SMOKE_PARAMETERS = {"SMOKE": True, "ROWS": [1, 2, 4, 6, 8, 16]}

pytestmark = pytest.mark.notebook


def test_notebook_00_records_environment(run_notebook, repo_root):
    import torch

    from peagle_nb.notebook.series import SERIES

    result = run_notebook(NOTEBOOK, **SMOKE_PARAMETERS)
    rec = result.records
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():  # Linux: the kernel's own list of processors, read without Python's help
        processors = sum(line.startswith("processor") for line in cpuinfo.read_text().splitlines())
        assert rec["env.cpu_count"] == processors
    # every notebook of the series is classified, full or smoke-only
    assert rec["env.notebooks_full"] + rec["env.notebooks_smoke_only"] == len(SERIES)

    # the forward over T rows, timed in smoke mode's 10 rounds, at every requested row count
    rows = SMOKE_PARAMETERS["ROWS"]
    assert rec["env.verify_cost.reps"] == 10 and rec["env.verify_cost.rows"] == rows
    probe = rec["env.verify_cost.threads_probe_ms"]  # the faster of one and two threads on this machine, right now
    assert rec["env.verify_cost.threads"] == int(min(probe, key=probe.get)) and set(probe) <= {"1", "2"}
    med, p10, p90 = (rec[f"env.verify_cost.ms_{q}"] for q in ("median", "p10", "p90"))
    assert len(med) == len(p10) == len(p90) == len(rows)
    assert all(0 < lo <= m <= hi for lo, m, hi in zip(p10, med, p90))
    rel = rec["env.verify_cost.over_one_row"]
    assert rel[0] == 1.0 and rel == pytest.approx([m / med[0] for m in med], rel=1e-3)
    # the lesson, measured: 8 rows (verifying K = 7 drafts) cost a fraction of 8 decoding steps. The band is wide (a
    # shared 2-core VM measured 1.4 with one thread, 2.0 with two under heavy load); its top means "far from 8"
    assert rec["env.verify_cost.k_plus_1_rows"] == 8
    assert 0.7 <= rec["env.verify_cost.k_plus_1_over_one_row"] <= 5.0
    assert rec["env.verify_cost.k_plus_1_over_one_row"] == pytest.approx(rel[rows.index(8)], abs=1e-3)
    assert med[-1] / rows[-1] < med[0]  # per token, 16 rows in one forward beat 16 one-row forwards

    # the H200's recorded phases, read from the results file: one plain step and verify over K+1 rows
    phases = json.loads((repo_root / "data/results/engine_h200.json").read_text())["phases"]
    plain = next(p["plain_ms"] for p in phases if p["method"] == "none")
    assert rec["env.verify_cost.h200.rows"][0] == 1
    assert rec["env.verify_cost.h200.ms"][0] == pytest.approx(plain, abs=1e-5)
    assert rec["env.verify_cost.h200.rows"] == [1] + sorted(p["k"] + 1 for p in phases if p["method"] == "peagle")
    h_rel = rec["env.verify_cost.h200.over_one_row"]
    assert all(1.0 <= r <= 1.5 for r in h_rel)  # recorded: the GPU's verify over up to 8 rows ~ one plain step

    assert rec["env.cuda_available"] == torch.cuda.is_available()
    if rec["env.cuda_available"]:
        assert rec["env.triton_mode"] == "gpu" and "env.verify_cost.gpu_eager_ms_median" in rec  # the GPU cell ran
    else:
        assert rec["env.triton_mode"] in {"interpreter", "unavailable"}
        assert "NVIDIA GPU" in result.skipped["gpu_rows"]  # the gated GPU cell said why it skipped
