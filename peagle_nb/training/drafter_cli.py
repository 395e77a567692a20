"""The command line of ``peagle-nb train eagle3|peagle``: its options, the run configuration they make, and
the three modes (build the data only, re-measure an exported head, train). Explained in notebooks 02, 03."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable

from peagle_nb.files import paths
from peagle_nb.models.target import load_target
from peagle_nb.training.drafter_cache import get_data
from peagle_nb.training.drafter_config import DrafterTrainConfig
from peagle_nb.training.drafter_results import reevaluate
from peagle_nb.training.drafter_train import train_drafter
from peagle_nb.training.runtime import log_line, resolve_device
from peagle_nb.text.corpus import DOMAINS


def run_mode(cfg: DrafterTrainConfig, args: argparse.Namespace, loss_fn: Callable) -> int:
    """What ``peagle-nb train eagle3|peagle`` does with its options: build the data only, re-evaluate, or train."""
    cfg.validate()
    if args.data_only:
        build_data_only(cfg)
    elif args.eval_only:
        reevaluate(cfg, note=args.note)
    else:
        train_drafter(cfg, loss_fn)
    return 0


def build_data_only(cfg: DrafterTrainConfig) -> dict:
    """``--data-only``: build the self-distillation data into ``cfg.data_cache`` and stop (several runs, even
    concurrent ones, can then share it)."""
    if cfg.data_cache is None:
        raise SystemExit("--data-only needs --data-cache PATH (where to save the data)")
    target, tokenizer = load_target(cfg.target, device=resolve_device(cfg.device))
    _, info = get_data(cfg, target, tokenizer)
    log_line(f"wrote {cfg.data_cache}")
    return info


def add_arguments(p: argparse.ArgumentParser, kind: str) -> None:
    p.add_argument("--smoke", action="store_true", help="tiny configuration, < 1 minute on CPU (for tests)")
    p.add_argument("--out", type=Path, default=None,
                   help=f"head folder to write (default data/models/tiny-{kind}; "
                        f"--smoke: build/models/tiny-{kind}-smoke)")
    p.add_argument("--target", type=Path, default=None, help="target model folder (default data/models/tiny-target)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("--k", type=int, default=None,
                   help="P-EAGLE: deepest trained draft slot (default 8); EAGLE-3: TTT unroll steps (default 7)")
    p.add_argument("--num-layers", type=int, default=None, help="decoder layers (eagle3: 1; peagle default 4)")
    p.add_argument("--intermediate-size", type=int, default=None, help="MLP width (default: the target's)")
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--time-budget-s", type=float, default=None, help="stop training after this many seconds")
    p.add_argument("--lockstep", type=Path, default=None,
                   help="a folder shared with the other method's trainer: both run the same number of steps")
    p.add_argument("--teacher-tf32", action="store_true", default=None,
                   help="on CUDA, the teacher's fp32 matrix products in TF32 (its pass ~30 %% shorter on an H100, "
                        "features ~3e-3 from fp32: data/results/family_v3/head_train_step_h100.json)")
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--lr", type=float, default=None)
    p.add_argument("--n-sequences", type=int, default=None, help="self-distillation sequences to generate")
    p.add_argument("--seq-len", type=int, default=None, help="tokens per sequence (prompt + continuation)")
    p.add_argument("--draft-vocab-size", type=int, default=None)
    p.add_argument("--greedy-fraction", type=float, default=None,
                   help="fraction of continuations generated greedily (default 0: all sampled)")
    p.add_argument("--sample-temperature", type=float, default=None,
                   help="temperature of the sampled continuations (default 1: the target's own distribution)")
    p.add_argument("--exclude-domain", action="append", default=None, choices=DOMAINS,
                   help="train without this corpus domain's sequences (repeatable; e.g. ja)")
    p.add_argument("--gen-batch", type=int, default=None,
                   help="continuations generated at once (default 4096 on CUDA, 64 on a CPU)")
    p.add_argument("--generator", choices=["lean", "transformers"], default=None,
                   help="what decodes the continuations: the lean engine's static cache (default on CUDA) or the "
                        "transformers loop (default on a CPU); the same tokens")
    p.add_argument("--prompts", type=Path, default=None,
                   help="prompts drawn beforehand (`python -m peagle_nb.lab.training_runs.family_v3 prompts`): "
                        "a machine without the corpus builds the data from them")
    p.add_argument("--data-cache", type=Path, default=None, help="save/reuse the generated data here")
    p.add_argument("--data-only", action="store_true",
                   help="only build the self-distillation data into --data-cache (to share it between runs)")
    p.add_argument("--init-from", type=Path, default=None,
                   help="continue training this exported head (same shape and data options)")
    p.add_argument("--val-prompts", type=int, default=None,
                   help="new corpus-train prompts per domain to measure after training (for choosing runs)")
    p.add_argument("--eval-prompts", type=int, default=None, help="held-out prompts per set (default all)")
    p.add_argument("--eval-max-new-tokens", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--corpus", choices=["v1", "v3"], default=None,
                   help="prompts from corpus v1 (default) or v3 (data/corpus/v3, family v3)")
    if kind == "peagle":
        p.add_argument("--mask-hidden", choices=["learned", "zeros"], default=None,
                       help="learned (default) or held at zeros (the ablation)")
    if kind == "peagle":
        p.add_argument("--cod-r", type=float, default=None, help="COD keep ratio per depth (default 0.7)")
        p.add_argument("--cod-r-min", type=float, default=None, help="COD minimum keep fraction (default 0.2)")
    p.add_argument("--eval-only", action="store_true",
                   help="re-measure the head already in --out and rewrite its training_log.json and model card")
    p.add_argument("--note", default=None,
                   help="with --eval-only: a remark on how the run was made, kept in the log and the model card")


def config_from_args(args: argparse.Namespace, kind: str) -> DrafterTrainConfig:
    overrides = {"target": args.target, "device": args.device, "k": args.k, "num_layers": args.num_layers,
                 "steps": args.steps, "time_budget_s": args.time_budget_s, "batch_size": args.batch_size,
                 "lr": args.lr, "n_sequences": args.n_sequences, "seq_len": args.seq_len,
                 "draft_vocab_size": args.draft_vocab_size, "data_cache": args.data_cache,
                 "eval_prompts": args.eval_prompts, "eval_max_new_tokens": args.eval_max_new_tokens, "seed": args.seed,
                 "intermediate_size": args.intermediate_size, "greedy_fraction": args.greedy_fraction,
                 "sample_temperature": args.sample_temperature, "gen_batch": args.gen_batch,
                 "generator": args.generator, "prompts_file": args.prompts, "lockstep": args.lockstep,
                 "teacher_tf32": args.teacher_tf32,
                 "exclude_domains": tuple(args.exclude_domain) if args.exclude_domain else None,
                 "init_from": args.init_from, "val_prompts": args.val_prompts,
                 "cod_r": getattr(args, "cod_r", None), "cod_r_min": getattr(args, "cod_r_min", None),
                 "corpus": getattr(args, "corpus", None), "mask_hidden": getattr(args, "mask_hidden", None)}
    if args.smoke:
        out = args.out or paths.repo_root() / "build" / "models" / f"tiny-{kind}-smoke"
        return DrafterTrainConfig.smoke_config(kind, out, **overrides)
    out = args.out or paths.models_dir() / f"tiny-{kind}"
    defaults = {"k": 8 if kind == "peagle" else 7}
    return DrafterTrainConfig(kind=kind, out=out, **{**defaults, **{k: v for k, v in overrides.items()
                                                                     if v is not None}})
