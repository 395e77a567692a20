"""At temperature > 0 speculative rejection sampling reproduces the target's distribution.

Statistical tests with fixed seeds (deterministic) and a negative control: the same test on a
sampler that skips rejection (accepts every draft) must fail, so the test has power.
"""


import numpy as np
import pytest
import torch

from peagle_nb.engine import SpecDecoder
from peagle_nb.engine.verify import rejection_sample
from tests.engine.helpers import OracleHead, tiny_target

ALPHA = 1e-3


def chi2_pvalue(counts: np.ndarray, probs: np.ndarray, min_expected: float = 5.0) -> float:
    """Chi-square goodness of fit; cells expected < min_expected are pooled into one."""
    n = counts.sum()
    exp = probs * n
    big = exp >= min_expected
    obs_c = np.append(counts[big], counts[~big].sum())
    exp_c = np.append(exp[big], exp[~big].sum())
    if exp_c[-1] == 0:
        obs_c, exp_c = obs_c[:-1], exp_c[:-1]
    exp_c = exp_c * obs_c.sum() / exp_c.sum()
    stat = float(((obs_c - exp_c) ** 2 / exp_c).sum())
    df = len(obs_c) - 1
    # chi2 survival function = regularized upper incomplete gamma Q(df/2, stat/2)
    return float(torch.special.gammaincc(torch.tensor(df / 2, dtype=torch.float64),
                                         torch.tensor(stat / 2, dtype=torch.float64)))


def _fixed_dists(v=6, k=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    p = torch.softmax(torch.randn(k + 1, v, generator=g) * 2.0, -1)
    q = torch.softmax(torch.randn(k, v, generator=g) * 2.0, -1)
    return p, q


def _simulate(p, q, n, seed, accept_all=False):
    k = q.shape[0]
    g = torch.Generator().manual_seed(seed)
    drafts = torch.multinomial(q, n, replacement=True, generator=g).T  # [n, k]
    if accept_all:  # the broken sampler of the negative control
        return torch.full((n,), k), torch.multinomial(p[k], n, replacement=True, generator=g), drafts
    acc, nxt = rejection_sample(drafts, q.expand(n, k, -1), p.expand(n, k + 1, -1), g)
    return acc, nxt, drafts


def _output_at(position, acc, nxt, drafts):
    """Token at output position j of each sample (None-masked where the output is shorter)."""
    tok = torch.where(acc > position, drafts[:, min(position, drafts.shape[1] - 1)], nxt)
    return tok[acc >= position]


@pytest.mark.parametrize("position", [0, 1, 2, 3])
def test_each_output_position_follows_target(position):
    # with prefix-independent p_j, output position j must be distributed as p_j exactly
    p, q = _fixed_dists()
    acc, nxt, drafts = _simulate(p, q, 40000, seed=position)
    tok = _output_at(position, acc, nxt, drafts)
    counts = np.bincount(tok.numpy(), minlength=p.shape[1])
    assert chi2_pvalue(counts, p[position].numpy()) > ALPHA
    assert 0 < (acc < q.shape[0]).float().mean() < 1  # both paths (reject and full accept) happen


def test_chi2_pvalue_matches_known_values():
    # 3 cells, expected 100 each, statistic 2.0 with df 2 -> p = exp(-1)
    assert chi2_pvalue(np.array([110, 90, 100]), np.array([1 / 3] * 3)) == pytest.approx(np.exp(-1.0), rel=1e-6)


def test_negative_control_accept_all_fails():
    p, q = _fixed_dists()
    acc, nxt, drafts = _simulate(p, q, 40000, seed=0, accept_all=True)
    counts = np.bincount(_output_at(0, acc, nxt, drafts).numpy(), minlength=p.shape[1])
    assert chi2_pvalue(counts, p[0].numpy()) < ALPHA


def test_identical_draft_and_target_accepts_everything():
    p, _ = _fixed_dists()
    acc, _, _ = _simulate(p, p[:3], 2000, seed=3)
    assert bool((acc == 3).all())


def test_shape_mismatch_is_explained():
    p, q = _fixed_dists()
    with pytest.raises(ValueError, match=r"need \[B,K,V\]"):
        rejection_sample(torch.zeros(1, 3, dtype=torch.long), q.unsqueeze(0), p[:3].unsqueeze(0))


# ---- the whole engine: joint distribution of generated tokens vs the exact target distribution ----

V, NEW, T = 4, 3, 1.0


@pytest.fixture(scope="module")
def peaky_target():
    return tiny_target(vocab=V, logit_scale=150.0, seed=3)


def exact_joint(target, prompt):
    """P(y1, y2, y3 | prompt) under temperature-T sampling, by enumeration (V^3 cells)."""
    def next_probs(seq):
        with torch.no_grad():
            return torch.softmax(target(torch.tensor([seq])).logits[0, -1].double() / T, -1)
    out = np.zeros((V,) * NEW)
    p1 = next_probs(prompt)
    for a in range(V):
        p2 = next_probs(prompt + [a])
        for b in range(V):
            p3 = next_probs(prompt + [a, b])
            for c in range(V):
                out[a, b, c] = float(p1[a] * p2[b] * p3[c])
    return out.reshape(-1)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["peagle", "eagle3"])
