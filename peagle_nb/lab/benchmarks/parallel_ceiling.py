"""The parallel-drafting ceiling of each target at each sampling temperature, on the held-out prompts: how much a
P-EAGLE mask slot trained toward the target's distribution can accept at slots 1..D (``analysis.parallel_ceiling``).
Read by notebook 08 (section 7), beside the heads' served conditional acceptance.

    python -m peagle_nb.lab.benchmarks.parallel_ceiling --targets tiny=data/models/tiny-target v3=V3_TARGET_DIR \\
        --out data/results/family_v3/parallel_ceiling.json

Per prompt set, each of the first N held-out prompts is continued by the target at the temperature (the text a
served request has written), and anchors are taken every ``--stride`` generated tokens along it; at each anchor
``--paths`` continuations of ``--depth`` tokens are sampled and the ceiling per slot estimated. Every anchor's
ceilings and reach are kept (raw); the summary is their mean and standard error per slot and the conditional
ceiling pooled over anchors.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from peagle_nb.analysis import parallel_ceiling as pc
from peagle_nb.engine.evaluate import encode_prompts
from peagle_nb.files.results import machine_info, versions
from peagle_nb.lab.benchmarks.loops_by_temperature import parse_targets
from peagle_nb.models.checksums import weights_sha256
from peagle_nb.models.target import load_target
from peagle_nb.text.corpus import DOMAINS
from peagle_nb.text.prompts import load_prompts


def measure(target_dir: Path, temperatures, prompts_per_set: int, anchors: int, stride: int, paths: int, depth: int,
            seed: int) -> dict:
    model, tok = load_target(target_dir, dtype=torch.float32, device="cpu")
    out: dict = {"target": str(target_dir), "weights_sha256": weights_sha256(target_dir),
                 "layers": model.config.num_hidden_layers, "by_temperature": {}}
    t0 = time.perf_counter()
    for t in temperatures:
        sets = {}
        for i, domain in enumerate(DOMAINS):
            gen = torch.Generator().manual_seed(seed + 1000 * i + int(round(100 * t)))
            per_anchor = []
            for prompt in encode_prompts(tok, load_prompts(domain, prompts_per_set)):
                text = pc.sampled_text(model, prompt, anchors * stride, t, gen)
                for a in range(1, anchors + 1):
                    per_anchor.append(pc.slot_ceilings(model, text[: len(prompt) + a * stride], depth, paths, t, gen))
            sets[domain] = {"per_anchor": per_anchor, **pc.summarize(per_anchor)}
        out["by_temperature"][f"{t:g}"] = sets
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m peagle_nb.lab.benchmarks.parallel_ceiling",
                                description=__doc__.splitlines()[0])
    p.add_argument("--targets", nargs="+", required=True, help="NAME=FOLDER for each target")
    p.add_argument("--temperatures", type=float, nargs="+", default=[0.7, 1.0])
    p.add_argument("--prompts-per-set", type=int, default=8)
    p.add_argument("--anchors", type=int, default=8, help="anchors per prompt")
    p.add_argument("--stride", type=int, default=8, help="generated tokens between anchors")
    p.add_argument("--paths", type=int, default=64, help="continuations sampled per anchor")
    p.add_argument("--depth", type=int, default=5, help="slots per anchor (slot 1 is the fully conditioned one)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", type=Path, required=True)
    argv = sys.argv[1:] if argv is None else argv
    args = p.parse_args(argv)
    targets = parse_targets(args.targets)
    if any(t <= 0 for t in args.temperatures):
        raise SystemExit("--temperatures must be > 0: greedy decoding has no parallel ceiling (every path is equal)")
    if args.paths < 2 or min(args.prompts_per_set, args.anchors, args.stride, args.depth) < 1:
        raise SystemExit("--paths must be >= 2 and --prompts-per-set, --anchors, --stride, --depth >= 1")
    torch.set_num_threads(args.threads)
    settings = {k: getattr(args, k) for k in ("temperatures", "prompts_per_set", "anchors", "stride", "paths",
                                              "depth", "seed")}
    doc = {"generator": "python -m peagle_nb.lab.benchmarks.parallel_ceiling " + " ".join(argv),
           "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": machine_info(),
           "versions": versions(), **settings,
           "targets": {n: measure(f, args.temperatures, args.prompts_per_set, args.anchors, args.stride, args.paths,
                                  args.depth, args.seed) for n, f in targets.items()}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    for n, r in doc["targets"].items():
        for t, sets in r["by_temperature"].items():
            print(f"{n} T={t} (mean / conditional): " + "; ".join(
                f"{d} " + " ".join(f"{c:.2f}/{k:.2f}" for c, k in zip(s["mean"], s["conditional"]))
                for d, s in sets.items()))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
