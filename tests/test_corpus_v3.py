"""Corpus v3 without network or the built corpus: split rule, reserved exclusion, extractors on inline samples,
and a tiny corpus built from fixture wheels in tmp_path, checked against its manifest."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import sys
import zipfile
from pathlib import Path

import pytest

from peagle_nb.text import corpus_v3

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "data" / "corpus"))

import build_corpus_v3 as b3  # noqa: E402
import v3_extract  # noqa: E402
import v3_sources  # noqa: E402
from v3_sources import Source  # noqa: E402

# ---------------------------------------------------------------- split rule


def test_split_fractions_and_determinism():
    ids = [f"pypi/pkg/m{i}.py" for i in range(1000)]
    a = b3.assign_splits(ids, {})
    assert b3.assign_splits(list(reversed(ids)), {}) == a  # independent of order
    counts = {s: sum(v == s for v in a.values()) for s in ("train", "validation", "heldout")}
    assert counts == {"heldout": 50, "validation": 50, "train": 900}
    ranked = sorted(ids, key=lambda d: hashlib.sha256(("peagle-split-v3:" + d).encode()).hexdigest())
    assert {d for d in ranked[:50]} == {d for d, s in a.items() if s == "heldout"}


def test_v1_heldout_and_validation_ids_keep_their_split():
    ids = [f"stdlib/m{i}.py" for i in range(200)]
    forced = {"stdlib/m3.py": "heldout", "stdlib/m4.py": "validation"}
    a = b3.assign_splits(ids, forced)
    assert a["stdlib/m3.py"] == "heldout" and a["stdlib/m4.py"] == "validation"
    assert sum(v == "heldout" for v in a.values()) == 1 + 10  # ceil(0.05 * 198) = 10 of the free ids


def test_v1_manifest_heldout_ids_are_forced():
    v1 = json.loads((REPO / "data" / "corpus" / "manifest.json").read_text())
    forced = b3.v1_forced_splits(v1, "code")
    assert all(forced[d] == "heldout" for d in v1["code"]["heldout_ids"])
    assert all(forced[d] == "validation" for d in v1["code"]["validation_ids"])


# ---------------------------------------------------------------- reserved exclusion


def test_reserved_packages_are_pinned_and_marked():
    reserved = {s.package.lower() for s in v3_sources.SOURCES if s.reserved}
    assert {"click", "jinja2", "attrs", "flask", "itsdangerous", "manpages-ja", "gimp-help-ja"} <= reserved
    trained = {s.package.lower() for s in v3_sources.SOURCES if not s.reserved}
    assert not reserved & trained


def test_vendored_reserved_package_paths():
    assert b3.is_vendored_reserved("pip/_vendor/jinja2/environment.py")
    assert b3.is_vendored_reserved("foo/click/core.py")
    assert not b3.is_vendored_reserved("clicker/core.py")
    assert not b3.is_vendored_reserved("attrs_helpers.py")


def test_copies_of_reserved_text_dropped_and_duplicates_kept_once():
    docs = {"code": {"pypi/click/core.py": "A\n", "pypi/other/core.py": "A\n", "pypi/x/a.py": "B\n",
                     "pypi/y/a.py": "B\n", "pypi/z/held.py": "H\n"}}
    kept, stats = b3.resolve_documents(docs, {"pypi/click/core.py"}, {"H\n": "heldout"})
    assert set(kept["code"]) == {"pypi/click/core.py", "pypi/x/a.py", "pypi/z/held.py"}
    assert stats["dropped_copies_of_reserved"] == 1 and stats["dropped_duplicates"] == 1
    assert stats["forced_by_v1_text"]["code"] == {"pypi/z/held.py": "heldout"}


def _module(n: int, tag: str) -> str:
    return "".join(f"def function_number_{i}_{tag}(argument):\n    return argument * {i}\n" for i in range(n))


def test_near_copies_of_reserved_dropped_and_of_v1_heldout_held_out():
    reserved, v1_held = _module(10, "r"), _module(10, "h")
    edited_reserved = _module(6, "r") + _module(6, "other")  # 6 of the 10 long lines of each def kept
    few_lines = _module(4, "h") + _module(20, "mine")  # 4 of 10: below the 0.5 threshold
    docs = {"code": {"pypi/click/core.py": reserved, "pypi/a/vendored.py": edited_reserved,
                     "pypi/b/tomli.py": _module(8, "h"), "pypi/c/own.py": few_lines}}
    kept, stats = b3.resolve_documents(docs, {"pypi/click/core.py"}, {v1_held: "heldout"})
    assert set(kept["code"]) == {"pypi/click/core.py", "pypi/b/tomli.py", "pypi/c/own.py"}
    assert stats["dropped_near_copies_of_reserved"] == 1
    assert stats["forced_by_v1_text"]["code"] == {"pypi/b/tomli.py": "heldout"}


def test_a_short_reserved_stub_does_not_drop_files_sharing_its_imports():
    stub = "from __future__ import annotations\nfrom attr.converters import *  # noqa\n"
    other = stub + _module(30, "own")
    docs = {"code": {"pypi/attrs/c.py": stub, "pypi/x/y.py": other}}
    kept, stats = b3.resolve_documents(docs, {"pypi/attrs/c.py"}, {})
    assert set(kept["code"]) == {"pypi/attrs/c.py", "pypi/x/y.py"} and stats["dropped_near_copies_of_reserved"] == 0


# ---------------------------------------------------------------- extractors


def test_python_document_rules():
    assert v3_extract.python_document(b"x = 1\r\n\n\n\n\n\ny = 2   \n") == "x = 1\n\n\ny = 2\n"
    assert v3_extract.python_document(b"\xff\xfe") is None
    assert v3_extract.python_document(b"  \n") is None
    assert v3_extract.python_document(b"#" * (v3_extract.PYTHON_MAX_BYTES + 1)) is None


def test_english_page_keeps_prose_drops_code_and_navigation():
    para = "The quick brown fox explains how the package manager resolves dependencies. " * 3
    html = (f"<html><head><title>t</title></head><body><div class='toc'><p>{para} TOC</p></div>"
            f"<p>{para}</p><pre>apt-get install foo bar baz qux quux corge</pre><table><tr><td>{para}x</td></tr>"
            f"</table><p>{para}</p><p>1234567890 -- 1234567890 -- 1234567890</p><p>{para}more</p></body></html>")
    doc = v3_extract.english_page_document(html.encode())
    assert doc == f"{para.strip()}\n{para}more\n"


def test_english_page_too_short_is_dropped():
    assert v3_extract.english_page_document(b"<p>Only a short title page here.</p>") is None


def test_roff_japanese_man_page():
    body = "これは日本語のマニュアルページの本文です。コマンドの使い方を説明します。" * 5
    roff = (f'.\\" comment line\n.TH LS 1\n.SH 名前\nls \\- ディレクトリの内容を一覧表示する\n.SH 説明\n'
            f".B ls\n{body}\n.PP\n\\fB{body}\\fP\n")
    doc = v3_extract.roff_japanese_document(roff.encode())
    assert doc is not None and "comment" not in doc and "\\f" not in doc and ".SH" not in doc
    assert body in doc
    assert v3_extract.roff_japanese_document(b".TH X 1\n.SH NAME\nx - english only page\n") is None


def test_japanese_page_uses_v1_rule():
    text = "日本語の段落です。" * 40
    assert v3_extract.japanese_page_document(f"<p>{text}</p><p>English paragraph only here.</p>".encode()) == \
        text + "\n"


# ---------------------------------------------------------------- a tiny corpus from fixture wheels


def _wheel(path: Path, files: dict[str, str]) -> str:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, text in sorted(files.items()):
            zf.writestr(zipfile.ZipInfo(name, (2020, 1, 1, 0, 0, 0)), text)
    path.write_bytes(buf.getvalue())
    return hashlib.sha256(buf.getvalue()).hexdigest()


def _fixture_sources(cache: Path) -> tuple[Source, ...]:
    cache.mkdir(parents=True, exist_ok=True)
    lib = {f"lib/mod{i}.py": f"def f{i}(x):\n    return x + {i}  # {'pad ' * (i % 7 * 20)}\n" for i in range(60)}
    lib["lib/_vendor/jinja2/env.py"] = "VENDORED = True\n"
    lib["lib/tests/test_mod.py"] = "def test():\n    pass\n"
    lib["lib/copy.py"] = "def reserved_helper():\n    return 1\n"
    sha_lib = _wheel(cache / "lib-1.0-py3-none-any.whl", lib)
    sha_res = _wheel(cache / "click-9.0-py3-none-any.whl",
                     {"click/core.py": "def reserved_helper():\n    return 1\n", "click/x.py": "X = 1\n",
                      "click-9.0.dist-info/LICENSE.txt": "BSD licence text\n"})
    return (v3_sources._wheel("lib", "1.0", "lib-1.0-py3-none-any.whl", sha_lib, "MIT"),
            v3_sources._wheel("click", "9.0", "click-9.0-py3-none-any.whl", sha_res, "BSD-3-Clause", reserved=True))


def _v1_manifest() -> dict:
    return {d: {"heldout_ids": [], "validation_ids": []} for d in b3.DOMAINS}


def _build(tmp_path: Path, out_name: str = "v3") -> tuple[dict, Path]:
    sources = _fixture_sources(tmp_path / "cache")
    v1_texts = {v3_extract.normalise("def f5(x):\n    return x + 5  # " + "pad " * 100 + "\n"): "heldout"}
    out = tmp_path / out_name
    manifest = b3.build(sources, tmp_path / "cache", out, _v1_manifest(), v1_texts, None, log=lambda *_: None,
                        max_bytes=600, target_raw=1500)
    return manifest, out


def test_tiny_build_splits_shards_and_verifies(tmp_path):
    manifest, out = _build(tmp_path)
    assert len(manifest["shards"]) > 3 and all(s["bytes"] <= 600 for s in manifest["shards"])
    corpus_v3.verify_shards(out, manifest)
    docs = {s: dict(corpus_v3.iter_documents("code", s, out, manifest)) for s in corpus_v3.SPLITS if s != "reserved"}
    reserved = dict(corpus_v3.iter_documents("code", "reserved", out, manifest))
    assert set(reserved) == {"pypi/click/click/core.py", "pypi/click/click/x.py"}
    everything = {i for d in docs.values() for i in d}
    assert "pypi/lib/lib/copy.py" not in everything  # same text as a reserved document
    assert not any("jinja2" in i or "/tests/" in i for i in everything)
    assert "pypi/lib/lib/mod5.py" in docs["heldout"]  # its text is a v1 held-out document
    assert len(everything) == 60
    assert (out / "LICENSES" / "click" / "LICENSE.txt").is_file()
    assert manifest["totals"]["code"]["reserved"]["documents"] == 2
    assert sum(s["documents"] for s in manifest["shards"]) == 62


def test_rebuild_is_byte_identical(tmp_path):
    first, _ = _build(tmp_path, "a")
    second, _ = _build(tmp_path, "b")
    assert [(s["file"], s["sha256"]) for s in first["shards"]] == [(s["file"], s["sha256"]) for s in second["shards"]]


def test_verify_names_missing_and_changed_shards_and_the_fix(tmp_path):
    manifest, out = _build(tmp_path)
    first, second = manifest["shards"][0]["file"], manifest["shards"][1]["file"]
    (out / first).unlink()
    data = gzip.decompress((out / second).read_bytes()).replace(b"def", b"DEF")
    (out / second).write_bytes(gzip.compress(data, mtime=0))
    with pytest.raises(corpus_v3.CorpusV3Error) as err:
        corpus_v3.verify_shards(out, manifest)
    msg = str(err.value)
    assert f"{first}: missing" in msg and second in msg and "python data/corpus/build_corpus_v3.py" in msg


def test_loader_refuses_unverified_shards(tmp_path):
    manifest, out = _build(tmp_path)
    name = next(s["file"] for s in manifest["shards"] if s["split"] == "train")
    (out / name).write_bytes(b"")
    with pytest.raises(corpus_v3.CorpusV3Error):
        corpus_v3.load_documents("code", "train", out, manifest)
    with pytest.raises(ValueError, match="unknown split"):
        corpus_v3.load_documents("code", "test", out, manifest)


def test_archive_with_wrong_sha256_stops_the_build(tmp_path):
    (src,) = _fixture_sources(tmp_path / "cache")[:1]
    bad = Source(**{**src.__dict__, "sha256": "0" * 64})
    with pytest.raises(SystemExit, match="differs from the pinned"):
        b3.download(bad, tmp_path / "cache")


def test_committed_manifest_is_consistent():
    manifest = corpus_v3.load_manifest()
    assert manifest["train_tokens"] >= 75_000_000
    assert all(s["bytes"] <= b3.SHARD_MAX_BYTES for s in manifest["shards"])
    for domain, splits in manifest["totals"].items():
        for split, t in splits.items():
            shards = [s for s in manifest["shards"] if s["domain"] == domain and s["split"] == split]
            assert t["tokens"] == sum(s["tokens"] for s in shards)
            assert t["documents"] == sum(s["documents"] for s in shards)
    pinned = {(s.package, s.version, s.sha256) for s in v3_sources.SOURCES}
    assert {(r["package"], r["version"], r["sha256"]) for r in manifest["sources"]} == pinned
    assert all(s["file"].startswith(f"{s['domain']}-{s['split']}-") for s in manifest["shards"])
    assert all(manifest["totals"][d]["reserved"]["documents"] > 0 for d in ("code", "ja"))


def test_carry_groups_respect_the_limit_and_cover_every_shard_training_verifies(tmp_path):
    manifest, _ = _build(tmp_path)
    groups = corpus_v3.carry_groups(manifest, limit_bytes=1200)
    sizes = {s["file"]: s["bytes"] for s in manifest["shards"]}
    assert all(sum(sizes[f] for f in g) <= 1200 for g in groups)
    flat = [f for g in groups for f in g]
    assert flat == [s["file"] for s in manifest["shards"]]  # the reserved shards too: training verifies them all
    assert any(s["split"] == "reserved" for s in manifest["shards"])
    with pytest.raises(ValueError, match="larger than"):
        corpus_v3.carry_groups(manifest, limit_bytes=10)
    capped = corpus_v3.carry_groups(manifest, limit_bytes=10**9, max_files=2)  # the size limit alone: one group
    assert [f for g in capped for f in g] == flat and all(len(g) <= 2 for g in capped) and len(capped) > 1


def test_readme_table_is_the_manifest():
    readme = (REPO / "data" / "corpus" / "README.md").read_text(encoding="utf-8")
    assert b3.readme_table(corpus_v3.load_manifest()) in readme
