"""The on-disk layout of an EAGLE-3 / P-EAGLE draft head, exactly as vLLM loads it. Explained in notebook 05.

A head is a folder with ``config.json`` and ``model.safetensors``; vLLM reads it with
``--speculative-config '{"method": "eagle3", "model": <folder>, ...}'`` (``"parallel_drafting": true`` for
P-EAGLE) through ``vllm/model_executor/models/llama_eagle3.py``. That loader leaves a MISSING weight
uninitialised without any error, so every writer here validates each tensor name and shape first.

config.json (a ``LlamaConfig`` plus EAGLE fields)::

    architectures: ["LlamaForCausalLMEagle3"], model_type: "llama",
    hidden_size H, intermediate_size I, num_hidden_layers L, num_attention_heads, num_key_value_heads,
    [head_dim], vocab_size V (the target's), draft_vocab_size Vd, target_hidden_size Ht,
    eagle_config: {"use_aux_hidden_state": true, "eagle_aux_hidden_state_layer_ids": [a, b, c]},
    P-EAGLE only: the target tokenizer's <mask> id under all three names vLLM releases look it up by,
    mask_token_id = pard_token = ptd_token_id (some releases read only the last two), and peagle_trained_k
    (our key: the deepest draft position the head was trained for; vLLM ignores it)

model.safetensors::

    midlayer.*          layer 0: q/k/v take 2H = cat(input_layernorm(embed), hidden_norm(hidden))
    layers.N.*          N = 1..L-1, plain Llama layers (q/k/v take H)
    fc.weight           [H, 3*Ht]   projects the three concatenated target hidden states
    norm.weight         [H]
    lm_head.weight      [Vd, H]
    d2t [Vd] int64, t2d [V] bool    draft->target id offsets / target ids kept (only when Vd < V)
    embed_tokens.weight [V, H]      own embedding (required for P-EAGLE: the <mask> row is learned)
    mask_hidden         [1, 3*Ht]   P-EAGLE: the shared hidden input of mask slots (before fc)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import torch

ARCHITECTURE = "LlamaForCausalLMEagle3"
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
# vLLM looks the parallel-drafting token up under these names, in this order (llm_base_proposer.py); which of
# them it reads changed between releases, so a portable head writes all three with the same id.
MASK_ID_KEYS = ("mask_token_id", "pard_token", "ptd_token_id")
TRAINED_K_KEY = "peagle_trained_k"

_REQUIRED_CONFIG = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "vocab_size")


class HeadCheckpointError(ValueError):
    """A draft head folder that vLLM would reject, or worse, load silently wrong. The message names the
    field and the fix."""


# ----------------------------------------------------------------------------------------------- config


def mask_token_id(config: Mapping[str, Any]) -> int | None:
    """The P-EAGLE mask token id under any of the names vLLM accepts, or None (an EAGLE-3 head). When several
    are present they must agree: vLLM releases differ in which one they read."""
    ids = {key: config[key] for key in MASK_ID_KEYS if config.get(key) is not None}
    if len({int(v) for v in ids.values()}) > 1:
        found = ", ".join(f"{k}={v}" for k, v in ids.items())
        raise HeadCheckpointError(f"config.json: the mask token ids disagree ({found}); vLLM releases read different "
                                  f"ones, so the head would draft with a different <mask> on each. Fix: set all of "
                                  f"{', '.join(MASK_ID_KEYS)} to the id of the target tokenizer's <mask>.")
    return int(next(iter(ids.values()))) if ids else None


def mask_id_fields(mask_id: int) -> dict[str, int]:
    """The config.json fields of a P-EAGLE head's mask token id: every name vLLM looks up, one id."""
    return {key: int(mask_id) for key in MASK_ID_KEYS}


def head_kind(config: Mapping[str, Any]) -> str:
    """``"peagle"`` when the config carries a mask token id (parallel drafting), else ``"eagle3"``."""
    return "peagle" if mask_token_id(config) is not None else "eagle3"


def aux_layer_ids(config: Mapping[str, Any]) -> list[int]:
    eagle = config.get("eagle_config") or {}
    ids = eagle.get("eagle_aux_hidden_state_layer_ids")
    if ids is None:
        raise HeadCheckpointError(
            "config.json: eagle_config.eagle_aux_hidden_state_layer_ids is missing. Fix: set it to the target "
            "layers whose input hidden states the head reads, e.g. [2, L//2, L-3] (vLLM's default)."
        )
    return [int(i) for i in ids]


