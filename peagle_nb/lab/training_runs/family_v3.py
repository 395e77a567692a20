"""Family v3's heads on one GPU, and the whole family (target, then heads) in one command. Explained in notebook 08.

    python -m peagle_nb.lab.training_runs.family all --family v3 --out $OUT   # target (600 s of training, 900 s
                                                                               # cap), then the heads: 1700 s in all
    python -m peagle_nb.lab.training_runs.family heads --family v3 --target data/models/v3-target --out $OUT
    python -m peagle_nb.lab.training_runs.family all --family v3 --smoke --out DIR --work DIR2  # CPU, ~2 minutes

    python -m peagle_nb.lab.training_runs.family_v3 prompts --target data/models/v3-target --out prompts.pt.gz
    python -m peagle_nb.lab.training_runs.family heads --family v3 --prompts prompts.pt.gz ...  # no corpus needed

(``python -m peagle_nb.lab.training_runs.family_v3 all|heads`` is the same command.) ``prompts`` draws the heads'
prompts where corpus v3 is (the default 327,680 are a two-part carry to a GPU machine; the corpus's train split is
seven). Defaults: ``--rungs 1 3 10
--base-steps 2000 --ablation-rung 3 --ablations 2layers nocod zeros --batch-size 64 --sample-temperature 1
--n-sequences 327680 --time-budget-s 600`` (per head, shrunk to what the deadline leaves) ``--gen-batch`` 4096 on
CUDA. How long the data and each rung take on an H200 is measured by the first run (its summary records
``data_seconds`` and every head's ``train_seconds`` and ``steps_run``): a rung that does not reach its step cap
within the budget says so there. Each rung's pair runs on equal steps: two lockstep processes, each with its own
teacher pass (``--pair-teacher separate``, the default and every recorded run), or one ``peagle-nb train pair``
process that runs the teacher once per step for both (``--pair-teacher shared``, ``--teacher-tf32``; notebook 08).

The self-distillation data is built ONCE from the v3 target: prompts from corpus v3's training split, continuations
sampled at the temperature the heads are served at (``--sample-temperature``, default 1), ten times the tiny
heads' 32,768 sequences by default. Then every head of the plan trains side by side on that same data, with the
same batch size and a step cap per rung:

- a budget ladder for both methods: at rung r, EAGLE-3 (1 layer, training-time test over 7 steps) and P-EAGLE
  (4 layers, 8 draft slots, COD) each get ``r x --base-steps`` steps (``--rungs 1 3 10``);
- P-EAGLE's ablations at one rung (``--ablation-rung``): COD off (every depth keeps every position), 2 layers, and
  ``mask_hidden`` held at zeros.

Each head measures its own acceptance per depth (the trainer's card); the summary adds the acceptance at depth d
given depth d-1 accepted (also written into each head's log). The heads are packed together in parts of at most
15 MiB (``v3-heads.tar.gz.partNN``: ``cat v3-heads.tar.gz.part* | tar -xz -C data/models``), beside one JSON
summary and one log: at most 8 files in ``--out``. Heads that do not fit in the files left (after the target's
parts with ``all``) are left out, highest rungs first kept; the summary names them and their weights' sha256.
"""

from __future__ import annotations

import argparse
import io
import json
import shlex
import shutil
import sys
import tarfile
from pathlib import Path

from peagle_nb.files import paths
from peagle_nb.lab.training_runs import family

TINY_HEAD_SEQUENCES = 32768  # the tiny heads' self-distillation sequences (data/models/tiny-peagle/training_log.json)
ABLATIONS = {"nocod": ["--cod-r", "1", "--cod-r-min", "1"],  # COD off: every depth trains on every position
             "2layers": ["--num-layers", "2"],
             "zeros": ["--mask-hidden", "zeros"]}
PAIR = {"eagle3": ["eagle3", "--k", "7"], "peagle": ["peagle", "--k", "8"]}
HEADS_COMMAND = "python -m peagle_nb.lab.training_runs.family heads --family v3"
ALL_COMMAND = "python -m peagle_nb.lab.training_runs.family all --family v3"
MAX_OUT_FILES = 8  # what one GPU call may return


