"""Drafting cost vs K, measured in isolation: the one figure that separates EAGLE-3 from P-EAGLE.

Explained in notebooks 02 and 03. ``draft_cost_vs_k`` times one steady-state drafting step (the
drafter's cache already holds the prompt; the step adds the newest real slot and drafts K tokens),
repeated and restored between repeats, with CUDA synchronised. EAGLE-3 pays K sequential passes;
P-EAGLE one pass over K slots.
"""

from __future__ import annotations

import statistics
import time

import torch

from peagle_nb.engine.checks import head_layer_ids
from peagle_nb.engine.drafting import ChainDrafter, ParallelDrafter
from peagle_nb.engine.target_runner import TargetRunner


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def draft_cost_vs_k(target, head, method: str, prompt_ids, ks=range(1, 11), reps: int = 20,
                    warmup: int = 3) -> list[dict]:
    """[{"method", "k", "draft_ms" (median), "draft_ms_p10", "draft_ms_p90"}] for each K."""
    runner = TargetRunner(target, head_layer_ids(head))
    _, feats = runner.forward(torch.as_tensor(prompt_ids))
    ids = torch.as_tensor(prompt_ids).to(runner.device)
    n = ids.shape[0]
    out = []
    for k in ks:
        cls = ChainDrafter if method == "eagle3" else ParallelDrafter
        drafter = cls(head, k, target.config.vocab_size)
        drafter.propose(ids[1:], feats[:-1])  # context: slots 0..n-2 in the drafter's cache
        times = []
        for r in range(warmup + reps):
            drafter.cache.crop(n - 1)
            drafter.ctx_len = n - 1
            _sync(runner.device)
            t0 = time.perf_counter()
            drafter.propose(ids[-1:], feats[-1:])  # steady state: one new real slot, K drafts
            _sync(runner.device)
            if r >= warmup:
                times.append((time.perf_counter() - t0) * 1e3)
        q = statistics.quantiles(times, n=10) if len(times) >= 2 else times * 9
        out.append({"method": method, "k": k, "draft_ms": statistics.median(times),
                    "draft_ms_p10": q[0], "draft_ms_p90": q[-1]})
    return out
