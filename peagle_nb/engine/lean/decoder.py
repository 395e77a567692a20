"""``LeanDecoder``: the same decoding as ``SpecDecoder``, with the model's work and little else in each step.

Explained in notebooks 01 (where a step's time goes) and 03 (the P-EAGLE step), the drafter batch in 04.
Everything a step needs lives in preallocated buffers on the device, so every step of a configuration
has the same shapes and can be replayed as CUDA graphs:

- the verification state: the K+1 tokens the target last verified ``[b, d_1..d_K]``, the position of
  ``b``, their features, how many drafts were rejected, and the target's own next token;
- ``build`` turns that state into the drafter's batch with the suite's input builder
  (``peagle_kernels.draft_inputs``: Triton on a GPU, its PyTorch reference on a CPU) and expands the
  hidden states (``peagle_kernels.hidden_expand``): P-EAGLE's ``[accepted | bonus | <mask> x (K-1) |
  padding]`` (2K rows), EAGLE-3's ``[accepted | bonus | padding]`` (K+1 rows);
- ``draft``: P-EAGLE one pass, EAGLE-3 one pass and K-1 single-row passes;
- ``verify``: the target over ``[bonus, d_1..d_K]`` at fixed width K+1, then acceptance
  (``peagle_kernels.greedy_verify``, or at temperature > 0 ``peagle_kernels.sampled_verify``: rejection sampling
  in one launch);
- ``update``: the verified rows become the state. Rejected drafts need no rollback: rows attend to
  cache slots up to their own position, and the next step writes over the slots past the kept length.

At temperature > 0 the drafts are drawn by ``peagle_kernels.draft_sample`` (one launch per drafter pass) from
uniforms drawn before the step into a static buffer (one launch, ``engine.verify.step_uniforms``' layout), so the
sampled step is captured as graphs just like the greedy one. ``sampler="reference"`` runs the same sampling as
the kernels' PyTorch op chains instead (the step before fusion, for the comparison in notebook 04).

A step ends with one small device-to-host copy (accepted count, next token, drafts). Timings per step:
draft and verify (device time from CUDA events on a GPU, host clock on a CPU) and bookkeeping (the rest
of the step's wall time: input building, state update, host work).
"""

from __future__ import annotations

import time
import weakref

import torch

from peagle_kernels.draft_inputs import build_draft_inputs, eager_draft_inputs
from peagle_kernels.greedy_verify import greedy_verify
from peagle_kernels.hidden_expand import eager_expand_hidden, expand_hidden
from peagle_kernels.sampled_verify import sampled_verify
from peagle_nb.engine import checks
from peagle_nb.engine.drafting import DrafterWindow, check_draft_sampling, pick_drafts
from peagle_nb.engine.lean.forward import LeanHead, LeanTarget
from peagle_nb.engine.lean.graphs import PhaseClock, Step
from peagle_nb.engine.stats import GenerationResult, StepStats
from peagle_nb.engine.verify import inv_temperature, sample_token, split_uniforms

_LEAN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# On a GPU a prompt is padded up to one of these lengths and its prefill (the target's and the drafter's) replayed as
# a CUDA graph captured once per length, so that time to first token is the model's work, not ~100 launches.
PREFILL_BUCKETS = (16, 32, 64, 128, 256, 512, 1024)


def _shared(module, make):
    """One lean copy of a module's weights per module (decoders for every K share it). It is made from the
    weights as they are when first asked for: a module trained further afterwards needs a new module object."""
    lean = _LEAN.get(module)
    if lean is None:
        lean = _LEAN[module] = make(module)
    return lean


