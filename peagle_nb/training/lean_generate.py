"""The target's self-distillation continuations on the lean engine's static cache: the same tokens as
``drafter_data.generate`` (the ``transformers`` loop, the readable ground truth), built for family v3's 327,680
sequences on a GPU (``lab.benchmarks.generate_bench`` measures the two side by side; on a CPU the loop is as fast or
faster, so it stays the CPU default). Explained in notebook 08 (why the heads' data took the GPU session's time).

``generate`` re-concatenates a growing ``transformers`` cache at every step and launches each layer's ~25 ops
from Python: at 4,096 sequences of a 32-layer target a step is host- and copy-bound. Here the keys and values live
in one preallocated cache (sequence b owns slots ``b * total_len + position``), a decoding step is one
``LeanTarget.forward`` over B rows, and on a GPU that step is captured once as a CUDA graph and replayed for every
step of every chunk (the chunk's tokens and positions are written into the same buffers; a short last chunk is
padded with rows nobody reads). Chunks, their order and the sampling calls are ``generate``'s, so the random draws
are the same and only the arithmetic's rounding differs (tests hold the tokens equal on a CPU).
"""

from __future__ import annotations

import time
from typing import Callable

import torch

from peagle_nb.engine.lean.forward import KVCache, LeanTarget
from peagle_nb.engine.lean.graphs import Step


class _Stepper:
    """One decoding step of B sequences over a static cache: ``tok``/``pos`` [B] in, ``logits`` [B, V] out."""

    def __init__(self, lean: LeanTarget, batch: int, total_len: int, use_graph: bool):
        dev = lean.device
        self.lean, self.batch, self.total_len = lean, batch, total_len
        self.cache = KVCache(len(lean.layers), lean.nkv, total_len, lean.hd, lean.dtype, dev, sequences=batch)
        self.starts = torch.arange(batch, device=dev) * total_len  # [B]: first slot of each sequence
        self.tok = torch.zeros(batch, dtype=torch.long, device=dev)  # [B]: the token each sequence feeds next
        self.pos = torch.zeros(batch, dtype=torch.long, device=dev)  # [B]: its position (all equal in a chunk)
        self.step = Step(self._forward, use_graph)

    def _forward(self):
        logits, _ = self.lean.forward(self.tok, self.pos, self.starts + self.pos, self.cache, starts=self.starts)
        return logits

    def prefill(self, ids: torch.Tensor) -> torch.Tensor:
        """ids [n, L] (n <= B, one prompt length) -> the last row's logits [n, V]; sequence i takes slots from
        ``starts[i]``. Eager: one pass over all n * L rows."""
        n, length = ids.shape
        positions = torch.arange(length, device=ids.device).repeat(n)
        starts = self.starts[:n].repeat_interleave(length)
        last = torch.arange(n, device=ids.device) * length + length - 1
        logits, _ = self.lean.forward(ids.reshape(-1), positions, starts + positions, self.cache,
                                      logits_rows=last, starts=starts)
        return logits

    def decode(self, nxt: torch.Tensor, position: int) -> torch.Tensor:
        """Feed ``nxt`` [n] at ``position`` (rows past n repeat row 0's token: padding nobody reads) -> [n, V]."""
        n = nxt.shape[0]
        self.tok[:n].copy_(nxt)
        if n < self.batch:
            self.tok[n:].fill_(0)
        self.pos.fill_(position)
        return self.step()[:n]


@torch.no_grad()
def generate_lean(target, prompts: list[torch.Tensor], total_len: int, temperature: float = 0.0, seed: int = 0,
                  batch_size: int = 256, use_graphs: bool | None = None,
                  log: Callable[[str], None] | None = None) -> torch.Tensor:
    """``drafter_data.generate`` on the lean forward -> ``[N, total_len]`` (prompt order): prompts of equal length
    batched in chunks of ``batch_size``, greedy when ``temperature <= 0``, else ``torch.multinomial`` on one
    generator seeded with ``seed`` (the same calls, in the same order, as ``generate``). ``use_graphs``: default on
    CUDA. ``log`` gets a progress line per chunk (sequences done, generated tokens per second)."""
    device = next(target.parameters()).device
    use_graphs = device.type == "cuda" if use_graphs is None else bool(use_graphs)
    if use_graphs and device.type != "cuda":
        raise ValueError("use_graphs=True needs the target on a CUDA device")
    by_len: dict[int, list[int]] = {}
    for i, p in enumerate(prompts):
        if not 0 < len(p) < total_len:
            raise ValueError(f"prompt {i} has {len(p)} tokens; need 1..{total_len - 1}")
        by_len.setdefault(len(p), []).append(i)
    if total_len > target.config.max_position_embeddings:
        raise ValueError(f"total_len {total_len} is past the target's {target.config.max_position_embeddings} "
                         f"positions: use a shorter --seq-len")
    gen = torch.Generator(device=device).manual_seed(seed)
    out = torch.empty(len(prompts), total_len, dtype=torch.long)
    batch = min(batch_size, max((len(r) for r in by_len.values()), default=1))
    stepper = _Stepper(LeanTarget(target), batch, total_len, use_graphs)
    t0, done, new_tokens = time.perf_counter(), 0, 0
    for length, rows in sorted(by_len.items()):
        for s in range(0, len(rows), batch):
            chunk = rows[s:s + batch]
            ids = torch.stack([prompts[i] for i in chunk]).to(device)
            logits = stepper.prefill(ids).float()
            seq = torch.empty(len(chunk), total_len, dtype=torch.long, device=device)
            seq[:, :length] = ids
            for t in range(length, total_len):
                if temperature > 0:
                    nxt = torch.multinomial(torch.softmax(logits / temperature, -1), 1, generator=gen)[:, 0]
                else:
                    nxt = logits.argmax(-1)
                seq[:, t] = nxt
                if t < total_len - 1:
                    logits = stepper.decode(nxt, t).float()
            out[chunk] = seq.cpu()
            done, new_tokens = done + len(chunk), new_tokens + len(chunk) * (total_len - length)
            if log:
                log(f"lean generation: {done:,}/{len(prompts):,} sequences, "
                    f"{new_tokens / max(time.perf_counter() - t0, 1e-9):,.0f} new tokens/s")
    return out
