"""The two ways a head is run over a whole training sequence at once (teacher forcing with real tokens,
the drafter's own hidden states). Shared by training and by the all-anchor acceptance measurement.
Explained in notebooks 02 (TTT unroll) and 03 (the P-EAGLE COD layout).

Both return, per draft element, the logits and the index of the target row that labels it: element
``(anchor i, depth d)`` predicts token ``x[i+d+2]``, i.e. target logits row ``i+d+1``.
"""

from __future__ import annotations

import torch

from peagle_nb.models.heads import DraftHead, DraftKVCache
from peagle_nb.training.cod import cod_attention_mask, ttt_attention_mask


def peagle_layout_forward(head: DraftHead, tokens: torch.Tensor, features: torch.Tensor, anchors: torch.Tensor,
                          depths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One P-EAGLE pass over a COD layout -> (logits [B, N, Vd], label rows [N]).

    Depth-0 elements get token ``x[i+1]`` and ``fc(f[i])``; deeper ones ``<mask>`` and ``fc(mask_hidden)``;
    positions ``i + d``; attention restricted by :func:`cod_attention_mask`.
    """
    b, t = tokens.shape
    dev = tokens.device
    anchors, depths = anchors.to(dev), depths.to(dev)
    real = (depths == 0)
    proj = head.project(features[:, : t - 1])  # [B, T-1, H]
    hidden = torch.where(real[None, :, None], proj[:, anchors], head.mask_hidden_projected().to(proj.dtype))
    ids = torch.where(real[None], tokens[:, (anchors + 1).clamp(max=t - 1)],
                      torch.full_like(tokens[:, :1], head.mask_token_id))
    pos = (anchors + depths)[None].expand(b, -1)
    mask = cod_attention_mask(anchors, depths)[None, None]
    logits, _ = head(ids, hidden, pos, attn_mask=mask)
    return logits, anchors + depths + 1


def eagle3_unroll(head: DraftHead, tokens: torch.Tensor, features: torch.Tensor, steps: int
                  ) -> list[torch.Tensor]:
    """EAGLE-3 training-time test: ``steps`` chained passes over all slots -> logits per step ``[B, T-1, Vd]``.

    Step ``s`` puts token ``x[i+1+s]`` and the previous step's pre-norm hidden at slot ``i`` (position
    ``i + s``); it attends to step-0 keys ``<= i`` and its own chain (:func:`ttt_attention_mask`).
    Step ``s`` slot ``i`` is labelled by target row ``i + s + 1`` (valid while ``<= T-1``).
    """
    b, t = tokens.shape
    n = t - 1
    slots = torch.arange(n, device=tokens.device)
    hidden = head.project(features[:, :n])
    cache = DraftKVCache()
    out = []
    for s in range(steps):
        ids = tokens[:, (slots + 1 + s).clamp(max=t - 1)]
        pos = (slots + s)[None].expand(b, -1)
        mask = None if s == 0 else ttt_attention_mask(n, s, device=tokens.device)[None, None]
        logits, hidden = head(ids, hidden, pos, cache=cache, attn_mask=mask)
        out.append(logits)
    return out


@torch.no_grad()
def all_anchor_drafts(head: DraftHead, tokens: torch.Tensor, features: torch.Tensor, k: int) -> torch.Tensor:
    """Greedy drafts of every anchor of ONE sequence -> target ids ``[T-1, k]`` (``-1`` past the end).

    Row ``i`` is what the head drafts at a step whose verified prefix ends with bonus token ``x[i+1]``:
    exactly the inference computation (the drafter's real context is the same for every anchor).
    """
    t = tokens.shape[-1]
    tokens, features = tokens.reshape(1, t), features.reshape(1, t, -1)
    out = torch.full((t - 1, k), -1, dtype=torch.long, device=tokens.device)
    if head.kind == "peagle":
        from peagle_nb.training.cod import cod_sample

        valid = t - 1 - torch.arange(t - 1)
        anchors, depths = cod_sample(t - 1, k, r=1.0, r_min=1.0, valid_depths=valid)
        logits, _ = peagle_layout_forward(head, tokens, features, anchors, depths)
        out[anchors.to(out.device), depths.to(out.device)] = head.draft_to_target(logits[0].argmax(-1))
    else:
        for s, logits in enumerate(eagle3_unroll(head, tokens, features, k)):
            ok = torch.arange(t - 1, device=out.device) + s + 1 <= t - 1
            out[ok, s] = head.draft_to_target(logits[0].argmax(-1))[ok]
    return out
