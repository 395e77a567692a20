"""Notebook 00 in smoke mode: the capability report and the machine's measured matmul rate."""

from pathlib import Path

import pytest

NOTEBOOK = "00_setup_and_environment_check.ipynb"
SMOKE_PARAMETERS = {"SMOKE": True, "MATMUL_SIZE": 256}

pytestmark = pytest.mark.notebook


def test_notebook_00_records_environment(run_notebook):
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
    # the rate is the smoke-size matmul's flops over its measured time
    assert rec["env.matmul_size"] == 256
    assert rec["env.matmul_fp32_gflops"] == pytest.approx(2 * 256**3 / rec["env.matmul_seconds"] / 1e9, rel=1e-3)
    assert rec["env.cuda_available"] == torch.cuda.is_available()
    if rec["env.cuda_available"]:
        assert rec["env.triton_mode"] == "gpu" and "env.gpu_bf16_tflops" in rec  # the GPU cell ran
    else:
        assert rec["env.triton_mode"] in {"interpreter", "unavailable"}
        assert "NVIDIA GPU" in result.skipped["gpu_matmul"]  # the gated GPU cell said why it skipped
