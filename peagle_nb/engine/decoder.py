"""``SpecDecoder``: plain, EAGLE-3 or P-EAGLE decoding of one sequence, with per-step statistics.

Explained in notebook 01 (the loop), 02 (chain drafting) and 03 (parallel drafting). One step:

1. draft K tokens from the pending context (drafting.py);
2. verify ``[b, d_1..d_K]`` in ONE target pass over the KV cache (K+1 logits);
3. keep the accepted prefix + the target's own token (verify.py), crop the target cache back to the
   kept positions, and hand the new real slots (tokens + target features) to the drafter.

At temperature 0 the output equals plain greedy decoding token for token; at T > 0 rejection
sampling keeps the target's distribution. Times are wall-clock with CUDA synchronised.
"""

from __future__ import annotations

import time

import torch

from peagle_nb.engine import checks
from peagle_nb.engine.drafting import ChainDrafter, DrafterWindow, ParallelDrafter
from peagle_nb.engine.stats import GenerationResult, StepStats
from peagle_nb.engine.target_runner import TargetRunner
from peagle_kernels.sampled_verify import sampled_verify
from peagle_nb.engine.verify import inv_temperature, sample_token, split_uniforms, step_uniforms, verify_greedy


class _Clock:
    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"

    def now(self) -> float:
        if self.cuda:
            torch.cuda.synchronize()
        return time.perf_counter()


class SpecDecoder:
    """Decode with ``method`` in {"none", "eagle3", "peagle"} and K drafts per step.

    ``mask_hidden`` / ``mask_token_id`` override a P-EAGLE head's learned placeholders (ablation only).
    ``drafter_window`` (a ``DrafterWindow`` or a size): the drafter attends to that many positions back and to the
    window's sinks only (None: every position; ``drafting.py``).
    """

    def __init__(self, target, tokenizer=None, head=None, method: str = "none", k: int = 1,
                 mask_hidden: torch.Tensor | None = None, mask_token_id: int | None = None,
                 draft_sampling: str = "sample", drafter_window: DrafterWindow | int | None = None):
        checks.check_method(method, head)
        self.target, self.tokenizer, self.head, self.method = target, tokenizer, head, method
        self.k = k if method != "none" else 0
        self.vocab = target.config.vocab_size
        if method == "none":
            self.runner, self.drafter = TargetRunner(target), None
            return
        checks.check_k(k, head, method)
        checks.check_head_fits_target(head, target)
        layer_ids = checks.head_layer_ids(head)
        self.runner = TargetRunner(target, layer_ids)
        if method == "eagle3":
            self.drafter = ChainDrafter(head, k, self.vocab, draft_sampling, drafter_window)
        else:
            if mask_hidden is None or mask_token_id is None:
                checks.check_peagle_head(head, tokenizer if mask_token_id is None else None)
            self.drafter = ParallelDrafter(head, k, self.vocab, mask_hidden, mask_token_id, draft_sampling,
                                           drafter_window)

    @property
    def device(self) -> torch.device:
        return self.runner.device

    def _first_token(self, logits: torch.Tensor, temperature: float, gen) -> int:
        if temperature <= 0:
            return int(logits.argmax())
        return int(sample_token(logits, temperature, gen))

    def _verify_sampled(self, proposal, logits, temperature: float, u_res, u_acc) -> tuple[int, int]:
        """Rejection sampling of the K drafts (q over the target vocabulary: every target id is a column)."""
        identity = torch.arange(self.vocab, dtype=torch.int32, device=self.device)
        a, n, _ = sampled_verify(logits.float()[None], proposal.tokens[None].to(self.device),
                                 proposal.probs[None].to(self.device), identity,
                                 inv_temperature(temperature, 1, self.device), u_acc[None], u_res[None])
        return int(a[0]), int(n[0])

    def generate(self, prompt_ids, max_new_tokens: int, temperature: float = 0.0, seed: int = 0,
                 eos_token_id: int | None = None) -> GenerationResult:
        """Generate up to ``max_new_tokens`` after ``prompt_ids`` (list or 1-D tensor of target ids).

        Stops early after ``eos_token_id`` when given (default: never, as benchmarks do).
        """
        prompt = checks.check_generate_args(prompt_ids, max_new_tokens, temperature, self.vocab).to(self.device)
        gen = torch.Generator(device=self.device).manual_seed(seed) if temperature > 0 else None
        clock = _Clock(self.device)
        self.runner.reset()
        if self.drafter is not None:
            self.drafter.reset()

        t0 = clock.now()
        logits, feats = self.runner.forward(prompt)
        out = [self._first_token(logits[-1], temperature, gen)]
        t1 = clock.now()
        result = GenerationResult(tokens=out, prefill_ms=(t1 - t0) * 1e3)
        # the drafter's pending real slots: slot i = (token x_{i+1}, feature f_i)
        pend_tokens = torch.cat([prompt[1:], prompt.new_tensor([out[-1]])])
        pend_feats = feats

        while len(out) < max_new_tokens and not (eos_token_id is not None and out[-1] == eos_token_id):
            if self.drafter is None:
                s0 = clock.now()
                logits, _ = self.runner.forward(prompt.new_tensor([out[-1]]))
                out.append(self._first_token(logits[-1], temperature, gen))
                result.steps.append(StepStats(0, 0, 1, 0.0, (clock.now() - s0) * 1e3))
                continue
            s0 = clock.now()
            u_draft = u_res = u_acc = None
            if temperature > 0:  # the step's draws, in the lean engine's order
                vd = self.drafter.d2t_ids.numel()
                u_draft, u_res, u_acc = split_uniforms(step_uniforms(self.k, vd, self.vocab, gen, self.device),
                                                       self.k, vd, self.vocab)
            proposal = self.drafter.propose(pend_tokens, pend_feats, temperature, gen, uniforms=u_draft)
            s1 = clock.now()
            kept_len = self.runner.length
            verify_ids = torch.cat([prompt.new_tensor([out[-1]]), proposal.tokens.to(self.device)])
            logits, feats = self.runner.forward(verify_ids)
            if temperature <= 0:
                accepted, nxt = verify_greedy(proposal.tokens, logits)
            else:
                accepted, nxt = self._verify_sampled(proposal, logits, temperature, u_res, u_acc)
            self.runner.crop(kept_len + 1 + accepted)  # b + accepted drafts stay; rejected ones leave the cache
            s2 = clock.now()
            new = proposal.tokens[:accepted].tolist() + [nxt]
            out.extend(new)
            pend_tokens = prompt.new_tensor(new)
            pend_feats = feats[: accepted + 1]
            result.steps.append(StepStats(self.k, accepted, len(new), (s1 - s0) * 1e3, (s2 - s1) * 1e3))

        if eos_token_id is not None and eos_token_id in out:
            del out[out.index(eos_token_id) + 1:]
        del out[max_new_tokens:]
        result.total_ms = (clock.now() - t0) * 1e3
        return result
