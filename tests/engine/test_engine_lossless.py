"""Greedy speculative decoding is token-for-token plain greedy decoding, for any drafter and K."""

import pytest
import torch

from peagle_nb.engine import SpecDecoder
from tests.engine.helpers import OracleHead, tiny_target


@pytest.fixture(scope="module")
def target():
    return tiny_target()


@pytest.fixture(scope="module")
def prompt():
    return torch.randint(0, 60, (10,), generator=torch.Generator().manual_seed(1)).tolist()


@pytest.fixture(scope="module")
def reference(target, prompt):
    res = SpecDecoder(target, method="none").generate(prompt, 40)
    assert len(res.tokens) == 40 and len(res.steps) == 39  # one target pass per token after prefill
    return res.tokens


def test_plain_greedy_matches_full_recompute(target, prompt, reference):
    """The KV-cached plain decoder equals argmax over a full forward of the whole sequence each time."""
    seq = list(prompt)
    for _ in range(12):
        with torch.no_grad():
            seq.append(int(target(torch.tensor([seq])).logits[0, -1].argmax()))
    assert reference[:12] == seq[len(prompt):]


@pytest.mark.parametrize("method", ["eagle3", "peagle"])
@pytest.mark.parametrize("k", [1, 3, 7, 50])  # 50 > remaining tokens
def test_perfect_drafter_is_lossless_and_accepts_all(target, prompt, reference, method, k):
    head = OracleHead(target, prompt + reference, kind=method)
    res = SpecDecoder(target, None, head, method, k).generate(prompt, 40)
    assert res.tokens == reference
    # every draft that lies inside the reference is accepted: K+1 tokens per step until the end
    full = [s for s in res.steps if s.new_tokens == k + 1]
    assert len(full) >= len(res.steps) - 1
    assert res.tau > min(k + 1, 2) - 1e-9


@pytest.mark.parametrize("method", ["eagle3", "peagle"])
@pytest.mark.parametrize("k", [1, 2, 5, 8])
def test_partly_wrong_drafter_is_lossless(target, prompt, reference, method, k):
    """Wrong drafts at scattered positions: rejection + cache rollback must leave no trace."""
    n = len(prompt)
    wrong = {n + i for i in (2, 3, 7, 11, 12, 13, 20, 29, 35)}
    head = OracleHead(target, prompt + reference, kind=method, wrong_positions=wrong)
    res = SpecDecoder(target, None, head, method, k).generate(prompt, 40)
    assert res.tokens == reference
    assert any(s.accepted < k for s in res.steps), "no rejection happened: the test lost its point"
    assert any(s.accepted > 0 for s in res.steps)


@pytest.mark.parametrize("method", ["eagle3", "peagle"])
def test_random_drafter_is_lossless(target, prompt, reference, method):
    head = OracleHead(target, [], kind=method, soft_scale=3.0)  # drafts noise
    for k in (1, 4):
        assert SpecDecoder(target, None, head, method, k).generate(prompt, 40).tokens == reference


def test_drafter_sees_eagle_alignment(target, prompt, reference):
    """P-EAGLE: one drafter pass per step over [pending real slots | <mask> x (K-1)], positions counting on."""
    k = 4
    head = OracleHead(target, prompt + reference, kind="peagle")
    res = SpecDecoder(target, None, head, "peagle", k).generate(prompt, 11)
    assert len(head.calls) == len(res.steps)  # ONE drafter pass per step
    ids, pos = head.calls[0]
    n = len(prompt)
    # prefill slots: tokens x_1..x_n (x_n = first generated token), positions 0..n-1, then K-1 masks
    assert ids[0, :n].tolist() == prompt[1:] + reference[:1]
    assert ids[0, n:].tolist() == [head.mask_token_id] * (k - 1)
    assert pos[0].tolist() == list(range(n + k - 1))
    ids2, pos2 = head.calls[1]  # after a fully accepted step: K accepted drafts + bonus as real slots
    assert ids2[0, :k + 1].tolist() == reference[1:k + 2]
    assert pos2[0, 0] == n


def test_eagle3_makes_k_passes_per_step(target, prompt, reference):
    k = 3
    head = OracleHead(target, prompt + reference, kind="eagle3")
    res = SpecDecoder(target, None, head, "eagle3", k).generate(prompt, 13)
    assert len(head.calls) == k * len(res.steps)
    # chain step j feeds its previous draft as the single new token
    ids1, pos1 = head.calls[1]
    assert ids1.shape == (1, 1) and ids1[0, 0] == reference[1] and pos1[0, 0] == len(prompt)


def test_target_cache_rolls_back(target, prompt, reference):
    n = len(prompt)
    head = OracleHead(target, prompt + reference, kind="peagle", wrong_positions={n + 3})
    dec = SpecDecoder(target, None, head, "peagle", 5)
    res = dec.generate(prompt, 3 + 1)
    # step 1 verified 6 tokens but only 2 drafts were right: cache holds prompt + first token + 2 accepted
    assert res.steps[0].accepted == 2
    assert dec.runner.length == n + 1 + 2
    # the cache content equals a fresh prefill of the kept tokens
    with torch.no_grad():
        fresh = target(torch.tensor([prompt + reference[:4]])).logits[0, -1]
    logits, _ = dec.runner.forward(torch.tensor([reference[3]]))
    assert torch.allclose(logits[-1], fresh.float(), atol=1e-6)


@pytest.mark.parametrize("kind", ["eagle3", "peagle"])
def test_random_draft_head_is_lossless(target, prompt, reference, kind):
    """The suite's real DraftHead module, randomly initialised: verification still makes it lossless."""
    from peagle_nb.models.heads import DraftHead, config_for_target

    cfg = config_for_target(target.config, kind, num_layers=1 if kind == "eagle3" else 2, draft_vocab_size=40,
                            mask_token_id=63 if kind == "peagle" else None, trained_k=8)
    head = DraftHead(cfg)
    head.reset_parameters(std=0.5, seed=2)  # large weights: confident, varied (mostly wrong) drafts
    head = head.to(target.dtype).eval()
    for k in (1, 5):
        assert SpecDecoder(target, None, head, kind, k).generate(prompt, 40).tokens == reference
