"""The learning-rate schedule shared by every training run of the suite: linear warm-up, then cosine
decay to ``min_lr_frac * lr``. ``progress`` is the fraction of the run done (by steps or by time budget)."""

from __future__ import annotations

import math


def lr_at(cfg, step: int, progress: float) -> float:
    """``cfg`` needs ``lr``, ``warmup_steps`` and ``min_lr_frac`` (both training configs have them)."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    return cfg.lr * (cfg.min_lr_frac + (1 - cfg.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0))))
