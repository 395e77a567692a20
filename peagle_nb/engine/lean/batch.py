"""``BatchLeanDecoder``: B requests decoded together by the lean engine, each as ``LeanDecoder`` decodes it alone.

Explained in notebook 07 (throughput against concurrency) and 04 (the input builder at the batch sizes used).
The single-request decoder (``lean/decoder.py``) is the path to read first; this one reuses its forwards, kernels,
checks and graph capture, and changes only what a batch changes:

- one KV cache holds every request: request b owns slots ``b * capacity + position`` and each forward passes the
  first slot of every row's request (``starts``), so a row attends to its own request's slots only;
- the verification state gains a leading batch axis (``[B, K+1]`` tokens, ``[B]`` positions, ...), and every
  request keeps its own prompt length, position and accepted length per step (ragged acceptance);
- ``build`` hands the whole batch to the suite's input builder (``peagle_kernels.draft_inputs``: request r's rows
  start at ``r * 2K`` for P-EAGLE, ``r * (K+1)`` for EAGLE-3, so no shape depends on the accepted lengths);
- ``verify`` runs the target over all requests' K+1 rows in one pass and accepts per request (greedy or sampled,
  the same kernels with B rows);
- a request that is done (its token budget or end of sequence) or a padding slot of the batch bucket is frozen:
  ``update`` keeps its state, so it re-verifies the same block until the batch ends, inside its own slots.

The batch is padded to a bucket of ``BATCH_BUCKETS`` so that a GPU captures one graph per phase per
(bucket, K). On a GPU all prompts are prefilled in one pass (each row its own position and request). At T > 0
every request draws its step's uniforms from its own generator in the single decoder's layout, so it gets the tokens
it gets alone. The step loop does list work only; each request's token list is assembled when the loop ends and the
per-step statistics after the clock stops.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch

from peagle_kernels.draft_inputs import build_draft_inputs, eager_draft_inputs
from peagle_kernels.greedy_verify import greedy_verify
from peagle_kernels.hidden_expand import eager_expand_hidden, expand_hidden
from peagle_kernels.sampled_verify import sampled_verify
from peagle_nb.engine.drafting import pick_drafts
from peagle_nb.engine.lean.decoder import LeanDecoder
from peagle_nb.engine.stats import GenerationResult, StepStats
from peagle_nb.engine.verify import inv_temperature, sample_token

BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64)


def batch_bucket(n: int) -> int:
    """The smallest bucket holding ``n`` requests; a clear error above the largest."""
    if n < 1:
        raise ValueError("a batch needs at least one prompt")
    for b in BATCH_BUCKETS:
        if b >= n:
            return b
    raise ValueError(f"{n} requests: the batched engine captures batches of at most {BATCH_BUCKETS[-1]} "
                     f"(BATCH_BUCKETS). Fix: split the prompts into batches of {BATCH_BUCKETS[-1]} or fewer")


def batched_twin(decoder, max_batch: int = 8) -> BatchLeanDecoder | None:
    """The batched engine on a single-request lean decoder's models and settings: it gives every request exactly the
    tokens and accepted counts that decoder gives it alone (tests/engine/test_batch_engine.py), several requests per
    step. None for any other decoder (the reference engine, a batched one) and for a lean decoder with hand-set
    placeholders or prefill padding."""
    args = getattr(decoder, "twin_args", None)
    return None if args is None else BatchLeanDecoder(**args, max_batch=max_batch)


@dataclass
class BatchResult:
    """One ``generate`` of a batch: each request's own result (tokens, steps with its accepted counts; a step's
    times are the batch step's, shared by its requests) and the batch's clock."""

    results: list[GenerationResult]
    bucket: int  # the batch size the steps ran at (requests + frozen padding slots)
    prefill_ms: float  # all prompts' prefill (one pass)
    total_ms: float  # prefills and every step, wall clock
    step_wall_ms: list[float] = field(default_factory=list)  # each batch step
    step_draft_ms: list[float] = field(default_factory=list)  # each batch step's drafting (0 for plain decoding)
    step_verify_ms: list[float] = field(default_factory=list)  # each batch step's target pass and acceptance

    @property
    def new_tokens(self) -> int:
        return sum(len(r.tokens) for r in self.results)

    @property
    def tokens_per_s(self) -> float:
        return self.new_tokens / (self.total_ms / 1e3) if self.total_ms > 0 else 0.0


class BatchLeanDecoder(LeanDecoder):
    """Decode up to ``max_batch`` prompts together with ``method`` and K drafts per step; ``generate`` takes a list of
    prompts and returns a ``BatchResult`` whose per-request results equal ``LeanDecoder.generate`` on each alone.

    Arguments as ``LeanDecoder`` (``pad_prefill`` is not offered: a batch of one is prefilled as the single decoder
    does; several prompts together in one unpadded pass on a GPU, one after another on a CPU)."""

    def __init__(self, target, tokenizer=None, head=None, method: str = "none", k: int = 1, max_batch: int = 8,
                 use_graphs: bool | None = None, builder: str = "fused", draft_sampling: str = "sample",
                 sampler: str = "fused"):
        self.bucket = batch_bucket(max_batch)
        super().__init__(target, tokenizer, head, method, k, use_graphs=use_graphs, builder=builder,
                         draft_sampling=draft_sampling, sampler=sampler, pad_prefill=None)
        self.twin_args = None  # batched already
        # several prompts in one prefill pass on a GPU; on a CPU, PyTorch's attention over ragged rows would mask
        # every request's slots for every row, so there they go one by one (tests set it to check both paths)
        self.prefill_together = self.device.type == "cuda"
        self._make_batch_buffers()

    # ------------------------------------------------------------------------------------------- buffers
    def _make_batch_buffers(self) -> None:
        B, K, dev, cap = self.bucket, self.k, self.device, self.capacity
        z = lambda *s, dt=torch.long: torch.zeros(*s, dtype=dt, device=dev)  # noqa: E731
        self.tcache = self.lt.new_cache(B)
        self.req_start = torch.arange(B, device=dev) * cap  # [B]: first cache slot of each request
        self.active = torch.zeros(B, dtype=torch.bool, device=dev)  # requests still decoding (host-updated)
        self.inv_t = torch.zeros(B, dtype=torch.float32, device=dev)
        if self.method == "none":
            self.tok, self.pos = z(B), z(B)
            self.nxt_plain = z(B)
            self.uniforms = torch.zeros(B, self.vocab, device=dev)
            self.scratch = z(2, B)
            return
        vd, feat, hs = self.lh.lm_head.shape[1], self.v_feats.shape[1], self.lh.hidden_size
        self.hcache = self.lh.new_cache(B)
        rows_per_req = 2 * K if self.method == "peagle" else K + 1  # the builder's rows per request
        self.draft_starts = torch.arange(B * rows_per_req, device=dev) // rows_per_req * cap
        self.verify_starts = self.req_start.repeat_interleave(K + 1)
        self.v_tokens, self.v_pos0, self.v_feats = z(B, K + 1), z(B), z(B, K + 1, feat, dt=self.lt.dtype)
        self.n_rej, self.bonus = z(B, dt=torch.int32), z(B)
        self.drafts, self.acc, self.nxt = z(B, K), z(B, dt=torch.int32), z(B)
        self.new_p0, self.vids, self.new_feats = z(B), z(B, K + 1), z(B, K + 1, feat, dt=self.lt.dtype)
        self.packet = z(B, K + 2)
        self.scratch = z(B, dt=torch.int32)
        self.qsl = (torch.arange(B + 1, device=dev) * (K + 1)).int()
        self.block_table = torch.arange(B, dtype=torch.int32, device=dev)[:, None]  # request b = cache block b
        self.chain_h, self.chain_p = z(B, hs, dt=self.lt.dtype), z(B)
        # sampling: each request's step uniforms, split as engine.verify.split_uniforms, kept row-contiguous
        self.u_draft = torch.zeros(B, K, vd, device=dev)
        self.u_res, self.u_acc = torch.zeros(B, self.vocab, device=dev), torch.zeros(B, K, device=dev)
        self.u_all = torch.zeros(B, K * vd + self.vocab + K, device=dev)  # a step's draws, request-major
        self.u_pass, self.q_pass = torch.zeros(B, vd, device=dev), torch.zeros(B, vd, device=dev)  # EAGLE-3's passes
        self.q = torch.zeros(B, K, vd, dtype=torch.float32, device=dev)
        self.inv_t_rows = torch.zeros(B * K, dtype=torch.float32, device=dev)

    # ------------------------------------------------------------------------------------------ prefill
    def _prefill_all(self, prompts) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
        """Every prompt's prefill into its request's slots -> per request (last row's logits [V], features [F]).

        One batch, one request: the single decoder's own prefill (padded and replayed as a graph on a GPU; request 0
        owns slots from 0, so nothing changes). Several, with ``prefill_together`` (a GPU): ONE eager pass over all
        prompts' rows laid end to end, each row with its own position and its request's first slot (``starts``), so
        launch costs are paid once per layer and not once per request; the drafter's context rows follow (each prompt
        without its last row). Without it, one prompt after another.
        """
        if len(prompts) == 1 and self.pad_prefill:
            return [LeanDecoder._prefill(self, prompts[0])]
        if not self.prefill_together:
            return [self._prefill_one(b, p) for b, p in enumerate(prompts)]
        dev = self.device
        lengths = [p.numel() for p in prompts]
        ids = torch.cat(prompts)
        positions = torch.cat([torch.arange(n, device=dev) for n in lengths])
        starts = torch.cat([self.req_start[b].expand(n) for b, n in enumerate(lengths)])  # cat: contiguous
        last = torch.tensor(lengths, device=dev).cumsum(0) - 1  # each prompt's last row
        logits, feats = self.lt.forward(ids, positions, starts + positions, self.tcache, self.layer_ids,
                                        logits_rows=last, starts=starts)
        if self.method != "none":
            # slot i of a request holds (token x_{i+1}, feature f_i): every row but a prompt's last gives a feature,
            # every row but a prompt's first gives a token
            has_next = torch.ones(ids.numel(), dtype=torch.bool, device=dev)
            has_next[last] = False
            is_next = torch.ones_like(has_next)
            is_next[torch.cat([last.new_zeros(1), last[:-1] + 1])] = False
            if bool(has_next.any()):
                self.lh.forward(ids[is_next], self.lh.project(feats[has_next]), positions[has_next],
                                (starts + positions)[has_next], self.hcache, starts=starts[has_next])
        return [(logits[b].float(), None if feats is None else feats[last[b]]) for b in range(len(prompts))]

    def _prefill_one(self, b: int, prompt) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``LeanDecoder._prefill`` of one prompt into request b's slots -> (last row's logits [V], features)."""
        n = prompt.numel()
        positions = torch.arange(n, device=self.device)
        starts = self.req_start[b].expand(n).contiguous()  # a kernel reads one start per row
        slots = starts + positions
        logits, feats = self.lt.forward(prompt, positions, slots, self.tcache, self.layer_ids,
                                        logits_rows=slice(-1, None), starts=starts)
        if self.method != "none" and n > 1:
            self.lh.forward(prompt[1:], self.lh.project(feats[:-1]), positions[:-1], slots[:-1], self.hcache,
                            starts=starts[:-1])
        return logits[-1].float(), None if feats is None else feats[-1]

    # ------------------------------------------------------------------------------------------- phases
    def _plain(self, greedy: bool):
        logits, _ = self.lt.forward(self.tok, self.pos, self.req_start + self.pos, self.tcache, starts=self.req_start)
        logits = logits.float()
        if greedy:
            self.nxt_plain.copy_(logits.argmax(-1))
        else:
            sampled_verify(logits[:, None], None, None, None, self.inv_t, None, self.uniforms,
                           out=(self.scratch[0], self.nxt_plain, self.scratch[1]), use_triton=self.kernel_triton)
        self.tok.copy_(torch.where(self.active, self.nxt_plain, self.tok))
        self.pos.add_(self.active.long())  # frozen requests stay where they are
        return logits

    def _build(self):
        B, K = self.bucket, self.k
        kk = K if self.method == "peagle" else 1
        positions = (self.v_pos0[:, None] + self.arange_k1).reshape(-1)
        args = (self.v_tokens.reshape(-1), positions, self.bonus, self.qsl, self.n_rej, self.block_table)
        kw = dict(k=kk, mask_token_id=self.mask_id, block_size=self.capacity, max_model_len=self.capacity,
                  seq_lens=(self.v_pos0 + K + 1).int(), padding_slot_id=self.tcache.spare_slot)
        projected = self.lh.project(self.v_feats.reshape(B * (K + 1), -1))
        if self.builder == "eager":
            di = eager_draft_inputs(*args, **kw)
            return di, eager_expand_hidden(projected, self.mask_h, di.hidden_state_mapping, di.is_masked)
        di = build_draft_inputs(*args, **kw, max_query_len=K + 1, check_values=False)
        return di, expand_hidden(projected, self.mask_h, di.hidden_src, check_values=False)

    def _draft_pass(self, greedy: bool):
        di, hidden = self._steps["build"].out
        pre = self.lh.forward(di.input_ids, hidden, di.positions, di.slot_mapping, self.hcache,
                              starts=self.draft_starts)
        rows = di.sample_indices.long()  # P-EAGLE: [B*K], request-major; EAGLE-3: [B], one row per request
        logits = self.lh.logits(pre[rows])
        if self.method == "eagle3":
            self.chain_h.copy_(pre[rows])
            self.chain_p.copy_(di.positions[rows] + 1)
            self._pick(logits, 0, greedy)
        else:  # P-EAGLE: every request's K drafts, request-major, in one call
            vd = self.q.shape[-1]
            pick_drafts(logits, greedy, self.draft_sampling, self.inv_t_rows, self.u_draft.view(-1, vd), self.d2t_ids,
                        tokens_out=self.drafts.view(-1), probs_out=self.q.view(-1, vd), use_triton=self.kernel_triton)
        return logits

    def _pick(self, logits, j: int, greedy: bool) -> None:
        """EAGLE-3's draft j of every request from its pass's logits [B, Vd] into ``drafts[:, j]`` (and ``q``)."""
        if not greedy:
            self.u_pass.copy_(self.u_draft[:, j])  # the kernel reads each row's draws contiguously
        tok, q = pick_drafts(logits, greedy, self.draft_sampling, self.inv_t_rows[: self.bucket], self.u_pass,
                             self.d2t_ids, probs_out=self.q_pass, use_triton=self.kernel_triton)
        self.drafts[:, j].copy_(tok)
        if q is not None:
            self.q[:, j].copy_(q)

    def _chain_pass(self, j: int, greedy: bool):
        pre = self.lh.forward(self.drafts[:, j - 1], self.chain_h, self.chain_p, self.req_start + self.chain_p,
                              self.hcache, starts=self.req_start)
        logits = self.lh.logits(pre)
        self.chain_h.copy_(pre)
        self.chain_p.add_(1)
        self._pick(logits, j, greedy)
        return logits

    def _verify(self, greedy: bool):
        B, K = self.bucket, self.k
        self.new_p0.copy_(self.v_pos0 + (K + 1) - self.n_rej)
        positions = (self.new_p0[:, None] + self.arange_k1).reshape(-1)
        self.vids.copy_(torch.cat([self.bonus[:, None], self.drafts], dim=1))
        logits, feats = self.lt.forward(self.vids.reshape(-1), positions, self.verify_starts + positions, self.tcache,
                                        self.layer_ids, starts=self.verify_starts)
        logits = logits.float().view(B, K + 1, -1)
        self.new_feats.copy_(feats.view(B, K + 1, -1))
        if greedy:
            acc, nxt, _ = greedy_verify(self.drafts, logits.argmax(-1), check_values=False)
            self.acc.copy_(acc)
            self.nxt.copy_(nxt)
        else:
            one_hot = self.draft_sampling == "greedy"
            sampled_verify(logits, self.drafts, None if one_hot else self.q, self.t2q, self.inv_t, self.u_acc,
                           self.u_res, q_one_hot=one_hot, out=(self.acc, self.nxt, self.scratch),
                           use_triton=self.kernel_triton)
        return logits

    def _update(self):
        on = self.active
        self.v_tokens.copy_(torch.where(on[:, None], self.vids, self.v_tokens))
        self.v_pos0.copy_(torch.where(on, self.new_p0, self.v_pos0))
        self.v_feats.copy_(torch.where(on[:, None, None], self.new_feats, self.v_feats))
        self.n_rej.copy_(torch.where(on, self.k - self.acc, self.n_rej))
        self.bonus.copy_(torch.where(on, self.nxt, self.bonus))
        self.packet.copy_(torch.cat([self.acc[:, None].long(), self.nxt[:, None], self.drafts], dim=1))

    # ---------------------------------------------------------------------------------------- generation
    def generate(self, prompts, max_new_tokens, temperature: float = 0.0, seeds=None,
                 eos_token_id: int | None = None) -> BatchResult:
        """Generate for every prompt of ``prompts`` (a list of token-id lists; at most the bucket's size) up to its
        ``max_new_tokens`` (one int, or one per prompt); ``seeds`` (one per prompt, default 0, 1, ...) seed each
        request's own generator at T > 0."""
        n = len(prompts)
        if n > self.bucket:
            raise ValueError(f"{n} prompts for a decoder built for batches of {self.bucket} (max_batch). Fix: build "
                             f"it with max_batch={n} (at most {BATCH_BUCKETS[-1]}) or split the prompts")
        budgets = [max_new_tokens] * n if isinstance(max_new_tokens, int) else list(max_new_tokens)
        seeds = list(range(n)) if seeds is None else list(seeds)
        if len(budgets) != n or len(seeds) != n:
            raise ValueError(f"max_new_tokens and seeds need one value per prompt ({n}), got {len(budgets)} and "
                             f"{len(seeds)}")
        checked = [self._check_args(p, m, temperature) for p, m in zip(prompts, budgets)]
        greedy = temperature <= 0
        if self.use_graphs and greedy not in self._warm:  # capture this mode's graphs in a throwaway generation
            t0 = time.perf_counter()
            self._warm.add(greedy)
            self._generate_batch(checked, [min(m, 2) for m in budgets], temperature, [s + 1 for s in seeds], None)
            torch.cuda.synchronize()
            self.capture_ms += (time.perf_counter() - t0) * 1e3
        return self._generate_batch(checked, budgets, temperature, seeds, eos_token_id)

    def _start_request(self, b: int, prompt, prefilled, greedy: bool, temperature: float, gen) -> int:
        """Set request b's state after its prefill as ``LeanDecoder._generate`` does -> its first token."""
        logits, last_feat = prefilled
        first = logits.argmax() if greedy else sample_token(logits, temperature, gen)
        n = prompt.numel()
        if self.method != "none":
            self.v_tokens[b, 0] = prompt[-1]
            self.v_pos0[b] = n - 1
            self.v_feats[b, 0] = last_feat
            self.n_rej[b] = self.k
            self.bonus[b] = first
        else:
            self.tok[b] = first
            self.pos[b] = n
        return int(first)

    def _reset_state(self) -> None:
        """Padding slots and requests of an earlier batch: position 0, nothing pending (they stay frozen)."""
        if self.method == "none":
            self.tok.zero_()
            self.pos.zero_()
            return
        for t in (self.v_tokens, self.v_pos0, self.v_feats, self.bonus, self.drafts):
            t.zero_()
        self.n_rej.fill_(self.k)

    @torch.inference_mode()
    def _generate_batch(self, prompts, budgets, temperature, seeds, eos_token_id) -> BatchResult:
        greedy = temperature <= 0
        n = len(prompts)
        gens = [None if greedy else torch.Generator(device=self.device).manual_seed(s) for s in seeds]
        sync = torch.cuda.synchronize if self.device.type == "cuda" else (lambda: None)
        sync()
        t0 = time.perf_counter()
        self._reset_state()
        self.inv_t.fill_(1.0 / temperature if not greedy else 0.0)
        if self.method != "none":
            self.inv_t_rows.copy_(inv_temperature(temperature, self.bucket * self.k, self.device))
        prefilled = self._prefill_all(prompts)
        outs = [[self._start_request(b, p, pre, greedy, temperature, gens[b])]
                for b, (p, pre) in enumerate(zip(prompts, prefilled))]
        prefill_ms = (time.perf_counter() - t0) * 1e3
        spec = self.method != "none"
        # per request: tokens so far and the last one (what decides that it is done); per step: the live requests
        # and the packet of each (host lists). Token lists are assembled once the loop ends, and the per-step
        # statistics records after the clock stops: the loop itself does array work only.
        lengths, last = [1] * n, [o[0] for o in outs]

        def running(b: int) -> bool:
            return lengths[b] < budgets[b] and not (eos_token_id is not None and last[b] == eos_token_id)

        live = [b for b in range(n) if running(b)]
        batch = BatchResult([], self.bucket, prefill_ms, 0.0)
        log: list[tuple[list[int], list, dict, float]] = []  # (live requests, packet rows, phases, wall ms)
        shown = None  # the live set last copied to the device: a host-to-device copy only when it changes
        while live:
            if live != shown:
                self.active.copy_(torch.tensor([b in live for b in range(self.bucket)], device=self.device))
                shown = live
            if not greedy:
                self._draw_uniforms(live, gens)
            packet, ph, wall = self._batch_step(greedy)
            log.append((live, packet, ph, wall))
            for b in live:
                row = packet[b]
                if spec:
                    lengths[b] += row[0] + 1
                    last[b] = row[1]
                else:
                    lengths[b] += 1
                    last[b] = row
            live = [b for b in live if running(b)]
        for live_then, packet, _, _ in log:  # each request's tokens, in step order
            for b in live_then:
                row = packet[b]
                outs[b].extend((row[2: 2 + row[0]] + [row[1]]) if spec else [row])
        for b, out in enumerate(outs):
            if eos_token_id is not None and eos_token_id in out:
                del out[out.index(eos_token_id) + 1:]
            del out[budgets[b]:]
        batch.total_ms = (time.perf_counter() - t0) * 1e3
        batch.results = [GenerationResult(tokens=o, prefill_ms=prefill_ms, total_ms=batch.total_ms) for o in outs]
        for live_then, packet, ph, wall in log:
            draft = ph.get("draft", 0.0)
            batch.step_wall_ms.append(wall)
            batch.step_draft_ms.append(draft)
            batch.step_verify_ms.append(ph["verify"])
            for b in live_then:
                a = packet[b][0] if spec else 0
                batch.results[b].steps.append(StepStats(
                    num_drafts=self.k, accepted=a, new_tokens=a + 1, draft_ms=draft, verify_ms=ph["verify"],
                    bookkeeping_ms=max(wall - draft - ph["verify"], 0.0), wall_ms=wall))
        return batch

    def _draw_uniforms(self, live: list[int], gens) -> None:
        """Each live request's step uniforms from its own generator, in ``engine.verify.step_uniforms``' layout."""
        if self.method == "none":
            for b in live:
                self.uniforms[b].uniform_(generator=gens[b])
            return
        K, vd, B = self.k, self.u_draft.shape[-1], self.bucket
        u = self.u_all  # [B, K*vd + V + K]: one draw per request (the single decoder's layout), then three copies
        for b in live:
            u[b].uniform_(generator=gens[b])
        self.u_draft.copy_(u[:, : K * vd].view(B, K, vd))
        self.u_res.copy_(u[:, K * vd: K * vd + self.vocab])
        self.u_acc.copy_(u[:, K * vd + self.vocab:])

    def _batch_step(self, greedy: bool):
        """One step of every request -> (host packet rows, phase times, wall ms)."""
        clock = self.clock
        clock.start()
        if self.method == "none":
            self._step(f"plain_{greedy}", lambda: self._plain(greedy))()
            clock.mark("verify")
            packet = self.nxt_plain.tolist()
        else:
            self._spec_phases(greedy)
            packet = self.packet.tolist()
        return packet, clock.phases_ms(), clock.wall_ms()
