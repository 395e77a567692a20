"""The parallel-draft input builder: one Triton launch rebuilds the drafter's whole batch (notebook 04).

After each verification step the drafter needs a new ragged batch. Per request ``r`` the target just
processed ``qlen`` tokens (query ``[qs, qe)``), of which the last ``num_rejected[r]`` were drafts it
rejected. P-EAGLE's drafter input for ``r`` has ``qlen + K - 1`` rows (EAGLE shifts tokens by one)::

    [ nv valid shifted target tokens | bonus | K-1 <mask> ids | num_rejected padding rows ]
      nv = qlen - 1 - num_rejected

with positions ``first + j`` (0 on padding rows), is-masked / is-rejected flags, the K rows to sample
(bonus + masks), the hidden-state mapping (vLLM's scatter form ``input row -> output row`` and our
gather form ``output row -> input row | MASK_ROW | PAD_ROW``), and, one step further than vLLM's
``copy_and_expand_eagle_inputs_kernel`` (vllm/v1/spec_decode/utils.py), the paged-KV slot mapping
``block_table[r, p // block_size] * block_size + p % block_size`` in the same launch (vLLM does that
afterwards with ~10 torch ops in ``compute_new_slot_mapping``). Rejected rows and positions
``>= max_model_len`` get ``padding_slot_id``, so their keys and values are never stored.

Request ``r``'s rows start at ``qs + r * (K - 1)``: no prefix sum, so no host sync. An empty request
(``qlen == 0``, a padded batch slot) owns K-1 padding rows and its K sample indices are -1.

The first position ``first`` of request ``r`` comes from vLLM's ``seq_lens`` when given (tokens of the
sequence including this step's, ``CommonAttentionMetadata.seq_lens``: ``first = seq_lens[r] - qlen``),
otherwise from ``target_positions[qs]``. The outputs are the same; the latency is not. A launch this small
costs its chain of dependent memory round trips, and ``seq_lens[r]``, like ``query_start_loc[r]``, is
indexed by ``r`` alone, while ``target_positions[qs]`` can only be read once ``qs`` has arrived::

    seq_lens:         query_start_loc, seq_lens -> tokens, block table -> stores
    target_positions: query_start_loc -> target_positions -> block table -> stores

Run ``python -m peagle_kernels.draft_inputs`` for the correctness check and benchmark.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from peagle_kernels._common import (MASK_ROW, MASK_ROW_CONST, PAD_ROW, PAD_ROW_CONST, check_int_tensor,
                                    check_same_device, launch_floor_us, next_pow2, runnable, time_variants,
                                    use_triton_for)

# Launch shape (measured on an H200, see data/results/kernels_h200.json): elements per program and per thread.
TILE = 128
ELEMS_PER_THREAD = 1


class DraftInputs(NamedTuple):
    """The drafter's batch; also the kernel's output record (one pointer per field)."""

    input_ids: torch.Tensor  # [N_out] token dtype
    positions: torch.Tensor  # [N_out] int64
    is_masked: torch.Tensor  # [N_out] bool
    is_rejected: torch.Tensor  # [N_out] bool
    sample_indices: torch.Tensor  # [B*K] int32: rows whose logits give the K drafts (-1: empty request)
    hidden_state_mapping: torch.Tensor  # [N_in] int32: vLLM's scatter map, input row -> output row
    hidden_src: torch.Tensor  # [N_out] int32: output row -> input row, MASK_ROW or PAD_ROW
    slot_mapping: torch.Tensor  # [N_out] int64: paged KV slot, padding_slot_id where nothing is stored
    query_start_loc: torch.Tensor  # [B+1] int32: the drafter's ragged layout


class _Batch(NamedTuple):
    """The kernel's input record: the target's step (one pointer per tensor) and the block table's row stride."""

    token_ids: torch.Tensor  # [N_in] int32/int64: tokens the target just processed
    positions: torch.Tensor  # [N_in] int32/int64: their positions (read only without seq_lens)
    seq_lens: torch.Tensor  # [B] int32/int64: tokens per sequence incl. this step's (read only with HAS_SEQ_LENS)
    bonus: torch.Tensor  # [B] int32/int64: the target's token after each request's accepted drafts
    query_start_loc: torch.Tensor  # [B+1] int32/int64: request r's tokens are [qsl[r], qsl[r+1])
    num_rejected: torch.Tensor  # [B] int32/int64: drafts rejected at the end of each request's tokens
    block_table: torch.Tensor  # [>=B, n_blocks] int32/int64: paged-KV block ids per request
    block_table_stride: int  # elements between two rows of block_table


