"""How much of a target's own text loops, at each sampling temperature: the tiny and the v3 target side by side, on
the held-out prompts, in one run. Read by notebook 08 (section 7: the temperature the v3 heads are trained and
served at).

    python -m peagle_nb.lab.benchmarks.loops_by_temperature --targets tiny=data/models/tiny-target \\
        v3=data/models/v3-target --out data/results/family_v3/loops_by_temperature.json

The heads learn from the target's continuations sampled at the temperature they are served at, and acceptance on
looping text is copying, not drafting. Greedy continuations of both targets loop (most of their tokens lie inside a
repeated 8-gram) and T=1 ones hardly do; this measures the temperatures between (``target_eval.continuation_report``:
the first N held-out prompts per set, each set decoded as one batch; every mode one seeded generation).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from peagle_nb.files.results import machine_info, versions
from peagle_nb.models.checksums import weights_sha256
from peagle_nb.models.target import load_target
from peagle_nb.text.corpus import DOMAINS
from peagle_nb.text.prompts import load_prompts
from peagle_nb.training.target_eval import continuation_report

DEFAULT_TEMPERATURES = (0.0, 0.5, 0.7, 0.85, 1.0)


def mode_name(t: float) -> str:
    """``continuation_report``'s key of a temperature."""
    return "greedy" if t == 0 else "sampled" if t == 1 else f"T{t:g}"


def parse_targets(specs: list[str]) -> dict[str, Path]:
    """``--targets NAME=FOLDER ...`` -> {name: folder}; a spec without a name or a model folder is named."""
    targets = {}
    for spec in specs:
        name, _, folder = spec.partition("=")
        if not name or not folder or not (Path(folder) / "config.json").is_file():
            raise SystemExit(f"--targets {spec}: give NAME=FOLDER with a target model in FOLDER (config.json)")
        targets[name] = Path(folder)
    return targets


def measure(target_dir: Path, prompts_per_set: int, new_tokens: int, temperatures, seed: int = 0) -> dict:
    model, tok = load_target(target_dir, dtype=torch.float32, device="cpu")
    sets = {d: load_prompts(d, prompts_per_set) for d in DOMAINS}
    t0 = time.perf_counter()
    rep = continuation_report(model, tok, sets, max_new_tokens=new_tokens, seed=seed, temperatures=temperatures)
    table = {f"{t:g}": {d: rep[d][mode_name(t)]["repetition_fraction"] for d in DOMAINS} for t in temperatures}
    return {"target": str(target_dir), "weights_sha256": weights_sha256(target_dir),
            "layers": model.config.num_hidden_layers, "seconds": round(time.perf_counter() - t0, 1),
            "repeated_share": table, "report": rep}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m peagle_nb.lab.benchmarks.loops_by_temperature",
                                description=__doc__.splitlines()[0])
    p.add_argument("--targets", nargs="+", required=True, help="NAME=FOLDER for each target")
    p.add_argument("--temperatures", type=float, nargs="+", default=list(DEFAULT_TEMPERATURES))
    p.add_argument("--prompts-per-set", type=int, default=8)
    p.add_argument("--new-tokens", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, required=True)
    argv = sys.argv[1:] if argv is None else argv
    args = p.parse_args(argv)
    targets = parse_targets(args.targets)
    if any(t < 0 for t in args.temperatures) or args.prompts_per_set < 1 or args.new_tokens < 8:
        raise SystemExit("--temperatures must be >= 0, --prompts-per-set >= 1 and --new-tokens >= 8")
    doc = {"generator": "python -m peagle_nb.lab.benchmarks.loops_by_temperature " + " ".join(argv),
           "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": machine_info(),
           "versions": versions(), "temperatures": args.temperatures, "prompts_per_set": args.prompts_per_set,
           "new_tokens": args.new_tokens, "repeat_ngram": 8,
           "targets": {n: measure(f, args.prompts_per_set, args.new_tokens, args.temperatures, args.seed)
                       for n, f in targets.items()}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    for n, r in doc["targets"].items():
        print(n + ": " + "; ".join(f"T={t} " + "/".join(f"{v:.0%}" for v in row.values())
                                   for t, row in r["repeated_share"].items()))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
