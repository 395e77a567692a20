"""What one target forward costs by the number of rows it processes: the fact speculative decoding rests on.
Explained in notebook 00.

A plain decoding step pushes ONE new token through the target; verifying K drafts pushes K+1 tokens
through it in one forward. At batch 1 both forwards read every weight once, and the rows only add
arithmetic on weights already read, so K+1 rows cost far less than K+1 steps (on a GPU the tiny target's
step is bound by launching its kernels, which the row count does not change either).

:func:`forward_ms_by_rows` times the lean engine's target forward (the one its verify phase runs) over
T rows appended after a cached context, for several T, interleaved so that every T sees the same machine.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import torch

from peagle_nb.engine.evaluate import spread
from peagle_nb.engine.lean.forward import LeanTarget


@torch.inference_mode()
def forward_ms_by_rows(target, rows: Sequence[int] = (1, 2, 4, 6, 8, 16), context: int = 64, reps: int = 10,
                       warmup: int = 2, seed: int = 0) -> dict[int, dict]:
    """``{T: {"p10", "median", "p90", "values"}}``: ms of one target forward over T rows after ``context`` cached
    positions (token ids drawn at random: the values do not change the work). Rounds of every T in turn,
    ``warmup`` untimed rounds first."""
    rows = [int(t) for t in rows]
    if not rows or min(rows) < 1:
        raise ValueError(f"rows must be a non-empty list of positive row counts, got {rows}")
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    lt = LeanTarget(target)
    if context < 1 or context + max(rows) > lt.max_positions:
        raise ValueError(f"context ({context}) + the largest row count ({max(rows)}) must fit the model's "
                         f"{lt.max_positions} positions, with context >= 1")
    cache = lt.new_cache()
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, lt.vocab_size, (context + max(rows),), generator=g).to(lt.device)
    positions = torch.arange(context + max(rows), device=lt.device)
    lt.forward(ids[:context], positions[:context], positions[:context], cache)  # the cached context
    sync = torch.cuda.synchronize if lt.device.type == "cuda" else (lambda: None)
    times: dict[int, list[float]] = {t: [] for t in rows}
    for r in range(warmup + reps):
        for t in rows:
            pos = positions[context:context + t]
            sync()
            t0 = time.perf_counter()
            lt.forward(ids[context:context + t], pos, pos, cache)  # writes slots past the context: reused each round
            sync()
            if r >= warmup:
                times[t].append((time.perf_counter() - t0) * 1e3)
    return {t: spread(v) | {"values": v} for t, v in times.items()}
