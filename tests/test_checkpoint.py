"""The vLLM EAGLE-3 / P-EAGLE head layout (peagle_nb.models.checkpoint): names, shapes, and the head-vs-target
checks that must fail with a message naming the field and the fix. No vLLM here (tests/serving loads the
same files in real vLLM)."""

from __future__ import annotations

import json

import pytest
import torch

from peagle_nb.models import checkpoint as ck

TARGET = {"hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 8, "num_attention_heads": 2,
          "num_key_value_heads": 1, "vocab_size": 300, "rms_norm_eps": 1e-5, "max_position_embeddings": 512,
          "eos_token_id": 0}
MASK = 2


@pytest.fixture
def target_dir(tmp_path):
    d = tmp_path / "target"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(TARGET))
    tok = {"added_tokens": [{"id": 0, "content": "<|endoftext|>"}, {"id": 1, "content": "<|pad|>"},
                            {"id": 2, "content": "<mask>"}]}
    (d / "tokenizer.json").write_text(json.dumps(tok))
    return d


def _head(tmp_path, kind="peagle", name=None, **kw):
    cfg = ck.head_config_for_target(TARGET, kind, num_layers=2 if kind == "peagle" else 1,
                                    mask_token_id=MASK if kind == "peagle" else None, trained_k=6, **kw)
    path = ck.write_head(tmp_path / (name or kind), cfg, ck.random_head_tensors(cfg, seed=0))
    return path, cfg


def test_expected_shapes_follow_vllm_llama_eagle3():
    cfg = ck.head_config_for_target(TARGET, "peagle", num_layers=3, mask_token_id=MASK, draft_vocab_size=200)
    s = ck.expected_tensor_shapes(cfg)
    assert s["midlayer.self_attn.q_proj.weight"] == (128, 256)  # layer 0 reads cat(embed, hidden) = 2H
    assert s["midlayer.self_attn.k_proj.weight"] == (64, 256)  # 1 kv head x head_dim 64
    assert s["midlayer.hidden_norm.weight"] == (128,)
    assert s["layers.2.self_attn.q_proj.weight"] == (128, 128) and "layers.2.hidden_norm.weight" not in s
    assert "layers.3.self_attn.q_proj.weight" not in s and "layers.0.mlp.up_proj.weight" not in s
    assert s["fc.weight"] == (128, 3 * 128) and s["mask_hidden"] == (1, 3 * 128)
    assert s["lm_head.weight"] == (200, 128) and s["d2t"] == (200,) and s["t2d"] == (300,)
    assert s["embed_tokens.weight"] == (300, 128)
    e3 = ck.expected_tensor_shapes(ck.head_config_for_target(TARGET, "eagle3"))
    assert "mask_hidden" not in e3 and "d2t" not in e3  # full draft vocab: vLLM wants no d2t


def test_write_read_roundtrip(tmp_path, target_dir):
    path, cfg = _head(tmp_path, draft_vocab_size=250)
    config, tensors = ck.read_head(path)
    assert config["mask_token_id"] == MASK and config["architectures"] == ["LlamaForCausalLMEagle3"]
    assert tensors["d2t"].dtype == torch.int64 and tensors["t2d"].dtype == torch.bool
    assert int(tensors["t2d"].sum()) == 250
    assert set(tensors) == set(ck.expected_tensor_shapes(cfg))
    info = ck.check_head_against_target(path, target_dir, k=6)
    assert info["kind"] == "peagle" and info["aux_layer_ids"] == [2, 4, 5] and info["trained_k"] == 6


def test_identity_d2t_is_dropped_and_permuted_full_vocab_rejected(tmp_path):
    cfg = ck.head_config_for_target(TARGET, "eagle3")
    t = ck.random_head_tensors(cfg)
    t["d2t"], t["t2d"] = torch.zeros(300, dtype=torch.long), torch.ones(300, dtype=torch.bool)
    _, back = ck.read_head(ck.write_head(tmp_path / "a", cfg, t))
    assert "d2t" not in back
    t["d2t"][3] = 1
    with pytest.raises(ck.HeadCheckpointError, match="not the identity"):
        ck.write_head(tmp_path / "b", cfg, t)


