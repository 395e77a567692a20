"""Models for the vLLM tests: the suite's tiny target and heads (data/models) when they exist, else
random-init stand-ins in the same layout (a random Llama target with a throwaway BPE tokenizer)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from peagle_nb.models import checkpoint
from peagle_nb.files import paths

pytest.importorskip("vllm", reason="needs the `cpu` or `gpu` extra (vLLM)")


@dataclass
class TinyModels:
    target: Path
    eagle3: Path
    peagle: Path
    trained: bool  # True: the suite's trained heads; False: random stand-ins
    peagle_k: int


def build_random_target(path: Path, layers: int = 8) -> Path:
    import torch
    from transformers import LlamaForCausalLM

    from peagle_nb.models.target import make_config
    from peagle_nb.models.tokenizer import train_tokenizer

    texts = ["def f(x):\n    return x + 1\n", "The quick brown fox jumps over the lazy dog.\n"] * 20
    tok = train_tokenizer(texts, vocab_size=300)
    cfg = make_config(vocab_size=len(tok), eos_id=tok.eos_token_id, pad_id=tok.pad_token_id, hidden_size=128,
                      intermediate_size=256, num_hidden_layers=layers, num_attention_heads=2, num_key_value_heads=1,
                      max_position_embeddings=512)
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory) -> TinyModels:
    models = paths.models_dir()
    t, e, p = models / "tiny-target", models / "tiny-eagle3", models / "tiny-peagle"
    if all((d / "config.json").is_file() for d in (t, e, p)):
        k = int(json.loads((p / "config.json").read_text()).get("peagle_trained_k") or 4)
        return TinyModels(t, e, p, True, min(k, 4))
    root = tmp_path_factory.mktemp("standins")
    if not (t / "config.json").is_file():
        t = build_random_target(root / "target")
    e = checkpoint.write_random_head(root / "eagle3", t, "eagle3", seed=1)
    p = checkpoint.write_random_head(root / "peagle", t, "peagle", seed=2, num_layers=2, trained_k=6)
    return TinyModels(t, e, p, False, 4)


@pytest.fixture(scope="session")
def prompt_ids(tiny_models) -> list[list[int]]:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_models.target)
    prompts_file = paths.prompts_dir() / "prose.jsonl"
    if prompts_file.is_file():
        from peagle_nb.text.prompts import load_prompts

        texts = load_prompts(prompts_file, 4)
    else:
        texts = ["The quick brown fox", "def f(x):", "It was the best of times,", "import os\n"]
    return [tok(t)["input_ids"] for t in texts]
