"""The training loop both draft heads share (``peagle-nb train eagle3|peagle``). Explained in notebooks 02, 03.

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

__all__ = ["DrafterTrainConfig", "train_drafter"]


def train_drafter(cfg: DrafterTrainConfig, loss_fn: Callable) -> dict:
    """Train one head with ``loss_fn(head, batch, cfg, generator) -> (loss, metrics dict)``; export; evaluate."""
    device = resolve_device(cfg.device)
    torch.manual_seed(cfg.seed)
    target, tokenizer = load_target(cfg.target, device=device)
    target.requires_grad_(False)
    data, data_info = get_data(cfg, target, tokenizer)
    data, data_info = without_domains(data, data_info, tuple(cfg.exclude_domains), target.config.vocab_size,
                                      log_line)
    tokens = data.tokens.to(device)
    head = make_head(cfg, target, tokenizer, data.draft_ids).to(device)
    # soft labels over the head's draft vocabulary
    teacher = TargetTeacher(target, head.aux_layer_ids, head.target_to_draft_ids())
    params = [p for p in head.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.95))
    gen = torch.Generator().manual_seed(cfg.seed)
    history, t0, step = [], time.time(), 0
    log_line(f"{cfg.kind}: {count_parameters(head) / 1e6:.2f}M parameters, {len(head.layers)} layer(s), "
        f"draft vocab {cfg.draft_vocab_size}, device {device}")
    head.train()
    window = []
    # the budget ladder's pair: equal steps whatever each one's speed (training.lockstep)
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
        for gr in opt.param_groups:
            gr["lr"] = lr_at(cfg, step, progress)
        idx = torch.randint(0, data.n, (cfg.batch_size,), generator=gen)
        batch = teacher(tokens[idx.to(device)])
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            loss, metrics = loss_fn(head, batch, cfg, gen)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
        opt.step()
        window.append({"loss": float(loss.detach()), **{k: float(v) for k, v in metrics.items()}})
        if (step + 1) % cfg.log_every == 0 or step == cfg.steps - 1:
            avg = {k: sum(w[k] for w in window) / len(window) for k in window[0]}
            history.append({"step": step + 1, "seconds": round(time.time() - t0, 1), **avg})
            log_line(f"step {step + 1}: " + ", ".join(f"{k} {v:.3f}" for k, v in avg.items()))
            window = []
    else:
        step = cfg.steps
    steps_run = step
    if sync:
        sync.stop(steps_run)
    train_seconds = time.time() - t0
    head.eval()

    cfg.out.mkdir(parents=True, exist_ok=True)
    export_head(head, cfg.out)
    write_manifest(cfg.out)  # shipped heads carry checksums that loading verifies
    summary = {
        "kind": cfg.kind,
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()},
        "head_config": config_to_json(head.config),
        "params": count_parameters(head),
        "data": data_info,
        "steps_run": steps_run,
        "train_seconds": round(train_seconds, 1),
        "init_from": _earlier_run(cfg.init_from),
        "history": history,
        "device": device_name(device),
        "versions": versions(),
    }
    return evaluate_and_write(summary, head, target, tokenizer, cfg, device)


def _earlier_run(init_from: Path | None) -> dict | None:
    """What the run that ``--init-from`` continues did (so a model card states the whole training budget)."""
    if init_from is None:
        return None
    log_path = Path(init_from) / "training_log.json"
    earlier = json.loads(log_path.read_text()) if log_path.is_file() else {}

    def total(key: str) -> float:  # this head's runs and the runs of the head it started from
        return earlier.get(key, 0) + ((earlier.get("init_from") or {}).get(key, 0))

    return {"path": str(init_from), "steps_run": total("steps_run"), "train_seconds": round(total("train_seconds"), 1)}
