"""The heads' data generators side by side: the ``transformers`` loop against the lean static-cache generator, on the
same prompts, in one run. Read by notebook 08 (why the heads' data no longer takes the GPU session).

    python -m peagle_nb.lab.benchmarks.generate_bench --target DIR --device cuda --n 8192 --gen-batch 4096 \\
        --out data/results/family_v3/generate_h200.json
    python -m peagle_nb.lab.benchmarks.generate_bench --n 24 --gen-batch 8 --total-len 64 --out OUT.json  # CPU

Each repeat times both generators on the same prompts (corpus v1's train split, the heads' prompt lengths) and
compares their tokens row by row: equal rows are the same continuation; a row that differs does so from the first
token where the two arithmetics rounded a near-tie differently (the file keeps the first such position). Times carry
p10 / median / p90 over the repeats, and the ratio is taken per repeat (both generators timed in the same repeat).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from peagle_nb.engine.evaluate import spread
from peagle_nb.files import paths
from peagle_nb.files.results import machine_info, versions
from peagle_nb.models.checksums import weights_sha256
from peagle_nb.models.target import load_target
from peagle_nb.text.corpus import DOMAINS
from peagle_nb.training.drafter_config import DrafterTrainConfig
from peagle_nb.training.drafter_data import corpus_prompts, generate
from peagle_nb.training.lean_generate import generate_lean

PROMPT_LENGTHS = DrafterTrainConfig.__dataclass_fields__["prompt_lengths"].default


def timed_call(fn, device: torch.device):
    """``(fn(), seconds)``, the device synchronised before and after (CUDA runs asynchronously)."""
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = fn()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return out, time.perf_counter() - t0


def agreement(a: torch.Tensor, b: torch.Tensor, prompt_lengths: list[int]) -> dict:
    """Rows of two generations [N, T]: how many are equal, and where the first differing row first differs."""
    same = (a == b).all(dim=1)
    first = None
    for i in (~same).nonzero().flatten().tolist():
        pos = int((a[i] != b[i]).nonzero()[0])
        first = pos - prompt_lengths[i] if first is None else min(first, pos - prompt_lengths[i])
    return {"rows": int(a.shape[0]), "equal_rows": int(same.sum()), "equal_share": float(same.float().mean()),
            "earliest_difference_new_token": first}


def run(target_dir: Path, device: str, n: int, gen_batch: int, total_len: int, temperature: float, repeats: int,
        seed: int = 0) -> dict:
    dev = torch.device(device)
    target, tok = load_target(target_dir, device=dev)
    prompts, _ = corpus_prompts(tok, n, PROMPT_LENGTHS, seed, DOMAINS, "v1")
    lengths = [len(p) for p in prompts]
    new_tokens = sum(total_len - length for length in lengths)
    rows = []
    for r in range(repeats):
        ref, t_ref = timed_call(lambda: generate(target, prompts, total_len, temperature, seed + r, gen_batch), dev)
        lean, t_lean = timed_call(
            lambda: generate_lean(target, prompts, total_len, temperature, seed + r, gen_batch), dev)
        rows.append({"repeat": r, "transformers_s": t_ref, "lean_s": t_lean, "speedup": t_ref / t_lean,
                     **agreement(ref, lean, lengths)})
    return {"target": str(target_dir), "weights_sha256": weights_sha256(target_dir),
            "layers": target.config.num_hidden_layers, "hidden_size": target.config.hidden_size,
            "dtype": str(next(target.parameters()).dtype), "n_sequences": n, "gen_batch": gen_batch,
            "total_len": total_len, "new_tokens": new_tokens, "temperature": temperature, "repeats": rows,
            "transformers_new_tokens_per_s": spread([new_tokens / x["transformers_s"] for x in rows]),
            "lean_new_tokens_per_s": spread([new_tokens / x["lean_s"] for x in rows]),
            "speedup": spread([x["speedup"] for x in rows])}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m peagle_nb.lab.benchmarks.generate_bench",
                                description=__doc__.splitlines()[0])
    p.add_argument("--target", type=Path, default=paths.models_dir() / "tiny-target")
    p.add_argument("--device", default="cpu")
    p.add_argument("--n", type=int, default=24, help="prompts (sequences generated)")
    p.add_argument("--gen-batch", type=int, default=8)
    p.add_argument("--total-len", type=int, default=256, help="prompt + continuation tokens per sequence")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", type=Path, required=True)
    argv = sys.argv[1:] if argv is None else argv
    args = p.parse_args(argv)
    if not (args.target / "config.json").is_file():
        raise SystemExit(f"no target at {args.target}: give a model folder with --target")
    if args.n < 1 or args.gen_batch < 1 or args.repeats < 1 or args.total_len <= max(PROMPT_LENGTHS):
        raise SystemExit(f"--n, --gen-batch and --repeats must be >= 1 and --total-len above {max(PROMPT_LENGTHS)} "
                         f"(the longest prompt)")
    doc = {"generator": "python -m peagle_nb.lab.benchmarks.generate_bench " + " ".join(argv),
           "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": machine_info(),
           "versions": versions(),
           **run(args.target, args.device, args.n, args.gen_batch, args.total_len, args.temperature, args.repeats)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    s = doc["speedup"]
    print(f"lean {doc['lean_new_tokens_per_s']['median']:,.0f} new tokens/s, transformers "
          f"{doc['transformers_new_tokens_per_s']['median']:,.0f}: {s['median']:.2f}x [{s['p10']:.2f}-{s['p90']:.2f}]; "
          f"equal rows {min(r['equal_share'] for r in doc['repeats']):.0%}; wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