class _Request(NamedTuple):
    """Per-request values of a [REQS] tile, loaded and derived once (kernel-internal record)."""

    rs: tl.tensor  # [REQS] request ids
    r_ok: tl.tensor  # [REQS] r < B
    qs: tl.tensor  # [REQS] first input row
    qe: tl.tensor  # [REQS] one past the last input row
    qlen: tl.tensor  # [REQS] input rows (0: an empty request)
    per_request: tl.tensor  # [REQS] this program stores the per-request outputs
    nv: tl.tensor  # [REQS, 1] valid shifted tokens (-K for an empty request)
    total: tl.tensor  # [REQS, 1] output rows (0 past B)
    out_start: tl.tensor  # [REQS] first output row
    start_pos: tl.tensor  # [REQS] position of the first output row
    bonus: tl.tensor  # [REQS] bonus token


@triton.jit
def _request_outputs(
    req,  # _Request: the tile's per-request values
    K,  # drafts per request
    out,  # DraftInputs: output pointers (query_start_loc [B+1], sample_indices [B*K] written here)
    REQS: tl.constexpr,  # requests per program
    BLOCK_K: tl.constexpr,  # next_pow2(K)
):
    """The drafter's query_start_loc, and -1 sample indices for empty requests (inlined into the kernel)."""
    tl.store(out.query_start_loc + req.rs + 1, req.qe + (req.rs + 1) * (K - 1), mask=req.per_request)
    tl.store(out.query_start_loc + req.rs, req.qs, mask=req.per_request & (req.rs == 0))
    ks = tl.arange(0, BLOCK_K)[None, :]  # an empty request has nothing to sample
    tl.store(out.sample_indices + req.rs[:, None] * K + ks, tl.full([REQS, BLOCK_K], -1, tl.int32),
             mask=(ks < K) & (req.qlen[:, None] == 0) & req.per_request[:, None])


@triton.jit
def _draft_rows(
    start,  # first row of this block, counted from each request's first output row
    req,  # _Request: the tile's per-request values
    batch,  # _Batch: input pointers (token_ids [N_in], block_table [>=B, n_blocks] read here)
    out,  # DraftInputs: output pointers ([N_out] rows, sample_indices [B*K], hidden_state_mapping [N_in])
    N_in, K, mask_id, pad_id, pad_slot, max_len,  # as in draft_inputs_kernel
    BLOCK_SIZE: tl.constexpr,  # KV block size
    BLOCK_T: tl.constexpr,  # rows per request in this block
    REQUEST_OUTPUTS: tl.constexpr,  # also store the per-request outputs (the one-pass launch)
    REQS: tl.constexpr,  # requests per program
    BLOCK_K: tl.constexpr,  # next_pow2(K)
):
    """Rows ``start .. start + BLOCK_T - 1`` of the tile's requests (inlined into the kernel); with
    ``REQUEST_OUTPUTS`` (one pass: each program calls this once) also the per-request outputs."""
    qs2, qlen2, nv2 = req.qs[:, None], req.qlen[:, None], req.nv
    j = start + tl.arange(0, BLOCK_T)[None, :]
    in_bounds = j < req.total
    is_valid = j < nv2
    is_bonus = j == nv2
    is_mask = (j > nv2) & (j < nv2 + K)
    is_rej = ~(is_valid | is_bonus | is_mask)
    out_idx = req.out_start[:, None] + j

    # The two row loads first (the second round trip). Their addresses are computed from as few first-round
    # values as possible, so that they issue a few instructions after those arrive: the token index needs only
    # qs, the block-table column only the unclassified position first + j (clamped into the table). Both loads
    # are masked only by r < B, known before any load (every address is in bounds), and their values are
    # selected below. Then every output that needs only the per-request scalars is stored while the row loads
    # are in flight; the two outputs that wait for them go last. (Stores issue in program order and a store
    # waiting on a load stalls the ones behind it.)
    r_ok2 = req.r_ok[:, None]
    tok = tl.load(batch.token_ids + tl.minimum(qs2 + 1 + j, N_in - 1), mask=r_ok2, other=0)
    # Clamped to [0, max_len - 1] in this order so that the compiler knows p >= 0: p // BLOCK_SIZE and
    # p % BLOCK_SIZE become a shift and a mask (for a power-of-two block size), not signed-division sequences.
    p = tl.maximum(tl.minimum(req.start_pos[:, None] + j, max_len - 1), 0)
    block_no = tl.load(batch.block_table + req.rs[:, None] * batch.block_table_stride + p // BLOCK_SIZE, mask=r_ok2,
                       other=0)
    positions = tl.where(is_rej, 0, req.start_pos[:, None] + j)
    # Paged KV slot (below): nothing stored past max_len or when rejected; otherwise positions == p.
    no_store = is_rej | (positions >= max_len)

    if REQUEST_OUTPUTS:
        _request_outputs(req, K, out, REQS, BLOCK_K)
    hsrc = tl.where(is_mask, MASK_ROW_CONST, tl.where(j < qlen2, qs2 + j, PAD_ROW_CONST))
    is_new = (is_bonus | is_mask) & in_bounds
    tl.store(out.positions + out_idx, positions.to(tl.int64), mask=in_bounds)
    tl.store(out.is_masked + out_idx, is_mask, mask=in_bounds)
    tl.store(out.is_rejected + out_idx, is_rej, mask=in_bounds)
    tl.store(out.hidden_src + out_idx, hsrc, mask=in_bounds)
    tl.store(out.sample_indices + req.rs[:, None] * K + (j - nv2), out_idx, mask=is_new)
    tl.store(out.hidden_state_mapping + qs2 + j, out_idx, mask=j < qlen2)  # hidden states are not shifted

    ids = tl.where(is_bonus, req.bonus[:, None].to(tok.dtype), tok)
    ids = tl.where(is_mask, mask_id, ids)
    ids = tl.where(is_rej, pad_id, ids)
    slot = tl.where(no_store, pad_slot, block_no.to(tl.int64) * BLOCK_SIZE + p % BLOCK_SIZE)
    tl.store(out.input_ids + out_idx, ids, mask=in_bounds)
    tl.store(out.slot_mapping + out_idx, slot, mask=in_bounds)


