"""A sweep's summary per prompt set, typed: what ``summarize_sweep`` computes from a sweep's runs.

:meth:`SweepSummary.to_dict` is one prompt set's object under ``summary`` in ``data/results/engine_*.json``
(``peagle_nb.files.results`` format, its regimes' summaries included), with the dotted keys (``"peagle.best_k"``,
``"eagle3.k7.tau"``, ``"peagle.draft_cost_ratio_k10_vs_k1"``) in the order the files hold them, so results files
keep their schema; :meth:`SweepSummary.from_dict` reads such an object back and refuses a key it does not know.
Times are milliseconds (``_ms``), rates tokens per second (``_per_s``); a ratio over sweeps is an
:class:`OverSweeps` (min / median / max over independent sweeps). ``tests/engine/test_sweep_summary.py`` reads
every committed summary back through it unchanged. Explained in notebooks 01 and 03.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

METHODS = ("eagle3", "peagle")  # speculative methods a sweep compares (plain decoding: "none")
TAU_K = 7  # the K at which a summary quotes tau (the published comparison's deep setting)


@dataclass(frozen=True)
class OverSweeps:
    """A figure over independent sweeps: its smallest, median and largest value."""

    min: float
    median: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float]) -> OverSweeps:
        return cls(min=min(values), median=statistics.median(values), max=max(values))

    @classmethod
    def from_dict(cls, d: Mapping[str, float]) -> OverSweeps:
        return cls(min=d["min"], median=d["median"], max=d["max"])

    def to_dict(self) -> dict[str, float]:
        return {"min": self.min, "median": self.median, "max": self.max}


@dataclass(frozen=True)
class TauAtK7:
    """Acceptance of a method at K = ``TAU_K``, over the sweeps (the same numbers at temperature 0, independent
    seeds when sampling)."""

    tau: float  # median tokens per verification step, bonus token included
    tau_spread: OverSweeps
    repetition_fraction: float  # median share of generated tokens inside a repeated 8-gram
    tau_fresh: float | None  # median tau over steps drafting fresh text (None: no run had such a step)


@dataclass(frozen=True)
class DraftCost:
    """Drafting time per step at the largest K swept over the smallest (first sweep): P-EAGLE ~flat, EAGLE-3
    ~linear in K. Written as ``<method>.draft_cost_ratio_k<k_high>_vs_k<k_low>``."""

    k_high: int
    k_low: int
    ratio: float  # draft_ms_per_step at k_high / at k_low


@dataclass(frozen=True)
class TpotSummary:
    """A method's best K by time per output token (decode only), present when every run recorded TPOT."""

    best_k_tpot: int  # median_low over sweeps of each sweep's lowest-TPOT K
    tpot_ms: float  # median over sweeps, at that sweep's best K
    ttft_ms: float  # time to first token at the same runs
    tpot_speedup_vs_none: OverSweeps | None  # plain decoding's TPOT / this one's (None: no plain runs)


@dataclass(frozen=True)
class MethodSummary:
    """One speculative method's figures on a prompt set, over the complete sweeps."""

    best_k: int  # median_low over sweeps of the K with the highest tokens/s
    best_k_per_sweep: list[int]
    best_tokens_per_s: float  # median over sweeps, at each sweep's best K
    at_k7: TauAtK7 | None  # None: K=7 was not swept
    draft_cost: DraftCost | None  # None: one K swept, or no drafting time at the smallest K
    lossless_all: bool  # no greedy run of the method differed from plain greedy decoding
    speedup_vs_none_at_best_k: OverSweeps | None  # tokens/s over plain decoding's (None: no plain runs)
    tpot: TpotSummary | None  # None: some run has no TPOT


