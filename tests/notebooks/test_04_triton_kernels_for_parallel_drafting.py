"""Notebook 04 in smoke mode: kernels equal their references under the interpreter; the builder's share of a
decoding step (recorded H200 and live); recorded H200 figures per call."""

import json

import pytest
import torch

from peagle_nb.files import paths

NOTEBOOK = "04_triton_kernels_for_parallel_drafting.ipynb"
SMOKE_PARAMETERS = {"SMOKE": True, "SEED": 0}

pytestmark = pytest.mark.notebook


def test_notebook_04_kernels_match_references_and_gpu_figures(run_notebook):
    result = run_notebook(NOTEBOOK, **SMOKE_PARAMETERS)
    rec = result.records
    # Exact agreement, not a tolerance: the kernels move integers and copy floats.
    assert rec["kernels.greedy_verify.max_abs_diff"] == 0
    assert rec["kernels.draft_inputs.max_abs_diff"] == 0
    assert rec["kernels.hidden_expand.max_abs_diff"] == 0.0
    assert rec["kernels.n_random_checks"] == 3
    # The worked example: 12 target tokens + 3 requests x (K-1=2) rows; 2 rejected rows + 1 past max_model_len.
    assert rec["kernels.example.n_out_rows"] == 18
    assert rec["kernels.example.n_padding_slots"] == 3
    assert rec["kernels.example.seq_lens_vs_positions_diff"] == 0  # first positions from seq_lens or positions
    # the builder's recorded time at every batch the batched engine ran (the concurrency records)
    for b in (1, 2, 4):
        assert 0 < rec[f"gpu.draft_inputs.engine_batch_{b}.device_us"] < 20
    # Recorded on the H200 (data/results/kernels_h200.json): correct there too, and the fusion pays.
    assert rec["gpu.device"] == "NVIDIA H200"
    assert rec["gpu.greedy_verify.max_abs_diff"] == 0 and rec["gpu.draft_inputs.max_abs_diff"] == 0
    assert 0.2 < rec["gpu.launch_floor_us"] < 20
    assert 1.0 <= rec["gpu.draft_inputs.max_over_floor_upto_256"] < 4
    assert 1.0 <= rec["gpu.greedy_verify.max_over_floor_upto_256"] < 4
    assert 1.0 <= rec["gpu.draft_inputs_positions.max_over_floor_upto_256"] < 4  # without seq_lens
    assert 1.0 <= rec["gpu.repeat.draft_inputs.max_over_floor_upto_256"] < 4  # the same benchmark run again
    # two dependent loads cost most of the 2x budget
    assert 1.2 < rec["gpu.dependent_loads.2x256.over_floor"] < rec["gpu.draft_inputs.max_over_floor_upto_256"]
    assert 1.0 < rec["gpu.draft_inputs.max_over_two_load_chain_upto_256"] < 1.25
    assert rec["gpu.draft_inputs.speedup_vs_eager"] > 10  # ~50 launches vs one
    assert rec["gpu.greedy_verify.speedup_vs_eager"] > 2
    assert rec["gpu.draft_inputs.host_speedup_vs_eager"] > 2
    assert 0.6 < rec["gpu.hidden_expand.fraction_of_copy_large"] <= 1.05
    assert rec["gpu.hidden_expand.eager_fraction_of_copy_large"] < rec["gpu.hidden_expand.fraction_of_copy_large"]
    assert rec["gpu.hidden_expand.speedup_vs_eager"] > 1.5
    assert 2000 < rec["gpu.copy_gbs"] < 5000  # H200 HBM3e: 4.8 TB/s peak
    assert rec["gpu.n_runs"] > 200
    # The host time of one call (batch 1, K=7): the fused launch still costs the host far more than the device
    wall, dev = rec["gpu.draft_inputs.b1_k7.wall_us"], rec["gpu.draft_inputs.b1_k7.device_us"]
    assert set(wall) == {"triton", "eager", "reference"} and set(dev) == {"triton", "eager"}
    assert wall["triton"] > 10 * dev["triton"] and wall["eager"] > wall["triton"]
    # The builder's share of a real P-EAGLE step, recorded on the H200 by the engine sweep (fused vs eager)
    h200 = json.loads((paths.results_dir() / "engine_h200.json").read_text())["builder_comparison"]
    for r in h200:
        key = f"step_share.h200.{r['builder']}.k{r['k']}"
        assert rec[f"{key}.build_ms"] == pytest.approx(r["build_ms"], abs=1e-5)
        assert rec[f"{key}.build_share"] == pytest.approx(r["build_share"], abs=1e-4)
    for k in (3, 7):
        assert rec[f"step_share.h200.fused.k{k}.build_share"] < rec[f"step_share.h200.eager.k{k}.build_share"]
    # ... and measured live on this machine with the lean engine, both builders at K = 3 and 7
    for builder in ("fused", "eager"):
        for k in (3, 7):
            key = f"step_share.live.{builder}.k{k}"
            assert 0.0 < rec[f"{key}.build_share"] < 1.0 and rec[f"{key}.build_ms"] > 0.0
    assert rec["step_share.live.device"] == ("this CPU" if not torch.cuda.is_available() else
                                             torch.cuda.get_device_name())
    if torch.cuda.is_available():  # the live benchmark ran on this GPU and recorded its figures
        assert "live_kernel_bench" not in result.skipped
        for key in ("live.launch_floor_us", "live.draft_inputs.max_over_floor_upto_256",
                    "live.draft_inputs.speedup_vs_eager", "live.hidden_expand.fraction_of_copy_large"):
            assert key in rec, key
    else:
        assert "NVIDIA GPU" in result.skipped["live_kernel_bench"]
    # Section 4b/4c: sampled verification
    # the worked step: draft 1 (likely under p) kept, draft 2 (unlikely) rejected; kernel == reference
    assert rec["kernels.sampled_example.accepted"] == 1 and rec["kernels.sampled_example.same_as_reference"]
    assert rec["kernels.sampled_verify.differing_outputs"] == 0
    assert rec["kernels.draft_sample.differing_outputs"] == 0
    # lossless through the kernel: the output is as close to p as direct draws are (400 samples in smoke mode)
    assert rec["kernels.sampled_verify.tv_output_vs_p"] < max(3 * rec["kernels.sampled_verify.tv_direct_draws_vs_p"],
                                                              0.12)
    # recorded on the H200: fusion makes every sampled phase cheaper, and a fused sampled phase costs little more
    # than the greedy one
    for key in ("plain", "verify_k7", "peagle_draft_k7", "eagle3_draft_k7"):
        fused, chain = rec[f"sampled_phases.h200.fused.{key}.over_greedy"], rec[
            f"sampled_phases.h200.chain.{key}.over_greedy"]
        assert fused < chain and fused < 1.2
    assert rec["gpu.sampled_verify.b1_k7.device_us"] < rec["gpu.sampled_verify.b1_k7.eager_device_us"]
    by_k = rec["gpu.sampled_verify.b1_device_us_by_k"]  # two launches: the rows' statistics side by side
    assert max(by_k.values()) < 1.5 * min(v for k, v in by_k.items() if int(k) > 0)
