"""The corpus split is document-level, disjoint and deterministic; prompts come from held-out text only."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import io
import json

import pytest

from peagle_nb.prompts import load_prompt_records

from peagle_nb import corpus
from peagle_nb.paths import data_dir


def _build_corpus_module():
    spec = importlib.util.spec_from_file_location("build_corpus", data_dir() / "corpus" / "build_corpus.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("domain", corpus.DOMAINS)
def test_split_is_disjoint_and_follows_the_hash_rule(domain):
    train, held = corpus.document_ids(domain, "train"), corpus.document_ids(domain, "heldout")
    assert train and held and not set(train) & set(held)
    assert len(corpus.load_documents(domain, "train")) == len(train)
    # The split is a pure function of the ids (rank by salted sha256), not of file order or machine.
    assert _build_corpus_module().heldout_ids(sorted(train + held)) == set(held)
    manifest = json.loads((data_dir() / "corpus" / "manifest.json").read_text())
    assert manifest[domain]["heldout_ids"] == held
    assert 0.05 < len(held) / (len(train) + len(held)) < 0.2


def test_rebuilding_gives_identical_bytes(tmp_path):
    bc = _build_corpus_module()
    docs = {doc_id: text for doc_id, _, text in corpus._read("prose")}
    info = bc.write_domain(tmp_path / "prose.jsonl.gz", docs)
    committed = (data_dir() / "corpus" / "prose.jsonl.gz").read_bytes()
    assert info["sha256"] == hashlib.sha256(committed).hexdigest()
    with gzip.open(io.BytesIO(committed), "rt") as f:
        assert json.loads(f.readline()).keys() == {"id", "split", "text"}


def test_domains_look_like_their_names():
    prose = corpus.load_documents("prose", "train")
    code = corpus.load_documents("code", "train")
    assert len(prose) >= 30 and len(code) >= 300
    assert sum("thou" in d for d in prose) > len(prose) // 2
    assert sum("def " in d for d in code) > len(code) // 2


def test_bad_domain_or_split_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown domain"):
        corpus.load_documents("poetry", "train")
    with pytest.raises(ValueError, match="unknown split"):
        corpus.load_documents("prose", "test")
    with pytest.raises(FileNotFoundError, match="prompt file"):
        load_prompt_records("nope.jsonl")


@pytest.mark.parametrize("domain", corpus.DOMAINS)
def test_prompts_are_held_out(domain):
    rows = load_prompt_records(domain)
    assert len(rows) >= 32
    assert len({r["id"] for r in rows}) == len(rows) and len({r["prompt"] for r in rows}) == len(rows)
    held_ids = set(corpus.document_ids(domain, "heldout"))
    held_text = corpus.load_documents(domain, "heldout")
    train_text = corpus.load_documents("prose", "train") + corpus.load_documents("code", "train")
    for r in rows:
        assert r["domain"] == domain and r["id"].startswith(domain + "-")
        assert r["source"] in held_ids
        assert any(r["prompt"] in t for t in held_text)
        assert not any(r["prompt"] in t for t in train_text), f"{r['id']} occurs in training text"