@dataclass(frozen=True)
class SweepSummary:
    """A sweep's summary on one prompt set (the object under ``summary[prompt_set]``)."""

    sweeps: int  # complete sweeps summarised
    incomplete_sweeps_dropped: int | None  # sweeps a time budget cut short (None: none)
    methods: dict[str, MethodSummary]  # by method name, sorted
    none_tokens_per_s: float | None  # plain decoding, median over sweeps
    peagle_over_eagle3_at_best_k: OverSweeps | None  # tokens/s ratio, each method at its best K (both swept)
    peagle_over_eagle3_verdict: str | None  # "peagle faster" | "eagle3 faster" | "tie" (engine.evaluate.ratio_verdict)
    none_tpot_ms: float | None  # plain decoding, median over sweeps (runs with TPOT only)
    none_ttft_ms: float | None
    peagle_over_eagle3_tpot: OverSweeps | None  # EAGLE-3's TPOT / P-EAGLE's at each one's best K by TPOT
    peagle_over_eagle3_tpot_verdict: str | None
    configurations_with_outlier_repeats: int | None  # runs flagging a timed repeat (None: none)

    def method(self, name: str) -> MethodSummary:
        if name not in self.methods:
            raise ValueError(f"this summary has no {name!r} runs; it has {sorted(self.methods)}")
        return self.methods[name]

    def to_dict(self) -> dict[str, Any]:
        """The flat object of the results files: dotted keys in the order ``summarize_sweep`` always wrote them."""
        out: dict[str, Any] = {"sweeps": self.sweeps}
        _put(out, "incomplete_sweeps_dropped", self.incomplete_sweeps_dropped)
        for m, s in self.methods.items():
            out |= {f"{m}.best_k": s.best_k, f"{m}.best_k_per_sweep": s.best_k_per_sweep,
                    f"{m}.best_tokens_per_s": s.best_tokens_per_s}
            if s.at_k7 is not None:
                k7 = f"{m}.k{TAU_K}"
                out |= {f"{k7}.tau": s.at_k7.tau, f"{k7}.tau_spread": s.at_k7.tau_spread.to_dict(),
                        f"{k7}.repetition_fraction": s.at_k7.repetition_fraction}
                _put(out, f"{k7}.tau_fresh", s.at_k7.tau_fresh)
            if s.draft_cost is not None:
                out[f"{m}.draft_cost_ratio_k{s.draft_cost.k_high}_vs_k{s.draft_cost.k_low}"] = s.draft_cost.ratio
            out[f"{m}.lossless_all"] = s.lossless_all
            _put(out, f"{m}.speedup_vs_none_at_best_k", s.speedup_vs_none_at_best_k)
        _put(out, "none.tokens_per_s", self.none_tokens_per_s)
        _put(out, "peagle_over_eagle3_at_best_k", self.peagle_over_eagle3_at_best_k)
        _put(out, "peagle_over_eagle3_verdict", self.peagle_over_eagle3_verdict)
        _put(out, "none.tpot_ms", self.none_tpot_ms)
        _put(out, "none.ttft_ms", self.none_ttft_ms)
        for m, s in self.methods.items():
            if s.tpot is not None:
                out |= {f"{m}.best_k_tpot": s.tpot.best_k_tpot, f"{m}.tpot_ms": s.tpot.tpot_ms,
                        f"{m}.ttft_ms": s.tpot.ttft_ms}
                _put(out, f"{m}.tpot_speedup_vs_none", s.tpot.tpot_speedup_vs_none)
        _put(out, "peagle_over_eagle3_tpot", self.peagle_over_eagle3_tpot)
        _put(out, "peagle_over_eagle3_tpot_verdict", self.peagle_over_eagle3_tpot_verdict)
        _put(out, "configurations_with_outlier_repeats", self.configurations_with_outlier_repeats)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SweepSummary:
        """Read one prompt set's summary object; a key this record does not know is an error (nothing is lost)."""
        if not isinstance(d, Mapping) or "sweeps" not in d:
            raise ValueError(f"not a sweep summary (no 'sweeps' key): {str(d)[:80]!r}; summaries are written by "
                             "peagle_nb.engine.evaluate.summarize_sweep")
        read = _Reader(d)
        names = sorted(k.split(".")[0] for k in d if k.endswith(".best_k") and not k.startswith("none."))
        methods = {m: _read_method(read, m) for m in names}
        out = cls(
            sweeps=read("sweeps"), incomplete_sweeps_dropped=read.opt("incomplete_sweeps_dropped"), methods=methods,
            none_tokens_per_s=read.opt("none.tokens_per_s"),
            peagle_over_eagle3_at_best_k=read.spread("peagle_over_eagle3_at_best_k"),
            peagle_over_eagle3_verdict=read.opt("peagle_over_eagle3_verdict"),
            none_tpot_ms=read.opt("none.tpot_ms"), none_ttft_ms=read.opt("none.ttft_ms"),
            peagle_over_eagle3_tpot=read.spread("peagle_over_eagle3_tpot"),
            peagle_over_eagle3_tpot_verdict=read.opt("peagle_over_eagle3_tpot_verdict"),
            configurations_with_outlier_repeats=read.opt("configurations_with_outlier_repeats"))
        unknown = sorted(set(d) - read.seen)
        if unknown:
            raise ValueError(f"sweep summary keys this record does not know: {unknown}; add them to SweepSummary")
        return out


