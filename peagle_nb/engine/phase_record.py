"""One configuration's decoding step timed phase by phase, typed: a row of ``phases``, ``sampler_comparison`` and
``builder_comparison`` in ``data/results/engine_*.json`` and of ``peagle_nb.analysis.step_phases.measure_phases``.

A step of the lean engine (``peagle_nb.engine.lean.LeanDecoder.phase_ms``) runs four phases, each timed alone
(a CUDA graph's device time on a GPU, the host time of one eager call on a CPU), in milliseconds: ``build`` (the
drafter's batch from the last verification), ``draft``, ``verify`` (the target over K+1 tokens) and ``update``;
plain decoding has one, ``plain`` (a target step). :meth:`StepPhases.to_dict` writes the flat row with the keys,
in the order, the files and ``measure_phases`` always had; :meth:`StepPhases.from_dict` reads any such row back.
``tests/engine/test_phase_record.py`` reads every committed row through it unchanged. Explained in notebooks 02-04.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PHASES = ("build", "draft", "verify", "update")  # a speculative step's phases, in the order they run


@dataclass(frozen=True)
class StepPhases:
    """One (method, K[, mode, sampler, builder]) step's phases. Optional fields are None where a row has no such
    key (they are left out of the flat row): which ones a row carries depends on what wrote it."""

    method: str  # "none" (plain decoding) | "eagle3" | "peagle"
    k: int  # drafts per step (plain decoding: 0 in a sweep's rows, 1 in measure_phases' rows)
    mode: str | None = None  # "greedy" | "sampled" (sweep rows since sampled steps were timed)
    temperature: float | None = None  # of the generation that set up the timed state
    sampler: str | None = None  # "fused" kernels | "reference" PyTorch op chain (sampler comparison rows)
    builder: str | None = None  # the drafter-batch builder: "fused" | "eager"
    repeats: int | None = None  # measure_phases: timed repeats (each a median over ``reps`` back-to-back calls)
    reps: int | None = None
    plain_ms: float | None = None  # plain decoding: one target step
    plain_ms_p10: float | None = None  # measure_phases: p10 / p90 of a phase over the repeats
    plain_ms_p90: float | None = None
    build_ms: float | None = None  # speculative decoding: the four phases (median over repeats in measure_phases)
    build_ms_p10: float | None = None
    build_ms_p90: float | None = None
    draft_ms: float | None = None
    draft_ms_p10: float | None = None
    draft_ms_p90: float | None = None
    verify_ms: float | None = None
    verify_ms_p10: float | None = None
    verify_ms_p90: float | None = None
    update_ms: float | None = None
    update_ms_p10: float | None = None
    update_ms_p90: float | None = None
    step_device_ms: float | None = None  # a sweep's rows: the sum of the phases as recorded
    step_ms: float | None = None  # measure_phases: median over repeats of each repeat's sum of phases
    build_share: float | None = None  # builder comparison: build_ms / step_device_ms

    def __post_init__(self):
        speculative = [self.build_ms, self.draft_ms, self.verify_ms, self.update_ms]
        if self.plain_ms is None and None in speculative:
            raise ValueError(f"a phases row of {self.method} K={self.k} needs plain_ms (plain decoding) or all of "
                             f"{', '.join(p + '_ms' for p in PHASES)}; LeanDecoder.phase_ms gives them")

    @property
    def plain(self) -> bool:
        return self.plain_ms is not None

    @property
    def phase_sum_ms(self) -> float:
        """The step's time: the sum of its phases (plain decoding: its one target step)."""
        if self.plain_ms is not None:
            return float(self.plain_ms)
        return float(sum(self.phase_ms(p) for p in PHASES))

    def phase_ms(self, phase: str) -> float:
        """One phase's time by name (``plain`` or one of :data:`PHASES`)."""
        value = getattr(self, f"{phase}_ms", None) if phase in ("plain",) + PHASES else None
        if value is None:
            raise ValueError(f"{self.method} K={self.k}'s row has no {phase!r} phase; it has "
                             f"{'plain' if self.plain else ', '.join(PHASES)}")
        return value

    def to_dict(self) -> dict[str, Any]:
        """The flat row: the fields that have a value, in the order of the fields."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if getattr(self, f.name) is not None}

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> StepPhases:
        """Read a flat row; a key this record does not know is an error (nothing is dropped)."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(row) - names)
        if unknown or "method" not in row or "k" not in row:
            raise ValueError(f"not a step phases row: unknown keys {unknown}, method/k present: "
                             f"{'method' in row and 'k' in row}; rows come from LeanDecoder.phase_ms")
        return cls(**row)

    @classmethod
    def measured(cls, method: str, k: int, phase_ms: Mapping[str, float], **fields) -> StepPhases:
        """A row from one ``LeanDecoder.phase_ms`` result (``{"plain": ms}`` or the four phases) and the other
        fields by name."""
        return cls(method=method, k=k, **{f"{name}_ms": ms for name, ms in phase_ms.items()}, **fields)


def as_phases(row: StepPhases | Mapping[str, Any]) -> StepPhases:
    """A typed row from either a record or a flat row of a results file."""
    return row if isinstance(row, StepPhases) else StepPhases.from_dict(row)
