"""A draft head ready to train: sized for the target, its draft vocabulary chosen, warm-started from the
target (or from an earlier run's head, ``--init-from``). Explained in notebook 02."""

from __future__ import annotations

import dataclasses

import torch

from peagle_nb.models.heads import DraftHead, config_for_target, init_from_target, load_head
from peagle_nb.models.target import mask_token_id
from peagle_nb.training.drafter_config import DrafterTrainConfig


def make_head(cfg: DrafterTrainConfig, target, tokenizer, draft_ids: torch.Tensor) -> DraftHead:
    """A fresh head sized for ``target``, with the chosen draft vocabulary, warm-started from the target;
    or, with ``cfg.init_from``, that exported head (it must have this shape and draft vocabulary)."""
    mask_id = mask_token_id(tokenizer) if cfg.kind == "peagle" else None
    hcfg = config_for_target(target.config, cfg.kind, num_layers=cfg.num_layers,
                             draft_vocab_size=cfg.draft_vocab_size, mask_token_id=mask_id, trained_k=cfg.k,
                             intermediate_size=cfg.intermediate_size)
    torch.manual_seed(cfg.seed)
    head = DraftHead(hcfg)
    head.set_draft_vocab(draft_ids)
    if cfg.init_from is not None:
        earlier = load_head(cfg.init_from, target=target)
        theirs, ours = (dataclasses.asdict(earlier.config.replace(extra={})),
                        dataclasses.asdict(hcfg.replace(extra={})))
        differ = [f"{k} {theirs[k]} (this run: {ours[k]})" for k in ours if theirs[k] != ours[k]]
        if differ:
            raise SystemExit(f"--init-from {cfg.init_from}: that head differs from this run's in {', '.join(differ)}. "
                             f"Fix: pass the same --num-layers/--intermediate-size/--k/--draft-vocab-size and data "
                             f"options as the run that made it.")
        # The earlier head's draft vocabulary (d2t/t2d) comes with its state: new data (another --seed or
        # --n-sequences) may count a slightly different top-Vd set, but lm_head's rows belong to the old one.
        head.load_state_dict(earlier.state_dict())
    else:
        init_from_target(head, target)
    if cfg.mask_hidden == "zeros":  # the ablation: every <mask> slot's hidden input is fc(0), never trained
        with torch.no_grad():
            head.mask_hidden.zero_()
        head.mask_hidden.requires_grad_(False)
    if cfg.kind == "eagle3":  # EAGLE-3 keeps the target's embedding (frozen); P-EAGLE learns its own (<mask> row)
        head.embed_tokens.weight.requires_grad_(False)
    return head