@triton.jit
def draft_inputs_kernel(
    batch,  # _Batch: the target's step (shapes in _Batch)
    out,  # DraftInputs: the drafter's batch (shapes in DraftInputs)
    B,  # requests
    N_in,  # input rows (tokens the target processed)
    K,  # drafts per request
    mask_id,  # the <mask> token id
    pad_id,  # the token id of padding rows
    pad_slot,  # slot_mapping value where no key/value is stored
    max_len,  # max_model_len: positions from here on are not stored
    HAS_SEQ_LENS: tl.constexpr,  # first positions from seq_lens (one round trip fewer) or from target_positions
    ONE_PASS: tl.constexpr,  # the grid covers every row (max_query_len given): no loop, no cross-lane max
    BLOCK_SIZE: tl.constexpr,  # KV block size: a constant divisor compiles to a multiply, not a slow division
    REQS: tl.constexpr,  # requests per program
    BLOCK_T: tl.constexpr,  # output rows per request and token block
    BLOCK_K: tl.constexpr,  # next_pow2(K): the sample-index tile
):
    # A [REQS, BLOCK_T] tile: REQS requests per program (fewer, fuller programs for short decode requests),
    # token blocks along axis 1 (without max_query_len a program loops over its requests' rows).
    rs = tl.program_id(0) * REQS + tl.arange(0, REQS)
    blk = tl.program_id(1)
    nblk = tl.num_programs(1)
    r_ok = rs < B
    # Every per-request scalar in one round of independent loads (indexed by r only).
    qs = tl.load(batch.query_start_loc + rs, mask=r_ok, other=0).to(tl.int32)
    qe = tl.load(batch.query_start_loc + rs + 1, mask=r_ok, other=0).to(tl.int32)
    nrej = tl.load(batch.num_rejected + rs, mask=r_ok, other=0).to(tl.int32)
    bonus = tl.load(batch.bonus + rs, mask=r_ok, other=0)
    if HAS_SEQ_LENS:  # written among the loads above so that it is issued with them
        seq_len = tl.load(batch.seq_lens + rs, mask=r_ok, other=0).to(tl.int32)
    qlen = qe - qs  # 0 for the tile's rows past B: they behave as empty requests and store nothing
    active = qlen > 0
    # Valid shifted tokens. An empty request gets nv = -K so that every row below lands in the padding region.
    nv = tl.where(active, qlen - 1 - nrej, -K)
    out_start = qs + rs * (K - 1)
    total = tl.where(r_ok, qlen + K - 1, 0)
    # The first position (int32 math below, int64 stores).
    if HAS_SEQ_LENS:
        start_pos = seq_len - qlen
    else:  # target_positions[qs] waits for qs: one more round trip before the block table can be read
        start_pos = tl.load(batch.positions + tl.minimum(qs, N_in - 1), mask=r_ok, other=0).to(tl.int32)
    # Per-request outputs, written by the first token block (masked rather than branched on: a branch would
    # split the code between the loads above and the row loads below, and the compiler schedules within a
    # block). In one pass they are stored while the row loads are in flight; a looping program stores them
    # before its loop (which may run zero times).
    per_request = tl.where(blk == 0, r_ok, False)
    req = _Request(rs, r_ok, qs, qe, qlen, per_request, nv[:, None], total[:, None], out_start, start_pos, bonus)
    # One inlined helper for both launch shapes.
    if ONE_PASS:  # the row loads follow the per-request loads directly: nothing waits on a reduction
        _draft_rows(blk * BLOCK_T, req, batch, out, N_in, K, mask_id, pad_id, pad_slot, max_len, BLOCK_SIZE,
                    BLOCK_T, True, REQS, BLOCK_K)
    else:
        _request_outputs(req, K, out, REQS, BLOCK_K)
        for start in range(blk * BLOCK_T, tl.max(total, axis=0), nblk * BLOCK_T):
            _draft_rows(start, req, batch, out, N_in, K, mask_id, pad_id, pad_slot, max_len, BLOCK_SIZE,
                        BLOCK_T, False, REQS, BLOCK_K)


