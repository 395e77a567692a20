"""Does ``torch.compile`` speed up the lean engine's CPU step? Measured, with its compile time (notebook 01).

The eager step of the lean target over a growing cache is timed against the same forward wrapped in
``torch.compile``, both decoding the same tokens one position at a time (a plain-decoding step, T=1). The
first compiled call's time (tracing and code generation) is reported apart from the per-step median. On a
CPU the PyTorch path reads the attention extent on the host once per forward (no graph), so a compiled
forward breaks its graph there and specialises on the cache length: a new length, a new compilation.

``python -m peagle_nb.engine.lean.compile_check --out data/results/engine_cpu_compile.json``
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch


def measure(target, steps: int = 24, start: int = 64, threads: int | None = None) -> dict:
    """Eager vs compiled plain-decoding steps of the lean target (CPU): per-step median/p10/p90 and compile time."""
    from peagle_nb.engine.lean.forward import LeanTarget

    if threads:
        torch.set_num_threads(threads)
    lean = LeanTarget(target)
    out = {}
    for name in ("eager", "compiled"):
        cache = lean.new_cache()
        fwd = lean.forward if name == "eager" else torch.compile(lean.forward, dynamic=False)
        ids = torch.tensor([5])
        times = []
        first_ms = None
        with torch.inference_mode():
            for i in range(steps):
                pos = torch.tensor([start + i])
                t0 = time.perf_counter()
                fwd(ids, pos, pos, cache)
                ms = (time.perf_counter() - t0) * 1e3
                if i == 0:
                    first_ms = ms
                else:
                    times.append(ms)
        q = statistics.quantiles(times, n=10)
        out[name] = {"first_call_ms": first_ms, "step_ms_median": statistics.median(times), "step_ms_p10": q[0],
                     "step_ms_p90": q[-1], "steps_timed": len(times), "step_ms": times}
    out["compiled_over_eager"] = out["compiled"]["step_ms_median"] / out["eager"]["step_ms_median"]
    out["verdict"] = "compile helps" if out["compiled"]["step_ms_p90"] < out["eager"]["step_ms_p10"] else (
        "compile hurts" if out["compiled"]["step_ms_p10"] > out["eager"]["step_ms_p90"] else "tie")
    return out


def main(argv=None) -> int:
    from peagle_nb import paths, results
    from peagle_nb.models.target import load_target

    p = argparse.ArgumentParser(prog="python -m peagle_nb.engine.lean.compile_check")
    p.add_argument("--out", default=None, help="results file (default: print only)")
    p.add_argument("--steps", type=int, default=24)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args(argv)
    target, _ = load_target(paths.models_dir() / "tiny-target")
    rec = measure(target, a.steps, threads=a.threads)
    print({k: (v if not isinstance(v, dict) else {kk: vv for kk, vv in v.items() if kk != "step_ms"})
           for k, v in rec.items()})
    if a.out:
        doc = results.make_results("engine", [{"method": "none", "k": 0, "measures": "torch.compile", **rec}],
                                   notes=f"lean target, plain decoding steps T=1 at positions 64.., {a.threads} torch "
                                         "threads, eager vs torch.compile(dynamic=False); first call (compile) "
                                         "reported apart")
        results.write_results(a.out, doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
