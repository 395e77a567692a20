"""The tiny target LM: a Llama-architecture causal LM (transformers ``LlamaForCausalLM``) and helpers to
read the hidden states EAGLE-3 and P-EAGLE drafters consume. Explained in notebooks 01 and 02.

The committed model lives in ``data/models/tiny-target/`` (``save_pretrained`` + tokenizer files) and
loads with transformers and with vLLM unchanged; ``peagle-nb train target`` reproduces it.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from peagle_nb.models import checksums
from peagle_nb.files import paths
from peagle_nb.models.tokenizer import MASK_TOKEN

# The shipped size: 8 layers so EAGLE-3's feature layers (2, 4, 5) are distinct; bf16 weights ~13.5 MiB.
DEFAULT_ARCH = dict(hidden_size=256, intermediate_size=640, num_hidden_layers=8, num_attention_heads=4,
                    num_key_value_heads=4, max_position_embeddings=1024)
# Family v3's depth: at batch 1 a step's time grows with its layer count, so over 32 layers a 4-layer P-EAGLE pass
# costs about 0.2 of a target step and a 1-layer EAGLE-3 pass about 0.06 (notebook 08)
V3_LAYERS = 32


def default_path() -> Path:
    return paths.models_dir() / "tiny-target"


def make_config(vocab_size: int, eos_id: int, pad_id: int, **overrides) -> LlamaConfig:
    """The target's ``LlamaConfig`` (tied embeddings keep the file small; rope theta 10k)."""
    arch = {**DEFAULT_ARCH, **overrides}
    return LlamaConfig(vocab_size=vocab_size, rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=True,
                       bos_token_id=eos_id, eos_token_id=eos_id, pad_token_id=pad_id, hidden_act="silu",
                       attention_bias=False, mlp_bias=False, **arch)


def load_target(path: str | Path | None = None, dtype: torch.dtype = torch.float32,
                device: str | torch.device = "cpu") -> tuple[LlamaForCausalLM, PreTrainedTokenizerFast]:
    """Load the target (eval mode, weights upcast to ``dtype``) and its tokenizer."""
    path = Path(path) if path is not None else default_path()
    if not (path / "config.json").is_file():
        raise FileNotFoundError(
            f"no target model at {path} (config.json missing). Fix: use the committed data/models/tiny-target, "
            f"or train one with `peagle-nb train target --out {path}` (add --smoke for a 1-minute CPU run).")
    if not (path / "tokenizer.json").is_file():
        raise FileNotFoundError(f"{path} has no tokenizer.json: the target folder must hold its tokenizer files "
                                f"(`peagle-nb train target` writes them).")
    checksums.verify_folder(path)  # a shipped folder: every file as committed (a user's own folder has no manifest)
    _check_weights_readable(path)
    model = LlamaForCausalLM.from_pretrained(path, dtype=dtype)
    model.to(device).eval()
    tokenizer = PreTrainedTokenizerFast.from_pretrained(path)
    return model, tokenizer


def _check_weights_readable(path: Path) -> None:
    """A truncated weights file (single or sharded) as a clear error, before transformers fails deep inside."""
    from safetensors import safe_open

    for weights in sorted(path.glob("model*.safetensors")):
        try:
            with safe_open(str(weights), framework="pt") as f:
                list(f.keys())
        except Exception as exc:  # noqa: BLE001 - safetensors' own error type differs between releases
            raise ValueError(f"{weights} is not a readable safetensors file ({type(exc).__name__}: {exc}); it is "
                             f"probably truncated or not fully downloaded. Fix: restore it (`git checkout -- "
                             f"{weights}`, or `git lfs pull` if the clone holds LFS pointers), or retrain the "
                             f"target (`peagle-nb train target`).") from None


def aux_layer_ids(num_layers: int) -> tuple[int, int, int]:
    """EAGLE-3's feature layers, vLLM's default ``(2, L // 2, L - 3)`` ("hidden state entering layer i")."""
    if num_layers < 6:
        raise ValueError(f"EAGLE-3 needs >= 6 target layers for distinct feature layers, got {num_layers}")
    return (2, num_layers // 2, num_layers - 3)


def target_features(hidden_states: tuple[torch.Tensor, ...], layer_ids) -> torch.Tensor:
    """Concat ``hidden_states[i]`` for ``i`` in ``layer_ids`` -> ``[B, T, 3H]``.

    ``hidden_states`` is HF's ``output_hidden_states`` tuple: index 0 is the embedding output, index i the
    input of decoder layer i, which is what vLLM's aux hidden states capture.
    """
    n = len(hidden_states)
    bad = [i for i in layer_ids if not 0 <= i < n - 1]
    if bad:
        raise ValueError(f"layer ids {bad} out of range for {n - 1} decoder layers")
    return torch.cat([hidden_states[i] for i in layer_ids], dim=-1)


def mask_token_id(tokenizer) -> int:
    """Id of ``<mask>``, the placeholder token P-EAGLE puts in draft slots 2..K."""
    tid = tokenizer.convert_tokens_to_ids(MASK_TOKEN)
    if tid is None or tid == tokenizer.unk_token_id or tokenizer.convert_ids_to_tokens(tid) != MASK_TOKEN:
        raise ValueError(f"tokenizer has no {MASK_TOKEN} token: P-EAGLE needs one. Use the tiny-target tokenizer "
                         f"or add it as a special token and resize the embeddings.")
    return int(tid)


# Weight files above this are split into shards (model-0000N-of-0000M.safetensors + an index, which transformers
# and vLLM both load): every committed file stays under 15 MiB.
MAX_SHARD_SIZE = "10MB"


def save_target(model: LlamaForCausalLM, tokenizer: PreTrainedTokenizerFast, path: str | Path,
                dtype: torch.dtype = torch.bfloat16, max_shard_size: str | int = MAX_SHARD_SIZE) -> Path:
    """``save_pretrained`` model (in ``dtype``, bf16 keeps files small; sharded above ``max_shard_size``) and
    tokenizer, vLLM-loadable."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    for stale in [*path.glob("model*.safetensors"), *path.glob("model.safetensors.index.json")]:
        stale.unlink()  # an earlier save with other sharding would leave weights the loader mixes in
    to_save = LlamaForCausalLM(model.config)
    to_save.load_state_dict(model.state_dict())
    to_save.to(dtype)
    to_save.config.dtype = dtype
    to_save.generation_config.do_sample = False
    to_save.save_pretrained(path, max_shard_size=max_shard_size)
    tokenizer.save_pretrained(path)
    # An explicit class name every transformers (4.x and 5.x) and vLLM resolve without a model-type lookup.
    cfg_path = path / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    cfg_path.write_text(json.dumps(cfg, indent=2) + "\n")
    return path