def test_validate_lists_missing_unexpected_and_misshaped():
    cfg = ck.head_config_for_target(TARGET, "peagle", mask_token_id=MASK)
    t = ck.random_head_tensors(cfg)
    del t["mask_hidden"]
    t["fc.weight"] = torch.zeros(128, 256)
    t["extra.weight"] = torch.zeros(1)
    with pytest.raises(ck.HeadCheckpointError) as err:
        ck.validate_tensors(cfg, t)
    msg = str(err.value)
    assert "missing ['mask_hidden']" in msg and "extra.weight" in msg and "fc.weight: (128, 256)" in msg


@pytest.mark.parametrize("field,value,expect", [
    ("target_hidden_size", 64, "target_hidden_size=64 but the target's hidden_size is 128"),
    ("vocab_size", 400, "vocab_size=400 but the target's vocab_size is 300"),
    ("eagle_config", {"use_aux_hidden_state": True, "eagle_aux_hidden_state_layer_ids": [2, 4, 9]}, "[9] outside"),
    ("eagle_config", {"use_aux_hidden_state": True, "eagle_aux_hidden_state_layer_ids": [5, 4, 2]},
     "strictly increasing"),
    ("mask_token_id", 7, "mask_token_id=7 is not a special"),
    ("mask_token_id", 999, "outside the vocabulary"),
    ("pard_token", 7, "mask token ids disagree (mask_token_id=2, pard_token=7, ptd_token_id=2)"),
    ("architectures", ["LlamaForCausalLM"], "Fix: set it to ['LlamaForCausalLMEagle3']"),
])
def test_head_vs_target_errors_name_the_field(tmp_path, target_dir, field, value, expect):
    path, cfg = _head(tmp_path)
    cfg.update(ck.mask_id_fields(value) if field == "mask_token_id" else {field: value})  # all names, one id
    if field in ("target_hidden_size", "vocab_size"):  # keep tensors consistent so the cross-check is reached
        ck.write_head(path, cfg, ck.random_head_tensors(cfg))
    else:
        (path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ck.HeadCheckpointError, match="Fix|Fix:") as err:
        ck.check_head_against_target(path, target_dir, k=4)
    assert expect in str(err.value)


def test_k_above_trained_depth_and_missing_mask_hidden(tmp_path, target_dir):
    path, cfg = _head(tmp_path)
    with pytest.raises(ck.HeadCheckpointError, match=r"K=7 is above .*peagle_trained_k=6.*Fix: use K <= 6"):
        ck.check_head_against_target(path, target_dir, k=7)
    from safetensors.torch import load_file, save_file
    t = load_file(str(path / "model.safetensors"))
    t["mask_hidden"] = torch.zeros(1, 128)
    save_file(t, str(path / "model.safetensors"))
    with pytest.raises(ck.HeadCheckpointError, match=r"mask_hidden: \(1, 128\) \(expected \(1, 384\)\)"):
        ck.check_head_against_target(path, target_dir, k=2)
    del t["mask_hidden"]
    save_file(t, str(path / "model.safetensors"))
    with pytest.raises(ck.HeadCheckpointError, match=r"missing \['mask_hidden'\]"):
        ck.check_head_against_target(path, target_dir)


def test_a_peagle_head_writes_its_mask_id_under_every_name_vllm_reads(tmp_path):
    _, cfg = _head(tmp_path)
    assert [cfg[key] for key in ("mask_token_id", "pard_token", "ptd_token_id")] == [MASK] * 3
    only_old = {k: v for k, v in cfg.items() if k != "mask_token_id"}  # what an older export may carry
    assert ck.mask_token_id(only_old) == MASK and ck.head_kind(only_old) == "peagle"


def test_a_truncated_weights_file_names_the_file_and_the_fix(tmp_path, target_dir):
    path, _ = _head(tmp_path)
    weights = path / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    for read in (ck.read_head, ck.read_tensor_shapes):
        with pytest.raises(ck.HeadCheckpointError, match="not a readable safetensors file") as err:
            read(path)
        assert str(weights) in str(err.value) and "Fix: restore it" in str(err.value)


def test_missing_files_say_what_to_do(tmp_path, target_dir):
    with pytest.raises(ck.HeadCheckpointError, match="no config.json. Fix"):
        ck.read_head(tmp_path)
    path, _ = _head(tmp_path)
    with pytest.raises(ck.HeadCheckpointError, match="target .* no config.json"):
        ck.check_head_against_target(path, tmp_path / "nope")
