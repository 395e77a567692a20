"""Does ``torch.compile`` speed up the lean engine's CPU step? Measured, with its compile time (notebook 01).

The eager step of the lean target over a growing cache is timed against the same forward wrapped in
``torch.compile``, both decoding the same tokens one position at a time (a plain-decoding step, T=1). The
first compiled call's time (tracing and code generation) is reported apart from the per-step median. On a
CPU the PyTorch path reads the attention extent on the host once per forward (no graph), so a compiled
forward breaks its graph there and specialises on the cache length: a new length, a new compilation.

``python -m peagle_nb.lab.benchmarks.compile_check --out data/results/torch_compile_cpu.json``
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch


VARIANTS = {"eager": None, "compiled_static": False, "compiled_dynamic": True}  # name -> torch.compile dynamic=


def measure(target, steps: int = 24, start: int = 64, threads: int | None = None, passes: int = 3) -> dict:
    """Eager vs compiled plain-decoding steps of the lean target (CPU). Each variant decodes the same positions
    ``passes`` times: pass 1 pays for compilation (its first call reported apart), passes 2.. are the steady
    state (median/p10/p90 over their steps). ``compiled_static`` specialises on every cache length (a new
    length, a new graph, until dynamo's cache limit sends it back to eager); ``compiled_dynamic`` compiles once
    with symbolic lengths."""
    from peagle_nb.engine.lean.forward import LeanTarget

    if passes < 2:
        raise ValueError(f"passes must be >= 2 (pass 1 compiles), got {passes}")
    if threads:
        torch.set_num_threads(threads)
    import torch._inductor.config as inductor_config

    inductor_config.force_disable_caches = True  # a cold compile, what a first run pays (no on-disk cache hits)
    lean = LeanTarget(target)
    out = {}
    for name, dynamic in VARIANTS.items():
        torch._dynamo.reset()
        fwd = lean.forward if dynamic is None else torch.compile(lean.forward, dynamic=dynamic)
        ids = torch.tensor([5])
        per_pass = []
        with torch.inference_mode():
            for _ in range(passes):
                cache = lean.new_cache()
                times = []
                for i in range(steps):
                    pos = torch.tensor([start + i])
                    t0 = time.perf_counter()
                    fwd(ids, pos, pos, cache)
                    times.append((time.perf_counter() - t0) * 1e3)
                per_pass.append(times)
        steady = [t for times in per_pass[1:] for t in times]
        q = statistics.quantiles(steady, n=10)
        out[name] = {"first_call_ms": per_pass[0][0], "first_pass_ms": sum(per_pass[0]),
                     "step_ms_median": statistics.median(steady), "step_ms_p10": q[0], "step_ms_p90": q[-1],
                     "steps_timed": len(steady), "step_ms": per_pass}
    eager = out["eager"]
    for name in VARIANTS:
        if name == "eager":
            continue
        c = out[name]
        c["over_eager"] = c["step_ms_median"] / eager["step_ms_median"]
        c["verdict"] = "compile helps" if c["step_ms_p90"] < eager["step_ms_p10"] else (
            "compile hurts" if c["step_ms_p10"] > eager["step_ms_p90"] else "tie")
    return out


def main(argv=None) -> int:
    from peagle_nb.files import paths, results
    from peagle_nb.models.target import load_target

    p = argparse.ArgumentParser(prog="python -m peagle_nb.lab.benchmarks.compile_check")
    p.add_argument("--out", default=None, help="results file (default: print only)")
    p.add_argument("--steps", type=int, default=24)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--passes", type=int, default=3, help="passes over the same positions (pass 1 compiles)")
    a = p.parse_args(argv)
    target, _ = load_target(paths.models_dir() / "tiny-target")
    rec = measure(target, a.steps, threads=a.threads, passes=a.passes)
    print({k: (v if not isinstance(v, dict) else {kk: vv for kk, vv in v.items() if kk != "step_ms"})
           for k, v in rec.items()})
    if a.out:
        doc = results.make_results("engine", [{"method": "none", "k": 0, "measures": "torch.compile", **rec}],
                                   notes=f"lean target, plain decoding steps T=1 at positions 64.., {a.threads} torch "
                                         f"threads, eager vs torch.compile(dynamic=False / True), {a.passes} passes "
                                         "over the same positions; pass 1 (compilation) reported apart")
        results.write_results(a.out, doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
