"""Greedy verification of K draft tokens per request, in one Triton launch (explained in notebook 04).

The target scores the bonus token of the last round plus the K drafts in one forward pass and
returns its argmax at each of the K+1 positions: ``target_tokens[b, j]`` is what the target would
emit after seeing drafts ``0..j-1``. Under greedy decoding a draft is accepted while it equals the
target's choice, so per request::

    accepted     = length of the prefix where draft_tokens[b, j] == target_tokens[b, j]  (j < num_drafts[b])
    bonus        = target_tokens[b, accepted]      # the target's own token after the accepted prefix
    num_rejected = num_drafts[b] - accepted        # fed to the draft-input builder next round

Outputs are identical to plain greedy decoding (lossless). Run ``python -m peagle_kernels.greedy_verify``
for the correctness check and benchmark.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from peagle_kernels._common import (check_int_tensor, check_same_device, launch_floor_us, next_pow2, runnable,
                                    time_variants, use_triton_for)

# Launch shape (measured on an H200, see data/results/kernels_h200.json): requests per program, one per thread.
TILE = 32


@triton.jit
def greedy_verify_kernel(
    draft_ptr,  # [B, K] int32/int64: the drafts, row-contiguous
    target_ptr,  # [B, K+1] int32/int64: the target's argmax after the bonus token and after each draft
    num_drafts_ptr,  # [B] int32/int64: drafts per request (read only when HAS_NUM_DRAFTS)
    accepted_ptr,  # [B] int32 out: accepted prefix length
    bonus_ptr,  # [B] int64 out: the target's token after the accepted prefix
    rejected_ptr,  # [B] int32 out: num_drafts - accepted
    B,  # requests
    K: tl.constexpr,  # drafts per request: the walk below is unrolled over them
    HAS_NUM_DRAFTS: tl.constexpr,  # False: every request has K drafts
    BLOCK_B: tl.constexpr,  # requests per program
):
    # One request per thread. Its K drafts and K+1 targets are loaded independently of one another and of
    # num_drafts (all in one memory round trip: the unrolled loop issues every load before the first is used)
    # and walked in registers, so the results need no cross-lane reduction and are already where the stores
    # want them (a [BLOCK_B, K] tile reduced along K would move them between lanes and through shared memory).
    rows = tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)
    row_ok = rows < B
    if HAS_NUM_DRAFTS:
        nd = tl.load(num_drafts_ptr + rows, mask=row_ok, other=0).to(tl.int32)
        nd = tl.minimum(tl.maximum(nd, 0), K)  # never read past a row, whatever the caller passed
    else:
        nd = tl.zeros([BLOCK_B], dtype=tl.int32) + K
    rows64 = rows.to(tl.int64)
    going = row_ok  # still inside the accepted prefix
    accepted = tl.zeros([BLOCK_B], dtype=tl.int32)
    bonus = tl.zeros([BLOCK_B], dtype=tl.int64)
    for c in tl.static_range(K + 1):
        t_c = tl.load(target_ptr + rows64 * (K + 1) + c, mask=row_ok, other=0).to(tl.int64)
        if c < K:  # column K has no draft: the prefix always stops there at the latest
            d_c = tl.load(draft_ptr + rows64 * K + c, mask=row_ok, other=0).to(tl.int64)
            match = (d_c == t_c) & (nd > c)
        else:
            match = row_ok & False
        bonus = tl.where(going & ~match, t_c, bonus)  # the target's token where the prefix stops
        going = going & match
        accepted += going.to(tl.int32)
    tl.store(accepted_ptr + rows, accepted, mask=row_ok)
    tl.store(bonus_ptr + rows, bonus, mask=row_ok)
    tl.store(rejected_ptr + rows, nd - accepted, mask=row_ok)


def _validate(draft_tokens, target_tokens, num_drafts, check_values: bool):
    check_int_tensor("draft_tokens", draft_tokens, 2)
    check_int_tensor("target_tokens", target_tokens, 2)
    B, K = draft_tokens.shape
    if K < 1:
        raise ValueError(f"draft_tokens must hold K >= 1 drafts per request, got shape {tuple(draft_tokens.shape)}")
    if tuple(target_tokens.shape) != (B, K + 1):
        raise ValueError(f"target_tokens must have shape [B, K+1] = [{B}, {K + 1}] (the target's argmax at the "
                         f"bonus position and after each of the K drafts), got {tuple(target_tokens.shape)}")
    if num_drafts is not None:
        check_int_tensor("num_drafts", num_drafts, 1)
        if num_drafts.shape[0] != B:
            raise ValueError(f"num_drafts must have one entry per request ({B}), got {num_drafts.shape[0]}")
    device = check_same_device(draft_tokens=draft_tokens, target_tokens=target_tokens, num_drafts=num_drafts)
    if check_values and num_drafts is not None and B:
        lo, hi = int(num_drafts.min()), int(num_drafts.max())
        if lo < 0 or hi > K:
            raise ValueError(f"num_drafts must lie in [0, K={K}], got values in [{lo}, {hi}]")
    return B, K, device


def greedy_verify(draft_tokens: torch.Tensor, target_tokens: torch.Tensor, num_drafts: torch.Tensor | None = None,
                  *, use_triton: bool | None = None, check_values: bool | None = None, tile: int | None = None):
    """Accepted prefix length, bonus token and number of rejected drafts per request.

    draft_tokens [B, K] int64 (or int32), target_tokens [B, K+1] (same), num_drafts [B] int32 | None
    (None: every request has K drafts). Returns ``(accepted [B] int32, bonus [B] int64,
    num_rejected [B] int32)``. ``use_triton``: None = Triton on CUDA tensors, PyTorch reference
    otherwise; True on CPU runs the kernel under Triton's interpreter. ``check_values`` (default: on
    CPU only, since it syncs a GPU) checks 0 <= num_drafts <= K. ``tile`` (power of two, default ``TILE``):
    requests per program. The kernel is compiled once per K. Explained in notebook 04.
    """
    B, K, device = _validate(draft_tokens, target_tokens, num_drafts,
                             check_values if check_values is not None else draft_tokens.device.type != "cuda")
    if not use_triton_for(use_triton, device):
        return reference_greedy_verify(draft_tokens, target_tokens, num_drafts)
    tile = TILE if tile is None else tile
    if not isinstance(tile, int) or tile < 1 or tile & (tile - 1):
        raise ValueError(f"tile must be a power of two >= 1, got {tile!r}")
    accepted = torch.empty(B, dtype=torch.int32, device=device)
    bonus = torch.empty(B, dtype=torch.int64, device=device)
    rejected = torch.empty(B, dtype=torch.int32, device=device)
    if B == 0:
        return accepted, bonus, rejected
    BLOCK_B = min(next_pow2(B), tile)
    nd = num_drafts if num_drafts is not None else accepted  # dummy pointer, never read
    runnable(greedy_verify_kernel, device)[(triton.cdiv(B, BLOCK_B),)](
        draft_tokens.contiguous(), target_tokens.contiguous(), nd.contiguous(), accepted, bonus, rejected, B,
        K=K, HAS_NUM_DRAFTS=num_drafts is not None, BLOCK_B=BLOCK_B, num_warps=max(1, min(8, BLOCK_B // 32)))
    return accepted, bonus, rejected


def reference_greedy_verify(draft_tokens, target_tokens, num_drafts=None):
    """The specification, one request at a time in plain Python (host values)."""
    B, K = draft_tokens.shape
    drafts, targets = draft_tokens.tolist(), target_tokens.tolist()
    nds = num_drafts.tolist() if num_drafts is not None else [K] * B
    accepted, bonus, rejected = [], [], []
    for b in range(B):
        n = 0
        while n < nds[b] and drafts[b][n] == targets[b][n]:
            n += 1
        accepted.append(n)
        bonus.append(targets[b][n])
        rejected.append(nds[b] - n)
    device = draft_tokens.device
    return (torch.tensor(accepted, dtype=torch.int32, device=device),
            torch.tensor(bonus, dtype=torch.int64, device=device),
            torch.tensor(rejected, dtype=torch.int32, device=device))


def eager_greedy_verify(draft_tokens, target_tokens, num_drafts=None):
    """The same work as a chain of separate eager PyTorch ops (no host sync; ~8 launches on a GPU)."""
    B, K = draft_tokens.shape
    cols = torch.arange(K, device=draft_tokens.device)
    nd = (num_drafts if num_drafts is not None else torch.full((B,), K, device=draft_tokens.device)).to(torch.int32)
    match = (draft_tokens == target_tokens[:, :K]) & (cols[None, :] < nd[:, None])
    accepted = match.to(torch.int32).cumprod(dim=1).sum(dim=1, dtype=torch.int32)
    bonus = target_tokens.gather(1, accepted.long()[:, None]).squeeze(1).to(torch.int64)
    return accepted, bonus, nd - accepted


def random_case(B: int, K: int, device="cpu", vocab: int = 50, p_accept: float = 0.7, ragged: bool = True,
                seed: int = 0):
    """Drafts that agree with the target with probability ``p_accept`` per position (geometric prefixes)."""
    g = torch.Generator().manual_seed(seed)
    target = torch.randint(0, vocab, (B, K + 1), generator=g)
    wrong = (target[:, :K] + torch.randint(1, vocab, (B, K), generator=g)) % vocab
    keep = torch.rand(B, K, generator=g) < p_accept
    draft = torch.where(keep, target[:, :K], wrong)
    nd = torch.randint(0, K + 1, (B,), generator=g, dtype=torch.int32) if ragged else None
    to = lambda t: None if t is None else t.to(device)  # noqa: E731
    return to(draft), to(target), to(nd)


def check_correctness(B: int = 37, K: int = 7, device="cpu", seed: int = 0) -> int:
    """Triton vs reference vs eager on a random ragged batch; returns the number of differing entries."""
    draft, target, nd = random_case(B, K, device, seed=seed)
    ref = reference_greedy_verify(draft, target, nd)
    outs = [greedy_verify(draft, target, nd, use_triton=True), eager_greedy_verify(draft, target, nd)]
    return sum(int((o != r).sum()) for out in outs for o, r in zip(out, ref))


def benchmark_greedy_verify(batch_sizes=(1, 8, 64, 256, 512), ks=(3, 7, 10), device="cuda", reps: int = 30,
                            tile: int | None = None):
    """Per (B, K): device and host time of the Triton kernel, the eager op chain and the reference."""
    on_gpu = torch.device(device).type == "cuda"
    rows = []
    for K in ks:
        for B in batch_sizes:
            draft, target, nd = random_case(B, K, device, seed=B * 100 + K)
            variants = {
                "triton": (lambda: greedy_verify(draft, target, nd, use_triton=True, check_values=False, tile=tile),
                           True),
                "eager": (lambda: eager_greedy_verify(draft, target, nd), True),
                "reference": (lambda: reference_greedy_verify(draft, target, nd), False),
            }
            for name, t in time_variants(variants, on_gpu, reps=reps, with_floor=("triton",)).items():
                rows.append({"kernel": "greedy_verify", "variant": name, "batch_size": B, "k": K, **t,
                             **({"tile": tile or TILE} if name == "triton" else {})})
    return rows


if __name__ == "__main__":
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    for K in (1, 3, 7, 10):
        assert check_correctness(B=33, K=K, device=dev, seed=K) == 0, f"mismatch at K={K}"
    print(f"greedy_verify: Triton == reference == eager on {dev}")
    floor = launch_floor_us(dev)
    sizes = (1, 8, 64, 256, 512) if dev == "cuda" else (1, 8)
    for r in benchmark_greedy_verify(sizes, (3, 7, 10) if dev == "cuda" else (3,), device=dev):
        print(r)
    print("empty-kernel launch floor:", floor)
