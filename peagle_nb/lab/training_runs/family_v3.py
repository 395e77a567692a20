"""Family v3's heads on one GPU, and the whole family (target, then heads) in one command. Explained in notebook 08.

    python -m peagle_nb.lab.training_runs.family_v3 all --out $OUT     # target (<= 15 min), then heads: one deadline
    python -m peagle_nb.lab.training_runs.family_v3 heads --target data/models/v3-target --out $OUT
    python -m peagle_nb.lab.training_runs.family_v3 heads --smoke --target DIR --out DIR2  # CPU, a few minutes

The self-distillation data is built ONCE from the v3 target: prompts from corpus v3's training split, continuations
sampled at the temperature the heads are served at (``--sample-temperature``, default 1), ten times the tiny
heads' 32,768 sequences by default. Then every head of the plan trains side by side on that same data, with the
same batch size and a step cap per rung:

- a budget ladder for both methods: at rung r, EAGLE-3 (1 layer, training-time test over 7 steps) and P-EAGLE
  (4 layers, 8 draft slots, COD) each get ``r x --base-steps`` steps (``--rungs 1 3 10``);
- P-EAGLE's ablations at one rung (``--ablation-rung``): COD off (every depth keeps every position), 2 layers, and
  ``mask_hidden`` held at zeros.

Each head measures its own acceptance per depth (the trainer's card); the summary adds the acceptance at depth d
given depth d-1 accepted. The heads are packed together in parts of at most 15 MiB (``v3-heads.tar.gz.partNN``:
``cat v3-heads.tar.gz.part* | tar -xz -C data/models``), beside a JSON summary and the log.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from peagle_nb.files import paths
from peagle_nb.lab.training_runs import family

TINY_HEAD_SEQUENCES = 32768  # the tiny heads' self-distillation sequences (data/models/tiny-peagle/training_log.json)
ABLATIONS = {"nocod": ["--cod-r", "1", "--cod-r-min", "1"],  # COD off: every depth trains on every position
             "2layers": ["--num-layers", "2"],
             "zeros": ["--mask-hidden", "zeros"]}
PAIR = {"eagle3": ["eagle3", "--k", "7"], "peagle": ["peagle", "--k", "8"]}
HEADS_COMMAND = "python -m peagle_nb.lab.training_runs.family_v3 heads"
ALL_COMMAND = "python -m peagle_nb.lab.training_runs.family_v3 all"


def head_plan(rungs: list[float], base_steps: int, ablation_rung: float | None = None,
              ablations: list[str] | tuple[str, ...] = ()) -> dict[str, list[str]]:
    """Head name -> the trainer's arguments (kind first): both methods at every rung with equal steps, and
    P-EAGLE's ablations at ``ablation_rung``. Bad input raises ``ValueError`` naming the fix."""
    if not rungs or any(r <= 0 for r in rungs):
        raise ValueError(f"rungs {rungs!r}: give at least one positive budget multiple, e.g. --rungs 1 3 10")
    unknown = sorted(set(ablations) - set(ABLATIONS))
    if unknown:
        raise ValueError(f"unknown ablation(s) {unknown}: choose from {sorted(ABLATIONS)}")
    if ablations and ablation_rung not in rungs:
        raise ValueError(f"--ablation-rung {ablation_rung} is not one of the rungs {rungs}: the ablations are compared "
                         "with P-EAGLE at the same rung")
    plan = {}
    for r in rungs:
        steps = str(max(1, round(base_steps * r)))
        for method, args in PAIR.items():
            plan[f"v3-{method}-r{r:g}"] = [*args, "--steps", steps]
    for a in ablations:
        plan[f"v3-peagle-{a}-r{ablation_rung:g}"] = [*PAIR["peagle"], "--steps",
                                                     str(max(1, round(base_steps * ablation_rung))), *ABLATIONS[a]]
    return plan


def conditional_acceptance(rates: list[float]) -> list[float | None]:
    """Acceptance at depth d given depth d-1 accepted, from the rates of 'at least d accepted' (a_1, a_2, ...)."""
    out, before = [], 1.0
    for a in rates:
        out.append(a / before if before > 0 else None)
        before = a
    return out


