"""The lean forward passes: the Llama target and both draft heads as a handful of fused ops over a static cache.

Explained in notebook 01 (why a step's time must be the model's work) and 03. The weights are the same
tensors as the ``transformers`` target and the ``DraftHead`` modules (q/k/v and gate/up concatenated once,
so a layer is four matrix products); each forward takes the rows' token ids, positions and cache slots
and writes the rows' keys and values at those slots (``peagle_kernels.decode_layer``). A row attends to
the slots up to its own position, so rolling back after rejected drafts costs nothing: the next step
simply writes over the slots past the kept length. No shape depends on a value read from the device,
so each call can be captured once as a CUDA graph and replayed.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from peagle_kernels.decode_layer import (add_rms_norm, attention_extent, cache_attention, fused_linear,
                                         rope_and_write_kv, rope_rows, rope_tables)


def _t(*weights) -> torch.Tensor:
    """nn.Linear weights [out, in] stacked along out, stored as [in, out]: ``x @ w`` reads them in one sweep (on a
    CPU a batch-1 step is bound by reading the weights, and this layout reads them fastest)."""
    return torch.cat([w.detach() for w in weights], dim=0).t().contiguous()


@dataclass
class LayerWeights:
    input_norm: torch.Tensor  # [H]
    qkv: torch.Tensor  # [H_in, (HQ + 2 HKV) D]: q, k, v projections side by side
    o: torch.Tensor  # [HQ D, H]
    post_norm: torch.Tensor  # [H]
    gate_up: torch.Tensor  # [H, 2 I]: gate and up projections side by side
    down: torch.Tensor  # [I, H]
    hidden_norm: torch.Tensor | None = None  # [H]: EAGLE-3's fused layer 0 normalises the hidden input too


def _layer_weights(attn, mlp, input_norm, post_norm, hidden_norm=None) -> LayerWeights:
    return LayerWeights(input_norm.detach(), _t(attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight),
                        _t(attn.o_proj.weight), post_norm.detach(), _t(mlp.gate_proj.weight, mlp.up_proj.weight),
                        _t(mlp.down_proj.weight), None if hidden_norm is None else hidden_norm.detach())


class Rows:
    """What every layer of one forward needs about its T rows: positions and cache slots (and, for a batch, the
    first slot of each row's sequence), the attention window (``cache_attention``'s ``window`` / ``sinks``), and on
    the PyTorch path (CPU) the RoPE factors and the attention extent, computed once per forward rather than once per
    layer."""

    def __init__(self, positions, slots, cos, sin, dtype, starts=None, window: int | None = None, sinks: int = 0):
        self.positions, self.slots, self.starts, self.window, self.sinks = positions, slots, starts, window, sinks
        eager = positions.device.type != "cuda"
        self.rope = rope_rows(positions, cos, sin, dtype) if eager else None
        self.extent = attention_extent(positions, dtype, starts, window, sinks) if eager else None


class KVCache:
    """Keys and values ``[layers, HKV, S, D]``; slot = position, and slot ``S - 1`` is a spare that padding rows
    write to. The cache holds no length: each forward says which slots its rows attend to. With ``sequences`` > 1
    (a batch) sequence b owns slots ``b * capacity + position`` and rows pass ``starts`` (``b * capacity``)."""

    def __init__(self, layers: int, kv_heads: int, positions: int, head_dim: int, dtype, device, sequences: int = 1):
        shape = (layers, kv_heads, sequences * positions + 1, head_dim)
        self.k = torch.zeros(shape, dtype=dtype, device=device)
        self.v = torch.zeros(shape, dtype=dtype, device=device)
        self.capacity = positions  # usable positions 0..capacity-1 of each sequence
        self.sequences = sequences
        self.spare_slot = sequences * positions


class _Stack:
    """Shared by the target and the heads: decoder layers over a KV cache, with the fused ops."""

    def __init__(self, layers: list[LayerWeights], n_heads: int, n_kv_heads: int, head_dim: int, eps: float,
                 rope_theta: float, max_positions: int, device):
        self.layers, self.nh, self.nkv, self.hd, self.eps = layers, n_heads, n_kv_heads, head_dim, eps
        self.cos, self.sin = rope_tables(max_positions + 1, head_dim, rope_theta, device)
        self.max_positions = max_positions
        self.dtype = layers[0].qkv.dtype
        self.device = torch.device(device)

    def new_cache(self, sequences: int = 1) -> KVCache:
        return KVCache(len(self.layers), self.nkv, self.max_positions, self.hd, self.dtype, self.device, sequences)

    def rows(self, positions, slots, starts=None, window: int | None = None, sinks: int = 0) -> Rows:
        return Rows(positions, slots, self.cos, self.sin, self.dtype, starts, window, sinks)

    def attention(self, i: int, qkv, rows: Rows, cache: KVCache):
        """q/k/v products of the rows -> attention output over the cache [T, HQ D] (keys and values stored)."""
        q = rope_and_write_kv(qkv, rows.positions, rows.slots, self.cos, self.sin, cache.k[i], cache.v[i],
                              self.nh, self.nkv, rows=rows.rope)
        return cache_attention(q, cache.k[i], cache.v[i], rows.positions, starts=rows.starts, extent=rows.extent,
                               window=rows.window, sinks=rows.sinks).reshape(q.shape[0], -1)

    def layer(self, i: int, s, rows: Rows, cache: KVCache, qkv=None):
        """One decoder layer on the residual stream ``s`` [T, H] -> the stream after it. Six launches on a GPU:
        norm+qkv, RoPE+cache write, attention, o+residual, norm+gate/up, SiLU-mul+down+residual."""
        w = self.layers[i]
        if qkv is None:
            qkv = fused_linear(s, w.qkv, norm_weight=w.input_norm, eps=self.eps)
        s = fused_linear(self.attention(i, qkv, rows, cache), w.o, residual=s)
        gate_up = fused_linear(s, w.gate_up, norm_weight=w.post_norm, eps=self.eps)
        return fused_linear(gate_up, w.down, silu_and_mul=True, residual=s)


class LeanTarget(_Stack):
    """The ``transformers`` Llama target's forward: logits and EAGLE-3 features of T rows, cached at their slots."""

    def __init__(self, model):
        cfg = model.config
        m = model.model
        layers = [_layer_weights(layer.self_attn, layer.mlp, layer.input_layernorm.weight,
                                 layer.post_attention_layernorm.weight) for layer in m.layers]
        head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        rope = getattr(cfg, "rope_parameters", None) or {}
        theta = float(rope.get("rope_theta", getattr(cfg, "rope_theta", 10000.0)))
        if rope.get("rope_type", "default") != "default":
            raise ValueError(f"the lean engine implements Llama's default RoPE, not {rope.get('rope_type')!r}")
        device = m.embed_tokens.weight.device
        super().__init__(layers, cfg.num_attention_heads, cfg.num_key_value_heads, head_dim, cfg.rms_norm_eps, theta,
                         cfg.max_position_embeddings, device)
        self.embed = m.embed_tokens.weight.detach()
        self.norm = m.norm.weight.detach()
        self.lm_head = _t(model.lm_head.weight)  # [H, V]
        self.vocab_size = cfg.vocab_size

    def forward(self, ids, positions, slots, cache: KVCache, feature_layers: tuple[int, ...] = (),
                logits_rows: slice | None = None, starts=None):
        """ids/positions/slots [T] (``starts`` [T]: a batch, see ``KVCache``) -> (logits [T or selected, V],
        features [T, 3H] or None)."""
        s, feats = self.embed[ids], []
        rows = self.rows(positions, slots, starts)
        for i in range(len(self.layers)):
            if i in feature_layers:  # the hidden state ENTERING layer i (HF's hidden_states[i])
                feats.append(s)
            s = self.layer(i, s, rows, cache)
        if logits_rows is not None:
            s = s[logits_rows]
        return fused_linear(s, self.lm_head, norm_weight=self.norm, eps=self.eps), (torch.cat(feats, dim=-1) if feats
                                                                                    else None)


