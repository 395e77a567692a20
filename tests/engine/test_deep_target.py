"""A family-v3-shaped target (32 layers: EAGLE-3 features from layers 2, 16 and 29) in the three engines: the
reference engine and the lean engine give the same tokens and accepted counts as plain greedy decoding for
EAGLE-3 and P-EAGLE heads sized for it, and vLLM loads the saved folder with a P-EAGLE head and decodes the
target's own greedy tokens. The model is narrow and untrained: this checks depth, not quality."""

from __future__ import annotations

import pytest
import torch

from peagle_nb.files import paths
from peagle_nb.engine.decoder import SpecDecoder
from peagle_nb.engine.lean.decoder import LeanDecoder
from peagle_nb.models.head_io import export_head
from peagle_nb.models.heads import DraftHead, config_for_target, init_from_target
from peagle_nb.models.target import V3_LAYERS, aux_layer_ids, load_target, make_config, mask_token_id, save_target


@pytest.fixture(scope="module")
def deep(tmp_path_factory):
    """(folder, target, tokenizer, {method: head}) for a 32-layer target with the tiny target's tokenizer."""
    from transformers import LlamaForCausalLM

    _, tok = load_target(paths.models_dir() / "tiny-target")
    torch.manual_seed(0)
    cfg = make_config(len(tok), tok.eos_token_id, tok.pad_token_id, hidden_size=64, intermediate_size=128,
                      num_hidden_layers=V3_LAYERS, num_attention_heads=2, num_key_value_heads=2,
                      max_position_embeddings=512)
    folder = tmp_path_factory.mktemp("v3-shaped")
    save_target(LlamaForCausalLM(cfg), tok, folder / "target", dtype=torch.float32)
    target, tok = load_target(folder / "target")
    heads = {}
    for kind, layers in (("eagle3", 1), ("peagle", 4)):
        hcfg = config_for_target(target.config, kind, num_layers=layers, draft_vocab_size=512,
                                 mask_token_id=mask_token_id(tok) if kind == "peagle" else None, trained_k=8)
        head = DraftHead(hcfg)
        head.set_draft_vocab(torch.arange(512))
        init_from_target(head, target)
        heads[kind] = head.eval()
        export_head(head, folder / kind)
    return folder, target, tok, heads


def test_a_32_layer_target_takes_eagle3_features_from_layers_2_16_29(deep):
    _, target, _, heads = deep
    assert target.config.num_hidden_layers == 32 and aux_layer_ids(32) == (2, 16, 29)
    assert all(h.aux_layer_ids == (2, 16, 29) for h in heads.values())


@pytest.mark.parametrize("method,k", [("eagle3", 3), ("peagle", 7)])
def test_reference_and_lean_engines_decode_the_deep_target_losslessly(deep, method, k):
    _, target, tok, heads = deep
    ids = tok("def fibonacci(n):\n    ")["input_ids"]
    plain = SpecDecoder(target, tok, None, "none", 1).generate(ids, 24)
    ref = SpecDecoder(target, tok, heads[method], method, k).generate(ids, 24)
    lean = LeanDecoder(target, tok, heads[method], method, k).generate(ids, 24)
    assert ref.tokens == plain.tokens == lean.tokens
    assert [s.accepted for s in ref.steps] == [s.accepted for s in lean.steps]


@pytest.mark.vllm
@pytest.mark.slow
def test_vllm_loads_the_deep_target_with_a_peagle_head(deep):
    pytest.importorskip("vllm", reason="needs the `cpu` or `gpu` extra (vLLM)")
    from peagle_nb.serving import offline

    folder, target, tok, _ = deep
    ids = tok("The quick brown fox")["input_ids"]
    want = SpecDecoder(target, tok, None, "none", 1).generate(ids, 12).tokens
    spec = {"method": "eagle3", "model": str(folder / "peagle"), "num_speculative_tokens": 4,
            "parallel_drafting": True}
    llm = offline.make_llm(str(folder / "target"), spec, max_model_len=256, fix_cpu_sampling=False)  # greedy
    try:
        from vllm import SamplingParams

        out = llm.generate([{"prompt_token_ids": ids}], SamplingParams(temperature=0.0, max_tokens=12,
                                                                       ignore_eos=True), use_tqdm=False)
        assert list(out[0].outputs[0].token_ids) == want
    finally:
        offline.close_llm(llm)
