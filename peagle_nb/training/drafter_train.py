"""The training loop both draft heads share (``peagle-nb train eagle3|peagle``, and both at once: ``peagle-nb train
pair``, one teacher pass per step for the two). Explained in notebooks 02, 03 (the pair: 08).

Steps: load the target; build (or reuse, ``--data-cache``) the self-distillation data (target-regenerated
continuations of corpus-train prompts); size the head like the target, pick its draft vocabulary from the
generated tokens' counts, warm-start its embedding and ``lm_head`` from the target (or continue an earlier
run, ``--init-from``); AdamW with warmup + cosine decay (bf16 autocast on CUDA), the target computing each
batch's features and soft labels (``TargetTeacher``); measure greedy acceptance on validation prompts (new
corpus-train prompts, for choosing between runs) and on the held-out prompt sets for K = 1..8; export in
vLLM's layout; write ``training_log.json`` and the model card. The method-specific loss is passed in
(``eagle3.ttt_loss``, ``peagle.cod_loss``).
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable

import torch

from peagle_nb.models.checksums import write_manifest
from peagle_nb.models.head_io import config_to_json
from peagle_nb.models.heads import count_parameters, export_head
from peagle_nb.models.target import load_target
from peagle_nb.files.results import versions
from peagle_nb.training.drafter_cache import get_data
from peagle_nb.training.drafter_config import DrafterTrainConfig
from peagle_nb.training.drafter_data import TargetTeacher, without_domains
from peagle_nb.training.drafter_results import evaluate_and_write
from peagle_nb.training.head_init import make_head
from peagle_nb.training.lockstep import Lockstep
from peagle_nb.training.runtime import device_name, log_line, resolve_device
from peagle_nb.training.schedule import lr_at

__all__ = ["DrafterTrainConfig", "HeadRun", "train_drafter", "train_drafters"]


def train_drafter(cfg: DrafterTrainConfig, loss_fn: Callable) -> dict:
    """Train one head with ``loss_fn(head, batch, cfg, generator) -> (loss, metrics dict)``; export; evaluate."""
    return train_drafters([cfg], [loss_fn])[0]


# what a head trained beside another must share with it: one target, one data set, one batch stream, one schedule
SHARED_FIELDS = ("target", "device", "seed", "corpus", "n_sequences", "seq_len", "prompt_lengths", "greedy_fraction",
                 "sample_temperature", "exclude_domains", "draft_vocab_size", "data_cache", "prompts_file",
                 "gen_batch", "generator", "batch_size", "steps", "time_budget_s", "teacher_tf32", "smoke")


def check_shared(cfgs: list[DrafterTrainConfig]) -> None:
    """Refuse heads that cannot share one teacher: each field of ``SHARED_FIELDS`` must agree (named if not)."""
    first = cfgs[0]
    diff = [f"{f}: {getattr(first, f)!r} ({first.kind}) vs {getattr(c, f)!r} ({c.kind})"
            for c in cfgs[1:] for f in SHARED_FIELDS if getattr(c, f) != getattr(first, f)]
    if diff:
        raise ValueError("heads trained with one teacher must share its target, data and schedule; these differ: "
                         + "; ".join(diff) + ". Fix: give both heads the same options")
    if len(cfgs) > 1 and any(c.lockstep for c in cfgs):
        raise ValueError("--lockstep pairs two processes; heads trained together already run equal steps")


class HeadRun:
    """One head's training state: the head, its optimiser and generator, its loss history; ``step`` is one training
    step on a batch the teacher made (``lab.benchmarks.head_train_step`` times the same step)."""

    def __init__(self, cfg: DrafterTrainConfig, loss_fn: Callable, head, label: str):
        self.cfg, self.loss_fn, self.head, self.label = cfg, loss_fn, head, label
        self.params = [p for p in head.parameters() if p.requires_grad]
        self.opt = torch.optim.AdamW(self.params, lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.95))
        self.gen = torch.Generator().manual_seed(cfg.seed)
        self.history: list[dict] = []
        self.window: list[dict] = []

    def step(self, batch: dict, step: int, progress: float, device: torch.device, seconds: float) -> None:
        cfg = self.cfg
        for gr in self.opt.param_groups:
            gr["lr"] = lr_at(cfg, step, progress)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            loss, metrics = self.loss_fn(self.head, batch, cfg, self.gen)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.params, cfg.grad_clip)
        self.opt.step()
        self.window.append({"loss": float(loss.detach()), **{k: float(v) for k, v in metrics.items()}})
        if (step + 1) % cfg.log_every == 0 or step == cfg.steps - 1:
            avg = {k: sum(w[k] for w in self.window) / len(self.window) for k in self.window[0]}
            self.history.append({"step": step + 1, "seconds": round(seconds, 1), **avg})
            log_line(f"{self.label}step {step + 1}: " + ", ".join(f"{k} {v:.3f}" for k, v in avg.items()))
            self.window = []


@contextlib.contextmanager
def _tf32_matmuls(on: bool):
    """TF32 fp32 matrix products inside the block only (the teacher's: notebook 08 measures what it saves and how
    far it moves the soft labels); the heads' own products run under bf16 autocast either way."""
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = on
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before


