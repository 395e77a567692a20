"""What a drafter run measures after training and what it writes: greedy acceptance on the held-out prompt
sets (and, for choosing between runs, on new corpus-train prompts), ``training_log.json`` and the model card;
``--eval-only`` re-measures an exported head. Explained in notebooks 02, 03."""

from __future__ import annotations

import json
import time
from pathlib import Path

import torch

from peagle_nb.files import paths
from peagle_nb.text.corpus import DOMAINS, load_documents
from peagle_nb.models.heads import DraftHead, load_head
from peagle_nb.models.target import load_target
from peagle_nb.files.results import versions
from peagle_nb.training.drafter_config import DrafterTrainConfig
from peagle_nb.training.drafter_data import sample_prompt_ids
from peagle_nb.training.drafter_eval import evaluate_head, read_prompt_ids
from peagle_nb.training.model_cards import drafter_card
from peagle_nb.training.runtime import device_name, log_line, resolve_device


def heldout_prompt_sets(tokenizer, n: int | None, seed: int = 0) -> dict[str, list[torch.Tensor]]:
    """``data/prompts/{prose,code}.jsonl`` token ids; if a file is missing (early checkouts), prompts cut
    from the corpus's held-out documents instead (named ``<domain>-corpus-heldout``)."""
    sets = {}
    for domain in DOMAINS:
        path = paths.prompts_dir() / f"{domain}.jsonl"
        if path.is_file():
            sets[domain] = read_prompt_ids(tokenizer, path, n)
        else:
            docs = load_documents(domain, "heldout")
            sets[f"{domain}-corpus-heldout"] = sample_prompt_ids(tokenizer, docs, n or 32, (24, 32, 40), seed + 99)
    return sets


def validation_prompt_sets(tokenizer, n: int, seed: int = 0) -> dict[str, list[torch.Tensor]]:
    """``n`` prompts per domain cut from the corpus's VALIDATION documents: for choosing between training runs
    without looking at the held-out sets the model cards report."""
    return {f"{domain}-val": sample_prompt_ids(tokenizer, load_documents(domain, "validation"), n, (24, 32, 40),
                                               seed=seed + 1000 + i)
            for i, domain in enumerate(DOMAINS)}


def evaluate_and_write(summary: dict, head: DraftHead, target, tokenizer, cfg: DrafterTrainConfig,
                       device) -> dict:
    """Measure greedy acceptance for K = 1..eval_k_max on the held-out sets; write ``training_log.json`` and
    the model card into ``cfg.out``."""
    t1 = time.time()
    ks = range(1, cfg.eval_k_max + 1)
    head = head.to(device).eval()
    if "acceptance" in summary:  # --eval-only: keep the earlier measurement for the record
        summary.setdefault("earlier_evaluations", []).append({"eval": summary.get("eval"),
                                                              "acceptance": summary["acceptance"]})
    if cfg.val_prompts:
        val_sets = validation_prompt_sets(tokenizer, cfg.val_prompts, cfg.seed)
        summary["validation"] = {name: evaluate_head(target, head, prompts, cfg.eval_max_new_tokens, ks)
                                 for name, prompts in val_sets.items()}
    summary["acceptance"] = {name: evaluate_head(target, head, prompts, cfg.eval_max_new_tokens, ks)
                             for name, prompts in heldout_prompt_sets(tokenizer, cfg.eval_prompts, cfg.seed).items()}
    summary["eval"] = {"device": device_name(device), "prompts_per_set": cfg.eval_prompts,
                       "max_new_tokens": cfg.eval_max_new_tokens, "seconds": round(time.time() - t1, 1),
                       "versions": versions()}
    for name, res in {**summary.get("validation", {}), **summary["acceptance"]}.items():
        log_line(f"{name}: tau " + ", ".join(f"K={k} {r['tau']:.2f}" for k, r in res.items()))
    cfg.out.mkdir(parents=True, exist_ok=True)
    (cfg.out / "training_log.json").write_text(json.dumps(summary, indent=1) + "\n")
    write_card(cfg.out)
    log_line(f"wrote {cfg.out}")
    return summary


def write_card(out: Path) -> None:
    """(Re)write ``out/README.md`` from ``out/training_log.json``; a P-EAGLE card also compares with the
    EAGLE-3 head next to it (``../tiny-eagle3``) when that one has been measured."""
    out = Path(out)
    summary = json.loads((out / "training_log.json").read_text())
    other = out.parent / "tiny-eagle3" / "training_log.json"
    compare = None
    if summary["kind"] == "peagle" and other.is_file():
        compare = json.loads(other.read_text()).get("acceptance")
    (out / "README.md").write_text(drafter_card(summary, compare))


def reevaluate(cfg: DrafterTrainConfig, note: str | None = None) -> dict:
    """``--eval-only``: re-measure an exported head (e.g. trained on a GPU, measured on CPU) and rewrite its
    ``training_log.json`` and model card; ``note`` (``--note``) is kept in both, for how the run was made."""
    device = resolve_device(cfg.device)
    log_path = cfg.out / "training_log.json"
    if not log_path.is_file():
        raise SystemExit(f"--eval-only needs {log_path} (written by a training run). Fix: train first.")
    summary = json.loads(log_path.read_text())
    if note and note not in summary.setdefault("notes", []):
        summary["notes"].append(note)
    target, tokenizer = load_target(cfg.target, device=device)
    head = load_head(cfg.out, device=device)
    return evaluate_and_write(summary, head, target, tokenizer, cfg, device)
