"""Draft heads (peagle_nb.models.heads): shapes, KV cache, draft vocabulary, export/import through
peagle_nb.models.checkpoint, and the committed tiny heads."""

from __future__ import annotations

import json

import pytest
import torch

from peagle_nb.models import checkpoint
from peagle_nb.files import paths
from peagle_nb.models.head_io import config_to_json
from peagle_nb.models.heads import (DraftHead, DraftHeadConfig, DraftKVCache, config_from_json, export_head,
                                    head_tensors, load_head)


def small_config(kind="peagle", layers=3, kv=2, **kw) -> DraftHeadConfig:
    base = dict(kind=kind, hidden_size=64, intermediate_size=96, num_hidden_layers=layers, num_attention_heads=4,
                num_key_value_heads=kv, vocab_size=300, draft_vocab_size=120, target_hidden_size=48,
                aux_layer_ids=(1, 3, 4), mask_token_id=2 if kind == "peagle" else None, trained_k=8)
    base.update(kw)
    return DraftHeadConfig(**base)


def make_head(kind="peagle", layers=3, kv=2, seed=0, **kw) -> DraftHead:
    torch.manual_seed(seed)
    head = DraftHead(small_config(kind, layers, kv, **kw)).double().eval()
    head.reset_parameters(std=0.2, seed=seed)  # larger weights: differences would show
    return head


def inputs(head, b=2, t=11, seed=1):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, head.config.vocab_size, (b, t), generator=g)
    feats = torch.randn(b, t, head.config.fc_input_size, generator=g, dtype=torch.double)
    pos = torch.arange(t)[None].expand(b, t)
    return ids, head.project(feats), pos


@pytest.mark.parametrize("kind,layers,kv", [("eagle3", 1, 4), ("peagle", 4, 2), ("peagle", 2, 1)])
def test_forward_shapes(kind, layers, kv):
    head = make_head(kind, layers, kv)
    ids, hidden, pos = inputs(head)
    logits, pre = head(ids, hidden, pos)
    assert logits.shape == (2, 11, 120) and pre.shape == (2, 11, 64)
    assert head.layers[0].self_attn.q_proj.in_features == 128  # fused layer: 2H input
    assert all(layer.self_attn.q_proj.in_features == 64 for layer in head.layers[1:])
    assert head.layers[0].self_attn.k_proj.out_features == kv * 16  # GQA
    if kind == "peagle":
        assert head.mask_hidden.shape == (1, 144) and head.mask_hidden_projected().shape == (64,)
    else:
        with pytest.raises(ValueError, match="no mask_hidden"):
            head.mask_hidden_projected()


@pytest.mark.parametrize("kind,layers", [("eagle3", 1), ("peagle", 3)])
def test_cache_matches_full_forward(kind, layers):
    head = make_head(kind, layers)
    ids, hidden, pos = inputs(head)
    full, full_pre = head(ids, hidden, pos)
    cache = DraftKVCache()
    parts = [head(ids[:, a:b], hidden[:, a:b], pos[:, a:b], cache=cache) for a, b in ((0, 4), (4, 5), (5, 11))]
    assert cache.length == 11
    torch.testing.assert_close(torch.cat([p[0] for p in parts], 1), full, rtol=0, atol=1e-10)
    torch.testing.assert_close(torch.cat([p[1] for p in parts], 1), full_pre, rtol=0, atol=1e-10)
    # rollback: crop to 6, re-run the rest -> same as the full pass
    cache.crop(6)
    assert cache.length == 6
    again, _ = head(ids[:, 6:], hidden[:, 6:], pos[:, 6:], cache=cache)
    torch.testing.assert_close(again, full[:, 6:], rtol=0, atol=1e-10)
    # an explicit causal mask equals the default one
    masked, _ = head(ids, hidden, pos, attn_mask=torch.ones(11, 11, dtype=torch.bool).tril()[None, None])
    torch.testing.assert_close(masked, full, rtol=0, atol=1e-10)


def test_attention_mask_restricts_keys():
    head = make_head("peagle", 2)
    ids, hidden, pos = inputs(head, b=1, t=6)
    mask = torch.ones(6, 6, dtype=torch.bool).tril()
    mask[5, 2:5] = False  # position 5 sees 0, 1 and itself only (in every layer)
    out, _ = head(ids, hidden, pos, attn_mask=mask[None, None])
    hidden2 = hidden.clone()
    hidden2[:, 2] += 1.0
    ids2 = ids.clone()
    ids2[:, 2] = (ids2[:, 2] + 1) % 300
    out2, _ = head(ids2, hidden2, pos, attn_mask=mask[None, None])
    torch.testing.assert_close(out[:, 5], out2[:, 5], rtol=0, atol=1e-10)
    assert not torch.allclose(out[:, 3], out2[:, 3])


def test_draft_vocab_mapping():
    head = make_head("eagle3", 1)
    ids = torch.randperm(300)[:120]
    head.set_draft_vocab(ids)
    want = ids.sort().values
    assert torch.equal(head.draft_to_target(torch.arange(120)), want)
    assert torch.equal(head.t2d.nonzero().flatten(), want)
    with pytest.raises(ValueError, match="distinct target ids"):
        head.set_draft_vocab(torch.zeros(120, dtype=torch.long))


