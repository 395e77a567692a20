"""How good the tiny target is, measured by code the training log and the tests share. Explained in notebooks
01 and 08.

- :func:`window_losses`: next-token loss (nats) of each consecutive non-overlapping ``seq_len`` window of a
  token stream; a split's loss is their mean (every window has ``seq_len`` predicted tokens). The log keeps
  the per-window losses, so a test can recompute any window from the committed model and check the summary.
- :func:`evaluate_split`: per domain, the windows, mean loss, perplexity and bits per byte (loss per UTF-8
  byte of text: comparable across tokenizers, where per-token perplexity is not).
- :func:`tokenizer_report`: bytes per token and tokens per character per domain, a vocabulary-size sweep,
  and the draft-vocabulary coverage from which a draft vocabulary size is proposed.
- :func:`greedy_samples`: greedy continuations for the model card.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch
import torch.nn.functional as F

from peagle_nb.models.tokenizer import (draft_vocab_coverage, encoding_stats, propose_draft_vocab_size,
                                        token_counts, train_tokenizer)


def token_stream(tokenizer, docs: Sequence[str]) -> torch.Tensor:
    """All documents' ids joined by ``<|endoftext|>`` (int64 [N])."""
    eos = tokenizer.eos_token_id
    ids: list[int] = []
    for enc in tokenizer.backend_tokenizer.encode_batch(list(docs), add_special_tokens=False):
        ids.extend(enc.ids)
        ids.append(eos)
    return torch.tensor(ids, dtype=torch.long)


def n_windows(stream: torch.Tensor, seq_len: int, max_windows: int | None = None) -> int:
    n = (len(stream) - 1) // seq_len
    if max_windows is not None:
        n = min(n, max_windows)
    if n < 1:
        raise ValueError(f"a stream of {len(stream)} tokens is shorter than one window of {seq_len} tokens")
    return n


@torch.no_grad()
def window_losses(model, stream: torch.Tensor, seq_len: int, max_windows: int | None, device,
                  batch: int = 32, windows: Sequence[int] | None = None, autocast: bool | None = None) -> list[float]:
    """Mean next-token loss of windows ``j`` (tokens ``j*seq_len .. (j+1)*seq_len``) of ``stream``: the first
    ``max_windows`` (None: all), or exactly the indices in ``windows``. ``autocast`` (default: on for CUDA)
    runs the forward in bf16, as during training; evaluations of record pass False (fp32)."""
    device = torch.device(device)
    idx = list(windows) if windows is not None else list(range(n_windows(stream, seq_len, max_windows)))
    if windows is not None and idx and max(idx) >= n_windows(stream, seq_len):
        raise ValueError(f"window {max(idx)} is past the end of a {len(stream)}-token stream")
    use_autocast = device.type == "cuda" if autocast is None else autocast
    out: list[float] = []
    was_training = model.training
    model.eval()
    for i in range(0, len(idx), batch):
        win = torch.stack([stream[j * seq_len: j * seq_len + seq_len + 1] for j in idx[i:i + batch]]).to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_autocast):
            logits = model(input_ids=win[:, :-1]).logits
        loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), win[:, 1:].reshape(-1), reduction="none")
        out += loss.view(win.shape[0], -1).mean(-1).tolist()
    model.train(was_training)
    return out


def heldout_loss(model, stream: torch.Tensor, seq_len: int, max_windows: int | None, device, batch: int = 32) -> float:
    """Mean next-token loss (nats) over the first ``max_windows`` windows of ``stream`` (None: all)."""
    losses = window_losses(model, stream, seq_len, max_windows, device, batch)
    return sum(losses) / len(losses)


def evaluate_split(model, streams: Mapping[str, torch.Tensor], texts: Mapping[str, Sequence[str]], seq_len: int,
                   device, max_windows: int | None = None, autocast: bool = False) -> dict:
    """Per domain: per-window losses, their mean, perplexity, and bits per byte of the windows' text.

    Bits per byte = loss x (tokens per UTF-8 byte of the domain's text) / ln 2, from the whole stream's ratio."""
    out = {}
    for domain, stream in streams.items():
        losses = window_losses(model, stream, seq_len, max_windows, device, autocast=autocast)
        mean = sum(losses) / len(losses)
        nbytes = sum(len(t.encode("utf-8")) + 1 for t in texts[domain])  # +1: the <|endoftext|> between documents
        out[domain] = {"windows": [round(x, 6) for x in losses], "loss": mean, "ppl": math.exp(mean),
                       "bits_per_byte": mean * len(stream) / nbytes / math.log(2), "tokens": len(stream)}
    return out


