"""EAGLE-3 and P-EAGLE draft heads: one PyTorch module for both, with vLLM's ``llama_eagle3.py`` semantics.
Explained in notebooks 02 (EAGLE-3: ``fc``, the fused first layer, the draft vocabulary) and 03 (P-EAGLE:
the ``<mask>`` row and ``mask_hidden``).

Layer 0 (``midlayer`` in the checkpoint) is the fused layer: its attention reads
``cat(input_layernorm(embed(token)), hidden_norm(hidden))`` (2H wide) and its residual is the raw
``hidden``. Layers 1.. are plain Llama decoder layers (P-EAGLE only). The final ``norm`` feeds ``lm_head``
over the reduced draft vocabulary; the hidden state handed to the next chain step is the PRE-norm sum.
``hidden`` is already projected: ``project(target_features[..., 3*Ht]) = fc(...)``.

Draft vocabulary: ``lm_head`` scores ``Vd`` draft ids; ``target_id = draft_id + d2t[draft_id]`` and
``t2d[target_id]`` marks the target ids that have a draft id (vLLM's convention).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from peagle_nb.models import checkpoint, head_io
from peagle_nb.models.head_io import export_head, head_tensors  # the on-disk format (re-exported)

KINDS = ("eagle3", "peagle")


@dataclass
class DraftHeadConfig:
    """Everything a head's shapes depend on (``peagle_nb.models.head_io.config_to_json`` writes its ``config.json``)."""

    kind: str = "eagle3"  # "eagle3" | "peagle"
    hidden_size: int = 256
    intermediate_size: int = 640
    num_hidden_layers: int = 1  # eagle3: 1; peagle: 2-4 (layer 0 fused, the rest plain)
    num_attention_heads: int = 4
    num_key_value_heads: int = 4  # < num_attention_heads: grouped-query attention
    vocab_size: int = 4096  # target vocabulary (input embedding rows)
    draft_vocab_size: int = 2048
    target_hidden_size: int = 256
    aux_layer_ids: tuple[int, ...] = (2, 4, 5)
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    max_position_embeddings: int = 1024
    mask_token_id: int | None = None  # peagle: the <mask> id in the target vocabulary
    trained_k: int | None = None  # peagle: deepest draft slot trained; eagle3: TTT unroll steps
    extra: dict = field(default_factory=dict)  # other config.json keys, kept on round trips

    def __post_init__(self):
        self.aux_layer_ids = tuple(int(i) for i in self.aux_layer_ids)
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if self.num_hidden_layers < 1:
            raise ValueError(f"num_hidden_layers must be >= 1, got {self.num_hidden_layers}")
        if self.kind == "peagle" and self.mask_token_id is None:
            raise ValueError("a P-EAGLE head needs mask_token_id (the target tokenizer's <mask> id)")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"hidden_size {self.hidden_size} not divisible by {self.num_attention_heads} heads")
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(f"num_attention_heads {self.num_attention_heads} not a multiple of "
                             f"num_key_value_heads {self.num_key_value_heads}")
        if not 0 < self.draft_vocab_size <= self.vocab_size:
            raise ValueError(f"draft_vocab_size {self.draft_vocab_size} must be in 1..vocab_size {self.vocab_size}")

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def fc_input_size(self) -> int:
        return self.target_hidden_size * len(self.aux_layer_ids)

    def replace(self, **changes) -> "DraftHeadConfig":
        return dataclasses.replace(self, **changes)


