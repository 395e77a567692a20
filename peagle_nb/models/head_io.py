"""A ``DraftHead`` to and from a head folder in vLLM's layout (``peagle_nb.models.checkpoint`` describes and
validates the folder). Explained in notebooks 02 (loading) and 05 (the exported layout).

Three mappings live here: ``DraftHeadConfig`` <-> ``config.json`` (vLLM's ``LlamaForCausalLMEagle3``
fields plus the suite's own ``peagle_nb_kind`` / ``peagle_trained_k`` / ``eagle3_ttt_steps``), module
names <-> checkpoint names (layer 0 is ``midlayer.*`` in the file, ``layers.0.*`` in the module tree), and
the tensors themselves (bf16 weights, ``d2t`` int64, ``t2d`` bool).

This module sits below ``peagle_nb.models.heads`` and never imports it: it reads a head and its config through
their attributes, and hands ``heads`` the fields and the state dict from which ``heads.load_head`` builds one.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from peagle_nb.models import checkpoint

# config.json keys that DraftHeadConfig's fields (or vLLM's fixed choices) account for; any other key is
# kept in ``DraftHeadConfig.extra`` and written back unchanged.
_KNOWN_KEYS = {"architectures", "model_type", "hidden_size", "intermediate_size", "num_hidden_layers",
               "num_attention_heads", "num_key_value_heads", "head_dim", "hidden_act", "attention_bias",
               "mlp_bias", "tie_word_embeddings", "rms_norm_eps", "rope_theta", "rope_parameters",
               "max_position_embeddings", "vocab_size", "draft_vocab_size", "target_hidden_size",
               "eagle_config", "peagle_nb_kind", *checkpoint.MASK_ID_KEYS, checkpoint.TRAINED_K_KEY,
               "eagle3_ttt_steps", "torch_dtype"}


def config_to_json(cfg: Any) -> dict:
    """The head's ``config.json`` (from its ``DraftHeadConfig``) as vLLM's ``LlamaForCausalLMEagle3`` reads it."""
    out = {
        **cfg.extra,
        "architectures": [checkpoint.ARCHITECTURE],
        "model_type": "llama",
        "hidden_size": cfg.hidden_size,
        "intermediate_size": cfg.intermediate_size,
        "num_hidden_layers": cfg.num_hidden_layers,
        "num_attention_heads": cfg.num_attention_heads,
        "num_key_value_heads": cfg.num_key_value_heads,
        "head_dim": cfg.head_dim,
        "hidden_act": "silu",
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": False,
        "rms_norm_eps": cfg.rms_norm_eps,
        "rope_theta": cfg.rope_theta,
        "rope_parameters": {"rope_type": "default", "rope_theta": cfg.rope_theta},
        "max_position_embeddings": cfg.max_position_embeddings,
        "vocab_size": cfg.vocab_size,
        "draft_vocab_size": cfg.draft_vocab_size,
        "target_hidden_size": cfg.target_hidden_size,
        "eagle_config": {"use_aux_hidden_state": True,
                         "eagle_aux_hidden_state_layer_ids": list(cfg.aux_layer_ids)},
        "peagle_nb_kind": cfg.kind,
    }
    if cfg.kind == "peagle":
        out.update(checkpoint.mask_id_fields(cfg.mask_token_id))
        if cfg.trained_k is not None:
            out[checkpoint.TRAINED_K_KEY] = int(cfg.trained_k)
    elif cfg.trained_k is not None:
        out["eagle3_ttt_steps"] = cfg.trained_k
    return out


def config_fields(config: dict) -> dict[str, Any]:
    """The ``DraftHeadConfig`` fields of a ``config.json``: the inverse of :func:`config_to_json` (also reads heads
    exported by other tools); ``heads.config_from_json`` makes the config of them."""
    cfg = dict(config)
    eagle = cfg.get("eagle_config") or {}
    mask_id = checkpoint.mask_token_id(cfg)
    kind = cfg.get("peagle_nb_kind") or ("peagle" if mask_id is not None else "eagle3")
    rope = cfg.get("rope_parameters") or {}
    hidden = int(cfg["hidden_size"])
    heads = int(cfg["num_attention_heads"])
    if int(cfg.get("head_dim", hidden // heads)) != hidden // heads:
        raise ValueError(f"head_dim {cfg['head_dim']} != hidden_size / num_attention_heads is not supported")
    return dict(
        kind=kind,
        hidden_size=hidden,
        intermediate_size=int(cfg["intermediate_size"]),
        num_hidden_layers=int(cfg["num_hidden_layers"]),
        num_attention_heads=heads,
        num_key_value_heads=int(cfg.get("num_key_value_heads", heads)),
        vocab_size=int(cfg["vocab_size"]),
        draft_vocab_size=int(cfg.get("draft_vocab_size") or cfg["vocab_size"]),
        target_hidden_size=int(cfg.get("target_hidden_size", hidden)),
        aux_layer_ids=tuple(eagle.get("eagle_aux_hidden_state_layer_ids") or (2, 4, 5)),
        rms_norm_eps=float(cfg.get("rms_norm_eps", 1e-5)),
        rope_theta=float(rope.get("rope_theta", cfg.get("rope_theta", 10000.0))),
        max_position_embeddings=int(cfg.get("max_position_embeddings", 2048)),
        mask_token_id=int(mask_id) if kind == "peagle" else None,
        trained_k=cfg.get(checkpoint.TRAINED_K_KEY) if kind == "peagle" else cfg.get("eagle3_ttt_steps"),
        extra={k: v for k, v in cfg.items() if k not in _KNOWN_KEYS},
    )


# ---- checkpoint names: our module tree <-> vLLM's head layout ------------------------------------------
def checkpoint_name(name: str) -> str:
    """``layers.0.x`` (the module tree) -> ``midlayer.x`` (the file); every other name is the same."""
    return "midlayer." + name[len("layers.0."):] if name.startswith("layers.0.") else name


def module_name(name: str) -> str:
    """Inverse of :func:`checkpoint_name`: ``midlayer.x`` -> ``layers.0.x``."""
    return "layers.0." + name[len("midlayer."):] if name.startswith("midlayer.") else name


def head_tensors(head: nn.Module, dtype: torch.dtype = torch.bfloat16) -> dict[str, torch.Tensor]:
    """The head's tensors under vLLM's names (float weights cast to ``dtype``; d2t int64, t2d bool)."""
    out = {}
    for name, t in head.state_dict().items():
        t = t.detach().cpu()
        if t.is_floating_point():
            t = t.to(dtype)
        out[checkpoint_name(name)] = t.contiguous()
    return out


def export_head(head: nn.Module, path):
    """Write ``head`` in vLLM's EAGLE-3 / P-EAGLE layout, weights in bf16 (validated by
    ``peagle_nb.models.checkpoint.write_head``)."""
    cfg = config_to_json(head.config)
    cfg["torch_dtype"] = "bfloat16"
    return checkpoint.write_head(path, cfg, head_tensors(head, torch.bfloat16))


def state_from_tensors(cfg: Any, own: dict[str, torch.Tensor], tensors: dict[str, torch.Tensor],
                       target=None) -> dict[str, torch.Tensor]:
    """The state dict of a head whose config is ``cfg`` and whose own (freshly initialised) state dict is ``own``,
    from a checkpoint's ``tensors``, each cast to its parameter's dtype. Absent ``d2t``/``t2d`` mean the identity
    (full draft vocabulary); an EAGLE-3 head without ``embed_tokens`` shares the target's (pass ``target``)."""
    state = {module_name(k): v for k, v in tensors.items()}
    if cfg.draft_vocab_size == cfg.vocab_size:
        state.setdefault("d2t", own["d2t"])
        state.setdefault("t2d", own["t2d"])
    if "embed_tokens.weight" not in state and cfg.kind == "eagle3":
        if target is None:
            raise ValueError("this EAGLE-3 head has no embed_tokens (it shares the target's embedding): "
                             "pass target=<the LlamaForCausalLM> to load_head")
        state["embed_tokens.weight"] = target.get_input_embeddings().weight.detach().cpu()
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    if missing or unexpected:
        raise ValueError(f"head tensors do not match its config: missing {[checkpoint_name(m) for m in missing]}, "
                         f"unexpected {[checkpoint_name(u) for u in unexpected]}")
    return {k: v.to(own[k].dtype) for k, v in state.items()}
