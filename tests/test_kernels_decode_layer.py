"""decode_layer: each Triton op (interpreter, child process) == its PyTorch reference == Llama's own formulas."""

import pytest
import torch

from peagle_kernels.decode_layer import (add_rms_norm, attention_extent, cache_attention, llama_rms_norm,
                                         reference_cache_attention, reference_rope_and_write_kv, rope_and_write_kv,
                                         rope_tables, silu_mul)
from tests.kernel_cases import run_interpreted

SHAPES = ["mha_one_row", "gqa_rows_with_padding", "gqa_two_groups", "long_context"]
OPS = ["add_rms_norm", "add_rms_norm_residual", "rope_and_write_kv", "cache_attention", "cache_attention_batched",
       "cache_attention_batched_vs_alone", "cache_attention_grouped_vs_alone", "cache_attention_window",
       "cache_attention_window_sinks", "cache_attention_window_batched", "cache_attention_window_grouped_vs_alone",
       "silu_mul", "linear",
       "linear_norm", "linear_residual", "linear_norm_residual", "linear_silu_mul_residual"]


@pytest.fixture(scope="module")
def interpreted():
    return run_interpreted("decode_layer")


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("op", OPS)
def test_triton_matches_reference(interpreted, shape, op):
    # float32: elementwise ops agree to rounding; the products' sums (up to ~50 in size) in another order
    assert interpreted[shape][op] < (2e-6 if not op.startswith("linear") else 5e-5), interpreted[shape]


def test_rms_norm_is_llamas():
    """Bit for bit in float32, the engine's dtype (transformers computes the norm in float32 for any input)."""
    g = torch.Generator().manual_seed(0)
    for rows in (1, 7, 33):
        x, r, w = (torch.randn(rows, 256, generator=g) for _ in range(3))
        normed, s = add_rms_norm(x, r, w[0], 1e-5)
        assert torch.equal(s, x + r)
        assert torch.equal(normed, llama_rms_norm(x + r, w[0], 1e-5))


def test_rope_is_llamas_rotate_half():
    """Against transformers' own apply_rotary_pos_emb with its default rotary embedding."""
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

    T, H, D = 6, 3, 16
    g = torch.Generator().manual_seed(1)
    positions = torch.tensor([0, 3, 4, 9, 10, 40])
    qkv = torch.randn(T, 3 * H * D, generator=g)
    cos, sin = rope_tables(64, D, 10000.0)
    kc, vc = torch.zeros(H, 64, D), torch.zeros(H, 64, D)
    q = reference_rope_and_write_kv(qkv, positions, positions, cos, sin, kc, vc, H, H)
    cfg = LlamaConfig(hidden_size=H * D, num_attention_heads=H, max_position_embeddings=64)
    hf_cos, hf_sin = LlamaRotaryEmbedding(cfg)(qkv, positions[None])
    q_hf, k_hf = apply_rotary_pos_emb(qkv[:, :H * D].reshape(1, T, H, D).transpose(1, 2),
                                      qkv[:, H * D:2 * H * D].reshape(1, T, H, D).transpose(1, 2), hf_cos, hf_sin)
    assert torch.allclose(q, q_hf[0].transpose(0, 1), atol=1e-6)
    assert torch.allclose(kc[:, positions], k_hf[0], atol=1e-6)
    assert torch.equal(vc[:, positions], qkv[:, 2 * H * D:].reshape(T, H, D).transpose(0, 1))


def test_cache_attention_reads_only_slots_up_to_each_position():
    g = torch.Generator().manual_seed(2)
    HQ, HKV, D, S = 4, 2, 8, 32
    q = torch.randn(3, HQ, D, generator=g, dtype=torch.float64)
    kc, vc = torch.randn(HKV, S, D, generator=g, dtype=torch.float64), torch.randn(HKV, S, D, generator=g,
                                                                                   dtype=torch.float64)
    positions = torch.tensor([5, 6, 0])
    out = cache_attention(q, kc, vc, positions)
    for t, p in enumerate(positions.tolist()):  # a naive loop: softmax over slots 0..p of the row's kv head
        for h in range(HQ):
            k, v = kc[h // 2, : p + 1], vc[h // 2, : p + 1]
            w = torch.softmax(k @ q[t, h] / D ** 0.5, dim=0)
            assert torch.allclose(out[t, h], w @ v, atol=1e-12)
    kc[:, 7:] = float("nan")  # slots past every position are never read
    assert not torch.isnan(reference_cache_attention(q, kc, vc, positions)).any()
    assert attention_extent(torch.tensor([9]))[1] is None


def test_silu_mul_and_shape_errors():
    gu = torch.randn(2, 10)
    assert torch.allclose(silu_mul(gu), torch.nn.functional.silu(gu[:, :5]) * gu[:, 5:])
    with pytest.raises(ValueError, match=r"\[T, 2I\]"):
        silu_mul(torch.randn(2, 9))
    with pytest.raises(ValueError, match="weight"):
        add_rms_norm(torch.randn(2, 8), None, torch.ones(7), 1e-5)
    with pytest.raises(ValueError, match="head_dim"):
        cache_attention(torch.randn(1, 4, 6), torch.randn(2, 8, 6), torch.randn(2, 8, 6), torch.tensor([1]))
    with pytest.raises(ValueError, match="qkv"):
        rope_and_write_kv(torch.randn(2, 10), torch.tensor([0, 1]), torch.tensor([0, 1]), *rope_tables(8, 4, 1e4),
                          torch.zeros(1, 8, 4), torch.zeros(1, 8, 4), 1, 1)
