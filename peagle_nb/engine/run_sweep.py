"""The engine sweep that fills ``data/results/engine_{cpu,h200}.json``. Explained in notebooks 01 and 03.

One run records, on one machine and in one process:

- ``equality``: the lean engine against the reference engine on the held-out prompts (same tokens, same
  accepted count at every step; greedy and seeded sampling; none / EAGLE-3 / P-EAGLE at several K);
- ``runs``: none / EAGLE-3 / P-EAGLE over K on both held-out sets (batch 1), each configuration timed
  ``--repeats`` times per sweep, ``--sweeps`` independent sweeps (lean engine);
- ``engines``: plain decoding with the lean and the reference engine side by side, interleaved;
- ``phases``: each step phase timed alone (a GPU's graph replay: device time only), per configuration, and the
  ``target_step_floor_ms`` (one plain step's graphs, replayed back to back);
- ``builder_comparison``: P-EAGLE's phases with the fused input builder and with an eager op chain;
- ``profile``: per-kernel device time of one plain and one P-EAGLE step (GPU only);
- ``summary``: best K per method and the P-EAGLE / EAGLE-3 ratio over sweeps (min / median / max).

``peagle-nb eval --sweep`` calls :func:`run`; on a machine without the CLI's extras (the GPU box):
``python -m peagle_nb.engine.run_sweep --device cuda --out engine_h200.json``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path


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


def profile_steps(target, tokenizer, head, prompt, k: int = 7, steps: int = 3) -> dict:
    """Per-kernel device time (torch.profiler) of plain decoding and P-EAGLE steps run eagerly (no graphs, so
    each kernel is attributed): the top kernels by device time, for each."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from peagle_nb.engine.lean import LeanDecoder

    out = {}
    for name, dec in (("plain", LeanDecoder(target, tokenizer, use_graphs=False)),
                      (f"peagle_k{k}", LeanDecoder(target, tokenizer, head, "peagle", k, use_graphs=False))):
        dec.generate(prompt, 8)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            res = dec.generate(prompt, steps + 1)
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


def phases(decoders: dict, prompt_ids: list[int]) -> list[dict]:
    """``LeanDecoder.phase_ms`` of every configuration, after a short greedy generation set up its state."""
    rows = []
    for (method, k), dec in decoders.items():
        dec.generate(prompt_ids, 16)
        ph = dec.phase_ms()
        rows.append({"method": method, "k": k if method != "none" else 0, **{f"{n}_ms": v for n, v in ph.items()},
                     "step_device_ms": sum(ph.values())})
    return rows


def builder_comparison(target, tokenizer, head, prompt_ids: list[int], ks=(3, 7)) -> list[dict]:
    """P-EAGLE's step phases with the fused input builder and with vLLM's earlier chain of eager ops: what share
    of a step building the drafter's batch takes (notebook 04)."""
    from peagle_nb.engine.lean import LeanDecoder

    rows = []
    for k in ks:
        for builder in ("fused", "eager"):
            dec = LeanDecoder(target, tokenizer, head, "peagle", k, builder=builder)
            dec.generate(prompt_ids, 16)
            ph = dec.phase_ms()
            rows.append({"method": "peagle", "k": k, "builder": builder, **{f"{n}_ms": v for n, v in ph.items()},
                         "step_device_ms": sum(ph.values()), "build_share": ph["build"] / sum(ph.values())})
    return rows


