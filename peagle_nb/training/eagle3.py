"""Train the EAGLE-3 draft head (``peagle-nb train eagle3``) with training-time test. Explained in notebook 02.

TTT unrolls the head k = 0..6 steps over every position of a target-generated sequence at once; step k
feeds the head's own pre-norm hidden output of step k-1 (as drafting does at inference) and the real next
token (a wrong draft ends the accepted prefix anyway). Loss = sum_k 0.8^k * soft cross-entropy against
the target's distribution over the draft vocabulary.
"""

from __future__ import annotations

import argparse
from typing import Callable

import torch

from peagle_nb.training.drafter_data import soft_ce
from peagle_nb.training.drafter_forward import eagle3_unroll
from peagle_nb.training.drafter_cli import add_arguments as _add_arguments
from peagle_nb.training.drafter_cli import config_from_args, run_mode
from peagle_nb.training.drafter_config import DrafterTrainConfig


def ttt_loss(head, batch: dict, cfg: DrafterTrainConfig, generator=None) -> tuple[torch.Tensor, dict]:
    """Training-time-test loss of one batch -> (loss, {"acc0": .., "acc<k>": ..}) (accuracy vs target argmax)."""
    tokens, logits_t, argmax = batch["tokens"], batch["logits"], batch["argmax"]
    t = tokens.shape[1]
    outs = eagle3_unroll(head, tokens, batch["features"], cfg.k)
    loss, metrics = 0.0, {}
    for s, lg in enumerate(outs):
        n = t - 1 - s  # slots whose label row i + s + 1 exists
        rows = torch.arange(n, device=tokens.device) + s + 1
        lg = lg[:, :n]
        loss = loss + cfg.ttt_decay ** s * soft_ce(lg, logits_t[:, rows]).mean()
        if s in (0, cfg.k - 1):
            hit = head.draft_to_target(lg.argmax(-1)) == argmax[:, rows]
            metrics[f"acc{s}"] = hit.float().mean().detach()
    return loss, metrics


def add_arguments(p: argparse.ArgumentParser) -> None:
    _add_arguments(p, "eagle3")


def configure(args: argparse.Namespace) -> tuple[DrafterTrainConfig, Callable]:
    """The run configuration ``args`` make, and this method's loss (``training.pair`` trains it beside P-EAGLE)."""
    cfg = config_from_args(args, "eagle3")
    cfg.num_layers = 1
    return cfg, ttt_loss


def run(args: argparse.Namespace) -> int:
    cfg, loss_fn = configure(args)
    return run_mode(cfg, args, loss_fn)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m peagle_nb.training.eagle3")
    add_arguments(parser)
    raise SystemExit(run(parser.parse_args()))
