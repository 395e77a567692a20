"""The two drafters: EAGLE-3 (K sequential passes) and P-EAGLE (one pass). Explained in notebooks 02 and 03.

Alignment (EAGLE, as in vLLM): the target at position i (token x_i) gives feature f_i and predicts
x_{i+1}. Drafter slot i gets token x_{i+1} and ``fc(f_i)`` and predicts x_{i+2}. Each step the
engine hands the drafter its *pending* slots: the positions whose target features became known in
the last verification (the prompt after prefill; the accepted drafts + the target's token after a
step). The last pending slot holds the newest token b (the bonus) with feature f_p.

- ``ChainDrafter`` (EAGLE-3): one pass over the pending slots gives draft 1; then K-1 more passes,
  each over ONE new slot: the previous draft as token and the previous pass's pre-norm hidden state.
- ``ParallelDrafter`` (P-EAGLE): ONE pass over ``[pending slots | <mask> x (K-1)]``; mask slots get the
  mask token id and the shared hidden ``fc(mask_hidden)``; slots p..p+K-1 give all K drafts.

Both keep the drafter's own KV cache of real context slots only: slots made of drafts (chain steps,
mask slots) are cropped after drafting, because the next step re-feeds the accepted tokens with the
target's real features. With ``window`` W every drafter row at position p attends to positions p-W+1..p (and
the first ``sinks``) only, so the drafter never attends across more positions than it was trained on (notebook 08,
family v3: a head trained on 256-position sequences drafts worse past them); the lean engine masks the same keys.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from peagle_kernels.draft_sample import draft_sample
from peagle_nb.engine.verify import inv_temperature


@dataclass
class DraftProposal:
    tokens: torch.Tensor  # [K] int64, TARGET vocabulary ids
    probs: torch.Tensor | None  # [K, V_target] drafter distribution (temperature > 0), else None


DRAFT_SAMPLING = ("sample", "greedy")


def check_draft_sampling(draft_sampling: str) -> str:
    """How drafts are picked at temperature > 0: "sample" draws them from the drafter's q (the textbook rule, what
    this suite does by default) and "greedy" takes the argmax and verifies it as if q were one-hot (vLLM's default,
    ``draft_sample_method="greedy"``: a draft d is kept with probability p(d)). Both are lossless."""
    if draft_sampling not in DRAFT_SAMPLING:
        raise ValueError(f"draft_sampling must be one of {DRAFT_SAMPLING}, got {draft_sampling!r}")
    return draft_sampling


def one_hot_q(ids: torch.Tensor, vocab: int) -> torch.Tensor:
    """q [K, V] with all mass on each draft: what verification sees for a greedily picked draft."""
    q = torch.zeros(ids.shape[0], vocab, device=ids.device)
    q[torch.arange(ids.shape[0], device=ids.device), ids] = 1.0
    return q


def pick_drafts(logits: torch.Tensor, greedy: bool, draft_sampling: str, inv_t: torch.Tensor | None, uniforms,
                d2t_ids: torch.Tensor, *, tokens_out: torch.Tensor | None = None,
                probs_out: torch.Tensor | None = None, use_triton: bool | None = None):
    """The one rule both engines pick drafts by: drafter logits [n, Vd] -> (target ids [n], the drafter's q over the
    draft vocabulary [n, Vd] for rule "sample" at T > 0, else None).

    ``greedy`` (temperature 0): the argmax. At T > 0, ``peagle_kernels.draft_sample`` with 1/T per row ``inv_t`` [n]
    and the rows' draws ``uniforms`` [n, Vd]: rule "sample" draws from q, rule "greedy" takes the argmax (verified as
    if q were one-hot). ``d2t_ids`` [Vd]: draft id -> target id. ``tokens_out`` / ``probs_out``: buffers to write
    into (a CUDA graph's static tensors); ``use_triton`` as ``draft_sample``'s.
    """
    if greedy:
        ids = d2t_ids[logits.argmax(-1)]
        if tokens_out is None:
            return ids, None
        tokens_out.copy_(ids)
        return tokens_out, None
    sample = draft_sampling == "sample"
    ids, q = draft_sample(logits, inv_t, uniforms if sample else None, d2t_ids, sample=sample, tokens_out=tokens_out,
                          probs_out=probs_out, use_triton=use_triton)
    return ids, (q if sample else None)


def _new_cache(head):
    make = getattr(head, "new_cache", None)  # a head may bring its own cache type (test doubles do)
    if make is not None:
        return make()
    from peagle_nb.models.heads import DraftKVCache

    return DraftKVCache()


@dataclass(frozen=True)
class DrafterWindow:
    """A drafter attention window: every drafter row at position p attends to positions ``p - size + 1 .. p`` and
    to the first ``sinks`` positions only (notebook 08)."""

    size: int
    sinks: int = 0

    def __post_init__(self):
        if not isinstance(self.size, int) or self.size < 1:
            raise ValueError(f"the drafter window must be a positive number of positions, got {self.size!r}")
        if not isinstance(self.sinks, int) or self.sinks < 0:
            raise ValueError(f"sinks (first positions every row also reads) must be >= 0, got {self.sinks!r}")

    @classmethod
    def of(cls, window: "DrafterWindow | int | None") -> "DrafterWindow | None":
        """None (every position), a size (no sinks) or a ``DrafterWindow``."""
        return window if window is None or isinstance(window, cls) else cls(window)

    def kwargs(self) -> dict[str, int]:
        """What a head's forward takes: ``window=``, ``sinks=``."""
        return {"window": self.size, "sinks": self.sinks}


class _Drafter:
    def __init__(self, head, k: int, target_vocab_size: int, draft_sampling: str = "sample",
                 window: DrafterWindow | int | None = None):
        if k < 1:
            raise ValueError(f"K (number of drafts per step) must be >= 1, got {k}")
        self.head, self.k, self.vocab = head, k, target_vocab_size
        self.draft_sampling = check_draft_sampling(draft_sampling)
        window = DrafterWindow.of(window)
        # passed to every drafter pass only when set (a head of a test may take no such arguments)
        self.window_kw = {} if window is None else window.kwargs()
        self.device = next(head.parameters()).device
        vd = head.lm_head.weight.shape[0]
        # draft id -> target id for the whole draft vocabulary, to spread q over the target vocab
        self.d2t_ids = head.draft_to_target(torch.arange(vd, device=self.device)).long()
        self.reset()

    def reset(self) -> None:
        self.cache = _new_cache(self.head)
        self.ctx_len = 0  # real context slots held in the drafter's cache

    def _pick(self, logits: torch.Tensor, temperature: float, uniforms) -> tuple[torch.Tensor, torch.Tensor | None]:
        """draft logits [n, Vd] -> (target ids [n], q over the target vocab [n, V] or None); ``uniforms`` [n, Vd]
        are the draws of these rows (``pick_drafts``: the same pick as the lean engine's)."""
        greedy = temperature <= 0
        inv_t = None if greedy else inv_temperature(temperature, logits.shape[0], logits.device)
        ids, q_draft = pick_drafts(logits, greedy, self.draft_sampling, inv_t, uniforms, self.d2t_ids)
        if greedy:
            return ids, None
        if q_draft is None:  # rule "greedy" (vLLM's default): argmax drafts, verified as if q were one-hot
            return ids, one_hot_q(ids, self.vocab)
        q = torch.zeros(logits.shape[0], self.vocab, device=logits.device)
        q[:, self.d2t_ids] = q_draft
        return ids, q

    def _uniforms(self, temperature: float, generator, uniforms):
        """The draws for this step's K drafts [K, Vd] (drawn here when the caller gave none)."""
        if temperature <= 0 or uniforms is not None:
            return uniforms
        return torch.rand(self.k, self.d2t_ids.numel(), generator=generator, device=self.device)

    def _context(self, tokens: torch.Tensor, feats: torch.Tensor):
        """Pending real slots -> (ids [1,T], hidden [1,T,H], positions [1,T])."""
        t = tokens.shape[0]
        ids = tokens.reshape(1, t).to(self.device)
        hidden = self.head.project(feats.reshape(1, t, -1).to(self.device, self.head.fc.weight.dtype))
        pos = torch.arange(self.ctx_len, self.ctx_len + t, device=self.device).unsqueeze(0)
        return ids, hidden, pos

    def propose(self, tokens, feats, temperature=0.0, generator=None, uniforms=None) -> DraftProposal:
        """K drafts after the pending slots; at T > 0 drawn with ``uniforms`` [K, Vd] (from ``generator`` if None)."""
        raise NotImplementedError


class ChainDrafter(_Drafter):
    """EAGLE-3: K sequential drafter passes, each feeding its own previous hidden state and draft."""

    @torch.inference_mode()
    def propose(self, tokens, feats, temperature=0.0, generator=None, uniforms=None) -> DraftProposal:
        u = self._uniforms(temperature, generator, uniforms)
        ids, hidden, pos = self._context(tokens, feats)
        logits, h = self.head(ids, hidden, pos, cache=self.cache, **self.window_kw)
        self.ctx_len += ids.shape[1]
        drafts, qs = [], []
        tok, q = self._pick(logits[0, -1:], temperature, None if u is None else u[:1])
        drafts.append(tok), qs.append(q)
        h_prev, p = h[:, -1:], self.ctx_len
        for j in range(1, self.k):
            logits, h = self.head(tok.reshape(1, 1), h_prev, torch.tensor([[p]], device=self.device),
                                  cache=self.cache, **self.window_kw)
            tok, q = self._pick(logits[0, -1:], temperature, None if u is None else u[j:j + 1])
            drafts.append(tok), qs.append(q)
            h_prev, p = h[:, -1:], p + 1
        self.cache.crop(self.ctx_len)  # drop the chain's own slots: next step re-feeds real features
        return DraftProposal(torch.cat(drafts), None if temperature <= 0 else torch.cat(qs))


def parallel_draft_inputs(ids, hidden, pos, k: int, mask_id: int, mask_h: torch.Tensor):
    """Append K-1 mask slots: token ``<mask>``, hidden ``fc(mask_hidden)``, positions counting on.

    ids [1,T], hidden [1,T,H], pos [1,T] -> [1,T+K-1] each (shown in notebook 03).
    """
    n = k - 1
    last = int(pos[0, -1])
    ids = torch.cat([ids, torch.full((1, n), mask_id, dtype=ids.dtype, device=ids.device)], dim=1)
    hidden = torch.cat([hidden, mask_h.reshape(1, 1, -1).expand(1, n, -1).to(hidden.dtype)], dim=1)
    pos = torch.cat([pos, torch.arange(last + 1, last + 1 + n, device=pos.device).unsqueeze(0)], dim=1)
    return ids, hidden, pos


class ParallelDrafter(_Drafter):
    """P-EAGLE: all K drafts from ONE drafter pass over [pending slots | <mask> x (K-1)]."""

    def __init__(self, head, k: int, target_vocab_size: int, mask_hidden: torch.Tensor | None = None,
                 mask_token_id: int | None = None, draft_sampling: str = "sample",
                 window: DrafterWindow | int | None = None):
        super().__init__(head, k, target_vocab_size, draft_sampling, window)
        # Overrides exist for the ablation in notebook 03 (zero/random placeholders, ordinary token).
        with torch.inference_mode():
            self.mask_h = (mask_hidden if mask_hidden is not None else head.mask_hidden_projected()).to(self.device)
        self.mask_id = int(mask_token_id if mask_token_id is not None else head.mask_token_id)

    @torch.inference_mode()
    def propose(self, tokens, feats, temperature=0.0, generator=None, uniforms=None) -> DraftProposal:
        u = self._uniforms(temperature, generator, uniforms)
        ids, hidden, pos = self._context(tokens, feats)
        t = ids.shape[1]
        ids, hidden, pos = parallel_draft_inputs(ids, hidden, pos, self.k, self.mask_id, self.mask_h)
        logits, _ = self.head(ids, hidden, pos, cache=self.cache, **self.window_kw)
        self.ctx_len += t
        self.cache.crop(self.ctx_len)  # mask slots are placeholders, never context
        tok, q = self._pick(logits[0, t - 1:t - 1 + self.k], temperature, u)
        return DraftProposal(tok, q)
