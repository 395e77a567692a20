"""Small models for engine tests: a random tiny Llama target and an 'oracle' draft head.

The oracle drafts from a known continuation by POSITION (slot at position i proposes seq[i+2], the
EAGLE alignment), optionally wrong at chosen positions, optionally with soft logits (for sampling).
It exercises acceptance, partial rejection and cache rollback deterministically, which a random head
(acceptance ~0) cannot; random heads from peagle_nb.models.heads are tested too.
"""

from __future__ import annotations

from types import SimpleNamespace

import torch
from torch import nn
from transformers import LlamaConfig, LlamaForCausalLM

from peagle_nb.models.heads import drafter_layer_ids


def tiny_target(vocab: int = 64, hidden: int = 32, layers: int = 6, seed: int = 0, dtype=torch.float64,
                logit_scale: float = 1.0) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                      tie_word_embeddings=False)
    model = LlamaForCausalLM(cfg).to(dtype).eval()
    if logit_scale != 1.0:  # peaky next-token distributions make rejection sampling visible
        with torch.no_grad():
            model.lm_head.weight.mul_(logit_scale)
    return model


class NullCache:
    def __init__(self):
        self.crops = []

    def crop(self, n):
        self.crops.append(n)


class OracleHead(nn.Module):
    def __init__(self, target, seq: list[int] | None = None, kind: str = "peagle", wrong_positions=(),
                 soft_scale: float = 0.0, trained_k: int | None = 8, seed: int = 0):
        super().__init__()
        cfg = target.config
        self.config = SimpleNamespace(aux_layer_ids=drafter_layer_ids(cfg))
        v, h = cfg.vocab_size, cfg.hidden_size
        self.embed_tokens = nn.Embedding(v, 4)
        self.fc = nn.Linear(3 * h, 4, bias=False)
        self.lm_head = nn.Linear(4, v, bias=False)
        self.seq = list(seq or [])
        self.wrong = set(wrong_positions)
        g = torch.Generator().manual_seed(seed)
        self.table = torch.randn(1024, v, generator=g) * soft_scale  # soft logits per position
        self.trained_k = trained_k
        self.mask_token_id = v - 1 if kind == "peagle" else None
        self.mask_hidden = nn.Parameter(torch.zeros(1, 3 * h)) if kind == "peagle" else None
        self.calls = []  # (input_ids, position_ids) of each forward, for tests
        self.to(target.dtype)

    def new_cache(self):
        return NullCache()

    def project(self, feats):
        return self.fc(feats)

    def mask_hidden_projected(self):
        return self.fc(self.mask_hidden)[0]

    def draft_to_target(self, ids):
        return ids

    def forward(self, input_ids, hidden, position_ids, cache=None, attn_mask=None):
        self.calls.append((input_ids.clone(), position_ids.clone()))
        t = input_ids.shape[1]
        v = self.lm_head.weight.shape[0]
        logits = self.table[position_ids[0] % 1024].clone().unsqueeze(0)
        for j in range(t):
            p = int(position_ids[0, j])
            if p + 2 < len(self.seq):
                tok = self.seq[p + 2]
                if p + 2 in self.wrong:
                    tok = (tok + 1) % v
                logits[0, j, tok] += 10.0
        return logits.to(hidden.dtype), hidden