class RMSNorm(nn.Module):
    """Llama RMSNorm, computed in fp32 like vLLM's."""

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def rotary_cos_sin(position_ids: torch.Tensor, head_dim: int, theta: float, dtype: torch.dtype):
    """cos/sin ``[B, 1, T, head_dim]`` for the default (neox-style, rotate-half) Llama RoPE."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=position_ids.device, dtype=torch.float32)
                                / head_dim))
    freqs = position_ids.float()[..., None] * inv_freq  # [B, T, D/2]
    emb = torch.cat([freqs, freqs], dim=-1)[:, None]  # [B, 1, T, D]
    return emb.cos().to(dtype), emb.sin().to(dtype)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


class DraftKVCache:
    """Per-layer keys/values ``[B, Hkv, S, D]`` of the drafter. ``crop(n)`` rolls back to ``n`` entries."""

    def __init__(self):
        self.keys: list[torch.Tensor | None] = []
        self.values: list[torch.Tensor | None] = []

    def __len__(self) -> int:
        return self.length

    @property
    def length(self) -> int:
        return 0 if not self.keys or self.keys[0] is None else int(self.keys[0].shape[2])

    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append this layer's new keys/values; return the layer's full keys/values."""
        while len(self.keys) <= layer:
            self.keys.append(None)
            self.values.append(None)
        if self.keys[layer] is not None:
            k = torch.cat([self.keys[layer], k], dim=2)
            v = torch.cat([self.values[layer], v], dim=2)
        self.keys[layer], self.values[layer] = k, v
        return k, v

    def crop(self, n: int) -> None:
        """Drop every entry past the first ``n`` (rollback after rejected drafts)."""
        if n < 0:
            raise ValueError(f"crop length must be >= 0, got {n}")
        self.keys = [None if k is None else k[:, :, :n] for k in self.keys]
        self.values = [None if v is None else v[:, :, :n] for v in self.values]


