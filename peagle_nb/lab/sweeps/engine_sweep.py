"""The engine sweep that fills ``data/results/engine_{cpu,h200}.json``. Explained in notebooks 01 and 03.

One run records, on one machine and in one process:

- ``equality``: the lean engine against the reference engine on the held-out prompts (same tokens, same
  accepted count at every step; greedy and seeded sampling; none / EAGLE-3 / P-EAGLE at several K);
- ``regimes``: none / EAGLE-3 / P-EAGLE over K on the held-out sets (batch 1), at each temperature and generation
  length asked for (``--temperatures``, ``--lengths``), each configuration timed ``--repeats`` times per sweep,
  ``--sweeps`` independent sweeps (lean engine), with TTFT / TPOT per run and a summary per regime; ``runs`` and
  ``summary`` repeat the first regime (greedy, the first length), the layout earlier files had;
- ``engines``: plain decoding with the lean and the reference engine side by side, interleaved;
- ``phases``: each step phase timed alone (a GPU's graph replay: device time only), per configuration, greedy and
  sampled (``mode``), and the ``target_step_floor_ms`` (one plain step's graphs, replayed back to back);
- ``sampler_comparison``: the sampled step's phases with the fused sampling kernels and with their PyTorch op
  chains (the step before fusion), and ``sampling_kernels``: the two kernels against their references on this
  device (same uniforms, differing outputs counted) with their timings;
- ``builder_comparison``: P-EAGLE's phases with the fused input builder and with an eager op chain;
- ``profile``: per-kernel device time of one plain and one P-EAGLE step (GPU only);
- ``summary``: best K per method and the P-EAGLE / EAGLE-3 ratio over sweeps (min / median / max).

What to record is one :class:`RecordSettings`. ``peagle-nb eval --sweep`` calls :func:`run`; on a machine without
the CLI's extras (the GPU box):
``python -m peagle_nb.lab.sweeps.engine_sweep --device cuda --out engine_h200.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

SECTIONS = ("equality", "engines", "phases", "samplers", "builder", "profile", "kernels", "prefill")


@dataclass(frozen=True)
class RecordSettings:
    """What :func:`run` records besides the models and the prompt sets."""

    ks: tuple[int, ...]  # drafts per step swept, each method
    lengths: tuple[int, ...] = (64,)  # generation lengths, a regime each (the first: the record's runs / summary)
    temperatures: tuple[float, ...] = (0.0,)  # a regime each, with every length
    repeats: int = 3  # timed passes over a prompt set per configuration and sweep
    sweeps: int = 3  # independent sweeps (the spread of best-K ratios)
    budget_s: float | None = None  # start no new configuration after this many seconds
    sections: tuple[str, ...] = ("all",)  # parts besides the sweep: "all", "none" (the sweep only) or any of SECTIONS
    equal_prompts: int = 4  # prompts per set for the lean == reference check (0: skip it)
    side_by_side_repeats: int = 3  # alternations of the lean and reference engines
    profile: bool = True  # per-kernel device time (GPU only)
    sampler_ks: tuple[int, ...] | None = None  # K of the sampler comparison (None: 1, 3, 7 where swept)
    kernel_shapes: dict | None = None  # launch shapes chosen on this GPU, recorded as given
    drafter_window: int | None = None  # both drafters attend to this many positions back (None: all; drafting.py)
    drafter_sinks: int = 0  # ... and to the first this many

    def __post_init__(self):
        unknown = sorted(set(self.sections) - set(SECTIONS) - {"all", "none"})
        if unknown:
            raise ValueError(f"unknown sections {unknown}; choose from all, none, {', '.join(SECTIONS)}")
        if self.drafter_window is not None and self.sections != ("none",):
            raise ValueError("a drafter window applies to the regime sweep only: pass --sections none")
        if not self.ks or not self.lengths or not self.temperatures:
            raise ValueError("give at least one K, one generation length and one temperature to record")

    def want(self, section: str) -> bool:
        return "all" in self.sections or section in self.sections


def check_equal(target, tokenizer, heads: dict, prompt_sets: dict, ks=(1, 3, 7, 10), n_prompts: int = 4,
                max_new_tokens: int = 48, temperatures=(0.0, 1.0)) -> dict:
    """Lean vs reference engine: per configuration, how many generations had the same tokens and the same
    accepted count at every step (``all_equal`` is the conjunction)."""
    from peagle_nb.engine.evaluate import encode_prompts, make_decoder

    rows = []
    configs = [("none", 1)] + [(m, k) for m in heads for k in ks]
    for set_name, prompts in prompt_sets.items():
        ids = encode_prompts(tokenizer, prompts[:n_prompts])
        for method, k in configs:
            ref = make_decoder("reference", target, tokenizer, heads.get(method), method, k)
            lean = make_decoder("lean", target, tokenizer, heads.get(method), method, k)
            for temp in temperatures:
                same_tokens = same_steps = 0
                for i, p in enumerate(ids):
                    a = ref.generate(p, max_new_tokens, temp, seed=i)
                    b = lean.generate(p, max_new_tokens, temp, seed=i)
                    same_tokens += a.tokens == b.tokens
                    same_steps += [s.accepted for s in a.steps] == [s.accepted for s in b.steps]
                rows.append({"prompt_set": set_name, "method": method, "k": k if method != "none" else 0,
                             "temperature": temp, "generations": len(ids), "same_tokens": same_tokens,
                             "same_accepted_per_step": same_steps})
    return {"max_new_tokens": max_new_tokens, "rows": rows,
            "all_equal": all(r["same_tokens"] == r["same_accepted_per_step"] == r["generations"] for r in rows)}


def engines_side_by_side(target, tokenizer, prompts, max_new_tokens: int, repeats: int) -> dict:
    """Plain decoding, lean and reference engines alternated ``repeats`` times: tokens/s spread of each, and the
    ratio per repeat (the two engines see the same machine state)."""
    from peagle_nb.engine.evaluate import encode_prompts, make_decoder, spread

    ids = encode_prompts(tokenizer, prompts)
    decs = {e: make_decoder(e, target, tokenizer) for e in ("lean", "reference")}
    for d in decs.values():
        d.generate(ids[0], 8)
    tps: dict[str, list[float]] = {e: [] for e in decs}
    for _ in range(repeats):
        for e, d in decs.items():
            res = [d.generate(p, max_new_tokens) for p in ids]
            tps[e].append(sum(len(r.tokens) for r in res) / (sum(r.total_ms for r in res) / 1e3))
    ratios = [a / b for a, b in zip(tps["lean"], tps["reference"])]
    return {"method": "none", "n_prompts": len(ids), "max_new_tokens": max_new_tokens,
            **{f"{e}_tokens_per_s": spread(v) | {"repeats": v} for e, v in tps.items()},
            "lean_over_reference": spread(ratios) | {"repeats": ratios}}


def profile_steps(target, tokenizer, head, prompt, k: int = 7, steps: int = 3, temperatures=(0.0, 1.0)) -> dict:
    """Per-kernel device time (torch.profiler) of plain decoding and P-EAGLE steps run eagerly (no graphs, so
    each kernel is attributed), greedy and sampled: the top kernels by device time, for each."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from peagle_nb.engine.lean import LeanDecoder

    out = {}
    cases = [(f"{name}{'' if t <= 0 else f'_t{t:g}'}", make, t) for t in temperatures for name, make in (
        ("plain", lambda: LeanDecoder(target, tokenizer, use_graphs=False)),
        (f"peagle_k{k}", lambda: LeanDecoder(target, tokenizer, head, "peagle", k, use_graphs=False)))]
    for name, make, temp in cases:
        dec = make()
        dec.generate(prompt, 8, temp)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            res = dec.generate(prompt, steps + 1, temp)
            torch.cuda.synchronize()
        events = [e for e in prof.key_averages() if e.device_time_total > 0]
        total = sum(e.device_time_total for e in events)
        n_steps = max(len(res.steps), 1)
        top = sorted(events, key=lambda e: -e.device_time_total)[:25]
        out[name] = {"steps_profiled": n_steps, "kernels_per_step": sum(e.count for e in events) / (n_steps + 1),
                     "device_us_per_step_incl_prefill_share": total / (n_steps + 1),
                     "top": [{"kernel": e.key[:120], "calls": e.count, "device_us": round(e.device_time_total, 2)}
                             for e in top]}
    return out


