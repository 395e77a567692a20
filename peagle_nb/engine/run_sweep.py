"""The engine sweep that fills ``data/results/engine_{cpu,h200}.json``: none / EAGLE-3 / P-EAGLE over K on
both held-out prompt sets (batch 1, greedy), plus drafting cost vs K measured in isolation.

``peagle-nb eval --sweep`` calls :func:`run`; on a machine without the CLI's extras (the GPU box) run
``python -m peagle_nb.engine.run_sweep --device cuda --out engine_h200.json``. Explained in notebook 03.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path


def isolated_summary(cost: list[dict]) -> dict:
    """Per method: drafting ms at K=1, 8 and the largest K, and their ratios to K=1 (P-EAGLE ~1, EAGLE-3 ~K)."""
    out = {}
    for m in sorted({r["method"] for r in cost}):
        by_k = {r["k"]: r["draft_ms"] for r in cost if r["method"] == m}
        k0, kmax = min(by_k), max(by_k)
        s = {f"draft_ms_k{k0}": by_k[k0]}
        for k in sorted({8, kmax} & set(by_k)):
            s[f"draft_ms_k{k}"] = by_k[k]
            s[f"draft_cost_ratio_k{k}_vs_k{k0}"] = by_k[k] / by_k[k0]
        out[m] = s
    return out


def run(target, tokenizer, heads: dict, prompt_sets: dict, ks, max_new_tokens: int, out: Path,
        cost_reps: int = 30, log=print, budget_s: float | None = None, repeats: int = 1) -> dict:
    from peagle_nb.engine.bench import draft_cost_vs_k
    from peagle_nb.engine.evaluate import encode_prompts, sweep_to_results
    from peagle_nb.results import write_results

    import time

    deadline = time.monotonic() + budget_s if budget_s else None
    first = encode_prompts(tokenizer, [next(iter(prompt_sets.values()))[0]])[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # K past the trained depth is part of the sweep
        cost = [row for m, h in heads.items() for row in draft_cost_vs_k(target, h, m, first, ks, reps=cost_reps)]
        doc = sweep_to_results(
            target, tokenizer, heads, prompt_sets, ks, max_new_tokens, draft_cost=cost, deadline=deadline, repeats=repeats,
            progress=lambda r: log(f"  {r['prompt_set']:>6} {r['method']:>6} k={r['k']:<2} tau={r['tau']:.2f} "
                                   f"tok/s={r['tokens_per_s']:.1f} draft={r['draft_ms_per_step']:.2f}ms "
                                   f"verify={r['verify_ms_per_step']:.2f}ms lossless={r['lossless']}"))
    doc["isolated_draft_cost"] = isolated_summary(cost)  # one steady-state drafting step, median of cost_reps
    write_results(out, doc)
    return doc


def main(argv=None) -> int:
    import torch

    from peagle_nb import paths
    from peagle_nb.prompts import load_prompts
    from peagle_nb.models.heads import load_head
    from peagle_nb.models.target import load_target

    p = argparse.ArgumentParser(prog="python -m peagle_nb.engine.run_sweep")
    p.add_argument("--device", default="cpu")
    p.add_argument("--out", required=True)
    p.add_argument("--models-dir", default=None)
    p.add_argument("--prompts", nargs="+", default=None, help="JSONL files (default: both held-out sets)")
    p.add_argument("--limit", type=int, default=12)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--ks", default="1-10")
    p.add_argument("--cost-reps", type=int, default=30)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=1, help="time each prompt N times, keep the fastest")
    p.add_argument("--budget-s", type=float, default=None, help="start no new configuration after this many seconds")
    a = p.parse_args(argv)
    if a.device == "cpu":
        torch.set_num_threads(a.threads)
    ks = (list(range(int(a.ks.split("-")[0]), int(a.ks.split("-")[1]) + 1)) if "-" in a.ks
          else [int(x) for x in a.ks.split(",")])
    models = Path(a.models_dir) if a.models_dir else paths.models_dir()
    files = a.prompts or [paths.prompts_dir() / "prose.jsonl", paths.prompts_dir() / "code.jsonl"]
    target, tok = load_target(models / "tiny-target", device=a.device)
    heads = {m: load_head(models / f"tiny-{m}", device=a.device) for m in ("eagle3", "peagle")}
    sets = {Path(f).stem: load_prompts(f, a.limit) for f in files}
    doc = run(target, tok, heads, sets, ks, a.max_new_tokens, Path(a.out), a.cost_reps,
              log=lambda s: print(s, file=sys.stderr, flush=True), budget_s=a.budget_s, repeats=a.repeats)
    import json

    print(json.dumps(doc["summary"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
