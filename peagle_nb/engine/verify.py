"""Verification: which drafts the target keeps, and the one token it adds itself. Explained in notebook 01.

Greedy (temperature 0): the target's argmax at each of the K+1 verified positions; drafts are kept
while they equal it, and the target's argmax at the first mismatch (or after the last draft) is the
bonus token. So the output is exactly plain greedy decoding, whatever the drafter proposed.
This is ``peagle_kernels.greedy_verify`` (Triton on CUDA, PyTorch elsewhere, identical results).

Sampling (temperature > 0): standard speculative rejection sampling (Leviathan et al. 2023, Chen et
al. 2023). Draft j, drawn from the drafter's q_j, is kept with probability min(1, p_j(d)/q_j(d)); at the
first rejection the token is resampled from norm(max(0, p_j - q_j)); when all K are kept, a bonus token
is drawn from p_K. The output is then distributed exactly as sampling from the target p.
This is ``peagle_kernels.sampled_verify`` (one Triton launch on CUDA, its PyTorch reference elsewhere).

Randomness: every draw is made from uniforms drawn up front, one block per step (``step_uniforms``): the
drafter's draws (K rows over its vocabulary), the resample (one row over the target vocabulary) and the K
acceptance tests, in that order. Both engines draw the same block from the same seeded generator, so they
sample the same tokens, and on a GPU the draws need no launch inside the captured step.
"""

from __future__ import annotations

import torch

from peagle_kernels.greedy_verify import greedy_verify
from peagle_kernels.sampled_verify import sampled_verify


def probs_from_logits(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """softmax(logits / T) in fp32."""
    return torch.softmax(logits.float() / temperature, dim=-1)


def verify_greedy(draft_tokens: torch.Tensor, target_logits: torch.Tensor) -> tuple[int, int]:
    """draft_tokens [K], target_logits [K+1, V] -> (accepted, token the target adds)."""
    target_tokens = target_logits.argmax(dim=-1)
    accepted, bonus, _ = greedy_verify(draft_tokens.reshape(1, -1).long(), target_tokens.reshape(1, -1).long())
    return int(accepted[0]), int(bonus[0])


def inv_temperature(temperature: float, n: int = 1, device=None) -> torch.Tensor:
    """[n] fp32 of 1/T (0 for greedy): the kernels multiply by it, so both engines round 1/T the same way."""
    return torch.full((n,), 1.0 / temperature if temperature > 0 else 0.0, dtype=torch.float32, device=device)


def step_uniforms(k: int, draft_vocab: int, vocab: int, generator, device=None) -> torch.Tensor:
    """One step's uniforms [k * draft_vocab + vocab + k]: the drafts' draws, the resample, the acceptance tests."""
    return torch.rand(k * draft_vocab + vocab + k, generator=generator, device=device)


def split_uniforms(u: torch.Tensor, k: int, draft_vocab: int, vocab: int):
    """``step_uniforms`` -> (drafts [k, draft_vocab], resample [vocab], acceptance [k]) views."""
    n = k * draft_vocab
    return u[:n].view(k, draft_vocab), u[n:n + vocab], u[n + vocab:n + vocab + k]


def sample_token(logits: torch.Tensor, temperature: float, generator) -> torch.Tensor:
    """One draw from softmax(logits [V] / T) (``sampled_verify`` with no drafts) -> 0-d int64."""
    v = logits.shape[-1]
    u = torch.rand(v, generator=generator, device=logits.device)
    _, token, _ = sampled_verify(logits.reshape(1, 1, v), None, None, None,
                                 inv_temperature(temperature, 1, logits.device), None, u.reshape(1, v))
    return token[0]


REJECTION_SLICE_FLOATS = 1 << 24  # floats of the per-slice copies in rejection_sample (64 MB)


def rejection_sample(draft_tokens: torch.Tensor, draft_probs: torch.Tensor, target_probs: torch.Tensor,
                     generator: torch.Generator | None = None, use_triton: bool | None = None
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """Speculative rejection sampling, batched, through ``peagle_kernels.sampled_verify``.

    draft_tokens [B, K] (drawn from draft_probs), draft_probs [B, K, V], target_probs [B, K+1, V], all
    over the TARGET vocabulary. Returns (accepted [B] int64, next_token [B] int64): the first
    ``accepted`` drafts are kept and ``next_token`` follows them (a resample at the first rejection,
    else the bonus drawn from target_probs[:, K]). The probabilities go in as logits log(p) at T = 1.
    """
    b, k = draft_tokens.shape
    if draft_probs.shape[:2] != (b, k) or target_probs.shape[:2] != (b, k + 1):
        raise ValueError(f"shapes disagree: drafts {tuple(draft_tokens.shape)}, draft_probs "
                         f"{tuple(draft_probs.shape)}, target_probs {tuple(target_probs.shape)} "
                         "(need [B,K,V], [B,K+1,V])")
    v, dev = target_probs.shape[-1], target_probs.device
    u_acc = torch.rand(b, k, generator=generator, device=dev)
    u_res = torch.rand(b, v, generator=generator, device=dev)
    identity = torch.arange(v, dtype=torch.int32, device=dev)
    # every row is verified on its own: slices of rows give the same draws while the [rows, K+1, V] float copies
    # stay small (notebook 01 verifies 20,000 rows over the whole vocabulary)
    step = max(1, REJECTION_SLICE_FLOATS // ((2 * k + 3) * v))
    accepted, token = [], []
    for i in range(0, b, step):
        rows = slice(i, i + step)
        acc, tok, _ = sampled_verify(target_probs[rows].float().log(), draft_tokens[rows].long(),
                                     draft_probs[rows].float(), identity, inv_temperature(1.0, len(u_acc[rows]), dev),
                                     u_acc[rows], u_res[rows], use_triton=use_triton)
        accepted.append(acc)
        token.append(tok)
    return torch.cat(accepted).long(), torch.cat(token)

