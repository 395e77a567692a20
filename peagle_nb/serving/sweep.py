"""Measure none / EAGLE-3 / P-EAGLE in real vLLM (offline engine, in-process) over K and concurrency:
outputs, acceptance from vLLM's own counters, latency from vLLM's per-request timestamps. Explained in
notebook 05; ``python -m peagle_nb.serving.sweep`` writes ``data/results/vllm_cpu.json``.

Concurrency c is closed-loop: the prompts go to the engine in groups of c that start together (every
request makes exactly ``max_tokens`` tokens, ``ignore_eos``), so at most c sequences are in flight.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Sequence

from peagle_nb.serving import _deps, offline
from peagle_nb.serving.config import check_local_head, speculative_config
from peagle_nb.serving.metrics import delta


def run_level(llm, prompt_ids: Sequence[list[int]], concurrency: int, max_tokens: int) -> dict[str, Any]:
    """One concurrency level on a running engine -> a flat run record (throughput, TTFT, TPOT, tau)."""
    vllm = _deps.vllm()
    sp = vllm.SamplingParams(temperature=0.0, max_tokens=max_tokens, ignore_eos=True)
    before = offline.spec_metrics(llm)
    outputs, ttft, tpot = [], [], []
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
    d = delta(before, offline.spec_metrics(llm))
    tokens = sum(len(o) for o in outputs)
    run = {"concurrency": concurrency, "n_prompts": len(prompt_ids), "max_tokens": max_tokens, "temperature": 0.0,
           "output_tokens": tokens, "wall_s": wall, "tokens_per_s": tokens / wall,
           "request_throughput": len(outputs) / wall,
           "ttft_ms": 1000 * statistics.fmean(ttft) if ttft else None,
           "tpot_ms": 1000 * statistics.fmean(tpot) if tpot else None,
           "num_drafts": d["num_drafts"], "num_draft_tokens": d["num_draft_tokens"],
           "num_accepted_tokens": d["num_accepted_tokens"]}
    if d["num_drafts"]:
        run["tau"] = d["tau"]
        run["accept_rate_per_position"] = d["accept_rate_per_position"]
    return run, outputs


def measure_config(target: str, method: str, head: str | None, k: int, prompt_ids: Sequence[list[int]],
                   concurrency: Sequence[int], max_tokens: int, max_model_len: int | None = None,
                   count_passes: bool = True) -> tuple[list[dict], list[list[int]]]:
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
                run["target_passes"], run["drafter_passes"] = passes["target"], passes["drafter"]
                run["drafter_passes_per_step"] = passes["drafter"] / passes["target"] if passes["target"] else None
                run["drafter_inputs_example"] = passes["drafter_inputs"][:3]  # not flat: dropped before saving
            else:
                run, outs = run_level(llm, prompt_ids, c, max_tokens)
            first_outputs = first_outputs or outs
            runs.append({"method": method, "k": k if method != "none" else 0, "engine_startup_s": startup, **run})
        return runs, first_outputs
    finally:
        offline.close_llm(llm)


def sweep(target: str, heads: dict[str, str], prompt_ids: Sequence[list[int]], ks: dict[str, Sequence[int]],
          concurrency: Sequence[int] = (1, 4), max_tokens: int = 32, log=print) -> list[dict]:
    """none once, then each method in ``heads`` at each of its ``ks``; every run carries ``lossless``
    (its outputs equal the none run's)."""
    runs, reference = [], None
    configs = [("none", None, 0)] + [(m, heads[m], k) for m in heads for k in ks[m]]
    for method, head, k in configs:
        r, outs = measure_config(target, method, head, k, prompt_ids, concurrency, max_tokens)
        if reference is None:
            reference = outs
        for run in r:
            run["lossless"] = outs == reference
            log(f"{method:>6} K={k}: c={run['concurrency']} {run['tokens_per_s']:.1f} tok/s "
                f"tau={run.get('tau', 1.0):.2f} lossless={run['lossless']}")
        runs += r
    return runs


def main(argv: list[str] | None = None) -> int:
    import argparse

    from peagle_nb import paths, results
    from peagle_nb.bench.prompts import load_prompts

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
    p.add_argument("--out", default=str(paths.results_dir() / "vllm_cpu.json"))
    a = p.parse_args(argv)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(a.target)
    prompt_ids = [tok(t)["input_ids"] for t in load_prompts(a.prompts, a.n_prompts)]
    ks = {"eagle3": [int(x) for x in a.k_eagle3.split(",")], "peagle": [int(x) for x in a.k_peagle.split(",")]}
    conc = [int(x) for x in a.concurrency.split(",")]
    runs = sweep(a.target, {"eagle3": a.eagle3, "peagle": a.peagle}, prompt_ids, ks, conc, a.max_tokens)
    for r in runs:
        r["prompt_set"] = a.prompts.rsplit("/", 1)[-1]
        r.pop("drafter_inputs_example", None)
    doc = results.make_results("vllm", runs, model={"target": a.target, "eagle3": a.eagle3, "peagle": a.peagle},
                               notes="vLLM offline engine in-process (enforce_eager, fp32) on this machine's CPU; "
                                     "concurrency = closed-loop groups of requests; written by "
                                     "python -m peagle_nb.serving.sweep")
    results.write_results(a.out, doc)
    print("wrote", a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
