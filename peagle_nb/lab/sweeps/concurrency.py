"""Throughput against concurrency, measured on the suite's own models with the batched lean engine.

    python -m peagle_nb.lab.sweeps.concurrency --device cuda --out data/results/concurrency/concurrency_h200.json
    python -m peagle_nb.lab.sweeps.concurrency --device cpu --concurrency 1 2 4 --ks 3 7 --max-new-tokens 48 \\
        --sweeps 3 --out data/results/concurrency/concurrency_cpu.json

For every sweep (independent repeats), concurrency c, method (plain, EAGLE-3, P-EAGLE), K and temperature (greedy
and T=1): c held-out prompts (prose, code and Japanese in turn) decoded together by ``BatchLeanDecoder`` (one
decoder per (c, method, K), warmed by one generation first), and per run: output tokens per second over the whole
batch (prefills included), time per output token (decode time over the tokens after the first, per request,
median), the prefill time, the acceptance length τ. A batch-1 check times the same prompts one at a time through
``LeanDecoder`` and through ``BatchLeanDecoder`` at c = 1 (the batched path must not slow batch 1 down).

The summary (recomputable from the runs by ``summarize``): per concurrency and temperature, each method's best K by
median tokens/s, P-EAGLE / EAGLE-3 at each one's best K over sweeps with its verdict (a ratio whose sweeps
straddle 1 is a tie), plain decoding's throughput relative to c = 1. Notebook 07 reads it.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from peagle_nb.engine.evaluate import ratio_verdict
from peagle_nb.engine.lean import BatchLeanDecoder, LeanDecoder
from peagle_nb.files import paths
from peagle_nb.files.results import make_results, read_results, write_results
from peagle_nb.models.checksums import weights_sha256
from peagle_nb.analysis import repetition
from peagle_nb.text.prompts import load_prompts

SETS = ("prose", "code", "ja")


def concurrency_prompts(tokenizer, c: int) -> list[list[int]]:
    """The first c held-out prompts taken from the three sets in turn (prose, code, ja, prose, ...)."""
    per_set = {name: load_prompts(paths.prompts_dir() / f"{name}.jsonl") for name in SETS}
    texts = [per_set[SETS[i % 3]][i // 3] for i in range(c)]
    return [tokenizer(t)["input_ids"] for t in texts]


def _run_record(batch, prompts, c: int, method: str, k: int, temperature: float, sweep: int,
                max_new_tokens: int) -> dict:
    steps = [s for r in batch.results for s in r.steps]
    # tau on fresh text: steps whose first drafted position lies inside a repeated 8-gram are loop copying
    drafting = repetition.drafting_report((p, r.tokens, r.steps) for p, r in zip(prompts, batch.results))
    decode_ms = batch.total_ms - batch.prefill_ms
    tpot = [decode_ms / max(1, len(r.tokens) - 1) for r in batch.results]
    return {"method": method, "k": k, "concurrency": c, "bucket": batch.bucket, "temperature": temperature,
            "sweep": sweep, "max_new_tokens": max_new_tokens, "new_tokens": batch.new_tokens,
            "total_ms": round(batch.total_ms, 3), "prefill_ms": round(batch.prefill_ms, 3),
            "tokens_per_s": round(batch.tokens_per_s, 3), "tpot_ms": round(statistics.median(tpot), 4),
            "steps": len(batch.step_wall_ms), "step_wall_ms_p50": round(statistics.median(batch.step_wall_ms), 4),
            # the step model's inputs (peagle_nb.compare.step_model.fit_step_cost): a batch step's phases, median
            "draft_ms_per_step": round(statistics.median(batch.step_draft_ms), 4) if method != "none" else None,
            "verify_ms_per_step": round(statistics.median(batch.step_verify_ms), 4),
            "tau": round(sum(s.accepted + 1 for s in steps) / len(steps), 4) if steps else None,
            "repetition_fraction": round(drafting["repetition_fraction"], 4),
            "tau_fresh": (round(drafting["fresh"]["tau"], 4)
                          if method != "none" and drafting["fresh"]["tau"] == drafting["fresh"]["tau"] else None),
            "accepted_per_request": [sum(s.accepted for s in r.steps) for r in batch.results]}


def sweep_concurrency(target, tokenizer, heads: dict, concurrency, ks, temperatures, max_new_tokens: int,
                      sweeps: int, log=print) -> list[dict]:
    """Every (sweep, c, method, K, T) run as a record (see the module docstring)."""
    runs = []
    configs = [("none", 0)] + [(m, k) for m in ("eagle3", "peagle") if m in heads for k in ks]
    for c in concurrency:
        prompts = concurrency_prompts(tokenizer, c)
        for method, k in configs:
            dec = BatchLeanDecoder(target, tokenizer, heads.get(method), method, max(k, 1), max_batch=c)
            for temperature in temperatures:
                dec.generate(prompts, 4, temperature, seeds=list(range(c)))  # warm-up (graph capture on a GPU)
                for sweep in range(sweeps):
                    seeds = [1000 * sweep + i for i in range(c)]
                    batch = dec.generate(prompts, max_new_tokens, temperature, seeds)
                    runs.append(_run_record(batch, prompts, c, method, k, temperature, sweep, max_new_tokens))
                log(f"c={c:3d} {method:6s} K={k:2d} T={temperature:g}: " + ", ".join(
                    f"{r['tokens_per_s']:.0f}" for r in runs[-sweeps:]) + " tok/s")
    return runs


def batch_one_check(target, tokenizer, heads: dict, k: int, max_new_tokens: int, repeats: int) -> list[dict]:
    """The same prompts one at a time through ``LeanDecoder`` and ``BatchLeanDecoder`` at c = 1: tokens/s of each
    (median of ``repeats``) and their ratio, greedy, per method."""
    prompts = concurrency_prompts(tokenizer, 3)
    out = []
    for method in ("none", *[m for m in ("eagle3", "peagle") if m in heads]):
        kk = k if method != "none" else 1
        single = LeanDecoder(target, tokenizer, heads.get(method), method, kk)
        batched = BatchLeanDecoder(target, tokenizer, heads.get(method), method, kk, max_batch=1)
        rates: dict[str, list[float]] = {"single": [], "batched": []}
        for p in prompts:  # warm-up: graph capture and every prompt length
            single.generate(p, 4)
            batched.generate([p], 4)
        for _ in range(repeats):
            for name, run in (("single", lambda p: single.generate(p, max_new_tokens)),
                              ("batched", lambda p: batched.generate([p], max_new_tokens).results[0])):
                t0 = time.perf_counter()
                toks = sum(len(run(p).tokens) for p in prompts)
                rates[name].append(toks / (time.perf_counter() - t0))
        med = {n: statistics.median(v) for n, v in rates.items()}
        out.append({"method": method, "k": kk if method != "none" else 0, "single_tokens_per_s": rates["single"],
                    "batched_tokens_per_s": rates["batched"], "batched_over_single": med["batched"] / med["single"]})
    return out


def vllm_beside(target_dir: Path, head_dirs: dict, tokenizer, target, heads: dict, ks: dict, concurrency,
                max_new_tokens: int, repeats: int, log=print) -> list[dict]:
    """The same prompts (the first ``max(concurrency)`` of ``concurrency_prompts``) in groups of c through vLLM's
    offline engine and through ``BatchLeanDecoder``, greedy, every request ``max_new_tokens`` long: tokens/s of
    each (best of ``repeats``, every repeat kept) and whether the two engines' tokens are equal."""
    from peagle_nb.lab.sweeps.vllm_sweep import measure_config

    prompts = concurrency_prompts(tokenizer, max(concurrency))
    rows = []
    for method, k in [("none", 0)] + sorted(ks.items()):
        head_dir = head_dirs.get(method)
        vruns, vouts = measure_config(str(target_dir), method, None if head_dir is None else str(head_dir), k,
                                      prompts, list(concurrency), max_new_tokens, count_passes=False,
                                      repeats=repeats)
        for run in vruns:
            c = run["concurrency"]
            dec = BatchLeanDecoder(target, tokenizer, heads.get(method), method, max(k, 1), max_batch=c)
            groups = [prompts[i:i + c] for i in range(0, len(prompts), c)]
            for g in groups:
                dec.generate(g, 4)  # warm-up
            rates, tokens = [], None
            for _ in range(repeats):
                t0 = time.perf_counter()
                outs = [r.tokens for g in groups for r in dec.generate(g, max_new_tokens).results]
                rates.append(sum(map(len, outs)) / (time.perf_counter() - t0))
                tokens = tokens or outs
            rows.append({"method": method, "k": k, "concurrency": c, "vllm_tokens_per_s": run["tokens_per_s"],
                         "vllm_wall_s_repeats": run.get("wall_s_repeats"), "vllm_tau": run.get("tau"),
                         "lean_tokens_per_s": max(rates), "lean_tokens_per_s_repeats": rates,
                         "tokens_equal": tokens == vouts})
            log(f"vLLM beside: {method} K={k} c={c}: vLLM {run['tokens_per_s']:.0f} tok/s, lean {max(rates):.0f} "
                f"tok/s, tokens equal {tokens == vouts}")
    return rows