def _dims(config: Mapping[str, Any]) -> dict[str, int]:
    missing = [k for k in _REQUIRED_CONFIG if config.get(k) is None]
    if missing:
        raise HeadCheckpointError(f"config.json: missing field(s) {missing}. Fix: write the head's LlamaConfig "
                                  f"fields (see peagle_nb.models.checkpoint's docstring).")
    h = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    kv = int(config.get("num_key_value_heads") or heads)
    head_dim = int(config.get("head_dim") or h // heads)
    v = int(config["vocab_size"])
    eagle = config.get("eagle_config") or {}
    if eagle.get("use_aux_hidden_state", True) is not True:
        raise HeadCheckpointError("config.json: eagle_config.use_aux_hidden_state must be true for EAGLE-3/P-EAGLE "
                                  "heads (the head reads three target hidden states through fc).")
    n_aux = len(aux_layer_ids(config))
    return dict(H=h, I=int(config["intermediate_size"]), L=int(config["num_hidden_layers"]), q=heads * head_dim,
                kv=kv * head_dim, V=v, Vd=int(config.get("draft_vocab_size") or v),
                Ht=int(config.get("target_hidden_size") or h), n_aux=n_aux)


def _layer_shapes(prefix: str, d: dict[str, int], in_dim: int, bias: bool) -> dict[str, tuple[int, ...]]:
    h, i = d["H"], d["I"]
    shapes = {
        f"{prefix}.input_layernorm.weight": (h,),
        f"{prefix}.self_attn.q_proj.weight": (d["q"], in_dim),
        f"{prefix}.self_attn.k_proj.weight": (d["kv"], in_dim),
        f"{prefix}.self_attn.v_proj.weight": (d["kv"], in_dim),
        f"{prefix}.self_attn.o_proj.weight": (h, d["q"]),
        f"{prefix}.post_attention_layernorm.weight": (h,),
        f"{prefix}.mlp.gate_proj.weight": (i, h),
        f"{prefix}.mlp.up_proj.weight": (i, h),
        f"{prefix}.mlp.down_proj.weight": (h, i),
    }
    if bias:  # vLLM: "Parallel drafting checkpoints may have attention bias enabled"
        shapes.update({f"{prefix}.self_attn.q_proj.bias": (d["q"],), f"{prefix}.self_attn.k_proj.bias": (d["kv"],),
                       f"{prefix}.self_attn.v_proj.bias": (d["kv"],)})
    return shapes


def expected_tensor_shapes(config: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    """Every tensor a head with this config must contain, name -> shape (optional ``embed_tokens`` of an
    EAGLE-3 head excluded: absent means vLLM shares the target's embedding)."""
    d = _dims(config)
    bias = bool(config.get("attention_bias", False))
    shapes = _layer_shapes("midlayer", d, 2 * d["H"], bias)
    shapes["midlayer.hidden_norm.weight"] = (d["H"],)
    for n in range(1, d["L"]):
        shapes.update(_layer_shapes(f"layers.{n}", d, d["H"], bias))
    shapes.update({
        "fc.weight": (d["H"], d["n_aux"] * d["Ht"]),
        "norm.weight": (d["H"],),
        "lm_head.weight": (d["Vd"], d["H"]),
    })
    if d["Vd"] < d["V"]:
        shapes.update({"d2t": (d["Vd"],), "t2d": (d["V"],)})
    if head_kind(config) == "peagle":
        shapes["embed_tokens.weight"] = (d["V"], d["H"])
        shapes["mask_hidden"] = (1, d["n_aux"] * d["Ht"])
    return shapes


def optional_tensor_shapes(config: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    d = _dims(config)
    return {} if head_kind(config) == "peagle" else {"embed_tokens.weight": (d["V"], d["H"])}


def validate_config(config: Mapping[str, Any]) -> None:
    """Config-only checks (no target needed)."""
    arch = config.get("architectures")
    if arch != [ARCHITECTURE]:
        raise HeadCheckpointError(f"config.json: architectures is {arch!r}. Fix: set it to [{ARCHITECTURE!r}] "
                                  f"(vLLM picks the EAGLE-3 Llama drafter from it; P-EAGLE uses the same class).")
    if config.get("model_type") != "llama":
        raise HeadCheckpointError(f"config.json: model_type is {config.get('model_type')!r}. Fix: set it to 'llama'.")
    d = _dims(config)
    if not 0 < d["Vd"] <= d["V"]:
        raise HeadCheckpointError(f"config.json: draft_vocab_size={d['Vd']} must be in [1, vocab_size={d['V']}].")
    if d["n_aux"] < 1:
        raise HeadCheckpointError("config.json: eagle_config.eagle_aux_hidden_state_layer_ids is empty. Fix: list "
                                  "the target layers the head reads, e.g. [2, L//2, L-3].")
    ids = aux_layer_ids(config)
    if ids != sorted(set(ids)):
        raise HeadCheckpointError(
            f"config.json: eagle_config.eagle_aux_hidden_state_layer_ids={ids} must be strictly increasing: vLLM "
            f"sorts and de-duplicates them, so repeated ids give fc too few inputs and any other order feeds them "
            f"in the wrong order. Fix: distinct ids in increasing order (a target with >= 8 layers has distinct "
            f"defaults [2, L//2, L-3]), with fc.weight's column blocks in the same order.")
    mid = mask_token_id(config)
    if mid is not None and not 0 <= mid < d["V"]:
        raise HeadCheckpointError(f"config.json: mask_token_id={mid} is outside the vocabulary [0, {d['V']}). Fix: "
                                  f"use the id of the target tokenizer's <mask> token.")
    tk = config.get(TRAINED_K_KEY)
    if tk is not None and (not isinstance(tk, int) or tk < 1):
        raise HeadCheckpointError(f"config.json: {TRAINED_K_KEY}={tk!r} must be a positive integer (the deepest "
                                  f"draft position the head was trained for).")


def validate_tensors(config: Mapping[str, Any], tensors: Mapping[str, Any]) -> None:
    """Raise ``HeadCheckpointError`` listing every missing, unexpected and mis-shaped tensor.

    ``tensors`` maps names to tensors, or to shapes (tuples) when only the file header was read.
    """
    validate_config(config)
    expected = expected_tensor_shapes(config)
    optional = optional_tensor_shapes(config)
    shape_of = {k: tuple(v) if isinstance(v, (tuple, list, torch.Size)) else tuple(v.shape) for k, v in tensors.items()}
    missing = sorted(set(expected) - set(shape_of))
    unexpected = sorted(set(shape_of) - set(expected) - set(optional))
    wrong = sorted(f"{k}: {shape_of[k]} (expected {s})" for k, s in {**expected, **optional}.items()
                   if k in shape_of and shape_of[k] != s)
    problems = []
    if missing:
        hint = ""
        if "mask_hidden" in missing:
            hint = " (mask_hidden [1, 3*Ht] is the learned hidden input of P-EAGLE's mask slots: export it)"
        problems.append(f"missing {missing}{hint}")
    if unexpected:
        hint = ""
        if {"d2t", "t2d"} & set(unexpected):
            hint = " (d2t/t2d only when draft_vocab_size < vocab_size: vLLM rejects them otherwise)"
        elif "mask_hidden" in unexpected:
            hint = " (mask_hidden without a mask_token_id in config.json: add mask_token_id for a P-EAGLE head)"
        problems.append(f"unexpected {unexpected}{hint}")
    if wrong:
        problems.append(f"wrong shape {wrong}")
    if problems:
        raise HeadCheckpointError(f"{head_kind(config)} head tensors do not match config.json: " + "; ".join(problems)
                                  + ". Fix: export with peagle_nb.models.checkpoint.write_head from a model whose "
                                    "sizes match its config.")


# ------------------------------------------------------------------------------------------------- files


def write_head(path: str | Path, config: Mapping[str, Any], tensors: Mapping[str, torch.Tensor]) -> Path:
    """Validate, then write ``config.json`` + ``model.safetensors`` into ``path`` (created)."""
    from safetensors.torch import save_file

    config = {"architectures": [ARCHITECTURE], "model_type": "llama", **dict(config)}
    tensors = _drop_identity_vocab_map(config, tensors)
    validate_tensors(config, tensors)
    out = {}
    for name, t in tensors.items():
        t = t.detach().to("cpu").contiguous()
        if name == "d2t":
            t = t.to(torch.int64)
        elif name == "t2d":
            t = t.to(torch.bool)
        out[name] = t
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    (path / CONFIG_FILE).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    save_file(out, str(path / WEIGHTS_FILE), metadata={"format": "pt"})
    return path


def _drop_identity_vocab_map(config: Mapping[str, Any], tensors: Mapping[str, torch.Tensor]) -> dict:
    """With a full draft vocabulary vLLM has no d2t parameter and fails on loading one ("no module or
    parameter named 'draft_id_to_target_id'"); an identity map carries no information, so drop it."""
    tensors = dict(tensors)
    v = config.get("vocab_size")
    if v is not None and int(config.get("draft_vocab_size") or v) == int(v) and "d2t" in tensors:
        if bool((tensors["d2t"] != 0).any()):
            raise HeadCheckpointError("d2t is not the identity but draft_vocab_size == vocab_size: vLLM cannot load a "
                                      "permuted full vocabulary. Fix: reorder lm_head rows to target order, or use "
                                      "draft_vocab_size < vocab_size.")
        tensors.pop("d2t")
        tensors.pop("t2d", None)
    return tensors


def read_config(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    cfg = path / CONFIG_FILE
    if not cfg.is_file():
        raise HeadCheckpointError(f"{path}: no {CONFIG_FILE}. Fix: point at a head folder written by "
                                  f"peagle_nb.models.checkpoint.write_head (or `peagle-nb train` / export_head).")
    try:
        return json.loads(cfg.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise HeadCheckpointError(f"{cfg}: not valid JSON ({exc})") from None


def verify_checksums(folder: str | Path, names: list[str] | None = None) -> None:
    """The folder's files against its ``checksums.json`` (shipped folders carry one; a folder without it passes)."""
    from peagle_nb.models import checksums

    try:
        checksums.verify_folder(folder, names)
    except checksums.ChecksumError as exc:
        raise HeadCheckpointError(str(exc)) from None


def _weights_path(path: str | Path) -> Path:
    weights = Path(path) / WEIGHTS_FILE
    if not weights.is_file():
        raise HeadCheckpointError(f"{path}: no {WEIGHTS_FILE}. Fix: export the head with write_head.")
    verify_checksums(path, [CONFIG_FILE, WEIGHTS_FILE])
    return weights


def _unreadable(weights: Path, exc: Exception) -> HeadCheckpointError:
    return HeadCheckpointError(
        f"{weights} is not a readable safetensors file ({type(exc).__name__}: {exc}); it is probably truncated or "
        f"not fully downloaded. Fix: restore it (`git checkout -- {weights}`, or `git lfs pull` if the clone holds "
        f"LFS pointers), or export the head again (`peagle-nb train eagle3|peagle`, or export_head).")


def read_tensor_shapes(path: str | Path) -> dict[str, tuple[int, ...]]:
    """Names and shapes from the safetensors header only (cheap, for checks)."""
    from safetensors import safe_open

    weights = _weights_path(path)
    try:
        with safe_open(str(weights), framework="pt") as f:
            return {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}
    except Exception as exc:  # noqa: BLE001 - safetensors' own error type differs between releases
        raise _unreadable(weights, exc) from None


def read_head(path: str | Path) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """Read and validate a head folder -> ``(config, tensors)``."""
    from safetensors.torch import load_file

    config = read_config(path)
    weights = _weights_path(path)
    try:
        tensors = load_file(str(weights))
    except Exception as exc:  # noqa: BLE001 - safetensors' own error type differs between releases
        raise _unreadable(weights, exc) from None
    try:
        validate_tensors(config, tensors)
    except HeadCheckpointError as exc:
        raise HeadCheckpointError(f"{path}: {exc}") from None
    return config, tensors


# ------------------------------------------------------------------------------------ head vs. target


def check_head_against_target(head_dir: str | Path, target_dir: str | Path, k: int | None = None) -> dict[str, Any]:
    """Everything vLLM needs to agree between a head and its target, checked before an engine starts.

    Reads config files and the safetensors header, and checks both folders against their ``checksums.json``
    when they carry one. Returns a summary (kind, k, trained_k, mask id, aux layer ids, sizes); raises
    ``HeadCheckpointError`` naming the field and the fix.
    """
    head_dir, target_dir = Path(head_dir), Path(target_dir)
    cfg = read_config(head_dir)
    try:
        validate_tensors(cfg, read_tensor_shapes(head_dir))
    except HeadCheckpointError as exc:
        raise HeadCheckpointError(f"{head_dir}: {exc}") from None
    tcfg_path = target_dir / CONFIG_FILE
    if not tcfg_path.is_file():
        raise HeadCheckpointError(f"target {target_dir}: no {CONFIG_FILE}. Fix: pass the target model folder "
                                  f"(save_pretrained output) the head was trained on.")
    verify_checksums(target_dir)  # every file: the engine about to start reads the weights and the tokenizer
    tcfg = json.loads(tcfg_path.read_text(encoding="utf-8"))
    tcfg = {**tcfg, **(tcfg.get("text_config") or {})}  # multimodal wrappers keep the LM sizes there
    d = _dims(cfg)
    kind = head_kind(cfg)
    t_hidden, t_vocab, t_layers = int(tcfg["hidden_size"]), int(tcfg["vocab_size"]), int(tcfg["num_hidden_layers"])
    if d["Ht"] != t_hidden:
        raise HeadCheckpointError(
            f"{head_dir}: target_hidden_size={d['Ht']} but the target's hidden_size is {t_hidden}. Fix: the head "
            f"was trained for another target; use its own target or retrain (fc.weight must be [H, 3*{t_hidden}]).")
    if d["V"] != t_vocab:
        raise HeadCheckpointError(
            f"{head_dir}: vocab_size={d['V']} but the target's vocab_size is {t_vocab}. Fix: set the head's "
            f"vocab_size to the target's (embed_tokens/t2d are indexed by target token ids).")
    ids = aux_layer_ids(cfg)
    bad = [i for i in ids if not 0 <= i < t_layers]
    if bad:
        raise HeadCheckpointError(
            f"{head_dir}: eagle_config.eagle_aux_hidden_state_layer_ids={ids} has {bad} outside the target's "
            f"layers [0, {t_layers - 1}]. Fix: use ids of this target, e.g. [2, {t_layers // 2}, {t_layers - 3}].")
    mid = mask_token_id(cfg)
    trained_k = cfg.get(TRAINED_K_KEY)
    if k is not None:
        if not isinstance(k, int) or k < 1:
            raise HeadCheckpointError(f"num_speculative_tokens K={k!r} must be a positive integer.")
        if kind == "peagle" and trained_k is not None and k > trained_k:
            raise HeadCheckpointError(
                f"{head_dir}: K={k} is above the depth the head was trained for ({TRAINED_K_KEY}={trained_k}); "
                f"positions past it draft from untrained mask slots. Fix: use K <= {trained_k}, or retrain with "
                f"a deeper K.")
    if kind == "peagle":
        tok = target_dir / "tokenizer.json"
        if tok.is_file():  # the mask id must name the same token in the target's tokenizer
            vocab = {t["id"]: t["content"] for t in json.loads(tok.read_text(encoding="utf-8")).get("added_tokens", [])}
            if vocab and mid not in vocab:
                raise HeadCheckpointError(
                    f"{head_dir}: mask_token_id={mid} is not a special (added) token of the target's tokenizer "
                    f"(added tokens: {sorted(vocab.items())[:8]}). Fix: set mask_token_id to the id of <mask>.")
    return dict(kind=kind, k=k, trained_k=trained_k, mask_token_id=mid, aux_layer_ids=ids, hidden_size=d["H"],
                target_hidden_size=d["Ht"], vocab_size=d["V"], draft_vocab_size=d["Vd"], num_layers=d["L"])


# ------------------------------------------------------------------------------------------- builders


def head_config_for_target(target_config: Mapping[str, Any], kind: str, *, num_layers: int = 1,
                           hidden_size: int | None = None, intermediate_size: int | None = None,
                           num_attention_heads: int | None = None, num_key_value_heads: int | None = None,
                           draft_vocab_size: int | None = None, layer_ids: list[int] | None = None,
                           mask_token_id: int | None = None, trained_k: int | None = None) -> dict[str, Any]:
    """A head ``config.json`` dict matching ``target_config`` (a target ``config.json`` dict).

    Sizes default to the target's; ``kind="peagle"`` needs ``mask_token_id`` (and takes ``trained_k``).
    """
    if kind not in ("eagle3", "peagle"):
        raise HeadCheckpointError(f"kind must be 'eagle3' or 'peagle', got {kind!r}")
    t = dict(target_config)
    L = int(t["num_hidden_layers"])
    h = int(hidden_size or t["hidden_size"])
    heads = int(num_attention_heads or t["num_attention_heads"])
    cfg: dict[str, Any] = {
        "architectures": [ARCHITECTURE], "model_type": "llama",
        "hidden_size": h, "intermediate_size": int(intermediate_size or t["intermediate_size"]),
        "num_hidden_layers": int(num_layers), "num_attention_heads": heads,
        "num_key_value_heads": int(num_key_value_heads or t.get("num_key_value_heads") or heads),
        "head_dim": h // heads, "hidden_act": "silu", "rms_norm_eps": float(t.get("rms_norm_eps", 1e-5)),
        "max_position_embeddings": int(t.get("max_position_embeddings", 2048)),
        "rope_theta": float(t.get("rope_theta") or (t.get("rope_parameters") or {}).get("rope_theta", 10000.0)),
        "vocab_size": int(t["vocab_size"]), "draft_vocab_size": int(draft_vocab_size or t["vocab_size"]),
        "target_hidden_size": int(t["hidden_size"]), "tie_word_embeddings": False, "attention_bias": False,
        "eagle_config": {"use_aux_hidden_state": True,
                         "eagle_aux_hidden_state_layer_ids": list(layer_ids or [2, L // 2, L - 3])},
        "torch_dtype": "float32",
    }
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        if t.get(key) is not None:
            cfg[key] = t[key]
    if kind == "peagle":
        if mask_token_id is None:
            raise HeadCheckpointError("a P-EAGLE head needs mask_token_id (the target tokenizer's <mask> id).")
        cfg.update(mask_id_fields(mask_token_id))
        if trained_k is not None:
            cfg[TRAINED_K_KEY] = int(trained_k)
    validate_config(cfg)
    return cfg


def random_head_tensors(config: Mapping[str, Any], seed: int = 0) -> dict[str, torch.Tensor]:
    """Random-init tensors for every name in ``expected_tensor_shapes(config)`` (norms = 1, std 0.02). A stand-in
    head for layout and losslessness tests: its drafts are wrong but the served output must not change. With
    ``Vd < V`` the draft vocabulary is the first ``Vd`` target ids."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, shape in expected_tensor_shapes(config).items():
        if name.endswith("norm.weight"):
            out[name] = torch.ones(shape)
        elif name in ("d2t", "t2d"):
            continue
        else:
            out[name] = torch.randn(shape, generator=g) * 0.02
    d = _dims(config)
    if d["Vd"] < d["V"]:
        out["d2t"] = torch.zeros(d["Vd"], dtype=torch.int64)
        out["t2d"] = torch.arange(d["V"]) < d["Vd"]
    return out


def write_random_head(path: str | Path, target_dir: str | Path, kind: str, seed: int = 0,
                      **config_overrides: Any) -> Path:
    """A random-init stand-in head for ``target_dir`` (layout and losslessness checks before a trained head
    exists). A P-EAGLE head's mask id is the target tokenizer's ``<mask>`` added token."""
    target_dir = Path(target_dir)
    tcfg = json.loads((target_dir / CONFIG_FILE).read_text(encoding="utf-8"))
    mask_token_id = None
    if kind == "peagle":
        tok = target_dir / "tokenizer.json"
        added = json.loads(tok.read_text(encoding="utf-8")).get("added_tokens", []) if tok.is_file() else []
        ids = [t["id"] for t in added if t.get("content") == "<mask>"]
        if not ids:
            raise HeadCheckpointError(f"{target_dir}: the tokenizer has no <mask> token. Fix: use a target whose "
                                      f"tokenizer has <mask> (peagle-nb train target adds it).")
        mask_token_id = ids[0]
    cfg = head_config_for_target(tcfg, kind, mask_token_id=mask_token_id, **config_overrides)
    return write_head(path, cfg, random_head_tensors(cfg, seed=seed))
