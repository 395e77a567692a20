"""``peagle-nb train {target,eagle3,peagle,pair} [options]``: reproduce the committed tiny models (``pair``: both
heads in one process, the budget ladder's way).

Each artifact's trainer lives in ``peagle_nb.training.<what>`` with ``add_arguments(p)`` and
``run(args) -> int``. It is imported only when its subcommand runs (torch is slow to import, and the
other ``peagle-nb`` commands must not pay for it); ``peagle-nb train target --help`` lists its options.
"""

from __future__ import annotations

import argparse
import importlib

TRAINERS = {
    "target": ("peagle_nb.training.target", "the tiny target LM and its tokenizer (data/models/tiny-target)"),
    "eagle3": ("peagle_nb.training.eagle3", "the EAGLE-3 draft head (data/models/tiny-eagle3)"),
    "peagle": ("peagle_nb.training.peagle", "the P-EAGLE draft head (data/models/tiny-peagle)"),
    "pair": ("peagle_nb.training.pair", "EAGLE-3 and P-EAGLE trained together, one teacher pass per step for both "
             "(the budget ladder's pair)"),
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("what", choices=list(TRAINERS),
                   help="; ".join(f"{k}: {v[1]}" for k, v in TRAINERS.items()))
    p.add_argument("options", nargs=argparse.REMAINDER,
                   help="the trainer's own options (see `peagle-nb train WHAT --help`)")


def build_trainer_parser(what: str):
    """(module, parser) for one trainer; clear error when its module is missing."""
    module, help_text = TRAINERS[what]
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        raise SystemExit(f"`peagle-nb train {what}` needs {module}, which this checkout does not have") from exc
    parser = argparse.ArgumentParser(prog=f"peagle-nb train {what}", description=help_text)
    mod.add_arguments(parser)
    return mod, parser


def run(args: argparse.Namespace) -> int:
    mod, parser = build_trainer_parser(args.what)
    return int(mod.run(parser.parse_args(args.options)) or 0)
