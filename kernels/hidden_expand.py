"""Hidden-state expansion for parallel drafting, in one pass over memory (explained in notebook 04).

The drafter batch built by ``draft_inputs`` has more rows than the target's: K-1 ``<mask>`` rows per
request. Each row's hidden state is either a target row (the features the target computed at that
position), the shared mask hidden state (P-EAGLE's learned ``mask_hidden``, already projected by
``fc``), or zero for a padding row. ``draft_inputs`` gives the gather map ``hidden_src`` (input row,
``MASK_ROW`` = -1 or ``PAD_ROW`` = -2), so each output row is written exactly once::

    out[i] = target_hidden[hidden_src[i]]   if hidden_src[i] >= 0
           = mask_hidden                    if hidden_src[i] == -1
           = 0                              if hidden_src[i] == -2

vLLM does this in two passes, a scatter ``hidden[mapping] = target_hidden`` then
``torch.where(is_masked, mask_hidden, hidden)``, reading and writing the expanded batch twice. The
kernel is memory-bound: its figure of merit is achieved bandwidth over the device's measured
device-to-device copy bandwidth. Run ``python -m peagle_kernels.hidden_expand``.
"""

from __future__ import annotations

import statistics

import torch
import triton
import triton.language as tl

from peagle_kernels._common import (MASK_ROW, MASK_ROW_CONST, PAD_ROW, PAD_ROW_CONST, check_int_tensor,
                                    check_same_device, device_us, next_pow2, runnable, use_triton_for, wall_us)
FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


@triton.jit
def hidden_expand_kernel(
    target_ptr,  # [N_in, H] float: the target's hidden states (rows stride_t apart, columns contiguous)
    mask_ptr,  # [H] float: the projected mask hidden state fc(mask_hidden)
    src_ptr,  # [N_out] int32: hidden_src, an input row, MASK_ROW or PAD_ROW per output row
    out_ptr,  # [N_out, H] float out: the drafter's hidden states (rows stride_o apart, columns contiguous)
    N_out,  # output rows
    H,  # hidden size
    stride_t,  # elements between two rows of target_ptr
    stride_o,  # elements between two rows of out_ptr
    BLOCK_R: tl.constexpr,  # output rows per program
    BLOCK_H: tl.constexpr,  # columns per program
):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    row_ok = rows < N_out
    col_ok = cols < H
    src = tl.load(src_ptr + rows, mask=row_ok, other=PAD_ROW_CONST)
    from_target = (src >= 0)[:, None] & col_ok[None, :]
    vals = tl.load(target_ptr + src.to(tl.int64)[:, None] * stride_t + cols[None, :], mask=from_target, other=0.0)
    shared = tl.load(mask_ptr + cols, mask=col_ok, other=0.0)
    vals = tl.where((src == MASK_ROW_CONST)[:, None], shared[None, :], vals)
    tl.store(out_ptr + rows.to(tl.int64)[:, None] * stride_o + cols[None, :], vals,
             mask=row_ok[:, None] & col_ok[None, :])


def _validate(target_hidden, mask_hidden, hidden_src, out, check_values):
    for name, t, nd in (("target_hidden", target_hidden, 2), ("mask_hidden", mask_hidden, 1)):
        if not isinstance(t, torch.Tensor) or t.dim() != nd:
            raise ValueError(f"{name} must be a {nd}-D tensor, got {getattr(t, 'shape', type(t).__name__)}")
    if target_hidden.dtype not in FLOAT_DTYPES:
        raise ValueError(f"target_hidden must be float16, bfloat16 or float32, got {target_hidden.dtype}")
    if mask_hidden.dtype != target_hidden.dtype:
        raise ValueError(f"mask_hidden is {mask_hidden.dtype} but target_hidden is {target_hidden.dtype}; "
                         f"cast it with .to({target_hidden.dtype})")
    N_in, H = target_hidden.shape
    if mask_hidden.shape[0] != H:
        raise ValueError(f"mask_hidden must be the projected mask state [H={H}] (fc(mask_hidden), not the "
                         f"raw [3H] one), got [{mask_hidden.shape[0]}]")
    check_int_tensor("hidden_src", hidden_src, 1)
    N_out = hidden_src.shape[0]
    if out is not None and (tuple(out.shape) != (N_out, H) or out.dtype != target_hidden.dtype
                            or (out.numel() and out.stride(1) != 1)):
        raise ValueError(f"out must be a row-contiguous [{N_out}, {H}] {target_hidden.dtype} tensor, got "
                         f"{tuple(out.shape)} {out.dtype} with strides {tuple(out.stride())}")
    device = check_same_device(target_hidden=target_hidden, mask_hidden=mask_hidden, hidden_src=hidden_src, out=out)
    if check_values and N_out:
        lo, hi = int(hidden_src.min()), int(hidden_src.max())
        if lo < PAD_ROW or hi >= N_in:
            raise ValueError(f"hidden_src values must be input rows in [0, {N_in}) or MASK_ROW (-1) / PAD_ROW "
                             f"(-2), got values in [{lo}, {hi}]")
    return N_out, H, device


