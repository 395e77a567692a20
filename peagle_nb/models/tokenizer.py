"""The tiny target's tokenizer: byte-level BPE (HF ``tokenizers``) saved as a ``PreTrainedTokenizerFast``
so transformers and vLLM load it from the model folder. Explained in notebooks 01 and 08.

Special tokens come first: ``<|endoftext|>`` (0, separates documents, eos), ``<|pad|>`` (1) and
``<mask>`` (2, never seen in target training: reserved for P-EAGLE's parallel-draft slots). No BOS is
added when encoding, so a prompt's ids are exactly its text's ids in HF and in vLLM.

Trained on all three corpus domains, the BPE learns Japanese merges: with the first 4,096-token
tokenizer (prose + code only) Japanese was byte soup, 2.33 tokens per character (1.05 bytes per token).
:func:`encoding_stats` measures bytes per token and tokens per character per domain, and
:func:`draft_vocab_coverage` how much of each domain's token mass a top-Vd draft vocabulary covers;
the target's training log records both (``tokenizer`` section).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

EOS_TOKEN = "<|endoftext|>"
PAD_TOKEN = "<|pad|>"
MASK_TOKEN = "<mask>"
SPECIAL_TOKENS = [EOS_TOKEN, PAD_TOKEN, MASK_TOKEN]
# Chosen by measurement on the validation split (tokens per character, bytes per token; notebook 08):
# 4,096 / 6,144 / 8,192 give Japanese 0.65 / 0.57 / 0.53 tokens per character and English prose 2.72 / 2.89 /
# 2.99 bytes per token; 8,192 is the best on all three domains and still fits the 40 MiB model budget.
DEFAULT_VOCAB_SIZE = 8192


def train_tokenizer(texts: Iterable[str], vocab_size: int = DEFAULT_VOCAB_SIZE) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE on ``texts`` (deterministic for the same texts in the same order)."""
    if vocab_size < 256 + len(SPECIAL_TOKENS) + 1:
        raise ValueError(f"vocab_size={vocab_size} is below the 256 byte symbols + special tokens")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return wrap(tok)


def wrap(tok: Tokenizer) -> PreTrainedTokenizerFast:
    """Wrap a raw ``tokenizers.Tokenizer`` with the suite's special-token roles."""
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=EOS_TOKEN,
        bos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        mask_token=MASK_TOKEN,
        model_max_length=1024,
        clean_up_tokenization_spaces=False,
    )


def encoding_stats(tokenizer, texts: Sequence[str]) -> dict:
    """Tokens, characters, UTF-8 bytes, bytes per token and tokens per character of ``texts`` (no special
    tokens). Tokens per character says what one accepted draft token is worth in text: fewer characters
    per token (Japanese) means each accepted draft moves the text forward less."""
    enc = tokenizer.backend_tokenizer.encode_batch(list(texts), add_special_tokens=False)
    tokens = sum(len(e.ids) for e in enc)
    chars = sum(len(t) for t in texts)
    nbytes = sum(len(t.encode("utf-8")) for t in texts)
    if tokens == 0:
        raise ValueError("no text to measure: pass at least one non-empty text")
    return {"tokens": tokens, "characters": chars, "bytes": nbytes, "bytes_per_token": nbytes / tokens,
            "tokens_per_char": tokens / chars, "chars_per_token": chars / tokens}


def token_counts(tokenizer, texts: Sequence[str]) -> torch.Tensor:
    """How often each id occurs when ``texts`` are encoded -> int64 ``[len(tokenizer)]``."""
    counts = torch.zeros(len(tokenizer), dtype=torch.long)
    for enc in tokenizer.backend_tokenizer.encode_batch(list(texts), add_special_tokens=False):
        if enc.ids:
            counts += torch.bincount(torch.tensor(enc.ids), minlength=len(tokenizer))
    return counts


def draft_vocab_coverage(train_counts: Mapping[str, torch.Tensor], eval_counts: Mapping[str, torch.Tensor],
                         sizes: Iterable[int]) -> dict[int, dict[str, float]]:
    """For each draft vocabulary size Vd: the top-Vd ids of the domains' pooled train counts (each domain
    weighted equally, as the drafter data holds the same number of sequences per domain), and the share
    of each domain's ``eval_counts`` token mass they cover. A drafter can never propose a token outside
    its vocabulary, so this share bounds every position's acceptance on that domain."""
    pooled = sum(c.double() / max(1, int(c.sum())) for c in train_counts.values())
    out = {}
    for vd in sizes:
        if not 0 < vd <= pooled.numel():
            raise ValueError(f"draft vocabulary size {vd} must be in 1..{pooled.numel()} (the target vocabulary)")
        top = torch.topk(pooled - torch.arange(pooled.numel(), dtype=torch.double) * 1e-12, vd).indices
        out[int(vd)] = {d: float(c[top].sum()) / max(1, int(c.sum())) for d, c in eval_counts.items()}
    return out


def propose_draft_vocab_size(coverage: Mapping[int, Mapping[str, float]], min_coverage: float = 0.9) -> int:
    """The smallest measured Vd whose worst domain coverage reaches ``min_coverage`` (else the largest)."""
    if not coverage:
        raise ValueError("no coverage measurements to choose from")
    ok = [vd for vd, per in sorted(coverage.items()) if min(per.values()) >= min_coverage]
    return ok[0] if ok else max(coverage)