def phases(decoders: dict, prompt_ids: list[int], temperatures=(0.0,), sampler: str | None = None) -> list[dict]:
    """``LeanDecoder.phase_ms`` of every configuration, after a short generation at each temperature set up its
    state (``mode``: "greedy" or "sampled"), as flat :class:`~peagle_nb.engine.phase_record.StepPhases` rows."""
    from peagle_nb.engine.phase_record import StepPhases

    rows = []
    for temp in temperatures:
        for (method, k), dec in decoders.items():
            dec.generate(prompt_ids, 16, temp)
            ph = dec.phase_ms(greedy=temp <= 0)
            rows.append(StepPhases.measured(method, k if method != "none" else 0, ph,
                                            mode="greedy" if temp <= 0 else "sampled", temperature=temp,
                                            sampler=sampler, step_device_ms=sum(ph.values())).to_dict())
    return rows


def sampler_comparison(target, tokenizer, heads: dict, prompt_ids: list[int], ks=(1, 3, 7),
                       temperature: float = 1.0) -> list[dict]:
    """Sampled-step phases with the fused sampling kernels and with their PyTorch op chains (same step otherwise),
    beside the greedy phases of the same decoders (``mode``): what fusing temperature, draws, acceptance and
    resampling saves (notebooks 01 and 04)."""
    from peagle_nb.engine.lean import LeanDecoder

    rows = []
    for sampler in ("fused", "reference"):
        decs = {("none", 1): LeanDecoder(target, tokenizer, sampler=sampler)}
        for m, h in heads.items():
            for k in ks:
                decs[(m, k)] = LeanDecoder(target, tokenizer, h, m, k, sampler=sampler)
        temps = (0.0, temperature) if sampler == "fused" else (temperature,)  # greedy phases use no sampler
        rows += phases(decs, prompt_ids, temps, sampler=sampler)
    return rows