def expand_hidden(target_hidden: torch.Tensor, mask_hidden: torch.Tensor, hidden_src: torch.Tensor, *,
                  out: torch.Tensor | None = None, use_triton: bool | None = None, check_values: bool | None = None,
                  block_r: int = 4, block_h: int = 1024, num_warps: int = 4) -> torch.Tensor:
    """The drafter's hidden states [N_out, H] in one pass (see the module docstring). Explained in notebook 04.

    target_hidden [N_in, H] (rows must be contiguous), mask_hidden [H] (already projected by fc),
    hidden_src [N_out] int32 from ``draft_inputs``. ``check_values`` (default: CPU only) range-checks
    hidden_src.
    """
    N_out, H, device = _validate(target_hidden, mask_hidden, hidden_src, out,
                                 check_values if check_values is not None else target_hidden.device.type != "cuda")
    if not use_triton_for(use_triton, device):
        result = reference_expand_hidden(target_hidden, mask_hidden, hidden_src)
        return out.copy_(result) if out is not None else result
    if target_hidden.stride(1) != 1:
        target_hidden = target_hidden.contiguous()
    if out is None:
        out = torch.empty(N_out, H, dtype=target_hidden.dtype, device=device)
    if N_out == 0 or H == 0:
        return out
    if target_hidden.shape[0] == 0:  # nothing to copy from; give the kernel a readable pointer
        target_hidden = torch.zeros(1, H, dtype=target_hidden.dtype, device=device)
    block_h = min(block_h, next_pow2(H))
    runnable(hidden_expand_kernel, device)[(triton.cdiv(N_out, block_r), triton.cdiv(H, block_h))](
        target_hidden, mask_hidden.contiguous(), hidden_src.contiguous(), out, N_out, H,
        target_hidden.stride(0), out.stride(0), BLOCK_R=block_r, BLOCK_H=block_h, num_warps=num_warps)
    return out


def reference_expand_hidden(target_hidden, mask_hidden, hidden_src):
    """The specification with boolean indexing (host-syncing, which is fine for a reference)."""
    out = torch.zeros(hidden_src.shape[0], target_hidden.shape[1], dtype=target_hidden.dtype,
                      device=target_hidden.device)
    from_target = hidden_src >= 0
    out[from_target] = target_hidden[hidden_src[from_target].long()]
    out[hidden_src == MASK_ROW] = mask_hidden
    return out


def eager_expand_hidden(target_hidden, mask_hidden, hidden_state_mapping, is_masked, out=None):
    """vLLM's two passes: scatter target rows by ``hidden_state_mapping`` (input row -> output row), then
    ``torch.where`` the mask rows. With ``out=None`` a zeroed buffer (so padding rows match the reference);
    vLLM reuses a persistent buffer, which the benchmark passes as ``out``."""
    if out is None:
        out = torch.zeros(is_masked.shape[0], target_hidden.shape[1], dtype=target_hidden.dtype,
                          device=target_hidden.device)
    out[hidden_state_mapping.long()] = target_hidden
    torch.where(is_masked.unsqueeze(1), mask_hidden, out, out=out)
    return out


def random_case(B: int, K: int, H: int, device="cpu", dtype=torch.float32, seed: int = 0, **batch_kw):
    """A realistic decode batch: draft_inputs' maps plus random target hidden rows and a mask state."""
    from peagle_kernels.draft_inputs import random_batch, reference_draft_inputs

    args, kw = random_batch(B, K, seed=seed, **batch_kw)
    meta = reference_draft_inputs(*args, **kw)
    g = torch.Generator().manual_seed(seed)
    target = torch.randn(args[0].shape[0], H, generator=g).to(dtype)
    mask = torch.randn(H, generator=g).to(dtype)
    to = lambda t: t.to(device)  # noqa: E731
    return to(target), to(mask), to(meta.hidden_src), to(meta.hidden_state_mapping), to(meta.is_masked)


def check_correctness(B=7, K=4, H=96, device="cpu", dtype=torch.float32, seed=0, **batch_kw) -> float:
    """Max |Triton - reference| and |eager - reference| over a random ragged batch (should be exactly 0)."""
    target, mask, src, hmap, masked = random_case(B, K, H, device, dtype, seed, **batch_kw)
    ref = reference_expand_hidden(target, mask, src)
    tri = expand_hidden(target, mask, src, use_triton=True)
    eag = eager_expand_hidden(target, mask, hmap, masked)
    if ref.numel() == 0:
        return 0.0
    return max(float((tri.float() - ref.float()).abs().max()), float((eag.float() - ref.float()).abs().max()))


