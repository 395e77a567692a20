"""The corpus split is document-level, three-way disjoint and deterministic; the Japanese text is running text
with its provenance recorded; prompts come from held-out text only."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import io
import json
import re

import pytest

from peagle_nb.text.prompts import load_prompt_records

from peagle_nb.text import corpus
from peagle_nb.files.paths import data_dir


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, data_dir() / "corpus" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _build_corpus_module():
    return _load("build_corpus")


def _manifest() -> dict:
    return json.loads((data_dir() / "corpus" / "manifest.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("domain", corpus.DOMAINS)
def test_split_is_disjoint_and_follows_the_hash_rule(domain):
    train, val, held = (corpus.document_ids(domain, s) for s in ("train", "validation", "heldout"))
    assert train and val and held
    assert not set(train) & set(held) and not set(train) & set(val) and not set(val) & set(held)
    assert len(corpus.load_documents(domain, "train")) == len(train)
    # The split is a pure function of the ids (rank by salted sha256), not of file order or machine.
    bc = _build_corpus_module()
    everything = sorted(train + val + held)
    assert bc.heldout_ids(everything) == set(held) and bc.validation_ids(everything) == set(val)
    manifest = _manifest()
    assert manifest[domain]["heldout_ids"] == held and manifest[domain]["validation_ids"] == val
    for s, ids in (("train", train), ("validation", val), ("heldout", held)):
        assert manifest[domain]["documents"][s] == len(ids)
        assert manifest[domain]["characters"][s] == sum(map(len, corpus.load_documents(domain, s)))
    assert 0.05 < len(held) / len(everything) < 0.2 and 0.05 < len(val) / len(everything) < 0.2


@pytest.mark.parametrize("domain", corpus.DOMAINS)
def test_rebuilding_gives_identical_bytes(tmp_path, domain):
    bc = _build_corpus_module()
    docs = {doc_id: text for doc_id, _, text in corpus._read(domain)}
    info = bc.write_domain(tmp_path / f"{domain}.jsonl.gz", docs)
    committed = (data_dir() / "corpus" / f"{domain}.jsonl.gz").read_bytes()
    assert info["sha256"] == hashlib.sha256(committed).hexdigest() == _manifest()[domain]["sha256"]
    with gzip.open(io.BytesIO(committed), "rt") as f:
        assert json.loads(f.readline()).keys() == {"id", "split", "text"}


def test_domains_look_like_their_names():
    prose = corpus.load_documents("prose", "train")
    code = corpus.load_documents("code", "train")
    ja = corpus.load_documents("ja", "train")
    assert len(prose) >= 30 and len(code) >= 300 and len(ja) >= 150
    assert sum("thou" in d for d in prose) > len(prose) // 2
    assert sum("def " in d for d in code) > len(code) // 2
    jd = _load("japanese_docs")
    text = "".join(ja)
    assert len(text.encode("utf-8")) > 1_500_000  # enough Japanese to matter next to 3.9M prose characters
    assert jd.japanese_fraction(text) > 0.6
    assert text.count("。") > 10_000  # sentences, not tables or command lines
    # no markup left (the text itself mentions "<a href=...>" once, as an example of a link)
    assert len(re.findall(r"</?(?:p|div|span|a|code|em|li|ul|table|pre|br)\b[^>]*>", text)) <= 1
    assert "&amp;" not in text and "&lt;" not in text and "&nbsp;" not in text
    assert not any(ord(c) < 32 and c != "\n" for c in text)


def test_html_extraction_keeps_running_japanese_text_only():
    jd = _load("japanese_docs")
    html = """<html><head><title>タイトルは捨てられるべきもののはずです</title></head><body>
    <div class="toc"><dl><dt>1. 目次の項目はここに並ぶけれど本文ではありません</dt></dl></div>
    <div class="para">Debian のパッケージ管理システムは、
    多彩な歴史があり、<code>apt</code> などの選択肢があります。</div>
    <pre>$ sudo apt-get install パッケージの名前をここに書きます</pre>
    <table><tr><td>表の中のセルの文字列は本文として扱いません</td></tr></table>
    <p>This paragraph is English only and was not translated into Japanese.</p>
    <p>短い</p>
    <ul><li>リストの項目も、文として書かれていれば本文として残ります。</li></ul>
    </body></html>"""
    assert jd.html_paragraphs(html) == [
        "Debian のパッケージ管理システムは、多彩な歴史があり、apt などの選択肢があります。",  # wrap joined
        "リストの項目も、文として書かれていれば本文として残ります。",
    ]
    assert jd.page_document(html) is None  # too short to be a document
    assert jd.japanese_fraction("日本語 abc") == pytest.approx(3 / 7)


def test_japanese_provenance_is_recorded():
    jd = _load("japanese_docs")
    manifest = _manifest()["ja"]
    readme = (data_dir() / "corpus" / "README.md").read_text(encoding="utf-8")
    copyrights = (data_dir() / "corpus" / "JA-COPYRIGHTS.txt").read_text(encoding="utf-8")
    assert "GNU GENERAL PUBLIC LICENSE" in (data_dir() / "corpus" / "GPL-2.txt").read_text()
    ids = [i for split in corpus.SPLITS for i in corpus.document_ids("ja", split)]
    assert [p["package"] for p in manifest["packages"]] == [s.package for s in jd.SOURCES]
    for source, rec in zip(jd.SOURCES, manifest["packages"]):
        assert rec["version"] == source.version and rec["deb_sha256"] == source.deb_sha256
        assert rec["documents"] == sum(i.startswith(source.package + "/") for i in ids)
        row = next(line for line in readme.splitlines() if line.startswith(f"| `{source.package}` |"))
        assert f"| {source.version} |" in row and f"{rec['characters']:,}" in row
        assert f"{source.package} {source.version}" in copyrights
    assert "Permission is granted to make and distribute verbatim copies" in readme  # the FAQ's notice


def test_bad_domain_or_split_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown domain"):
        corpus.load_documents("poetry", "train")
    with pytest.raises(ValueError, match="unknown split"):
        corpus.load_documents("prose", "test")
    with pytest.raises(ValueError, match="unknown domain"):
        corpus.document_ids("japanese", "heldout")
    with pytest.raises(FileNotFoundError, match="prompt file"):
        load_prompt_records("nope.jsonl")


@pytest.mark.parametrize("domain", corpus.DOMAINS)
def test_prompts_are_held_out(domain):
    rows = load_prompt_records(domain)
    assert len(rows) >= 32
    assert len({r["id"] for r in rows}) == len(rows) and len({r["prompt"] for r in rows}) == len(rows)
    held_ids = set(corpus.document_ids(domain, "heldout"))
    held_text = corpus.load_documents(domain, "heldout")
    train_text = [t for d in corpus.DOMAINS for s in ("train", "validation") for t in corpus.load_documents(d, s)]
    for r in rows:
        assert r["domain"] == domain and r["id"].startswith(domain + "-")
        assert r["source"] in held_ids
        assert any(r["prompt"] in t for t in held_text)
        assert not any(r["prompt"] in t for t in train_text), f"{r['id']} occurs in training text"
        if domain == "ja":  # whole sentences, measured in characters (independent of any tokenizer)
            assert 40 <= len(r["prompt"]) <= 120 and r["prompt"].endswith("。")
