"""The engine's record of one configuration over a prompt set, typed: what ``evaluate_run`` returns.

:meth:`EngineRun.to_dict` is the flat run record of ``peagle-nb eval --json`` and of the ``runs`` of
``data/results/engine_*.json`` (``peagle_nb.files.results`` format), with the same keys in the same order as
before the record was typed, so results files keep their schema; :meth:`EngineRun.from_dict` reads such a
record back. Times are milliseconds (``_ms``), rates tokens per second (``_per_s``); ``p10`` / ``p90`` are
the 10th and 90th percentiles over timed repeats. ``tests/engine/test_run_record.py`` reads every current run of
``data/results/engine_h200.json`` back through it unchanged.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DraftingSplit:
    """Acceptance split by whether a step drafted fresh text or a repeat (``peagle_nb.analysis.repetition``).
    A value is None when no step of that class occurred."""

    tau_fresh: float | None  # tokens per verification step (bonus included) over steps drafting fresh text
    tau_repeated: float | None  # the same over steps drafting text inside a repeated 8-gram
    accept_rate_fresh: list[float] | None  # per-position acceptance a_1..a_K over fresh steps
    accept_rate_repeated: list[float] | None  # the same over repeated steps
    repeated_step_fraction: float | None  # repeated steps / all steps


@dataclass(frozen=True)
class EngineRun:
    """One configuration (method, K, temperature) over a prompt set, from the median of its timed repeats."""

    method: str  # "none" (plain decoding) | "eagle3" | "peagle"
    k: int  # drafts per step (1 for plain decoding)
    engine: str  # "lean" | "reference"
    n_prompts: int
    max_new_tokens: int  # per prompt
    temperature: float  # 0: greedy
    draft_sampling: str | None  # how drafts are drawn at temperature > 0 (speculative runs only, else None)
    tau: float  # mean tokens per verification step, bonus token included (1.0 for plain decoding)
    accept_rate_per_position: list[float]  # a_j: fraction of steps whose draft j was accepted, j = 1..K
    conditional_alpha: list[float]  # a_j / a_(j-1)
    steps: int  # verification steps of the median repeat, all prompts
    accepted_per_step: list[int]  # drafts kept by each of those steps, prompt after prompt
    steps_per_prompt: list[int]  # how accepted_per_step splits by prompt, in order
    repetition_fraction: float | None  # generated tokens inside a repeated 8-gram / generated tokens
    drafting_split: DraftingSplit | None  # speculative runs only
    tokens: int  # generated tokens of the median repeat, all prompts
    tokens_per_s: float  # median over repeats of generated tokens / wall time (prefill included)
    decode_tokens_per_s: float  # median repeat: tokens after the first / decode time
    draft_ms_per_step: float  # median repeat, mean over steps
    verify_ms_per_step: float
    bookkeeping_ms_per_step: float
    step_ms: float  # median repeat, mean wall time of a step
    prefill_ms: float  # median repeat, mean per prompt (target and drafter prefill, first token)
    tokens_per_s_p10: float
    tokens_per_s_p90: float
    tokens_per_s_repeats: list[float]  # every timed repeat, in order
    repeat_outliers: list[int]  # indices of repeats more than OUTLIER_RATIO from the median
    ttft_ms: float  # time to first token, median over the median repeat's requests
    ttft_ms_p90: float
    tpot_ms: float | None  # time per output token after the first, median over requests (None: no request
    tpot_ms_p90: float | None  # made more than one token)
    tpot_ms_repeats: list[float]  # each repeat's median TPOT (0.0 where it has none)
    step_ms_p10: float  # over repeats of the repeat's mean step time
    step_ms_p90: float
    repeats: int  # timed repeats
    capture_ms: float  # CUDA graph capture before timing (0.0 without graphs)
    prefill: str  # "graph" | "padded" | "eager"
    lossless: bool | None  # greedy: every output equals plain greedy decoding; sampled: None

    # Keys the flat record leaves out when the field is None (they did not exist for such runs).
    _ABSENT_WHEN_NONE = ("draft_sampling", "drafting_split", "tpot_ms", "tpot_ms_p90")

    def to_dict(self) -> dict[str, Any]:
        """The flat run record: today's keys in today's order (the split's five keys inline)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None and f.name in self._ABSENT_WHEN_NONE:
                continue
            if f.name == "drafting_split":
                out |= dataclasses.asdict(value)
            else:
                out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> EngineRun:
        """Read a flat run record (keys a sweep adds, such as ``prompt_set`` or ``sweep``, are ignored)."""
        split_names = [f.name for f in dataclasses.fields(DraftingSplit)]
        names = [f.name for f in dataclasses.fields(cls)]
        missing = [n for n in names if n not in record and n not in cls._ABSENT_WHEN_NONE and n != "drafting_split"]
        if missing:
            raise ValueError(f"not an engine run record: it lacks {missing} (records of peagle-nb eval have them)")
        split = DraftingSplit(**{n: record[n] for n in split_names}) if split_names[0] in record else None
        return cls(**{n: record.get(n) for n in names if n != "drafting_split"}, drafting_split=split)
