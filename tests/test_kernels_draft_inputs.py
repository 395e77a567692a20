"""draft_inputs: Triton kernel (interpreter, child process) == PyTorch reference == vLLM's kernel; clear errors."""

import pytest
import torch

from peagle_kernels.draft_inputs import (MASK_ROW, PAD_ROW, build_draft_inputs, eager_draft_inputs, max_abs_diff,
                                         random_batch, reference_draft_inputs)
from tests.kernel_cases import run_interpreted

CASES = ["batch_of_one", "nothing_rejected", "everything_rejected", "k1", "max_model_len", "prefill_and_decode",
         "empty_requests", "all_empty", "long_prefill_2d_grid", "long_prefill_looping", "large_batch"]


@pytest.fixture(scope="module")
def interpreted():
    return run_interpreted("draft_inputs")


@pytest.mark.parametrize("case", CASES)
def test_triton_matches_reference(interpreted, case):
    assert interpreted[case]["diff"] == 0, interpreted[case]


@pytest.mark.parametrize("case", [c for c in CASES if "empty" not in c])
def test_reference_matches_vllm_kernel(interpreted, case):
    if "vllm_diff" not in interpreted[case]:
        pytest.skip("vLLM is not installed")
    assert interpreted[case]["vllm_diff"] == 0, interpreted[case]


def test_edge_cases_exercise_what_they_claim(interpreted):
    assert interpreted["nothing_rejected"]["n_rejected"] == 0
    assert interpreted["everything_rejected"]["n_rejected"] == 6 * 5
    assert interpreted["max_model_len"]["n_padding_slots"] > interpreted["max_model_len"]["n_rejected"]
    assert interpreted["all_empty"]["n_rejected"] == interpreted["all_empty"]["n_out"]
    assert interpreted["long_prefill_2d_grid"]["n_out"] > 256  # two token blocks


def test_reference_on_a_hand_worked_request():
    # One request: the target verified [b0, d1, d2, d3] at positions 10..13 and rejected d2, d3.
    tok = torch.tensor([100, 101, 102, 103])
    pos = torch.arange(10, 14)
    bt = torch.tensor([[7, 3, 5, 9]], dtype=torch.int32)  # block_size 4: positions 8..11 -> column 2 = block 5
    out = reference_draft_inputs(tok, pos, torch.tensor([555]), torch.tensor([0, 4], dtype=torch.int32),
                                 torch.tensor([2], dtype=torch.int32), bt, k=3, mask_token_id=999,
                                 block_size=4, max_model_len=16)
    assert out.input_ids.tolist() == [101, 555, 999, 999, 0, 0]  # [valid | bonus | K-1 masks | 2 rejected]
    assert out.positions.tolist() == [10, 11, 12, 13, 0, 0]
    assert out.is_masked.tolist() == [False, False, True, True, False, False]
    assert out.is_rejected.tolist() == [False, False, False, False, True, True]
    assert out.sample_indices.tolist() == [1, 2, 3]
    assert out.slot_mapping.tolist() == [5 * 4 + 2, 5 * 4 + 3, 9 * 4 + 0, 9 * 4 + 1, -1, -1]
    assert out.hidden_state_mapping.tolist() == [0, 1, 2, 3]
    assert out.hidden_src.tolist() == [0, 1, MASK_ROW, MASK_ROW, PAD_ROW, PAD_ROW]
    assert out.query_start_loc.tolist() == [0, 6]


@pytest.mark.parametrize("seed, K, kw", [(0, 3, {}), (1, 7, {"decode": False}), (2, 1, {"empty_every": 2}),
                                         (3, 10, {"near_max_len": True, "max_model_len": 256})])
def test_eager_chain_matches_reference(seed, K, kw):
    args, bkw = random_batch(13, K, seed=seed, **kw)
    assert max_abs_diff(eager_draft_inputs(*args, **bkw), reference_draft_inputs(*args, **bkw)) == 0


def test_auto_dispatch_on_cpu_uses_the_reference():
    args, kw = random_batch(5, 4, seed=5)
    assert max_abs_diff(build_draft_inputs(*args, **kw), reference_draft_inputs(*args, **kw)) == 0


def _bad(name):
    args, kw = random_batch(4, 3, seed=1, max_model_len=64, block_size=8)
    tok, pos, bonus, qsl, nrej, bt = args
    if name == "positions_length":
        pos = pos[:-1]
    elif name == "token_dtype":
        tok = tok.float()
    elif name == "k0":
        kw["k"] = 0
    elif name == "block_table_too_small":
        bt = bt[:, :3]
    elif name == "block_table_rows":
        bt = bt[:2]
    elif name == "qsl_length":
        qsl = qsl[:-1]
    elif name == "qsl_end":
        qsl = qsl.clone()
        qsl[-1] -= 1
    elif name == "too_many_rejected":
        nrej = nrej.clone()
        nrej[0] = 4
    return (tok, pos, bonus, qsl, nrej, bt), kw


@pytest.mark.parametrize("name, match", [
    ("positions_length", "target_positions has"), ("token_dtype", "target_token_ids must be int32 or int64"),
    ("k0", "k must be an integer >= 1"), ("block_table_too_small", "block table too small"),
    ("block_table_rows", "fewer than the 4 requests"), ("qsl_length", "B\\+1 = 5 entries"),
    ("qsl_end", "end at len\\(target_token_ids\\)"), ("too_many_rejected", "at most 3 of them"),
])
def test_bad_inputs_raise_before_launch(name, match):
    args, kw = _bad(name)
    with pytest.raises(ValueError, match=match):
        build_draft_inputs(*args, **kw, use_triton=True)