def run(target, tokenizer, heads: dict, prompt_sets: dict, ks, max_new_tokens: int, out: Path, log=print,
        budget_s: float | None = None, repeats: int = 3, sweeps: int = 3, temperature: float = 0.0,
        equal_prompts: int = 4, side_by_side_repeats: int = 3, profile: bool = True,
        kernel_shapes: dict | None = None) -> dict:

    from peagle_nb.engine.evaluate import make_decoder, sweep_to_results
    from peagle_nb.results import write_results

    deadline = time.monotonic() + budget_s if budget_s else None
    on_gpu = next(target.parameters()).device.type == "cuda"
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # K past the trained depth is part of the sweep
        equality = (check_equal(target, tokenizer, heads, prompt_sets, n_prompts=equal_prompts) if equal_prompts
                    else None)
        log(f"equality lean == reference: {equality and equality['all_equal']} ({time.perf_counter() - t0:.0f} s)")
        first_set = next(iter(prompt_sets.values()))
        engines = engines_side_by_side(target, tokenizer, first_set, max_new_tokens, side_by_side_repeats)
        log(f"plain decoding lean / reference: {engines['lean_over_reference']['median']:.2f}x")
        decs = {("none", 1): make_decoder("lean", target, tokenizer)}
        for m, h in heads.items():
            for k in ks:
                decs[(m, k)] = make_decoder("lean", target, tokenizer, h, m, k)
        doc = sweep_to_results(
            target, tokenizer, heads, prompt_sets, ks, max_new_tokens, deadline=deadline, repeats=repeats,
            sweeps=sweeps, temperature=temperature, decoders=decs,
            progress=lambda r: log(f"  s{r['sweep']} {r['prompt_set']:>6} {r['method']:>6} k={r['k']:<2} "
                                   f"tau={r['tau']:.2f} tok/s={r['tokens_per_s']:.0f} [{r['tokens_per_s_p10']:.0f}"
                                   f"-{r['tokens_per_s_p90']:.0f}] draft={r['draft_ms_per_step']:.3f} "
                                   f"verify={r['verify_ms_per_step']:.3f} book={r['bookkeeping_ms_per_step']:.3f}ms "
                                   f"lossless={r['lossless']}"))
        p0 = tokenizer(first_set[0])["input_ids"]
        doc["phases"] = phases(decs, p0)
        doc["target_step_floor_ms"] = doc["phases"][0]["plain_ms"]
        doc["builder_comparison"] = builder_comparison(target, tokenizer, heads["peagle"], p0,
                                                       [k for k in (3, 7) if k in ks] or [max(ks)])
        if on_gpu and profile:
            doc["profile"] = profile_steps(target, tokenizer, heads["peagle"], p0)
    doc["equality"] = equality
    if kernel_shapes:
        doc["kernel_shapes"] = kernel_shapes
    doc["engines"] = engines
    doc["run_seconds"] = round(time.perf_counter() - t0, 1)
    if on_gpu:
        doc["notes"] += ("; GPU: every step phase captured once as a CUDA graph (capture_ms, never in tokens/s); "
                         "draft/verify ms are device time from CUDA events, bookkeeping the rest of the step's wall "
                         "time; phases: each phase's graph replayed alone (device time only)")
    write_results(out, doc)
    return doc


def main(argv=None) -> int:
    import torch

    from peagle_nb import paths
    from peagle_nb.models.heads import load_head
    from peagle_nb.models.target import load_target
    from peagle_nb.prompts import load_prompts

    p = argparse.ArgumentParser(prog="python -m peagle_nb.engine.run_sweep")
    p.add_argument("--device", default="cpu")
    p.add_argument("--out", required=True)
    p.add_argument("--models-dir", default=None)
    p.add_argument("--prompts", nargs="+", default=None, help="JSONL files (default: both held-out sets)")
    p.add_argument("--limit", type=int, default=12)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--ks", default="1-10")
    p.add_argument("--threads", type=int, default=2, help="CPU threads for torch (both engines)")
    p.add_argument("--repeats", type=int, default=3, help="timed passes over each prompt set per configuration")
    p.add_argument("--sweeps", type=int, default=3, help="independent sweeps (the spread of best-K ratios)")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--equal-prompts", type=int, default=4, help="prompts per set for the lean == reference check")
    p.add_argument("--no-profile", action="store_true")
    p.add_argument("--kernel-shapes", default=None,
                   help="JSON from `python -m peagle_kernels.decode_layer FILE` (a launch-shape sweep on this GPU): "
                        "use its chosen shapes and record them")
    p.add_argument("--budget-s", type=float, default=None, help="start no new configuration after this many seconds")
    a = p.parse_args(argv)
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
    target, tok = load_target(models / "tiny-target", device=a.device)
    heads = {m: load_head(models / f"tiny-{m}", device=a.device) for m in ("eagle3", "peagle")}
    sets = {Path(f).stem: load_prompts(f, a.limit) for f in files}
    doc = run(target, tok, heads, sets, ks, a.max_new_tokens, Path(a.out),
              log=lambda s: print(s, file=sys.stderr, flush=True), budget_s=a.budget_s, repeats=a.repeats,
              sweeps=a.sweeps, temperature=a.temperature, equal_prompts=a.equal_prompts, profile=not a.no_profile,
              kernel_shapes=shapes)
    import json

    print(json.dumps({k: doc[k] for k in ("summary", "target_step_floor_ms", "run_seconds")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
