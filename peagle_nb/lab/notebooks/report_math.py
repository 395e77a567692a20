"""Formulas of the HTML report pre-rendered to MathML, which browsers draw natively: no script, no font, no network.

nbconvert leaves ``$...$`` and ``$$...$$`` of markdown as raw LaTeX for a MathJax that an offline page does not
have. :class:`MathMLExporter` converts each one with ``latex2mathml`` (a pure-Python converter, installed by the
``notebooks`` extra) while the markdown is rendered, so code spans and escaped dollars stay untouched, exactly as
JupyterLab reads them. A formula the converter cannot read stays visible as its LaTeX source, marked as such.
Used by :mod:`peagle_nb.lab.notebooks.report`; explained in notebook 00.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

from jinja2 import pass_context
from nbconvert.exporters import HTMLExporter
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

MISSING_CONVERTER = ("formulas are shown as LaTeX source: latex2mathml is not installed "
                     "(pip install -e '.[notebooks]' installs it)")
# latex2mathml keeps a command it does not know as an identifier named after it, e.g. <mi>\foo</mi>.
_UNKNOWN_COMMAND = re.compile(r"<mi>\\[A-Za-z]+</mi>")


@dataclass
class MathTally:
    """What happened to the formulas of one report: rendered, kept as source (with the first few why)."""

    rendered: int = 0
    unrendered: int = 0
    problems: list[str] = field(default_factory=list)

    def failed(self, tex: str, why: str) -> None:
        self.unrendered += 1
        if len(self.problems) < 5:
            self.problems.append(f"{tex[:60]!r}: {why}")

    def summary(self, converter_missing: bool) -> str:
        if converter_missing:
            return MISSING_CONVERTER if self.unrendered else ""
        note = f"{self.rendered} formula(s) rendered as MathML"
        if self.unrendered:
            note += f"; {self.unrendered} left as LaTeX source ({'; '.join(self.problems)})"
        return note


def _converter():
    try:
        from latex2mathml.converter import convert
    except ImportError:
        return None
    return convert


def latex_to_mathml(tex: str, display: bool, tally: MathTally) -> str:
    """MathML for one formula, or its escaped LaTeX source in a marked ``<code>`` when it cannot be converted."""
    convert = _converter()
    why = "latex2mathml is not installed"
    if convert is not None:
        try:
            mathml = convert(tex.strip(), display="block" if display else "inline")
        except Exception as exc:  # noqa: BLE001 -- any parse error of the converter: show the source instead
            why = f"{type(exc).__name__}: {exc}"
        else:
            unknown = _UNKNOWN_COMMAND.search(mathml)
            if unknown is None:
                tally.rendered += 1
                return mathml.replace("<math ", f'<math alttext="{html.escape(tex.strip())}" ', 1)
            why = f"unknown command {unknown.group(0)[4:-5]}"
    tally.failed(tex, why)
    delimiter = "$$" if display else "$"
    return f'<code class="math-source" title="not rendered: {html.escape(why)}">' \
           f"{html.escape(delimiter + tex + delimiter)}</code>"


class MathMLRenderer(IPythonRenderer):
    """nbconvert's markdown renderer with formulas turned into MathML."""

    def __init__(self, tally: MathTally, **kwargs):
        super().__init__(**kwargs)
        self.tally = tally

    def inline_math(self, body: str) -> str:
        return latex_to_mathml(body, False, self.tally)

    def block_math(self, body: str) -> str:
        return latex_to_mathml(body, True, self.tally)

    def latex_environment(self, name: str, body: str) -> str:
        return latex_to_mathml(f"\\begin{{{name}}}{body}\\end{{{name}}}", True, self.tally)


class MathMLExporter(HTMLExporter):
    """HTMLExporter whose markdown (cells and ``text/markdown`` outputs) carries its formulas as MathML."""

    def __init__(self, tally: MathTally, **kwargs):
        self.tally = tally
        super().__init__(**kwargs)

    @pass_context  # jinja hands the cell (attachments) to the filter
    def markdown2html(self, context, source):
        cell = context.get("cell", {})
        renderer = MathMLRenderer(
            self.tally, escape=False, attachments=cell.get("attachments", {}), embed_images=self.embed_images,
            path=context.get("resources", {}).get("metadata", {}).get("path", ""),
            anchor_link_text=self.anchor_link_text, exclude_anchor_links=self.exclude_anchor_links,
            **self.lexer_options,
        )
        return MarkdownWithMath(renderer=renderer).render(source)


def converter_missing() -> bool:
    return _converter() is None
