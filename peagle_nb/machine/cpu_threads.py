"""How many CPU threads make batch-1 decoding fastest on this machine right now. Explained in notebook 00.

On an idle machine a second thread speeds up the multi-row matrix products of a verify pass or a P-EAGLE
pass. On a machine whose cores are busy with other work it does the opposite, by a wide margin: each of the
hundred-odd small parallel operations of a decoding step waits for a second thread that the operating system
has descheduled (measured on a shared 2-core VM with other jobs running: 560-590 ms per plain step of the tiny
target with two threads, 3-4 ms with one). So the notebooks time a short probe, the lean target's forward over
one row and over eight, with each candidate and keep the fastest for all their timings. A thread count set in
``OMP_NUM_THREADS`` (by the user, or by the test run that runs two test files at once) caps the candidates.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Sequence

import torch

from peagle_nb.engine.lean.forward import LeanTarget


def thread_cap() -> int:
    """The most threads worth trying: the CPU count, or fewer where ``OMP_NUM_THREADS`` says so."""
    cpus = os.cpu_count() or 1
    first = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()  # OpenMP also takes per-level lists
    return max(1, min(cpus, int(first))) if first.isdigit() else cpus


@torch.inference_mode()
def fastest_threads(target, candidates: Sequence[int] = (1, 2), rows: Sequence[int] = (1, 8), rounds: int = 3,
                    context: int = 32) -> dict:
    """Time one forward over each of ``rows`` (after ``context`` cached positions) with each thread count in
    ``candidates`` (those above ``thread_cap()`` dropped), ``rounds`` interleaved rounds after one warm-up,
    set torch to the fastest (median) and return ``{"threads": n, "probe_ms": {n: median ms}}``."""
    cands = sorted({int(c) for c in candidates if 1 <= int(c) <= thread_cap()}) or [1]
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    lt = LeanTarget(target)
    cache = lt.new_cache()
    n = context + max(rows)
    if n > lt.max_positions:
        raise ValueError(f"context ({context}) + {max(rows)} rows exceed the model's {lt.max_positions} positions")
    ids = torch.arange(n, device=lt.device) % lt.vocab_size
    pos = torch.arange(n, device=lt.device)
    lt.forward(ids[:context], pos[:context], pos[:context], cache)
    sync = torch.cuda.synchronize if lt.device.type == "cuda" else (lambda: None)

    def probe():
        for t in rows:
            p = pos[context:context + t]
            lt.forward(ids[context:context + t], p, p, cache)
        sync()

    times: dict[int, list[float]] = {c: [] for c in cands}
    for r in range(rounds + 1):
        for c in cands:
            torch.set_num_threads(c)
            t0 = time.perf_counter()
            probe()
            if r:  # round 0 warms up
                times[c].append((time.perf_counter() - t0) * 1e3)
    med = {c: statistics.median(v) for c, v in times.items()}
    best = min(med, key=med.get)
    torch.set_num_threads(best)
    return {"threads": best, "probe_ms": med}