def train_drafters(cfgs: list[DrafterTrainConfig], loss_fns: list[Callable]) -> list[dict]:
    """Train heads on one target and one data set, the target computing each batch's features and soft labels
    once for all of them (``peagle-nb train pair``: the budget ladder's pair on the same batches, equal steps, one
    teacher pass per step instead of one per head; ``lab.benchmarks.head_train_step`` measures the saving). The
    first head's generator draws the batches, so one head alone trains exactly as before. Each head is exported
    and evaluated on its own; the summaries come back in ``cfgs`` order."""
    check_shared(cfgs)
    cfg = cfgs[0]
    device = resolve_device(cfg.device)
    torch.manual_seed(cfg.seed)
    target, tokenizer = load_target(cfg.target, device=device)
    target.requires_grad_(False)
    data, data_info = get_data(cfg, target, tokenizer)
    data, data_info = without_domains(data, data_info, tuple(cfg.exclude_domains), target.config.vocab_size,
                                      log_line)
    tokens = data.tokens.to(device)
    together = len(cfgs) > 1
    runs = [HeadRun(c, fn, make_head(c, target, tokenizer, data.draft_ids).to(device),
                     f"{c.kind}: " if together else "") for c, fn in zip(cfgs, loss_fns)]
    first = runs[0].head
    for run in runs[1:]:
        if (run.head.aux_layer_ids != first.aux_layer_ids
                or not torch.equal(run.head.target_to_draft_ids(), first.target_to_draft_ids())):
            raise ValueError(f"{run.cfg.kind} reads other target layers or another draft vocabulary than "
                             f"{cfgs[0].kind}: one teacher cannot serve both. Fix: train them apart")
    # soft labels over the heads' draft vocabulary
    teacher = TargetTeacher(target, first.aux_layer_ids, first.target_to_draft_ids())
    for run in runs:
        log_line(f"{run.cfg.kind}: {count_parameters(run.head) / 1e6:.2f}M parameters, {len(run.head.layers)} "
                 f"layer(s), draft vocab {run.cfg.draft_vocab_size}, device {device}")
        run.head.train()
    if together:
        log_line(f"{' and '.join(c.kind for c in cfgs)} trained together: one teacher pass per step feeds both")
    t0, step = time.time(), 0
    # the budget ladder's pair in two processes: equal steps whatever each one's speed (training.lockstep)
    sync = Lockstep(cfg.lockstep, cfg.kind, log=log_line) if cfg.lockstep else None
    for step in range(cfg.steps):
        elapsed = time.time() - t0
        if cfg.time_budget_s and elapsed > cfg.time_budget_s:
            log_line(f"time budget reached after {step} steps")
            break
        if sync and not sync.may_run(step):
            log_line(f"lockstep: the partner stopped after {step} steps; stopping at the same count")
            break
        progress = max(step / cfg.steps, elapsed / cfg.time_budget_s if cfg.time_budget_s else 0.0)
        idx = torch.randint(0, data.n, (cfg.batch_size,), generator=runs[0].gen)
        with _tf32_matmuls(cfg.teacher_tf32):
            batch = teacher(tokens[idx.to(device)])
        for run in runs:
            run.step(batch, step, progress, device, time.time() - t0)
    else:
        step = cfg.steps
    steps_run = step
    if sync:
        sync.stop(steps_run)
    train_seconds = time.time() - t0
    summaries = []
    for run in runs:
        c, head = run.cfg, run.head
        head.eval()
        c.out.mkdir(parents=True, exist_ok=True)
        export_head(head, c.out)
        write_manifest(c.out)  # shipped heads carry checksums that loading verifies
        summary = {
            "kind": c.kind,
            "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(c).items()},
            "head_config": config_to_json(head.config),
            "params": count_parameters(head),
            "data": data_info,
            "steps_run": steps_run,
            "train_seconds": round(train_seconds, 1),
            "init_from": _earlier_run(c.init_from),
            "history": run.history,
            "device": device_name(device),
            "versions": versions(),
        }
        if together:  # the seconds are the pair's: both heads' steps and one teacher pass each
            summary["trained_with"] = [str(o.cfg.out) for o in runs if o is not run]
        summaries.append(evaluate_and_write(summary, head, target, tokenizer, c, device))
    return summaries


def _earlier_run(init_from: Path | None) -> dict | None:
    """What the run that ``--init-from`` continues did (so a model card states the whole training budget)."""
    if init_from is None:
        return None
    log_path = Path(init_from) / "training_log.json"
    earlier = json.loads(log_path.read_text()) if log_path.is_file() else {}

    def total(key: str) -> float:  # this head's runs and the runs of the head it started from
        return earlier.get(key, 0) + ((earlier.get("init_from") or {}).get(key, 0))

    return {"path": str(init_from), "steps_run": total("steps_run"), "train_seconds": round(total("train_seconds"), 1)}
