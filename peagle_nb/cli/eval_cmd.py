"""``peagle-nb eval``: measure none / EAGLE-3 / P-EAGLE decoding on a prompt file (one JSON object),
or ``--sweep`` every method over K = 1..10 into a results file. Explained in notebooks 01-03."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def add_arguments(p) -> None:
    from peagle_nb.cli.errors import positive_int

    p.add_argument("--method", choices=["none", "eagle3", "peagle"], default="peagle")
    p.add_argument("--k", type=positive_int, default=7, help="drafts per step (ignored for --method none)")
    p.add_argument("--prompts", action="append", required=True,
                   help="JSONL prompt file (data/prompts/prose.jsonl); repeat for several sets with --sweep")
    p.add_argument("--max-new-tokens", type=positive_int, default=64)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--limit", type=int, default=None, help="use only the first N prompts of each file")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print one JSON object (the default prints a summary)")
    p.add_argument("--threads", type=int, default=1,
                   help="CPU threads for torch (1: steady on a shared machine; the recorded sweeps use 2 on an idle "
                        "2-core machine, where steps of several rows gain from the second core, but a busy machine "
                        "makes a second thread wait for seconds)")
    p.add_argument("--device", default="cpu", help="cpu, cuda or auto (cuda when available)")
    p.add_argument("--target", default=None, help="target folder (default data/models/tiny-target)")
    p.add_argument("--head", default=None, help="head folder (default data/models/tiny-<method>)")
    p.add_argument("--heads-dir", default=None,
                   help="folder holding tiny-eagle3/ and tiny-peagle/ (default data/models), used by --sweep")
    p.add_argument("--drafter-window", type=positive_int, default=None,
                   help="the drafter attends to this many positions back only (default: all; notebook 08)")
    p.add_argument("--drafter-sinks", type=int, default=0, help="... and to the first this many positions")
    p.add_argument("--sweep", action="store_true", help="run none + eagle3 + peagle for K in --ks, write --out")
    p.add_argument("--ks", default="1-10", help="K range for --sweep, e.g. 1-10 or 1,3,7")
    p.add_argument("--engine", choices=["lean", "reference"], default="lean",
                   help="lean: static caches, fused ops, CUDA graphs on a GPU (the speed of the model's work); "
                        "reference: the readable transformers path (same tokens)")
    p.add_argument("--repeats", type=int, default=3,
                   help="time the prompt set N times; tokens/s is reported as median with p10/p90")
    p.add_argument("--sweeps", type=int, default=3, help="--sweep: independent sweeps (spread of best-K ratios)")
    p.add_argument("--equal-prompts", type=int, default=4,
                   help="--sweep: prompts per set on which the lean engine is checked against the reference")
    p.add_argument("--out", default=None, help="results file for --sweep (default data/results/engine_cpu.json)")


def parse_ks(text: str) -> list[int]:
    if "-" in text:
        a, b = text.split("-", 1)
        return list(range(int(a), int(b) + 1))
    return [int(x) for x in text.split(",") if x.strip()]


def _device(name: str) -> str:
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("--device cuda asked for, but no CUDA GPU is available here; use --device cpu")
    return name


def run(args) -> int:
    from peagle_nb.files import paths
    from peagle_nb.engine import evaluate, load_prompts
    from peagle_nb.models.heads import load_head
    from peagle_nb.models.target import load_target

    import torch

    device = _device(args.device)
    if device == "cpu" and args.threads:
        torch.set_num_threads(args.threads)
    try:
        target, tokenizer = load_target(args.target, device=device)
        prompt_sets = {Path(f).stem: load_prompts(f, args.limit) for f in args.prompts}

        def head_for(method):
            if args.head and not args.sweep:
                path = Path(args.head)
            else:
                path = Path(args.heads_dir or paths.models_dir()) / f"tiny-{method}"
            if not path.is_dir():
                raise FileNotFoundError(f"no {method} head at {path}; train one with `peagle-nb train {method}` "
                                        "or pass --head DIR")
            return load_head(path, device=device)

        if args.sweep and args.drafter_window is not None:
            raise ValueError("--drafter-window applies to one run here; for a windowed sweep run python -m "
                             "peagle_nb.lab.sweeps.engine_sweep --sections none --drafter-window W")
        if args.sweep:
            from peagle_nb.lab.sweeps import engine_sweep

            heads = {m: head_for(m) for m in ("eagle3", "peagle")}
            out = Path(args.out) if args.out else paths.results_dir() / "engine_cpu.json"
            if args.engine != "lean":
                raise ValueError("--sweep measures the lean engine (it also checks it against the reference and "
                                 "times both side by side); drop --engine reference")
            settings = engine_sweep.RecordSettings(
                ks=tuple(parse_ks(args.ks)), lengths=(args.max_new_tokens,), temperatures=(args.temperature,),
                repeats=args.repeats, sweeps=args.sweeps, equal_prompts=args.equal_prompts)
            doc = engine_sweep.run(target, tokenizer, heads, prompt_sets, settings, out,
                                   log=lambda s: print(s, file=sys.stderr))
            print(json.dumps(doc["summary"], indent=1) if args.json else f"wrote {out}")
            return 0
        if len(prompt_sets) != 1:
            raise ValueError("give one --prompts file (several only with --sweep)")
        prompts = next(iter(prompt_sets.values()))
        head = head_for(args.method) if args.method != "none" else None
        rec = evaluate(target, tokenizer, head, args.method, args.k, prompts, args.max_new_tokens,
                       temperature=args.temperature, seed=args.seed, repeats=args.repeats, engine=args.engine,
                       drafter_window=args.drafter_window, drafter_sinks=args.drafter_sinks)
    except (FileNotFoundError, ValueError) as exc:
        print(f"peagle-nb eval: error: {exc}", file=sys.stderr)
        return 2
    rec["prompt_set"] = next(iter(prompt_sets))
    rec["device"] = device
    if args.drafter_window is not None:
        rec["drafter_window"], rec["drafter_sinks"] = args.drafter_window, args.drafter_sinks
    if args.json:
        print(json.dumps(rec))
    else:
        rates = ", ".join(f"{a:.2f}" for a in rec["accept_rate_per_position"])
        window = ("" if args.drafter_window is None else
                  f", drafter window {args.drafter_window}" + (f" + {args.drafter_sinks} sinks" if args.drafter_sinks
                                                               else ""))
        print(f"{rec['method']} K={rec['k']} on {rec['n_prompts']} prompts ({rec['engine']} engine{window}): "
              f"tau={rec['tau']:.2f} tokens/s={rec['tokens_per_s']:.1f} (p10 {rec['tokens_per_s_p10']:.1f}, "
              f"p90 {rec['tokens_per_s_p90']:.1f}, {rec['repeats']} repeats) draft={rec['draft_ms_per_step']:.2f} "
              f"verify={rec['verify_ms_per_step']:.2f} bookkeeping={rec['bookkeeping_ms_per_step']:.2f} ms/step "
              f"lossless={rec['lossless']}\n"
              f"accept rate per position: [{rates}]")
    return 0
