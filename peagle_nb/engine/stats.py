"""What one generation measured: the tokens and, per verification step, acceptance and timings.

Explained in notebook 01. ``StepStats`` is one draft-then-verify step; plain decoding records one
step per token with ``num_drafts = 0``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from peagle_nb.analysis import metrics


@dataclass
class StepStats:
    num_drafts: int  # K drafted this step (0 for plain decoding)
    accepted: int  # drafts kept by the target (a prefix of the K)
    new_tokens: int  # tokens appended this step (accepted + the target's own token, before truncation)
    draft_ms: float
    verify_ms: float
    bookkeeping_ms: float = 0.0  # the rest of the step: building the drafter's inputs, acceptance, state, host work
    wall_ms: float = 0.0  # the whole step, host clock (0.0 where the decoder did not measure it)


@dataclass
class GenerationResult:
    tokens: list[int]  # generated token ids (prompt excluded)
    steps: list[StepStats] = field(default_factory=list)
    prefill_ms: float = 0.0
    total_ms: float = 0.0

    @property
    def k(self) -> int:
        return max((s.num_drafts for s in self.steps), default=0)

    @property
    def tau(self) -> float:
        return metrics.acceptance_length([s.accepted for s in self.steps])

    def accept_rate_per_position(self) -> list[float]:
        return metrics.per_position_rates([s.accepted for s in self.steps], self.k)

    @property
    def draft_ms(self) -> float:
        return sum(s.draft_ms for s in self.steps)

    @property
    def verify_ms(self) -> float:
        return sum(s.verify_ms for s in self.steps)
