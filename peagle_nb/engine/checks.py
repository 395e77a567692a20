"""Clear errors before decoding: a head that does not fit the target, K past the trained depth,
a P-EAGLE head without its placeholders, a prompt or generation length the decoder cannot take.
Explained in notebooks 02 and 03.
"""

from __future__ import annotations

import warnings

import torch

METHODS = ("none", "eagle3", "peagle")


class HeadMismatchError(ValueError):
    """The draft head was trained for a different target (or is incomplete)."""


def head_layer_ids(head) -> tuple[int, ...]:
    """The target layers whose entering hidden states the head reads (its eagle_aux_hidden_state_layer_ids)."""
    cfg = head.config
    for name in ("aux_layer_ids", "eagle_aux_hidden_state_layer_ids", "layer_ids"):
        ids = getattr(cfg, name, None)
        if ids:
            return tuple(int(i) for i in ids)
    eagle = getattr(cfg, "eagle_config", None) or {}
    ids = eagle.get("eagle_aux_hidden_state_layer_ids") if isinstance(eagle, dict) else None
    if ids:
        return tuple(int(i) for i in ids)
    raise HeadMismatchError("the head's config names no feature layers (eagle_aux_hidden_state_layer_ids); "
                            "re-export it with peagle_nb.models.heads.export_head")


def check_method(method: str, head) -> None:
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    if method != "none" and head is None:
        raise ValueError(f"method {method!r} needs a draft head (load one with peagle_nb.models.heads.load_head("
                         f"'data/models/tiny-{method}')); method 'none' decodes without one")


def check_head_fits_target(head, target) -> None:
    """Hidden size, vocabulary and feature layers of ``head`` must match ``target`` (a LlamaForCausalLM)."""
    tcfg = target.config
    hidden, vocab, n_layers = tcfg.hidden_size, tcfg.vocab_size, tcfg.num_hidden_layers
    ids = head_layer_ids(head)
    fc_in = head.fc.weight.shape[1]
    if fc_in != len(ids) * hidden:
        raise HeadMismatchError(
            f"head was trained for a target with hidden size {fc_in // max(len(ids), 1)} (fc takes {fc_in} = "
            f"{len(ids)} x hidden), but this target has hidden size {hidden}: use the head trained for this target")
    head_vocab = head.embed_tokens.weight.shape[0]
    if head_vocab != vocab:
        raise HeadMismatchError(
            f"head's vocabulary has {head_vocab} tokens but the target's has {vocab}: the head was trained for "
            "another tokenizer/target; use the head trained for this target")
    if max(ids) >= n_layers or min(ids) < 0:
        raise HeadMismatchError(
            f"head reads target layers {list(ids)} but the target has only {n_layers} layers: the head was "
            "trained for a deeper target; use the head trained for this target")
    from peagle_nb.models.heads import drafter_layer_ids

    expected = tuple(drafter_layer_ids(tcfg))
    if ids != expected:
        raise HeadMismatchError(
            f"head reads target layers {list(ids)}, but a {n_layers}-layer target's feature layers are "
            f"{list(expected)}: the head was trained for a target with a different layer count; use the head "
            "trained for this target")


def check_peagle_head(head, tokenizer=None) -> None:
    """A P-EAGLE head needs its mask token id and the learned shared hidden state ``mask_hidden``."""
    if getattr(head, "mask_token_id", None) is None:
        raise HeadMismatchError("P-EAGLE head has no mask token id (config 'mask_token_id'): parallel drafting "
                                "fills future slots with <mask>; re-export the head with its mask id")
    if getattr(head, "mask_hidden", None) is None:
        raise HeadMismatchError("P-EAGLE head has no 'mask_hidden' [1, 3H] tensor: the shared hidden state of the "
                                "mask slots is learned in training; this looks like an EAGLE-3 head, use "
                                "method 'eagle3' or a head trained as P-EAGLE")
    if tokenizer is not None:
        tok_mask = tokenizer.convert_tokens_to_ids("<mask>")
        if tok_mask is None or tok_mask == tokenizer.unk_token_id:
            raise HeadMismatchError("the tokenizer has no <mask> token, which P-EAGLE drafting needs; use the "
                                    "suite's tokenizer (data/models/tiny-target) or add a <mask> special token")
        if tok_mask != head.mask_token_id:
            raise HeadMismatchError(f"head's mask token id {head.mask_token_id} differs from the tokenizer's <mask> "
                                    f"id {tok_mask}: the head was trained with another tokenizer")


def check_k(k: int, head, method: str) -> None:
    """K must be >= 1; past the depth a P-EAGLE head was trained for, warn (still lossless, lower acceptance)."""
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"K (drafts per step) must be an integer >= 1, got {k!r}")
    trained = getattr(head, "trained_k", None) if head is not None else None
    if method == "peagle" and trained and k > trained:
        warnings.warn(
            f"K={k} is above the depth this P-EAGLE head was trained for (K={trained}): mask slots past "
            f"position {trained} never received training signal, so their drafts are rarely accepted. "
            f"Output stays lossless (the target verifies every draft) but speed drops; use K <= {trained}.",
            UserWarning, stacklevel=3)


def check_prompt(prompt_ids) -> None:
    if prompt_ids is None or len(prompt_ids) == 0:
        raise ValueError("empty prompt: speculative decoding needs at least one prompt token (the target's "
                         "features at the last prompt position seed the drafter); pass a non-empty prompt")


def check_generate_args(prompt_ids, max_new_tokens: int, temperature: float, vocab: int,
                        capacity: int | None = None, k: int = 0) -> torch.Tensor:
    """The arguments of a decoder's ``generate`` -> the prompt as a 1-D int64 tensor, for the caller to move.

    ``vocab``: the target's vocabulary size. ``capacity`` (None: unchecked): the positions the decoder's cache
    holds, which must fit the prompt, ``max_new_tokens`` and 2K + 1 drafting slots for K drafts per step.
    """
    check_prompt(prompt_ids)
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    prompt = torch.as_tensor(list(prompt_ids) if not torch.is_tensor(prompt_ids) else prompt_ids,
                             dtype=torch.long).reshape(-1)
    if int(prompt.max()) >= vocab or int(prompt.min()) < 0:
        raise ValueError(f"prompt holds token ids outside the target vocabulary [0, {vocab})")
    need = prompt.numel() + max_new_tokens + 2 * k + 1
    if capacity is not None and need > capacity:
        raise ValueError(f"prompt ({prompt.numel()} tokens) + max_new_tokens ({max_new_tokens}) + 2K drafting "
                         f"slots need {need} positions, more than the model's {capacity} "
                         "(max_position_embeddings): shorten the prompt or generate fewer tokens")
    return prompt
