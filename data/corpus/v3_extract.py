"""Text extraction for corpus v3 (used by ``build_corpus_v3.py``): one function per kind of source file.

- ``python_document``: a ``.py`` file of a wheel, whitespace-normalised like the v1 code domain.
- ``rest_document``: a reStructuredText source that Sphinx ships beside its HTML (``_sources/*.txt``).
- ``english_page_document``: the running text of an English HTML page: the v1 Japanese extractor's block
  rules (``japanese_docs._Paragraphs``: no ``<pre>``, tables, navigation, tables of contents), keeping a
  paragraph when it has ``MIN_PARAGRAPH_CHARS`` characters and at least ``MIN_LETTER_FRACTION`` ASCII letters.
- ``japanese_page_document``: ``japanese_docs.page_document`` (the v1 rule, unchanged).
- ``roff_japanese_document``: a Japanese man page (roff source): macros dropped, their text arguments and
  the body kept, font escapes removed, then the v1 Japanese paragraph rule.
"""

from __future__ import annotations

import re
import unicodedata

import japanese_docs

MIN_PARAGRAPH_CHARS = 20
MIN_LETTER_FRACTION = 0.5
MIN_DOCUMENT_CHARS = 300
PYTHON_MAX_BYTES = 400_000  # larger files are generated tables (unicode data, parser tables, API stubs)


def normalise(text: str) -> str:
    """``\\r\\n`` -> ``\\n``, trailing spaces stripped, runs of 4+ newlines cut to 3 (the v1 rule)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    return re.sub(r"\n{4,}", "\n\n\n", text).strip("\n") + "\n"


def python_document(raw: bytes) -> str | None:
    """A ``.py`` file's text, or None when it is not UTF-8, empty or larger than ``PYTHON_MAX_BYTES``."""
    if len(raw) > PYTHON_MAX_BYTES:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return normalise(text) if text.strip() else None


def rest_document(raw: bytes) -> str | None:
    text = raw.decode("utf-8", errors="replace")
    text = normalise(unicodedata.normalize("NFC", text))
    return text if len(text) >= MIN_DOCUMENT_CHARS else None


def letter_fraction(text: str) -> float:
    return sum(ch.isascii() and ch.isalpha() for ch in text) / max(1, len(text))


def english_paragraphs(html: str) -> list[str]:
    parser = japanese_docs._Paragraphs()
    parser.feed(html)
    parser.close()
    parser._flush()
    out: list[str] = []
    seen: set[str] = set()
    for p in parser.paragraphs:
        p = unicodedata.normalize("NFC", p)
        if len(p) >= MIN_PARAGRAPH_CHARS and letter_fraction(p) >= MIN_LETTER_FRACTION and p not in seen:
            seen.add(p)
            out.append(p)
    return out


def english_page_document(raw: bytes) -> str | None:
    text = "\n".join(english_paragraphs(raw.decode("utf-8", errors="replace")))
    return text + "\n" if len(text) >= MIN_DOCUMENT_CHARS else None


def japanese_page_document(raw: bytes) -> str | None:
    return japanese_docs.page_document(raw.decode("utf-8", errors="replace"))


_ROFF_TEXT_MACROS = {"SH", "SS", "B", "I", "BI", "IB", "BR", "RB", "IR", "RI", "SM", "SB", "TH"}
_ROFF_ESCAPE = re.compile(r"\\f(?:\[[^\]]*\]|\(..|.)|\\\(..|\\\[[^\]]*\]|\\[&|^%c]|\\-|\\e|\\s[+-]?\d")


def roff_text(source: str) -> str:
    """Plain text of a man page: text lines kept, the arguments of font/heading macros kept, other macro
    lines and comments dropped, font and special-character escapes removed; ``.PP``-style macros end a
    paragraph (blank line)."""
    out: list[str] = []
    for line in source.splitlines():
        if line.startswith(('.\\"', "'\\\"", '.\\\\"')):
            continue
        if line.startswith((".", "'")):
            macro, _, rest = line[1:].strip().partition(" ")
            if macro in _ROFF_TEXT_MACROS and macro != "TH":
                out.append(rest.replace('"', ""))
            else:
                out.append("")
            continue
        out.append(line)
    text = _ROFF_ESCAPE.sub("", "\n".join(out)).replace("\\\\", "\\")
    return re.sub(r"\n{2,}", "\n\n", text)


def roff_japanese_document(raw: bytes) -> str | None:
    """A Japanese man page -> its Japanese paragraphs (v1 rule) joined by newlines, or None when too short."""
    text = roff_text(raw.decode("utf-8", errors="replace"))
    paragraphs = []
    for block in text.split("\n\n"):
        p = japanese_docs._JA_SPACE.sub("", re.sub(r"\s+", " ", block).strip())
        p = unicodedata.normalize("NFC", p)
        if (len(p) >= japanese_docs.MIN_PARAGRAPH_CHARS and japanese_docs.japanese_fraction(p) >=
                japanese_docs.MIN_JA_FRACTION and p not in paragraphs):
            paragraphs.append(p)
    doc = "\n".join(paragraphs)
    return doc + "\n" if len(doc) >= japanese_docs.MIN_DOCUMENT_CHARS else None


EXTRACTORS = {
    "python": python_document,
    "rest": rest_document,
    "html_en": english_page_document,
    "html_ja": japanese_page_document,
    "roff_ja": roff_japanese_document,
    "text": rest_document,
}