def sampling_kernels_check(device: str, reps: int = 30) -> dict:
    """The sampling kernels against their PyTorch references on this device (same uniforms: differing outputs
    counted over several random cases) and their timings beside the eager chains they replace."""
    from peagle_kernels.draft_sample import benchmark_draft_sample
    from peagle_kernels.draft_sample import check_correctness as check_draft
    from peagle_kernels.sampled_verify import benchmark_sampled_verify
    from peagle_kernels.sampled_verify import check_correctness as check_verify

    diffs = {"sampled_verify": {f"k{k}": check_verify(K=k, device=device, seed=k) for k in (0, 1, 3, 7, 10)},
             "draft_sample": {f"seed{s}": check_draft(device=device, seed=s) for s in range(3)}}
    return {"differing_outputs": diffs,
            "timings": benchmark_sampled_verify((1, 8, 64), (0, 1, 3, 7, 10), device=device, reps=reps)
            + benchmark_draft_sample((1, 3, 7, 10), device=device, reps=reps)}


def prefill_comparison(target, tokenizer, heads: dict, prompt_sets: dict, ks: dict, repeats: int = 5) -> list[dict]:
    """Time to first token (``generate(prompt, 1)``: the target's prefill, the drafter's, the first token) per prompt
    set and method, with the prefill run eagerly and as one padded step per length bucket (a CUDA graph on a GPU):
    TTFT p50 / p90 over prompts of each prompt's median over ``repeats``, and the drafter's share (TTFT minus plain
    decoding's TTFT, over plain decoding's). ``ks``: {method: K} of the decoders used."""
    import statistics

    from peagle_nb.engine.evaluate import encode_prompts, spread
    from peagle_nb.engine.lean import LeanDecoder

    rows = []
    for pad in (False, True):
        for set_name, prompts in prompt_sets.items():
            ids = encode_prompts(tokenizer, prompts)
            ttft = {}
            for method in ["none"] + list(heads):
                dec = LeanDecoder(target, tokenizer, heads.get(method), method, ks.get(method, 1), pad_prefill=pad)
                for p in ids:  # warm every length (and capture its graph)
                    dec.generate(p, 1)
                per_prompt = [statistics.median(dec.generate(p, 1).prefill_ms for _ in range(repeats)) for p in ids]
                ttft[method] = spread(per_prompt)
                rows.append({"prefill": ("graph" if dec.use_graphs and pad else "padded" if pad else "eager"),
                             "prompt_set": set_name, "method": method, "k": dec.k, "n_prompts": len(ids),
                             "prompt_tokens": [len(p) for p in ids], "ttft_ms": ttft[method]["median"],
                             "ttft_ms_p90": ttft[method]["p90"], "repeats": repeats})
            for r in rows[-len(ttft):]:
                if r["method"] != "none":
                    r["drafter_prefill_over_target"] = (r["ttft_ms"] - ttft["none"]["median"]) / ttft["none"]["median"]
                    r["ttft_over_plain"] = r["ttft_ms"] / ttft["none"]["median"]
    return rows


