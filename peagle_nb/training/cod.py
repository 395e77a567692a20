"""Training layouts and attention masks for the draft heads: P-EAGLE's conditional drop-token (COD) depth
sampling and EAGLE-3's training-time-test (TTT) mask. Explained (and plotted) in notebook 03.

P-EAGLE element ``(anchor i, depth d)`` stands for inference slot ``i + d`` of a drafting step anchored at
``i``: depth 0 is the real slot (token ``x[i+1]``, target feature ``f[i]``), depth ``d >= 1`` a ``<mask>``
slot (mask token, ``mask_hidden``). Its rotary position is ``i + d`` and it predicts ``x[i+d+2]``.
It may attend to the real context up to its anchor (depth-0 elements ``j <= i``) and to the earlier
depths of its own chain (``(i, 1..d)``), exactly what it sees at inference.

COD (from PARD): depth 0 keeps every anchor; depth ``d`` keeps ``max(r**d, r_min)`` of the anchors, drawn
only from chains whose depth ``d-1`` was kept, so every kept element has its whole chain.
"""

from __future__ import annotations

import math

import torch


def cod_keep_fractions(k: int, r: float = 0.7, r_min: float = 0.2) -> list[float]:
    """Target kept fraction per depth ``0..k-1``: ``max(r**d, r_min)``."""
    return [max(r ** d, r_min) for d in range(k)]


def cod_sample(num_anchors: int, k: int, r: float = 0.7, r_min: float = 0.2,
               generator: torch.Generator | None = None, valid_depths: torch.Tensor | None = None
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample a COD layout -> ``(anchors [N], depths [N])``, depth-major (all depth 0 first).

    ``valid_depths[i]`` (optional) is the deepest usable depth + 1 for anchor ``i`` (labels run out near
    the end of a sequence); chains are never extended past it.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if not (0 < r <= 1 and 0 <= r_min <= 1):
        raise ValueError(f"need 0 < r <= 1 and 0 <= r_min <= 1, got r={r}, r_min={r_min}")
    alive = torch.arange(num_anchors)
    if valid_depths is not None:
        alive = alive[valid_depths[alive] > 0]
    anchors, depths = [alive], [torch.zeros(len(alive), dtype=torch.long)]
    for d in range(1, k):
        if valid_depths is not None:
            alive = alive[valid_depths[alive] > d]
        want = int(math.ceil(max(r ** d, r_min) * num_anchors))
        if want < len(alive):  # keep a random subset of the surviving chains
            perm = torch.randperm(len(alive), generator=generator)[:want]
            alive = alive[perm].sort().values
        if len(alive) == 0:
            break
        anchors.append(alive)
        depths.append(torch.full((len(alive),), d, dtype=torch.long))
    return torch.cat(anchors), torch.cat(depths)


def full_layout(num_anchors: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Every anchor at every depth (COD with r = 1): the layout that reproduces inference for all anchors."""
    return cod_sample(num_anchors, k, r=1.0, r_min=1.0)


def cod_attention_mask(anchors: torch.Tensor, depths: torch.Tensor) -> torch.Tensor:
    """``Bool[N, N]``: element ``a`` may attend to ``b`` iff ``b`` is real context up to ``a``'s anchor
    (``depth_b == 0 and anchor_b <= anchor_a``) or an earlier-or-equal depth of ``a``'s own chain."""
    ia, da = anchors[:, None], depths[:, None]
    ib, db = anchors[None, :], depths[None, :]
    context = (db == 0) & (ib <= ia)
    own_chain = (ib == ia) & (db >= 1) & (db <= da)
    return context | own_chain


def ttt_attention_mask(num_slots: int, step: int, device=None) -> torch.Tensor:
    """EAGLE-3 TTT step ``step`` (0-based): ``Bool[T, T*(step+1)]`` over keys ``[step 0 | step 1 | ...]``.

    Slot ``i`` at step ``s`` sees step-0 keys ``j <= i`` (real context) and its own chain's keys at
    steps ``1..s`` (the same slot ``i`` of each later step), as at inference.
    """
    t = num_slots
    eye = torch.eye(t, dtype=torch.bool, device=device)
    causal = torch.ones(t, t, dtype=torch.bool, device=device).tril()
    return torch.cat([causal] + [eye] * step, dim=1)


__all__ = ["cod_keep_fractions", "cod_sample", "full_layout", "cod_attention_mask", "ttt_attention_mask"]
