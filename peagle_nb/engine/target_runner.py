"""The target side of speculative decoding: forward passes over a KV cache that can roll back.

Explained in notebook 01. One ``TargetRunner`` holds an HF ``DynamicCache`` for one sequence.
``forward(ids)`` appends ``ids`` at the next positions and returns their logits and (when feature
layers are set) the EAGLE-3 features, the concat of the hidden states ENTERING the layers in
``layer_ids`` (vLLM's aux hidden states). After verification rejects drafts, ``crop(n)`` drops every
cached position past ``n`` so the rejected tokens leave no trace.
"""

from __future__ import annotations

import torch
from transformers import DynamicCache


def concat_features(hidden_states: tuple, layer_ids) -> torch.Tensor:
    """[B, T, 3H]: ``hidden_states[i]`` (HF output_hidden_states, i = entering layer i) for i in layer_ids."""
    return torch.cat([hidden_states[i] for i in layer_ids], dim=-1)


class TargetRunner:
    def __init__(self, model, layer_ids: tuple[int, ...] | None = None):
        self.model = model
        self.layer_ids = tuple(layer_ids) if layer_ids else None
        self.cache = DynamicCache()

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def length(self) -> int:
        """Number of positions held in the KV cache."""
        return self.cache.get_seq_length()

    def reset(self) -> None:
        self.cache = DynamicCache()

    @torch.inference_mode()
    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """ids [T] or [1, T] -> (logits [T, V], features [T, 3H] or None), cached at the next positions."""
        ids = ids.reshape(1, -1).to(self.device)
        start = self.length
        positions = torch.arange(start, start + ids.shape[1], device=self.device).unsqueeze(0)
        out = self.model(input_ids=ids, position_ids=positions, past_key_values=self.cache, use_cache=True,
                         output_hidden_states=self.layer_ids is not None)
        self.cache = out.past_key_values
        feats = concat_features(out.hidden_states, self.layer_ids)[0] if self.layer_ids is not None else None
        return out.logits[0].float(), feats

    def crop(self, length: int) -> None:
        """Keep only the first ``length`` cached positions (rollback after rejected drafts)."""
        if length < self.length:
            self.cache.crop(length - self.length)  # negative = drop that many (positive crop is deprecated)