def summarize(runs: list[dict]) -> dict:
    """Per concurrency and temperature: best K per method (median tokens/s over sweeps), P-EAGLE / EAGLE-3 at each
    one's best K in every sweep with its verdict, and plain decoding's throughput relative to c = 1."""
    out: dict = {}
    sweeps = sorted({r["sweep"] for r in runs})
    for c in sorted({r["concurrency"] for r in runs}):
        for t in sorted({r["temperature"] for r in runs}):
            rs = [r for r in runs if r["concurrency"] == c and r["temperature"] == t]
            cell: dict = {}
            for method in ("none", "eagle3", "peagle"):
                by_k: dict[int, list[float]] = {}
                for r in rs:
                    if r["method"] == method:
                        by_k.setdefault(r["k"], []).append(r["tokens_per_s"])
                if by_k:
                    best = max(by_k, key=lambda k: statistics.median(by_k[k]))
                    cell[method] = {"best_k": best, "tokens_per_s": statistics.median(by_k[best]),
                                    "tokens_per_s_sweeps": by_k[best]}
            if "eagle3" in cell and "peagle" in cell:
                ratios = []
                for s in sweeps:
                    pe = max(r["tokens_per_s"] for r in rs if r["method"] == "peagle" and r["sweep"] == s)
                    e3 = max(r["tokens_per_s"] for r in rs if r["method"] == "eagle3" and r["sweep"] == s)
                    ratios.append(pe / e3)
                cell["peagle_over_eagle3"] = {"sweeps": ratios, "median": statistics.median(ratios),
                                              "verdict": ratio_verdict(ratios)}
            out[f"c{c}.T{t:g}"] = cell
    for t in sorted({r["temperature"] for r in runs}):
        base = out.get(f"c{min(r['concurrency'] for r in runs)}.T{t:g}", {}).get("none")
        for key, cell in out.items():
            if key.endswith(f".T{t:g}") and base and "none" in cell:
                cell["none"]["over_c1"] = cell["none"]["tokens_per_s"] / base["tokens_per_s"]
    return out