class LeanHead(_Stack):
    """A ``DraftHead``'s forward (EAGLE-3 or P-EAGLE): the fused layer 0 reads ``cat(norm(embed), norm(hidden))``."""

    def __init__(self, head):
        cfg = head.config
        layers = []
        for i, layer in enumerate(head.layers):
            layers.append(_layer_weights(layer.self_attn, layer.mlp, layer.input_layernorm.weight,
                                         layer.post_attention_layernorm.weight,
                                         layer.hidden_norm.weight if i == 0 else None))
        device = head.fc.weight.device
        super().__init__(layers, cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim, cfg.rms_norm_eps,
                         cfg.rope_theta, cfg.max_position_embeddings, device)
        self.embed = head.embed_tokens.weight.detach()
        self.fc = _t(head.fc.weight)  # [3H, H]
        self.norm = head.norm.weight.detach()
        self.lm_head = _t(head.lm_head.weight)  # [H, Vd]
        self.d2t = head.d2t.detach()
        self.hidden_size = cfg.hidden_size
        with torch.inference_mode():
            self.mask_hidden = head.mask_hidden_projected().detach() if head.mask_hidden is not None else None

    def project(self, features):
        """Target features [T, 3H] -> the drafter's hidden input [T, H] (``fc``)."""
        return features @ self.fc

    def forward(self, ids, hidden, positions, slots, cache: KVCache, starts=None, window: int | None = None,
                sinks: int = 0):
        """ids [T], hidden [T, H] (projected), positions/slots [T] (``starts`` [T]: a batch, see ``KVCache``) -> the
        pre-norm hidden state [T, H]. ``window`` / ``sinks``: each row attends to the ``window`` positions ending at
        its own and the first ``sinks`` only (None: all; ``engine.drafting``).

        ``logits(out[rows])`` scores the rows that are sampled; the pre-norm hidden feeds EAGLE-3's next pass.
        """
        t, hs = ids.shape[0], self.hidden_size
        a_in = torch.empty(t, 2 * hs, dtype=hidden.dtype, device=hidden.device)
        w0 = self.layers[0]
        add_rms_norm(self.embed[ids], None, w0.input_norm, self.eps, out=a_in[:, :hs])
        add_rms_norm(hidden, None, w0.hidden_norm, self.eps, out=a_in[:, hs:])
        rows = self.rows(positions, slots, starts, window, sinks)
        s = self.layer(0, hidden, rows, cache, qkv=fused_linear(a_in, w0.qkv))  # residual: the hidden input
        for i in range(1, len(self.layers)):
            s = self.layer(i, s, rows, cache)
        return s

    def logits(self, prenorm):
        """Final norm and draft-vocabulary logits of the given rows [n, H] -> [n, Vd]."""
        return fused_linear(prenorm, self.lm_head, norm_weight=self.norm, eps=self.eps)

    def to_target_ids(self, draft_ids):
        return draft_ids + self.d2t[draft_ids]
