"""One step shape, run eagerly (CPU) or captured once as a CUDA graph and replayed (GPU). Explained in notebook 01.

A captured graph replays the recorded kernels with one host call, so a step's ~100 launches cost the
host a few microseconds instead of ~10 us each. The function must read and write only tensors that
live across calls (the decoder's static buffers) and must not read device values on the host. Its
first calls run eagerly twice before capture (Triton compiles, cuBLAS picks kernels) and so repeat
the step's side effects: capture only in a throwaway generation (``LeanDecoder`` warms up for that).
"""

from __future__ import annotations

import gc
import time
from typing import Callable

import torch


class Step:
    """``fn()`` as a replayable step; ``capture_ms`` is the one-off warm-up and capture time (never in tokens/s)."""

    def __init__(self, fn: Callable[[], object], use_graph: bool):
        self.fn, self.use_graph = fn, use_graph
        self.graph: torch.cuda.CUDAGraph | None = None
        self.out = None
        self.capture_ms = 0.0

    @property
    def captured(self) -> bool:
        return self.graph is not None

    def __call__(self):
        if not self.use_graph:
            self.out = self.fn()
            return self.out
        if self.graph is None:
            self._capture()
        self.graph.replay()
        return self.out

    def _capture(self) -> None:
        t0 = time.perf_counter()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                self.fn()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        # A graph of a decoder dropped earlier, freed by the garbage collector in the middle of this capture, calls
        # a CUDA function that capture forbids and invalidates it: collect first, and not during capture (as vLLM).
        gc.collect()
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            with torch.cuda.graph(graph):
                self.out = self.fn()
        finally:
            if was_enabled:  # a caller that had switched the collector off keeps it off
                gc.enable()
        torch.cuda.synchronize()
        self.graph = graph
        self.capture_ms = (time.perf_counter() - t0) * 1e3


class PhaseClock:
    """Times the phases of one step: CUDA events on a GPU (device time, no sync between phases), the host clock
    on a CPU (eager ops are synchronous there). ``mark(name)`` ends the phase ``name``."""

    def __init__(self, device: torch.device, max_marks: int = 16):
        self.cuda = device.type == "cuda"
        # reused every step (the step's times are read before the next starts): no event creation per step
        self.events = [torch.cuda.Event(enable_timing=True) for _ in range(max_marks + 1)] if self.cuda else []

    def start(self) -> None:
        self.names: list[str] = []
        self.t0 = time.perf_counter()
        if self.cuda:
            self.events[0].record()
        else:
            self.stamps = [self.t0]

    def mark(self, name: str) -> None:
        self.names.append(name)
        if self.cuda:
            self.events[len(self.names)].record()
        else:
            self.stamps.append(time.perf_counter())

    def wall_ms(self) -> float:
        return (time.perf_counter() - self.t0) * 1e3

    def phases_ms(self) -> dict[str, float]:
        """Per-phase milliseconds (after the step's results were read, so every event has completed)."""
        out: dict[str, float] = {}
        for i, name in enumerate(self.names):
            if self.cuda:
                ms = self.events[i].elapsed_time(self.events[i + 1])
            else:
                ms = (self.stamps[i + 1] - self.stamps[i]) * 1e3
            out[name] = out.get(name, 0.0) + ms
        return out