def regime_sweeps(target, tokenizer, heads: dict, prompt_sets: dict, settings: RecordSettings, decoders: dict,
                  deadline: float | None, log=print) -> list[dict]:
    """The sweep at every (temperature, generation length): runs with TTFT / TPOT and a summary per regime. Greedy
    outputs are checked against plain greedy decoding by the lean engine (the lean == reference check is
    ``equality``)."""
    from peagle_nb.engine.evaluate import SweepSettings, summarize_sweep, sweep

    out = []
    for temp in settings.temperatures:
        for n in settings.lengths:
            plan = SweepSettings(ks=settings.ks, max_new_tokens=n, temperature=temp, repeats=settings.repeats,
                                 sweeps=settings.sweeps, reference_engine="lean", deadline=deadline)
            runs = sweep(target, tokenizer, heads, prompt_sets, plan, decoders=decoders,
                         progress=lambda r: log(f"  T={r['temperature']:g} n={r['max_new_tokens']} s{r['sweep']} "
                                                f"{r['prompt_set']:>6} {r['method']:>6} k={r['k']:<2} "
                                                f"tau={r['tau']:.2f} tok/s={r['tokens_per_s']:.0f} "
                                                f"tpot={r.get('tpot_ms', 0):.3f} ttft={r['ttft_ms']:.2f}ms"))
            try:
                summary = summarize_sweep(runs)
            except ValueError as exc:  # a regime the time budget cut before one sweep completed
                summary = {"incomplete": str(exc)}
            out.append({"temperature": temp, "max_new_tokens": n, "runs": runs, "summary": summary})
    return out


def builder_comparison(target, tokenizer, head, prompt_ids: list[int], ks=(3, 7)) -> list[dict]:
    """P-EAGLE's step phases with the fused input builder and with vLLM's earlier chain of eager ops: what share
    of a step building the drafter's batch takes (notebook 04)."""
    from peagle_nb.engine.lean import LeanDecoder
    from peagle_nb.engine.phase_record import StepPhases

    rows = []
    for k in ks:
        for builder in ("fused", "eager"):
            dec = LeanDecoder(target, tokenizer, head, "peagle", k, builder=builder)
            dec.generate(prompt_ids, 16)
            ph = dec.phase_ms()
            rows.append(StepPhases.measured("peagle", k, ph, builder=builder, step_device_ms=sum(ph.values()),
                                            build_share=ph["build"] / sum(ph.values())).to_dict())
    return rows