def _validate(tok, pos, bonus, qsl, nrej, block_table, seq_lens, k, block_size, max_model_len, check_values):
    check_int_tensor("target_token_ids", tok, 1)
    check_int_tensor("target_positions", pos, 1)
    check_int_tensor("bonus_tokens", bonus, 1)
    check_int_tensor("query_start_loc", qsl, 1)
    check_int_tensor("num_rejected", nrej, 1)
    check_int_tensor("block_table", block_table, 2)
    for name, v in (("k", k), ("block_size", block_size), ("max_model_len", max_model_len)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
    B, N_in = bonus.shape[0], tok.shape[0]
    if pos.shape[0] != N_in:
        raise ValueError(f"target_positions has {pos.shape[0]} entries but target_token_ids has {N_in}")
    if qsl.shape[0] != B + 1:
        raise ValueError(f"query_start_loc must have B+1 = {B + 1} entries (one per request in bonus_tokens, "
                         f"plus the end), got {qsl.shape[0]}")
    if nrej.shape[0] != B:
        raise ValueError(f"num_rejected must have one entry per request ({B}), got {nrej.shape[0]}")
    if seq_lens is not None:
        check_int_tensor("seq_lens", seq_lens, 1)
        if seq_lens.shape[0] != B:
            raise ValueError(f"seq_lens must have one entry per request ({B}, like bonus_tokens), got "
                             f"{seq_lens.shape[0]}; pass vLLM's CommonAttentionMetadata.seq_lens for this batch")
    if block_table.shape[0] < B:
        raise ValueError(f"block_table has {block_table.shape[0]} rows, fewer than the {B} requests")
    if block_table.shape[1] * block_size < max_model_len:
        raise ValueError(f"block table too small: {block_table.shape[1]} blocks of {block_size} tokens cover "
                         f"{block_table.shape[1] * block_size} positions, but max_model_len={max_model_len} needs "
                         f"{triton.cdiv(max_model_len, block_size)} columns")
    device = check_same_device(target_token_ids=tok, target_positions=pos, bonus_tokens=bonus,
                               query_start_loc=qsl, num_rejected=nrej, block_table=block_table, seq_lens=seq_lens)
    if check_values:
        q = qsl.tolist()
        if q[0] != 0 or q[-1] != N_in or any(b < a for a, b in zip(q, q[1:])):
            raise ValueError(f"query_start_loc must start at 0, never decrease and end at len(target_token_ids)"
                             f"={N_in}; got {q[:6]}{'...' if len(q) > 6 else ''}")
        for r, (n, a, b) in enumerate(zip(nrej.tolist(), q, q[1:])):
            if not 0 <= n <= max(b - a - 1, 0):
                raise ValueError(f"num_rejected[{r}]={n} but request {r} has {b - a} tokens: at most "
                                 f"{max(b - a - 1, 0)} of them can be rejected drafts")
        if seq_lens is not None:
            _check_seq_lens(seq_lens.tolist(), pos.tolist(), q)
    return B, N_in, device


def _check_seq_lens(seq_lens, positions, qsl):
    for r, (n, a, b) in enumerate(zip(seq_lens, qsl, qsl[1:])):
        qlen = b - a
        if n < qlen:
            raise ValueError(f"seq_lens[{r}]={n} is less than request {r}'s {qlen} tokens in this step: seq_lens "
                             f"counts every token of the sequence, this step's included")
        if qlen and n - qlen != positions[a]:
            raise ValueError(f"seq_lens[{r}]={n} disagrees with target_positions: request {r}'s {qlen} tokens start "
                             f"at position {positions[a]}, so its sequence holds {positions[a]} + {qlen} = "
                             f"{positions[a] + qlen} tokens; pass the seq_lens of this batch, or seq_lens=None to "
                             f"read the positions from target_positions")


def build_draft_inputs(target_token_ids, target_positions, bonus_tokens, query_start_loc, num_rejected=None,
                       block_table=None, *, k: int, mask_token_id: int, block_size: int, max_model_len: int,
                       seq_lens: torch.Tensor | None = None, padding_token_id: int = 0, padding_slot_id: int = -1,
                       max_query_len: int | None = None, use_triton: bool | None = None,
                       check_values: bool | None = None, tile: int | None = None,
                       elems_per_thread: int | None = None) -> DraftInputs:
    """Build P-EAGLE's drafter batch (see the module docstring) in one launch. Explained in notebook 04.

    target_token_ids [N_in], target_positions [N_in], bonus_tokens [B], query_start_loc [B+1] int32,
    num_rejected [B] (None: no rejections), block_table [>=B, >=cdiv(max_model_len, block_size)].
    ``seq_lens`` [B] (optional, vLLM's ``CommonAttentionMetadata.seq_lens``: tokens of each sequence
    including this step's) gives the first positions with one dependent load fewer; same outputs.
    ``max_query_len`` (host int, optional: at least every request's token count, as in vLLM) sizes the grid so
    that each program builds its rows in one pass; without it each program loops.
    ``check_values`` (default: on CPU only; it syncs a GPU) checks query_start_loc, num_rejected and
    that seq_lens agrees with target_positions. ``tile`` (power of two, default ``TILE``): rows per program;
    ``elems_per_thread`` (power of two, default ``ELEMS_PER_THREAD``): rows per thread (fewer warps).
    """
    if num_rejected is None:
        num_rejected = torch.zeros(bonus_tokens.shape[0], dtype=torch.int32, device=bonus_tokens.device)
    if block_table is None:
        raise ValueError("block_table is required: [B, cdiv(max_model_len, block_size)] KV block ids per request")
    if check_values is None:
        check_values = target_token_ids.device.type != "cuda"
    B, N_in, device = _validate(target_token_ids, target_positions, bonus_tokens, query_start_loc, num_rejected,
                                block_table, seq_lens, k, block_size, max_model_len, check_values)
    if max_query_len is not None:
        if not isinstance(max_query_len, int) or isinstance(max_query_len, bool) or max_query_len < 1:
            raise ValueError(f"max_query_len must be a host integer >= 1 (the longest request's token count), "
                             f"got {max_query_len!r}")
        longest = int((query_start_loc[1:] - query_start_loc[:-1]).max()) if check_values and B else 0
        if longest > max_query_len:  # the grid would not reach the last rows of the longest request
            raise ValueError(f"max_query_len={max_query_len} but a request has {longest} tokens: pass the batch's "
                             f"longest query length (or max_query_len=None to let each program loop)")
    args = (target_token_ids, target_positions, bonus_tokens, query_start_loc, num_rejected, block_table)
    kw = dict(k=k, mask_token_id=mask_token_id, block_size=block_size, max_model_len=max_model_len,
              seq_lens=seq_lens, padding_token_id=padding_token_id, padding_slot_id=padding_slot_id)
    if not use_triton_for(use_triton, device):
        return reference_draft_inputs(*args, **kw)
    N_out = N_in + B * (k - 1)
    out = DraftInputs(
        input_ids=torch.empty(N_out, dtype=target_token_ids.dtype, device=device),
        positions=torch.empty(N_out, dtype=torch.int64, device=device),
        is_masked=torch.empty(N_out, dtype=torch.bool, device=device),
        is_rejected=torch.empty(N_out, dtype=torch.bool, device=device),
        sample_indices=torch.empty(B * k, dtype=torch.int32, device=device),
        hidden_state_mapping=torch.empty(N_in, dtype=torch.int32, device=device),
        hidden_src=torch.empty(N_out, dtype=torch.int32, device=device),
        slot_mapping=torch.empty(N_out, dtype=torch.int64, device=device),
        query_start_loc=torch.empty(B + 1, dtype=torch.int32, device=device),
    )
    if B == 0:
        out.query_start_loc.zero_()
        return out
    rows = (max_query_len + k - 1) if max_query_len is not None else 2 * k
    BLOCK_T = min(256, next_pow2(rows))
    n_blocks = triton.cdiv(rows, BLOCK_T) if max_query_len is not None else 1
    # Short (decode) requests share a program: REQS * BLOCK_T ~ TILE elements, ELEMS_PER_THREAD each.
    tile = TILE if tile is None else tile
    if tile < 1 or tile & (tile - 1):
        raise ValueError(f"tile must be a power of two >= 1, got {tile}")
    ept = ELEMS_PER_THREAD if elems_per_thread is None else elems_per_thread
    if ept < 1 or ept & (ept - 1):
        raise ValueError(f"elems_per_thread must be a power of two >= 1, got {ept}")
    reqs = max(1, min(next_pow2(B), tile // BLOCK_T))
    num_warps = max(1, min(32, reqs * BLOCK_T // (32 * ept)))
    bt = block_table if block_table.stride(1) == 1 else block_table.contiguous()
    # the kernel indexes 1-D inputs with unit stride (no-ops for the usual contiguous tensors)
    target_token_ids, target_positions, bonus_tokens, query_start_loc, num_rejected = (
        t.contiguous() for t in (target_token_ids, target_positions, bonus_tokens, query_start_loc, num_rejected))
    if N_in == 0:  # every request is empty: give the kernel one readable (never used) input row
        target_token_ids = torch.zeros(1, dtype=target_token_ids.dtype, device=device)
        target_positions = torch.zeros(1, dtype=target_positions.dtype, device=device)
    seq_lens_arg = seq_lens.contiguous() if seq_lens is not None else query_start_loc  # dummy, never read
    batch = _Batch(target_token_ids, target_positions, seq_lens_arg, bonus_tokens, query_start_loc, num_rejected,
                   bt, bt.stride(0))
    runnable(draft_inputs_kernel, device)[(triton.cdiv(B, reqs), n_blocks)](
        batch, out, B, N_in, k, mask_token_id, padding_token_id, padding_slot_id, max_model_len,
        HAS_SEQ_LENS=seq_lens is not None, ONE_PASS=max_query_len is not None, BLOCK_SIZE=block_size, REQS=reqs,
        BLOCK_T=BLOCK_T, BLOCK_K=next_pow2(k), num_warps=num_warps)
    return out


def reference_draft_inputs(target_token_ids, target_positions, bonus_tokens, query_start_loc, num_rejected,
                           block_table, *, k, mask_token_id, block_size, max_model_len, seq_lens=None,
                           padding_token_id=0, padding_slot_id=-1) -> DraftInputs:
    """The specification: one request, one row at a time, in plain Python on host values."""
    tok, pos, bonus = target_token_ids.tolist(), target_positions.tolist(), bonus_tokens.tolist()
    qsl, nrej, bt = query_start_loc.tolist(), num_rejected.tolist(), block_table.tolist()
    seq = seq_lens.tolist() if seq_lens is not None else None
    B, N_in = len(bonus), len(tok)
    N_out = N_in + B * (k - 1)
    ids, positions, masked, rejected = [padding_token_id] * N_out, [0] * N_out, [False] * N_out, [True] * N_out
    slots, hsrc, hmap, sample = [padding_slot_id] * N_out, [PAD_ROW] * N_out, [0] * N_in, [-1] * (B * k)
    for r in range(B):
        qs, qe = qsl[r], qsl[r + 1]
        qlen, out_start = qe - qs, qs + r * (k - 1)
        if qlen == 0:  # an empty request: its K-1 rows stay padding, nothing to sample
            continue
        nv = qlen - 1 - nrej[r]
        first = seq[r] - qlen if seq is not None else pos[qs]  # the two agree on consistent inputs
        for j in range(qlen + k - 1):
            o = out_start + j
            if j < nv:
                ids[o] = tok[qs + 1 + j]  # EAGLE shift: the row for token i carries token i+1
            elif j == nv:
                ids[o] = bonus[r]
            elif j < nv + k:
                ids[o], masked[o] = mask_token_id, True
            else:
                continue  # a rejected row: padding everywhere (hidden_src PAD_ROW unless set below)
            rejected[o] = False
            positions[o] = first + j
            if positions[o] < max_model_len:
                p = positions[o]
                slots[o] = bt[r][p // block_size] * block_size + p % block_size
            if j >= nv:
                sample[r * k + j - nv] = o
        for j in range(qlen + k - 1):
            o = out_start + j
            hsrc[o] = MASK_ROW if masked[o] else (qs + j if j < qlen else PAD_ROW)
        for j in range(qlen):
            hmap[qs + j] = out_start + j
    dev = target_token_ids.device
    T = lambda v, dt: torch.tensor(v, dtype=dt, device=dev)  # noqa: E731
    return DraftInputs(T(ids, target_token_ids.dtype), T(positions, torch.int64), T(masked, torch.bool),
                       T(rejected, torch.bool), T(sample, torch.int32), T(hmap, torch.int32), T(hsrc, torch.int32),
                       T(slots, torch.int64), T([q + i * (k - 1) for i, q in enumerate(qsl)], torch.int32))


def eager_draft_inputs(target_token_ids, target_positions, bonus_tokens, query_start_loc, num_rejected,
                       block_table, *, k, mask_token_id, block_size, max_model_len, seq_lens=None,
                       padding_token_id=0, padding_slot_id=-1) -> DraftInputs:
    """The same work as a chain of separate eager PyTorch ops, as vLLM did before fusing it.

    Sync-free (every size comes from tensor shapes), so it can be captured in a CUDA graph, but it is
    ~50 small launches; the slot mapping follows vLLM's ``compute_new_slot_mapping``.
    """
    dev, B, N_in = target_token_ids.device, bonus_tokens.shape[0], target_token_ids.shape[0]
    N_out = N_in + B * (k - 1)
    qsl = query_start_loc.long()
    qs_r, qlen_r = qsl[:-1], qsl[1:] - qsl[:-1]
    arange_b = torch.arange(B, device=dev)
    out_start_r = qs_r + arange_b * (k - 1)
    req = torch.repeat_interleave(arange_b, qlen_r + k - 1, output_size=N_out)
    j = torch.arange(N_out, device=dev) - out_start_r[req]
    active = (qlen_r > 0)[req]
    nv = (qlen_r - 1 - num_rejected.long())[req]
    is_valid = (j < nv) & active
    is_bonus = (j == nv) & active
    is_mask = (j > nv) & (j < nv + k) & active
    is_rej = ~(is_valid | is_bonus | is_mask)
    qs = qs_r[req]
    if N_in:
        in_idx = (qs + 1 + j).clamp(min=0, max=N_in - 1)
        shifted = target_token_ids[in_idx]
    else:
        shifted = torch.zeros(N_out, dtype=target_token_ids.dtype, device=dev)
    if seq_lens is not None:
        start_pos = (seq_lens.long() - qlen_r)[req]
    elif N_in:
        start_pos = target_positions[qs_r.clamp(max=N_in - 1)][req]
    else:
        start_pos = torch.zeros(N_out, dtype=torch.int64, device=dev)
    ids = torch.where(is_valid, shifted, torch.full_like(shifted, padding_token_id))
    ids = torch.where(is_bonus, bonus_tokens[req].to(ids.dtype), ids)
    ids = torch.where(is_mask, torch.full_like(ids, mask_token_id), ids)
    positions = torch.where(is_rej, torch.zeros_like(j), start_pos.long() + j)
    clamped = positions.clamp(max=max_model_len - 1)
    block_nums = block_table.long()[req, clamped // block_size]
    slots = block_nums * block_size + clamped % block_size
    slots = slots.masked_fill(positions >= max_model_len, padding_slot_id).masked_fill(is_rej, padding_slot_id)
    is_new = is_bonus | is_mask
    sample = torch.full((B * k + 1,), -1, dtype=torch.int32, device=dev)
    dest = torch.where(is_new, req * k + j - nv, torch.full_like(j, B * k))  # non-new rows land in a spare slot
    sample.scatter_(0, dest, torch.arange(N_out, device=dev, dtype=torch.int32))
    sample = sample[:-1].clone()
    hsrc = torch.where(is_mask, MASK_ROW, torch.where((j < qlen_r[req]) & active, qs + j, PAD_ROW)).int()
    req_in = torch.repeat_interleave(arange_b, qlen_r, output_size=N_in)
    hmap = (out_start_r[req_in] + torch.arange(N_in, device=dev) - qs_r[req_in]).int()
    out_qsl = (qsl + torch.arange(B + 1, device=dev) * (k - 1)).int()
    return DraftInputs(ids, positions, is_mask, is_rej, sample, hmap, hsrc, slots, out_qsl)


def random_batch(B: int, K: int, device="cpu", *, decode: bool = True, max_prefill: int = 12, min_prefill: int = 1,
                 block_size: int = 16,
                 max_model_len: int = 4096, near_max_len: bool = False, empty_every: int = 0, seed: int = 0,
                 vocab: int = 1000, rejected: str = "random", with_seq_lens: bool = False):
    """A ragged batch as after a verification step: decode requests have K+1 tokens (bonus + K drafts)
    with ``rejected`` = "random" | "none" | "all" of the K drafts rejected; prefill requests have
    min_prefill..max_prefill tokens and none rejected. ``near_max_len`` puts the drafts across max_model_len.
    Returns ``(args, kw)`` for ``build_draft_inputs(*args, **kw)``; ``with_seq_lens`` adds vLLM's ``seq_lens``
    (int32) to ``kw`` (an empty request's entry is the length of a sequence idle this step: to be ignored)."""
    if rejected not in ("random", "none", "all"):
        raise ValueError(f"rejected must be 'random', 'none' or 'all', got {rejected!r}")
    g = torch.Generator().manual_seed(seed)
    qlens, nrej = [], []
    for r in range(B):
        if empty_every and r % empty_every == empty_every - 1:
            qlens.append(0), nrej.append(0)
        elif decode or r % 2:
            if rejected == "random":
                n = int(torch.randint(0, K + 1, (1,), generator=g))
            else:
                n = 0 if rejected == "none" else K
            qlens.append(K + 1), nrej.append(n)
        else:
            qlens.append(int(torch.randint(min_prefill, max_prefill + 1, (1,), generator=g))), nrej.append(0)
    qsl = torch.tensor([0] + qlens).cumsum(0).to(torch.int32)
    N_in = int(qsl[-1])
    tok = torch.randint(0, vocab, (N_in,), generator=g)
    pos = torch.empty(N_in, dtype=torch.int64)
    seq_lens = []
    n_blocks = triton.cdiv(max_model_len, block_size)
    for r in range(B):
        if near_max_len:  # the K-1 mask rows straddle max_model_len
            lo = max_model_len - qlens[r] - K // 2
        else:
            lo = int(torch.randint(0, max_model_len // 2, (1,), generator=g))
        pos[qsl[r]:qsl[r + 1]] = torch.arange(qlens[r]) + lo
        seq_lens.append(lo + qlens[r])
    block_table = torch.randperm(B * n_blocks, generator=g)[: B * n_blocks].view(B, n_blocks).to(torch.int32)
    bonus = torch.randint(0, vocab, (B,), generator=g)
    args = [t.to(device) for t in (tok, pos, bonus, qsl, torch.tensor(nrej, dtype=torch.int32), block_table)]
    kw = dict(k=K, mask_token_id=vocab, block_size=block_size, max_model_len=max_model_len)
    if with_seq_lens:
        kw["seq_lens"] = torch.tensor(seq_lens, dtype=torch.int32, device=device)
    return args, kw


def max_abs_diff(a: DraftInputs, b: DraftInputs) -> int:
    """Largest elementwise difference over every output field (shapes must agree)."""
    worst = 0
    for name, x, y in zip(DraftInputs._fields, a, b):
        if x.shape != y.shape or x.dtype != y.dtype:
            raise AssertionError(f"{name}: {tuple(x.shape)} {x.dtype} vs {tuple(y.shape)} {y.dtype}")
        if x.numel():
            worst = max(worst, int((x.long() - y.long()).abs().max()))
    return worst


def check_correctness(B: int = 9, K: int = 4, device="cpu", seed: int = 0, **batch_kw) -> int:
    """Largest difference from the reference (positions path) of Triton (one pass and looping), the eager chain
    and the reference itself, each with and without seq_lens, on one random batch."""
    args, kw = random_batch(B, K, device, seed=seed, with_seq_lens=True, **batch_kw)
    positions_kw = {**kw, "seq_lens": None}
    ref = reference_draft_inputs(*args, **positions_kw)
    longest = max(1, int((args[3][1:] - args[3][:-1]).max()))
    return max(max_abs_diff(fn(*args, **k), ref) for k in (kw, positions_kw)
               for fn in (partial(build_draft_inputs, use_triton=True),
                          partial(build_draft_inputs, use_triton=True, max_query_len=longest),
                          eager_draft_inputs, reference_draft_inputs))


def benchmark_draft_inputs(batch_sizes=(1, 8, 64, 256, 512), ks=(3, 7, 10), device="cuda", reps: int = 30,
                           tile: int | None = None, elems_per_thread: int | None = None):
    """Per (B, K) decode batch: device and host time of the Triton kernel with seq_lens and max_query_len
    ("triton"), with positions from target_positions ("triton_positions"), looping without max_query_len
    ("triton_loop"), the eager chain and the reference."""
    on_gpu = torch.device(device).type == "cuda"
    launch = dict(use_triton=True, check_values=False, tile=tile, elems_per_thread=elems_per_thread)
    fused = ("triton", "triton_positions", "triton_loop")
    rows = []
    for K in ks:
        for B in batch_sizes:
            args, kw = random_batch(B, K, device, seed=B + K, with_seq_lens=True)
            positions_kw = {**kw, "seq_lens": None}  # eager and reference as before seq_lens existed
            variants = {
                "triton": (lambda: build_draft_inputs(*args, **kw, max_query_len=K + 1, **launch), True),
                "triton_positions": (lambda: build_draft_inputs(*args, **positions_kw, max_query_len=K + 1, **launch),
                                     True),
                "triton_loop": (lambda: build_draft_inputs(*args, **kw, **launch), True),
                "eager": (lambda: eager_draft_inputs(*args, **positions_kw), True),
                "reference": (lambda: reference_draft_inputs(*args, **positions_kw), False),
            }
            shape = {"tile": tile or TILE, "elems_per_thread": elems_per_thread or ELEMS_PER_THREAD}
            for name, t in time_variants(variants, on_gpu, reps=reps, with_floor=fused).items():
                rows.append({"kernel": "draft_inputs", "variant": name, "batch_size": B, "k": K, **t,
                             **(shape if name in fused else {})})
    return rows


if __name__ == "__main__":
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    for K in (1, 3, 7, 10):
        assert check_correctness(B=11, K=K, device=dev, seed=K, decode=False, empty_every=4) == 0, K
    assert check_correctness(B=5, K=7, device=dev, near_max_len=True) == 0
    print(f"draft_inputs: Triton == reference == eager on {dev}, with and without seq_lens")
    sizes = (1, 8, 64, 256, 512) if dev == "cuda" else (1, 8)
    for r in benchmark_draft_inputs(sizes, (3, 7, 10) if dev == "cuda" else (3,), device=dev):
        print(r)
    print("empty-kernel launch floor:", launch_floor_us(dev))
