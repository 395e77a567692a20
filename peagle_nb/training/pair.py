"""``peagle-nb train pair --eagle3 "OPTIONS" --peagle "OPTIONS"``: the budget ladder's pair in one process. The
target runs once per step and its features and soft labels feed both heads (``drafter_train.train_drafters``):
equal steps on the same batches, without the second teacher pass that two lockstep processes pay (half of each
head's step on an H100: ``data/results/family_v3/head_train_step_h100.json``, notebook 08). Each method's options
are its own trainer's (``peagle-nb train eagle3 --help``), one quoted string each; what the heads must share
(target, data, batch, steps, time budget: ``drafter_train.SHARED_FIELDS``) is checked before anything loads.
"""

from __future__ import annotations

import argparse
import shlex

from peagle_nb.training import eagle3, peagle
from peagle_nb.training.drafter_train import check_shared, train_drafters

METHODS = {"eagle3": eagle3, "peagle": peagle}


def add_arguments(p: argparse.ArgumentParser) -> None:
    for kind in METHODS:
        p.add_argument(f"--{kind}", required=True, metavar="OPTIONS",
                       help=f"`peagle-nb train {kind}`'s options for this head, one quoted string (--out included; "
                            f"write --{kind}=OPTIONS if it begins with an option that has no value)")


def configure(args: argparse.Namespace) -> list[tuple]:
    """(cfg, loss) per method, each parsed by its own trainer's parser; a mode the pair cannot run is refused."""
    made = []
    for kind, module in METHODS.items():
        parser = argparse.ArgumentParser(prog=f"peagle-nb train pair --{kind}")
        module.add_arguments(parser)
        margs = parser.parse_args(shlex.split(getattr(args, kind)))
        for mode in ("data_only", "eval_only"):
            if getattr(margs, mode):
                raise SystemExit(f"--{kind} '... --{mode.replace('_', '-')}': the pair only trains. Fix: run "
                                 f"`peagle-nb train {kind}` for that")
        cfg, loss_fn = module.configure(margs)
        cfg.validate()
        made.append((cfg, loss_fn))
    return made


def run(args: argparse.Namespace) -> int:
    made = configure(args)
    cfgs = [cfg for cfg, _ in made]
    if len({c.out for c in cfgs}) < len(cfgs):
        raise SystemExit(f"both heads would be written to {cfgs[0].out}. Fix: give each its own --out")
    try:
        check_shared(cfgs)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    train_drafters(cfgs, [fn for _, fn in made])
    return 0
