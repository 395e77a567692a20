"""Measure none / EAGLE-3 / P-EAGLE in real vLLM (offline engine, in-process) over K and concurrency:
outputs, acceptance from vLLM's own counters, latency from vLLM's per-request timestamps. Explained in
notebook 05; ``python -m peagle_nb.lab.sweeps.vllm_sweep`` writes ``data/results/vllm_cpu.json``.

Concurrency c is closed-loop: the prompts go to the engine in groups of c that start together (every
request makes exactly ``max_tokens`` tokens, ``ignore_eos``), so at most c sequences are in flight.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any, Sequence

from peagle_nb.serving import _deps, offline
from peagle_nb.serving.config import check_local_head, speculative_config
from peagle_nb.serving.metrics import delta


_TIMING_KEYS = ("wall_s", "tokens_per_s", "request_throughput", "ttft_ms", "tpot_ms", "cpu_s", "tokens_per_cpu_s",
                "ttft_ms_requests", "tpot_ms_requests")


def run_level(llm, prompt_ids: Sequence[list[int]], concurrency: int, max_tokens: int,
              repeats: int = 1) -> tuple[dict[str, Any], list[list[int]]]:
    """One concurrency level on a running engine -> a flat run record (throughput, TTFT, TPOT, tau).

    With ``repeats`` > 1 the level runs that many times and the fastest repeat's timings are kept: on a
    shared CPU the slower repeats measure the neighbours, not the engine (every repeat's wall time is kept in
    ``wall_s_repeats``). Acceptance is deterministic at temperature 0 and is taken from the first repeat."""
    best, walls = None, []
    for i in range(repeats):
        run, outputs = _run_level_once(llm, prompt_ids, concurrency, max_tokens)
        walls.append(run["wall_s"])
        if best is None:
            best, first_outputs = run, outputs
        elif run["wall_s"] < best["wall_s"]:
            best = {**best, **{k: run[k] for k in _TIMING_KEYS}}
    best["repeats"] = repeats
    best["wall_s_repeats"] = walls
    return best, first_outputs


def _run_level_once(llm, prompt_ids, concurrency, max_tokens):
    vllm = _deps.vllm()
    sp = vllm.SamplingParams(temperature=0.0, max_tokens=max_tokens, ignore_eos=True)
    before = offline.spec_metrics(llm)
    outputs, ttft, tpot = [], [], []
    c0 = time.process_time()  # CPU seconds of this process (the in-process engine): robust to neighbours
    t0 = time.perf_counter()
    for i in range(0, len(prompt_ids), concurrency):
        group = [{"prompt_token_ids": list(p)} for p in prompt_ids[i:i + concurrency]]
        for o in llm.generate(group, sp, use_tqdm=False):
            outputs.append(list(o.outputs[0].token_ids))
            m = o.metrics
            if m is not None and getattr(m, "first_token_latency", 0):
                ttft.append(m.first_token_latency)
                n = len(o.outputs[0].token_ids)
                if n > 1 and m.last_token_ts > m.first_token_ts:
                    tpot.append((m.last_token_ts - m.first_token_ts) / (n - 1))
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    d = delta(before, offline.spec_metrics(llm))
    tokens = sum(len(o) for o in outputs)
    ttft_ms, tpot_ms = [1000 * t for t in ttft], [1000 * t for t in tpot]  # per request, kept beside their means
    run = {"concurrency": concurrency, "n_prompts": len(prompt_ids), "max_tokens": max_tokens, "temperature": 0.0,
           "output_tokens": tokens, "wall_s": wall, "tokens_per_s": tokens / wall, "cpu_s": cpu,
           "tokens_per_cpu_s": tokens / cpu if cpu > 0 else None,
           "request_throughput": len(outputs) / wall,
           "ttft_ms": statistics.fmean(ttft_ms) if ttft_ms else None,
           "tpot_ms": statistics.fmean(tpot_ms) if tpot_ms else None,
           "ttft_ms_requests": ttft_ms, "tpot_ms_requests": tpot_ms,
           "num_drafts": d["num_drafts"], "num_draft_tokens": d["num_draft_tokens"],
           "num_accepted_tokens": d["num_accepted_tokens"], "accepted_per_position": d["accepted_per_position"]}
    if d["num_drafts"]:
        run["tau"] = d["tau"]
        run["accept_rate_per_position"] = d["accept_rate_per_position"]
    return run, outputs


def measure_config(target: str, method: str, head: str | None, k: int, prompt_ids: Sequence[list[int]],
                   concurrency: Sequence[int], max_tokens: int, max_model_len: int | None = None,
                   count_passes: bool = True, repeats: int = 1) -> tuple[list[dict], list[list[int]]]:
    """Start one engine for (method, K), run every concurrency level; returns runs and the outputs of the
    first level. With ``count_passes`` the first level also counts target and drafter forward passes."""
    spec = None
    if method != "none":
        check_local_head(head, target, k, method)
        spec = speculative_config(head, k, parallel_drafting=(method == "peagle"))
    t0 = time.perf_counter()
    llm = offline.make_llm(target, spec, max_model_len=max_model_len, max_num_seqs=max(concurrency))
    startup = time.perf_counter() - t0
    try:
        offline.generate_ids(llm, [prompt_ids[0]], max_tokens=4)  # warm-up
        runs, first_outputs = [], None
        for i, c in enumerate(concurrency):
            if i == 0 and count_passes:
                with offline.count_forward_passes(llm) as passes:
                    run, outs = run_level(llm, prompt_ids, c, max_tokens)
                if repeats > 1:  # timings without the hooks, best of `repeats`
                    timed, _ = run_level(llm, prompt_ids, c, max_tokens, repeats)
                    run.update({k: timed[k] for k in (*_TIMING_KEYS, "repeats", "wall_s_repeats")})
                run["target_passes"], run["drafter_passes"] = passes["target"], passes["drafter"]
                run["drafter_passes_per_step"] = passes["drafter"] / passes["target"] if passes["target"] else None
                run["drafter_inputs_example"] = passes["drafter_inputs"][:3]  # not flat: dropped before saving
            else:
                run, outs = run_level(llm, prompt_ids, c, max_tokens, repeats)
            first_outputs = first_outputs or outs
            runs.append({"method": method, "k": k if method != "none" else 0, "engine_startup_s": startup, **run})
        return runs, first_outputs
    finally:
        offline.close_llm(llm)


def sweep(target: str, heads: dict[str, str], prompt_ids: Sequence[list[int]], ks: dict[str, Sequence[int]],
          concurrency: Sequence[int] = (1, 4), max_tokens: int = 32, repeats: int = 1, log=print) -> list[dict]:
    """none once, then each method in ``heads`` at each of its ``ks``; every run carries ``lossless``
    (its outputs equal the none run's)."""
    runs, reference = [], None
    configs = [("none", None, 0)] + [(m, heads[m], k) for m in heads for k in ks[m]]
    for method, head, k in configs:
        r, outs = measure_config(target, method, head, k, prompt_ids, concurrency, max_tokens, repeats=repeats)
        if reference is None:
            reference = outs
        for run in r:
            run["lossless"] = outs == reference
            log(f"{method:>6} K={k}: c={run['concurrency']} {run['tokens_per_s']:.1f} tok/s "
                f"tau={run.get('tau', 1.0):.2f} lossless={run['lossless']}")
        runs += r
    return runs


def compare_with_engine(runs: list[dict], target: str, heads: dict[str, str], prompt_ids, max_tokens: int) -> None:
    """Add ``tau_engine`` (the suite's own engine, ``peagle_nb.engine``, same token ids, K, temperature 0)
    and ``tau_vllm_over_engine`` to each speculative run."""
    from peagle_nb.engine import evaluate
    from peagle_nb.engine.evaluate import greedy_reference
    from peagle_nb.models.heads import load_head
    from peagle_nb.models.target import load_target

    model, tok = load_target(target)
    reference = greedy_reference(model, [list(p) for p in prompt_ids], max_tokens)
    cache: dict[tuple[str, int], float] = {}
    for run in runs:
        if run["method"] == "none" or "tau" not in run:
            continue
        key = (run["method"], run["k"])
        if key not in cache:
            head = load_head(heads[run["method"]], target=model)
            cache[key] = evaluate(model, tok, head, run["method"], run["k"], prompts=prompt_ids,
                                  max_new_tokens=max_tokens, warmup=False, reference=reference)["tau"]
        run["tau_engine"] = cache[key]
        run["tau_vllm_over_engine"] = run["tau"] / cache[key]


def tau_standard_error(accepted_per_position: Sequence[float], num_drafts: float) -> float:
    """Standard error of tau = 1 + mean accepted drafts per step, from vLLM's per-position counters: position j's
    count is the number of steps that accepted at least j drafts, so they give the whole distribution of
    accepted drafts per step (mean = sum_j c_j / n, E[a^2] = sum_j (2j - 1) c_j / n)."""
    n = float(num_drafts)
    if n <= 1:
        return float("inf")
    mean = sum(accepted_per_position) / n
    second = sum((2 * j - 1) * c for j, c in enumerate(accepted_per_position, start=1)) / n
    return max(second - mean * mean, 0.0) ** 0.5 / n ** 0.5


def prompt_level_standard_error(accepted_per_step: Sequence[float], steps_per_prompt: Sequence[int]) -> float:
    """Standard error of tau = 1 + sum(accepted) / sum(steps) with the prompt as the independent unit (a ratio
    estimator over clusters): the steps of one prompt share its text and are correlated, which a step-level
    error ignores."""
    if sum(steps_per_prompt) != len(accepted_per_step):
        raise ValueError("steps_per_prompt does not add up to the steps in accepted_per_step")
    sums, start = [], 0
    for n in steps_per_prompt:
        sums.append(sum(accepted_per_step[start:start + n]))
        start += n
    m, total = len(sums), sum(steps_per_prompt)
    if m <= 1:
        return float("inf")
    ratio = sum(sums) / total
    resid = sum((a - ratio * n) ** 2 for a, n in zip(sums, steps_per_prompt))
    return (m / (m - 1) * resid) ** 0.5 / total


def compare_sampled(run: dict, engine_rec: dict, z: float = 3.0) -> dict:
    """vLLM vs the suite's engine at temperature > 0: different random streams, so the two taus agree only in
    distribution; their difference is compared with ``z`` standard errors of the difference. The engine's error
    is prompt-level when its record splits its steps by prompt (``steps_per_prompt``), since steps within a
    prompt are correlated; vLLM only reports run totals, so its step-level error (from its counters) is scaled by
    the same factor, measured on the engine's run over the same prompts (the design effect)."""
    acc = engine_rec["accepted_per_step"]
    n = len(acc)
    mean = sum(acc) / n
    se_engine_steps = (sum((a - mean) ** 2 for a in acc) / (n - 1)) ** 0.5 / n ** 0.5 if n > 1 else float("inf")
    se_vllm_steps = tau_standard_error(run["accepted_per_position"], run["num_drafts"])
    out = {"tau_engine": engine_rec["tau"], "tau_engine_steps": n, "tau_se_engine_steps": se_engine_steps,
           "tau_se_vllm_steps": se_vllm_steps}
    if engine_rec.get("steps_per_prompt"):
        se_engine = prompt_level_standard_error(acc, engine_rec["steps_per_prompt"])
        factor = se_engine / se_engine_steps if 0 < se_engine_steps < float("inf") else float("inf")
        out.update(standard_error="prompt-level", design_factor=factor)
    else:
        se_engine, factor = se_engine_steps, 1.0
        out.update(standard_error="step-level")
    se_vllm = se_vllm_steps * factor
    tol = z * (se_engine ** 2 + se_vllm ** 2) ** 0.5
    return {**out, "tau_se_engine": se_engine, "tau_se_vllm": se_vllm, "tau_tolerance": tol,
            "tau_agrees": abs(run["tau"] - engine_rec["tau"]) <= tol}


def acceptance_runs(target: str, heads: dict[str, str], prompt_sets: dict[str, Sequence[list[int]]], k: int,
                    max_tokens: int, log=print, temperature: float = 0.0, seed: int = 0,
                    fix_cpu_sampling: bool = True) -> list[dict]:
    """Acceptance only: every prompt of each set submitted at once (concurrency = set size), ``max_tokens``
    each; tau and per-position rates from vLLM's counters. Greedy: ``lossless`` vs no speculation. Sampled
    (``temperature`` > 0, vLLM's per-request ``seed``): ``lossless`` is None (the distribution, not the tokens,
    is what is kept; notebook 01 and the engine's tests check it). ``fix_cpu_sampling=False`` measures vLLM's
    CPU build as shipped (:mod:`peagle_nb.serving.cpu_sampling_fix`); each run records whether the fix was on."""
    from peagle_nb.serving import cpu_sampling_fix
    from peagle_nb.serving.metrics import delta as _delta

    runs, reference = [], {}
    # the plain engine only gives greedy runs their lossless reference: sampled runs have none to compare
    for method in ("none", *heads) if temperature <= 0 else heads:
        spec = (None if method == "none"
                else speculative_config(heads[method], k, parallel_drafting=(method == "peagle")))
        if spec is not None:
            check_local_head(heads[method], target, k, method)
        llm = offline.make_llm(target, spec, fix_cpu_sampling=fix_cpu_sampling)
        try:
            for name, ids in prompt_sets.items():
                before = offline.spec_metrics(llm)
                outs = offline.generate_ids(llm, ids, max_tokens, temperature, seed)
                if method == "none":
                    reference[name] = outs
                    continue
                d = _delta(before, offline.spec_metrics(llm))
                # vLLM's counters are kept beside the rates made of them (tests/test_provenance.py recomputes)
                runs.append({"method": method, "k": k, "concurrency": len(ids), "n_prompts": len(ids),
                             "prompt_set": name, "max_tokens": max_tokens, "temperature": temperature,
                             "seed": seed, "request_seeds": "seed * 1000 + request index",
                             "draft_sample_method": "greedy", "tau": d["tau"],
                             "cpu_sampling_fix": cpu_sampling_fix.active(),
                             "accept_rate_per_position": d["accept_rate_per_position"],
                             "num_drafts": d["num_drafts"], "num_draft_tokens": d["num_draft_tokens"],
                             "num_accepted_tokens": d["num_accepted_tokens"],
                             "accepted_per_position": d["accepted_per_position"],
                             "lossless": outs == reference[name] if temperature <= 0 else None,
                             "measures": "acceptance"})
                log(f"{method:>6} K={k} {name}: tau={d['tau']:.3f} lossless={runs[-1]['lossless']}")
        finally:
            offline.close_llm(llm)
    return runs


def compare_acceptance_with_engine(runs: list[dict], target: str, heads: dict[str, str], prompt_sets: dict) -> None:
    """The suite's engine on the same token ids and K as each acceptance run: greedy, ``tau_engine`` must equal
    vLLM's; sampled, :func:`compare_sampled` with the engine verifying drafts the way vLLM did (its default
    ``draft_sample_method="greedy"``: argmax drafts, kept with probability p(draft)); the same seeds cannot be
    shared, vLLM and the engine draw differently."""
    from peagle_nb.engine import evaluate
    from peagle_nb.models.heads import load_head
    from peagle_nb.models.target import load_target

    model, tok = load_target(target)
    for run in runs:
        if run.get("measures") != "acceptance":
            continue
        head = load_head(heads[run["method"]], target=model)
        rec = evaluate(model, tok, head, run["method"], run["k"], prompts=prompt_sets[run["prompt_set"]],
                       max_new_tokens=run["max_tokens"], temperature=run["temperature"], seed=run.get("seed", 0),
                       warmup=False, draft_sampling=run.get("draft_sample_method", "greedy"))
        if run["temperature"] <= 0:
            run["tau_engine"] = rec["tau"]
            run["tau_vllm_over_engine"] = run["tau"] / rec["tau"]
        else:
            run.update(compare_sampled(run, rec))


def recompare(path: str, target: str, heads: dict[str, str]) -> int:
    """Rerun :func:`compare_acceptance_with_engine` on a recorded file's acceptance runs (the vLLM part is kept as
    recorded) and note the command in the file."""
    from transformers import AutoTokenizer

    from peagle_nb.files import paths, results
    from peagle_nb.text.prompts import load_prompts

    doc = results.read_results(path)
    tok = AutoTokenizer.from_pretrained(target)
    acc = [r for r in doc["runs"] if r.get("measures") == "acceptance"]
    for r in acc:
        r.setdefault("draft_sample_method", "greedy")  # what the speculative config left at vLLM's default
    sets = {d: [tok(t)["input_ids"] for t in load_prompts(paths.prompts_dir() / f"{d}.jsonl")]
            for d in sorted({r["prompt_set"] for r in acc})}
    compare_acceptance_with_engine(acc, target, heads, sets)
    doc["compared_by"] = results.generator_command()
    results.write_results(path, doc)
    print("rewrote", path)
    return 0


def main(argv: list[str] | None = None) -> int:
    import argparse

    from peagle_nb.files import paths, results
    from peagle_nb.text.prompts import load_prompts

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", default=str(paths.models_dir() / "tiny-target"))
    p.add_argument("--eagle3", default=str(paths.models_dir() / "tiny-eagle3"))
    p.add_argument("--peagle", default=str(paths.models_dir() / "tiny-peagle"))
    p.add_argument("--prompts", default=str(paths.prompts_dir() / "prose.jsonl"))
    p.add_argument("--n-prompts", type=int, default=8)
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--k-eagle3", default="2,4")
    p.add_argument("--k-peagle", default="2,4,6")
    p.add_argument("--concurrency", default="1,4")
    p.add_argument("--acceptance-k", type=int, default=7, help="K of the acceptance-only runs (0: skip them)")
    p.add_argument("--acceptance-tokens", type=int, default=128)
    p.add_argument("--acceptance-sets", default="prose,code,ja", help="held-out prompt sets of the acceptance runs")
    p.add_argument("--sampled-seeds", default="0,1,2",
                   help="acceptance runs at temperature 1 (one per seed; '' to skip), compared with the engine")
    p.add_argument("--as-shipped-seeds", default="0",
                   help="sampled acceptance runs with vLLM's CPU build as shipped, without peagle_nb.serving."
                        "cpu_sampling_fix ('' to skip): what the fix changes, measured")
    p.add_argument("--no-engine-compare", action="store_true", help="skip tau of the suite's own engine")
    p.add_argument("--repeats", type=int, default=3, help="runs per level; the fastest is kept (shared CPUs)")
    p.add_argument("--out", default=str(paths.results_dir() / "vllm_cpu.json"))
    p.add_argument("--recompare", default=None, metavar="FILE",
                   help="only redo the engine side of FILE's acceptance runs (vLLM's counters kept) and rewrite it")
    a = p.parse_args(argv)
    if a.recompare:
        return recompare(a.recompare, a.target, {"eagle3": a.eagle3, "peagle": a.peagle})
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(a.target)
    prompt_ids = [tok(t)["input_ids"] for t in load_prompts(a.prompts, a.n_prompts)]
    ks = {"eagle3": [int(x) for x in a.k_eagle3.split(",")], "peagle": [int(x) for x in a.k_peagle.split(",")]}
    conc = [int(x) for x in a.concurrency.split(",")]
    load_before = os.getloadavg()[0]
    runs = sweep(a.target, {"eagle3": a.eagle3, "peagle": a.peagle}, prompt_ids, ks, conc, a.max_tokens, a.repeats)
    if not a.no_engine_compare:
        compare_with_engine(runs, a.target, {"eagle3": a.eagle3, "peagle": a.peagle}, prompt_ids, a.max_tokens)
    for r in runs:
        r["prompt_set"] = a.prompts.rsplit("/", 1)[-1].removesuffix(".jsonl")
        r.pop("drafter_inputs_example", None)
    if a.acceptance_k:
        sets = {d: [tok(t)["input_ids"] for t in load_prompts(paths.prompts_dir() / f"{d}.jsonl")]
                for d in a.acceptance_sets.split(",") if d}
        heads = {"eagle3": a.eagle3, "peagle": a.peagle}
        acc = acceptance_runs(a.target, heads, sets, a.acceptance_k, a.acceptance_tokens)
        for seed in [int(s) for s in a.sampled_seeds.split(",") if s.strip()]:
            acc += acceptance_runs(a.target, heads, sets, a.acceptance_k, a.acceptance_tokens, temperature=1.0,
                                   seed=seed)
        for seed in [int(s) for s in a.as_shipped_seeds.split(",") if s.strip()]:
            acc += acceptance_runs(a.target, heads, sets, a.acceptance_k, a.acceptance_tokens, temperature=1.0,
                                   seed=seed, fix_cpu_sampling=False)
        if not a.no_engine_compare:
            compare_acceptance_with_engine(acc, a.target, heads, sets)
        runs += acc
    doc = results.make_results("vllm", runs, model={"target": a.target, "eagle3": a.eagle3, "peagle": a.peagle},
                               notes="vLLM offline engine in-process (enforce_eager, fp32) on this machine's CPU; "
                                     "concurrency = closed-loop groups of requests; timings = fastest of "
                                     f"{a.repeats} repeats; 1-min load average {load_before:.1f} before / "
                                     f"{os.getloadavg()[0]:.1f} after on {os.cpu_count()} cores (a shared CPU makes "
                                     "tokens/s noisy; tau and pass counts are exact)")
    results.write_results(a.out, doc)
    print("wrote", a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