class Attention(nn.Module):
    def __init__(self, cfg: DraftHeadConfig, in_features: int):
        super().__init__()
        self.nh, self.nkv, self.hd = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        self.q_proj = nn.Linear(in_features, self.nh * self.hd, bias=False)
        self.k_proj = nn.Linear(in_features, self.nkv * self.hd, bias=False)
        self.v_proj = nn.Linear(in_features, self.nkv * self.hd, bias=False)
        self.o_proj = nn.Linear(self.nh * self.hd, cfg.hidden_size, bias=False)

    def forward(self, x, cos, sin, layer_idx: int, cache: DraftKVCache | None, mask: torch.Tensor | None):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.nh, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.nkv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.nkv, self.hd).transpose(1, 2)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        if cache is not None:
            k, v = cache.update(layer_idx, k, v)
        if self.nkv != self.nh:
            k = k.repeat_interleave(self.nh // self.nkv, dim=1)
            v = v.repeat_interleave(self.nh // self.nkv, dim=1)
        if mask is None:  # plain causal over the new tokens, no past
            out = F.scaled_dot_product_attention(q, k, v, is_causal=t > 1)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.o_proj(out.transpose(1, 2).reshape(b, t, self.nh * self.hd))


class MLP(nn.Module):
    def __init__(self, cfg: DraftHeadConfig):
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    """Llama decoder layer; ``fused=True`` is EAGLE-3's layer 0 (2H attention input + ``hidden_norm``)."""

    def __init__(self, cfg: DraftHeadConfig, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx  # its slot in the KV cache
        self.fused = layer_idx == 0
        h = cfg.hidden_size
        self.input_layernorm = RMSNorm(h, cfg.rms_norm_eps)
        if self.fused:
            self.hidden_norm = RMSNorm(h, cfg.rms_norm_eps)
        self.self_attn = Attention(cfg, 2 * h if self.fused else h)
        self.post_attention_layernorm = RMSNorm(h, cfg.rms_norm_eps)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor, residual: torch.Tensor | None, emb: torch.Tensor, cos, sin,
                cache: DraftKVCache | None, mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """``(x, residual)`` -> this layer's ``(mlp output, residual)``, vLLM's residual convention (the sum
        ``x + residual`` is taken by the next layer or the final norm). The fused layer gets the projected
        target hidden state as ``x`` (``residual`` None) and the token embeddings ``emb``."""
        if self.fused:  # vLLM: cat(input_layernorm(embeds), hidden_norm(hidden)); residual = hidden
            residual = x
            attn_in = torch.cat([self.input_layernorm(emb), self.hidden_norm(x)], dim=-1)
        else:  # vLLM's fused add + norm
            residual = x + residual
            attn_in = self.input_layernorm(residual)
        residual = self.self_attn(attn_in, cos, sin, self.layer_idx, cache, mask) + residual
        return self.mlp(self.post_attention_layernorm(residual)), residual


class DraftHead(nn.Module):
    """EAGLE-3 (1 fused layer) or P-EAGLE (fused layer + plain layers, ``<mask>`` + ``mask_hidden``) drafter.

    ``forward(input_ids[B,T], hidden[B,T,H], position_ids[B,T], cache=None, attn_mask=None)`` returns
    ``(draft_logits[B,T,Vd], hidden_prenorm[B,T,H])``. With a cache the new keys/values are appended and
    attention covers cache + new (causal among the new ones) unless ``attn_mask[B|1,1,T,S]`` (True = may
    attend; S = cache length + T) says otherwise.
    """

    def __init__(self, config: DraftHeadConfig):
        super().__init__()
        self.config = config
        h = config.hidden_size
        self.embed_tokens = nn.Embedding(config.vocab_size, h)
        self.fc = nn.Linear(config.fc_input_size, h, bias=False)
        self.layers = nn.ModuleList([DecoderLayer(config, i) for i in range(config.num_hidden_layers)])
        self.norm = RMSNorm(h, config.rms_norm_eps)
        self.lm_head = nn.Linear(h, config.draft_vocab_size, bias=False)
        # Identity-prefix draft vocabulary until set_draft_vocab() picks one from token counts.
        self.register_buffer("d2t", torch.zeros(config.draft_vocab_size, dtype=torch.long))
        t2d = torch.zeros(config.vocab_size, dtype=torch.bool)
        t2d[: config.draft_vocab_size] = True
        self.register_buffer("t2d", t2d)
        if config.kind == "peagle":
            self.mask_hidden = nn.Parameter(torch.zeros(1, config.fc_input_size))
        else:
            self.mask_hidden = None
        self.reset_parameters()

    def reset_parameters(self, std: float = 0.02, seed: int | None = None) -> None:
        gen = None
        if seed is not None:
            gen = torch.Generator().manual_seed(seed)
        for name, p in self.named_parameters():
            with torch.no_grad():
                if name.endswith("norm.weight"):
                    p.fill_(1.0)
                else:
                    p.copy_(torch.randn(p.shape, generator=gen) * std)

    # ---- small API used by the engine and the trainers -------------------------------------------------
    @property
    def kind(self) -> str:
        return self.config.kind

    @property
    def trained_k(self) -> int | None:
        return self.config.trained_k

    @property
    def mask_token_id(self) -> int | None:
        return self.config.mask_token_id

    @property
    def aux_layer_ids(self) -> tuple[int, ...]:
        return self.config.aux_layer_ids

    def new_cache(self) -> DraftKVCache:
        return DraftKVCache()

    def project(self, features: torch.Tensor) -> torch.Tensor:
        """Target features ``[..., 3*Ht]`` -> drafter hidden ``[..., H]`` (``fc``)."""
        if features.shape[-1] != self.config.fc_input_size:
            raise ValueError(f"features have width {features.shape[-1]}, the head's fc expects "
                             f"{self.config.fc_input_size} (= {len(self.aux_layer_ids)} x target hidden "
                             f"{self.config.target_hidden_size}): was the head trained for another target?")
        return self.fc(features)

    def mask_hidden_projected(self) -> torch.Tensor:
        """``fc(mask_hidden)`` ``[H]``: the shared hidden state of every P-EAGLE ``<mask>`` slot."""
        if self.mask_hidden is None:
            raise ValueError("this is an EAGLE-3 head: it has no mask_hidden (parallel drafting needs a P-EAGLE head)")
        return self.fc(self.mask_hidden).reshape(-1)

    def draft_to_target(self, draft_ids: torch.Tensor) -> torch.Tensor:
        """Draft-vocabulary ids -> target-vocabulary ids (``id + d2t[id]``)."""
        return draft_ids + self.d2t[draft_ids]

    def target_to_draft_ids(self) -> torch.Tensor:
        """The target ids of draft ids ``0..Vd-1`` (ascending), i.e. ``arange(Vd) + d2t``."""
        return torch.arange(self.config.draft_vocab_size, device=self.d2t.device) + self.d2t

    @torch.no_grad()
    def set_draft_vocab(self, target_ids: torch.Tensor) -> None:
        """Use ``target_ids`` (``Vd`` distinct target ids) as the draft vocabulary (sorted ascending)."""
        ids = torch.unique(target_ids.long().cpu())
        vd, v = self.config.draft_vocab_size, self.config.vocab_size
        if ids.numel() != vd or ids.min() < 0 or ids.max() >= v:
            raise ValueError(f"need {vd} distinct target ids in 0..{v - 1}, got {ids.numel()}")
        self.d2t.copy_((ids - torch.arange(vd)).to(self.d2t.device))
        t2d = torch.zeros(v, dtype=torch.bool)
        t2d[ids] = True
        self.t2d.copy_(t2d.to(self.t2d.device))

    # ---- forward -------------------------------------------------------------------------------------
    def forward(self, input_ids: torch.Tensor, hidden: torch.Tensor, position_ids: torch.Tensor,
                cache: DraftKVCache | None = None, attn_mask: torch.Tensor | None = None, window: int | None = None,
                sinks: int = 0):
        """``window``: each new row attends to the ``window`` positions ending at its own and the first ``sinks``
        only (the cache's entry i holds position i, as the engine's drafters keep it; ``engine.drafting``)."""
        b, t = input_ids.shape
        if hidden.shape[:2] != (b, t) or hidden.shape[-1] != self.config.hidden_size:
            raise ValueError(f"hidden must be [B={b}, T={t}, H={self.config.hidden_size}] (projected with "
                             f"head.project), got {tuple(hidden.shape)}")
        past = cache.length if cache is not None else 0
        mask = attn_mask
        if mask is None and window is not None:
            keys = torch.cat([torch.arange(past, device=input_ids.device), position_ids[0]])
            rows = position_ids[0][:, None]
            mask = ((keys[None] <= rows) & ((keys[None] > rows - window) | (keys[None] < sinks)))[None, None]
        if mask is None and past > 0:  # new tokens see all the past and are causal among themselves
            mask = torch.ones(t, past + t, dtype=torch.bool, device=input_ids.device).tril(past)[None, None]
        if mask is not None and mask.shape[-1] != past + t:
            raise ValueError(f"attn_mask covers {mask.shape[-1]} keys, expected cache {past} + new {t}")
        cos, sin = rotary_cos_sin(position_ids, self.config.head_dim, self.config.rope_theta, hidden.dtype)

        emb = self.embed_tokens(input_ids)
        x, residual = hidden, None
        for layer in self.layers:
            x, residual = layer(x, residual, emb, cos, sin, cache, mask)
        prenorm = x + residual
        return self.lm_head(self.norm(prenorm)), prenorm


def init_from_target(head: DraftHead, target) -> None:
    """Warm start from an HF ``LlamaForCausalLM`` target: its embedding (all rows) and ``lm_head`` rows of
    the draft vocabulary. Call after :meth:`DraftHead.set_draft_vocab`. Explained in notebook 02."""
    emb = target.get_input_embeddings().weight
    out = target.get_output_embeddings().weight
    if emb.shape != head.embed_tokens.weight.shape:
        raise ValueError(f"target embedding {tuple(emb.shape)} != head embedding "
                         f"{tuple(head.embed_tokens.weight.shape)}: head config does not match this target")
    with torch.no_grad():
        head.embed_tokens.weight.copy_(emb.to(head.embed_tokens.weight))
        ids = head.target_to_draft_ids().to(out.device)
        head.lm_head.weight.copy_(out[ids].to(head.lm_head.weight))


def drafter_layer_ids(target_config) -> tuple[int, int, int]:
    """The target layers a new head reads: vLLM's default ``(2, L//2, L-3)``, or ``(1, L//2, L-2)`` when
    that repeats a layer (6-7 layer targets; vLLM de-duplicates ids, which would break ``fc``)."""
    from peagle_nb.models.target import aux_layer_ids as default_aux

    n = target_config.num_hidden_layers
    ids = default_aux(n)
    return ids if len(set(ids)) == len(ids) else (1, n // 2, n - 2)


def config_for_target(target_config, kind: str, num_layers: int | None = None, draft_vocab_size: int = 2048,
                      mask_token_id: int | None = None, trained_k: int | None = None,
                      intermediate_size: int | None = None) -> DraftHeadConfig:
    """A head config sized like ``target_config`` (an HF ``LlamaConfig``); ``intermediate_size`` overrides
    the MLP width (the hidden size must stay the target's: the head reads and shares its embeddings)."""
    tc = target_config
    rope = getattr(tc, "rope_parameters", None) or {}
    theta = rope.get("rope_theta", getattr(tc, "rope_theta", 10000.0)) if isinstance(rope, dict) else 10000.0
    return DraftHeadConfig(
        kind=kind,
        hidden_size=tc.hidden_size,
        intermediate_size=intermediate_size or tc.intermediate_size,
        num_hidden_layers=num_layers or (1 if kind == "eagle3" else 4),
        num_attention_heads=tc.num_attention_heads,
        num_key_value_heads=tc.num_key_value_heads,
        vocab_size=tc.vocab_size,
        draft_vocab_size=min(draft_vocab_size, tc.vocab_size),
        target_hidden_size=tc.hidden_size,
        aux_layer_ids=drafter_layer_ids(tc),
        rms_norm_eps=tc.rms_norm_eps,
        rope_theta=float(theta),
        max_position_embeddings=tc.max_position_embeddings,
        mask_token_id=mask_token_id,
        trained_k=trained_k,
    )


def count_parameters(head: DraftHead) -> int:
    return sum(p.numel() for p in head.parameters())


def config_from_json(config: dict) -> DraftHeadConfig:
    """A head's ``config.json`` as its config (``peagle_nb.models.head_io.config_fields`` reads the fields)."""
    return DraftHeadConfig(**head_io.config_fields(config))


def head_from_tensors(config: dict, tensors: dict[str, torch.Tensor], dtype: torch.dtype = torch.float32,
                      device="cpu", target=None) -> DraftHead:
    """Build a head from a checkpoint's ``(config, tensors)``. Absent ``d2t``/``t2d`` mean the identity
    (full draft vocabulary); an EAGLE-3 head without ``embed_tokens`` shares the target's (pass ``target``)."""
    head = DraftHead(config_from_json(config))
    head.load_state_dict(head_io.state_from_tensors(head.config, head.state_dict(), tensors, target=target))
    return head.to(device=device, dtype=dtype).eval()


def load_head(path, dtype: torch.dtype = torch.float32, device="cpu", target=None) -> DraftHead:
    """Read a head folder (``peagle_nb.models.checkpoint.read_head`` validates names and shapes). Explained in
    notebook 02; the exported layout in notebook 05."""
    config, tensors = checkpoint.read_head(path)
    return head_from_tensors(config, tensors, dtype=dtype, device=device, target=target)


__all__ = ["DraftHeadConfig", "DraftHead", "DraftKVCache", "RMSNorm", "config_for_target", "init_from_target",
           "drafter_layer_ids", "export_head", "load_head", "head_tensors", "head_from_tensors", "config_from_json",
           "rotary_cos_sin", "KINDS", "count_parameters"]