class LeanDecoder:
    """Decode with ``method`` in {"none", "eagle3", "peagle"} and K drafts per step; ``generate`` as ``SpecDecoder``.

    ``use_graphs`` (default: on CUDA) captures each step phase once as a CUDA graph. ``builder``: "fused" (the
    suite's input builder and hidden expansion, Triton on a GPU) or "eager" (the same work as the chain of
    separate PyTorch ops vLLM used before fusing it; notebook 04 compares the two). ``sampler``: "fused" (the
    Triton sampling kernels on a GPU) or "reference" (their PyTorch op chains). ``mask_hidden`` (projected, [H]) /
    ``mask_token_id`` override a P-EAGLE head's placeholders (ablation only). ``pad_prefill`` (default: with graphs)
    pads each prompt to a ``PREFILL_BUCKETS`` length and runs its prefill as one step per length (a graph on a GPU).
    ``drafter_window`` (a ``DrafterWindow`` or a size): the drafter attends to that many positions back and to the
    window's sinks only (None: every position; ``engine.drafting``).
    """

    def __init__(self, target, tokenizer=None, head=None, method: str = "none", k: int = 1,
                 mask_hidden: torch.Tensor | None = None, mask_token_id: int | None = None,
                 use_graphs: bool | None = None, builder: str = "fused", draft_sampling: str = "sample",
                 sampler: str = "fused", pad_prefill: bool | None = None,
                 drafter_window: DrafterWindow | int | None = None):
        checks.check_method(method, head)
        window = DrafterWindow.of(drafter_window)
        self.dwin = window.kwargs() if window else {}  # the drafter's attention window, in every drafter pass
        # what `batch.batched_twin` builds this decoder's batched twin from; None where it has no such settings
        self.twin_args = None if mask_hidden is not None or mask_token_id is not None or pad_prefill is not None \
            or drafter_window is not None \
            else {"target": target, "tokenizer": tokenizer, "head": head, "method": method, "k": k,
                  "use_graphs": use_graphs, "builder": builder, "draft_sampling": draft_sampling, "sampler": sampler}
        if builder not in ("fused", "eager"):
            raise ValueError(f"builder must be 'fused' or 'eager', got {builder!r}")
        if sampler not in ("fused", "reference"):
            raise ValueError(f"sampler must be 'fused' or 'reference', got {sampler!r}")
        self.builder, self.sampler = builder, sampler
        self.kernel_triton = None if sampler == "fused" else False  # None: Triton on a GPU, PyTorch on a CPU
        self.draft_sampling = check_draft_sampling(draft_sampling)
        self.method, self.k = method, (k if method != "none" else 0)
        self.vocab = target.config.vocab_size
        self.lt = _shared(target, LeanTarget)
        self.device = self.lt.device
        self.use_graphs = self.device.type == "cuda" if use_graphs is None else bool(use_graphs)
        if self.use_graphs and self.device.type != "cuda":
            raise ValueError("use_graphs=True needs the models on a CUDA device")
        self.pad_prefill = self.use_graphs if pad_prefill is None else bool(pad_prefill)
        self._prefill_bufs: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}
        self.tcache = self.lt.new_cache()
        self.capacity = self.tcache.capacity
        self.layer_ids: tuple[int, ...] = ()
        self.capture_ms = 0.0  # warm-up generations and graph captures: reported, never in tokens/s
        self._steps: dict[str, Step] = {}
        self._warm: set[bool] = set()
        self.clock = PhaseClock(self.device)
        dev = self.device
        # plain decoding: the next input token and its position
        self.tok = torch.zeros(1, dtype=torch.long, device=dev)
        self.pos = torch.zeros(1, dtype=torch.long, device=dev)
        # sampling: 1/T (0 = greedy), written per generation; the step's uniforms, drawn before each sampled step
        self.inv_t = torch.zeros(1, dtype=torch.float32, device=dev)
        self.scratch = torch.zeros(2, dtype=torch.long, device=dev)  # outputs nobody reads
        if method == "none":
            self.uniforms = torch.zeros(self.vocab, device=dev)
            self.u_res = self.uniforms.view(1, -1)
            return
        checks.check_k(k, head, method)
        checks.check_head_fits_target(head, target)
        if method == "peagle" and (mask_hidden is None or mask_token_id is None):
            checks.check_peagle_head(head, tokenizer if mask_token_id is None else None)
        self.layer_ids = checks.head_layer_ids(head)
        self.lh = _shared(head, LeanHead)
        self.hcache = self.lh.new_cache()
        if method == "peagle":
            mh = mask_hidden if mask_hidden is not None else self.lh.mask_hidden
            self.mask_h = mh.reshape(-1).to(dev, self.lt.dtype)
            self.mask_id = int(mask_token_id if mask_token_id is not None else head.mask_token_id)
        else:
            self.mask_h = torch.zeros(self.lh.hidden_size, dtype=self.lt.dtype, device=dev)  # no mask rows
            self.mask_id = 0
        vd = self.lh.lm_head.shape[1]
        self.d2t_ids = self.lh.to_target_ids(torch.arange(vd, device=dev)).long()
        self.t2q = torch.full((self.vocab,), -1, dtype=torch.int32, device=dev)  # target id -> column of q
        self.t2q[self.d2t_ids] = torch.arange(vd, dtype=torch.int32, device=dev)
        self.uniforms = torch.zeros(k * vd + self.vocab + k, device=dev)
        self.u_draft, u_res, u_acc = split_uniforms(self.uniforms, k, vd, self.vocab)
        self.u_res, self.u_acc = u_res.view(1, -1), u_acc.view(1, -1)
        self.inv_t_rows = torch.zeros(k, dtype=torch.float32, device=dev)
        self.q = torch.zeros(k, vd, dtype=torch.float32, device=dev)  # the drafter's q per draft (rule "sample")
        K, feat = self.k, len(self.layer_ids) * self.lt.embed.shape[1]
        z = lambda *s, dt=torch.long: torch.zeros(*s, dtype=dt, device=dev)  # noqa: E731
        # the verification state (read by build/verify, written by update)
        self.v_tokens, self.v_pos0, self.v_feats = z(K + 1), z(1), z(K + 1, feat, dt=self.lt.dtype)
        self.n_rej, self.bonus = z(1, dt=torch.int32), z(1)
        # this step's results
        self.drafts, self.acc, self.nxt = z(K), z(1), z(1)
        self.new_p0, self.vids, self.new_feats = z(1), z(K + 1), z(K + 1, feat, dt=self.lt.dtype)
        self.packet = z(K + 2)
        # constants of the builder call: one request of K+1 rows; a contiguous cache (one block, slot = position)
        self.arange_k1 = torch.arange(K + 1, device=dev)
        self.qsl = torch.tensor([0, K + 1], dtype=torch.int32, device=dev)
        self.block_table = z(1, 1, dt=torch.int32)
        # EAGLE-3's single-row passes
        self.chain_h, self.chain_p = z(1, self.lh.hidden_size, dt=self.lt.dtype), z(1)

    # ----------------------------------------------------------------------------------------- prefill
    def _prefill_pass(self, ids, pos, last):
        """The target over a padded prompt (rows past ``last`` are padding: they write cache slots that later steps
        overwrite before anything attends to them) and the drafter over its context -> (logits of row ``last``
        [1, V], features of row ``last`` [1, F] or None)."""
        logits, feats = self.lt.forward(ids, pos, pos, self.tcache, self.layer_ids, logits_rows=last)
        if self.method == "none":
            return logits.float(), None
        self.lh.forward(ids[1:], self.lh.project(feats[:-1]), pos[:-1], pos[:-1], self.hcache, **self.dwin)
        return logits.float(), feats.index_select(0, last)

    def _prefill(self, prompt) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Prefill of ``prompt`` -> (its last row's logits [V], its last row's features [F] or None)."""
        n = prompt.numel()
        if not self.pad_prefill:
            positions = torch.arange(n, device=self.device)
            logits, feats = self.lt.forward(prompt, positions, positions, self.tcache, self.layer_ids,
                                            logits_rows=slice(-1, None))
            if self.method != "none" and n > 1:  # the drafter's context: slot i = (token x_{i+1}, feature f_i)
                self.lh.forward(prompt[1:], self.lh.project(feats[:-1]), positions[:-1], positions[:-1], self.hcache,
                                **self.dwin)
            return logits[-1].float(), None if feats is None else feats[-1]
        length = next((b for b in PREFILL_BUCKETS if b >= n), self.capacity)
        length = min(max(length, n), self.capacity)
        if length not in self._prefill_bufs:
            self._prefill_bufs[length] = (torch.zeros(length, dtype=torch.long, device=self.device),
                                          torch.arange(length, device=self.device),
                                          torch.zeros(1, dtype=torch.long, device=self.device))
        ids, pos, last = self._prefill_bufs[length]
        ids.zero_()
        ids[:n].copy_(prompt)
        last.fill_(n - 1)
        logits, feat = self._step(f"prefill_{length}", lambda: self._prefill_pass(ids, pos, last))()
        return logits[0], None if feat is None else feat[0]

    # ------------------------------------------------------------------------------------------ phases
    def _step(self, name: str, fn) -> Step:
        step = self._steps.get(name)
        if step is None:
            step = self._steps[name] = Step(fn, self.use_graphs)
        return step

    def _plain(self, greedy: bool):
        logits, _ = self.lt.forward(self.tok, self.pos, self.pos, self.tcache)
        logits = logits.float()
        if greedy:
            self.tok.copy_(logits.argmax(-1))
        else:  # one draw from softmax(logits / T): sampled verification with no drafts
            sampled_verify(logits.reshape(1, 1, -1), None, None, None, self.inv_t, None, self.u_res,
                           out=(self.scratch[:1], self.tok, self.scratch[1:]), use_triton=self.kernel_triton)
        self.pos.add_(1)
        return logits

    def _build(self):
        kk = self.k if self.method == "peagle" else 1  # EAGLE-3's first pass: no mask rows
        args = (self.v_tokens, self.v_pos0 + self.arange_k1, self.bonus, self.qsl, self.n_rej, self.block_table)
        kw = dict(k=kk, mask_token_id=self.mask_id, block_size=self.capacity, max_model_len=self.capacity,
                  seq_lens=(self.v_pos0 + self.k + 1).int(), padding_slot_id=self.tcache.spare_slot)
        projected = self.lh.project(self.v_feats)
        if self.builder == "eager":
            di = eager_draft_inputs(*args, **kw)
            return di, eager_expand_hidden(projected, self.mask_h, di.hidden_state_mapping, di.is_masked)
        di = build_draft_inputs(*args, **kw, max_query_len=self.k + 1, check_values=False)
        return di, expand_hidden(projected, self.mask_h, di.hidden_src, check_values=False)

    def _pick_rows(self, logits, j: int, greedy: bool) -> None:
        """Drafts j.. from their logits [n, Vd] into ``drafts`` (and ``q``): ``drafting.pick_drafts``, SpecDecoder's
        rule, on the step's static buffers."""
        n = logits.shape[0]
        pick_drafts(logits, greedy, self.draft_sampling, self.inv_t_rows[j: j + n], self.u_draft[j: j + n],
                    self.d2t_ids, tokens_out=self.drafts[j: j + n], probs_out=self.q[j: j + n],
                    use_triton=self.kernel_triton)

    def _draft_pass(self, greedy: bool):
        """The drafter's pass over the built batch -> logits of the rows to sample ([K, Vd] or EAGLE-3's [1, Vd])."""
        di, hidden = self._steps["build"].out
        pre = self.lh.forward(di.input_ids, hidden, di.positions, di.slot_mapping, self.hcache, **self.dwin)
        rows = di.sample_indices.long()
        logits = self.lh.logits(pre[rows])
        if self.method == "eagle3":
            self.chain_h.copy_(pre[rows])
            self.chain_p.copy_(di.positions[rows] + 1)
        self._pick_rows(logits, 0, greedy)
        return logits

    def _chain_pass(self, j: int, greedy: bool):
        """EAGLE-3's next single-row pass: the previous draft and the previous pass's pre-norm hidden state."""
        pre = self.lh.forward(self.drafts[j - 1: j], self.chain_h, self.chain_p, self.chain_p, self.hcache,
                              **self.dwin)
        logits = self.lh.logits(pre)
        self.chain_h.copy_(pre)
        self.chain_p.add_(1)
        self._pick_rows(logits, j, greedy)
        return logits

    def _draft(self, greedy: bool):
        self._draft_pass(greedy)
        if self.method == "eagle3":
            for j in range(1, self.k):
                self._chain_pass(j, greedy)

    def _verify(self, greedy: bool):
        self.new_p0.copy_(self.v_pos0 + (self.k + 1) - self.n_rej)
        positions = self.new_p0 + self.arange_k1
        self.vids.copy_(torch.cat([self.bonus, self.drafts]))
        logits, feats = self.lt.forward(self.vids, positions, positions, self.tcache, self.layer_ids)
        logits = logits.float()
        self.new_feats.copy_(feats)
        if greedy:
            acc, nxt, _ = greedy_verify(self.drafts[None], logits.argmax(-1)[None], check_values=False)
            self.acc.copy_(acc)
            self.nxt.copy_(nxt)
        else:
            one_hot = self.draft_sampling == "greedy"
            sampled_verify(logits[None], self.drafts[None], None if one_hot else self.q[None], self.t2q, self.inv_t,
                           self.u_acc, self.u_res, q_one_hot=one_hot, out=(self.acc, self.nxt, self.scratch[:1]),
                           use_triton=self.kernel_triton)
        return logits

    def _update(self):
        self.v_tokens.copy_(self.vids)
        self.v_pos0.copy_(self.new_p0)
        self.v_feats.copy_(self.new_feats)
        self.n_rej.copy_(self.k - self.acc)
        self.bonus.copy_(self.nxt)
        self.packet.copy_(torch.cat([self.acc, self.nxt, self.drafts]))

    # -------------------------------------------------------------------------------------- generation
    def _check_args(self, prompt_ids, max_new_tokens, temperature) -> torch.Tensor:
        prompt = checks.check_generate_args(prompt_ids, max_new_tokens, temperature, self.vocab, self.capacity, self.k)
        return prompt.to(self.device)

    def generate(self, prompt_ids, max_new_tokens: int, temperature: float = 0.0, seed: int = 0,
                 eos_token_id: int | None = None) -> GenerationResult:
        """Generate up to ``max_new_tokens`` after ``prompt_ids``; the same tokens as ``SpecDecoder.generate``."""
        prompt = self._check_args(prompt_ids, max_new_tokens, temperature)
        greedy = temperature <= 0
        if self.use_graphs and greedy not in self._warm:  # capture this mode's graphs in a throwaway generation
            t0 = time.perf_counter()
            self._warm.add(greedy)
            self._generate(prompt, min(max_new_tokens, 2), temperature, seed + 1, None)  # one step runs every phase
            torch.cuda.synchronize()
            self.capture_ms += (time.perf_counter() - t0) * 1e3
        return self._generate(prompt, max_new_tokens, temperature, seed, eos_token_id)

    @torch.inference_mode()
    def _generate(self, prompt, max_new_tokens, temperature, seed, eos_token_id) -> GenerationResult:
        greedy = temperature <= 0
        gen = None if greedy else torch.Generator(device=self.device).manual_seed(seed)
        sync = torch.cuda.synchronize if self.device.type == "cuda" else (lambda: None)
        sync()
        t0 = time.perf_counter()
        n = prompt.numel()
        logits, last_feat = self._prefill(prompt)
        self.inv_t.fill_(1.0 / temperature if not greedy else 0.0)
        if self.method != "none":
            self.inv_t_rows.copy_(inv_temperature(temperature, self.k, self.device))
        first = logits.argmax() if greedy else sample_token(logits, temperature, gen)
        if self.method != "none":
            # as if a verification of [x_{n-1}, ...] had rejected every draft: the next step drafts after x_n
            self.v_tokens[0] = prompt[-1]
            self.v_pos0.fill_(n - 1)
            self.v_feats[0] = last_feat
            self.n_rej.fill_(self.k)
            self.bonus.copy_(first.reshape(1))
        else:
            self.tok.copy_(first.reshape(1))
            self.pos.fill_(n)
        out = [int(first)]
        result = GenerationResult(tokens=out, prefill_ms=(time.perf_counter() - t0) * 1e3)
        while len(out) < max_new_tokens and not (eos_token_id is not None and out[-1] == eos_token_id):
            stats = self._plain_step(greedy, temperature, gen) if self.method == "none" else \
                self._spec_step(greedy, temperature, gen)
            out.extend(stats.pop("tokens"))
            result.steps.append(StepStats(**stats))
        if eos_token_id is not None and eos_token_id in out:
            del out[out.index(eos_token_id) + 1:]
        del out[max_new_tokens:]
        result.total_ms = (time.perf_counter() - t0) * 1e3
        return result

    @torch.inference_mode()
    def phase_ms(self, reps: int = 50, greedy: bool = True) -> dict[str, float]:
        """Each phase of a greedy (or, ``greedy=False``, a sampled) step timed alone, ``reps`` times back to back
        after a generation in that mode left a valid state: on a GPU the device time of one graph replay (no host
        work in it: what a step could cost if the host were free), on a CPU the host time of one eager call
        (median). Replaying a phase repeats its writes, which the next step overwrites; plain decoding's position
        is restored. Keys: ``plain`` or ``build``, ``draft``, ``verify``, ``update``."""
        names = ({"plain": f"plain_{greedy}"} if self.method == "none" else  # phase -> its captured step's name
                 {"build": "build", "draft": f"draft_{greedy}", "verify": f"verify_{greedy}", "update": "update"})
        missing = [n for n in names.values() if n not in self._steps]
        if missing:
            mode = "greedy" if greedy else "sampled"
            raise RuntimeError(f"phase_ms needs a {mode} generation first (phases not run yet: {missing})")
        out = {}
        for phase, name in names.items():
            step = self._steps[name]
            pos = self.pos.clone()
            if self.use_graphs:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                times = []
                for _ in range(5):
                    self.pos.copy_(pos)
                    start.record()
                    for _ in range(reps):
                        step.graph.replay()
                    end.record()
                    end.synchronize()
                    times.append(start.elapsed_time(end) / reps)
            else:
                times = []
                for _ in range(reps):
                    self.pos.copy_(pos)
                    t0 = time.perf_counter()
                    step.fn()
                    times.append((time.perf_counter() - t0) * 1e3)
            self.pos.copy_(pos)
            out[phase] = sorted(times)[len(times) // 2]
        return out

    def _plain_step(self, greedy, temperature, gen) -> dict:
        clock = self.clock
        clock.start()
        if not greedy:
            self.uniforms.uniform_(generator=gen)
        self._step(f"plain_{greedy}", lambda: self._plain(greedy))()
        clock.mark("verify")
        tok = int(self.tok)
        wall = clock.wall_ms()
        ph = clock.phases_ms()
        return dict(tokens=[tok], num_drafts=0, accepted=0, new_tokens=1, draft_ms=0.0, verify_ms=ph["verify"],
                    bookkeeping_ms=max(wall - ph["verify"], 0.0), wall_ms=wall)

    def _spec_phases(self, greedy: bool) -> None:
        """One speculative step's four phases, each a captured step, marked on the clock (``BatchLeanDecoder``
        runs the same sequence over its batch)."""
        clock = self.clock
        self._step("build", self._build)()
        clock.mark("bookkeeping")
        self._step(f"draft_{greedy}", lambda: self._draft(greedy))()
        clock.mark("draft")
        self._step(f"verify_{greedy}", lambda: self._verify(greedy))()
        clock.mark("verify")
        self._step("update", self._update)()
        clock.mark("bookkeeping")

    def _spec_step(self, greedy, temperature, gen) -> dict:
        clock = self.clock
        clock.start()
        if not greedy:  # the step's draws (engine.verify.step_uniforms' layout), before the captured phases
            self.uniforms.uniform_(generator=gen)
        self._spec_phases(greedy)
        packet = self.packet.tolist()
        wall = clock.wall_ms()
        ph = clock.phases_ms()
        a, nxt = packet[0], packet[1]
        return dict(tokens=packet[2: 2 + a] + [nxt], num_drafts=self.k, accepted=a, new_tokens=a + 1,
                    draft_ms=ph["draft"], verify_ms=ph["verify"],
                    bookkeeping_ms=max(wall - ph["draft"] - ph["verify"], 0.0), wall_ms=wall)