def read_summaries(summary: Mapping[str, Any]) -> dict[str, SweepSummary]:
    """A results file's ``summary`` (or a regime's) -> {prompt set: :class:`SweepSummary`}. A regime that a time
    budget cut before one sweep completed holds ``{"incomplete": reason}``: no prompt set."""
    return {ps: SweepSummary.from_dict(s) for ps, s in summary.items() if ps != "incomplete"}


def _put(out: dict, key: str, value) -> None:
    """Keys the flat object leaves out when there is no value (they never existed for such sweeps)."""
    if value is not None:
        out[key] = value.to_dict() if isinstance(value, OverSweeps) else value


class _Reader:
    """Reads keys of a flat summary, remembering which it read."""

    def __init__(self, d: Mapping[str, Any]):
        self.d, self.seen = d, set()

    def __call__(self, key: str):
        self.seen.add(key)
        return self.d[key]

    def opt(self, key: str):
        return self(key) if key in self.d else None

    def spread(self, key: str) -> OverSweeps | None:
        return OverSweeps.from_dict(self(key)) if key in self.d else None


def _read_method(read: _Reader, m: str) -> MethodSummary:
    k7 = f"{m}.k{TAU_K}"
    at_k7 = TauAtK7(tau=read(f"{k7}.tau"), tau_spread=OverSweeps.from_dict(read(f"{k7}.tau_spread")),
                    repetition_fraction=read(f"{k7}.repetition_fraction"),
                    tau_fresh=read.opt(f"{k7}.tau_fresh")) if f"{k7}.tau" in read.d else None
    prefix = f"{m}.draft_cost_ratio_k"
    cost_keys = [k for k in read.d if k.startswith(prefix)]
    draft_cost = None
    if cost_keys:
        high, low = cost_keys[0][len(prefix):].split("_vs_k")
        draft_cost = DraftCost(k_high=int(high), k_low=int(low), ratio=read(cost_keys[0]))
    tpot = TpotSummary(best_k_tpot=read(f"{m}.best_k_tpot"), tpot_ms=read(f"{m}.tpot_ms"),
                       ttft_ms=read(f"{m}.ttft_ms"), tpot_speedup_vs_none=read.spread(f"{m}.tpot_speedup_vs_none")
                       ) if f"{m}.best_k_tpot" in read.d else None
    return MethodSummary(best_k=read(f"{m}.best_k"), best_k_per_sweep=read(f"{m}.best_k_per_sweep"),
                         best_tokens_per_s=read(f"{m}.best_tokens_per_s"), at_k7=at_k7, draft_cost=draft_cost,
                         lossless_all=read(f"{m}.lossless_all"),
                         speedup_vs_none_at_best_k=read.spread(f"{m}.speedup_vs_none_at_best_k"), tpot=tpot)
