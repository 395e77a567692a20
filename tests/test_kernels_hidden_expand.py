"""hidden_expand: Triton kernel (interpreter, child process) == PyTorch reference == vLLM's two passes; errors."""

import pytest
import torch

from peagle_kernels.hidden_expand import (MASK_ROW, PAD_ROW, bytes_moved, eager_expand_hidden, expand_hidden,
                                          random_case, reference_expand_hidden)
from tests.kernel_cases import run_interpreted

CASES = ["batch_of_one", "nothing_rejected", "everything_rejected", "k1", "empty_requests", "ragged_prefill",
         "bfloat16", "float16", "large_batch"]


@pytest.fixture(scope="module")
def interpreted():
    return run_interpreted("hidden_expand")


@pytest.mark.parametrize("case", CASES)
def test_triton_and_vllm_two_passes_match_reference(interpreted, case):
    res = interpreted[case]
    assert res["diff"] == 0.0 and res["eager_diff"] == 0.0, res


def test_edge_cases_exercise_what_they_claim(interpreted):
    assert interpreted["k1"]["n_mask_rows"] == 0  # K=1: a bonus row but no mask rows
    assert interpreted["nothing_rejected"]["n_pad_rows"] == 0
    assert interpreted["everything_rejected"]["n_pad_rows"] > 0
    assert interpreted["empty_requests"]["n_pad_rows"] > 0


def test_reference_by_hand():
    target = torch.arange(6.0).view(3, 2)
    mask = torch.tensor([-1.0, -2.0])
    src = torch.tensor([2, MASK_ROW, 0, PAD_ROW], dtype=torch.int32)
    assert reference_expand_hidden(target, mask, src).tolist() == [[4, 5], [-1, -2], [0, 1], [0, 0]]
    assert expand_hidden(target, mask, src).tolist() == [[4, 5], [-1, -2], [0, 1], [0, 0]]  # CPU: reference
    assert bytes_moved(target, src) == 2 * 2 * 4 + 4 * 2 * 4 + 4 * 4 + 2 * 4


@pytest.mark.parametrize("mutate, match", [
    (lambda t, m, s: (t, m.double(), s), "mask_hidden is torch.float64"),
    (lambda t, m, s: (t, torch.cat([m, m, m]), s), r"projected mask state \[H=16\]"),
    (lambda t, m, s: (t.long(), m.long(), s), "float16, bfloat16 or float32"),
    (lambda t, m, s: (t, m, s.float()), "hidden_src must be int32 or int64"),
    (lambda t, m, s: (t, m, s + 1000), "hidden_src values must be input rows"),
    (lambda t, m, s: (t[0], m, s), "target_hidden must be a 2-D tensor"),
])
def test_bad_inputs_raise_before_launch(mutate, match):
    target, mask, src, _, _ = random_case(3, 3, 16)
    with pytest.raises(ValueError, match=match):
        expand_hidden(*mutate(target, mask, src), use_triton=True)


def test_out_buffer_shape_is_checked():
    target, mask, src, _, _ = random_case(3, 3, 16)
    with pytest.raises(ValueError, match="out must be"):
        expand_hidden(target, mask, src, out=torch.empty(1, 16))


def test_eager_needs_no_zeroed_buffer_outside_padding_rows():
    target, mask, src, hmap, masked = random_case(6, 4, 24, seed=3)
    stale = torch.full((src.numel(), 24), 7.0)
    eag = eager_expand_hidden(target, mask, hmap, masked, out=stale)
    keep = src != PAD_ROW  # vLLM leaves padding rows stale; every other row is defined
    assert torch.equal(eag[keep], reference_expand_hidden(target, mask, src)[keep])
