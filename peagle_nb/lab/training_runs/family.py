"""The model family on one GPU in two commands: the recipe that produced the shipped tiny models.
Explained in notebook 08.

    python -m peagle_nb.lab.training_runs.family target --out $OUT  # A: target runs side by side, best kept (~5 min)
    python -m peagle_nb.lab.training_runs.family heads --out $OUT   # B: drafter data + three heads side by side, ~9 min
    python -m peagle_nb.lab.training_runs.family target --smoke --out DIR --work DIR2  # the same on a CPU, ~1 minute

Command A trains several targets at once (one process each, ``--runs`` gives their ``--steps``; the learning
rate schedule follows whichever of steps and ``--time-budget-s`` runs out first), keeps the run with the lowest
mean VALIDATION loss, measures how much its own continuations loop, and packs the kept model folder.

Command B (after the kept target is in ``data/models/tiny-target``) builds the self-distillation data once
(continuations sampled from the target at temperature 1), then trains three heads at once on it, each with the
same step cap and wall-clock budget: EAGLE-3 (1 layer, training-time test), P-EAGLE (4 layers, COD) and
P-EAGLE without the Japanese sequences; each measures its own acceptance; then every head is measured per
domain, greedy and sampled (the domain-shift results file, ``peagle_nb.lab.benchmarks.domain_eval``).

Both commands need only this repository, torch and transformers (no vLLM, no network), keep to a global
deadline (``--deadline-s``: phases shrink or stop so the outputs are always written), and leave at most 8 files
in ``--out``: each model folder packed into one ``.tar.gz``, a JSON summary and one log.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Collection
from pathlib import Path

from peagle_nb.files import paths
from peagle_nb.models.checksums import weights_sha256

MAX_OUT_FILE = 16 * 2**20  # what one returned file may weigh
TARGET_NAME, HEAD_NAMES = "tiny-target", ("tiny-eagle3", "tiny-peagle", "tiny-peagle-no-ja")
# Family v3 (32 layers, corpus v3, the tiny target's tokenizer): one run, its wall-clock budget decides the steps.
# Too large for git and for one returned file: packed into parts (`cat v3-target.tar.gz.part* | tar -xz`).
V3_TARGET_NAME = "v3-target"
V3_DATA_FLAGS = ["--corpus", "v3", "--mix-alpha", "0.7"]
V3_SIZE_FLAGS = ["--batch-size", "128", "--seq-len", "512", "--lr", "1e-3", "--eval-windows", "128",
                 "--heldout-windows", "512"]
A_COMMAND = "python -m peagle_nb.lab.training_runs.family target --out $OUT"
B_COMMAND = "python -m peagle_nb.lab.training_runs.family heads --out $OUT"


class Clock:
    """Seconds since the command started, and how many remain before its deadline."""

    def __init__(self, deadline_s: float):
        self.t0, self.deadline_s = time.monotonic(), deadline_s

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def left(self) -> float:
        return self.deadline_s - self.elapsed()


def log_line(msg: str) -> None:
    print(f"[family {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def child_env(work: Path) -> dict:
    """Environment of the training processes: this checkout first on the path, and ``peagle_kernels`` importable
    even where the ``kernels/`` folder is not installed (a plain copy of the repository)."""
    shim = work / "pyshim"
    shim.mkdir(parents=True, exist_ok=True)
    link, kernels = shim / "peagle_kernels", paths.repo_root() / "kernels"
    if not (link.is_symlink() and Path(os.readlink(link)) == kernels):
        # A link left by another checkout (possibly deleted since) is replaced atomically, never reused.
        tmp = shim / f".peagle_kernels.{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(kernels, target_is_directory=True)
        os.replace(tmp, link)
    if str(shim) not in sys.path:
        sys.path.insert(0, str(shim))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(paths.repo_root()), str(shim)] +
                                        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    return env


def spawn(args: list[str], log_path: Path, env: dict) -> subprocess.Popen:
    """``python -m <args>`` in the repository root, output to ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    f = open(log_path, "w", encoding="utf-8")  # noqa: SIM115 -- outlives this call; wait_all closes it
    proc = subprocess.Popen([sys.executable, "-m", *args], cwd=paths.repo_root(), env=env, stdout=f,
                            stderr=subprocess.STDOUT)
    proc.log_file = f  # closed by wait_all
    log_line(f"started pid {proc.pid}: {' '.join(args)}")
    return proc


