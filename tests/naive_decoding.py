"""The literal greedy draft-verify loop, recomputing everything each step: the independent ground truth that
the acceptance measurement (``peagle_nb.training.drafter_eval``) and the cached engine are checked against."""

from __future__ import annotations

import torch

from peagle_nb.models.heads import DraftHead
from peagle_nb.models.target import target_features


@torch.no_grad()
def naive_greedy_decode(target, head: DraftHead, prompt: torch.Tensor, k: int, max_new_tokens: int):
    """The literal greedy draft-verify loop, recomputing everything each step (no caches; slow, for tests).

    Returns (tokens [P + n], accepted drafts per step). Steps run while ``len + K <= P + max_new_tokens``
    (the same rule as ``drafter_eval.walk_steps``); the last tokens are then filled by plain greedy decoding.
    """
    device = next(target.parameters()).device
    seq = prompt.to(device)[None]
    total = prompt.shape[0] + max_new_tokens
    seq = torch.cat([seq, target(input_ids=seq).logits[:, -1:].argmax(-1)], dim=1)  # prefill -> bonus
    steps = []
    while seq.shape[1] + k <= total:
        n = seq.shape[1]
        res = target(input_ids=seq[:, :-1], output_hidden_states=True)
        hidden = head.project(target_features(res.hidden_states, head.aux_layer_ids).float())  # f_0..f_{n-2}
        ids, pos = seq[:, 1:], torch.arange(n - 1, device=device)[None]  # slot i: x[i+1], f_i
        if head.kind == "peagle":
            m = k - 1
            ids = torch.cat([ids, torch.full((1, m), head.mask_token_id, device=device)], 1)
            hidden = torch.cat([hidden, head.mask_hidden_projected().expand(1, m, -1)], 1)
            pos = torch.arange(n - 1 + m, device=device)[None]
            logits, _ = head(ids, hidden, pos)
            drafts = head.draft_to_target(logits[0, n - 2:].argmax(-1))
        else:
            cache = head.new_cache()
            logits, pre = head(ids, hidden, pos, cache=cache)
            drafts = [head.draft_to_target(logits[0, -1].argmax(-1))]
            for j in range(1, k):
                logits, pre = head(drafts[-1].view(1, 1), pre[:, -1:], torch.tensor([[n - 2 + j]], device=device),
                                   cache=cache)
                drafts.append(head.draft_to_target(logits[0, -1].argmax(-1)))
            drafts = torch.stack(drafts)
        verify = target(input_ids=torch.cat([seq, drafts[None]], 1)).logits[0, n - 1:].argmax(-1)  # [K+1]
        a = int((drafts == verify[:k]).long().cumprod(0).sum())
        steps.append(a)
        seq = torch.cat([seq, drafts[None, :a], verify[a:a + 1][None]], 1)
    while seq.shape[1] < total:
        seq = torch.cat([seq, target(input_ids=seq).logits[:, -1:].argmax(-1)], 1)
    return seq[0, :total].cpu(), steps
