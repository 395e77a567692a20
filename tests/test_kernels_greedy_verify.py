"""greedy_verify: Triton kernel (under the interpreter, in a child process) == PyTorch reference; clear errors."""

import pytest
import torch

from peagle_kernels._common import interpreter_active
from peagle_kernels.greedy_verify import eager_greedy_verify, greedy_verify, random_case, reference_greedy_verify
from tests.kernel_cases import run_interpreted

CASES = ["batch_of_one", "nothing_rejected", "everything_rejected", "k1", "empty_requests", "ragged_random",
         "large_batch", "int32_tokens", "tile_one", "tile_8_partial_last_program"]


@pytest.fixture(scope="module")
def interpreted():
    return run_interpreted("greedy_verify")


@pytest.mark.parametrize("case", CASES)
def test_triton_matches_reference(interpreted, case):
    assert interpreted[case]["diff"] == 0, interpreted[case]


def test_edge_cases_have_the_expected_shape(interpreted):
    assert interpreted["nothing_rejected"]["accepted"] == [4] * 5
    assert interpreted["nothing_rejected"]["rejected"] == [0] * 5
    assert interpreted["everything_rejected"]["accepted"] == [0] * 5
    assert interpreted["everything_rejected"]["rejected"] == [4] * 5
    assert interpreted["empty_requests"]["accepted"][0] == 0 and interpreted["empty_requests"]["rejected"][0] == 0


def test_reference_on_a_hand_worked_example():
    draft = torch.tensor([[5, 6, 7], [5, 9, 7], [1, 2, 3]])
    target = torch.tensor([[5, 6, 7, 8], [5, 6, 7, 8], [4, 2, 3, 8]])
    acc, bonus, rej = reference_greedy_verify(draft, target, torch.tensor([3, 3, 2], dtype=torch.int32))
    assert acc.tolist() == [3, 1, 0] and bonus.tolist() == [8, 6, 4] and rej.tolist() == [0, 2, 2]
    assert (acc.dtype, bonus.dtype, rej.dtype) == (torch.int32, torch.int64, torch.int32)


@pytest.mark.parametrize("seed", range(5))
def test_eager_chain_matches_reference(seed):
    draft, target, nd = random_case(40, 1 + seed * 2, seed=seed)
    for a, b in zip(eager_greedy_verify(draft, target, nd), reference_greedy_verify(draft, target, nd)):
        assert torch.equal(a, b)


def test_auto_dispatch_on_cpu_uses_the_reference():
    draft, target, nd = random_case(8, 3, seed=9)
    for a, b in zip(greedy_verify(draft, target, nd), reference_greedy_verify(draft, target, nd)):
        assert torch.equal(a, b)
    assert greedy_verify(draft[:0], target[:0])[0].shape == (0,)


@pytest.mark.skipif(interpreter_active(), reason="this process already runs Triton's interpreter")
def test_triton_on_cpu_without_interpreter_says_how_to_enable_it():
    draft, target, _ = random_case(2, 3)
    with pytest.raises(RuntimeError, match="TRITON_INTERPRET=1"):
        greedy_verify(draft, target, use_triton=True)


@pytest.mark.parametrize("bad, match", [
    (lambda d, t, n: (d, t[:, :3], n), r"target_tokens must have shape \[B, K\+1\]"),
    (lambda d, t, n: (d.float(), t, n), "draft_tokens must be int32 or int64"),
    (lambda d, t, n: (d[:, :0], t[:, :1], n), "K >= 1"),
    (lambda d, t, n: (d, t, n[:2]), "one entry per request"),
    (lambda d, t, n: (d, t, n + 10), r"num_drafts must lie in \[0, K=4\]"),
    (lambda d, t, n: (d[0], t, n), "2 dimension"),
])
def test_bad_inputs_raise_before_launch(bad, match):
    d, t, n = random_case(4, 4, seed=1)
    with pytest.raises(ValueError, match=match):
        greedy_verify(*bad(d, t, n), use_triton=True)  # a ValueError, not the interpreter's RuntimeError


def test_bad_tile_raises_before_launch():
    d, t, n = random_case(4, 4, seed=1)
    with pytest.raises(ValueError, match="tile must be a power of two"):
        greedy_verify(d, t, n, use_triton=True, tile=48)
