"""Decode the held-out prompts past the heads' training length with and without a drafter attention window, on CPU.
Read by notebook 08 (family v3, why P-EAGLE drafts worse past its training length); analysed by
``peagle_nb.analysis.drafter_window``.

    python -m peagle_nb.lab.benchmarks.drafter_window --family v3 --target data/models/v3-target-h100 \\
        --heads data/models/v3-heads-h100/v3-eagle3-r3 data/models/v3-heads-h100/v3-peagle-r3 \\
        --temperatures 0 --windows all,384,320,256,224,192,128,64 --eagle3-windows all,192 --sinks-window 192 \\
        --out data/results/family_v3/drafter_window_cpu.json.gz

The lean engine (``--engine reference``: the same tokens and accepted counts, tested) at K=7, batch 1, fp32. Only
acceptance is measured here, never speed: a window changes which keys the drafter reads, not the step's shape.
Each configuration decodes every prompt of each set once (seed = prompt index at T > 0); the record keeps every
step's accepted count, whether the step starts on fresh text, and each output's sha256 (first 16 hex digits), so a
reader can check that the configurations decoded the same text. The file is rewritten after every configuration.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

import torch

from peagle_nb.analysis.repetition import classify_steps
from peagle_nb.engine.drafting import DrafterWindow
from peagle_nb.engine.evaluate import ENGINES, encode_prompts, make_decoder

K = 7


def _windows(text: str) -> list[int | None]:
    return [None if w == "all" else int(w) for w in text.split(",")]


def decode_set(target, tokenizer, head, method: str, prompts: list[list[int]], max_new_tokens: int,
               temperature: float, window: int | None, sinks: int, engine: str = "lean") -> dict:
    """One configuration over one prompt set -> the raw fields of its run."""
    dec = make_decoder(engine, target, tokenizer, head, method, K,
                       drafter_window=None if window is None else DrafterWindow(window, sinks))
    accepted, per_prompt, fresh, shas = [], [], [], []
    for i, p in enumerate(prompts):
        r = dec.generate(p, max_new_tokens, temperature, seed=i)
        steps = [s.accepted for s in r.steps]
        kinds = classify_steps(p, r.tokens, r.steps)
        if len(kinds) != len(steps):
            raise RuntimeError(f"{len(kinds)} step kinds for {len(steps)} steps: a step starts past the output")
        accepted += steps
        per_prompt.append(len(steps))
        fresh += [int(k == "fresh") for k in kinds]
        shas.append(hashlib.sha256(",".join(map(str, r.tokens)).encode()).hexdigest()[:16])
    return {"accepted_per_step": accepted, "steps_per_prompt": per_prompt, "step_fresh": fresh,
            "outputs_sha256": shas, "tau": 1.0 + sum(accepted) / len(accepted)}


def plan(temperatures, windows, eagle3_windows, sinks_window: int | None, sinks: int) -> list[tuple]:
    """(temperature, method, window, sinks) of every configuration, in run order."""
    out = []
    for t in temperatures:
        out += [(t, "peagle", w, 0) for w in windows] + [(t, "eagle3", w, 0) for w in eagle3_windows]
        if sinks_window is not None and t == temperatures[0]:
            out.append((t, "peagle", sinks_window, sinks))
    return out


def main(argv=None) -> int:
    from peagle_nb.files.results import generator_command, make_results, read_results, write_results
    from peagle_nb.models.checksums import weights_sha256
    from peagle_nb.models.heads import load_head
    from peagle_nb.models.target import load_target
    from peagle_nb.text.prompts import DOMAINS, load_prompts

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--family", required=True, help="a label for the runs (v3, tiny)")
    p.add_argument("--target", required=True)
    p.add_argument("--heads", nargs=2, required=True, metavar=("EAGLE3_DIR", "PEAGLE_DIR"))
    p.add_argument("--sets", default=",".join(DOMAINS), help="held-out prompt sets, comma list")
    p.add_argument("--limit", type=int, default=8, help="prompts per set")
    p.add_argument("--max-new-tokens", type=int, default=512)
    p.add_argument("--temperatures", default="0")
    p.add_argument("--windows", default="all,192", help="P-EAGLE's windows, comma list; 'all' attends every slot")
    p.add_argument("--eagle3-windows", default="all,192")
    p.add_argument("--sinks-window", type=int, default=None, help="also run P-EAGLE with this window plus --sinks")
    p.add_argument("--sinks", type=int, default=4)
    p.add_argument("--engine", choices=ENGINES, default="lean")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--append", action="store_true", help="add these runs to the --out record")
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    previous = read_results(a.out) if a.append and Path(a.out).exists() else None
    target, tok = load_target(a.target)
    heads = {"eagle3": load_head(a.heads[0]), "peagle": load_head(a.heads[1])}
    sets = {s: encode_prompts(tok, load_prompts(s, a.limit)) for s in a.sets.split(",")}
    model = {"family": a.family, "target": a.target, "heads": {"eagle3": a.heads[0], "peagle": a.heads[1]},
             "weights_sha256": {"target": weights_sha256(a.target), "eagle3": weights_sha256(a.heads[0]),
                                "peagle": weights_sha256(a.heads[1])}, "engine": a.engine, "dtype": "float32"}
    runs = list(previous["runs"]) if previous else []
    models = (previous.get("models", []) if previous else []) + [model]
    calls = (previous.get("calls", []) if previous else []) + [generator_command()]
    configs = plan([float(t) for t in a.temperatures.split(",")], _windows(a.windows), _windows(a.eagle3_windows),
                   a.sinks_window, a.sinks)
    for t, method, window, sinks in configs:
        for ps, prompts in sets.items():
            t0 = time.perf_counter()
            run = decode_set(target, tok, heads[method], method, prompts, a.max_new_tokens, t, window, sinks,
                             a.engine)
            runs.append({"family": a.family, "temperature": t, "prompt_set": ps, "method": method, "k": K,
                         "window": window, "sinks": sinks, "n_prompts": len(prompts),
                         "max_new_tokens": a.max_new_tokens, **run, "seconds": round(time.perf_counter() - t0, 1)})
            print(f"{a.family} T={t} {method} window={window} sinks={sinks} {ps}: tau {run['tau']:.2f} "
                  f"({runs[-1]['seconds']} s)", file=sys.stderr, flush=True)
            doc = make_results("engine", runs, notes="drafter attention window: tau past the heads' training "
                               "length (peagle_nb.analysis.drafter_window)")
            doc["models"], doc["calls"] = models, calls  # one entry per call that added runs
            write_results(a.out, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
