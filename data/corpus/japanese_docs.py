"""The Japanese domain of the corpus: running text from Debian packages that ship Japanese documentation.

Used by ``build_corpus.py``. Each source is one Debian package (name, version, licence, the HTML files
that hold the Japanese manual). ``apt-get download`` fetches the ``.deb`` into a temporary folder,
``dpkg -x`` unpacks it, and :func:`html_paragraphs` keeps the running text of each page:

- text of block elements (paragraphs, list items, definitions, headings), markup stripped;
- skipped: ``<pre>`` (commands, code listings), ``<table>`` (option tables), ``<head>``, scripts, and
  the DocBook navigation / table-of-contents blocks (``div`` classes ``toc``, ``navheader``, ...);
- kept only when at least ``MIN_JA_FRACTION`` of its characters are Japanese (kana, kanji, CJK
  punctuation) and it has ``MIN_PARAGRAPH_CHARS`` characters: this drops untranslated English
  paragraphs and one-word fragments;
- a line break inside a Japanese sentence (HTML source wrapping) is not a space in Japanese: removed.

One document = one HTML page (a chapter or section), id ``<package>/<page>``; paragraphs are joined
by ``\\n``. Explained in notebook 08.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import unicodedata
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

MIN_JA_FRACTION = 0.3
MIN_PARAGRAPH_CHARS = 20
MIN_DOCUMENT_CHARS = 300  # pages that are only a title or a table of contents are dropped

BLOCK_TAGS = {"p", "li", "dd", "dt", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "div", "br", "caption",
              "figcaption", "title"}
SKIP_TAGS = {"pre", "script", "style", "table", "head", "nav"}
SKIP_CLASSES = {"toc", "navheader", "navfooter", "docnav", "list-of-tables", "list-of-figures", "list-of-examples",
                "sphinxsidebar", "related", "footer", "breadcrumbs", "index", "indexdiv"}


@dataclass(frozen=True)
class DebSource:
    package: str
    version: str
    deb_sha256: str  # of the .deb Debian 12 (bookworm) served when the corpus was built
    licence: str  # as its debian/copyright states it
    pages: tuple[str, ...]  # glob patterns (relative to the unpacked package root) of the Japanese HTML pages
    copyright_file: str  # path of the package's copyright file inside the .deb

    @property
    def deb_name(self) -> str:
        return f"{self.package}_{self.version.replace(':', '%3a')}_all.deb"


def _doc(pkg: str) -> str:
    return f"usr/share/doc/{pkg}/copyright"


SOURCES: tuple[DebSource, ...] = (
    DebSource("debian-reference-ja", "2.100", "f67140e0b994409413bd5fcc8dfcce832445c99d724401f0275fa238daf30325",
              "GPL-2+", ("usr/share/debian-reference/ch*.ja.html",), _doc("debian-reference-ja")),
    DebSource("maint-guide-ja", "1.2.53", "67e9020818b7664b465239d96316a13af5f8cbd9a8bed5e8773c74e31ca24c97",
              "GPL-2+", ("usr/share/doc/maint-guide-ja/html/*.ja.html",), _doc("maint-guide-ja")),
    DebSource("developers-reference-ja", "12.18", "fdcd6ac4ade8b3a68449c7ba881195e37f429c64b8067ee7269404d1b86fa229",
              "GPL-2", ("usr/share/developers-reference/ja/*.html",), _doc("developers-reference-ja")),
    DebSource("debian-faq-ja", "11.1", "7e2a2f200a963e41dead4dd8645e0dd6550e2eda4cd88041b8e880046ca924a2",
              "Debian FAQ notice (copies and modified copies allowed under an identical permission notice)",
              ("usr/share/doc/debian/FAQ/ja/*.ja.html",), _doc("debian-faq-ja")),
    DebSource("aptitude-doc-ja", "0.8.13-5", "070ec003bdad1d3074c7cb012b0003f7379d7dce636f342705be4e2231072b45",
              "GPL-2+", ("usr/share/doc/aptitude/html/ja/*.html",), _doc("aptitude-doc-ja")),
    DebSource("debian-handbook", "11.20220922", "3d5dbeac1f1afc9c094eab9d0f701f6ecff99c4927d5a4794cf6c85678134faa",
              "GPL-2+ or CC-BY-SA-3.0", ("usr/share/doc/debian-handbook/html/ja-JP/*.html",), _doc("debian-handbook")),
    DebSource("debian-edu-doc-ja", "2.12.23~deb12u1",
              "ef8656af2240094faffc85144ce659eda1114df5a9da14580f4bfbe95fa505bf", "GPL-2+",
              ("usr/share/doc/debian-edu-doc-ja/debian-edu-bookworm-manual.html",), _doc("debian-edu-doc-ja")),
    DebSource("installation-guide-amd64", "20230508+deb12u1",
              "812c43e1dc906daf671e3efe953dc023205c238e5bd5a3021ce4ca142793573a", "GPL-2",
              ("usr/share/doc/installation-guide-amd64/ja/*.html",), _doc("installation-guide-amd64")),
)


def is_japanese_char(ch: str) -> bool:
    """Hiragana, katakana, CJK ideographs, CJK punctuation and full-width forms."""
    o = ord(ch)
    return (0x3000 <= o <= 0x30FF or 0x3400 <= o <= 0x4DBF or 0x4E00 <= o <= 0x9FFF or 0xF900 <= o <= 0xFAFF
            or 0xFF00 <= o <= 0xFFEF or 0x31F0 <= o <= 0x31FF)


def japanese_fraction(text: str) -> float:
    return sum(map(is_japanese_char, text)) / max(1, len(text))


_JA_SPACE = re.compile(r"(?<=[^\x00-\x7f]) (?=[^\x00-\x7f])")


class _Paragraphs(HTMLParser):
    """Collects the text of block elements, outside skipped elements and skipped ``div`` classes."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.paragraphs: list[str] = []
        self._buf: list[str] = []
        self._skip_tags = 0
        self._div_depth = 0
        self._skip_from_div: int | None = None  # div depth at which a skipped-class div opened

    def _flush(self) -> None:
        text = re.sub(r"\s+", " ", "".join(self._buf)).strip()
        text = _JA_SPACE.sub("", text)
        if text:
            self.paragraphs.append(text)
        self._buf = []

    def _skipping(self) -> bool:
        return self._skip_tags > 0 or self._skip_from_div is not None

    def handle_starttag(self, tag, attrs):
        if tag == "div":
            self._div_depth += 1
            classes = set((dict(attrs).get("class") or "").split())
            if self._skip_from_div is None and classes & SKIP_CLASSES:
                self._flush()
                self._skip_from_div = self._div_depth
        if tag in SKIP_TAGS:
            self._flush()
            self._skip_tags += 1
        elif tag in BLOCK_TAGS:
            self._flush()

    def handle_endtag(self, tag):
        if tag == "div":
            if self._skip_from_div == self._div_depth:
                self._buf = []
                self._skip_from_div = None
            self._div_depth = max(0, self._div_depth - 1)
        if tag in SKIP_TAGS:
            self._buf = []
            self._skip_tags = max(0, self._skip_tags - 1)
        elif tag in BLOCK_TAGS:
            self._flush()

    def handle_data(self, data):
        if not self._skipping():
            self._buf.append(data)


