"""Train the P-EAGLE draft head (``peagle-nb train peagle``). Explained in notebook 03.

Every batch samples one conditional drop-token (COD) layout (``peagle_nb.training.cod``): all anchors at
depth 0, ``max(0.7^d, 0.2)`` of them at depth d (only chains whose depth d-1 was kept), up to depth K-1.
One forward pass over the layout with the matching attention mask; soft cross-entropy against the target's
distribution for every kept element, uniform over depths (no per-depth weighting).
"""

from __future__ import annotations

import argparse
from typing import Callable

import torch

from peagle_nb.training.cod import cod_sample
from peagle_nb.training.drafter_data import soft_ce
from peagle_nb.training.drafter_forward import peagle_layout_forward
from peagle_nb.training.drafter_cli import add_arguments as _add_arguments
from peagle_nb.training.drafter_cli import config_from_args, run_mode
from peagle_nb.training.drafter_config import DrafterTrainConfig


def cod_loss(head, batch: dict, cfg: DrafterTrainConfig, generator=None) -> tuple[torch.Tensor, dict]:
    """COD loss of one batch (one layout shared by the batch) -> (loss, {"acc0": .., "acc<K-1>": ..})."""
    tokens, logits_t, argmax = batch["tokens"], batch["logits"], batch["argmax"]
    t = tokens.shape[1]
    valid = t - 1 - torch.arange(t - 1)  # anchor i can go down to depth T-2-i (its labels exist)
    anchors, depths = cod_sample(t - 1, cfg.k, cfg.cod_r, cfg.cod_r_min, generator, valid)
    lg, rows = peagle_layout_forward(head, tokens, batch["features"], anchors, depths)
    loss = soft_ce(lg, logits_t[:, rows]).mean()
    hit = head.draft_to_target(lg.argmax(-1)) == argmax[:, rows]
    depths = depths.to(hit.device)
    metrics = {f"acc{d}": hit[:, depths == d].float().mean().detach() for d in (0, cfg.k - 1)
               if bool((depths == d).any())}
    return loss, metrics


def add_arguments(p: argparse.ArgumentParser) -> None:
    _add_arguments(p, "peagle")


def configure(args: argparse.Namespace) -> tuple[DrafterTrainConfig, Callable]:
    """The run configuration ``args`` make, and this method's loss (``training.pair`` trains it beside EAGLE-3)."""
    cfg = config_from_args(args, "peagle")
    if cfg.num_layers is None:
        cfg.num_layers = 4
    if not 2 <= cfg.num_layers <= 4:
        raise SystemExit(f"--num-layers {cfg.num_layers}: a P-EAGLE head here has 2-4 layers")
    return cfg, cod_loss


def run(args: argparse.Namespace) -> int:
    cfg, loss_fn = configure(args)
    return run_mode(cfg, args, loss_fn)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m peagle_nb.training.peagle")
    add_arguments(parser)
    raise SystemExit(run(parser.parse_args()))
