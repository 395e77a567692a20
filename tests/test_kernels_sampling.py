"""sampled_verify and draft_sample: Triton kernels (under the interpreter, in a child process) == their PyTorch
references given the same uniforms; edge cases; lossless in distribution; clear errors."""

import pytest
import torch

from peagle_kernels.draft_sample import draft_sample, random_case as draft_case, reference_draft_sample
from peagle_kernels.greedy_verify import greedy_verify
from peagle_kernels.sampled_verify import random_case, reference_sampled_verify, sampled_verify
from tests.kernel_cases import run_interpreted

VERIFY_CASES = [f"k{k}_{rule}" for k in (0, 1, 3, 7, 10) for rule in ("sampled_q", "argmax_drafts")] + [
    "mixed_greedy_and_sampled", "every_draft_accepted", "every_draft_rejected", "drafts_outside_draft_vocab",
    "t_to_zero", "chi_square_position_0"]
DRAFT_CASES = ["rows1_vocab4096", "rows7_vocab1000", "rows10_vocab5000", "greedy_rows_mixed",
               "rule_greedy_argmax_drafts", "temperature_half", "chi_square"]


@pytest.fixture(scope="module")
def verify_cases():
    return run_interpreted("sampled_verify", timeout_s=300)


@pytest.fixture(scope="module")
def draft_cases():
    return run_interpreted("draft_sample", timeout_s=300)


@pytest.mark.parametrize("case", VERIFY_CASES)
def test_sampled_verify_triton_matches_reference(verify_cases, case):
    assert verify_cases[case]["diff"] == 0, verify_cases[case]


def test_sampled_verify_edge_cases(verify_cases):
    assert verify_cases["every_draft_accepted"]["accepted"] == [5] * 5
    assert verify_cases["every_draft_rejected"]["accepted"] == [0] * 5
    assert verify_cases["every_draft_rejected"]["rejected"] == [5] * 5
    assert verify_cases["drafts_outside_draft_vocab"]["accepted"] == [3] * 5  # q(d) = 0 < p(d): always kept
    assert verify_cases["t_to_zero"]["greedy_diff"] == 0
    assert min(verify_cases["t_to_zero"]["accepted"]) >= 3
    assert verify_cases["k0_sampled_q"]["accepted"] == [0] * 6


def test_sampled_verify_is_lossless_in_distribution_and_the_kernel_draws_as_its_reference(verify_cases):
    res = verify_cases["chi_square_position_0"]
    assert res["pvalue"] > 1e-3 and res["diff"] == 0 and (res["kernel_rows"], res["rows"]) == (300, 1500)


@pytest.mark.parametrize("case", DRAFT_CASES)
def test_draft_sample_triton_matches_reference(draft_cases, case):
    assert draft_cases[case]["diff"] == 0 and draft_cases[case]["q_diff"] == 0, draft_cases[case]


def test_draft_sample_draws_follow_q(draft_cases):
    res = draft_cases["chi_square"]
    assert res["pvalue"] > 1e-3 and res["diff"] == res["q_diff"] == 0
    assert (res["kernel_rows"], res["rows"]) == (300, 1500)


def test_reference_t_to_zero_equals_greedy_verification():
    case = list(random_case(20, 7, 500, 200, seed=3))
    case[1][:, :4] = case[0][:, :4].argmax(-1)
    case[4][:] = 1e6
    acc, tok, rej = reference_sampled_verify(*case)
    g_acc, g_tok, g_rej = greedy_verify(case[1], case[0].argmax(-1))
    assert torch.equal(acc, g_acc) and torch.equal(tok, g_tok) and torch.equal(rej, g_rej)
    case[4][:] = 0.0  # 1/T = 0: the greedy rule itself
    acc0, tok0, _ = reference_sampled_verify(*case)
    assert torch.equal(acc0, g_acc) and torch.equal(tok0, g_tok)


def test_reference_argmax_drafts_keep_with_probability_p():
    """vLLM's rule: an argmax draft d is kept with probability p(d) (q one-hot)."""
    v, n = 5, 20000
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(1, 2, v, generator=g).expand(n, 2, v).contiguous()
    drafts = torch.full((n, 1), 2)
    acc, tok, _ = reference_sampled_verify(logits, drafts, None, None, torch.ones(n), torch.rand(n, 1, generator=g),
                                           torch.rand(n, v, generator=g), q_one_hot=True)
    p = torch.softmax(logits[0, 0], -1)
    assert abs(float(acc.float().mean()) - float(p[2])) < 4 * (float(p[2]) * (1 - float(p[2])) / n) ** 0.5
    assert not bool((tok[acc == 0] == 2).any())  # a rejected draft is never resampled


def test_auto_dispatch_on_cpu_uses_the_references():
    case = random_case(3, 4, 300, 100, seed=2)
    for a, b in zip(sampled_verify(*case), reference_sampled_verify(*case)):
        assert torch.equal(a, b)
    logits, inv_t, u, d2t = draft_case(3, 100, 300, seed=2)
    ta, qa = draft_sample(logits, inv_t, u, d2t)
    tb, qb = reference_draft_sample(logits, inv_t, u, d2t)
    assert torch.equal(ta, tb) and torch.equal(qa, qb)


def test_out_buffers_are_written():
    case = random_case(2, 3, 300, 100, seed=4)
    out = (torch.full((2,), -7), torch.full((2,), -7), torch.full((2,), -7))
    res = sampled_verify(*case, out=out)
    assert res is out and bool((out[0] >= 0).all()) and bool((out[1] >= 0).all()) and bool((out[2] >= 0).all())


def test_bad_inputs_get_clear_errors():
    logits, drafts, q, t2d, inv_t, u_acc, u_res = random_case(2, 3, 300, 100, seed=5)
    with pytest.raises(ValueError, match=r"draft_tokens must have shape \[B, K\]"):
        sampled_verify(logits, drafts[:, :2], q, t2d, inv_t, u_acc, u_res)
    with pytest.raises(ValueError, match="draft_probs must be the drafter's q"):
        sampled_verify(logits, drafts, None, t2d, inv_t, u_acc, u_res)
    with pytest.raises(ValueError, match="target_to_draft must map each of the V=300"):
        sampled_verify(logits, drafts, q, t2d[:10], inv_t, u_acc, u_res)
    with pytest.raises(ValueError, match=r"u_resample must be uniforms \[B, V\]"):
        sampled_verify(logits, drafts, q, t2d, inv_t, u_acc, u_res[:, :5])
    dl, it, u, d2t = draft_case(2, 100, 300)
    with pytest.raises(ValueError, match=r"uniforms must be a tensor \[R, Vd\]"):
        draft_sample(dl, it, None, d2t)
    with pytest.raises(ValueError, match="d2t must map each of the 100 draft ids"):
        draft_sample(dl, it, u, d2t[:5])