def head_report(folder: Path) -> dict:
    """:func:`family.head_summary` plus, per prompt set at the trained depth, tau, the acceptance per depth and
    the acceptance conditional on the depth before."""
    out = family.head_summary(folder)
    log = json.loads((folder / "training_log.json").read_text(encoding="utf-8"))
    k = str(log["config"]["k"])
    per_set = {}
    for name, by_k in log.get("acceptance", {}).items():
        res = by_k.get(k) or by_k[max(by_k, key=int)]
        per_set[name] = {"k": res["k"], "tau": res["tau"], "accept_rate_per_position": res["accept_rate_per_position"],
                         "conditional": conditional_acceptance(res["accept_rate_per_position"])}
    out.update(layers=log["config"]["num_layers"], steps_cap=log["config"]["steps"], acceptance=per_set,
               cod=[log["config"]["cod_r"], log["config"]["cod_r_min"]],
               mask_hidden=log["config"].get("mask_hidden", "learned"))
    return out


def heads_command(args: argparse.Namespace) -> int:
    clock, out, work, env = family._start(args, "heads")
    target = Path(args.target) if args.target else paths.models_dir() / family.V3_TARGET_NAME
    if not (target / "config.json").is_file():
        raise SystemExit(f"no target at {target}. Fix: train it first (`{family.A_COMMAND} --family v3`, unpack "
                         f"OUT/v3-target.tar.gz.part* into data/models/), pass --target DIR, or run `{ALL_COMMAND}`")
    try:
        plan = head_plan(args.rungs, args.base_steps or (4 if args.smoke else 2000), args.ablation_rung,
                         args.ablations)
    except ValueError as e:
        raise SystemExit(str(e)) from None
    vd = args.draft_vocab_size or (256 if args.smoke else family._proposed_draft_vocab(target) or 2048)
    folder = work / "heads" / "v3-heads"
    cache = work / "heads" / "drafter_data.pt"
    common = ["--target", str(target), *family._device_flags(args.smoke, args.device), "--data-cache", str(cache),
              "--draft-vocab-size", str(vd), "--seed", str(args.seed), "--corpus", "v3",
              "--sample-temperature", f"{args.sample_temperature:g}"]
    common += ["--smoke"] if args.smoke else ["--n-sequences", str(args.n_sequences)]
    logs = [work / "heads" / "data.log"]
    summary: dict = {"command": HEADS_COMMAND + (" --smoke" if args.smoke else ""), "target": str(target),
                     "target_weights_sha256": family.weights_sha256(target), "draft_vocab_size": vd,
                     "sample_temperature": args.sample_temperature, "plan": plan}
    try:
        code = family.wait_all({"data": family.spawn(["peagle_nb.cli", "train", "peagle", *common, "--data-only"],
                                                     logs[0], env)}, clock.left() - args.reserve_s)["data"]
        if code != 0:
            raise SystemExit("building the drafter data failed: see family_heads.log")
        summary["data_seconds"] = round(clock.elapsed(), 1)
        budget = min(args.time_budget_s, clock.left() - args.reserve_s)
        summary["head_time_budget_s"] = round(budget, 1)
        per_head = (["--val-prompts", "0"] if args.smoke else  # smoke: the trainers' own small sizes
                    ["--time-budget-s", f"{budget:.0f}", "--batch-size", str(args.batch_size), "--val-prompts",
                     str(args.val_prompts)])
        procs = {}
        for name, (kind, *extra) in plan.items():
            logs.append(work / "heads" / f"{name}.log")
            procs[name] = family.spawn(["peagle_nb.cli", "train", kind, *common, *per_head, *extra,
                                        "--out", str(folder / name)], logs[-1], env)
        summary["exit_codes"] = family.wait_all(procs, clock.left() - args.reserve_s)
        finished = [n for n in plan if (folder / n / "training_log.json").is_file()]
        summary["heads"] = {n: head_report(folder / n) for n in finished}
        if finished:
            for n in set(plan) - set(finished):
                shutil.rmtree(folder / n, ignore_errors=True)
            summary["packed"] = family.pack_parts(folder, out / "v3-heads.tar.gz", arcname="v3-heads")
    finally:
        family._write_summary(summary, clock, logs, out / "family_heads")
    family.log_line(f"done in {clock.elapsed():.0f} s: {', '.join(sorted(p.name for p in out.iterdir()))}")
    return 0


