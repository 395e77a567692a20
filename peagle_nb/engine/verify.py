"""Verification: which drafts the target keeps, and the one token it adds itself. Explained in notebook 01.

Greedy (temperature 0): the target's argmax at each of the K+1 verified positions; drafts are kept
while they equal it, and the target's argmax at the first mismatch (or after the last draft) is the
bonus token. So the output is exactly plain greedy decoding, whatever the drafter proposed.
This is ``peagle_kernels.greedy_verify`` (Triton on CUDA, PyTorch elsewhere, identical results).

Sampling (temperature > 0): standard speculative rejection sampling (Leviathan et al. 2023, Chen et
al. 2023). Draft j, drawn from the drafter's q_j, is kept with probability min(1, p_j(d)/q_j(d)); at the
first rejection the token is resampled from norm(max(0, p_j - q_j)); when all K are kept, a bonus token
is drawn from p_K. The output is then distributed exactly as sampling from the target p.
"""

from __future__ import annotations

import torch

from peagle_kernels.greedy_verify import greedy_verify


def probs_from_logits(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """softmax(logits / T) in fp32."""
    return torch.softmax(logits.float() / temperature, dim=-1)


def sample(probs: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """One draw per row of ``probs`` [..., V] -> [...] int64."""
    flat = probs.reshape(-1, probs.shape[-1])
    return torch.multinomial(flat, 1, generator=generator).reshape(probs.shape[:-1])


def verify_greedy(draft_tokens: torch.Tensor, target_logits: torch.Tensor) -> tuple[int, int]:
    """draft_tokens [K], target_logits [K+1, V] -> (accepted, token the target adds)."""
    target_tokens = target_logits.argmax(dim=-1)
    accepted, bonus, _ = greedy_verify(draft_tokens.reshape(1, -1).long(), target_tokens.reshape(1, -1).long())
    return int(accepted[0]), int(bonus[0])


def rejection_sample(draft_tokens: torch.Tensor, draft_probs: torch.Tensor, target_probs: torch.Tensor,
                     generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Speculative rejection sampling, batched.

    draft_tokens [B, K] (drawn from draft_probs), draft_probs [B, K, V], target_probs [B, K+1, V], all
    over the TARGET vocabulary. Returns (accepted [B] int64, next_token [B] int64): the first
    ``accepted`` drafts are kept and ``next_token`` follows them (a resample at the first rejection,
    else the bonus drawn from target_probs[:, K]).
    """
    b, k = draft_tokens.shape
    if draft_probs.shape[:2] != (b, k) or target_probs.shape[:2] != (b, k + 1):
        raise ValueError(f"shapes disagree: drafts {tuple(draft_tokens.shape)}, draft_probs "
                         f"{tuple(draft_probs.shape)}, target_probs {tuple(target_probs.shape)} "
                         "(need [B,K,V], [B,K+1,V])")
    idx = draft_tokens.long().unsqueeze(-1)
    p_d = target_probs[:, :k].gather(-1, idx).squeeze(-1)
    q_d = draft_probs.gather(-1, idx).squeeze(-1)
    u = torch.rand(b, k, generator=generator, device=draft_probs.device)
    # q_d > 0 for a token drawn from q; the clamp only guards a caller passing an impossible draft.
    keep = u < (p_d / q_d.clamp_min(1e-30)).clamp(max=1.0)
    # accepted = length of the all-kept prefix
    accepted = torch.cumprod(keep.long(), dim=1).sum(dim=1)
    rows = torch.arange(b, device=draft_probs.device)
    p_next = target_probs[rows, accepted]  # [B, V]: p at the first rejected (or bonus) position
    q_next = torch.cat([draft_probs, torch.zeros_like(draft_probs[:, :1])], dim=1)[rows, accepted]  # 0 at bonus
    residual = (p_next - q_next).clamp_min(0.0)
    mass = residual.sum(-1, keepdim=True)
    # mass == 0 only when p == q at that position, where rejection has probability 0: fall back to p.
    residual = torch.where(mass > 1e-12, residual / mass.clamp_min(1e-30), p_next)
    next_token = sample(residual, generator)
    return accepted, next_token
