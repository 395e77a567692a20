"""The small fused ops of one decoding step over a static KV cache (used by the lean engine, notebook 04).

A decoder layer at batch 1 does little arithmetic: a step of the suite's tiny target is a chain of ~100
small launches, and on a GPU their count, not their work, sets the step time. Four launches per layer
replace the ~25 of plain PyTorch ops (the rest are the layer's four matrix products):

- ``add_rms_norm``: ``s = x + residual`` and ``RMSNorm(s)`` in one pass (vLLM's ``fused_add_rms_norm``);
- ``rope_and_write_kv``: rotate q and k (rotate-half RoPE from a cos/sin table indexed by position) and
  store k, v into the cache at each row's slot;
- ``cache_attention``: each query row attends to cache slots ``0..positions[row]``. The loop bound is
  read from memory, so one captured CUDA graph serves every cache length, and only the filled part of
  the cache is read (a masked attention over the whole cache costs ~70% of a step). With ``window`` W a
  row reads only the W slots ending at its own (and the first ``sinks``): a drafter never attends across
  more positions than it was trained on (notebook 08);
- ``silu_mul``: ``silu(gate) * up`` over the fused gate/up product.

Cache layout: ``k_cache``, ``v_cache`` ``[Hkv, S, D]`` per layer, slot = position; a row whose slot is a
spare slot (the engine uses ``S - 1``) writes there and nothing reads it. Each op has a PyTorch reference
with the same semantics; ``use_triton=None`` picks Triton on CUDA tensors and the reference elsewhere.
Run ``python -m peagle_kernels.decode_layer`` for the correctness check and benchmark.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from peagle_kernels._common import next_pow2, runnable, time_variants, use_triton_for


# ------------------------------------------------------------------------------------------- add + RMSNorm
@triton.jit
def add_rms_norm_kernel(
    x_ptr, res_ptr, w_ptr,  # [T, H] (row stride stride_x), [T, H] (contiguous, unused unless HAS_RES), [H]
    out_ptr, sum_ptr,  # [T, H] (row stride stride_o), [T, H] contiguous (written only if HAS_RES)
    H, stride_x, stride_o, eps,
    HAS_RES: tl.constexpr, BLOCK_H: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_H)
    ok = cols < H
    x = tl.load(x_ptr + row * stride_x + cols, mask=ok, other=0.0)
    if HAS_RES:
        x = x + tl.load(res_ptr + row * H + cols, mask=ok, other=0.0)
        tl.store(sum_ptr + row * H + cols, x, mask=ok)
    xf = x.to(tl.float32)
    inv = tl.rsqrt(tl.sum(xf * xf, axis=0) / H + eps)
    w = tl.load(w_ptr + cols, mask=ok, other=0.0)
    tl.store(out_ptr + row * stride_o + cols, w * (xf * inv).to(w.dtype), mask=ok)


def reference_add_rms_norm(x, residual, weight, eps):
    """(RMSNorm(x + residual), x + residual), or (RMSNorm(x), None) without a residual: Llama's RMSNorm
    (``F.rms_norm`` computes Llama's formula in one op; the tests hold it equal to it)."""
    s = x if residual is None else x + residual
    return torch.nn.functional.rms_norm(s, (s.shape[-1],), weight, eps), (None if residual is None else s)


def llama_rms_norm(x, weight, eps):
    """Llama's RMSNorm written out (transformers' ``LlamaRMSNorm``): the specification the other two must equal."""
    xf = x.float()
    return weight * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def add_rms_norm(x: torch.Tensor, residual: torch.Tensor | None, weight: torch.Tensor, eps: float, *,
                 out: torch.Tensor | None = None, use_triton: bool | None = None):
    """x [T, H] (rows may be strided), residual [T, H] or None, weight [H] -> (normed [T, H], x + residual).

    ``out`` (optional, [T, H] with unit column stride) receives the normed rows, e.g. one half of a wider buffer.
    """
    if x.dim() != 2 or weight.shape != (x.shape[1],):
        raise ValueError(f"x must be [T, H] and weight [H], got {tuple(x.shape)} and {tuple(weight.shape)}")
    if residual is not None and residual.shape != x.shape:
        raise ValueError(f"residual {tuple(residual.shape)} must match x {tuple(x.shape)}")
    if not use_triton_for(use_triton, x.device):
        normed, s = reference_add_rms_norm(x, residual, weight, eps)
        return (out.copy_(normed) if out is not None else normed), s
    T, H = x.shape
    if x.stride(1) != 1:
        x = x.contiguous()
    out = torch.empty(T, H, dtype=x.dtype, device=x.device) if out is None else out
    s = torch.empty(T, H, dtype=x.dtype, device=x.device) if residual is not None else None
    if T:
        res = residual.contiguous() if residual is not None else x
        runnable(add_rms_norm_kernel, x.device)[(T,)](
            x, res, weight, out, s if s is not None else x, H, x.stride(0), out.stride(0), eps,
            HAS_RES=residual is not None, BLOCK_H=next_pow2(H), num_warps=max(1, min(8, next_pow2(H) // 256)))
    return out, s


# ------------------------------------------------------------------------------------- RoPE + KV-cache write
@triton.jit
def rope_kv_write_kernel(
    qkv_ptr,  # [T, (HQ + 2*HKV) * D]: the fused q/k/v projection of T rows
    pos_ptr, slot_ptr,  # [T] int64 positions (index the cos/sin table), [T] int64 cache slots
    cos_ptr, sin_ptr,  # [P, D/2] float32 tables
    q_out_ptr,  # [T, HQ, D]: rotated queries
    k_cache_ptr, v_cache_ptr,  # [HKV, S, D] each: this layer's cache
    S, stride_qkv,
    HQ: tl.constexpr, HKV: tl.constexpr, D: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1)  # 0..HQ-1: a query head; HQ..HQ+HKV-1: a key/value head
    half = tl.arange(0, D // 2)
    pos = tl.load(pos_ptr + row)
    cos = tl.load(cos_ptr + pos * (D // 2) + half)
    sin = tl.load(sin_ptr + pos * (D // 2) + half)
    base = qkv_ptr + row * stride_qkv + head * D  # q heads, then k heads, then v heads
    x1 = tl.load(base + half)
    x2 = tl.load(base + D // 2 + half)
    r1 = x1 * cos.to(x1.dtype) - x2 * sin.to(x1.dtype)
    r2 = x2 * cos.to(x1.dtype) + x1 * sin.to(x1.dtype)
    if head < HQ:
        q_dst = q_out_ptr + (row * HQ + head) * D
        tl.store(q_dst + half, r1)
        tl.store(q_dst + D // 2 + half, r2)
    else:
        kv = head - HQ
        slot = tl.load(slot_ptr + row)
        offset = (kv * S + slot) * D
        tl.store(k_cache_ptr + offset + half, r1)
        tl.store(k_cache_ptr + offset + D // 2 + half, r2)
        v_src = qkv_ptr + row * stride_qkv + (HQ + HKV + kv) * D
        tl.store(v_cache_ptr + offset + half, tl.load(v_src + half))
        tl.store(v_cache_ptr + offset + D // 2 + half, tl.load(v_src + D // 2 + half))


def rope_tables(max_positions: int, head_dim: int, theta: float, device="cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin ``[max_positions, head_dim / 2]`` float32, exactly as Llama's default RoPE computes them."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    freqs = torch.arange(max_positions, dtype=torch.float32)[:, None] * inv_freq[None, :]
    return freqs.cos().to(device), freqs.sin().to(device)


def rope_rows(positions, cos, sin, dtype):
    """The RoPE factors of T rows ``(cos [T, 1, D], sign-folded sin [T, 1, D])``: shared by every layer of a forward,
    so the PyTorch path computes them once. ``x * cos + roll(x, D/2) * sin`` is Llama's ``x * cos +
    rotate_half(x) * sin``, since ``rotate_half(x) = cat(-x2, x1)`` and ``roll(x, D/2) = cat(x2, x1)``."""
    c, s = cos[positions], sin[positions]
    return torch.cat([c, c], dim=-1)[:, None].to(dtype), torch.cat([-s, s], dim=-1)[:, None].to(dtype)


def reference_rope_and_write_kv(qkv, positions, slots, cos, sin, k_cache, v_cache, n_heads: int, n_kv_heads: int,
                                rows=None):
    """Rotate q and k of each row (rotate-half RoPE) and store k, v at the row's slot; returns q [T, HQ, D].
    ``rows``: ``rope_rows(...)`` when the caller already has them."""
    T = qkv.shape[0]
    D = k_cache.shape[-1]
    c, s = rows if rows is not None else rope_rows(positions, cos, sin, qkv.dtype)
    qk = qkv[:, : (n_heads + n_kv_heads) * D].reshape(T, n_heads + n_kv_heads, D)
    qk = qk * c + qk.roll(D // 2, dims=-1) * s
    k_cache.index_copy_(1, slots, qk[:, n_heads:].transpose(0, 1))
    v_cache.index_copy_(1, slots, qkv[:, (n_heads + n_kv_heads) * D:].reshape(T, n_kv_heads, D).transpose(0, 1))
    return qk[:, :n_heads]


def rope_and_write_kv(qkv: torch.Tensor, positions: torch.Tensor, slots: torch.Tensor, cos: torch.Tensor,
                      sin: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, n_heads: int,
                      n_kv_heads: int, *, rows=None, use_triton: bool | None = None) -> torch.Tensor:
    """qkv [T, (HQ + 2 HKV) D], positions/slots [T] int64, cos/sin [P, D/2], caches [HKV, S, D] -> q [T, HQ, D].

    ``rows`` (PyTorch path only): precomputed ``rope_rows``."""
    D = k_cache.shape[-1]
    if qkv.dim() != 2 or qkv.shape[1] != (n_heads + 2 * n_kv_heads) * D:
        raise ValueError(f"qkv must be [T, (heads + 2 kv heads) x head_dim] = [T, {(n_heads + 2 * n_kv_heads) * D}],"
                         f" got {tuple(qkv.shape)}")
    if positions.shape != (qkv.shape[0],) or slots.shape != positions.shape:
        raise ValueError(f"positions and slots must be [T={qkv.shape[0]}], got {tuple(positions.shape)} and "
                         f"{tuple(slots.shape)}")
    if not use_triton_for(use_triton, qkv.device):
        return reference_rope_and_write_kv(qkv, positions, slots, cos, sin, k_cache, v_cache, n_heads, n_kv_heads,
                                           rows)
    T = qkv.shape[0]
    qkv = qkv if qkv.stride(1) == 1 else qkv.contiguous()
    q = torch.empty(T, n_heads, D, dtype=qkv.dtype, device=qkv.device)
    if T:
        runnable(rope_kv_write_kernel, qkv.device)[(T, n_heads + n_kv_heads)](
            qkv, positions, slots, cos, sin, q, k_cache, v_cache, k_cache.shape[1], qkv.stride(0),
            HQ=n_heads, HKV=n_kv_heads, D=D, num_warps=1)
    return q


# ------------------------------------------------------------------------------- attention over the cache
@triton.jit
def cache_attention_kernel(
    q_ptr,  # [T, HQ, D] rotated queries
    k_cache_ptr, v_cache_ptr,  # [HKV, S, D] each
    pos_ptr,  # [T] int64: row t attends to slots start[t]..start[t] + pos[t]
    start_ptr,  # [T] int64: first slot of row t's sequence (a batch in one cache); read only if HAS_START
    out_ptr,  # [T, HQ, D]
    S, scale,
    window,  # int: row t reads the `window` slots ending at its own (S + 1: all of them) ...
    sinks,  # int: ... and the first `sinks` slots of its sequence
    HQ: tl.constexpr, GROUP: tl.constexpr, D: tl.constexpr, BLOCK_N: tl.constexpr, HAS_START: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1)
    kv = head // GROUP  # grouped-query attention: GROUP query heads share one key/value head
    d = tl.arange(0, D)
    q = tl.load(q_ptr + (row * HQ + head) * D + d).to(tl.float32) * scale
    n_keys = tl.load(pos_ptr + row) + 1  # the loop bound comes from memory: one graph for every length
    lo = tl.maximum(n_keys - window, 0)  # first slot of the window
    begin = tl.where(sinks > 0, 0, lo - lo % BLOCK_N)  # skip the blocks left of the window (no sinks to read)
    m = tl.full([1], float("-inf"), tl.float32)
    l_sum = tl.zeros([1], tl.float32)
    acc = tl.zeros([D], tl.float32)
    kv_base = kv.to(tl.int64) * S * D
    if HAS_START:
        kv_base += tl.load(start_ptr + row) * D
    for start in range(begin, n_keys, BLOCK_N):
        n = start + tl.arange(0, BLOCK_N)
        ok = (n < n_keys) & ((n >= lo) | (n < sinks))
        k = tl.load(k_cache_ptr + kv_base + n[:, None] * D + d[None, :], mask=ok[:, None], other=0.0)
        v = tl.load(v_cache_ptr + kv_base + n[:, None] * D + d[None, :], mask=ok[:, None], other=0.0)
        s = tl.sum(k.to(tl.float32) * q[None, :], axis=1)
        s = tl.where(ok, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=0))
        p = tl.exp(s - m_new)
        alpha = tl.exp(m - m_new)
        acc = acc * alpha + tl.sum(p[:, None] * v.to(tl.float32), axis=0)
        l_sum = l_sum * alpha + tl.sum(p, axis=0)
        m = m_new
    tl.store(out_ptr + (row * HQ + head) * D + d, (acc / l_sum).to(out_ptr.dtype.element_ty))


def _in_window(rel, positions, window: int | None, sinks: int):
    """Which keys at positions ``rel`` a row at ``positions`` (broadcast) may read besides causality: the ``window``
    positions ending at its own and the first ``sinks`` (all of them when ``window`` is None)."""
    if window is None:
        return torch.ones_like(rel, dtype=torch.bool)
    return (rel > positions - window) | (rel < sinks)


def attention_extent(positions, dtype=torch.float32, starts=None, window: int | None = None, sinks: int = 0):
    """``(n_keys, mask)`` of T rows: the slots any row reads (a host read: fine on a CPU, never inside a graph), and
    the additive [1, 1, T, n_keys] mask (0 where a row may attend, -inf elsewhere), or None for one row (it reads
    every slot up to its position). ``starts`` [T] (a batch): row t reads slots starts[t]..starts[t] + positions[t];
    when the rows come in equal contiguous groups of one sequence each (the lean engine's batches) the result is
    ``(n_keys, mask [G, 1, R, n_keys], bases)``: G sequences of R rows, each attending over its own first n_keys
    slots from ``bases[g]``, instead of every row over every sequence's slots. ``window`` / ``sinks``: as
    ``cache_attention``'s."""
    if starts is not None:
        grouped = _grouped_extent(positions, starts, dtype, window, sinks)
        if grouped is not None:
            return grouped
    last = positions if starts is None else starts + positions
    n = int(last.max()) + 1 if positions.numel() else 0
    if positions.numel() <= 1 and (starts is None or int(starts.max()) == 0) and (window is None or n <= window):
        return n, None
    slot = torch.arange(n, device=positions.device)[None, :]
    may = slot <= last[:, None]
    if starts is not None:
        may &= slot >= starts[:, None]
    may &= _in_window(slot - (0 if starts is None else starts[:, None]), positions[:, None], window, sinks)
    return n, torch.zeros(may.shape, dtype=dtype, device=positions.device).masked_fill_(~may, float("-inf"))[None, None]


def _grouped_extent(positions, starts, dtype, window: int | None = None, sinks: int = 0):
    """``attention_extent``'s grouped form, or None when the rows are not equal contiguous groups of one start."""
    t = starts.numel()
    bases = torch.unique_consecutive(starts)
    g = bases.numel()
    if t == 0 or t % g or not torch.equal(starts.view(g, t // g), bases[:, None].expand(g, t // g)):
        return None
    n = int(positions.max()) + 1
    rel = torch.arange(n, device=positions.device)[None, None, :]
    rows = positions.view(g, t // g, 1)
    may = (rel <= rows) & _in_window(rel, rows, window, sinks)
    mask = torch.zeros(may.shape, dtype=dtype, device=positions.device).masked_fill_(~may, float("-inf"))[:, None]
    return n, mask, bases.tolist()


def _sequence_views(cache, bases: list[int], n: int):
    """The first n slots of each sequence -> [G, HKV, n, D]: a view when the sequences are evenly spaced (the lean
    engine's regions: no copy of the cache per layer), else a stacked copy."""
    g, step = len(bases), (bases[1] - bases[0] if len(bases) > 1 else n)
    evenly = bases == list(range(bases[0], bases[0] + g * step, step))
    if step >= n and evenly and bases[0] + g * step <= cache.shape[1]:
        return cache[:, bases[0]: bases[0] + g * step].unflatten(1, (g, step))[:, :, :n].transpose(0, 1)
    return torch.stack([cache[:, b: b + n] for b in bases])


def reference_cache_attention(q, k_cache, v_cache, positions, extent=None, starts=None, window: int | None = None,
                              sinks: int = 0):
    """Row t of q [T, HQ, D] attends to slots 0..positions[t] of the caches [HKV, S, D] -> [T, HQ, D] (with
    ``starts`` [T]: slots starts[t]..starts[t] + positions[t]; with ``window``: only the last ``window`` of them and
    the first ``sinks``). ``extent``: ``attention_extent(positions, starts=starts, window=window, sinks=sinks)``
    when the caller already has it. (4-D inputs and an additive mask take PyTorch's fused CPU kernel.)"""
    extent = extent if extent is not None else attention_extent(positions, q.dtype, starts, window, sinks)
    gqa = q.shape[1] != k_cache.shape[0]
    if len(extent) == 3:  # G sequences of R rows: one batched attention, each over its own slots
        n, mask, bases = extent
        g = len(bases)
        k, v = _sequence_views(k_cache, bases, n), _sequence_views(v_cache, bases, n)  # [G, HKV, n, D]
        qg = q.reshape(g, q.shape[0] // g, *q.shape[1:]).transpose(1, 2)  # [G, HQ, R, D]
        out = torch.nn.functional.scaled_dot_product_attention(qg, k, v, attn_mask=mask, enable_gqa=gqa)
        return out.transpose(1, 2).reshape(q.shape)
    n, mask = extent
    out = torch.nn.functional.scaled_dot_product_attention(
        q.transpose(0, 1)[None], k_cache[None, :, :n], v_cache[None, :, :n], attn_mask=mask, enable_gqa=gqa)
    return out[0].transpose(0, 1)


def cache_attention(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, positions: torch.Tensor, *,
                    starts: torch.Tensor | None = None, extent=None, use_triton: bool | None = None,
                    block_n: int | None = None, num_warps: int | None = None, window: int | None = None,
                    sinks: int = 0) -> torch.Tensor:
    """Attention of each query row over the cache slots up to its position (causal by position).

    ``starts`` [T] int64 (a batch of sequences in one cache): row t's sequence begins at slot ``starts[t]`` and the
    row reads slots ``starts[t] .. starts[t] + positions[t]``. ``window`` (None: every slot): a row at position p
    reads positions ``p - window + 1 .. p`` and the first ``sinks`` only. ``extent`` (PyTorch path only):
    precomputed ``attention_extent(positions, starts=starts, window=window, sinks=sinks)``."""
    T, HQ, D = q.shape
    HKV, S, _ = k_cache.shape
    if HQ % HKV or D & (D - 1) or k_cache.shape != v_cache.shape or k_cache.shape[2] != D:
        raise ValueError(f"q [T, {HQ}, {D}] and caches {tuple(k_cache.shape)}/{tuple(v_cache.shape)} do not fit: heads"
                         " must be a multiple of kv heads, head_dim a power of two, caches [HKV, S, D]")
    if positions.shape != (T,) or (starts is not None and starts.shape != (T,)):
        raise ValueError(f"positions (and starts) must be [T={T}], got {tuple(positions.shape)}"
                         + ("" if starts is None else f" and {tuple(starts.shape)}"))
    if (window is not None and window < 1) or sinks < 0:
        raise ValueError(f"window must be a positive number of slots (or None) and sinks >= 0, got {window}, {sinks}")
    if not use_triton_for(use_triton, q.device):
        return reference_cache_attention(q, k_cache, v_cache, positions, extent, starts, window, sinks)
    out = torch.empty_like(q)
    if T:
        # contiguous: an expanded (stride-0) view of positions or starts would be read past its end
        runnable(cache_attention_kernel, q.device)[(T, HQ)](
            q.contiguous(), k_cache, v_cache, positions.contiguous(),
            positions if starts is None else starts.contiguous(), out, S, D ** -0.5,
            S + 1 if window is None else window, sinks, HQ=HQ, GROUP=HQ // HKV, D=D,
            BLOCK_N=block_n or ATTENTION_BLOCK_N, HAS_START=starts is not None, num_warps=num_warps or ATTENTION_WARPS)
    return out


# ------------------------------------------------------------------------------------------ SiLU and mul
@triton.jit
def silu_mul_kernel(
    gu_ptr,  # [T, 2I]: gate columns 0..I-1, up columns I..2I-1
    out_ptr,  # [T, I] (I = n_inter)
    n_inter, BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    ok = cols < n_inter
    g = tl.load(gu_ptr + row * 2 * n_inter + cols, mask=ok, other=0.0).to(tl.float32)
    u = tl.load(gu_ptr + row * 2 * n_inter + n_inter + cols, mask=ok, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * n_inter + cols, (g * tl.sigmoid(g) * u).to(out_ptr.dtype.element_ty), mask=ok)


def reference_silu_mul(gate_up):
    gate, up = gate_up.chunk(2, dim=-1)
    return torch.nn.functional.silu(gate) * up


def silu_mul(gate_up: torch.Tensor, *, use_triton: bool | None = None) -> torch.Tensor:
    """gate_up [T, 2I] (the fused gate and up products) -> silu(gate) * up [T, I]."""
    if gate_up.dim() != 2 or gate_up.shape[1] % 2:
        raise ValueError(f"gate_up must be [T, 2I], got {tuple(gate_up.shape)}")
    if not use_triton_for(use_triton, gate_up.device):
        return reference_silu_mul(gate_up)
    T, I2 = gate_up.shape
    out = torch.empty(T, I2 // 2, dtype=gate_up.dtype, device=gate_up.device)
    if T:
        block = min(1024, next_pow2(I2 // 2))
        runnable(silu_mul_kernel, gate_up.device)[(T, triton.cdiv(I2 // 2, block))](
            gate_up.contiguous(), out, I2 // 2, BLOCK=block, num_warps=max(1, block // 256))
    return out


# ------------------------------------------------------------------------ linear with prologue / epilogue
@triton.jit
def fused_linear_kernel(
    x_ptr,  # [M, K] (or [M, 2K] when SILU_MUL: gate columns then up columns), unit column stride
    g_ptr,  # [K] RMSNorm weight (read only when NORM)
    w_ptr,  # [K, N] contiguous: the weight stored input-major
    res_ptr,  # [M, N] residual added to the output (read only when RESIDUAL)
    y_ptr,  # [M, N]
    M, K, N, stride_x, eps,
    NORM: tl.constexpr, SILU_MUL: tl.constexpr, RESIDUAL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr,
):
    # Few rows (a decoding step's 1..2K), so each program owns BLOCK_N output columns for every row and walks K.
    rows = tl.arange(0, BLOCK_M)
    row_ok = rows < M
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < N
    x_rows = x_ptr + rows.to(tl.int64)[:, None] * stride_x
    inv = tl.zeros([BLOCK_M], tl.float32)
    if NORM:  # the row's RMS over all K inputs, before any product (x read twice only when K > BLOCK_K)
        sq = tl.zeros([BLOCK_M], tl.float32)
        for k0 in range(0, K, BLOCK_K):
            ks = k0 + tl.arange(0, BLOCK_K)
            xv = tl.load(x_rows + ks[None, :], mask=row_ok[:, None] & (ks < K)[None, :], other=0.0).to(tl.float32)
            sq += tl.sum(xv * xv, axis=1)
        inv = tl.rsqrt(sq / K + eps)
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k0 in range(0, K, BLOCK_K):  # one iteration when BLOCK_K >= K: every load is issued at once
        ks = k0 + tl.arange(0, BLOCK_K)
        k_ok = ks < K
        a_mask = row_ok[:, None] & k_ok[None, :]
        a = tl.load(x_rows + ks[None, :], mask=a_mask, other=0.0)
        if NORM:
            g = tl.load(g_ptr + ks, mask=k_ok, other=0.0)
            a = g[None, :] * (a.to(tl.float32) * inv[:, None]).to(a.dtype)
        if SILU_MUL:
            gate = a.to(tl.float32)
            up = tl.load(x_rows + K + ks[None, :], mask=a_mask, other=0.0).to(tl.float32)
            a = (gate * tl.sigmoid(gate) * up).to(x_ptr.dtype.element_ty)
        w = tl.load(w_ptr + ks.to(tl.int64)[:, None] * N + cols[None, :], mask=k_ok[:, None] & col_ok[None, :],
                    other=0.0)
        acc += tl.dot(a, w, input_precision="ieee")  # exact float32 products, no TF32 rounding
    out_mask = row_ok[:, None] & col_ok[None, :]
    offs = rows.to(tl.int64)[:, None] * N + cols[None, :]
    if RESIDUAL:
        acc += tl.load(res_ptr + offs, mask=out_mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, acc.to(y_ptr.dtype.element_ty), mask=out_mask)


def reference_fused_linear(x, w, norm_weight=None, eps=1e-5, silu_and_mul=False, residual=None):
    """``pro(x) @ w (+ residual)``: pro = RMSNorm with ``norm_weight``, or silu(gate) * up, or nothing."""
    if norm_weight is not None:
        x = reference_add_rms_norm(x, None, norm_weight, eps)[0]
    if silu_and_mul:
        x = reference_silu_mul(x)
    y = x @ w
    return y if residual is None else y + residual


MAX_FUSED_ROWS = 32  # rows the fused linear handles in one program; more rows (a long prefill) use the reference


# Launch shapes (chosen on an H200 by the sweep in benchmark_decode_layer): output columns per program, inputs per
# K iteration (capped at K: one pass when it covers K) and warps; key-block size and warps of the attention.
LINEAR_BLOCK_N, LINEAR_BLOCK_K, LINEAR_WARPS = 16, 256, 4
ATTENTION_BLOCK_N, ATTENTION_WARPS = 128, 4


def fused_linear(x: torch.Tensor, w: torch.Tensor, *, norm_weight: torch.Tensor | None = None, eps: float = 1e-5,
                 silu_and_mul: bool = False, residual: torch.Tensor | None = None, use_triton: bool | None = None,
                 block_n: int | None = None, block_k: int | None = None, num_warps: int | None = None) -> torch.Tensor:
    """x [M, K] (``silu_and_mul``: [M, 2K]), w [K, N] -> [M, N]: one launch for a decoding step's small products,
    with the RMSNorm (or SiLU-and-mul) before and the residual add after folded in."""
    K = x.shape[1] // 2 if silu_and_mul else x.shape[1]
    if x.dim() != 2 or w.dim() != 2 or w.shape[0] != K:
        raise ValueError(f"x {tuple(x.shape)} and w {tuple(w.shape)} do not fit: w must be [K, N] with K = x's "
                         f"{'half ' if silu_and_mul else ''}width")
    if norm_weight is not None and silu_and_mul:
        raise ValueError("fused_linear applies either the RMSNorm or the SiLU-and-mul prologue, not both")
    M, N = x.shape[0], w.shape[1]
    if residual is not None and residual.shape != (M, N):
        raise ValueError(f"residual must be [M, N] = [{M}, {N}], got {tuple(residual.shape)}")
    if not use_triton_for(use_triton, x.device) or M > MAX_FUSED_ROWS:
        return reference_fused_linear(x, w, norm_weight, eps, silu_and_mul, residual)
    x = x if x.stride(1) == 1 else x.contiguous()
    y = torch.empty(M, N, dtype=x.dtype, device=x.device)
    block_n = block_n or LINEAR_BLOCK_N
    block_k = min(block_k or LINEAR_BLOCK_K, next_pow2(K))
    if M:
        runnable(fused_linear_kernel, x.device)[(triton.cdiv(N, block_n),)](
            x, norm_weight if norm_weight is not None else w, w.contiguous(),
            residual.contiguous() if residual is not None else y, y, M, K, N, x.stride(0), eps,
            NORM=norm_weight is not None, SILU_MUL=silu_and_mul, RESIDUAL=residual is not None,
            BLOCK_M=max(16, next_pow2(M)), BLOCK_K=block_k, BLOCK_N=block_n, num_warps=num_warps or LINEAR_WARPS)
    return y


# ------------------------------------------------------------------------------- correctness and benchmark
def random_layer_case(T: int = 5, HQ: int = 4, HKV: int = 2, D: int = 16, S: int = 64, H: int = 48, seed: int = 0,
                      device="cpu", dtype=torch.float32):
    """Random inputs for the four ops: distinct positions < S - 1 (slot S - 1 is the spare), some rows padding."""
    g = torch.Generator().manual_seed(seed)
    positions = torch.randperm(S - 1, generator=g)[:T].sort().values
    slots = positions.clone()
    if T > 2:  # a padding row: position 0, written to the spare slot
        positions[-1], slots[-1] = 0, S - 1
    r = lambda *s: torch.randn(*s, generator=g).to(device, dtype)  # noqa: E731
    return dict(x=r(T, H), residual=r(T, H), weight=r(H), qkv=r(T, (HQ + 2 * HKV) * D),
                positions=positions.to(device), slots=slots.to(device), k_cache=r(HKV, S, D), v_cache=r(HKV, S, D),
                gate_up=r(T, 2 * H), HQ=HQ, HKV=HKV, D=D, S=S)


def check_correctness(device="cpu", seed: int = 0, **case_kw) -> dict[str, float]:
    """Max abs difference of each Triton op from its reference (under the interpreter on CPU)."""
    c = random_layer_case(seed=seed, device=device, **case_kw)
    out = {}
    for res in (None, c["residual"]):
        a = add_rms_norm(c["x"], res, c["weight"], 1e-5, use_triton=True)
        b = reference_add_rms_norm(c["x"], res, c["weight"], 1e-5)
        out["add_rms_norm" + ("" if res is None else "_residual")] = max(
            float((x - y).abs().max()) for x, y in zip(a, b) if x is not None)
    cos, sin = rope_tables(c["S"], c["D"], 10000.0, device)
    kc, vc, kr, vr = c["k_cache"].clone(), c["v_cache"].clone(), c["k_cache"].clone(), c["v_cache"].clone()
    q = rope_and_write_kv(c["qkv"], c["positions"], c["slots"], cos, sin, kc, vc, c["HQ"], c["HKV"], use_triton=True)
    qr = reference_rope_and_write_kv(c["qkv"], c["positions"], c["slots"], cos, sin, kr, vr, c["HQ"], c["HKV"])
    out["rope_and_write_kv"] = max(float((q - qr).abs().max()), float((kc - kr).abs().max()),
                                   float((vc - vr).abs().max()))
    att = cache_attention(qr, kr, vr, c["positions"], use_triton=True, block_n=16)
    out["cache_attention"] = float((att - reference_cache_attention(qr, kr, vr, c["positions"])).abs().max())
    # a batch in one cache: the rows belong to two sequences, the second beginning at slot S // 2
    starts = (torch.arange(qr.shape[0], device=device) % 2) * (c["S"] // 2)
    pos = c["positions"] % (c["S"] // 2)
    att = cache_attention(qr, kr, vr, pos, starts=starts, use_triton=True, block_n=16)
    out["cache_attention_batched"] = float((att - reference_cache_attention(qr, kr, vr, pos, starts=starts))
                                           .abs().max())
    one = [reference_cache_attention(qr[t:t + 1], kr[:, int(starts[t]):], vr[:, int(starts[t]):], pos[t:t + 1])
           for t in range(qr.shape[0])]  # each row alone over its own sequence: what the batched call must equal
    out["cache_attention_batched_vs_alone"] = float((att - torch.cat(one)).abs().max())
    # rows in equal contiguous groups of one sequence each (the lean engine's batches): the grouped PyTorch path
    T = qr.shape[0]
    groups = 2 if T % 2 == 0 else T
    span = c["S"] // groups
    g_starts = torch.arange(T, device=device) // (T // groups) * span
    g_pos = c["positions"] % span
    grouped = reference_cache_attention(qr, kr, vr, g_pos, starts=g_starts)
    assert len(attention_extent(g_pos, qr.dtype, g_starts)) == 3  # the grouped form was taken
    one = [reference_cache_attention(qr[t:t + 1], kr[:, int(g_starts[t]):], vr[:, int(g_starts[t]):], g_pos[t:t + 1])
           for t in range(T)]
    out["cache_attention_grouped_vs_alone"] = float((grouped - torch.cat(one)).abs().max())
    # a window: each row reads the `window` slots ending at its own (and the first `sinks`), alone and batched; the
    # reference equals attention over exactly those slots, gathered row by row
    for name, window, sinks in (("cache_attention_window", 5, 0), ("cache_attention_window_sinks", 20, 3)):
        att = cache_attention(qr, kr, vr, c["positions"], use_triton=True, block_n=16, window=window, sinks=sinks)
        ref = reference_cache_attention(qr, kr, vr, c["positions"], window=window, sinks=sinks)
        picked = []
        for t in range(T):
            p = int(c["positions"][t])
            keep = sorted(set(range(min(sinks, p + 1))) | set(range(max(0, p - window + 1), p + 1)))
            ks, vs = kr[:, keep], vr[:, keep]
            picked.append(reference_cache_attention(qr[t:t + 1], ks, vs, torch.tensor([len(keep) - 1], device=device)))
        out[name] = max(float((att - ref).abs().max()), float((ref - torch.cat(picked)).abs().max()))
    att = cache_attention(qr, kr, vr, pos, starts=starts, use_triton=True, block_n=16, window=7, sinks=1)
    out["cache_attention_window_batched"] = float(
        (att - reference_cache_attention(qr, kr, vr, pos, starts=starts, window=7, sinks=1)).abs().max())
    grouped = reference_cache_attention(qr, kr, vr, g_pos, starts=g_starts, window=7, sinks=1)
    one = [reference_cache_attention(qr[t:t + 1], kr[:, int(g_starts[t]):], vr[:, int(g_starts[t]):], g_pos[t:t + 1],
                                     window=7, sinks=1) for t in range(T)]
    out["cache_attention_window_grouped_vs_alone"] = float((grouped - torch.cat(one)).abs().max())
    out["silu_mul"] = float((silu_mul(c["gate_up"], use_triton=True) - reference_silu_mul(c["gate_up"])).abs().max())
    H, T = c["x"].shape[1], c["x"].shape[0]
    g = torch.Generator().manual_seed(seed + 100)
    w = torch.randn(H, 40, generator=g).to(device, c["x"].dtype)
    res = torch.randn(T, 40, generator=g).to(device, c["x"].dtype)
    for name, kw in (("linear", {}), ("linear_norm", {"norm_weight": c["weight"]}),
                     ("linear_residual", {"residual": res}),
                     ("linear_norm_residual", {"norm_weight": c["weight"], "residual": res})):
        a = fused_linear(c["x"], w, use_triton=True, block_n=16, block_k=32, **kw)
        out[name] = float((a - reference_fused_linear(c["x"], w, **kw)).abs().max())
    wd = torch.randn(H, 40, generator=g).to(device, c["x"].dtype)
    a = fused_linear(c["gate_up"], wd, silu_and_mul=True, residual=res, use_triton=True, block_n=16, block_k=32)
    out["linear_silu_mul_residual"] = float((a - reference_fused_linear(c["gate_up"], wd, silu_and_mul=True,
                                                                         residual=res)).abs().max())
    return out


# The products of one step of the suite's models: (name, K, N, prologue). lm_head: the target's 4096-token vocabulary.
PRODUCTS = (("qkv", 256, 768, "norm"), ("o", 256, 256, "residual"), ("gate_up", 256, 1280, "norm"),
            ("down", 640, 256, "silu_mul"), ("lm_head", 256, 4096, "norm"), ("drafter_qkv", 512, 768, "none"))
LINEAR_SHAPES = ((16, 64, 4), (16, 256, 4), (16, 512, 4), (16, 256, 8), (16, 512, 8), (32, 256, 4), (32, 256, 8),
                 (64, 256, 8))  # (block_n, block_k, warps); block_k is capped at K (one pass when it covers K)
ATTENTION_SHAPES = ((64, 4), (128, 4), (128, 8), (256, 4), (256, 8))  # (block_n, warps)


def benchmark_decode_layer(rows=(1, 8), context: int = 256, H: int = 256, HQ: int = 4, D: int = 64,
                           inter: int = 640, device="cuda", reps: int = 30) -> list[dict]:
    """Each fused op vs the same work as eager PyTorch ops (cuBLAS for the products), device and host time per
    call, with the launch shapes swept: the records say which shape was fastest for each size."""
    on_gpu = torch.device(device).type == "cuda"
    g = torch.Generator().manual_seed(0)
    out = []
    for T in rows:
        c = random_layer_case(T=T, HQ=HQ, HKV=HQ, D=D, S=1024, H=H, device=device)
        c["positions"] = torch.arange(context, context + T, device=device)
        c["slots"] = c["positions"].clone()
        cos, sin = rope_tables(1024, D, 10000.0, device)
        gu = torch.randn(T, 2 * inter, device=device)
        q = torch.randn(T, HQ, D, device=device)
        ops = {
            "add_rms_norm": {"fused": lambda: add_rms_norm(c["x"], c["residual"], c["weight"], 1e-5),
                             "eager": lambda: reference_add_rms_norm(c["x"], c["residual"], c["weight"], 1e-5)},
            "rope_and_write_kv": {
                "fused": lambda: rope_and_write_kv(c["qkv"], c["positions"], c["slots"], cos, sin, c["k_cache"],
                                                   c["v_cache"], HQ, HQ),
                "eager": lambda: reference_rope_and_write_kv(c["qkv"], c["positions"], c["slots"], cos, sin,
                                                             c["k_cache"], c["v_cache"], HQ, HQ)},
            "cache_attention": {f"block_n={b},warps={nw}": (
                lambda b=b, nw=nw: cache_attention(q, c["k_cache"], c["v_cache"], c["positions"], block_n=b,
                                                   num_warps=nw)) for b, nw in ATTENTION_SHAPES},
            "silu_mul": {"fused": lambda: silu_mul(gu), "eager": lambda: reference_silu_mul(gu)},
        }
        for name, K, N, pro in PRODUCTS:
            x = torch.randn(T, 2 * K if pro == "silu_mul" else K, generator=g).to(device)
            w = torch.randn(K, N, generator=g).to(device)
            kw = {"norm": {"norm_weight": torch.randn(K, generator=g).to(device)}, "silu_mul": {"silu_and_mul": True},
                  "residual": {"residual": torch.randn(T, N, generator=g).to(device)}, "none": {}}[pro]
            # bind this product's tensors now: the variants run after the loop
            variants = {f"block_n={bn},block_k={bk},warps={nw}": (
                lambda bn=bn, bk=bk, nw=nw, x=x, w=w, kw=kw: fused_linear(x, w, block_n=bn, block_k=bk, num_warps=nw,
                                                                           **kw))
                for bn, bk, nw in LINEAR_SHAPES}
            variants["eager"] = lambda x=x, w=w, kw=kw: reference_fused_linear(x, w, **kw)
            ops[f"linear_{name}"] = variants
        for name, variants in ops.items():
            times = time_variants({v: (fn, True) for v, fn in variants.items()}, on_gpu, reps=reps)
            for v, t in times.items():
                out.append({"op": name, "variant": v, "rows": T, "context": context, **t})
    return out


def _parse(variant: str) -> dict[str, int]:
    return {k: int(v) for k, v in (part.split("=") for part in variant.split(","))}


def choose_shapes(records: list[dict]) -> dict[str, dict[str, int]]:
    """One launch shape for every product (the least total device time over all products and row counts) and one
    for the attention (the least worst case), from ``benchmark_decode_layer`` records."""
    def best(ops, score):
        totals: dict[str, list[float]] = {}
        for r in records:
            if r["op"] in ops and r["variant"] != "eager" and r.get("device_us") is not None:
                totals.setdefault(r["variant"], []).append(r["device_us"])
        complete = {v: t for v, t in totals.items() if len(t) == max(len(x) for x in totals.values())}
        return _parse(min(complete, key=lambda v: score(complete[v])))

    linear_ops = {r["op"] for r in records if r["op"].startswith("linear_")}
    return {"linear": best(linear_ops, sum), "attention": best({"cache_attention"}, max)}


def use_shapes(shapes: dict[str, dict[str, int]]) -> None:
    """Make ``choose_shapes``' result the default launch shapes of this process."""
    global LINEAR_BLOCK_N, LINEAR_BLOCK_K, LINEAR_WARPS, ATTENTION_BLOCK_N, ATTENTION_WARPS
    lin, att = shapes["linear"], shapes["attention"]
    LINEAR_BLOCK_N, LINEAR_BLOCK_K, LINEAR_WARPS = lin["block_n"], lin["block_k"], lin["warps"]
    ATTENTION_BLOCK_N, ATTENTION_WARPS = att["block_n"], att["warps"]


def fastest_shapes(records: list[dict]) -> dict[str, str]:
    """The fused variant with the lowest worst-case device time over the measured row counts, per op."""
    best = {}
    for op in sorted({r["op"] for r in records}):
        worst: dict[str, float] = {}
        for r in records:
            if r["op"] == op and r["variant"] != "eager" and r.get("device_us") is not None:
                worst[r["variant"]] = max(worst.get(r["variant"], 0.0), r["device_us"])
        if worst:
            best[op] = min(worst, key=worst.get)
    return best


if __name__ == "__main__":
    import json
    import sys

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    print("max abs difference from the references:", check_correctness(dev))
    if dev == "cuda":
        recs = benchmark_decode_layer()
        for r in recs:
            print(r)
        print("fastest launch shapes:", fastest_shapes(recs), "chosen:", choose_shapes(recs))
        if len(sys.argv) > 1:
            with open(sys.argv[1], "w") as f:
                json.dump({"records": recs, "fastest": fastest_shapes(recs), "chosen": choose_shapes(recs)}, f,
                          indent=1)