def all_command(args: argparse.Namespace) -> int:
    """The target (command A, family v3: one run), then the heads on it, within one deadline; one output folder."""
    clock = family.Clock(args.deadline_s)
    target_args = argparse.Namespace(**{**vars(args), "command": "target", "family": "v3", "eval_every": None,
                                        "runs": [20] if args.smoke else None, "continuation_prompts": 2 if args.smoke
                                        else 8, "continuation_tokens": 16 if args.smoke else 256,
                                        "time_budget_s": args.target_time_budget_s or (200.0 if args.smoke else 600.0),
                                        "deadline_s": args.target_deadline_s or (1800.0 if args.smoke else 900.0)})
    family.target_command(target_args)
    kept = [p for p in sorted((Path(args.work) / "targets").glob("*")) if (p / "config.json").is_file()]
    if not kept:
        raise SystemExit("the target step left no model: see family_target.log in --out")
    heads_args = argparse.Namespace(**{**vars(args), "command": "heads", "target": kept[0],
                                       "deadline_s": max(60.0, clock.left())})
    return heads_command(heads_args)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m peagle_nb.lab.training_runs.family_v3",
                                 description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    heads = sub.add_parser("heads", help="drafter data once, then the ladder and the ablations side by side")
    everything = sub.add_parser("all", help="the v3 target (command A), then the heads, in one command")
    heads.add_argument("--target", type=Path, default=None, help="default data/models/v3-target")
    everything.add_argument("--target-deadline-s", type=float, default=None, help="the target step (default 900 s)")
    everything.add_argument("--target-time-budget-s", type=float, default=None,
                            help="the target's training seconds (default 600)")
    for p in (heads, everything):
        p.add_argument("--out", type=Path, required=True, help="folder for the packed heads, summary and log")
        p.add_argument("--work", type=Path, default=Path("/tmp/peagle-family"), help="scratch folder")
        p.add_argument("--reserve-s", type=float, default=25.0, help="seconds kept for packing at the end")
        p.add_argument("--smoke", action="store_true", help="tiny sizes on a CPU (tests)")
        p.add_argument("--device", choices=["cpu", "cuda"], default=None, help="default: cuda (cpu with --smoke)")
        p.add_argument("--deadline-s", type=float, default=None,
                       help="the whole command's wall-clock limit (heads 900 s, all 1700 s; 1800 s with --smoke)")
        p.add_argument("--rungs", type=float, nargs="+", default=[1, 3, 10],
                       help="budget ladder: multiples of --base-steps, the same for both methods (default 1 3 10)")
        p.add_argument("--base-steps", type=int, default=None, help="steps of rung 1 (default 2000; 4 with --smoke)")
        p.add_argument("--ablation-rung", type=float, default=3, help="the rung of P-EAGLE's ablations (default 3)")
        p.add_argument("--ablations", nargs="*", default=sorted(ABLATIONS),
                       help=f"P-EAGLE ablations, any of {sorted(ABLATIONS)} (default all)")
        p.add_argument("--sample-temperature", type=float, default=1.0,
                       help="temperature of the self-distillation continuations: the one the heads are served at")
        p.add_argument("--n-sequences", type=int, default=10 * TINY_HEAD_SEQUENCES,
                       help="self-distillation sequences (default ten times the tiny heads')")
        p.add_argument("--draft-vocab-size", type=int, default=None,
                       help="default: the target log's proposed draft vocabulary size")
        p.add_argument("--time-budget-s", type=float, default=600.0, help="training seconds of every head (at most)")
        p.add_argument("--batch-size", type=int, default=64)
        p.add_argument("--val-prompts", type=int, default=16, help="validation prompts per domain")
        p.add_argument("--seed", type=int, default=0)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.deadline_s is None:
        args.deadline_s = 1800.0 if args.smoke else {"heads": 900.0, "all": 1700.0}[args.command]
    return heads_command(args) if args.command == "heads" else all_command(args)


if __name__ == "__main__":
    sys.exit(main())