def run(target, tokenizer, heads: dict, prompt_sets: dict, settings: RecordSettings, out: Path, log=print) -> dict:
    """The whole record (module docstring), as ``settings`` asks, written to ``out``."""
    from peagle_nb.engine.drafting import DrafterWindow
    from peagle_nb.engine.evaluate import make_decoder
    from peagle_nb.files.results import make_results, validate, write_results

    ks, lengths, temperatures = list(settings.ks), list(settings.lengths), list(settings.temperatures)
    want = settings.want
    budget_s, repeats, sweeps = settings.budget_s, settings.repeats, settings.sweeps
    deadline = time.monotonic() + budget_s if budget_s else None
    device = next(target.parameters()).device
    on_gpu = device.type == "cuda"
    t0 = time.perf_counter()
    first_set = next(iter(prompt_sets.values()))
    p0 = tokenizer(first_set[0])["input_ids"]
    extra: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # K past the trained depth is part of the sweep
        if settings.equal_prompts and want("equality"):
            extra["equality"] = check_equal(target, tokenizer, heads, prompt_sets, n_prompts=settings.equal_prompts)
            log(f"equality lean == reference: {extra['equality']['all_equal']} ({time.perf_counter() - t0:.0f} s)")
        if on_gpu and want("kernels"):
            extra["sampling_kernels"] = sampling_kernels_check(str(device))
            log(f"sampling kernels vs references: {extra['sampling_kernels']['differing_outputs']}")
        if want("engines"):
            extra["engines"] = engines_side_by_side(target, tokenizer, first_set, lengths[0],
                                                    settings.side_by_side_repeats)
            log(f"plain decoding lean / reference: {extra['engines']['lean_over_reference']['median']:.2f}x")
        decs = {("none", 1): make_decoder("lean", target, tokenizer)}
        window = ({} if settings.drafter_window is None else
                  {"drafter_window": DrafterWindow(settings.drafter_window, settings.drafter_sinks)})
        for m, h in heads.items():
            for k in ks:
                decs[(m, k)] = make_decoder("lean", target, tokenizer, h, m, k, **window)
        if want("phases"):
            extra["phases"] = phases(decs, p0)  # greedy; sampled phases are in the sampler comparison
            extra["target_step_floor_ms"] = extra["phases"][0]["plain_ms"]
        if want("samplers") and any(t > 0 for t in temperatures):
            sks = list(settings.sampler_ks or ([k for k in (1, 3, 7) if k in ks] or [max(ks)]))
            extra["sampler_comparison"] = sampler_comparison(target, tokenizer, heads, p0, sks, max(temperatures))
            log("sampler comparison done")
        if want("builder"):
            extra["builder_comparison"] = builder_comparison(target, tokenizer, heads["peagle"], p0,
                                                             [k for k in (3, 7) if k in ks] or [max(ks)])
        if want("prefill"):
            best = {"eagle3": 3 if 3 in ks else max(ks), "peagle": 5 if 5 in ks else max(ks)}
            extra["prefill_comparison"] = prefill_comparison(target, tokenizer, heads, prompt_sets, best)
            log("prefill comparison: " + ", ".join(f"{r['prefill']} {r['prompt_set']} {r['method']} "
                                                   f"{r['ttft_ms']:.2f}" for r in extra["prefill_comparison"]))
        if on_gpu and settings.profile and want("profile"):
            extra["profile"] = profile_steps(target, tokenizer, heads["peagle"], p0,
                                             temperatures=sorted(set([0.0] + temperatures)))
        regimes = regime_sweeps(target, tokenizer, heads, prompt_sets, settings, decs, deadline, log)
    first = regimes[0]
    doc = make_results(
        "engine", first["runs"],
        model={"target": getattr(target.config, "_name_or_path", "") or "tiny-target",
               "heads": {m: {"layers": h.config.num_hidden_layers, "trained_k": h.trained_k} for m, h in heads.items()},
               "dtype": str(next(target.parameters()).dtype),
               **({} if settings.drafter_window is None else {"drafter_window": settings.drafter_window,
                                                              "drafter_sinks": settings.drafter_sinks})},
        notes=(f"batch 1, ignore EOS, lean engine; regimes: temperatures {temperatures} x generation lengths {lengths} "
               f"(runs/summary: the first); {sweeps} sweep(s), each configuration's prompt set timed {repeats} "
               "time(s) after a short warm-up generation of every prompt length (tokens_per_s: median, p10, p90, "
               "every repeat kept; repeat_outliers: repeats over 1.3x from the median); tokens_per_s = generated "
               "tokens / wall time of generate() incl. prefill; ttft_ms = target + drafter prefill + first token, "
               "tpot_ms = decode time per output token after the first (p50 / p90 over requests); draft/verify/"
               "bookkeeping ms per verification step; prefill runs eagerly (not captured)"))
    doc["summary"] = first["summary"]
    doc["regimes"] = regimes
    doc.update(extra)
    if settings.kernel_shapes:
        doc["kernel_shapes"] = settings.kernel_shapes
    doc["run_seconds"] = round(time.perf_counter() - t0, 1)
    if on_gpu:
        doc["notes"] += ("; GPU: every step phase, sampling included, captured once as a CUDA graph (capture_ms, "
                         "never in tokens/s); draft/verify ms are device time from CUDA events, bookkeeping the rest "
                         "of the step's wall time; phases: each phase's graph replayed alone (device time only)")
    doc = validate(doc)
    write_results(out, doc)
    return doc


