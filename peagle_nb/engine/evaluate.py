"""Measure a decoding method over a prompt set: tau, per-position acceptance, speed with its spread, losslessness.

``evaluate`` is what ``peagle-nb eval --json`` prints; ``sweep`` runs none / EAGLE-3 / P-EAGLE over K = 1..10
and returns run records for ``peagle_nb.files.results`` (data/results/engine_*.json). Both run the lean engine by
default (``engine="reference"``: the readable ``transformers`` path). Explained in notebooks 01-03.

Acceptance comes with the text it was measured on: ``repetition_fraction`` (generated tokens inside a repeated
8-gram, ``peagle_nb.analysis.repetition``) and tau / per-position acceptance split into steps that draft fresh text and
steps that draft a repeat (a small model's loops are copied almost perfectly and inflate tau).

Timing: a configuration runs its whole prompt set ``repeats`` times (after a short warm-up generation of every
prompt, so that each prompt length's first-call costs and any graph capture, reported as ``capture_ms``, stay out
of the timings); tokens/s is reported as the median over repeats with p10 / p90 and every repeat's value kept,
and a repeat more than ``OUTLIER_RATIO`` from the median is flagged (``repeat_outliers``). Per-step times are
means over the median repeat's steps.

Serving metrics, as serving benchmarks report them (per request, over the median repeat's requests, p50 / p90):
``ttft_ms`` (time to first token: the target's prefill, the drafter's prefill and the first token) and
``tpot_ms`` (time per output token after the first: decode only), beside end-to-end ``tokens_per_s``.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence

from peagle_nb.analysis import metrics, repetition
from peagle_nb.engine.decoder import SpecDecoder
from peagle_nb.engine.drafting import DrafterWindow
from peagle_nb.engine.run_record import DraftingSplit, EngineRun
from peagle_nb.engine.sweep_summary import (
    TAU_K,
    DraftCost,
    MethodSummary,
    OverSweeps,
    SweepSummary,
    TauAtK7,
    TpotSummary,
)

ENGINES = ("lean", "reference")
OUTLIER_RATIO = 1.3  # a timed repeat this far from its configuration's median is flagged in the record


def make_decoder(engine: str, target, tokenizer=None, head=None, method: str = "none", k: int = 1, **kw):
    """``LeanDecoder`` (``engine="lean"``) or ``SpecDecoder`` (``"reference"``); the same interface and tokens."""
    if engine == "lean":
        from peagle_nb.engine.lean import LeanDecoder

        return LeanDecoder(target, tokenizer, head, method, k, **kw)
    if engine == "reference":
        return SpecDecoder(target, tokenizer, head, method, k, **kw)
    raise ValueError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")


def spread(values: Sequence[float]) -> dict[str, float]:
    """p10 / median / p90 of repeated measurements (linear interpolation; with one value all three are it)."""
    v = sorted(float(x) for x in values)
    if not v:
        raise ValueError("no values to summarise")

    def q(p: float) -> float:
        pos = p * (len(v) - 1)
        lo = int(pos)
        hi = min(lo + 1, len(v) - 1)
        return v[lo] + (v[hi] - v[lo]) * (pos - lo)

    return {"p10": q(0.1), "median": statistics.median(v), "p90": q(0.9)}


def encode_prompts(tokenizer, prompts: Sequence) -> list[list[int]]:
    """Strings -> token id lists (id lists pass through)."""
    out = []
    for p in prompts:
        ids = tokenizer(p)["input_ids"] if isinstance(p, str) else list(p)
        if len(ids) == 0:
            raise ValueError(f"prompt {p!r} encodes to no tokens; give a non-empty prompt")
        out.append(list(ids))
    return out


def greedy_reference(target, prompt_ids: list[list[int]], max_new_tokens: int,
                     engine: str = "reference") -> list[list[int]]:
    """Plain greedy decoding of every prompt: what lossless speculative decoding must reproduce (by default with
    the reference engine, so that the lean engine's output is checked against an independent implementation)."""
    dec = make_decoder(engine, target, method="none")
    return [dec.generate(p, max_new_tokens).tokens for p in prompt_ids]


def _none_for_nan(obj):
    """A class with no steps has no tau: None in the record (JSON has no NaN)."""
    if isinstance(obj, float) and obj != obj:
        return None
    if isinstance(obj, dict):
        return {k: _none_for_nan(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_none_for_nan(v) for v in obj]
    return obj


def _step_means(results) -> dict[str, float]:
    steps = [s for r in results for s in r.steps]
    n = max(len(steps), 1)
    tokens = sum(len(r.tokens) for r in results)
    total_ms = sum(r.total_ms for r in results)
    decode_ms = sum(r.total_ms - r.prefill_ms for r in results)
    decode_tokens = sum(len(r.tokens) - 1 for r in results)
    return {
        "tokens_per_s": tokens / (total_ms / 1e3) if total_ms > 0 else 0.0,
        "decode_tokens_per_s": decode_tokens / (decode_ms / 1e3) if decode_ms > 0 else 0.0,
        "draft_ms_per_step": sum(s.draft_ms for s in steps) / n,
        "verify_ms_per_step": sum(s.verify_ms for s in steps) / n,
        "bookkeeping_ms_per_step": sum(s.bookkeeping_ms for s in steps) / n,
        "step_ms": sum(s.wall_ms or (s.draft_ms + s.verify_ms + s.bookkeeping_ms) for s in steps) / n,
        "prefill_ms": sum(r.prefill_ms for r in results) / len(results),
    }


def serving_metrics(results) -> dict[str, float]:
    """TTFT and TPOT per request (p50 / p90 over the requests), as ``vllm bench serve`` reports them."""
    ttft = [r.prefill_ms for r in results]
    tpot = [(r.total_ms - r.prefill_ms) / (len(r.tokens) - 1) for r in results if len(r.tokens) > 1]
    out = {"ttft_ms": spread(ttft)["median"], "ttft_ms_p90": spread(ttft)["p90"]}
    if tpot:
        out |= {"tpot_ms": spread(tpot)["median"], "tpot_ms_p90": spread(tpot)["p90"]}
    return out


def repeat_outliers(values: Sequence[float], ratio: float = OUTLIER_RATIO) -> list[int]:
    """Indices of repeats more than ``ratio`` times away from the median (either way)."""
    med = statistics.median(values)
    return [i for i, v in enumerate(values) if med > 0 and (v > med * ratio or v < med / ratio)]


@dataclass(frozen=True)
class RunSettings:
    """How one configuration is run over its prompt set (what :func:`evaluate_run` does besides which model)."""

    max_new_tokens: int = 64  # per prompt
    temperature: float = 0.0  # 0: greedy
    seed: int = 0  # prompt i is generated with seed + i (sampling only)
    repeats: int = 1  # timed passes over the prompt set; the median one is recorded
    warmup: bool = True  # one short untimed generation per distinct prompt length first
    engine: str = "lean"  # of the decoder made here (ENGINES); a decoder passed in is used as it is
    draft_sampling: str = "sample"  # how drafts are drawn at temperature > 0 (engine.drafting)
    drafter_window: int | None = None  # the drafter attends this many positions back only (None: all; drafting.py)
    drafter_sinks: int = 0  # ... and to the first this many


def evaluate(target, tokenizer, head=None, method: str = "none", k: int = 1, prompts: Sequence = (),
             max_new_tokens: int = 64, *, reference: list[list[int]] | None = None, decoder=None,
             **settings) -> dict:
    """:func:`evaluate_run` as the flat ``peagle-nb eval --json`` record: ``EngineRun.to_dict()``, the keys of the
    run records in ``data/results/engine_*.json``. ``settings``: the other fields of :class:`RunSettings`
    (``temperature``, ``seed``, ``repeats``, ``warmup``, ``engine``, ``draft_sampling``, ``drafter_window``,
    ``drafter_sinks``) by name."""
    run = RunSettings(max_new_tokens=max_new_tokens, **settings)
    return evaluate_run(target, tokenizer, head, method, k, prompts, run, reference=reference,
                        decoder=decoder).to_dict()


def evaluate_run(target, tokenizer, head=None, method: str = "none", k: int = 1, prompts: Sequence = (),
                 settings: RunSettings = RunSettings(), reference: list[list[int]] | None = None,
                 decoder=None) -> EngineRun:
    """One configuration over a prompt set -> its :class:`~peagle_nb.engine.run_record.EngineRun`.

    Prompt i is generated with seed ``settings.seed + i`` (sampling only; a sweep's sweep j adds ``1000 j``, so
    its sweeps are independent seeds). ``lossless`` (temperature 0): every output equals plain greedy decoding
    (``reference``, computed when not given). At temperature > 0 it is None: the distribution is checked
    statistically instead (notebook 01, tests/engine/test_rejection_sampling.py). ``decoder``: one made by the
    caller (reused across calls); else one of ``settings.engine`` is made here.
    """
    max_new_tokens, temperature, seed, repeats = (settings.max_new_tokens, settings.temperature, settings.seed,
                                                  settings.repeats)
    draft_sampling = settings.draft_sampling
    prompt_ids = encode_prompts(tokenizer, prompts)
    if not prompt_ids:
        raise ValueError("no prompts to evaluate")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    kw = {"draft_sampling": draft_sampling} if method != "none" else {}
    if method != "none" and settings.drafter_window is not None:
        kw["drafter_window"] = DrafterWindow(settings.drafter_window, settings.drafter_sinks)
    dec = decoder or make_decoder(settings.engine, target, tokenizer, head, method, k, **kw)
    if settings.warmup:  # first calls pay for allocation, kernel selection, graph capture and each prompt length's
        seen = set()  # first prefill: one short generation per distinct prompt length keeps it out of the timings
        for p in prompt_ids:
            if len(p) not in seen:
                seen.add(len(p))
                dec.generate(p, min(8, max_new_tokens), temperature, seed)
    per_repeat = []
    for _ in range(repeats):
        results = [dec.generate(p, max_new_tokens, temperature, seed + i) for i, p in enumerate(prompt_ids)]
        per_repeat.append((results, _step_means(results)))
    tps = [m["tokens_per_s"] for _, m in per_repeat]
    median_i = sorted(range(repeats), key=lambda i: tps[i])[repeats // 2]
    results, means = per_repeat[median_i]
    steps = [s for r in results for s in r.steps]
    summary = metrics.summarize([s.accepted for s in steps], dec.k)
    lossless = None
    if temperature <= 0:
        if method == "none":
            lossless = True
        else:
            ref = reference if reference is not None else greedy_reference(target, prompt_ids, max_new_tokens)
            lossless = all(r.tokens == g for r, g in zip(results, ref))
    sp = spread(tps)
    step_sp = spread([m["step_ms"] for _, m in per_repeat])
    tpot_repeats = [serving_metrics(r).get("tpot_ms", 0.0) for r, _ in per_repeat]
    drafting = _none_for_nan(repetition.drafting_report((p, r.tokens, r.steps) for p, r in zip(prompt_ids, results)))
    split = None if method == "none" else DraftingSplit(
        tau_fresh=drafting["fresh"]["tau"], tau_repeated=drafting["repeated"]["tau"],
        accept_rate_fresh=drafting["fresh"]["accept_rate_per_position"],
        accept_rate_repeated=drafting["repeated"]["accept_rate_per_position"],
        repeated_step_fraction=drafting["repeated_step_fraction"])
    serving = serving_metrics(results)
    return EngineRun(
        method=method,
        k=dec.k,
        engine="reference" if isinstance(dec, SpecDecoder) else "lean",
        n_prompts=len(prompt_ids),
        max_new_tokens=max_new_tokens,
        temperature=temperature,
        draft_sampling=draft_sampling if temperature > 0 and method != "none" else None,
        tau=summary["tau"] if method != "none" else 1.0,
        accept_rate_per_position=summary["accept_rate_per_position"],
        conditional_alpha=summary["conditional_alpha"],
        steps=len(steps),
        accepted_per_step=[s.accepted for s in steps],
        steps_per_prompt=[len(r.steps) for r in results],
        repetition_fraction=drafting["repetition_fraction"],
        drafting_split=split,
        tokens=sum(len(r.tokens) for r in results),
        **{**means, "tokens_per_s": sp["median"]},
        tokens_per_s_p10=sp["p10"],
        tokens_per_s_p90=sp["p90"],
        tokens_per_s_repeats=tps,
        repeat_outliers=repeat_outliers(tps),
        ttft_ms=serving["ttft_ms"],
        ttft_ms_p90=serving["ttft_ms_p90"],
        tpot_ms=serving.get("tpot_ms"),
        tpot_ms_p90=serving.get("tpot_ms_p90"),
        tpot_ms_repeats=tpot_repeats,
        step_ms_p10=step_sp["p10"],
        step_ms_p90=step_sp["p90"],
        repeats=repeats,
        capture_ms=getattr(dec, "capture_ms", 0.0),
        prefill=("graph" if getattr(dec, "use_graphs", False) and dec.pad_prefill else
                 "padded" if getattr(dec, "pad_prefill", False) else "eager"),
        lossless=lossless,
    )


@dataclass(frozen=True)
class SweepSettings:
    """What :func:`sweep` runs: the K values, the generation, the timing and its time box."""

    ks: tuple[int, ...] = tuple(range(1, 11))  # drafts per step, each method
    max_new_tokens: int = 64  # per prompt
    temperature: float = 0.0  # 0: greedy (outputs checked against plain greedy decoding)
    repeats: int = 1  # timed passes over a prompt set per configuration and sweep
    sweeps: int = 1  # independent passes over every configuration (the spread of a best-K ratio)
    engine: str = "lean"  # of the decoders made here
    reference_engine: str = "reference"  # that makes the plain greedy outputs losslessness is checked against
    deadline: float | None = None  # a time.monotonic() value past which no further configuration starts

    def run_settings(self, sweep: int) -> RunSettings:
        """One configuration's settings in sweep ``sweep`` (seeds ``1000 * sweep + i``: independent sweeps)."""
        return RunSettings(max_new_tokens=self.max_new_tokens, temperature=self.temperature, seed=1000 * sweep,
                           repeats=self.repeats, engine=self.engine)


def sweep(target, tokenizer, heads: dict, prompt_sets: dict[str, Sequence], settings: SweepSettings = SweepSettings(),
          progress=None, decoders: dict | None = None) -> list[dict]:
    """none + each method in ``heads`` ({"eagle3": head, "peagle": head}) x K, on each prompt set,
    ``settings.sweeps`` times.

    The sweeps are independent passes over every configuration (decoders, and so captured graphs, are made once
    and reused), so the spread between them is the run-to-run noise of a best-K ratio. Returns flat run records
    (``prompt_set`` and ``sweep`` added) for ``peagle_nb.files.results.make_results``. Past ``settings.deadline``
    no further configuration starts (a time-boxed GPU run). ``decoders``: {(method, k): decoder} made by the caller
    (to reuse them afterwards); missing ones are made here. ``progress``: called with each run record.
    """
    import time

    sets = {name: encode_prompts(tokenizer, prompts) for name, prompts in prompt_sets.items()}
    refs = {name: greedy_reference(target, ids, settings.max_new_tokens, settings.reference_engine)
            if settings.temperature <= 0 else None for name, ids in sets.items()}
    decoders = decoders if decoders is not None else {}
    for method, k in [("none", 1)] + [(m, k) for m in heads for k in settings.ks]:
        if (method, k) not in decoders:
            decoders[(method, k)] = make_decoder(settings.engine, target, tokenizer, heads.get(method), method, k)
    runs = []
    for i in range(settings.sweeps):
        for set_name, ids in sets.items():
            base = None
            for (method, k), dec in decoders.items():
                if settings.deadline is not None and time.monotonic() > settings.deadline:
                    return runs
                rec = evaluate_run(target, tokenizer, heads.get(method), method, k, ids, settings.run_settings(i),
                                   reference=refs[set_name], decoder=dec).to_dict()
                if method == "none":
                    base = rec
                elif base is not None and base["tokens_per_s"]:
                    rec["speedup_vs_none"] = rec["tokens_per_s"] / base["tokens_per_s"]
                runs.append({"prompt_set": set_name, "sweep": i, **rec})
                if progress:
                    progress(runs[-1])
    return runs


def best_k(runs: Sequence[dict], method: str, prompt_set: str | None = None, key: str = "tokens_per_s",
           sweep: int | None = None) -> dict:
    """The run of ``method`` with the highest ``key`` (tokens/s by default), within one sweep when given."""
    cand = [r for r in runs if r["method"] == method and (prompt_set is None or r.get("prompt_set") == prompt_set)
            and (sweep is None or r.get("sweep", 0) == sweep)]
    if not cand:
        raise ValueError(f"no runs of method {method!r}" + (f" on {prompt_set!r}" if prompt_set else ""))
    return max(cand, key=lambda r: r[key])


def ratio_verdict(ratios: Sequence[float]) -> str:
    """P-EAGLE / EAGLE-3 speed ratios over sweeps -> "peagle faster" (all > 1), "eagle3 faster" (all < 1) or
    "tie" (the sweeps straddle 1: inside the run-to-run noise)."""
    return "peagle faster" if min(ratios) > 1 else "eagle3 faster" if max(ratios) < 1 else "tie"


def summarize_sweep(runs: Sequence[dict]) -> dict:
    """:func:`summarize_sweep_sets` as the flat ``summary`` object of the results files."""
    return {ps: s.to_dict() for ps, s in summarize_sweep_sets(runs).items()}


def summarize_sweep_sets(runs: Sequence[dict]) -> dict[str, SweepSummary]:
    """Per prompt set, over the sweeps: each method's best K (tokens/s) and speedup over plain decoding, the
    P-EAGLE / EAGLE-3 ratio at each one's best K (min / median / max over sweeps; ``tie`` when the sweeps
    disagree on which is faster), tau at K=7, drafting cost K_max / K=1 (P-EAGLE ~flat, EAGLE-3 ~linear), and,
    where every run has TPOT, the same comparison on time per output token."""
    out = {}
    for ps in sorted({r.get("prompt_set") for r in runs}, key=str):
        rs = [r for r in runs if r.get("prompt_set") == ps]
        # a sweep the time budget cut short lacks some configurations: only complete sweeps are compared
        configs = {i: {(r["method"], r["k"]) for r in rs if r.get("sweep", 0) == i} for i in
                   {r.get("sweep", 0) for r in rs}}
        every = set().union(*configs.values())
        sweeps = sorted(i for i, c in configs.items() if c == every)
        if not sweeps:
            raise ValueError(f"no complete sweep on {ps!r}: raise the time budget or lower --ks")
        out[ps] = _summarize_set([r for r in rs if r.get("sweep", 0) in sweeps], sweeps, len(configs) - len(sweeps))
    return out


def _summarize_set(rs: Sequence[dict], sweeps: Sequence[int], dropped: int) -> SweepSummary:
    """One prompt set's runs of the complete sweeps ``sweeps`` -> its summary."""
    methods = sorted({r["method"] for r in rs} - {"none"})
    plain = {i: [r for r in rs if r["method"] == "none" and r.get("sweep", 0) == i] for i in sweeps}
    best = {m: {i: best_k(rs, m, sweep=i) for i in sweeps} for m in methods}
    with_tpot = bool(methods) and all("tpot_ms" in r for r in rs)
    best_tpot = {m: {i: min((r for r in rs if r["method"] == m and r.get("sweep", 0) == i), key=lambda r: r["tpot_ms"])
                     for i in sweeps} for m in methods} if with_tpot else {}
    both = {"eagle3", "peagle"} <= set(methods)
    ratio = [best["peagle"][i]["tokens_per_s"] / best["eagle3"][i]["tokens_per_s"] for i in sweeps] if both else None
    tpot_ratio = ([best_tpot["eagle3"][i]["tpot_ms"] / best_tpot["peagle"][i]["tpot_ms"] for i in sweeps]
                  if both and with_tpot else None)
    plain_tpot = with_tpot and all(plain.values())
    outliers = sum(1 for r in rs if r.get("repeat_outliers"))
    return SweepSummary(
        sweeps=len(sweeps), incomplete_sweeps_dropped=dropped or None,
        methods={m: _summarize_method(rs, m, sweeps, best[m], best_tpot.get(m), plain) for m in methods},
        none_tokens_per_s=(statistics.median(r[0]["tokens_per_s"] for r in plain.values() if r)
                           if any(plain.values()) else None),
        peagle_over_eagle3_at_best_k=OverSweeps.of(ratio) if ratio else None,
        peagle_over_eagle3_verdict=ratio_verdict(ratio) if ratio else None,
        none_tpot_ms=statistics.median(plain[i][0]["tpot_ms"] for i in sweeps) if plain_tpot else None,
        none_ttft_ms=statistics.median(plain[i][0]["ttft_ms"] for i in sweeps) if plain_tpot else None,
        peagle_over_eagle3_tpot=OverSweeps.of(tpot_ratio) if tpot_ratio else None,
        peagle_over_eagle3_tpot_verdict=ratio_verdict(tpot_ratio) if tpot_ratio else None,
        configurations_with_outlier_repeats=outliers or None)


def _summarize_method(rs: Sequence[dict], m: str, sweeps: Sequence[int], best: dict[int, dict],
                      best_tpot: dict[int, dict] | None, plain: dict[int, list[dict]]) -> MethodSummary:
    """Method ``m``'s figures; ``best`` / ``best_tpot``: its best run per sweep by tokens/s / by TPOT (None: some
    run has no TPOT); ``plain``: plain decoding's runs per sweep."""
    mine = [r for r in rs if r["method"] == m]
    first = sorted((r for r in mine if r.get("sweep", 0) == sweeps[0]), key=lambda r: r["k"])
    k7 = [r for r in mine if r["k"] == TAU_K]
    at_k7 = None
    if k7:  # over sweeps: the same numbers at temperature 0, independent seeds when sampling
        fresh = [r["tau_fresh"] for r in k7 if r["tau_fresh"] is not None]  # None: no fresh steps
        at_k7 = TauAtK7(tau=statistics.median(r["tau"] for r in k7), tau_spread=OverSweeps.of([r["tau"] for r in k7]),
                        repetition_fraction=statistics.median(r["repetition_fraction"] for r in k7),
                        tau_fresh=statistics.median(fresh) if fresh else None)
    draft_cost = None
    if len(first) > 1 and first[0]["draft_ms_per_step"] > 0:
        draft_cost = DraftCost(k_high=first[-1]["k"], k_low=first[0]["k"],
                               ratio=first[-1]["draft_ms_per_step"] / first[0]["draft_ms_per_step"])
    speedups = [best[i]["tokens_per_s"] / plain[i][0]["tokens_per_s"] for i in sweeps if plain[i]]
    tpot = None
    if best_tpot is not None:
        tpot = TpotSummary(
            best_k_tpot=statistics.median_low([b["k"] for b in best_tpot.values()]),
            tpot_ms=statistics.median(b["tpot_ms"] for b in best_tpot.values()),
            ttft_ms=statistics.median(b["ttft_ms"] for b in best_tpot.values()),
            tpot_speedup_vs_none=(OverSweeps.of([plain[i][0]["tpot_ms"] / best_tpot[i]["tpot_ms"] for i in sweeps])
                                  if all(plain.values()) else None))
    return MethodSummary(
        best_k=statistics.median_low([b["k"] for b in best.values()]), best_k_per_sweep=[best[i]["k"] for i in sweeps],
        best_tokens_per_s=statistics.median(b["tokens_per_s"] for b in best.values()), at_k7=at_k7,
        draft_cost=draft_cost, lossless_all=all(r["lossless"] is not False for r in mine),
        speedup_vs_none_at_best_k=OverSweeps.of(speedups) if speedups else None, tpot=tpot)
