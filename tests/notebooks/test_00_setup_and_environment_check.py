"""Notebook 00 in smoke mode: the capability report and the machine's measured matmul rate."""

import os

import pytest

NOTEBOOK = "00_setup_and_environment_check.ipynb"
SMOKE_PARAMETERS = {"SMOKE": True, "MATMUL_SIZE": 256}

pytestmark = pytest.mark.notebook


def test_notebook_00_records_environment(run_notebook):
    result = run_notebook(NOTEBOOK, **SMOKE_PARAMETERS)
    rec = result.records
    assert rec["env.cpu_count"] == os.cpu_count()
    assert rec["env.matmul_size"] == 256
    # Any real CPU does a 256^3 fp32 matmul at well over 0.5 GFLOP/s and nothing reaches 100 TFLOP/s.
    assert 0.5 < rec["env.matmul_fp32_gflops"] < 1e5
    assert rec["env.notebooks_full"] + rec["env.notebooks_smoke_only"] >= 1
    assert rec["env.triton_mode"] in {"gpu", "interpreter", "unavailable"}
    if not rec["env.cuda_available"]:
        assert "gpu_matmul" in result.skipped  # the gated GPU cell said why it skipped
        assert "NVIDIA GPU" in result.skipped["gpu_matmul"]
