"""Sampled verification (speculative rejection sampling) of K drafts per request, in one Triton launch.

Explained in notebook 04, beside greedy verification. The target scored the bonus token and the K drafts in
one pass: ``logits[b, j]`` is its distribution after drafts ``0..j-1`` (before temperature). Per request,
with p_j = softmax(logits[b, j] / T) and q_j the drafter's distribution for draft j:

    draft j is kept while       u_j * q_j(d_j) < p_j(d_j)          (u_j uniform: kept with prob. min(1, p/q))
    accepted   = length of the kept prefix
    token      = a draw from max(0, p_a - q_a)   at the first rejection a = accepted < K (the recovered token)
               = a draw from p_K                  when every draft was kept (the bonus token)
    rejected   = K - accepted

so the output is distributed exactly as sampling the target (Leviathan et al. 2023; Chen et al. 2023). Two
rules for q, as the suite teaches them: drafts drawn from the drafter's q (``q_one_hot=False``: q given over the
draft vocabulary, mapped into the target vocabulary by ``target_to_draft``, -1 where the drafter cannot
propose a token, so its q is 0 there), and vLLM's default argmax drafts (``q_one_hot=True``: q is one-hot at
the draft, so a draft is kept with probability p(d) and the resample excludes it). ``1/T = 0`` is greedy
verification (the argmax rule of ``greedy_verify``), and K = 0 is plain sampling of one token.

Draws are exponential races given uniforms (``argmax_i r_i / -log(u_i)`` is distributed as r normalised), so
the kernel and the PyTorch reference, given the same uniforms, return the same tokens. Two launches: the first
reads every row once for its softmax statistics, one program per row (so K+1 rows take as long as one); the
second, one program per request, decides the accepted prefix in registers from those statistics and K gathered
values, then reads the one row it draws from. Run
``python -m peagle_kernels.sampled_verify`` for the check and benchmark.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from peagle_kernels._common import (check_int_tensor, check_same_device, next_pow2, runnable, time_variants,
                                    use_triton_for)

MAX_BLOCK_V = 4096  # vocabulary entries per block of a row
RESIDUAL_FLOOR = 1e-12  # below this residual mass p equals q at that row; rejection has probability 0 there


@triton.jit
def row_stats_kernel(
    logits_ptr,  # [B, K+1, V] fp32/bf16: the target's logits
    stride_b,  # elements between requests
    stride_r,  # elements between rows (stride along V is 1)
    inv_t_ptr,  # [B] fp32: 1/T per request
    stats_ptr,  # [B * (K+1), 2] fp32 out: per row, the maximum m of l / T and sum_i exp(l_i / T - m)
    argmax_ptr,  # [B * (K+1)] int32 out: per row, the first argmax of the raw logits (the greedy rule)
    V,  # target vocabulary size
    K1: tl.constexpr,  # rows per request (K + 1)
    BLOCK_V: tl.constexpr,
):
    row_id = tl.program_id(0)  # one program per row: request row_id // K1, row row_id % K1
    b = (row_id // K1).to(tl.int64)
    row = logits_ptr + b * stride_b + (row_id % K1).to(tl.int64) * stride_r
    inv_t = tl.load(inv_t_ptr + b)
    cols = tl.arange(0, BLOCK_V)
    best_l = tl.full([], float("-inf"), tl.float32)
    best_i = tl.full([], 0, tl.int32)
    m = tl.full([], float("-inf"), tl.float32)
    s = tl.full([], 0.0, tl.float32)
    for start in range(0, V, BLOCK_V):  # the online softmax statistics of l / T, and the first argmax of l
        c = start + cols
        ok = c < V
        lv = tl.load(row + c, mask=ok, other=float("-inf")).to(tl.float32)
        blk_max = tl.max(lv, 0)
        blk_arg = tl.argmax(lv, 0)
        best_i = tl.where(blk_max > best_l, start + blk_arg, best_i)  # strict: the first index wins ties
        best_l = tl.maximum(best_l, blk_max)
        x = tl.where(ok, tl.where(ok, lv, 0.0) * inv_t, float("-inf"))  # no -inf * 0
        m_new = tl.maximum(m, tl.max(x, 0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.where(ok, tl.exp(x - m_new), 0.0), 0)
        m = m_new
    tl.store(stats_ptr + row_id * 2, m)
    tl.store(stats_ptr + row_id * 2 + 1, s)
    tl.store(argmax_ptr + row_id, best_i)


@triton.jit
def sampled_verify_kernel(
    logits_ptr,  # [B, K+1, V] fp32/bf16: the target's logits at the bonus position and after each draft
    stride_b,  # elements between requests
    stride_r,  # elements between rows (stride along V is 1)
    draft_ptr,  # [B, K] int64: the drafts as target ids (unused when K == 0)
    q_ptr,  # [B, K, Vq] fp32: the drafter's q per draft over its vocabulary (unused when Q_ONE_HOT)
    t2q_ptr,  # [V] int32: target id -> column of q, -1 where q is 0 (unused when Q_ONE_HOT)
    inv_t_ptr,  # [B] fp32: 1/T per request; 0 = greedy verification
    u_acc_ptr,  # [B, K] fp32: uniforms of the acceptance tests
    u_res_ptr,  # [B, V] fp32: uniforms of the recovered / bonus draw
    stats_ptr,  # [B * (K+1), 2] fp32: each row's m and sum of exponentials (row_stats_kernel)
    argmax_ptr,  # [B * (K+1)] int32: each row's first argmax (row_stats_kernel)
    accepted_ptr,  # [B] int32/int64 out: accepted prefix length
    token_ptr,  # [B] int64 out: recovered token at the first rejection, else the bonus token
    rejected_ptr,  # [B] int32/int64 out: K - accepted
    V,  # target vocabulary size
    Vq,  # columns of q (the draft vocabulary size)
    K: tl.constexpr,  # drafts per request
    ROWS: tl.constexpr,  # next_pow2(K + 1): the rows' statistics as one vector
    Q_ONE_HOT: tl.constexpr,  # vLLM's argmax drafts: q is one-hot at the draft
    BLOCK_V: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, ROWS)
    row_ok = rows < K + 1
    cols = tl.arange(0, BLOCK_V)
    base = logits_ptr + b * stride_b
    inv_t = tl.load(inv_t_ptr + b)
    greedy = inv_t == 0.0
    # the rows' statistics, from the first launch
    stat_row = b * (K + 1) + rows
    m = tl.load(stats_ptr + stat_row * 2, mask=row_ok, other=float("-inf"))
    s = tl.load(stats_ptr + stat_row * 2 + 1, mask=row_ok, other=0.0)
    best_i = tl.load(argmax_ptr + stat_row, mask=row_ok, other=0)
    # the accepted prefix, decided in registers: row j is draft j's test
    accepted = tl.full([], 0, tl.int32)
    d_at = tl.zeros([ROWS], dtype=tl.int64)
    if K > 0:
        is_draft = rows < K
        d_at = tl.load(draft_ptr + b * K + rows, mask=is_draft, other=0).to(tl.int64)
        l_d = tl.load(base + rows.to(tl.int64) * stride_r + d_at, mask=is_draft, other=0.0).to(tl.float32)
        p_d = tl.exp(l_d * inv_t - m) / s
        if Q_ONE_HOT:
            q_d = tl.full([ROWS], 1.0, tl.float32)
        else:
            col = tl.load(t2q_ptr + d_at, mask=is_draft, other=-1)
            q_d = tl.load(q_ptr + (b * K + rows) * Vq + col, mask=is_draft & (col >= 0), other=0.0)
        u = tl.load(u_acc_ptr + b * K + rows, mask=is_draft, other=1.0)
        keep = tl.where(greedy, d_at == best_i.to(tl.int64), u * q_d < p_d) & is_draft
        accepted = tl.min(tl.where(keep, K, rows), 0)  # the first row that is not a kept draft (K at the latest)
    sel = rows == accepted
    m_a = tl.sum(tl.where(sel, m, 0.0), 0)
    s_a = tl.sum(tl.where(sel, s, 0.0), 0)
    argmax_a = tl.sum(tl.where(sel, best_i, 0), 0)
    d_a = tl.sum(tl.where(sel, d_at, 0), 0)
    # the row drawn from (a rejected draft's: max(0, p - q); after K kept drafts: p): the race over
    # the residual and, in case it has no mass, over p
    row = base + accepted.to(tl.int64) * stride_r
    best_r = tl.full([], -1.0, tl.float32)
    tok_r = tl.full([], 0, tl.int32)
    best_p = tl.full([], -1.0, tl.float32)
    tok_p = tl.full([], 0, tl.int32)
    mass = tl.full([], 0.0, tl.float32)
    for start in range(0, V, BLOCK_V):
        cv = start + cols
        okv = cv < V
        lv2 = tl.load(row + cv, mask=okv, other=0.0).to(tl.float32)
        p = tl.where(okv, tl.exp(lv2 * inv_t - m_a) / s_a, 0.0)
        if K == 0:
            q = tl.zeros([BLOCK_V], dtype=tl.float32)
        elif Q_ONE_HOT:
            q = tl.where((cv * 0 + accepted < K) & (cv == d_a), 1.0, 0.0)
        else:
            qcol = tl.load(t2q_ptr + cv, mask=okv, other=-1)
            q_ok = okv & (qcol >= 0) & (cv * 0 + accepted < K)  # a rejected draft's row (as a vector)
            q = tl.load(q_ptr + (b * K + accepted) * Vq + qcol, mask=q_ok, other=0.0)
        res = tl.maximum(p - q, 0.0)
        mass += tl.sum(res, 0)
        e = -tl.log(tl.load(u_res_ptr + b * V + cv, mask=okv, other=0.5))  # u = 0: E = inf, never drawn
        sc_r = tl.where(okv, res / e, -1.0)
        sc_p = tl.where(okv, p / e, -1.0)
        blk_r = tl.max(sc_r, 0)
        arg_r = tl.argmax(sc_r, 0)
        tok_r = tl.where(blk_r > best_r, start + arg_r, tok_r)
        best_r = tl.maximum(best_r, blk_r)
        blk_p = tl.max(sc_p, 0)
        arg_p = tl.argmax(sc_p, 0)
        tok_p = tl.where(blk_p > best_p, start + arg_p, tok_p)
        best_p = tl.maximum(best_p, blk_p)
    token = tl.where(mass > 1e-12, tok_r, tok_p)  # RESIDUAL_FLOOR
    token = tl.where(greedy, argmax_a, token)
    tl.store(accepted_ptr + b, accepted)
    tl.store(token_ptr + b, token.to(tl.int64))
    tl.store(rejected_ptr + b, K - accepted)


def _validate(logits, draft_tokens, draft_probs, target_to_draft, inv_temperature, u_accept, u_resample,
              q_one_hot: bool):
    if not isinstance(logits, torch.Tensor) or logits.dim() != 3 or not logits.is_floating_point():
        raise ValueError(f"logits must be a float tensor [B, K+1, V] (the target's rows at the bonus position and "
                         f"after each draft), got {getattr(logits, 'shape', type(logits).__name__)}")
    B, K1, V = logits.shape
    K = K1 - 1
    if logits.stride(2) != 1:
        raise ValueError("logits must be contiguous along the vocabulary (stride 1 in its last dimension)")
    if K > 0:
        check_int_tensor("draft_tokens", draft_tokens, 2)
        if tuple(draft_tokens.shape) != (B, K):
            raise ValueError(f"draft_tokens must have shape [B, K] = [{B}, {K}] (logits has K+1 = {K1} rows), got "
                             f"{tuple(draft_tokens.shape)}")
        if not q_one_hot:
            if not isinstance(draft_probs, torch.Tensor) or draft_probs.dim() != 3 or \
                    tuple(draft_probs.shape[:2]) != (B, K):
                raise ValueError(f"draft_probs must be the drafter's q [B, K, Vd] = [{B}, {K}, Vd] for drafts sampled "
                                 f"from q (or pass q_one_hot=True for argmax drafts), got "
                                 f"{getattr(draft_probs, 'shape', None)}")
            check_int_tensor("target_to_draft", target_to_draft, 1)
            if target_to_draft.shape[0] != V:
                raise ValueError(f"target_to_draft must map each of the V={V} target ids to a column of draft_probs "
                                 f"(-1: not in the draft vocabulary), got {target_to_draft.shape[0]} entries")
        if not isinstance(u_accept, torch.Tensor) or tuple(u_accept.shape) != (B, K):
            raise ValueError(f"u_accept must be uniforms [B, K] = [{B}, {K}], got {getattr(u_accept, 'shape', None)}")
    if not isinstance(inv_temperature, torch.Tensor) or tuple(inv_temperature.shape) != (B,):
        raise ValueError(f"inv_temperature must be a tensor [B] = [{B}] of 1/T (0 = greedy), got "
                         f"{getattr(inv_temperature, 'shape', type(inv_temperature).__name__)}")
    if not isinstance(u_resample, torch.Tensor) or tuple(u_resample.shape) != (B, V):
        raise ValueError(f"u_resample must be uniforms [B, V] = [{B}, {V}] (the recovered or bonus draw), got "
                         f"{getattr(u_resample, 'shape', None)}")
    device = check_same_device(logits=logits, inv_temperature=inv_temperature, u_resample=u_resample,
                               draft_tokens=draft_tokens if K else None, u_accept=u_accept if K else None,
                               draft_probs=draft_probs if K and not q_one_hot else None)
    return B, K, V, device


def sampled_verify(logits: torch.Tensor, draft_tokens: torch.Tensor | None, draft_probs: torch.Tensor | None,
                   target_to_draft: torch.Tensor | None, inv_temperature: torch.Tensor, u_accept: torch.Tensor | None,
                   u_resample: torch.Tensor, *, q_one_hot: bool = False, out: tuple | None = None,
                   use_triton: bool | None = None):
    """Accepted prefix length, the next token (recovered or bonus) and the number of rejected drafts per request.

    logits [B, K+1, V] float; draft_tokens [B, K] int64 target ids; draft_probs [B, K, Vd] fp32 (q over the draft
    vocabulary; ignored with ``q_one_hot``); target_to_draft [V] int32 (column of q per target id, -1 outside the
    draft vocabulary); inv_temperature [B] fp32 (1/T; 0 = greedy verification); u_accept [B, K] and u_resample
    [B, V] fp32 uniforms in [0, 1). K = 0 samples one token per request. Returns ``(accepted [B] int32, token [B]
    int64, rejected [B] int32)``, or writes into ``out`` (three integer tensors [B], e.g. a CUDA graph's static
    buffers). ``use_triton``: None = Triton on CUDA tensors, the PyTorch reference otherwise. Notebook 04.
    """
    B, K, V, device = _validate(logits, draft_tokens, draft_probs, target_to_draft, inv_temperature, u_accept,
                                u_resample, q_one_hot)
    if not use_triton_for(use_triton, device):
        res = reference_sampled_verify(logits, draft_tokens, draft_probs, target_to_draft, inv_temperature,
                                       u_accept, u_resample, q_one_hot=q_one_hot)
        if out is None:
            return res
        for o, r in zip(out, res):
            o.copy_(r)
        return out
    if out is None:
        out = (torch.empty(B, dtype=torch.int32, device=device), torch.empty(B, dtype=torch.int64, device=device),
               torch.empty(B, dtype=torch.int32, device=device))
    if B == 0:
        return out
    block = min(next_pow2(V), MAX_BLOCK_V)
    dummy = out[1]
    no_q = q_one_hot or K == 0
    inv_t = inv_temperature.float().contiguous()
    stats = torch.empty(B * (K + 1), 2, dtype=torch.float32, device=device)
    argmax = torch.empty(B * (K + 1), dtype=torch.int32, device=device)
    runnable(row_stats_kernel, device)[(B * (K + 1),)](
        logits, logits.stride(0), logits.stride(1), inv_t, stats, argmax, V, K1=K + 1, BLOCK_V=block, num_warps=8)
    runnable(sampled_verify_kernel, device)[(B,)](
        logits, logits.stride(0), logits.stride(1),
        draft_tokens.contiguous() if K else dummy, draft_probs.contiguous() if not no_q else dummy,
        target_to_draft.contiguous() if not no_q else dummy, inv_t,
        u_accept.contiguous() if K else dummy, u_resample.contiguous(), stats, argmax, out[0], out[1], out[2],
        V, draft_probs.shape[2] if not no_q else 1,
        K=K, ROWS=next_pow2(K + 1), Q_ONE_HOT=q_one_hot, BLOCK_V=block, num_warps=8)
    return out


def reference_sampled_verify(logits, draft_tokens, draft_probs, target_to_draft, inv_temperature, u_accept,
                             u_resample, q_one_hot: bool = False):
    """The specification in plain PyTorch, batched: ``(accepted [B] int32, token [B] int64, rejected [B] int32)``."""
    B, K1, V = logits.shape
    K = K1 - 1
    raw = logits.float()
    greedy = inv_temperature == 0
    argm = raw.argmax(-1)  # [B, K+1]: the greedy rule's tokens
    p = torch.softmax(raw * inv_temperature.float()[:, None, None], -1)
    rows = torch.arange(B, device=logits.device)
    if K:
        d = draft_tokens.long()
        p_d = p[:, :K].gather(-1, d[..., None]).squeeze(-1)
        if q_one_hot:
            q_d = torch.ones_like(p_d)
        else:
            col = target_to_draft.long()[d]
            q_d = torch.where(col >= 0, draft_probs.float().gather(-1, col.clamp_min(0)[..., None]).squeeze(-1), 0.0)
        keep = torch.where(greedy[:, None], d == argm[:, :K], u_accept.float() * q_d < p_d)
        accepted = keep.long().cumprod(1).sum(1)
    else:
        accepted = torch.zeros(B, dtype=torch.long, device=logits.device)
    p_a = p[rows, accepted]  # [B, V]
    if K:
        a = accepted.clamp_max(K - 1)
        if q_one_hot:
            q_a = torch.zeros_like(p_a)
            q_a[rows, d[rows, a]] = 1.0
        else:
            col = target_to_draft.long()
            q_a = torch.where(col >= 0, draft_probs.float()[rows, a][:, col.clamp_min(0)], 0.0)
        q_a = torch.where((accepted < K)[:, None], q_a, 0.0)
    else:
        q_a = torch.zeros_like(p_a)
    res = (p_a - q_a).clamp_min(0.0)
    e = -torch.log(u_resample.float())
    token = torch.where(res.sum(-1) > RESIDUAL_FLOOR, (res / e).argmax(-1), (p_a / e).argmax(-1))
    token = torch.where(greedy, argm[rows, accepted], token)
    return accepted.int(), token.long(), (K - accepted).int()


def eager_sampled_verify(logits, draft_tokens, draft_probs, d2t, inv_temperature, generator=None):
    """The unfused chain the lean engine ran before (softmax, q spread over the target vocabulary, gathers,
    ``torch.rand``, cumprod, residual, ``torch.multinomial``), for the benchmark: its own draws, so only its time is
    comparable. ``d2t`` [Vd]: draft id -> target id."""
    B, K1, V = logits.shape
    K = K1 - 1
    p = torch.softmax(logits.float() * inv_temperature[:, None, None], -1)
    q = torch.zeros(B, K, V, device=logits.device)
    q[:, :, d2t] = draft_probs
    d = draft_tokens.long()
    p_d = p[:, :K].gather(-1, d[..., None]).squeeze(-1)
    q_d = q.gather(-1, d[..., None]).squeeze(-1)
    keep = torch.rand(B, K, device=logits.device, generator=generator) < (p_d / q_d.clamp_min(1e-30)).clamp(max=1.0)
    accepted = torch.cumprod(keep.long(), 1).sum(1)
    rows = torch.arange(B, device=logits.device)
    q_next = torch.cat([q, torch.zeros_like(q[:, :1])], 1)[rows, accepted]
    res = (p[rows, accepted] - q_next).clamp_min(0.0)
    return accepted, torch.multinomial(res / res.sum(-1, keepdim=True), 1).squeeze(-1)


def random_case(B: int, K: int, V: int = 8192, Vd: int = 4096, device="cpu", seed: int = 0, scale: float = 2.0,
                temperature: float = 1.0, agree: float = 0.7):
    """Target logits, drafts drawn from a drafter whose logits are the target's plus noise (so some are kept),
    q over a draft vocabulary of the Vd most likely target ids of row 0, the map, 1/T and uniforms."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(B, K + 1, V, generator=g) * scale
    d2t = torch.randperm(V, generator=g)[:Vd].sort().values
    t2d = torch.full((V,), -1, dtype=torch.int32)
    t2d[d2t] = torch.arange(Vd, dtype=torch.int32)
    draft_logits = logits[:, :K, d2t] * agree + torch.randn(B, K, Vd, generator=g) * scale * (1 - agree)
    q = torch.softmax(draft_logits / temperature, -1)
    drafts = d2t[torch.multinomial(q.reshape(-1, Vd), 1, generator=g).reshape(B, K)] if K else None
    inv_t = torch.full((B,), 1.0 / temperature if temperature > 0 else 0.0)
    u_acc = torch.rand(B, K, generator=g)
    u_res = torch.rand(B, V, generator=g)
    to = lambda t: None if t is None else t.to(device)  # noqa: E731
    return tuple(to(t) for t in (logits, drafts, q, t2d, inv_t, u_acc, u_res))