def merge_parts(docs: list[dict]) -> dict:
    """One record from runs of this module made in several calls (a GPU lease caps each call's length), parts in the
    order they were recorded: the regimes of every part that hold runs, sorted by (temperature, length), and every
    other section, a later part's replacing an earlier one's (a part re-records what changed since); ``runs`` /
    ``summary`` from the first regime; ``parts`` keeps each part's generator, creation time and run time (a part that
    is itself a merged record brings its own ``parts``, so a record can grow by one call at a time)."""
    from peagle_nb.files.results import validate

    if not docs:
        raise ValueError("nothing to merge: give the parts' results files")
    windows = {(d.get("model", {}).get("drafter_window"), d.get("model", {}).get("drafter_sinks")) for d in docs}
    if len(windows) > 1:
        raise ValueError(f"the parts were recorded with different drafter windows {sorted(windows, key=str)}: merge "
                         "each window's parts into a record of its own")
    weights = {json.dumps(d["model"]["weights_sha256"], sort_keys=True) for d in docs
               if d.get("model", {}).get("weights_sha256")}  # records made before weights were named carry none
    if len(weights) > 1:
        raise ValueError("the parts were measured with different weights (their model.weights_sha256 differ): merge "
                         "each model's parts into a record of its own")
    by_regime: dict = {}
    for d in docs:  # a later part's regime replaces an earlier one's at the same (temperature, length)
        for r in d.get("regimes", []):
            if r.get("runs"):  # one the part's time budget cut before its first run is not a measurement
                by_regime[(r["temperature"], r["max_new_tokens"])] = r
    regimes = [by_regime[key] for key in sorted(by_regime)]
    if not regimes:
        raise ValueError("no part holds a 'regimes' section: record the parts with this module first")
    out: dict = {}
    for d in docs:
        out.update({k: v for k, v in d.items() if k not in ("regimes", "runs", "summary")})
    out["regimes"] = regimes
    temps = sorted({r["temperature"] for r in regimes})
    lengths = sorted({r["max_new_tokens"] for r in regimes})
    out["notes"] = re.sub(r"regimes: temperatures \[[^\]]*\] x generation lengths \[[^\]]*\]",
                          f"regimes: temperatures {temps} x generation lengths {lengths}", out.get("notes", ""))
    out["runs"], out["summary"] = regimes[0]["runs"], regimes[0]["summary"]
    out["parts"] = [part for d in docs for part in d.get("parts") or [  # a merged record brings its own parts
        {"generator": d.get("generator"), "created": d.get("created"), "run_seconds": d.get("run_seconds"),
         "regimes": [(r["temperature"], r["max_new_tokens"]) for r in d.get("regimes", [])]}]]
    out["run_seconds"] = round(sum(d.get("run_seconds", 0.0) for d in docs), 1)
    return validate(out)