def bytes_moved(target_hidden, hidden_src) -> int:
    """The fewest bytes any implementation must move: target rows read once, every output row written once."""
    e, H = target_hidden.element_size(), target_hidden.shape[1]
    n_target = int((hidden_src >= 0).sum())
    return n_target * H * e + hidden_src.shape[0] * H * e + hidden_src.numel() * hidden_src.element_size() + H * e


def flushed_ms(fn, device) -> float:
    """Median device time of one call with the L2 cache flushed before it; host clock on a CPU.

    Like ``triton.testing.do_bench``, but the GPU spins (``torch.cuda._sleep``) between the flush and the
    start event, so the call is already queued when timing starts: the events then time the kernel, not the
    host's launch overhead (which do_bench includes whenever the flush ends before the host has launched the
    call: seen on an H200 host as ~30 us added to a 5 us kernel)."""
    if torch.device(device).type != "cuda":
        return wall_us(fn, reps=3) / 1e3
    flush = torch.empty(256 * 2**20, dtype=torch.int8, device=device)  # several times the 60 MB L2
    for _ in range(10):  # warm-up
        fn()
    times = []
    for _ in range(100):
        flush.zero_()
        torch.cuda._sleep(200_000)  # ~100 us at 2 GHz: longer than any launch overhead
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        times.append((start, end))
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in times)


def copy_bandwidth_gbs(nbytes: int, device="cuda") -> float:
    """Measured device-to-device copy bandwidth (bytes read + written per second, L2 flushed between runs)."""
    n = max(nbytes // 2, 1)
    src = torch.randn(n, device=device).to(torch.bfloat16)
    dst = torch.empty_like(src)
    return 2 * n * 2 / (flushed_ms(lambda: dst.copy_(src), device) * 1e-3) / 1e9


def _graph_us(fn):
    try:
        return device_us(fn)
    except RuntimeError:  # not capturable here: reported as missing, not fatal
        torch.cuda.synchronize()
        return None


def benchmark_hidden_expand(batch_sizes=(1, 8, 64, 256, 512), ks=(3, 7, 10), H: int = 2880,
                            dtype=torch.bfloat16, device="cuda", block=(4, 1024, 4)):
    """Per (B, K): time (L2 flushed, do_bench median) and bandwidth of the kernel, vLLM's eager two passes and
    the reference, beside a device copy of the same output size; plus CUDA-graph device time."""
    on_gpu = torch.device(device).type == "cuda"
    rows = []
    for K in ks:
        for B in batch_sizes:
            target, mask, src, hmap, masked = random_case(B, K, H, device, dtype, seed=B + K)
            buf = torch.empty(src.shape[0], H, dtype=dtype, device=device)
            nbytes = bytes_moved(target, src)
            out_bytes = buf.numel() * buf.element_size()
            copy_gbs = copy_bandwidth_gbs(out_bytes, device)
            br, bh, nw = block
            variants = {
                "triton": (lambda: expand_hidden(target, mask, src, out=buf, use_triton=True, check_values=False,
                                                 block_r=br, block_h=bh, num_warps=nw), True),
                "eager": (lambda: eager_expand_hidden(target, mask, hmap, masked, out=buf), True),
                "reference": (lambda: reference_expand_hidden(target, mask, src), False),
            }
            for name, (fn, capturable) in variants.items():
                ms = flushed_ms(fn, device)
                rows.append({"kernel": "hidden_expand", "variant": name, "batch_size": B, "k": K, "hidden_size": H,
                             "dtype": str(dtype).replace("torch.", ""), "n_out": int(src.shape[0]),
                             "bytes_moved": nbytes, "flushed_us": ms * 1e3,
                             "device_us": _graph_us(fn) if capturable and on_gpu else None,
                             "achieved_gbs": nbytes / (ms * 1e-3) / 1e9, "copy_gbs": copy_gbs,
                             "fraction_of_copy": nbytes / (ms * 1e-3) / 1e9 / copy_gbs})
    return rows


if __name__ == "__main__":
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    for K, dt in ((1, torch.float32), (3, torch.float16), (7, torch.bfloat16), (10, torch.float32)):
        assert check_correctness(B=9, K=K, H=80, device=dev, dtype=dt, seed=K, decode=False) == 0.0, K
    print(f"hidden_expand: Triton == reference == eager on {dev}")
    if dev == "cuda":
        for r in benchmark_hidden_expand(device=dev):
            print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()})
