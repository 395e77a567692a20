"""Draft sampling for both heads in one Triton launch: temperature, the draw and q per slot (notebook 04).

At temperature T > 0 a drafter's row of logits ``l`` over its draft vocabulary gives ``q = softmax(l / T)``;
the draft is one draw from q, and verification needs q itself (rejection sampling keeps a draft d with
probability min(1, p(d)/q(d)) and resamples from max(0, p - q)). Unfused, that is a chain of small kernels
per row (scale, max, exponent, sum, divide, the draw's noise, divide, argmax, the draft-to-target id map),
which on a tiny drafter costs more than the drafter's own matrix products.

The draw is an exponential race, which is how ``torch.multinomial`` draws one sample: with uniforms u_i and
E_i = -log(u_i) (independent Exp(1) variables), ``argmax_i q_i / E_i`` is distributed exactly as q. It needs
only the uniforms and an argmax, no cumulative sum, so the kernel and the PyTorch reference given the same
uniforms pick the same token (a cumulative sum's rounding would make them disagree near its steps)::

    token = d2t[argmax_i exp(l_i / T - m) / E_i]     T > 0 and rule "sample"  (m = max_i l_i / T)
    token = d2t[argmax_i l_i]                         T = 0, or rule "greedy" (vLLM's argmax drafts)
    q     = exp(l / T - m) / sum_i exp(l_i / T - m)   written for rule "sample" at T > 0

One program per row; the row is read in blocks of ``BLOCK_V`` twice (statistics, then q and the race).
Temperatures come as ``1/T`` per row (0 = greedy), computed once on the host side so that the kernel and
the reference multiply by the same float. Run ``python -m peagle_kernels.draft_sample`` for the check and
benchmark.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from peagle_kernels._common import (check_int_tensor, check_same_device, next_pow2, runnable, time_variants,
                                    use_triton_for)

MAX_BLOCK_V = 4096  # vocabulary entries per block (one block for the suite's 4,096-token draft vocabulary)


@triton.jit
def draft_sample_kernel(
    logits_ptr,  # [R, Vd] fp32/bf16: the drafter's logits of the rows to sample, rows logits_stride apart
    logits_stride,  # elements between rows
    inv_t_ptr,  # [R] fp32: 1/T per row; 0 = greedy (argmax)
    u_ptr,  # [R, Vd] fp32: uniforms in [0, 1), row-contiguous (read only when SAMPLE)
    d2t_ptr,  # [Vd] int64: draft id -> target id
    token_ptr,  # [R] int64 out: the draft as a target id
    probs_ptr,  # [R, Vd] fp32 out: q (written only when SAMPLE and WRITE_PROBS)
    Vd,  # draft vocabulary size
    SAMPLE: tl.constexpr,  # False: rule "greedy" (argmax drafts at any temperature)
    WRITE_PROBS: tl.constexpr,
    BLOCK_V: tl.constexpr,
):
    r = tl.program_id(0).to(tl.int64)
    row = logits_ptr + r * logits_stride
    cols = tl.arange(0, BLOCK_V)
    inv_t = tl.load(inv_t_ptr + r)
    # pass 1: the first argmax of the raw logits (greedy) and the online softmax statistics of l / T
    best_l = tl.full([], float("-inf"), tl.float32)
    best_i = tl.full([], 0, tl.int32)
    m = tl.full([], float("-inf"), tl.float32)
    s = tl.full([], 0.0, tl.float32)
    for start in range(0, Vd, BLOCK_V):
        c = start + cols
        ok = c < Vd
        lv = tl.load(row + c, mask=ok, other=float("-inf")).to(tl.float32)
        blk_max = tl.max(lv, 0)
        blk_arg = tl.argmax(lv, 0)
        best_i = tl.where(blk_max > best_l, start + blk_arg, best_i)  # strict: the first index wins ties
        best_l = tl.maximum(best_l, blk_max)
        if SAMPLE:
            x = tl.where(ok, tl.where(ok, lv, 0.0) * inv_t, float("-inf"))  # no -inf * 0
            m_new = tl.maximum(m, tl.max(x, 0))
            s = s * tl.exp(m - m_new) + tl.sum(tl.where(ok, tl.exp(x - m_new), 0.0), 0)
            m = m_new
    tok = best_i
    if SAMPLE:
        # pass 2: q, and the race argmax_i exp(l_i/T - m) / E_i with E_i = -log(u_i)
        best_sc = tl.full([], -1.0, tl.float32)
        best_j = tl.full([], 0, tl.int32)
        u_row = u_ptr + r * Vd
        for start in range(0, Vd, BLOCK_V):
            c = start + cols
            ok = c < Vd
            lv = tl.load(row + c, mask=ok, other=0.0).to(tl.float32)
            e = tl.where(ok, tl.exp(lv * inv_t - m), 0.0)
            if WRITE_PROBS:
                tl.store(probs_ptr + r * Vd + c, e / s, mask=ok)
            u = tl.load(u_row + c, mask=ok, other=0.5)
            sc = tl.where(ok, e / -tl.log(u), -1.0)  # u = 0: E = inf, score 0, never drawn
            blk_best = tl.max(sc, 0)
            blk_j = tl.argmax(sc, 0)
            best_j = tl.where(blk_best > best_sc, start + blk_j, best_j)
            best_sc = tl.maximum(best_sc, blk_best)
        tok = tl.where(inv_t == 0.0, best_i, best_j)
    tl.store(token_ptr + r, tl.load(d2t_ptr + tok))


def _validate(logits, inv_temperature, uniforms, d2t, sample: bool):
    if not isinstance(logits, torch.Tensor) or logits.dim() != 2 or not logits.is_floating_point():
        raise ValueError(f"logits must be a float tensor [R, Vd] (the drafter's rows to sample), got "
                         f"{getattr(logits, 'shape', type(logits).__name__)}")
    R, Vd = logits.shape
    if logits.stride(1) != 1:
        raise ValueError("logits must be contiguous along the vocabulary (stride 1 in its last dimension)")
    if not isinstance(inv_temperature, torch.Tensor) or tuple(inv_temperature.shape) != (R,):
        raise ValueError(f"inv_temperature must be a tensor [R] = [{R}] holding 1/T per row (0 = greedy), got "
                         f"{getattr(inv_temperature, 'shape', type(inv_temperature).__name__)}")
    check_int_tensor("d2t", d2t, 1)
    if d2t.shape[0] != Vd:
        raise ValueError(f"d2t must map each of the {Vd} draft ids to a target id, got {d2t.shape[0]} entries")
    if sample:
        if not isinstance(uniforms, torch.Tensor) or tuple(uniforms.shape) != (R, Vd):
            raise ValueError(f"uniforms must be a tensor [R, Vd] = [{R}, {Vd}] of draws in [0, 1) for rule "
                             f"'sample', got {getattr(uniforms, 'shape', type(uniforms).__name__)}")
    return R, Vd, check_same_device(logits=logits, inv_temperature=inv_temperature, d2t=d2t,
                                    uniforms=uniforms if sample else None)


def draft_sample(logits: torch.Tensor, inv_temperature: torch.Tensor, uniforms: torch.Tensor | None,
                 d2t: torch.Tensor, *, sample: bool = True, write_probs: bool = True,
                 tokens_out: torch.Tensor | None = None, probs_out: torch.Tensor | None = None,
                 use_triton: bool | None = None):
    """Draw one draft per row -> ``(tokens [R] int64 target ids, q [R, Vd] fp32 or None)``.

    logits [R, Vd] float, inv_temperature [R] fp32 (1/T; 0 = greedy), uniforms [R, Vd] fp32 in [0, 1) (rule
    "sample"), d2t [Vd] int64 (draft id -> target id). ``sample=False`` is vLLM's rule "greedy" (argmax drafts,
    verified as if q were one-hot; no q). ``tokens_out`` / ``probs_out``: buffers to write into (a CUDA graph's
    static tensors). ``use_triton``: None = Triton on CUDA tensors, the PyTorch reference otherwise; True on a
    CPU runs the kernel under Triton's interpreter. Explained in notebook 04.
    """
    R, Vd, device = _validate(logits, inv_temperature, uniforms, d2t, sample)
    write_probs = sample and write_probs
    if not use_triton_for(use_triton, device):
        tok, q = reference_draft_sample(logits, inv_temperature, uniforms if sample else None, d2t)
        if tokens_out is not None:
            tokens_out.copy_(tok)
            tok = tokens_out
        if write_probs and probs_out is not None:
            probs_out.copy_(q)
            q = probs_out
        return tok, (q if write_probs else None)
    tok = tokens_out if tokens_out is not None else torch.empty(R, dtype=torch.int64, device=device)
    q = (probs_out if probs_out is not None else torch.empty(R, Vd, dtype=torch.float32, device=device)) \
        if write_probs else tok  # dummy pointer, never written
    if R == 0:
        return tok, (q if write_probs else None)
    block = min(next_pow2(Vd), MAX_BLOCK_V)
    runnable(draft_sample_kernel, device)[(R,)](
        logits, logits.stride(0), inv_temperature.float().contiguous(),
        uniforms.contiguous() if sample else logits, d2t.long().contiguous(), tok, q, Vd,
        SAMPLE=sample, WRITE_PROBS=write_probs, BLOCK_V=block, num_warps=4 if block <= 1024 else 8)
    return tok, (q if write_probs else None)


def reference_draft_sample(logits, inv_temperature, uniforms, d2t):
    """The specification in plain PyTorch: ``(tokens [R] int64, q [R, Vd] fp32 or None)``; ``uniforms=None``
    is rule "greedy" (argmax drafts, no q)."""
    raw = logits.float()
    greedy_ids = raw.argmax(-1)
    if uniforms is None:
        return d2t[greedy_ids].long(), None
    x = raw * inv_temperature.float()[:, None]
    m = x.max(-1, keepdim=True).values
    e = torch.exp(x - m)
    q = e / e.sum(-1, keepdim=True)
    race = (e / -torch.log(uniforms)).argmax(-1)
    ids = torch.where(inv_temperature == 0, greedy_ids, race)
    return d2t[ids].long(), q


def eager_draft_sample(logits, inv_temperature, uniforms, d2t):
    """The unfused chain the engine ran before (softmax, ``torch.multinomial`` with its own noise, the id map),
    for the benchmark only: its draws differ, so only its time is comparable."""
    q = torch.softmax(logits.float() * inv_temperature.float()[:, None], -1)
    ids = torch.multinomial(q, 1).squeeze(-1)
    return d2t[ids].long(), q


def random_case(R: int, Vd: int = 4096, V: int = 8192, device="cpu", seed: int = 0, scale: float = 3.0,
                temperature: float = 1.0):
    """Rows of logits, 1/T, uniforms and an injective draft->target map into a larger target vocabulary."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(R, Vd, generator=g) * scale
    inv_t = torch.full((R,), 1.0 / temperature if temperature > 0 else 0.0)
    u = torch.rand(R, Vd, generator=g)
    d2t = torch.randperm(V, generator=g)[:Vd].sort().values
    return logits.to(device), inv_t.to(device), u.to(device), d2t.to(device)


