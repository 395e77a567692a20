"""draft_inputs: Triton kernel (interpreter, child process) == PyTorch reference == vLLM's kernel, with first
positions from seq_lens and from target_positions; clear errors."""

import pytest
import torch

from peagle_kernels.draft_inputs import (MASK_ROW, PAD_ROW, build_draft_inputs, eager_draft_inputs, max_abs_diff,
                                         random_batch, reference_draft_inputs)
from tests.kernel_cases import DRAFT_INPUTS_CASES, draft_inputs_case, run_interpreted

CASES = list(DRAFT_INPUTS_CASES)


@pytest.fixture(scope="module")
def interpreted():
    return run_interpreted("draft_inputs")


@pytest.mark.parametrize("shape", ["one_pass", "loop"])
@pytest.mark.parametrize("path", ["positions", "seq_lens"])
@pytest.mark.parametrize("case", CASES)
def test_triton_matches_reference(interpreted, case, path, shape):
    assert interpreted[case][f"{path}_{shape}"] == 0, interpreted[case]


@pytest.mark.parametrize("case", CASES)
def test_other_launch_tiles_give_the_same_batch(interpreted, case):
    assert interpreted[case]["other_tiles"] == 0, interpreted[case]


@pytest.mark.parametrize("case", CASES)
def test_seq_lens_path_matches_positions_path_in_reference_and_eager(case):
    args, kw = draft_inputs_case(case)
    ref = reference_draft_inputs(*args, **{**kw, "seq_lens": None})
    assert max_abs_diff(reference_draft_inputs(*args, **kw), ref) == 0
    assert max_abs_diff(eager_draft_inputs(*args, **kw), ref) == 0


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
    # seq_lens: the sequence holds 14 tokens including these 4, so they start at 14 - 4 = 10, as above
    with_seq_lens = reference_draft_inputs(tok, pos, torch.tensor([555]), torch.tensor([0, 4], dtype=torch.int32),
                                           torch.tensor([2], dtype=torch.int32), bt, k=3, mask_token_id=999,
                                           block_size=4, max_model_len=16, seq_lens=torch.tensor([14]))
    assert max_abs_diff(with_seq_lens, out) == 0


@pytest.mark.parametrize("with_seq_lens", [False, True])
@pytest.mark.parametrize("seed, K, kw", [(0, 3, {}), (1, 7, {"decode": False}), (2, 1, {"empty_every": 2}),
                                         (3, 10, {"near_max_len": True, "max_model_len": 256})])
def test_eager_chain_matches_reference(seed, K, kw, with_seq_lens):
    args, bkw = random_batch(13, K, seed=seed, with_seq_lens=with_seq_lens, **kw)
    assert max_abs_diff(eager_draft_inputs(*args, **bkw), reference_draft_inputs(*args, **bkw)) == 0


def test_random_batch_keeps_its_batch_when_adding_seq_lens():
    args, kw = random_batch(9, 4, seed=3, decode=False, empty_every=4)
    args_s, kw_s = random_batch(9, 4, seed=3, decode=False, empty_every=4, with_seq_lens=True)
    assert all(torch.equal(a, b) for a, b in zip(args, args_s)) and kw_s.pop("seq_lens").dtype == torch.int32
    assert kw_s == kw


def test_seq_lens_of_empty_requests_are_not_checked_against_positions():
    args, kw = random_batch(6, 3, seed=4, empty_every=2, with_seq_lens=True)
    seq_lens = kw["seq_lens"].clone()
    seq_lens[1::2] = 0  # empty requests: any length >= 0 (vLLM pads the batch with zeros)
    out = build_draft_inputs(*args, **{**kw, "seq_lens": seq_lens})
    assert max_abs_diff(out, reference_draft_inputs(*args, **{**kw, "seq_lens": None})) == 0


def test_auto_dispatch_on_cpu_uses_the_reference():
    args, kw = random_batch(5, 4, seed=5)
    assert max_abs_diff(build_draft_inputs(*args, **kw), reference_draft_inputs(*args, **kw)) == 0


def _bad(name):
    args, kw = random_batch(4, 3, seed=1, max_model_len=64, block_size=8, with_seq_lens=name.startswith("seq_lens"))
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
    elif name == "seq_lens_list":
        kw["seq_lens"] = kw["seq_lens"].tolist()
    elif name == "seq_lens_dtype":
        kw["seq_lens"] = kw["seq_lens"].float()
    elif name == "seq_lens_2d":
        kw["seq_lens"] = kw["seq_lens"][:, None]
    elif name == "seq_lens_length":
        kw["seq_lens"] = kw["seq_lens"][:-1]
    elif name == "seq_lens_device":
        kw["seq_lens"] = kw["seq_lens"].to("meta")
    elif name == "seq_lens_below_qlen":
        kw["seq_lens"] = kw["seq_lens"].clone()
        kw["seq_lens"][2] = 3  # request 2 has K+1 = 4 tokens this step
    elif name == "seq_lens_disagree":
        kw["seq_lens"] = kw["seq_lens"] + 1
    elif name == "max_query_len_short":
        kw["max_query_len"] = 3  # decode requests have K+1 = 4 tokens
    elif name == "max_query_len_zero":
        kw["max_query_len"] = 0
    elif name == "tile_not_pow2":
        kw["tile"] = 48
    elif name == "elems_per_thread_not_pow2":
        kw["elems_per_thread"] = 3
    return (tok, pos, bonus, qsl, nrej, bt), kw


@pytest.mark.parametrize("name, error, match", [
    ("positions_length", ValueError, "target_positions has"),
    ("token_dtype", ValueError, "target_token_ids must be int32 or int64"),
    ("k0", ValueError, "k must be an integer >= 1"), ("block_table_too_small", ValueError, "block table too small"),
    ("block_table_rows", ValueError, "fewer than the 4 requests"), ("qsl_length", ValueError, "B\\+1 = 5 entries"),
    ("qsl_end", ValueError, "end at len\\(target_token_ids\\)"),
    ("too_many_rejected", ValueError, "at most 3 of them"),
    ("seq_lens_list", TypeError, "seq_lens must be a torch.Tensor, got list"),
    ("seq_lens_dtype", ValueError, "seq_lens must be int32 or int64, got float32; convert it"),
    ("seq_lens_2d", ValueError, "seq_lens must have 1 dimension"),
    ("seq_lens_length", ValueError, "seq_lens must have one entry per request \\(4"),
    ("seq_lens_device", ValueError, "move seq_lens with .to\\('cpu'\\)"),
    ("seq_lens_below_qlen", ValueError, "seq_lens\\[2\\]=3 is less than request 2's 4 tokens"),
    ("seq_lens_disagree", ValueError, "seq_lens\\[0\\]=\\d+ disagrees with target_positions: .* or seq_lens=None"),
    ("max_query_len_short", ValueError, "max_query_len=3 but a request has 4 tokens"),
    ("max_query_len_zero", ValueError, "max_query_len must be a host integer >= 1"),
    ("tile_not_pow2", ValueError, "tile must be a power of two >= 1, got 48"),
    ("elems_per_thread_not_pow2", ValueError, "elems_per_thread must be a power of two >= 1, got 3"),
])
def test_bad_inputs_raise_before_launch(name, error, match):
    args, kw = _bad(name)
    with pytest.raises(error, match=match):
        build_draft_inputs(*args, **kw, use_triton=True)