def html_paragraphs(html: str) -> list[str]:
    """The running-text paragraphs of one HTML page (see the module docstring for the rules)."""
    parser = _Paragraphs()
    parser.feed(html)
    parser.close()
    parser._flush()
    out = []
    for p in parser.paragraphs:
        p = unicodedata.normalize("NFC", p)
        if len(p) >= MIN_PARAGRAPH_CHARS and japanese_fraction(p) >= MIN_JA_FRACTION and p not in out:
            out.append(p)
    return out


def page_document(html: str) -> str | None:
    """One page -> its document text (paragraphs joined by newlines), or None when too short."""
    text = "\n".join(html_paragraphs(html))
    return text + "\n" if len(text) >= MIN_DOCUMENT_CHARS else None


def download(sources: tuple[DebSource, ...], dest: Path) -> None:
    """``apt-get download PACKAGE=VERSION`` for every source not already in ``dest``."""
    if shutil.which("apt-get") is None:
        raise SystemExit("building the Japanese domain needs Debian's apt-get (to download the documentation "
                         "packages). Fix: run on Debian/Ubuntu, or pass --debs DIR with the .deb files listed in "
                         "data/corpus/README.md")
    dest.mkdir(parents=True, exist_ok=True)
    missing = [s for s in sources if not (dest / s.deb_name).is_file()]
    if not missing:
        return
    cmd = ["apt-get", "download", *[f"{s.package}={s.version}" for s in missing]]
    try:
        subprocess.run(cmd, check=True, cwd=dest, stdout=subprocess.DEVNULL)
    except subprocess.CalledProcessError as exc:
        raise SystemExit(f"`{' '.join(cmd)}` failed ({exc}). Fix: `apt-get update` first; these are Debian 12 "
                         f"(bookworm) versions: on another release download them from a bookworm mirror and pass "
                         f"--debs DIR") from exc


def unpack(deb: Path, dest: Path) -> Path:
    """``dpkg -x`` (or ``dpkg-deb -x``) the package into ``dest``."""
    tool = shutil.which("dpkg-deb") or shutil.which("dpkg")
    if tool is None:
        raise SystemExit(f"unpacking {deb.name} needs dpkg-deb (Debian's dpkg package). Fix: install dpkg")
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run([tool, "-x", str(deb), str(dest)], check=True)
    return dest


def source_documents(source: DebSource, root: Path) -> dict[str, str]:
    """``{"<package>/<page>": text}`` for one unpacked package."""
    docs = {}
    for pattern in source.pages:
        for path in sorted(root.glob(pattern)):
            text = page_document(path.read_text(encoding="utf-8", errors="replace"))
            if text is not None:
                page = path.name.removesuffix(".html").removesuffix(".ja")
                docs[f"{source.package}/{page}"] = text
    if not docs:
        raise SystemExit(f"{source.package}: no Japanese page with running text found under {root} "
                         f"({', '.join(source.pages)}): is it version {source.version}?")
    return docs


def japanese_documents(debs_dir: Path, work: Path, log=print) -> tuple[dict[str, str], list[dict]]:
    """All sources' documents and, per source, what the manifest records (version, sha256, licence, size).

    Also returns each package's copyright text (``copyright`` key) for the README's provenance section."""
    download(SOURCES, debs_dir)
    docs: dict[str, str] = {}
    records = []
    for s in SOURCES:
        deb = debs_dir / s.deb_name
        digest = hashlib.sha256(deb.read_bytes()).hexdigest()
        root = unpack(deb, work / s.package)
        found = source_documents(s, root)
        docs.update(found)
        copyright_path = root / s.copyright_file
        records.append({
            "package": s.package, "version": s.version, "deb": s.deb_name, "deb_sha256": digest,
            "licence": s.licence, "pages": list(s.pages), "documents": len(found),
            "characters": sum(len(t) for t in found.values()),
            "copyright": copyright_path.read_text(encoding="utf-8") if copyright_path.is_file() else None,
        })
        log(f"  {s.package} {s.version}: {len(found)} pages, {records[-1]['characters']:,} characters")
    return docs, records
