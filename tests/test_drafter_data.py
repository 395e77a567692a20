"""Drafter data: prompts from every corpus domain, continuations sampled at T=1 by default, each sequence's
domain kept so one domain can be left out (with the draft vocabulary chosen again from what is left)."""

from __future__ import annotations

import pytest
import torch

from peagle_nb.training.drafter_data import (DrafterData, build_drafter_data, corpus_prompts, describe_decoding,
                                             generate, sample_prompt_ids_batched, without_domains)


@pytest.fixture(scope="module")
def tiny():
    """A random 6-layer target with a small BPE trained on all three domains."""
    from transformers import LlamaForCausalLM

    from peagle_nb.text.corpus import DOMAINS, load_documents
    from peagle_nb.models.target import make_config
    from peagle_nb.models.tokenizer import train_tokenizer

    tok = train_tokenizer([d[:20000] for dom in DOMAINS for d in load_documents(dom, "train")[:4]], vocab_size=400)
    torch.manual_seed(0)
    cfg = make_config(len(tok), tok.eos_token_id, tok.pad_token_id, hidden_size=64, intermediate_size=128,
                      num_hidden_layers=6, num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128)
    return LlamaForCausalLM(cfg).eval(), tok


def test_corpus_prompts_take_the_same_number_from_each_domain(tiny):
    _, tok = tiny
    prompts, labels = corpus_prompts(tok, 10, (8, 12), seed=3)
    assert len(prompts) == 10 and sorted(labels) == [0] * 4 + [1] * 3 + [2] * 3  # 10 = 4 + 3 + 3
    assert labels != sorted(labels)  # interleaved, not one domain after the other
    assert all(len(p) in (8, 12) for p in prompts)
    again, labels2 = corpus_prompts(tok, 10, (8, 12), seed=3)
    assert labels2 == labels and all(torch.equal(a, b) for a, b in zip(prompts, again))  # deterministic
    _, only = corpus_prompts(tok, 4, (8,), seed=0, domains=("ja",))
    assert only == [0] * 4
    with pytest.raises(ValueError, match="no corpus domain"):
        corpus_prompts(tok, 4, (8,), domains=())


def test_batched_prompt_sampler_is_reproducible_and_cuts_windows_of_the_documents(tiny):
    from peagle_nb.text.corpus import load_documents

    _, tok = tiny
    docs = load_documents("code", "train")[:50]
    prompts = sample_prompt_ids_batched(tok, docs, 40, (8, 12), seed=1, block=16)  # several blocks
    assert len(prompts) == 40 and {len(p) for p in prompts} == {8, 12}
    assert all(torch.equal(a, b) for a, b in zip(prompts, sample_prompt_ids_batched(tok, docs, 40, (8, 12), seed=1,
                                                                                     block=16)))
    assert not all(torch.equal(a, b) for a, b in zip(prompts, sample_prompt_ids_batched(tok, docs, 40, (8, 12),
                                                                                         seed=2, block=16)))
    text = "".join(docs)
    assert all(tok.decode(p) in text or len(tok.decode(p)) < 4 for p in prompts[:10])  # cut from the documents
    with pytest.raises(ValueError, match="longer than 200 characters"):
        sample_prompt_ids_batched(tok, ["short"], 1, (8,))


def test_sampled_continuations_by_default(tiny):
    model, tok = tiny
    prompts, labels = corpus_prompts(tok, 6, (8,), seed=0)
    data, info = build_drafter_data(model, prompts, 24, 64, seed=0, domain=labels, domains=("prose", "code", "ja"),
                                    log=lambda *_: None)
    assert info["n_greedy"] == 0 and info["sample_temperature"] == 1.0
    assert info["decoding"] == "all sampled from the target at temperature 1"
    assert info["sequences_per_domain"] == {"prose": 2, "code": 2, "ja": 2}
    assert set(info["repetition_fraction"]["by_domain"]) == {"prose", "code", "ja"}
    greedy = generate(model, prompts, 24, temperature=0.0)
    assert not torch.equal(data.tokens, greedy)  # T=1 sampling is not the greedy continuation
    assert torch.equal(data.tokens, generate(model, prompts, 24, temperature=1.0, seed=1))  # reproducible (seed+1)
    assert torch.equal(data.domain, torch.tensor(labels))
    with pytest.raises(ValueError, match="temperature > 0"):
        build_drafter_data(model, prompts, 24, 64, temperature=0.0, log=lambda *_: None)


def test_without_a_domain_drops_its_sequences_and_rechooses_the_vocabulary():
    # 4 sequences of 6 tokens (2 prompt + 4 generated); domain 1's sequences use tokens 7-9 only
    tokens = torch.tensor([[1, 1, 2, 3, 4, 5], [1, 1, 2, 3, 4, 6], [1, 1, 7, 8, 9, 9], [1, 1, 7, 8, 8, 9]])
    data = DrafterData(tokens, torch.tensor([2, 2, 2, 2]), torch.tensor([2, 3, 8, 9]), torch.tensor([0, 0, 1, 1]),
                       ("prose", "ja"))
    info = {"n_sequences": 4, "draft_vocab_size": 4}
    kept, kept_info = without_domains(data, info, ("ja",), vocab_size=10, log=lambda *_: None)
    assert kept.n == 2 and torch.equal(kept.tokens, tokens[:2])
    assert kept.draft_ids.tolist() == [2, 3, 4, 5]  # the 4 most frequent of what is left (ties: lower id)
    assert kept_info["excluded_domains"] == ["ja"] and kept_info["sequences_per_domain"] == {"prose": 2, "ja": 0}
    assert kept_info["draft_vocab_coverage"] == pytest.approx(7 / 8)  # token 6 is left out
    same, same_info = without_domains(data, info, (), vocab_size=10)
    assert same is data and same_info is info
    with pytest.raises(ValueError, match="cannot exclude code"):
        without_domains(data, info, ("code",), vocab_size=10)


def test_decoding_descriptions():
    assert describe_decoding(5, 5, 1.0) == "all greedy"
    assert describe_decoding(0, 5, 1.0) == "all sampled from the target at temperature 1"
    assert describe_decoding(2, 5, 0.8) == "2 greedy, 3 sampled at temperature 0.8"