def check_recomputes(doc: dict) -> None:
    """The stored summary is what ``summarize`` computes from the stored runs."""
    if summarize(doc["runs"]) != doc["summary"]:
        raise ValueError("the concurrency summary does not recompute from its runs")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 64])
    ap.add_argument("--ks", type=int, nargs="+", default=[1, 3, 5, 7])
    ap.add_argument("--temperatures", type=float, nargs="+", default=[0.0, 1.0])
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--sweeps", type=int, default=3)
    ap.add_argument("--batch-one-repeats", type=int, default=5)
    ap.add_argument("--target", type=Path, default=None, help="default data/models/tiny-target")
    ap.add_argument("--heads", nargs=2, type=Path, default=None, metavar=("EAGLE3_DIR", "PEAGLE_DIR"))
    ap.add_argument("--threads", type=int, default=None, help="CPU threads (default: torch's)")
    ap.add_argument("--vllm", action="store_true",
                    help="also the same prompts through vLLM's offline engine beside the lean engine (CPU build)")
    ap.add_argument("--vllm-concurrency", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--vllm-ks", nargs=2, type=int, default=[3, 7], metavar=("EAGLE3_K", "PEAGLE_K"))
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    from peagle_nb.models.heads import load_head
    from peagle_nb.models.target import load_target

    if args.threads:
        torch.set_num_threads(args.threads)
    target, tok = load_target(args.target or paths.models_dir() / "tiny-target", device=args.device)
    e3, pe = args.heads or (paths.models_dir() / "tiny-eagle3", paths.models_dir() / "tiny-peagle")
    heads = {"eagle3": load_head(e3, device=args.device), "peagle": load_head(pe, device=args.device)}
    t0 = time.perf_counter()
    runs = sweep_concurrency(target, tok, heads, args.concurrency, args.ks, args.temperatures, args.max_new_tokens,
                             args.sweeps)
    check = batch_one_check(target, tok, heads, max(args.ks), args.max_new_tokens, args.batch_one_repeats)
    folders = {"target": args.target or paths.models_dir() / "tiny-target", "eagle3": e3, "peagle": pe}
    doc = make_results("engine", runs, model={"target": str(args.target or "data/models/tiny-target"),
                                             "heads": {"eagle3": str(e3), "peagle": str(pe)},
                                             "weights_sha256": {n: weights_sha256(f) for n, f in folders.items()}},
                       notes=f"batched lean engine, held-out prompts (prose, code, ja in turn), {args.sweeps} sweeps; "
                             f"{time.perf_counter() - t0:.0f} s")
    doc["summary"] = summarize(runs)
    doc["batch_one"] = check
    if args.vllm:
        doc["vllm_beside"] = vllm_beside(args.target or paths.models_dir() / "tiny-target",
                                         {"eagle3": e3, "peagle": pe}, tok, target, heads,
                                         dict(zip(("eagle3", "peagle"), args.vllm_ks)), args.vllm_concurrency,
                                         args.max_new_tokens, 3)
    write_results(args.out, doc)
    check_recomputes(read_results(args.out))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
