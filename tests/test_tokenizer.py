"""Tokenizer measurements: bytes per token, tokens per character, draft-vocabulary coverage and the proposal
of a draft vocabulary size (small tokenizers trained here, numbers worked out by hand)."""

from __future__ import annotations

import pytest
import torch

from peagle_nb.models.tokenizer import (SPECIAL_TOKENS, draft_vocab_coverage, encoding_stats,
                                        propose_draft_vocab_size, token_counts, train_tokenizer)

ENGLISH = ["the cat sat on the mat. the cat sat on the hat.\n"] * 40
JAPANESE = ["日本語の文章はスペースで単語を区切りません。日本語の文章を学習します。\n"] * 40


@pytest.fixture(scope="module")
def tok():
    return train_tokenizer(ENGLISH + JAPANESE, vocab_size=400)


def test_special_tokens_come_first(tok):
    assert tok.convert_ids_to_tokens([0, 1, 2]) == SPECIAL_TOKENS


def test_encoding_stats_counts_bytes_characters_and_tokens(tok):
    text = "日本語の文章"
    s = encoding_stats(tok, [text])
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert s["tokens"] == len(ids) and s["characters"] == 6 and s["bytes"] == 18  # 3 UTF-8 bytes per kana/kanji
    assert s["bytes_per_token"] == pytest.approx(18 / len(ids)) and s["tokens_per_char"] == pytest.approx(len(ids) / 6)
    with pytest.raises(ValueError, match="no text"):
        encoding_stats(tok, [""])


def test_japanese_merges_beat_byte_soup(tok):
    """Trained on Japanese, BPE merges kana and kanji: fewer tokens than the 3 bytes each character takes."""
    s = encoding_stats(tok, JAPANESE[:1])
    assert s["tokens_per_char"] < 1.0 and s["bytes_per_token"] > 3.0
    english_only = train_tokenizer(ENGLISH, vocab_size=400)
    assert encoding_stats(english_only, JAPANESE[:1])["tokens_per_char"] > 2.5  # bytes: ~3 tokens per character


def test_token_counts_match_the_encoding(tok):
    counts = token_counts(tok, ["the cat", "the hat"])
    ids = tok("the cat", add_special_tokens=False)["input_ids"] + tok("the hat", add_special_tokens=False)["input_ids"]
    assert counts.shape == (len(tok),) and int(counts.sum()) == len(ids)
    assert int(counts[ids[0]]) == ids.count(ids[0])


def test_draft_vocab_coverage_pools_domains_equally():
    # domain a uses ids 0-1, domain b ids 2-5; a has far more tokens, but each domain weighs the same
    train = {"a": torch.tensor([1000, 1000, 0, 0, 0, 0, 0, 0]), "b": torch.tensor([0, 0, 4, 3, 2, 1, 0, 0])}
    evals = {"a": torch.tensor([5, 5, 0, 0, 0, 0, 0, 0]), "b": torch.tensor([0, 0, 4, 3, 2, 1, 0, 0])}
    cov = draft_vocab_coverage(train, evals, [2, 4, 6])
    # pooled shares: a 0.5, 0.5; b 0.4, 0.3, 0.2, 0.1 -> top 2 = ids 0, 1; top 4 adds ids 2, 3
    assert cov[2] == {"a": 1.0, "b": 0.0}
    assert cov[4] == {"a": 1.0, "b": pytest.approx(0.7)}
    assert cov[6] == {"a": 1.0, "b": 1.0}
    assert propose_draft_vocab_size(cov, 0.9) == 6 and propose_draft_vocab_size(cov, 0.6) == 4
    assert propose_draft_vocab_size({2: {"a": 0.5}, 4: {"a": 0.8}}, 0.9) == 4  # none reaches: the largest
    with pytest.raises(ValueError, match="draft vocabulary size 9"):
        draft_vocab_coverage(train, evals, [9])
    with pytest.raises(ValueError, match="no coverage"):
        propose_draft_vocab_size({})