def main(argv=None) -> int:
    import torch

    from peagle_nb.files import paths
    from peagle_nb.models.heads import load_head
    from peagle_nb.models.target import load_target
    from peagle_nb.text.prompts import load_prompts

    p = argparse.ArgumentParser(prog="python -m peagle_nb.lab.sweeps.engine_sweep")
    p.add_argument("--merge", nargs="+", default=None, metavar="PART",
                   help="write --out from parts recorded by earlier calls (no measurement)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--out", required=True)
    p.add_argument("--models-dir", default=None)
    p.add_argument("--target", default=None, help="target folder (default MODELS_DIR/tiny-target), e.g. family v3's")
    p.add_argument("--heads", nargs=2, default=None, metavar=("EAGLE3_DIR", "PEAGLE_DIR"),
                   help="head folders (default MODELS_DIR/tiny-eagle3 and tiny-peagle)")
    p.add_argument("--prompts", nargs="+", default=None, help="JSONL files (default: both held-out sets)")
    p.add_argument("--limit", type=int, default=12)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--ks", default="1-10")
    p.add_argument("--threads", type=int, default=1,
                   help="CPU threads for torch, both engines (2 on an idle 2-core machine; 1 when it is shared)")
    p.add_argument("--repeats", type=int, default=3, help="timed passes over each prompt set per configuration")
    p.add_argument("--sweeps", type=int, default=3, help="independent sweeps (the spread of best-K ratios)")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--temperatures", default=None, help="comma list, e.g. 0,1 (default: --temperature)")
    p.add_argument("--sampler-ks", default=None, help="comma list of K for the sampler comparison (default 1,3,7)")
    p.add_argument("--lengths", default=None, help="generation lengths, e.g. 64,256,512 (default: --max-new-tokens)")
    p.add_argument("--sections", default="all",
                   help="comma list of the parts besides the sweep: all, equality, engines, phases, samplers, builder, "
                        "profile, kernels, prefill (none: the sweep only)")
    p.add_argument("--equal-prompts", type=int, default=4, help="prompts per set for the lean == reference check")
    p.add_argument("--no-profile", action="store_true")
    p.add_argument("--kernel-shapes", default=None,
                   help="JSON from `python -m peagle_kernels.decode_layer FILE` (a launch-shape sweep on this GPU): "
                        "use its chosen shapes and record them")
    p.add_argument("--budget-s", type=float, default=None, help="start no new configuration after this many seconds")
    p.add_argument("--drafter-window", type=int, default=None,
                   help="both drafters attend to this many positions back only (with --sections none)")
    p.add_argument("--drafter-sinks", type=int, default=0, help="... and to the first this many positions")
    a = p.parse_args(argv)
    if a.merge:
        from peagle_nb.files.results import generator_command, read_results, write_results

        doc = merge_parts([read_results(f) for f in a.merge])  # .json or .json.gz: a record grows a call at a time
        doc["generator"] = generator_command()
        write_results(a.out, doc)
        return 0
    shapes = None
    if a.kernel_shapes:
        import json

        from peagle_kernels.decode_layer import use_shapes

        shapes = json.loads(Path(a.kernel_shapes).read_text())["chosen"]
        use_shapes(shapes)
    if a.device == "cpu":
        torch.set_num_threads(a.threads)
    ks = (list(range(int(a.ks.split("-")[0]), int(a.ks.split("-")[1]) + 1)) if "-" in a.ks
          else [int(x) for x in a.ks.split(",")])
    models = Path(a.models_dir) if a.models_dir else paths.models_dir()
    files = a.prompts or [paths.prompts_dir() / "prose.jsonl", paths.prompts_dir() / "code.jsonl"]
    e3, pe = a.heads or (models / "tiny-eagle3", models / "tiny-peagle")
    folders = {"target": Path(a.target) if a.target else models / "tiny-target", "eagle3": Path(e3), "peagle": Path(pe)}
    target, tok = load_target(folders["target"], device=a.device)
    heads = {m: load_head(folders[m], device=a.device) for m in ("eagle3", "peagle")}
    sets = {Path(f).stem: load_prompts(f, a.limit) for f in files}
    settings = RecordSettings(
        ks=tuple(ks), lengths=tuple(int(x) for x in a.lengths.split(",")) if a.lengths else (a.max_new_tokens,),
        temperatures=tuple(float(x) for x in a.temperatures.split(",")) if a.temperatures else (a.temperature,),
        repeats=a.repeats, sweeps=a.sweeps, budget_s=a.budget_s, sections=tuple(a.sections.split(",")),
        equal_prompts=a.equal_prompts, profile=not a.no_profile,
        sampler_ks=tuple(int(x) for x in a.sampler_ks.split(",")) if a.sampler_ks else None, kernel_shapes=shapes,
        drafter_window=a.drafter_window, drafter_sinks=a.drafter_sinks)
    doc = run(target, tok, heads, sets, settings, Path(a.out), log=lambda s: print(s, file=sys.stderr, flush=True))
    from peagle_nb.files.results import write_results
    from peagle_nb.models.checksums import weights_sha256

    doc["model"]["weights_sha256"] = {name: weights_sha256(f) for name, f in folders.items()}  # the exact models
    write_results(a.out, doc)
    import json

    print(json.dumps({k: doc.get(k) for k in ("summary", "target_step_floor_ms", "run_seconds")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
