"""What every kernel module shares: Triton-vs-PyTorch dispatch, the CPU interpreter, and timers.

``@triton.jit`` decides when the decorator runs (i.e. when a module is imported) whether it builds a
GPU kernel or an interpreted one, from ``TRITON_INTERPRET``; triton's own library functions
(``tl.min``, ``tl.cdiv``, ...) are decorated when ``triton`` is first imported. So on a CPU the
variable must be set before the first ``import triton`` in the process; otherwise ``use_triton=True``
on CPU tensors raises a clear error (``use_triton=None`` falls back to the PyTorch reference).
Timers: ``device_us`` (what one more call adds to a stream of them: CUDA graphs of 20 and 60 calls, each
replay queued behind a GPU sleep and timed with events, no host submission latency or per-graph cost),
``wall_us`` (host clock around eager calls: what an eager caller pays), ``launch_floor_us`` (an
empty kernel: the latency floor), ``paired_device_us`` (a kernel and the floor measured alternately),
``dependent_loads_fn`` (a chain of dependent loads: the floor of a kernel whose addresses come from
memory). Explained in notebook 04.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

import torch
import triton
import triton.language as tl

# hidden_src's sentinel rows (draft_inputs writes them, hidden_expand reads them): the row takes the shared
# (projected) mask hidden state, or it is a padding row with a zero hidden state.
MASK_ROW = -1
PAD_ROW = -2
# The same values for kernel code (a kernel reads only constexpr globals).
MASK_ROW_CONST: tl.constexpr = tl.constexpr(MASK_ROW)
PAD_ROW_CONST: tl.constexpr = tl.constexpr(PAD_ROW)


def use_triton_for(use_triton: bool | None, device: torch.device) -> bool:
    """``None`` (auto): Triton on CUDA tensors, the PyTorch reference elsewhere."""
    if use_triton is None:
        return device.type == "cuda"
    if use_triton and device.type not in ("cuda", "cpu"):
        raise ValueError(f"use_triton=True needs CUDA tensors (or CPU for the interpreter), got {device}")
    return bool(use_triton)


def runnable(kernel, device: torch.device):
    """The kernel itself on CUDA; on CPU it must be an interpreted kernel (``TRITON_INTERPRET=1``)."""
    if device.type == "cuda":
        return kernel
    from triton.runtime.interpreter import InterpretedFunction

    if not isinstance(kernel, InterpretedFunction):
        raise RuntimeError(
            "use_triton=True on CPU tensors needs Triton's interpreter, but this process imported triton "
            "without it. Set TRITON_INTERPRET=1 before the first `import triton` (e.g. "
            "`TRITON_INTERPRET=1 python ...`, or os.environ at the top of a notebook), or pass "
            "use_triton=None/False to use the PyTorch reference.")
    return kernel


def interpreter_active() -> bool:
    """True when ``@triton.jit`` kernels in this process run under the interpreter."""
    from triton.runtime.interpreter import InterpretedFunction

    return isinstance(empty_kernel, InterpretedFunction)


def check_int_tensor(name: str, t, ndim: int) -> None:
    """``t`` is an int32 or int64 tensor with ``ndim`` dimensions, else a clear error naming ``name``."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dim() != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {tuple(t.shape)}")
    if t.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"{name} must be int32 or int64, got {str(t.dtype).replace('torch.', '')}; "
                         f"convert it with .to(torch.int64)")


def check_same_device(**tensors) -> torch.device:
    devices = {name: t.device for name, t in tensors.items() if t is not None}
    first = next(iter(devices.values()))
    for name, dev in devices.items():
        if dev != first:
            listing = ", ".join(f"{n}: {d}" for n, d in devices.items())
            raise ValueError(f"all tensors must be on one device ({listing}); move {name} with .to({str(first)!r})")
    return first


# ---------------------------------------------------------------------------------------------- timers
@triton.jit
def empty_kernel(x_ptr):
    """Does nothing: its launch time is the floor any one-launch kernel can reach."""
    pass


@triton.jit
def dependent_loads_kernel(a_ptr, b_ptr, out_ptr, DEPTH: tl.constexpr, N: tl.constexpr):
    """``DEPTH`` loads, each indexed by the value the one before returned, then one store: the least a kernel
    whose addresses depend on loaded values (``query_start_loc`` -> tokens -> ...) can cost. The loads
    alternate between two tables, so that each one is a trip to L2 (not a hit on the line just fetched)."""
    i = tl.program_id(0) * N + tl.arange(0, N)
    x = i
    for d in tl.static_range(DEPTH):
        if d % 2 == 0:
            x = tl.load(a_ptr + x)
        else:
            x = tl.load(b_ptr + x)
    tl.store(out_ptr + i, x)