def tokenizer_report(tokenizer, train_docs: Mapping[str, Sequence[str]], eval_docs: Mapping[str, Sequence[str]],
                     vocab_sweep: Sequence[int] = (), draft_vocab_sizes: Sequence[int] = (1024, 2048, 3072, 4096),
                     min_coverage: float = 0.9) -> dict:
    """What the training log records about the tokenizer, all measured on ``eval_docs`` (the validation split):

    - ``per_domain``: :func:`~peagle_nb.models.tokenizer.encoding_stats` of each domain;
    - ``vocab_sweep``: the same for tokenizers trained on ``train_docs`` at each size of ``vocab_sweep``;
    - ``draft_vocab_coverage`` (Vd -> domain -> share of tokens a top-Vd draft vocabulary covers) and
      ``proposed_draft_vocab_size`` (the smallest Vd covering ``min_coverage`` of every domain)."""
    texts = [t for d in train_docs for t in train_docs[d]]
    sweep = {}
    for v in vocab_sweep:
        tok_v = tokenizer if v == len(tokenizer) else train_tokenizer(texts, vocab_size=v)
        sweep[str(v)] = {d: _short(encoding_stats(tok_v, eval_docs[d])) for d in eval_docs}
    sizes = [v for v in draft_vocab_sizes if v <= len(tokenizer)]
    coverage = draft_vocab_coverage({d: token_counts(tokenizer, train_docs[d]) for d in train_docs},
                                    {d: token_counts(tokenizer, eval_docs[d]) for d in eval_docs}, sizes)
    return {"vocab_size": len(tokenizer), "measured_on": "validation",
            "per_domain": {d: encoding_stats(tokenizer, eval_docs[d]) for d in eval_docs},
            "vocab_sweep": sweep,
            "draft_vocab_coverage": {str(k): v for k, v in coverage.items()},
            "min_coverage": min_coverage,
            "proposed_draft_vocab_size": propose_draft_vocab_size(coverage, min_coverage)}


def _short(stats: dict) -> dict:
    return {"bytes_per_token": stats["bytes_per_token"], "tokens_per_char": stats["tokens_per_char"]}


@torch.no_grad()
def greedy_samples(model, tokenizer, device, docs_by_domain: Mapping[str, Sequence[str]], n: int,
                   prompt_tokens: int = 24, new_tokens: int = 48) -> list[dict]:
    """Greedy continuations of lines a third into the first ``n`` documents of each domain (model card)."""
    out = []
    for domain, docs in docs_by_domain.items():
        for doc in list(docs)[:n]:
            # start a little into the document, at a line boundary, past title/licence headers
            start = doc.find("\n", len(doc) // 3) + 1
            ids = tokenizer(doc[start: start + 400], add_special_tokens=False)["input_ids"][:prompt_tokens]
            x = torch.tensor([ids], device=device)
            y = model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=new_tokens, do_sample=False,
                               pad_token_id=tokenizer.pad_token_id)
            out.append({"domain": domain, "prompt": tokenizer.decode(ids),
                        "completion": tokenizer.decode(y[0, len(ids):].tolist())})
    return out


@torch.no_grad()
def continuation_report(model, tokenizer, prompt_sets: Mapping[str, Sequence[str]], max_new_tokens: int = 128,
                        seed: int = 0, temperatures: Sequence[float] = ()) -> dict:
    """Does the target loop? Per prompt set: the fraction of its own continuations (greedy, and sampled at
    temperature 1; ``temperatures`` adds modes ``"T0.7"`` and so on) inside a repeated 8-gram
    (``peagle_nb.analysis.repetition``), pooled over the prompts, and the
    first prompt's greedy continuation as an example. Every prompt of a set is cut to the set's shortest prompt
    (its last tokens kept), so the set decodes as one batch without padding: one generation per set and mode
    instead of one per prompt (on a GPU a 32-layer target decodes token by token at launch speed)."""
    from peagle_nb.analysis.repetition import repeated_mask
    from peagle_nb.training.drafter_data import generate

    device = next(model.parameters()).device
    out = {}
    for name, prompts in prompt_sets.items():
        ids = [torch.tensor(tokenizer(p, add_special_tokens=False)["input_ids"], device=device) for p in prompts]
        common = min(len(p) for p in ids)
        ids = [p[len(p) - common:] for p in ids]
        rec = {"prompts": len(ids), "prompt_tokens": common, "max_new_tokens": max_new_tokens}
        total_len = max(len(p) for p in ids) + max_new_tokens
        extra = [(f"T{t:g}", float(t)) for t in temperatures if float(t) not in (0.0, 1.0)]
        for mode, temp in [("greedy", 0.0), ("sampled", 1.0), *extra]:
            # prompts of equal length decode together (no padding: exactly what unbatched decoding gives)
            seqs = generate(model, ids, total_len, temperature=temp, seed=seed)
            marked = total = 0
            first = None
            for p, seq in zip(ids, seqs):
                gen = seq[len(p): len(p) + max_new_tokens].tolist()
                mask = repeated_mask(p.tolist(), gen)
                marked, total = marked + sum(mask), total + len(mask)
                first = first if first is not None else gen
            rec[mode] = {"repetition_fraction": marked / total, "tokens": total}
            if mode == "greedy":
                rec["example"] = {"prompt": tokenizer.decode(ids[0].tolist()), "greedy": tokenizer.decode(first)}
        out[name] = rec
    return out