def test_engine_sampling_matches_target(peaky_target, method):
    prompt = [1, 2, 0, 3, 1]
    probs = exact_joint(peaky_target, prompt)
    head = OracleHead(peaky_target, [], kind=method, soft_scale=2.0, seed=5)  # a drafter unlike the target
    dec = SpecDecoder(peaky_target, None, head, method, 2)
    counts = np.zeros(V ** NEW, dtype=np.int64)
    rejected = 0
    n = 1200
    for seed in range(n):
        res = dec.generate(prompt, NEW, temperature=T, seed=seed)
        a, b, c = res.tokens
        counts[(a * V + b) * V + c] += 1
        rejected += res.steps[0].accepted < 2
    assert 0.1 < rejected / n < 0.95, "rejections must be common for the test to mean anything"
    assert chi2_pvalue(counts, probs) > ALPHA
    # and the drafter alone (what 'accept everything' would output) is far from the target
    assert 0.5 * np.abs(counts / n - probs).sum() < 0.1


def test_greedy_drafts_are_kept_with_the_target_probability():
    """vLLM's default at T > 0 (``draft_sampling="greedy"``): the argmax draft, verified with a one-hot q, is kept
    with probability p(draft), and the output still follows p (the residual puts the rest where p has it)."""
    from peagle_nb.engine.drafting import one_hot_q
    from peagle_nb.engine.verify import rejection_sample

    g = torch.Generator().manual_seed(0)
    p = torch.softmax(torch.randn(12, generator=g) * 2, dim=0)
    d = torch.tensor([3])
    n = 40000
    q = one_hot_q(d, 12)[None].expand(n, 1, 12)
    target = torch.stack([p, p])[None].expand(n, 2, 12)
    acc, nxt = rejection_sample(d.expand(n, 1), q, target, g)
    kept = acc.float().mean().item()
    assert abs(kept - p[3].item()) < 4 * (p[3].item() * (1 - p[3].item()) / n) ** 0.5
    out = torch.where(acc > 0, d.expand(n), nxt)
    freq = torch.bincount(out, minlength=12).float() / n
    assert 0.5 * (freq - p).abs().sum().item() < 0.02  # total variation of 40,000 draws from p: ~0.01


def test_rows_verified_in_slices_draw_exactly_what_one_pass_draws(monkeypatch):
    from peagle_nb.engine import verify

    g = torch.Generator().manual_seed(11)
    b, k, v = 300, 3, 50
    q = torch.softmax(torch.randn(b, k, v, generator=g) * 2, -1)
    p = torch.softmax(torch.randn(b, k + 1, v, generator=g) * 2, -1)
    drafts = torch.multinomial(q.reshape(-1, v), 1, generator=g).reshape(b, k)
    whole = rejection_sample(drafts, q, p, torch.Generator().manual_seed(3))
    monkeypatch.setattr(verify, "REJECTION_SLICE_FLOATS", 7 * (2 * k + 3) * v)  # slices of 7 rows, the last of 6
    sliced = rejection_sample(drafts, q, p, torch.Generator().manual_seed(3))
    assert torch.equal(whole[0], sliced[0]) and torch.equal(whole[1], sliced[1])
    assert 0 < int(whole[0].sum()) < b * k  # some drafts kept, some rejected: the comparison sees both