def dependent_loads_fn(depth: int, programs: int, device="cuda", lanes: int = 32) -> Callable[[], None]:
    """A launch of ``dependent_loads_kernel`` over ``programs`` programs of ``lanes`` lanes, one warp per 32 (identity
    tables, so every load stays in bounds and the chain cannot be folded away by the compiler)."""
    a = torch.arange(programs * lanes, dtype=torch.int32, device=device)
    b, out = a.clone(), torch.empty_like(a)
    kernel = runnable(dependent_loads_kernel, torch.device(device))
    return lambda: kernel[(programs,)](a, b, out, DEPTH=depth, N=lanes, num_warps=max(1, lanes // 32))


def launch_floor_fn(device="cuda") -> Callable[[], None]:
    buf = torch.empty(1, device=device)
    kernel = runnable(empty_kernel, torch.device(device))
    return lambda: kernel[(1,)](buf)


# A GPU sleep queued before each timed replay keeps the device busy while the host submits the graph, so that
# the host's submission latency (~5 us per graph) is not in the timed span: ~100 us at the H200's 1.98 GHz.
SLEEP_CYCLES = 200_000
GRAPH_CALLS = 20  # device_us: graphs of GRAPH_CALLS and 3 * GRAPH_CALLS calls ...
GRAPH_REPS = 15  # ... each replayed this many times
WALL_WARMUP = 2  # wall_us: untimed calls first
PAIRED_ROUNDS = 3  # paired_device_us: alternate measurements of a kernel and the empty one


def _graph_of(fn: Callable[[], object], calls: int) -> "torch.cuda.CUDAGraph":
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):  # compile and warm up outside the capture
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    return graph


def device_us(fn: Callable[[], object]) -> float:
    """Median device time of one call in a stream of them, from CUDA-graph replays (no host launch cost).

    Graphs of ``GRAPH_CALLS`` and ``3 * GRAPH_CALLS`` calls are replayed alternately, each behind a GPU sleep
    (so that the host's submission latency is not timed); one call costs the difference of their median times
    over ``2 * GRAPH_CALLS`` calls, so the graph's own fixed cost cancels too. (Timing a lone replay of 20
    calls from an idle GPU adds ~5 us of submission latency per replay: ~0.25 us per call, which flatters any
    ratio to an empty kernel.)"""
    inner = GRAPH_CALLS
    graphs = {n: _graph_of(fn, n) for n in (inner, 3 * inner)}
    times: dict[int, list[float]] = {n: [] for n in graphs}
    for _ in range(GRAPH_REPS):
        for n, graph in graphs.items():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(SLEEP_CYCLES)
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            times[n].append(start.elapsed_time(end) * 1e3)
    return (statistics.median(times[3 * inner]) - statistics.median(times[inner])) / (2 * inner)


def wall_us(fn: Callable[[], object], reps: int = 30) -> float:
    """Median host time of one eager call (launch overhead included), synchronising around each call."""
    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    for _ in range(WALL_WARMUP):
        fn()
    sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def launch_floor_us(device="cuda", reps: int = 30) -> dict[str, float | None]:
    """Empty-kernel launch: device time (graph) and host time (eager)."""
    fn = launch_floor_fn(device)
    on_gpu = torch.device(device).type == "cuda"
    return {"device_us": device_us(fn) if on_gpu else None, "wall_us": wall_us(fn, reps=reps)}


def paired_device_us(fn: Callable[[], object], device="cuda") -> tuple[float, float]:
    """``(device_us of fn, device_us of the empty kernel)``, each the median of ``PAIRED_ROUNDS`` measurements taken
    alternately: the floor moves by ~10% over a run on a shared host, so a ratio to it is only fair when
    both were measured at the same time."""
    floor = launch_floor_fn(device)
    times, floors = [], []
    for _ in range(PAIRED_ROUNDS):
        floors.append(device_us(floor))
        times.append(device_us(fn))
    return statistics.median(times), statistics.median(floors)


def time_variants(variants: dict[str, tuple[Callable[[], object], bool]], on_gpu: bool,
                  reps: int = 30, with_floor: tuple[str, ...] = ()) -> dict[str, dict[str, float | None]]:
    """``{name: (fn, graph_capturable)}`` -> ``{name: {"device_us", "wall_us"}}``; the variants named in
    ``with_floor`` are timed alternately with the empty kernel and also get its ``floor_us``."""
    out = {}
    for name, (fn, capturable) in variants.items():
        out[name] = {"device_us": None, "wall_us": wall_us(fn, reps=reps)}
        if on_gpu and capturable:
            try:
                if name in with_floor:
                    out[name]["device_us"], out[name]["floor_us"] = paired_device_us(fn)
                else:
                    out[name]["device_us"] = device_us(fn)
            except RuntimeError as exc:  # a variant that cannot be captured is reported, not fatal
                torch.cuda.synchronize()
                out[name]["graph_error"] = str(exc).splitlines()[0][:200]
    return out


def next_pow2(n: int) -> int:
    return triton.next_power_of_2(max(int(n), 1))


__all__ = ["MASK_ROW", "MASK_ROW_CONST", "PAD_ROW", "PAD_ROW_CONST", "check_int_tensor", "check_same_device",
           "dependent_loads_fn", "dependent_loads_kernel", "device_us", "empty_kernel", "launch_floor_us",
           "paired_device_us", "interpreter_active", "next_pow2", "runnable", "time_variants", "use_triton_for",
           "wall_us"]