def head_plan(rungs: list[float], base_steps: int, ablation_rung: float | None = None,
              ablations: list[str] | tuple[str, ...] = (), peagle_k: int = 8) -> dict[str, list[str]]:
    """Head name -> the trainer's arguments (kind first): both methods at every rung with equal steps, and
    P-EAGLE's ablations at ``ablation_rung``; P-EAGLE trained to ``peagle_k`` slots (serving deeper than the recorded
    heads' 8 needs a head trained deeper: notebook 08's deep-K section). Bad input raises ``ValueError`` naming the
    fix."""
    if peagle_k < 1:
        raise ValueError(f"P-EAGLE trained to {peagle_k} slots: give --peagle-k 1 or more (default 8)")
    pair = {**PAIR, "peagle": ["peagle", "--k", str(peagle_k)]}
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
        for method, args in pair.items():
            plan[f"v3-{method}-r{r:g}"] = [*args, "--steps", steps]
    for a in ablations:
        plan[f"v3-peagle-{a}-r{ablation_rung:g}"] = [*pair["peagle"], "--steps",
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


def record_conditional(folder: Path) -> None:
    """Write the acceptance at depth d given depth d-1 accepted beside every measured per-depth acceptance in the
    head's log (``conditional_accept_rate_per_position``), from the rates the trainer measured."""
    path = folder / "training_log.json"
    log = json.loads(path.read_text(encoding="utf-8"))
    for by_k in log.get("acceptance", {}).values():
        for res in by_k.values():
            res["conditional_accept_rate_per_position"] = conditional_acceptance(res["accept_rate_per_position"])
    path.write_text(json.dumps(log, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def pack_order(rungs: list[float], names: list[str]) -> list[str]:
    """Which heads to keep first when not all fit: both methods at the highest rung, then each lower rung, then
    the ablations."""
    pairs = [f"v3-{m}-r{r:g}" for r in sorted(set(rungs), reverse=True) for m in PAIR]
    return [n for n in pairs if n in names] + [n for n in names if n not in pairs]


def _compressed_size(folder: Path) -> int:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=6) as tar:
        tar.add(folder, arcname=folder.name)
    return buf.tell()


def pack_heads(folder: Path, order: list[str], out_file: Path, max_parts: int,
               part_bytes: int = family.MAX_OUT_FILE - 2**20) -> dict:
    """The heads of ``order`` (head folders in ``folder``) packed together into at most ``max_parts`` parts of
    ``part_bytes``, in order until the room is used; those left out are moved aside and named."""
    room, used, kept = max(0, max_parts) * part_bytes * 0.98, 0, []  # 2 %: the joint archive's own overhead
    for name in order:
        size = _compressed_size(folder / name)
        if used + size <= room:
            kept.append(name)
            used += size
    left_out = [n for n in order if n not in kept]
    aside = folder.parent / "not-packed"
    aside.mkdir(exist_ok=True)
    for name in left_out:
        shutil.move(str(folder / name), str(aside / name))
    parts = family.pack_parts(folder, out_file, arcname=folder.name, part_bytes=part_bytes) if kept else []
    if left_out:
        family.log_line(f"left out of {out_file.name} (over the {max_parts} files left): {', '.join(left_out)}")
    return {"parts": parts, "heads": kept, "left_out": left_out}


def heads_command(args: argparse.Namespace) -> int:
    clock, out, work, env = family._start(args, "heads")
    if args.smoke:  # several heads side by side on a few cores: one thread each, not a pile of spinning ones
        env = {**env, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    target = Path(args.target) if args.target else paths.models_dir() / family.V3_TARGET_NAME
    if not (target / "config.json").is_file():
        raise SystemExit(f"no target at {target}. Fix: train it first (`{family.A_COMMAND} --family v3`, unpack "
                         f"OUT/v3-target.tar.gz.part* into data/models/), pass --target DIR, or run `{ALL_COMMAND}`")
    family.check_val_corpus(args)
    try:
        plan = head_plan(args.rungs, args.base_steps or (4 if args.smoke else 2000), args.ablation_rung,
                         args.ablations, peagle_k=args.peagle_k)
    except ValueError as e:
        raise SystemExit(f"{e} (--rungs, --ablation-rung, --ablations, --peagle-k)") from None
    vd = args.draft_vocab_size or (256 if args.smoke else family._proposed_draft_vocab(target) or 2048)
    folder = work / "heads" / "v3-heads"
    cache = work / "heads" / "drafter_data.pt"
    common = ["--target", str(target), *family._device_flags(args.smoke, args.device), "--data-cache", str(cache),
              "--draft-vocab-size", str(vd), "--seed", str(args.seed), "--corpus", "v3",
              "--sample-temperature", f"{args.sample_temperature:g}"]
    common += ["--smoke"] if args.smoke else ["--n-sequences", str(args.n_sequences)]
    common += ["--prompts", str(args.prompts)] if args.prompts else []
    common += ["--seq-len", str(args.seq_len)] if args.seq_len else []
    common += ["--teacher-tf32"] if args.teacher_tf32 else []
    gen = ["--gen-batch", str(args.gen_batch)] if args.gen_batch else []
    gen += ["--generator", args.generator] if args.generator else []
    logs = [work / "heads" / "data.log"]
    summary: dict = {"command": HEADS_COMMAND + (" --smoke" if args.smoke else ""), "target": str(target),
                     "target_weights_sha256": family.weights_sha256(target), "draft_vocab_size": vd,
                     "sample_temperature": args.sample_temperature, "batch_size": args.batch_size, "plan": plan,
                     "pair_teacher": args.pair_teacher, "teacher_tf32": args.teacher_tf32}
    try:
        code = family.wait_all({"data": family.spawn(["peagle_nb.cli", "train", "peagle", *common, *gen,
                                                      "--data-only"], logs[0], env)},
                               clock.left() - args.reserve_s)["data"]
        if code != 0:
            raise SystemExit("building the drafter data failed: see the data.log section of the heads' log")
        summary["data_seconds"] = round(clock.elapsed(), 1)
        summary["data"] = _data_info(cache)
        # one `train pair` process measures its two heads one after the other: keep time for both evaluations
        evals = len(PAIR) if args.pair_teacher == "shared" else 1
        budget = min(args.time_budget_s, clock.left() - args.reserve_s - evals * args.eval_reserve_s)
        if budget < 1:
            raise SystemExit(f"no time left for the heads after the data ({clock.elapsed():.0f} s of "
                             f"{args.deadline_s:.0f}). Fix: a larger --deadline-s or fewer --n-sequences")
        summary["head_time_budget_s"] = round(budget, 1)
        per_head = (["--val-prompts", "0"] if args.smoke else  # smoke: the trainers' own small sizes
                    ["--time-budget-s", f"{budget:.0f}", "--batch-size", str(args.batch_size), "--val-prompts",
                     str(args.val_prompts)])
        procs, proc_of = {}, {}
        lock = work / "heads" / "lockstep"  # each rung's pair on equal steps (training.lockstep); none left over
        shutil.rmtree(lock, ignore_errors=True)
        shared = {}  # rung -> {kind: options}: each rung's pair in one `train pair` process (--pair-teacher shared)
        for name, (kind, *extra) in plan.items():
            options = [*common, *per_head, *extra, "--out", str(folder / name)]
            rung = name.split("-")[-1] if name.count("-") == 2 else None  # v3-<method>-r<rung>
            if rung and args.pair_teacher == "shared":
                shared.setdefault(rung, {})[kind] = options
                proc_of[name] = f"v3-pair-{rung}"
                continue
            logs.append(work / "heads" / f"{name}.log")
            pair = ["--lockstep", str(lock / rung)] if rung else []
            procs[name] = family.spawn(["peagle_nb.cli", "train", kind, *options, *pair], logs[-1], env)
            proc_of[name] = name
        for rung, options in shared.items():
            logs.append(work / "heads" / f"v3-pair-{rung}.log")
            procs[f"v3-pair-{rung}"] = family.spawn(["peagle_nb.cli", "train", "pair", *(
                a for kind in PAIR for a in (f"--{kind}", shlex.join(options[kind])))], logs[-1], env)
        codes = family.wait_all(procs, clock.left() - args.reserve_s)
        summary["exit_codes"] = {name: codes[proc_of[name]] for name in plan}
        summary["logs"] = {name: f"{proc_of[name]}.log" for name in plan}
        finished = [n for n in plan if (folder / n / "training_log.json").is_file()]
        for n in finished:
            record_conditional(folder / n)
        summary["heads"] = {n: head_report(folder / n) for n in finished}
        # a rung whose cap the time budget cut short trains the pair on unequal steps: say so, per rung
        summary["pair_steps_run"] = {f"r{r:g}": {m: summary["heads"].get(f"v3-{m}-r{r:g}", {}).get("steps_run")
                                                 for m in PAIR} for r in args.rungs}
        summary["failed"] = sorted(set(plan) - set(finished))
        for n in summary["failed"]:
            shutil.rmtree(folder / n, ignore_errors=True)
        others = [p for p in out.iterdir() if not p.name.startswith("family_") and not p.name.startswith("v3-heads")]
        if finished:
            summary["packed"] = pack_heads(folder, pack_order(args.rungs, finished), out / "v3-heads.tar.gz",
                                           MAX_OUT_FILES - 2 - len(others))
    finally:
        family._write_summary(summary, clock, logs, out / "family_heads")
    family.log_line(f"done in {clock.elapsed():.0f} s: {', '.join(sorted(p.name for p in out.iterdir()))}")
    return family.heads_exit(plan, summary)


def prompts_command(args: argparse.Namespace) -> int:
    """Draw the heads' prompts from corpus v3's train split into one file (``training.prompt_file``), on a machine
    that has the corpus; ``heads --prompts FILE`` then needs only the target, not the corpus."""
    from transformers import PreTrainedTokenizerFast

    from peagle_nb.text.corpus import DOMAINS
    from peagle_nb.training.drafter_config import DrafterTrainConfig
    from peagle_nb.training.drafter_data import corpus_prompts
    from peagle_nb.training.prompt_file import prompts_key, save_prompts

    target = Path(args.target) if args.target else paths.models_dir() / family.V3_TARGET_NAME
    if not (target / "tokenizer.json").is_file():
        raise SystemExit(f"no tokenizer at {target}/tokenizer.json. Fix: --target the v3 target's folder (the prompts "
                         f"are its tokenizer's ids)")
    lengths = DrafterTrainConfig.__dataclass_fields__["prompt_lengths"].default
    tokenizer = PreTrainedTokenizerFast.from_pretrained(str(target))
    prompts, labels = corpus_prompts(tokenizer, args.n_sequences, lengths, args.seed, DOMAINS, "v3")
    key = prompts_key(args.n_sequences, lengths, args.seed, DOMAINS, "v3", target / "tokenizer.json")
    written = save_prompts(args.out, key, prompts, labels)
    family.log_line(f"{len(prompts):,} prompts ({sum(map(len, prompts)):,} tokens) -> {written['path']}: "
                    f"{written['bytes'] / 2 ** 20:.1f} MiB, sha256 {written['sha256'][:16]}")
    return 0


def _data_info(cache: Path) -> dict:
    """The self-distillation data's own record (sequences, tokens, build seconds), from the shared cache file."""
    import torch

    info = torch.load(cache, map_location="cpu").get("info", {})
    return {k: v for k, v in info.items() if k != "labels"}


def all_command(args: argparse.Namespace) -> int:
    """The target (command A, family v3: one run), then the heads on it, within one deadline; one output folder
    with the target's and the heads' parts, one summary (``family_all.json``) and one log."""
    clock = family.Clock(args.deadline_s)
    out = Path(args.out)
    target_args = argparse.Namespace(**{**vars(args), "command": "target", "family": "v3", "eval_every": None,
                                        "runs": [20] if args.smoke else None, "continuation_prompts": 2 if args.smoke
                                        else 8, "continuation_tokens": 16 if args.smoke else 256,
                                        "time_budget_s": args.target_time_budget_s or (200.0 if args.smoke else 600.0),
                                        "width": args.target_width,
                                        "deadline_s": min(clock.left(), args.target_deadline_s
                                                          or (1800.0 if args.smoke else 900.0))})
    try:
        family.target_command(target_args)
        kept = [p for p in sorted((Path(args.work) / "targets").glob("*")) if (p / "config.json").is_file()]
        if not kept:
            raise SystemExit("the target step left no model: see the target section of family_all.log in --out")
        heads_args = argparse.Namespace(**{**vars(args), "command": "heads", "target": kept[0],
                                           "deadline_s": max(60.0, clock.left())})
        return heads_command(heads_args)
    finally:
        merge_summaries(out, clock, args)


def merge_summaries(out: Path, clock: family.Clock, args: argparse.Namespace) -> None:
    """``family_target.*`` and ``family_heads.*`` -> one ``family_all.json`` and one ``family_all.log``."""
    doc: dict = {"command": ALL_COMMAND + (" --smoke" if args.smoke else ""), "deadline_s": args.deadline_s}
    with open(out / "family_all.log", "w", encoding="utf-8") as log:
        for stage in ("target", "heads"):
            js, lg = out / f"family_{stage}.json", out / f"family_{stage}.log"
            doc[stage] = json.loads(js.read_text(encoding="utf-8")) if js.is_file() else None
            log.write(f"########## {stage}\n" + (lg.read_text(encoding="utf-8") if lg.is_file() else "(none)\n"))
            js.unlink(missing_ok=True)
            lg.unlink(missing_ok=True)
    doc["seconds"] = round(clock.elapsed(), 1)
    (out / "family_all.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m peagle_nb.lab.training_runs.family_v3",
                                 description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    heads = sub.add_parser("heads", help="drafter data once, then the ladder and the ablations side by side")
    everything = sub.add_parser("all", help="the v3 target (command A), then the heads, in one command")
    prompts = sub.add_parser("prompts", help="draw the heads' prompts from corpus v3 into one file (for --prompts)")
    prompts.add_argument("--target", type=Path, default=None, help="the target whose tokenizer cuts them (default "
                                                                    "data/models/v3-target)")
    prompts.add_argument("--out", type=Path, required=True, help="the prompts file to write (.pt.gz)")
    prompts.add_argument("--n-sequences", type=int, default=10 * TINY_HEAD_SEQUENCES)
    prompts.add_argument("--seed", type=int, default=0)
    heads.add_argument("--target", type=Path, default=None, help="default data/models/v3-target")
    everything.add_argument("--target-deadline-s", type=float, default=None, help="the target step (default 900 s)")
    everything.add_argument("--target-width", type=int, default=None, help="the target's hidden size (default 256)")
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
        p.add_argument("--rungs", type=float, nargs="+", default=None,
                       help="budget ladder: multiples of --base-steps, the same for both methods (default 1 3 10; "
                            "1 with --smoke)")
        p.add_argument("--base-steps", type=int, default=None, help="steps of rung 1 (default 2000; 4 with --smoke)")
        p.add_argument("--ablation-rung", type=float, default=None,
                       help="the rung of P-EAGLE's ablations (default 3; 1 with --smoke)")
        p.add_argument("--ablations", nargs="*", default=sorted(ABLATIONS),
                       help=f"P-EAGLE ablations, any of {sorted(ABLATIONS)} (default all)")
        p.add_argument("--sample-temperature", type=float, default=1.0,
                       help="temperature of the self-distillation continuations: the one the heads are served at")
        p.add_argument("--n-sequences", type=int, default=10 * TINY_HEAD_SEQUENCES,
                       help="self-distillation sequences (default ten times the tiny heads')")
        p.add_argument("--draft-vocab-size", type=int, default=None,
                       help="default: the target log's proposed draft vocabulary size")
        p.add_argument("--time-budget-s", type=float, default=600.0, help="training seconds of every head (at most)")
        p.add_argument("--batch-size", type=int, default=64, help="the same for every head")
        p.add_argument("--gen-batch", type=int, default=None,
                       help="continuations generated at once (default 4096 on CUDA, 64 on a CPU)")
        p.add_argument("--eval-reserve-s", type=float, default=None,
                       help="seconds kept after each head's training for its own acceptance measurement "
                            "(default 90; 30 with --smoke)")
        p.add_argument("--generator", choices=["lean", "transformers"], default=None,
                       help="what decodes the data's continuations (default: lean on CUDA, transformers on a CPU)")
        p.add_argument("--val-prompts", type=int, default=16, help="validation prompts per domain")
        p.add_argument("--seq-len", type=int, default=None,
                       help="positions per training sequence, prompt included (default the trainers' 256; a head "
                            "drafts worse past the length it was trained on: notebook 08)")
        p.add_argument("--pair-teacher", choices=["separate", "shared"], default="separate",
                       help="each rung's pair as two lockstep processes, each with its own teacher pass (separate: "
                            "how every recorded pair was trained), or in one process that runs the teacher once per "
                            "step for both (shared: `peagle-nb train pair`; the rung-20 pair trained that way with "
                            "--teacher-tf32 at 1.75x the recorded lockstep rate on an H100, heads_h100_r20/; its two "
                            "evaluations run in series)")
        p.add_argument("--peagle-k", type=int, default=8,
                       help="P-EAGLE's deepest trained slot (default 8, every recorded head); to serve past it, e.g. "
                            "the deep-K check of notebook 08, train deeper (EAGLE-3's unroll stays 7)")
        p.add_argument("--teacher-tf32", action="store_true",
                       help="the teacher's fp32 products in TF32 on CUDA (on only in the rung-20 pair's run)")
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--prompts", type=Path, default=None,
                       help="the heads' prompts drawn beforehand (`prompts`): no corpus needed for the heads")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "prompts":
        return prompts_command(args)
    if args.rungs is None:  # smoke: five heads on a CPU, not nine
        args.rungs = [1] if args.smoke else [1, 3, 10]
    if args.ablation_rung is None:
        args.ablation_rung = 1 if args.smoke else 3
    if args.eval_reserve_s is None:
        args.eval_reserve_s = 30.0 if args.smoke else 90.0
    if args.deadline_s is None:
        args.deadline_s = 1800.0 if args.smoke else {"heads": 900.0, "all": 1700.0}[args.command]
    return heads_command(args) if args.command == "heads" else all_command(args)


if __name__ == "__main__":
    sys.exit(main())