def test_config_round_trip_and_errors():
    cfg = small_config("peagle", 4)
    vcfg = config_to_json(cfg)
    assert vcfg["architectures"] == ["LlamaForCausalLMEagle3"] and vcfg["mask_token_id"] == 2
    assert vcfg["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == [1, 3, 4]
    back = config_from_json(json.loads(json.dumps(vcfg)))
    assert back == cfg and config_to_json(back) == vcfg
    with pytest.raises(ValueError, match="mask_token_id"):
        DraftHeadConfig(kind="peagle")
    with pytest.raises(ValueError, match="kind"):
        DraftHeadConfig(kind="medusa")
    head = make_head("eagle3", 1)
    with pytest.raises(ValueError, match="another target"):
        head.project(torch.zeros(1, 2, 10, dtype=torch.double))


def test_exported_peagle_config_names_the_mask_id_every_way_vllm_reads_it(tmp_path):
    export_head(make_head("peagle", 2), tmp_path / "h")
    cfg = checkpoint.read_config(tmp_path / "h")
    assert cfg["mask_token_id"] == cfg["pard_token"] == cfg["ptd_token_id"] == 2


@pytest.mark.parametrize("kind,layers", [("eagle3", 1), ("peagle", 3)])
def test_export_round_trip(tmp_path, kind, layers):
    head = make_head(kind, layers)
    head.set_draft_vocab(torch.arange(0, 240, 2))
    export_head(head, tmp_path / "h")
    cfg, tensors = checkpoint.read_head(tmp_path / "h")
    assert set(tensors) == set(checkpoint.expected_tensor_shapes(cfg)) | {"embed_tokens.weight"}
    assert "midlayer.hidden_norm.weight" in tensors and "layers.0.self_attn.q_proj.weight" not in tensors
    loaded = load_head(tmp_path / "h", dtype=torch.double)
    assert loaded.config == head.config
    ref = {k: v.double() if v.is_floating_point() else v for k, v in head_tensors(head).items()}
    assert all(torch.equal(ref[k], v) for k, v in head_tensors(loaded, torch.double).items())
    ids, hidden, pos = inputs(loaded)
    assert torch.equal(loaded.draft_to_target(torch.arange(120)), torch.arange(0, 240, 2))
    assert loaded(ids, hidden, pos)[0].shape == (2, 11, 120)


def test_export_refuses_missing_tensor(tmp_path):
    head = make_head("peagle", 2)
    del head.mask_hidden  # a P-EAGLE head that lost its mask_hidden: vLLM would leave it uninitialised
    head.mask_hidden = None
    with pytest.raises(checkpoint.HeadCheckpointError, match="missing.*mask_hidden"):
        export_head(head, tmp_path / "bad")
    assert not (tmp_path / "bad" / "model.safetensors").exists()


def test_load_rejects_tampered_checkpoint(tmp_path):
    from safetensors.torch import load_file, save_file

    head = make_head("peagle", 2)
    export_head(head, tmp_path / "h")
    tensors = load_file(str(tmp_path / "h" / "model.safetensors"))
    del tensors["layers.1.mlp.up_proj.weight"]
    save_file(tensors, str(tmp_path / "h" / "model.safetensors"))
    with pytest.raises(checkpoint.HeadCheckpointError, match="layers.1.mlp.up_proj.weight"):
        load_head(tmp_path / "h")


@pytest.mark.parametrize("name,kind", [("tiny-eagle3", "eagle3"), ("tiny-peagle", "peagle")])
def test_committed_heads_load_and_match_config(name, kind):
    path = paths.models_dir() / name
    target_path = paths.models_dir() / "tiny-target"
    head = load_head(path)
    cfg = json.loads((path / "config.json").read_text())
    tcfg = json.loads((target_path / "config.json").read_text())
    assert head.kind == kind
    assert len(head.layers) == cfg["num_hidden_layers"] == (1 if kind == "eagle3" else 4)
    assert head.config.target_hidden_size == tcfg["hidden_size"] and head.config.vocab_size == tcfg["vocab_size"]
    assert head.lm_head.weight.shape == (cfg["draft_vocab_size"], cfg["hidden_size"])
    assert int(head.t2d.sum()) == cfg["draft_vocab_size"] < tcfg["vocab_size"]
    assert torch.equal(head.t2d.nonzero().flatten(), head.target_to_draft_ids())
    info = checkpoint.check_head_against_target(path, target_path, k=7 if kind == "peagle" else 3)
    assert info["kind"] == kind
    if kind == "peagle":
        assert head.trained_k >= 8 and cfg["mask_token_id"] == head.mask_token_id == 2
        assert head.mask_hidden.abs().sum() > 0
    for f in path.iterdir():
        assert f.stat().st_size < 15 * 2**20, f
    assert (path / "README.md").is_file() and "tau" in (path / "README.md").read_text()