def wait_all(procs: dict[str, subprocess.Popen], timeout_s: float) -> dict[str, int]:
    """Wait for every process; one still running after ``timeout_s`` is ended (by its own pid)."""
    end = time.monotonic() + max(0.0, timeout_s)
    codes = {}
    for name, proc in procs.items():
        try:
            codes[name] = proc.wait(timeout=max(0.0, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            log_line(f"{name} (pid {proc.pid}) still running at the deadline: ending it")
            proc.terminate()
            try:
                codes[name] = proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                codes[name] = proc.wait()
        proc.log_file.close()
        log_line(f"{name} exited with {codes[name]}")
    return codes


def pack(folder: Path, out_file: Path, arcname: str | None = None) -> dict:
    """``folder`` -> ``out_file`` (.tar.gz whose top entry is ``arcname``, default the folder's name, so that
    ``tar -xzf FILE -C data/models`` puts it in place); refuse a file over the return limit."""
    with tarfile.open(out_file, "w:gz", compresslevel=6) as tar:
        tar.add(folder, arcname=arcname or folder.name)
    size = out_file.stat().st_size
    if size > MAX_OUT_FILE:
        raise SystemExit(f"{out_file.name} is {size / 2**20:.1f} MiB, over the {MAX_OUT_FILE / 2**20:.0f} MiB a "
                         f"returned file may have. Fix: a smaller vocabulary or model (see the model card's sizes)")
    return {"file": out_file.name, "bytes": size, "sha256": hashlib.sha256(out_file.read_bytes()).hexdigest()}


def unpack(tar_file: Path, dest: Path) -> Path:
    """The inverse of :func:`pack`: extract into ``dest`` and return the model folder."""
    with tarfile.open(tar_file, "r:gz") as tar:
        names = {m.name.split("/")[0] for m in tar.getmembers()}
        tar.extractall(dest, filter="data")
    return dest / sorted(names)[0]


def gather_logs(logs: list[Path], out_file: Path) -> None:
    with open(out_file, "w", encoding="utf-8") as f:
        for p in logs:
            f.write(f"===== {p.name}\n")
            f.write(p.read_text(encoding="utf-8", errors="replace") if p.is_file() else "(no output)\n")


def _write_summary(summary: dict, clock: Clock, logs: list[Path], stem: Path) -> None:
    """``stem``.json (the summary, with the command's seconds) and ``stem``.log (every child's output), written
    whether the command finished or failed."""
    summary["seconds"] = round(clock.elapsed(), 1)
    stem.with_suffix(".json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    gather_logs(logs, stem.with_suffix(".log"))


def _device_flags(smoke: bool, device: str | None) -> list[str]:
    return ["--device", device or ("cpu" if smoke else "cuda")]


def _start(args: argparse.Namespace, stage: str) -> tuple[Clock, Path, Path, dict]:
    """A command's clock, its output and work folders (``stage`` under the work folder emptied, so no earlier
    run's files are taken for this one's) and its training processes' environment."""
    clock = Clock(args.deadline_s)
    out, work = Path(args.out), Path(args.work)
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(work / stage, ignore_errors=True)
    return clock, out, work, child_env(work)


# ----------------------------------------------------------------------------------------------- command A
def _family_flags(args: argparse.Namespace) -> list[str]:
    if args.family != "v3":
        return []
    # smoke: the smoke model and sizes on a corpus-v3 prefix, through the same code path
    width = ["--width", str(args.width)] if getattr(args, "width", None) else []
    return [*V3_DATA_FLAGS, "--tokenizer-from", str(paths.models_dir() / TARGET_NAME),
            *([] if args.smoke else V3_SIZE_FLAGS), *width]


def target_command(args: argparse.Namespace) -> int:
    clock, out, work, env = _start(args, "targets")
    v3 = args.family == "v3"
    name_out = V3_TARGET_NAME if v3 else TARGET_NAME
    runs = args.runs or ([20, 40] if args.smoke else [100_000] if v3 else [1200, 2000, 4000])
    procs, logs = {}, []
    if v3:
        env = {**env, "TOKENIZERS_PARALLELISM": "true"}  # tens of millions of tokens to encode, on every core
    for steps in runs:
        name = f"steps{steps}"
        cmd = ["peagle_nb.cli", "train", "target", "--out", str(work / "targets" / name), "--steps", str(steps),
               "--eval-every", str(args.eval_every or (10 if args.smoke else 100)),
               *_device_flags(args.smoke, args.device), *_family_flags(args)]
        cmd += ["--smoke"] if args.smoke else ["--time-budget-s", str(args.time_budget_s)]
        logs.append(work / "targets" / f"{name}.log")
        procs[name] = spawn(cmd, logs[-1], env)
    codes = wait_all(procs, clock.left() - args.reserve_s)
    summary = {"command": _a_command(args), "runs": runs, "exit_codes": codes}
    try:
        kept = choose_target(work / "targets", runs, args)
        summary["selection"] = kept["selection"]
        log_line(f"kept {kept['name']} (mean validation loss {kept['mean']:.4f})")
        add_continuations(kept["folder"], args, clock)
        if v3:
            summary["weights_sha256"] = weights_sha256(kept["folder"])
            _record_in_log(kept["folder"], weights_sha256=summary["weights_sha256"])
            summary["packed"] = pack_parts(kept["folder"], out / f"{name_out}.tar.gz", arcname=name_out)
        else:
            summary["packed"] = [pack(kept["folder"], out / f"{name_out}.tar.gz", arcname=name_out)]
    finally:
        _write_summary(summary, clock, logs, out / "family_target")
    log_line(f"done in {clock.elapsed():.0f} s: {', '.join(sorted(p.name for p in out.iterdir()))}")
    return 0


def _a_command(args: argparse.Namespace) -> str:
    return A_COMMAND + (" --family v3" if args.family == "v3" else "") + (" --smoke" if args.smoke else "")


def _record_in_log(folder: Path, **fields) -> None:
    """Add ``fields`` to the model's training log and rewrite its card."""
    from peagle_nb.training.target import write_card

    path = folder / "training_log.json"
    log = json.loads(path.read_text(encoding="utf-8"))
    log.update(fields)
    path.write_text(json.dumps(log, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    write_card(folder)


def pack_parts(folder: Path, out_file: Path, arcname: str, part_bytes: int = MAX_OUT_FILE - 2**20) -> list[dict]:
    """:func:`pack` for a model over the per-file limit: the .tar.gz cut into ``out_file.partNN`` pieces
    (``cat NAME.tar.gz.part* | tar -xz -C data/models`` or :func:`unpack_parts` joins them)."""
    whole = out_file.with_name(out_file.name + ".tmp")
    with tarfile.open(whole, "w:gz", compresslevel=6) as tar:
        tar.add(folder, arcname=arcname)
    parts = []
    with open(whole, "rb") as f:
        for i, chunk in enumerate(iter(lambda: f.read(part_bytes), b"")):
            part = out_file.with_name(f"{out_file.name}.part{i:02d}")
            part.write_bytes(chunk)
            parts.append({"file": part.name, "bytes": len(chunk), "sha256": hashlib.sha256(chunk).hexdigest()})
    whole.unlink()
    return parts


def unpack_parts(first_part: Path, dest: Path) -> Path:
    """Join ``NAME.tar.gz.part00, part01, ...`` (the files beside ``first_part``) and extract into ``dest``."""
    import io

    stem = first_part.name.rsplit(".part", 1)[0]
    data = b"".join(p.read_bytes() for p in sorted(first_part.parent.glob(stem + ".part*")))
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        names = {m.name.split("/")[0] for m in tar.getmembers()}
        tar.extractall(dest, filter="data")
    return dest / sorted(names)[0]


def choose_target(folder: Path, runs: list[int], args: argparse.Namespace) -> dict:
    """The finished run with the lowest mean validation loss; its log gets the ``selection`` record (every run's
    numbers) and the command that reproduces it, its card is rewritten."""
    from peagle_nb.training.target import write_card

    rows = []
    for steps in runs:
        path = folder / f"steps{steps}" / "training_log.json"
        if not path.is_file():
            continue
        log = json.loads(path.read_text(encoding="utf-8"))
        val = log["validation_loss"]
        rows.append({"name": f"steps{steps}", "steps": steps, "steps_run": log["steps_run"],
                     "best_step": log["best_step"], "train_seconds": log["train_seconds"], "validation_loss": val,
                     "mean_validation_loss": sum(val.values()) / len(val)})
    if not rows:
        raise SystemExit("no target run finished: see family_target.log for each run's output")
    best = min(rows, key=lambda r: r["mean_validation_loss"])
    kept = folder / best["name"]
    log = json.loads((kept / "training_log.json").read_text(encoding="utf-8"))
    budget = "" if args.smoke else f", each capped at {args.time_budget_s:g} s of training"
    log["selection"] = {
        "how": (f"{len(runs)} runs side by side on {log['device']} (same seed and data, `--steps` "
                f"{' / '.join(map(str, runs))}{budget}); each keeps its own best-validation checkpoint, and the run "
                f"with the lowest mean validation loss was kept. Held-out numbers played no part in the choice."),
        "runs": rows, "kept": best["name"]}
    budget_flag = "" if args.smoke else f" --time-budget-s {args.time_budget_s:g}"
    name_out = V3_TARGET_NAME if args.family == "v3" else TARGET_NAME
    log["reproduce"] = (f"{_a_command(args)}   # all runs, within {args.deadline_s:.0f} s; "
                        f"this run alone: "
                        f"peagle-nb train target --device cuda --steps {best['steps']} --eval-every "
                        f"{log['config']['eval_every']}{budget_flag} {' '.join(_family_flags(args))} "
                        f"--out data/models/{name_out}").replace("  --out", " --out")
    (kept / "training_log.json").write_text(json.dumps(log, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    write_card(kept)
    return {"name": best["name"], "mean": best["mean_validation_loss"], "folder": kept, "selection": log["selection"]}


def add_continuations(folder: Path, args: argparse.Namespace, clock: Clock) -> None:
    """How much the kept target's own continuations of the held-out prompts loop, into its log and card."""
    import torch

    from peagle_nb.models.target import load_target
    from peagle_nb.text.prompts import load_prompts
    from peagle_nb.training.target import write_card
    from peagle_nb.training.target_eval import continuation_report

    if clock.left() < args.reserve_s / 2:
        log_line("no time left for the continuation check")
        return
    device = "cuda" if (args.device or ("cpu" if args.smoke else "cuda")) == "cuda" else "cpu"
    model, tok = load_target(folder, dtype=torch.float32, device=device)
    n = 2 if args.smoke else args.continuation_prompts
    sets = {d: load_prompts(d, n) for d in ("prose", "code", "ja")}
    report = continuation_report(model, tok, sets, max_new_tokens=16 if args.smoke else args.continuation_tokens)
    log = json.loads((folder / "training_log.json").read_text(encoding="utf-8"))
    log["continuations"] = report
    (folder / "training_log.json").write_text(json.dumps(log, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    write_card(folder)
    log_line("continuations: " + ", ".join(
        f"{k} greedy {100 * v['greedy']['repetition_fraction']:.0f}% / sampled "
        f"{100 * v['sampled']['repetition_fraction']:.0f}% repeated" for k, v in report.items()))


def determinism_command(args: argparse.Namespace) -> int:
    """Is target training bit-deterministic on this device? Two runs with the same seed, data and flags (the
    family's, ``--steps`` short) side by side; their weights' sha256 and every logged loss are compared and
    written to ``determinism.json`` in ``--out``."""
    clock, out, work, env = _start(args, "determinism")
    if args.family == "v3":
        env = {**env, "TOKENIZERS_PARALLELISM": "true"}
    procs, logs = {}, []
    for name in ("run_a", "run_b"):
        logs.append(work / "determinism" / f"{name}.log")
        procs[name] = spawn(["peagle_nb.cli", "train", "target", "--out", str(work / "determinism" / name),
                             "--steps", str(args.steps), "--eval-every", str(args.steps),
                             *_device_flags(args.smoke, args.device), *_family_flags(args),
                             *(["--smoke"] if args.smoke else [])], logs[-1], env)
    codes = wait_all(procs, clock.left() - args.reserve_s)
    runs = {}
    for name in procs:
        folder = work / "determinism" / name
        if (folder / "training_log.json").is_file():
            log = json.loads((folder / "training_log.json").read_text(encoding="utf-8"))
            runs[name] = {"weights_sha256": weights_sha256(folder), "first_train_loss": log["first_train_loss"],
                          "history": log["history"], "heldout_loss": log["heldout_loss"], "device": log["device"]}
    result = {"command": f"{A_COMMAND.replace(' target ', ' determinism ')} --family {args.family} --steps "
                         f"{args.steps}", "exit_codes": codes, "runs": runs}
    if len(runs) == 2:
        a, b = runs["run_a"], runs["run_b"]
        result["weights_identical"] = a["weights_sha256"] == b["weights_sha256"]
        def losses(run: dict) -> list:  # the history without its wall-clock seconds
            return [(h.get("train_loss"), h["validation_loss"]) for h in run["history"]] + [run["heldout_loss"]]

        result["losses_identical"] = losses(a) == losses(b)
        result["heldout_loss_max_abs_difference"] = max(abs(a["heldout_loss"][d] - b["heldout_loss"][d])
                                                        for d in a["heldout_loss"])
    _write_summary(result, clock, logs, out / "determinism")
    log_line(f"determinism: weights identical {result.get('weights_identical')}, losses identical "
             f"{result.get('losses_identical')}")
    return 0


# ----------------------------------------------------------------------------------------------- command B
def _proposed_draft_vocab(target: Path) -> int | None:
    log = Path(target) / "training_log.json"
    if not log.is_file():
        return None
    return json.loads(log.read_text(encoding="utf-8")).get("tokenizer", {}).get("proposed_draft_vocab_size")


def check_val_corpus(args: argparse.Namespace) -> None:
    """Before the data is built: the heads' validation prompts come from the committed corpus after training, so a
    corpus moved out (say, to make room in a GPU carry) would fail the run only at its end, the heads lost."""
    from peagle_nb.text.corpus import missing_files

    if args.val_prompts and not args.smoke and (missing := missing_files()):
        raise SystemExit(f"--val-prompts {args.val_prompts} needs the committed corpus after training, but "
                         f"{', '.join(map(str, missing))} is missing. Fix: restore it (`git checkout data/corpus`; "
                         f"in a GPU carry, move other files out) or pass --val-prompts 0")


def heads_command(args: argparse.Namespace) -> int:
    clock, out, work, env = _start(args, "heads")
    target = Path(args.target) if args.target else paths.models_dir() / TARGET_NAME
    if not (target / "config.json").is_file():
        raise SystemExit(f"no target at {target}. Fix: run command A, unpack tiny-target.tar.gz into "
                         f"data/models/ (or pass --target DIR)")
    check_val_corpus(args)
    vd = args.draft_vocab_size or _proposed_draft_vocab(target) or (256 if args.smoke else 2048)
    cache = work / "heads" / "drafter_data.pt"
    common = ["--target", str(target), *_device_flags(args.smoke, args.device), "--data-cache", str(cache),
              "--draft-vocab-size", str(vd), "--seed", str(args.seed)]
    if args.smoke:
        common.append("--smoke")
    else:
        common += ["--n-sequences", str(args.n_sequences)]
    logs = [work / "heads" / "data.log"]
    summary: dict = {"command": B_COMMAND + (" --smoke" if args.smoke else ""), "target": str(target),
                     "draft_vocab_size": vd}
    try:
        codes = wait_all({"data": spawn(["peagle_nb.cli", "train", "peagle", *common, "--data-only"], logs[0], env)},
                         clock.left() - args.reserve_s)
        if codes["data"] != 0:
            raise SystemExit("building the drafter data failed: see family_heads.log")
        summary["data_seconds"] = round(clock.elapsed(), 1)
        budget = min(args.time_budget_s, clock.left() - args.eval_reserve_s - args.reserve_s)
        summary["head_time_budget_s"] = None if args.smoke else round(budget, 1)
        if budget < 10 and not args.smoke:
            raise SystemExit(f"only {budget:.0f} s left for training the heads: raise --deadline-s or lower "
                             f"--n-sequences")
        steps = args.steps or (8 if args.smoke else 2000)
        per_head = ["--steps", str(steps)] + ([] if args.smoke else [
            "--time-budget-s", f"{budget:.0f}", "--batch-size", str(args.batch_size), "--val-prompts",
            str(args.val_prompts)])
        if args.smoke:
            per_head += ["--val-prompts", "0"]  # the validation measurement is covered by the trainer's own tests
        depth = [] if args.smoke else ["--k"]  # smoke runs keep the trainers' small smoke depths
        specs = {"tiny-eagle3": ["eagle3", *depth, *(["7"] if depth else [])],
                 "tiny-peagle": ["peagle", *depth, *(["8"] if depth else [])],
                 "tiny-peagle-no-ja": ["peagle", *depth, *(["8"] if depth else []), "--exclude-domain", "ja"]}
        procs = {}
        for name, (kind, *extra) in specs.items():
            logs.append(work / "heads" / f"{name}.log")
            procs[name] = spawn(["peagle_nb.cli", "train", kind, *common, *per_head, *extra,
                                 "--out", str(work / "heads" / name)], logs[-1], env)
        summary["exit_codes"] = wait_all(procs, clock.left() - args.reserve_s)
        summary["train_done_seconds"] = round(clock.elapsed(), 1)
        finished = [n for n in HEAD_NAMES if (work / "heads" / n / "training_log.json").is_file()]
        summary["failed"] = [n for n in HEAD_NAMES if n not in finished]
        annotate_heads(work / "heads", finished, args, steps, budget)
        summary["heads"] = {n: head_summary(work / "heads" / n) for n in finished}
        summary["domain_shift"] = measure_domain_shift(work / "heads", target, finished, args, clock, env, logs,
                                                       out / "domain_shift.json")
        summary["packed"] = [pack(work / "heads" / n, out / f"{n}.tar.gz") for n in finished]
    finally:
        _write_summary(summary, clock, logs, out / "family_heads")
    log_line(f"done in {clock.elapsed():.0f} s: {', '.join(sorted(p.name for p in out.iterdir()))}")
    return heads_exit(HEAD_NAMES, summary)


def heads_exit(planned: Collection[str], summary: dict) -> int:
    """0 when every planned head finished, else 1 with the failed ones named: a chain (``v3_lease.sh``) must not
    go on to sweep heads that are not there."""
    if failed := summary.get("failed"):
        codes, logs = summary.get("exit_codes", {}), summary.get("logs", {})
        log_line(f"{len(failed)} of {len(planned)} heads failed: " + ", ".join(
            f"{n} (exit {codes.get(n)}, see {logs.get(n, n + '.log')} in family_heads.log)" for n in failed))
        return 1
    return 0


def _write_head_card(folder: Path) -> None:
    try:  # the drafter trainer keeps its card writer in its results module once split into modules
        from peagle_nb.training.drafter_results import write_card
    except ImportError:
        from peagle_nb.training.drafter_train import write_card
    write_card(folder)


def annotate_heads(folder: Path, names: list[str], args: argparse.Namespace, steps: int, budget: float) -> None:
    """A note in every head's log (kept in its card): how it was trained, beside which heads, and the command."""
    logs = {n: json.loads((folder / n / "training_log.json").read_text(encoding="utf-8")) for n in names}
    for name, log in logs.items():
        others = ", ".join(f"`{o}` ({logs[o]['steps_run']} steps, {logs[o]['train_seconds']:.0f} s)" for o in names
                           if o != name)
        note = (f"Trained by `{B_COMMAND}{' --smoke' if args.smoke else ''}` on {log['device']}: the self-distillation "
                f"data was built once, then this head and {others} trained at the same time on it, each capped at "
                f"{steps} steps" + ("" if args.smoke else f" and {budget:.0f} s of training")
                + f"; the whole command keeps to a {args.deadline_s:.0f} s deadline.")
        log.setdefault("notes", [])
        log["notes"] = [n for n in log["notes"]
                        if not n.startswith("Trained by `python -m peagle_nb.lab.training_runs.family")]
        log["notes"].append(note)
        (folder / name / "training_log.json").write_text(json.dumps(log, indent=1) + "\n", encoding="utf-8")
    for name in names:  # the P-EAGLE cards compare with the EAGLE-3 head beside them, now that it is measured
        _write_head_card(folder / name)


def head_summary(folder: Path) -> dict:
    log = json.loads((folder / "training_log.json").read_text(encoding="utf-8"))
    acc = log.get("acceptance", {})
    manifest = folder / "checksums.json"  # names the exact weights measured, also when they are not shipped
    files = json.loads(manifest.read_text(encoding="utf-8"))["files"] if manifest.is_file() else {}
    return {"kind": log["kind"], "steps_run": log["steps_run"], "train_seconds": log["train_seconds"],
            "excluded_domains": log["data"].get("excluded_domains", []),
            "greedy_tau_k7": {name: res["7"]["tau"] for name, res in acc.items() if "7" in res},
            "weights_sha256": {n: f["sha256"] for n, f in files.items() if n.endswith(".safetensors")}}


def measure_domain_shift(folder: Path, target: Path, names: list[str], args: argparse.Namespace, clock: Clock,
                         env: dict, logs: list[Path], out_file: Path) -> dict:
    """One process per head measures it on every prompt set (``evaluate`` subcommand); the records are merged
    into the domain-shift results file."""
    from peagle_nb.lab.benchmarks.domain_eval import make_domain_shift_doc
    from peagle_nb.files.results import write_results

    deadline = clock.left() - args.reserve_s
    procs = {}
    for name in names:
        logs.append(folder / f"evaluate-{name}.log")
        procs[name] = spawn(["peagle_nb.lab.training_runs.family", "evaluate", "--target", str(target), "--head",
                             str(folder / name), "--name", name.removeprefix("tiny-"),
                             "--out", str(folder / f"evaluate-{name}.json"),
                             "--deadline-s", f"{max(0.0, deadline - 20):.0f}",  # room for the configuration under way
                             *_device_flags(args.smoke, args.device)]
                            + (["--smoke"] if args.smoke else ["--prompts", str(args.shift_prompts),
                                                               "--max-new-tokens", str(args.shift_max_new_tokens)]),
                            logs[-1], env)
    wait_all(procs, deadline)
    records, heads = [], {}
    for name in names:
        path = folder / f"evaluate-{name}.json"
        if path.is_file():
            records += json.loads(path.read_text(encoding="utf-8"))
            heads[name.removeprefix("tiny-")] = head_summary(folder / name)
    if not records:
        return {"written": False}
    doc = make_domain_shift_doc(records, heads, notes=(
        f"{B_COMMAND}{' --smoke' if args.smoke else ''}: each head on every held-out prompt set at K="
        f"{records[0]['k']}, {records[0]['max_new_tokens']} new tokens, greedy (teacher-forced walk) and sampled at "
        f"T=1 by the engine (one record per seed); raw per-prompt step data kept in each run"))
    write_results(out_file, doc)
    return {"written": True, "runs": len(records), "domain_shift": doc["summary"]["domain_shift"]}


def evaluate_command(args: argparse.Namespace) -> int:
    """One head on every held-out prompt set, greedy and sampled (a child of command B; also usable alone)."""
    import torch

    from peagle_nb.lab.benchmarks.domain_eval import evaluate_heads
    from peagle_nb.models.heads import load_head
    from peagle_nb.models.target import load_target
    from peagle_nb.training.drafter_eval import read_prompt_ids

    clock = Clock(args.deadline_s)
    device = args.device or ("cpu" if args.smoke else "cuda")
    target, tok = load_target(args.target, dtype=torch.float32, device=device)
    head = load_head(args.head, device=device)
    n = 2 if args.smoke else args.prompts
    sets = {d: read_prompt_ids(tok, paths.prompts_dir() / f"{d}.jsonl", n) for d in ("prose", "code", "ja")}
    seeds = [0, 1] if args.smoke else args.seeds
    records = evaluate_heads(target, tok, {args.name: (head.kind, head)}, sets, k=3 if args.smoke else args.k,
                             max_new_tokens=16 if args.smoke else args.max_new_tokens, seeds=seeds,
                             deadline=time.monotonic() + clock.left(), log=log_line)
    Path(args.out).write_text(json.dumps(records) + "\n", encoding="utf-8")
    return 0


def merge_command(args: argparse.Namespace) -> int:
    """Heads trained elsewhere (``NAME=DIR`` each, e.g. command B's or the trainers' own outputs): run ``evaluate``
    for each, one after another on this machine, and merge the records into the domain-shift results file."""
    from peagle_nb.lab.benchmarks.domain_eval import check_recomputes, make_domain_shift_doc
    from peagle_nb.files.results import write_results

    pairs = [spec.split("=", 1) for spec in args.heads]
    if any(len(p) != 2 for p in pairs):
        raise SystemExit("give each head as NAME=DIR (e.g. peagle-no-ja=/path/to/tiny-peagle-no-ja)")
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    records, heads = [], {}
    for name, folder in pairs:
        out = work / f"evaluate-{name}.json"
        evaluate_command(argparse.Namespace(deadline_s=args.deadline_s, device=args.device, smoke=False,
                                            target=args.target, head=Path(folder), name=name, out=out,
                                            prompts=args.prompts, k=args.k, max_new_tokens=args.max_new_tokens,
                                            seeds=args.seeds))
        records += json.loads(out.read_text(encoding="utf-8"))
        heads[name] = head_summary(Path(folder))
    doc = make_domain_shift_doc(records, heads, notes=(
        f"every head on every held-out prompt set at K={args.k}, {args.max_new_tokens} new tokens, {args.prompts} "
        f"prompts, greedy (teacher-forced walk) and sampled at T=1 by the engine (seeds {args.seeds}); raw per-prompt "
        "step data kept in each run"))
    check_recomputes(doc)
    write_results(args.out, doc)
    log_line(f"wrote {args.out}")
    return 0


# ----------------------------------------------------------------------------------------------------- CLI
def _is_family_flag(argv: list[str], i: int) -> bool:
    return argv[i] == "--family" or argv[i].startswith("--family=") or (i > 0 and argv[i - 1] == "--family")


def _family_of(argv: list[str]) -> str:
    for i, a in enumerate(argv):
        if a.startswith("--family="):
            return a.split("=", 1)[1]
        if a == "--family" and i + 1 < len(argv):
            return argv[i + 1]
    return "tiny"


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m peagle_nb.lab.training_runs.family",
                                 description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    a = sub.add_parser("target", help="command A: train targets side by side, keep the best on validation")
    b = sub.add_parser("heads", help="command B: drafter data + EAGLE-3, P-EAGLE, P-EAGLE without Japanese "
                                     "(--family v3: the ladder and ablations, see family_v3)")
    sub.add_parser("all", help="family v3 (--family v3): the target, then the heads, in one command (family_v3)")
    e = sub.add_parser("evaluate", help="one head on every prompt set, greedy and sampled (used by command B)")
    m = sub.add_parser("shift", help="evaluate heads trained elsewhere and write the domain-shift results file")
    d = sub.add_parser("determinism", help="two identical short target runs: is training bit-deterministic here?")
    d.add_argument("--family", choices=["tiny", "v3"], default="v3")
    d.add_argument("--steps", type=int, default=30)
    d.add_argument("--out", type=Path, required=True)
    d.add_argument("--work", type=Path, default=Path("/tmp/peagle-family"))
    d.add_argument("--reserve-s", type=float, default=10.0)
    d.add_argument("--deadline-s", type=float, default=600.0)
    d.add_argument("--smoke", action="store_true")
    d.add_argument("--device", choices=["cpu", "cuda"], default=None)
    m.add_argument("--heads", nargs="+", required=True, metavar="NAME=DIR",
                   help="e.g. eagle3=data/models/tiny-eagle3 peagle=... peagle-no-ja=... (a no-<set> pair: the gap)")
    m.add_argument("--target", type=Path, default=paths.models_dir() / "tiny-target")
    m.add_argument("--out", type=Path, default=paths.results_dir() / "domain_shift" / "domain_shift.json")
    m.add_argument("--work", type=Path, default=Path("/tmp/peagle-shift"))
    m.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    m.add_argument("--prompts", type=int, default=16)
    m.add_argument("--k", type=int, default=7)
    m.add_argument("--max-new-tokens", type=int, default=96)
    m.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    m.add_argument("--deadline-s", type=float, default=3600.0, help="per head")
    for p in (a, b):
        p.add_argument("--out", type=Path, required=True, help="folder for the packed models, summary and log")
        p.add_argument("--work", type=Path, default=Path("/tmp/peagle-family"), help="scratch folder")
        p.add_argument("--reserve-s", type=float, default=25.0, help="seconds kept for packing at the end")
    for p in (a, b, e):
        p.add_argument("--smoke", action="store_true", help="tiny sizes on a CPU (tests)")
        p.add_argument("--device", choices=["cpu", "cuda"], default=None, help="default: cuda (cpu with --smoke)")
    a.add_argument("--runs", type=int, nargs="+", default=None,
                   help="--steps of each target run (default 1200 2000 4000)")
    a.add_argument("--time-budget-s", type=float, default=None,
                   help="training seconds per target run (default 200; 600 for family v3)")
    a.add_argument("--eval-every", type=int, default=None, help="validation every N steps (default 100)")
    a.add_argument("--width", type=int, default=None, help="family v3: the target's hidden size (default 256)")
    a.add_argument("--continuation-prompts", type=int, default=8, help="prompts per set for the loop check")
    a.add_argument("--continuation-tokens", type=int, default=None,
                   help="new tokens of each continuation in the loop check (default 128; 256 for family v3)")
    a.add_argument("--family", choices=["tiny", "v3"], default="tiny",
                   help="tiny: the CPU family (three runs, the best kept); v3: 32 layers on corpus v3, one run "
                        "(needs data/corpus/v3: python data/corpus/build_corpus_v3.py)")
    a.add_argument("--deadline-s", type=float, default=None,
                   help="the whole command's wall-clock limit (default 345 s; 1800 s with --smoke)")
    b.add_argument("--target", type=Path, default=None, help="target folder (default data/models/tiny-target)")
    b.add_argument("--family", choices=["tiny", "v3"], default="tiny",
                   help="v3: the ladder and ablations on the v3 target (options: family_v3 heads --help)")
    b.add_argument("--n-sequences", type=int, default=32768, help="self-distillation sequences")
    b.add_argument("--draft-vocab-size", type=int, default=None,
                   help="default: the target log's proposed draft vocabulary size")
    b.add_argument("--steps", type=int, default=None,
                   help="step cap of every head (default 2000: reached by all three within the budget on an "
                        "H200, P-EAGLE in 285 s with the three side by side)")
    b.add_argument("--time-budget-s", type=float, default=330.0, help="training seconds of every head (at most)")
    b.add_argument("--batch-size", type=int, default=64)
    b.add_argument("--val-prompts", type=int, default=16, help="validation prompts per domain")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--shift-prompts", type=int, default=16, help="prompts per set in the per-domain measurement")
    b.add_argument("--shift-max-new-tokens", type=int, default=96)
    b.add_argument("--eval-reserve-s", type=float, default=150.0,
                   help="seconds kept after training for the heads' own and the per-domain measurements")
    b.add_argument("--deadline-s", type=float, default=None,
                   help="the whole command's wall-clock limit (default 565 s; 1800 s with --smoke)")
    e.add_argument("--target", type=Path, required=True)
    e.add_argument("--head", type=Path, required=True)
    e.add_argument("--name", required=True, help="the head's name in the results (e.g. peagle-no-ja)")
    e.add_argument("--out", type=Path, required=True, help="JSON file of run records")
    e.add_argument("--prompts", type=int, default=16)
    e.add_argument("--k", type=int, default=7)
    e.add_argument("--max-new-tokens", type=int, default=96)
    e.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    e.add_argument("--deadline-s", type=float, default=600.0)
    return ap


def _work_of(argv: list[str]) -> Path:
    """The ``--work`` folder named on the command line (``--work X`` or ``--work=X``), else the default."""
    for i, a in enumerate(argv):
        if a == "--work" and i + 1 < len(argv):
            return Path(argv[i + 1])
        if a.startswith("--work="):
            return Path(a.split("=", 1)[1])
    return Path("/tmp/peagle-family")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["heads"], ["all"]) and _family_of(argv) == "v3":
        # family v3's heads live in their own module, which builds on this one: run it as a child process
        v3_args = [a for i, a in enumerate(argv) if not _is_family_flag(argv, i)]
        return subprocess.call([sys.executable, "-m", "peagle_nb.lab.training_runs.family_v3", *v3_args],
                               cwd=paths.repo_root(), env=child_env(_work_of(argv)))
    if argv[:1] == ["all"]:
        raise SystemExit("`all` (the target, then the heads, in one command) is family v3's: add --family v3. "
                         "The tiny family: `target`, then `heads`")
    args = build_parser().parse_args(argv)
    if args.command == "target" and args.family == "v3" and not args.smoke:
        args.time_budget_s = args.time_budget_s if args.time_budget_s is not None else 600.0
        args.deadline_s = args.deadline_s or 900.0  # the limit: 15 minutes for the whole command
    if args.command == "target":
        args.time_budget_s = 200.0 if args.time_budget_s is None else args.time_budget_s
        args.continuation_tokens = args.continuation_tokens or (256 if args.family == "v3" else 128)
    if args.command in ("target", "heads") and args.deadline_s is None:
        args.deadline_s = 1800.0 if args.smoke else {"target": 345.0, "heads": 565.0}[args.command]
    if args.command == "target":
        return target_command(args)
    if args.command == "heads":
        return heads_command(args)
    if args.command == "shift":
        return merge_command(args)
    if args.command == "determinism":
        return determinism_command(args)
    return evaluate_command(args)


if __name__ == "__main__":
    sys.exit(main())
