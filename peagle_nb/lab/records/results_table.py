"""The README's "What the suite measured" table, made from the results files in ``data/results/``.

``python -m peagle_nb.lab.records.results_table`` prints it; ``tests/test_results_table.py`` checks that the README
holds exactly this table, so a re-recorded file cannot leave a stale number in the README. Each row names its file.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from peagle_nb.engine.phase_record import StepPhases
from peagle_nb.engine.sweep_summary import OverSweeps, SweepSummary, read_summaries
from peagle_nb.files import paths

SETS = ("prose", "code", "ja")


def _load(name: str) -> dict | None:
    path = paths.results_dir() / name
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _by_head_and_set(runs: list[dict]) -> dict[tuple[str, str], list[dict]]:
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in runs:
        groups.setdefault((r["method"], r["prompt_set"]), []).append(r)
    return groups


def sampled_pooled_gaps(runs: list[dict]) -> dict[tuple[str, str], float]:
    """(method, prompt set) -> relative gap of vLLM's mean sampled tau over seeds to the engine's mean."""
    groups = _by_head_and_set(runs)
    return {key: sum(r["tau"] for r in rs) / sum(r["tau_engine"] for r in rs) - 1 for key, rs in groups.items()}


def sampled_pooled_z(runs: list[dict]) -> dict[tuple[str, str], float]:
    """(method, prompt set) -> mean over seeds of vLLM's tau minus the engine's, in standard errors of that mean
    (each run's standard error of the difference is its ``tau_tolerance`` / 3; seeds are independent)."""
    groups = _by_head_and_set(runs)
    return {key: sum(r["tau"] - r["tau_engine"] for r in rs) / sum((r["tau_tolerance"] / 3) ** 2 for r in rs) ** 0.5
            for key, rs in groups.items()}


def _spread(s: OverSweeps, fmt: str = "{:.2f}") -> str:
    """``median [min-max]``."""
    return f"{fmt.format(s.median)} [{fmt.format(s.min)}-{fmt.format(s.max)}]"


def _sets(summaries: dict[str, SweepSummary], pick: Callable[[SweepSummary], object], fmt) -> str:
    """One cell per prompt set of :data:`SETS`: ``fmt(pick(summary))``, ``-`` where the set or the figure is absent."""
    cells = []
    for ps in SETS:
        value = pick(summaries[ps]) if ps in summaries else None
        cells.append("-" if value is None else fmt(value))
    return " / ".join(cells)


def _at_k7(method: str, field: str) -> Callable[[SweepSummary], object]:
    """A figure of ``method`` at K=7 (``tau``, ``tau_spread``, ``repetition_fraction``), None where not swept."""
    def pick(s: SweepSummary):
        m = s.methods.get(method)
        return getattr(m.at_k7, field) if m and m.at_k7 else None
    return pick


def _speedup(method: str) -> Callable[[SweepSummary], OverSweeps | None]:
    """``method``'s tokens/s over plain decoding's at its best K."""
    def pick(s: SweepSummary):
        m = s.methods.get(method)
        return m.speedup_vs_none_at_best_k if m else None
    return pick


def _tpot_speedup(s: SweepSummary, method: str) -> OverSweeps | None:
    """``method``'s TPOT speedup over plain decoding at its best K by TPOT."""
    m = s.methods.get(method)
    return m.tpot.tpot_speedup_vs_none if m and m.tpot else None


def _vllm_rows(runs: list[dict]) -> list[tuple[str, str, str, str]]:
    """Rows of ``vllm_cpu.json``: acceptance against the suite's engine, and drafter passes per step."""
    out = []
    greedy = [r for r in runs if r.get("measures") == "acceptance" and r.get("temperature", 0) == 0
              and "tau_engine" in r]
    sampled = [r for r in runs if r.get("measures") == "acceptance" and r.get("temperature", 0) > 0
               and "tau_agrees" in r]
    sampled_runs = [r for r in sampled if r.get("cpu_sampling_fix", True)]
    shipped = [r for r in sampled if not r.get("cpu_sampling_fix", True)]
    if greedy or sampled_runs:
        same = sum(abs(r["tau"] - r["tau_engine"]) < 1e-9 for r in greedy)
        agree = sum(r["tau_agrees"] for r in sampled_runs)
        pooled = sampled_pooled_gaps(sampled_runs)
        worst = max((abs(g) for g in pooled.values()), default=0.0)
        kinds = sorted({r.get("standard_error", "step-level") for r in sampled_runs}) or ["step-level"]
        out.append(("real vLLM (CPU build) on the same prompts: greedy τ equal to the suite engine's / sampled τ "
                    f"at T=1 within 3 {'/'.join(kinds)} standard errors (with `cpu_sampling_fix`) / largest gap "
                    "of the 3-seed means per head and set",
                    f"{same} of {len(greedy)} runs / {agree} of {len(sampled_runs)} / {100 * worst:.1f}%",
                    "(both heads)", "`vllm_cpu.json`"))
    if shipped:
        lo, hi = min(r["tau"] for r in shipped), max(r["tau"] for r in shipped)
        elo, ehi = min(r["tau_engine"] for r in shipped), max(r["tau_engine"] for r in shipped)
        out.append(("the same sampled runs with vLLM's CPU build as shipped (its sampler divides the logits by "
                    "unwritten temperatures): vLLM τ vs the engine's", f"{lo:.2f}-{hi:.2f} vs {elo:.2f}-{ehi:.2f}",
                    "(both heads)", "`vllm_cpu.json`"))
    passes = {m: _passes_per_step(runs, m) for m in ("peagle", "eagle3")}
    if all(passes.values()):
        out.append(("drafter passes per step in vLLM (forward hooks on its target and drafter; greedy, one request "
                    "at a time)",
                    passes["peagle"], passes["eagle3"], "`vllm_cpu.json`"))
    return out


def _passes_per_step(runs: list[dict], method: str) -> str:
    """``1.00 (K=2) / 1.00 (K=4)``: the drafter's forward passes per target pass of ``method``'s hooked runs."""
    by_k = {r["k"]: r["drafter_passes_per_step"] for r in runs
            if r["method"] == method and r.get("drafter_passes_per_step") is not None}
    return " / ".join(f"{by_k[k]:.2f} (K={k})" for k in sorted(by_k))


def _regime(h200: dict, temperature: float, length: int) -> dict | None:
    return next((r for r in h200.get("regimes", []) if r["temperature"] == temperature
                 and r["max_new_tokens"] == length), None)


def _h200_sampled_rows(h200: dict) -> list[tuple[str, str, str, str]]:
    """The sampled regime: phases before and after fusion, TPOT and end-to-end speed, TTFT, long outputs."""
    out, src = [], "`engine_h200.json`"
    if h200.get("sampler_comparison"):
        from peagle_nb.analysis.step_phases import sampled_phase_rows

        k = max(r["k"] for r in h200["sampler_comparison"] if r["method"] == "peagle")
        over = {(r["mode"], r["key"]): r["over_greedy"] for r in sampled_phase_rows(h200["phases"],
                                                                                   h200["sampler_comparison"], k)}

        def ratios(key: str) -> str:
            return f"{over[('sampled, fused kernels', key)]:.2f} ({over[('sampled, PyTorch op chain', key)]:.2f})"

        out.append((f"H200 sampled (T=1) over greedy, graph device time, fused kernels (the PyTorch op chains before "
                    f"fusion): plain step / verify of K+1 rows (K={k}) / the draft pass (EAGLE-3: its K passes)",
                    f"{ratios('plain')} / {ratios(f'verify_k{k}')} / {ratios(f'peagle_draft_k{k}')}",
                    f"{ratios('plain')} / - / {ratios(f'eagle3_draft_k{k}')}", src))
    reg = _regime(h200, 1.0, 256)
    s = read_summaries(reg["summary"]) if reg else {}
    if s and _tpot_speedup(next(iter(s.values())), "peagle"):
        sets = tuple(p for p in ("prose", "code", "ja") if p in s)
        out.append(("H200, T=1, 256 tokens: speed over plain decoding at each method's best K, time per output token "
                    "(end to end), " + " / ".join(sets) + " (3 sweeps: median [min-max])",
                    *(" / ".join(f"{_spread(_tpot_speedup(s[p], m))} ({_spread(_speedup(m)(s[p]))})" for p in sets)
                      for m in ("peagle", "eagle3")), src))
        out.append(("H200, T=1, 256 tokens: P-EAGLE / EAGLE-3 on time per output token, each at its best K, "
                    + " / ".join(sets), " / ".join(f"{_spread(s[p].peagle_over_eagle3_tpot)} "
                                                   f"({s[p].peagle_over_eagle3_tpot_verdict})" for p in sets),
                    "", src))
    pre = [r for r in h200.get("prefill_comparison", []) if r["prefill"] == "graph" and r["method"] != "none"]
    if pre:
        by = {m: [r["ttft_over_plain"] for r in pre if r["method"] == m] for m in ("peagle", "eagle3")}
        dr = {m: [r["drafter_prefill_over_target"] for r in pre if r["method"] == m] for m in ("peagle", "eagle3")}
        out.append(("H200 time to first token over plain decoding's, prefill captured per length bucket (drafter "
                    "prefill over the target's), range over the three sets",
                    *(f"{min(by[m]):.2f}-{max(by[m]):.2f}x ({min(dr[m]):.2f}-{max(dr[m]):.2f})"
                      for m in ("peagle", "eagle3")), src))
    reg = _regime(h200, 1.0, 512)
    if reg:
        from peagle_nb.analysis.metrics import tau_by_output_position

        def split(method: str) -> str:
            cells = []
            for ps in ("prose", "code", "ja"):
                runs = [r for r in reg["runs"] if r["method"] == method and r["k"] == 7 and r["prompt_set"] == ps]
                if runs:
                    early, late = tau_by_output_position(runs[0]["accepted_per_step"], runs[0]["steps_per_prompt"], 256)
                    cells.append(f"{early:.2f} -> {late:.2f}")
            return " / ".join(cells)

        out.append(("H200, T=1, 512-token outputs: τ at K=7 before and after output token 256 (the heads were trained "
                     "on 256-position sequences), prose / code / ja", split("peagle"), split("eagle3"), src))
    return out


def rows() -> list[tuple[str, str, str, str]]:
    """(measurement, P-EAGLE, EAGLE-3, source) rows, from whichever results files exist."""
    out = []
    sampled, cpu, h200 = _load("engine_cpu_sampled.json"), _load("engine_cpu.json"), _load("engine_h200.json")
    f2 = "{:.2f}".format
    if sampled:
        s = read_summaries(sampled["summary"])
        out.append(("acceptance length τ at K=7, sampled at T=1 (3 seeds: median [min-max]), held-out prose / code / "
                     "Japanese", _sets(s, _at_k7("peagle", "tau_spread"), _spread),
                     _sets(s, _at_k7("eagle3", "tau_spread"), _spread), "`engine_cpu_sampled.json`"))
    if cpu:
        s = read_summaries(cpu["summary"])
        rep = _sets(s, _at_k7("peagle", "repetition_fraction"), lambda v: f"{100 * v:.0f}%")
        out.append((f"τ at K=7, greedy (share of generated tokens inside a repeated 8-gram: {rep}), same sets",
                    _sets(s, _at_k7("peagle", "tau"), f2), _sets(s, _at_k7("eagle3", "tau"), f2), "`engine_cpu.json`"))
    vllm = _load("vllm_cpu.json")
    if vllm:
        out += _vllm_rows(vllm["runs"])
    if h200:
        e = h200["engines"]
        floor = h200["target_step_floor_ms"]
        plain = [r for r in h200["runs"] if r["method"] == "none"]
        wall = sorted(r["step_ms"] for r in plain)[len(plain) // 2]
        out.append(("H200, batch 1, plain decoding: lean engine tokens/s (median of repeats) vs the transformers "
                    "reference; one step's CUDA graphs (device) vs the step's wall time",
                    f"{e['lean_tokens_per_s']['median']:.0f} vs {e['reference_tokens_per_s']['median']:.0f} tok/s "
                    f"({e['lean_over_reference']['median']:.1f}x); {floor:.3f} vs {wall:.3f} ms", "",
                    "`engine_h200.json`"))
        ph = {(p.method, p.k): p for p in map(StepPhases.from_dict, h200["phases"])}
        ks = sorted(k for m, k in ph if m == "peagle")
        kmax = max(ks)
        out.append((f"H200 drafting time K={kmax} vs K=1 (graph device time)",
                     f"{ph[('peagle', kmax)].draft_ms / ph[('peagle', 1)].draft_ms:.2f}x",
                     f"{ph[('eagle3', kmax)].draft_ms / ph[('eagle3', 1)].draft_ms:.2f}x", "`engine_h200.json`"))
        s = read_summaries(h200["summary"])
        two = tuple(p for p in ("prose", "code") if p in s)
        out.append(("H200 speedup over plain decoding at each method's best K, prose / code (3 sweeps: median "
                    "[min-max])", " / ".join(_spread(_speedup("peagle")(s[p])) for p in two),
                    " / ".join(_spread(_speedup("eagle3")(s[p])) for p in two), "`engine_h200.json`"))
        out.append(("H200 P-EAGLE / EAGLE-3 tokens/s, each at its best K, prose / code",
                    " / ".join(f"{_spread(s[p].peagle_over_eagle3_at_best_k)} ({s[p].peagle_over_eagle3_verdict})"
                               for p in two), "", "`engine_h200.json`"))
        bc = {(r.k, r.builder): r for r in map(StepPhases.from_dict, h200["builder_comparison"])}
        k = max(kk for kk, _ in bc)
        out.append((f"H200 share of a P-EAGLE step (K={k}) spent building the drafter's batch: fused kernel vs "
                    "eager PyTorch ops", f"{100 * bc[(k, 'fused')].build_share:.1f}% vs "
                    f"{100 * bc[(k, 'eager')].build_share:.1f}%", "", "`engine_h200.json`"))
        out += _h200_sampled_rows(h200)
    if cpu:
        s = read_summaries(cpu["summary"])
        out.append(("2-core CPU speedup over plain decoding at each method's best K, prose / code / Japanese",
                    _sets(s, _speedup("peagle"), _spread), _sets(s, _speedup("eagle3"), _spread), "`engine_cpu.json`"))
        e = cpu["engines"]
        out.append(("2-core CPU plain decoding: lean engine vs the transformers reference (side by side)",
                    f"{e['lean_over_reference']['median']:.2f}x", "", "`engine_cpu.json`"))
    shift = _load("domain_shift/domain_shift.json")
    if shift:
        for pair, d in (shift["summary"].get("domain_shift") or {}).items():
            g, t = d.get("greedy"), d.get("sampled")
            with_, without = pair.split(" vs ")
            cells = []
            if t:
                cells.append(f"sampled {t['with']:.2f} vs {t['without']:.2f}")
            if g:
                cells.append(f"greedy {g['with']:.2f} vs {g['without']:.2f}")
            out.append((f"domain shift on {d['prompt_set']} prompts: τ of the P-EAGLE head trained with that domain "
                        f"({with_}) vs without it ({without}), same data otherwise and same budget",
                        "; ".join(cells), "", "`domain_shift/domain_shift.json`"))
    pub = _load("published.json")
    if pub:
        acc = {(r["method"], r["k"], r["prompt_set"]): r["tau"] for r in pub["runs"]
               if r.get("kind") == "acceptance" and r.get("target") == "openai/gpt-oss-20b"}
        sets = sorted({ps for _, _, ps in acc})
        for k in (3, 7):
            if all((m, k, ps) in acc for m in ("peagle", "eagle3") for ps in sets):
                out.append((f"published: GPT-OSS-20B heads' acceptance length at K={k}, {' / '.join(sets)} (vLLM/AWS "
                            "blog)", " / ".join(f"{acc[('peagle', k, ps)]:.2f}" for ps in sets),
                            " / ".join(f"{acc[('eagle3', k, ps)]:.2f}" for ps in sets), "`published.json`"))
        ratios = [r["speedup_over_eagle3"] for r in pub["runs"] if r.get("kind") == "speedup_over_eagle3"]
        if ratios:
            out.append((f"published: P-EAGLE / EAGLE-3 throughput, GPT-OSS-20B on one B200, each at its best K, "
                        f"{len(ratios)} points (3 workloads x concurrency 1-64)",
                        f"{min(ratios):.2f}-{max(ratios):.2f}x", "", "`published.json`"))
    return out


def _span(values, fmt: str = "{:.2f}") -> str:
    lo, hi = fmt.format(min(values)), fmt.format(max(values))
    return lo if lo == hi else f"{lo}-{hi}"


def reading() -> str:
    """The README's reading of the H200 record under the table, every figure computed from the files."""
    h200 = _load("engine_h200.json")
    if not h200 or "sampler_comparison" not in h200:
        return ""
    from peagle_nb.analysis.step_phases import regime_rows, sampled_phase_rows, tau_before_after

    ph = {(p.method, p.k): p for p in map(StepPhases.from_dict, h200["phases"]) if (p.mode or "greedy") == "greedy"}
    plain = ph[("none", 0)].plain_ms
    spec = [p for (m, _), p in ph.items() if m != "none"]
    sampled = {(r["mode"], r["key"]): r["over_greedy"] for r in sampled_phase_rows(h200["phases"],
                                                                                   h200["sampler_comparison"], 7)}
    regs = regime_rows(h200)
    t1 = [r for r in regs if r["temperature"] == 1.0 and r["tokens"] == 256]
    split = tau_before_after(h200, 1.0, max(r["tokens"] for r in regs), 256)
    verdicts = sorted({r["tpot_verdict"] for r in regs})
    fused, chain = "sampled, fused kernels", "sampled, PyTorch op chain"
    counts = ", ".join(f"{sum(r['tpot_verdict'] == v for r in regs)} {v}" for v in verdicts)
    e3_t1, pe_t1 = _span([r["eagle3_tpot_speedup"] for r in t1]), _span([r["peagle_tpot_speedup"] for r in t1])
    tau_pe, tau_e3 = _span([r["peagle_tau_k7"] for r in t1]), _span([r["eagle3_tau_k7"] for r in t1])
    return (
        f"Reading the H200 record. The lean engine runs plain decoding at "
        f"{h200['engines']['lean_over_reference']['median']:.1f}x the `transformers` reference; a plain step's graphs "
        f"take {plain:.3f} ms of device time, verifying K+1 rows {_span([p.verify_ms / plain for p in spec])} plain "
        f"steps, a P-EAGLE pass {_span([p.draft_ms / plain for p in spec if p.method == 'peagle'])} of a step "
        f"(flat in K) and EAGLE-3's K passes grow with K. Sampling no longer costs more than the model: with the fused "
        f"kernels a sampled plain step is {sampled[(fused, 'plain')]:.2f}x a greedy one and a sampled verification "
        f"of 8 rows {sampled[(fused, 'verify_k7')]:.2f}x (their PyTorch op chains: {sampled[(chain, 'plain')]:.2f}x "
        f"and {sampled[(chain, 'verify_k7')]:.2f}x). At T=1 over 256 tokens EAGLE-3 decodes "
        f"{e3_t1}x and P-EAGLE {pe_t1}x "
        f"as fast as plain decoding on time per output token; over all {len(regs)} regimes (T in {{0, 1}}, 64 to "
        f"{max(r['tokens'] for r in regs)} tokens, three sets) the P-EAGLE / EAGLE-3 verdicts on TPOT are "
        f"{counts}. Two things hold "
        "P-EAGLE back on this tiny family, both measured: its deeper slots are rarely accepted (τ at K=7 "
        f"{tau_pe} against EAGLE-3's {tau_e3} at T=1), "
        "and its 4-layer pass is a large share of an 8-layer target's step. Longer outputs do not help here: past "
        f"output token 256, the length the heads were trained on, τ at K=7 falls from "
        f"{_span([s['tau_before'] for s in split])} to {_span([s['tau_after'] for s in split])} (T=1)."
    )


def markdown() -> str:
    lines = ["| measurement | P-EAGLE | EAGLE-3 | source |", "|---|---|---|---|"]
    lines += [f"| {m} | {p} | {e} | {s} |" for m, p, e, s in rows()]
    text = reading()
    return "\n".join(lines) + "\n" + (f"\n{text}\n" if text else "")


if __name__ == "__main__":
    print(markdown(), end="")