def check_correctness(R: int = 7, Vd: int = 1000, device="cpu", seed: int = 0) -> int:
    """Triton vs reference on a random case: differing tokens plus q entries off by more than 1e-5 relative."""
    logits, inv_t, u, d2t = random_case(R, Vd, 4 * Vd, device, seed)
    inv_t[::3] = 0.0  # some greedy rows
    tri_t, tri_q = draft_sample(logits, inv_t, u, d2t, use_triton=True)
    ref_t, ref_q = reference_draft_sample(logits, inv_t, u, d2t)
    sampled = inv_t > 0
    bad_q = int((~torch.isclose(tri_q[sampled], ref_q[sampled], rtol=1e-5, atol=1e-9)).sum())
    return int((tri_t != ref_t).sum()) + bad_q


def benchmark_draft_sample(rows=(1, 7, 10, 64), vd: int = 4096, device="cuda", reps: int = 30):
    """Per row count: device and host time of the fused kernel, the eager chain it replaces and the reference."""
    on_gpu = torch.device(device).type == "cuda"
    out = []
    for R in rows:
        logits, inv_t, u, d2t = random_case(R, vd, 2 * vd, device, seed=R)
        tok = torch.empty(R, dtype=torch.int64, device=device)
        q = torch.empty(R, vd, dtype=torch.float32, device=device)
        variants = {
            "triton": (lambda: draft_sample(logits, inv_t, u, d2t, use_triton=True, tokens_out=tok, probs_out=q),
                       True),
            "eager": (lambda: eager_draft_sample(logits, inv_t, u, d2t), True),
            "reference": (lambda: reference_draft_sample(logits, inv_t, u, d2t), True),
        }
        for name, t in time_variants(variants, on_gpu, reps=reps).items():
            out.append({"kernel": "draft_sample", "variant": name, "rows": R, "draft_vocab": vd, **t})
    return out


if __name__ == "__main__":
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    for seed in range(3):
        assert check_correctness(device=dev, seed=seed) == 0, f"mismatch at seed {seed}"
    print(f"draft_sample: Triton == reference on {dev}")
    for row in benchmark_draft_sample((1, 7) if dev == "cpu" else (1, 7, 10, 64), device=dev):
        print(row)