def check_correctness(B: int = 9, K: int = 7, V: int = 3000, Vd: int = 1000, device="cpu", seed: int = 0) -> int:
    """Triton vs reference on a random case (both q rules, greedy requests mixed in): differing entries."""
    case = list(random_case(B, K, V, Vd, device, seed))
    case[4][::4] = 0.0  # some greedy requests
    n = 0
    for one_hot in (False, True):
        tri = sampled_verify(*case, q_one_hot=one_hot, use_triton=True)
        ref = reference_sampled_verify(*case, q_one_hot=one_hot)
        n += sum(int((t.long() != r.long()).sum()) for t, r in zip(tri, ref))
    return n


def benchmark_sampled_verify(batch_sizes=(1, 8, 64), ks=(0, 1, 3, 7, 10), V: int = 8192, Vd: int = 4096,
                             device="cuda", reps: int = 30):
    """Per (B, K): device and host time of the fused kernel, the eager chain it replaces and the reference."""
    on_gpu = torch.device(device).type == "cuda"
    rows = []
    for K in ks:
        for B in batch_sizes:
            case = random_case(B, K, V, Vd, device, seed=B * 100 + K)
            out = (torch.empty(B, dtype=torch.int32, device=device), torch.empty(B, dtype=torch.int64, device=device),
                   torch.empty(B, dtype=torch.int32, device=device))
            variants = {"triton": (lambda: sampled_verify(*case, use_triton=True, out=out), True),
                        "reference": (lambda: reference_sampled_verify(*case), True)}
            if K:
                d2t = (case[3] >= 0).nonzero().squeeze(1)  # sorted target ids = draft ids in order
                variants["eager"] = (lambda: eager_sampled_verify(case[0], case[1], case[2], d2t, case[4]), True)
            for name, t in time_variants(variants, on_gpu, reps=reps).items():
                rows.append({"kernel": "sampled_verify", "variant": name, "batch_size": B, "k": K, "vocab": V,
                             **t})
    return rows


if __name__ == "__main__":
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    for K in (0, 1, 3, 7, 10):
        assert check_correctness(K=K, device=dev, seed=K) == 0, f"mismatch at K={K}"
    print(f"sampled_verify: Triton == reference on {dev}")
    for r in benchmark_sampled_verify((1, 8) if dev == "cpu" else (1, 8, 64), (0, 3, 7), device=dev):
        print(r)
