"""Benchmark and verify the parallel-drafting kernels on one device; write ``data/results/kernels_<device>.json``.

One call measures everything notebook 04 and the kernels' performance goals need, in one process (one GPU
at a time): the correctness of each Triton kernel against its PyTorch reference on this device, the
empty-kernel launch floor (and, timed alternately with it, chains of dependent loads and each fused kernel's
time), time per call over batch sizes and K for the Triton kernel (the input builder
both with vLLM's ``seq_lens`` and with positions from ``target_positions``), the eager op chain (as vLLM
did before fusion) and the reference, the hidden-state expansion's bandwidth beside a measured
device-to-device copy, and a small block-shape sweep for it. ``summarize`` turns a results document
into the headline figures. Used by ``peagle-nb kernels-bench``; explained in notebook 04.

On a CPU it runs under Triton's interpreter (``TRITON_INTERPRET=1`` must be set before triton is
first imported); only tiny sizes make sense there, as a dry run of the GPU call.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

GPU_BATCH_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
GPU_KS = (3, 7, 10)
HIDDEN_SIZE = 2880  # GPT-OSS-20B, the model of the published P-EAGLE speedups
# summary name, kernel, variant: time over the launch floor (the goal for the input builder and verification:
# within ~2x of an empty launch up to batch 256)
FLOOR_RATIOS = (("greedy_verify", "greedy_verify", "triton"), ("draft_inputs", "draft_inputs", "triton"),
                ("draft_inputs_positions", "draft_inputs", "triton_positions"),
                ("draft_inputs_loop", "draft_inputs", "triton_loop"))
EXPAND_BLOCKS = ((1, 1024, 4), (2, 1024, 4), (4, 1024, 4), (8, 1024, 8), (4, 512, 4), (2, 2048, 8), (16, 256, 4))


def _correctness(device: str, smoke: bool) -> list[dict[str, Any]]:
    """Triton vs reference on random ragged batches and edge cases, on ``device`` (draft_inputs: with and
    without seq_lens, see ``check_correctness``)."""
    import torch

    from peagle_kernels import draft_inputs as di
    from peagle_kernels import greedy_verify as gv
    from peagle_kernels import hidden_expand as he

    rows = []
    batch_sizes, ks = ((1, 7), (1, 3, 7)) if smoke else ((1, 7, 512), (1, 3, 7, 10))
    cases = [("ragged", dict(decode=False)), ("all_rejected", dict(rejected="all")),
             ("none_rejected", dict(rejected="none")), ("max_model_len", dict(near_max_len=True, max_model_len=128)),
             ("empty_requests", dict(empty_every=3))]
    worst = {"greedy_verify": 0, "draft_inputs": 0, "hidden_expand": 0.0}
    n = 0
    for K in ks:
        for B in batch_sizes:
            worst["greedy_verify"] = max(worst["greedy_verify"], gv.check_correctness(B, K, device, seed=B + K))
            for name, kw in cases:
                worst["draft_inputs"] = max(worst["draft_inputs"], di.check_correctness(B, K, device, seed=n, **kw))
                n += 1
            worst["hidden_expand"] = max(worst["hidden_expand"], he.check_correctness(
                B, K, 64 if smoke else HIDDEN_SIZE, device, torch.bfloat16, seed=B * K, decode=False))
    for kernel, value in worst.items():
        rows.append({"kernel": kernel, "variant": "correctness", "max_abs_diff": value, "n_checks": n})
    return rows


# (tile, rows/thread): up to 1024 rows in one program of 32 warps (fewer, fatter programs at large batches)
DRAFT_INPUTS_SHAPES = ((16, 1), (32, 1), (64, 1), (128, 1), (512, 1), (1024, 1), (64, 2), (128, 2), (128, 4))
GREEDY_VERIFY_TILES = (8, 16, 32, 64)  # requests per program, one per thread


def _worst_case_sweep(kernel: str, shapes, make_call, device: str, batch_sizes, ks) -> tuple[list[dict], Any]:
    """Device time of ``make_call(shape, B, K)`` per launch shape over the decode batches up to B=256, each timed
    alternately with the empty kernel; the best shape is the one whose slowest point, in those floors, is lowest
    (the goal is about the worst case, not the mean)."""
    from peagle_kernels import _common

    rows, worst = [], {}
    for shape in shapes:
        for K in ks:
            for B in [b for b in batch_sizes if b <= 256]:
                us, floor = _common.paired_device_us(make_call(shape, B, K), device)
                rows.append({"kernel": kernel, "variant": "tile_sweep", "shape": list(shape), "batch_size": B, "k": K,
                             "device_us": us, "floor_us": floor})
                worst[shape] = max(worst.get(shape, 0.0), us / floor)
    return rows, min(worst, key=worst.get)


def _draft_inputs_call(shape, B, K, device):
    """The input builder (seq_lens, one pass) on a random decode batch, launched with (tile, rows per thread)."""
    from peagle_kernels import draft_inputs as di

    args, kw = di.random_batch(B, K, device, seed=B + K, with_seq_lens=True)
    return partial(di.build_draft_inputs, *args, **kw, max_query_len=K + 1, use_triton=True, check_values=False,
                   tile=shape[0], elems_per_thread=shape[1])


def _greedy_verify_call(shape, B, K, device):
    """Greedy verification on a random ragged case, launched with ``shape[0]`` requests per program."""
    from peagle_kernels import greedy_verify as gv

    draft, target, nd = gv.random_case(B, K, device, seed=B * 100 + K)
    return partial(gv.greedy_verify, draft, target, nd, use_triton=True, check_values=False, tile=shape[0])


# (chain depth, programs, lanes per program): 256 x 32 lanes like the input builder's programs at B=256, and the
# same 8192 lanes in 8 programs of 32 warps
DEPENDENT_LOADS = ((0, 1, 32), (1, 1, 32), (2, 1, 32), (0, 256, 32), (1, 256, 32), (2, 256, 32), (2, 8, 1024))


def _dependent_loads(device: str) -> list[dict[str, Any]]:
    """Chains of 0-2 dependent loads then a store, each timed alternately with the empty kernel: what a kernel
    whose addresses come from memory must pay beyond the launch. The input builder needs two such rounds
    (``query_start_loc``/``seq_lens``, then tokens and block table); greedy verification needs one."""
    from peagle_kernels import _common

    rows = []
    for depth, programs, lanes in DEPENDENT_LOADS:
        us, floor = _common.paired_device_us(_common.dependent_loads_fn(depth, programs, device, lanes=lanes), device)
        rows.append({"kernel": "dependent_loads", "variant": "chain", "depth": depth, "programs": programs,
                     "lanes": lanes, "device_us": us, "floor_us": floor})
    return rows


def _expand_block_sweep(device: str, B: int, K: int, H: int) -> tuple[list[dict], tuple[int, int, int]]:
    import torch

    from peagle_kernels import hidden_expand as he

    target, mask, src, _, _ = he.random_case(B, K, H, device, torch.bfloat16, seed=1)
    buf = torch.empty(src.shape[0], H, dtype=target.dtype, device=device)
    nbytes = he.bytes_moved(target, src)
    rows = []
    for br, bh, nw in EXPAND_BLOCKS:
        fn = partial(he.expand_hidden, target, mask, src, out=buf, use_triton=True, check_values=False,
                     block_r=br, block_h=bh, num_warps=nw)
        ms = he.flushed_ms(fn, device)
        rows.append({"kernel": "hidden_expand", "variant": "block_sweep", "batch_size": B, "k": K, "hidden_size": H,
                     "block_r": br, "block_h": bh, "num_warps": nw, "flushed_us": ms * 1e3,
                     "achieved_gbs": nbytes / (ms * 1e-3) / 1e9})
    best = max(rows, key=lambda r: r["achieved_gbs"])
    return rows, (best["block_r"], best["block_h"], best["num_warps"])


def run_benchmarks(device: str | None = None, batch_sizes=None, ks=None, hidden_size: int | None = None,
                   smoke: bool = False, log=print) -> list[dict[str, Any]]:
    """All measurements as flat run records (see module docstring)."""
    import torch

    from peagle_kernels import _common, draft_inputs as di, greedy_verify as gv, hidden_expand as he

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    on_gpu = device.startswith("cuda")
    if not on_gpu and not _common.interpreter_active():
        raise RuntimeError("kernel benchmarks on CPU need Triton's interpreter: run with TRITON_INTERPRET=1 "
                           "(set before triton is first imported), e.g. "
                           "`TRITON_INTERPRET=1 peagle-nb kernels-bench --smoke`")
    batch_sizes = tuple(batch_sizes or (GPU_BATCH_SIZES if on_gpu else (1, 4)))
    ks = tuple(ks or (GPU_KS if on_gpu else (3,)))
    H = hidden_size or (HIDDEN_SIZE if on_gpu else 64)
    reps = 30 if on_gpu else 3
    t0 = time.perf_counter()
    runs = _correctness(device, smoke=not on_gpu or smoke)
    diffs = ", ".join(f"{r['kernel']}={r['max_abs_diff']}" for r in runs)
    log(f"[{time.perf_counter() - t0:6.1f}s] correctness (max abs diff vs reference): {diffs}")
    floors = [_common.launch_floor_us(device, reps=reps * 3) for _ in range(3)]
    runs.append({"kernel": "empty", "variant": "launch_floor",
                 "device_us": statistics.median(f["device_us"] for f in floors) if on_gpu else None,
                 "wall_us": statistics.median(f["wall_us"] for f in floors)})
    log(f"[{time.perf_counter() - t0:6.1f}s] launch floor: {runs[-1]}")
    if on_gpu:
        runs += _dependent_loads(device)
        log(f"[{time.perf_counter() - t0:6.1f}s] dependent loads: " + ", ".join(
            f"{r['depth']} x {r['programs']}x{r['lanes']} lanes {r['device_us'] / r['floor_us']:.2f} floors"
            for r in runs if r.get("kernel") == "dependent_loads"))
    gv_tile = tile = ept = None
    if on_gpu:  # launch shapes chosen on this device by the worst case, then used for the rows below
        sweep, (gv_tile,) = _worst_case_sweep("greedy_verify", [(t,) for t in GREEDY_VERIFY_TILES],
                                              partial(_greedy_verify_call, device=device), device, batch_sizes, ks)
        runs += sweep
        log(f"[{time.perf_counter() - t0:6.1f}s] greedy_verify tile sweep: best {gv_tile} requests per program")
    runs += gv.benchmark_greedy_verify(batch_sizes, ks, device=device, reps=reps, tile=gv_tile)
    log(f"[{time.perf_counter() - t0:6.1f}s] greedy_verify done")
    if on_gpu:
        sweep, (tile, ept) = _worst_case_sweep("draft_inputs", DRAFT_INPUTS_SHAPES,
                                               partial(_draft_inputs_call, device=device), device, batch_sizes, ks)
        runs += sweep
        log(f"[{time.perf_counter() - t0:6.1f}s] draft_inputs launch-shape sweep: best tile {tile}, "
            f"{ept} row(s) per thread")
    runs += di.benchmark_draft_inputs(batch_sizes, ks, device=device, reps=reps, tile=tile, elems_per_thread=ept)
    log(f"[{time.perf_counter() - t0:6.1f}s] draft_inputs done")
    block = (4, min(1024, H), 4)
    if on_gpu:
        for mib in (64, 256, 1024):  # the ceiling: a plain device-to-device copy, bytes read + written
            runs.append({"kernel": "copy", "variant": "copy_bandwidth", "bytes": mib * 2**20,
                         "copy_gbs": he.copy_bandwidth_gbs(mib * 2**20, device)})
        log(f"[{time.perf_counter() - t0:6.1f}s] copy bandwidth: " + ", ".join(
            f"{r['bytes'] >> 20} MiB {r['copy_gbs']:.0f} GB/s" for r in runs if r.get("variant") == "copy_bandwidth"))
        sweep, block = _expand_block_sweep(device, max(batch_sizes), max(ks), H)
        runs += sweep
        log(f"[{time.perf_counter() - t0:6.1f}s] hidden_expand block sweep: best {block}")
        runs += he.benchmark_hidden_expand(batch_sizes, ks, H, torch.bfloat16, device, block=block)
    else:
        runs += he.benchmark_hidden_expand(batch_sizes, ks, H, torch.float32, device, block=block)
    log(f"[{time.perf_counter() - t0:6.1f}s] hidden_expand done")
    return runs


def summarize(doc: dict[str, Any], max_floor_batch: int = 256, large_batch: int = 256) -> dict[str, Any]:
    """Headline figures of a kernels results document (computed, never stored, so they cannot go stale)."""
    runs = doc["runs"]
    metric = "device_us" if any(r.get("device_us") for r in runs if r.get("variant") == "triton") else "wall_us"
    floor = next(r for r in runs if r.get("variant") == "launch_floor")[metric]
    out: dict[str, Any] = {"device": doc.get("machine", {}).get("device"), "metric": metric, "launch_floor_us": floor}
    for r in runs:
        if r.get("variant") == "correctness":
            out[f"{r['kernel']}.max_abs_diff"] = r["max_abs_diff"]
        if r.get("kernel") == "greedy_verify" and r.get("variant") == "triton" and "tile" in r:
            out["greedy_verify.tile"] = r["tile"]  # requests per program, chosen by this run's sweep
        if r.get("kernel") == "draft_inputs" and r.get("variant") == "triton" and "tile" in r:
            out["draft_inputs.tile"] = r["tile"]  # rows per program, chosen by the tile sweep of this run
            if "elems_per_thread" in r:  # rows per thread (files recorded since the sweep chose it)
                out["draft_inputs.elems_per_thread"] = r["elems_per_thread"]
    # draft_inputs "triton" passes seq_lens and max_query_len; "triton_positions" reads the first positions from
    # target_positions (one dependent load more); "triton_loop" omits max_query_len (each program loops). Both are
    # absent from files recorded before they existed.
    # Each row's own floor (measured alternately with it) where the file has one, else the run's.

    def over(r: dict) -> float:
        return r[metric] / (r.get("floor_us") if metric == "device_us" and r.get("floor_us") else floor)

    for name, kernel, variant in FLOOR_RATIOS:
        upto = [r for r in runs if r.get("kernel") == kernel and r.get("variant") == variant
                and r["batch_size"] <= max_floor_batch]
        if upto:
            out[f"{name}.max_over_floor_upto_{max_floor_batch}"] = max(over(r) for r in upto)
    for r in runs:  # what dependent memory round trips alone cost, in floors
        if r.get("kernel") == "dependent_loads":
            lanes = "" if r.get("lanes", 32) == 32 else f"x{r['lanes']}"  # files before 'lanes': 32 per program
            out[f"dependent_loads.{r['depth']}x{r['programs']}{lanes}.over_floor"] = r["device_us"] / r["floor_us"]
    # The input builder's two rounds of loads (per-request scalars, then tokens and block table) against a bare
    # chain of two dependent loads over as many programs: how much its stores and arithmetic add on top.
    chain = out.get("dependent_loads.2x256.over_floor")
    if chain and f"draft_inputs.max_over_floor_upto_{max_floor_batch}" in out:
        out[f"draft_inputs.max_over_two_load_chain_upto_{max_floor_batch}"] = (
            out[f"draft_inputs.max_over_floor_upto_{max_floor_batch}"] / chain)
    for kernel in ("greedy_verify", "draft_inputs", "hidden_expand"):
        m = "flushed_us" if kernel == "hidden_expand" else metric  # kernel 2 is judged by bandwidth
        rows = {(r["variant"], r["batch_size"], r["k"]): r for r in runs
                if r.get("kernel") == kernel and r.get("variant") in ("triton", "eager", "reference")}
        tri = [r for (v, b, k), r in rows.items() if v == "triton"]
        if not tri:
            continue
        for other in ("eager", "reference"):
            ratios = [rows[(other, r["batch_size"], r["k"])][m] / r[m] for r in tri
                      if rows.get((other, r["batch_size"], r["k"]), {}).get(m)]
            if ratios:
                out[f"{kernel}.speedup_vs_{other}.median"] = statistics.median(ratios)
        # what an eager caller pays: host time per call (launch overhead included)
        ratios = [rows[("eager", r["batch_size"], r["k"])]["wall_us"] / r["wall_us"] for r in tri
                  if r.get("wall_us") and ("eager", r["batch_size"], r["k"]) in rows]
        if ratios:
            out[f"{kernel}.wall_speedup_vs_eager.median"] = statistics.median(ratios)
    big = [r for r in runs if r.get("kernel") == "hidden_expand" and r.get("variant") in ("triton", "eager")
           and r.get("batch_size", 0) >= large_batch and r.get("fraction_of_copy")]
    for variant in ("triton", "eager"):
        fr = [r["fraction_of_copy"] for r in big if r["variant"] == variant]
        if fr:
            out[f"hidden_expand.{variant}.fraction_of_copy.min_large"] = min(fr)
            out[f"hidden_expand.{variant}.fraction_of_copy.max"] = max(fr)
    copies = [r["copy_gbs"] for r in runs if r.get("copy_gbs")]
    if copies:
        out["copy_gbs.max"] = max(copies)
    return out


def write_kernel_results(path: str | Path | None = None, **kwargs) -> tuple[Path, dict[str, Any]]:
    """Run everything and write the results file; default path ``data/results/kernels_<device>.json``."""
    import torch

    from peagle_nb.files import paths
    from peagle_nb.files.results import make_results, write_results

    runs = run_benchmarks(**kwargs)
    device = kwargs.get("device") or ("cuda" if torch.cuda.is_available() else "cpu")
    notes = ("Parallel-drafting kernels (peagle_kernels): device_us = device time of one call in a stream of them: "
             "(median replay of a CUDA graph of 60 calls - median replay of one of 20) / 40, each replay queued behind "
             "a GPU sleep and timed with events (no host submission latency, no per-graph fixed cost); "
             "wall_us = median host time of one eager call incl. launch overhead; "
             "flushed_us = triton.testing.do_bench median with the L2 cache flushed (hidden_expand bandwidth). "
             "variant: triton (one fused launch; draft_inputs with seq_lens and max_query_len), triton_positions "
             "(draft_inputs without seq_lens: first positions read from target_positions, one dependent load more), "
             "triton_loop (draft_inputs without max_query_len: each program loops over its rows), eager (the same "
             "work as separate PyTorch ops, as vLLM did before fusion), reference (the plain PyTorch spec, host loop), "
             "launch_floor (an empty Triton kernel); floor_us (on the fused kernels' rows) = the empty kernel timed "
             "alternately with that row (medians of 3 each), the floor its ratio uses; dependent_loads = a chain of "
             "`depth` dependent loads then a store over `programs` programs of `lanes` lanes (the least a kernel "
             "whose addresses come from memory pays).")
    doc = make_results("kernels", runs, notes=notes)
    if path is None:
        name = "h200" if "H200" in str(doc["machine"].get("device", "")) else (
            "cpu" if not device.startswith("cuda") else str(doc["machine"]["device"]).lower().replace(" ", "_"))
        path = paths.results_dir() / f"kernels_{name}.json"
    return write_results(path, doc), doc


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m peagle_nb.lab.benchmarks.kernel_bench",
                                description=__doc__.splitlines()[0])
    add_arguments(p)
    args = p.parse_args(argv)
    try:
        return run(args)
    except (ValueError, OSError) as exc:  # bad input: one paragraph, exit 2 (as `peagle-nb kernels-bench` says it)
        print(f"peagle-nb kernels-bench: error: {exc}", file=sys.stderr)
        return 2


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer >= 1")
    return int(text)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=None, help="results file (default data/results/kernels_<device>.json)")
    p.add_argument("--batch-sizes", type=_positive, nargs="+", default=None)
    p.add_argument("--ks", type=_positive, nargs="+", default=None)
    p.add_argument("--hidden-size", type=_positive, default=None)
    p.add_argument("--smoke", action="store_true", help="small correctness sweep (CPU dry run)")
    p.add_argument("--repeat-into", type=Path, default=None, metavar="FILE",
                   help="run again and attach this run (its runs and summary) to FILE, an earlier results file "
                        "of the same machine, as its 'repeat': the run-to-run spread on record")


def check_repeat_target(path: Path, device: str | None = None) -> dict[str, Any]:
    """The results file ``--repeat-into`` names, read and checked before any benchmark runs: it must exist, be a
    kernels results file and come from this kind of device."""
    from peagle_nb.files.results import machine_info, read_results

    if not Path(path).is_file():
        raise FileNotFoundError(f"--repeat-into {path}: no such file. Fix: name the results file of an earlier "
                                f"`peagle-nb kernels-bench` run on this machine, or use --out for a new one.")
    first = read_results(path)
    if first["source"] != "kernels":
        raise ValueError(f"--repeat-into {path}: that file holds {first['source']} results, not kernel benchmarks. "
                         f"Fix: name a kernels_<device>.json file.")
    mine, theirs = device or machine_info().get("device"), first["machine"].get("device")
    if mine != theirs:
        raise ValueError(f"--repeat-into {path}: that file was recorded on {theirs}, this run is on {mine}. "
                         f"Fix: repeat on the same kind of device, or write a new file with --out.")
    return first


def attach_repeat(path: Path, doc: dict[str, Any]) -> dict[str, Any]:
    """Store ``doc`` (runs, summary, machine, versions, generator) in the results file ``path`` as its
    ``repeat`` (same device required)."""
    from peagle_nb.files.results import write_results

    first = check_repeat_target(path, doc["machine"].get("device"))
    first["repeat"] = {"created": doc["created"], "what": "the same benchmark run again right after, in a new "
                       "process on the same machine, to show the run-to-run spread: its runs, and the summary "
                       "`summarize` makes of them", "machine": doc["machine"], "versions": doc["versions"],
                       "generator": doc["generator"], "runs": doc["runs"], "summary": summarize(doc)}
    write_results(path, first)
    return first


def run(args) -> int:
    if args.repeat_into is not None:
        from peagle_nb.files.results import make_results

        check_repeat_target(args.repeat_into)  # before minutes of benchmarks, not after

        doc = make_results("kernels", run_benchmarks(batch_sizes=args.batch_sizes, ks=args.ks,
                                                     hidden_size=args.hidden_size, smoke=args.smoke))
        attach_repeat(args.repeat_into, doc)
        print(f"attached this run to {args.repeat_into} as its 'repeat'")
        path = args.repeat_into
    else:
        path, doc = write_kernel_results(args.out, batch_sizes=args.batch_sizes, ks=args.ks,
                                         hidden_size=args.hidden_size, smoke=args.smoke)
        print(f"wrote {path}")
    for key, value in summarize(doc).items():
        print(f"  {key:55s} {value:.4g}" if isinstance(value, float) else f"  {key:55s} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
