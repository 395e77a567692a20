"""One self-contained HTML report of the executed series, figures drawn, readable offline.

Executed notebooks keep plotly figures as ``application/vnd.plotly.v1+json``, which JupyterLab draws but
an HTML export, a CI artifact viewer or a code host does not. :func:`write_report` turns every executed
notebook into one page: markdown, code and outputs through nbconvert's ``basic`` template, each figure
as a ``<div>`` drawn by plotly.js, which is inlined ONCE from the installed plotly package (no CDN, no
network). Where kaleido and a Chromium are available (``make install`` provides both), each figure also
gets a static PNG: shown inside its ``<div>`` until plotly.js draws over it, and added to the executed
``.ipynb`` beside the figure JSON so a code host shows it too. Formulas are pre-rendered to MathML
(:mod:`~peagle_nb.lab.notebooks.report_math`), the ``[record]`` outputs are folded into one closed table per notebook
(:mod:`~peagle_nb.lab.notebooks.report_records`) and printouts wrap at the page's width. ``peagle-nb run-notebooks``
calls this after the series ran. Explained in notebook 00.
"""

from __future__ import annotations

import base64
import copy
import html
import json
import re
import warnings
from pathlib import Path
from typing import Callable, Iterable, Sequence

from peagle_nb.lab.notebooks.report_records import fold_records, records_html

PLOTLY_MIME = "application/vnd.plotly.v1+json"
PNG_MIME = "image/png"
DEFAULT_SIZE = (900, 450)

CSS = """
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 0 auto; padding: 1em 2em; color: #222; }
nav ol { columns: 2; } section.notebook { border-top: 3px solid #d62728; margin-top: 3em; }
.input_area pre, .output_area pre { background: #f6f8fa; padding: .5em; font-size: 12px; }
.input_area pre { overflow-x: auto; }
.output_area pre { background: #fff; border-left: 3px solid #ddd; white-space: pre-wrap; overflow-wrap: anywhere; }
.output_area pre .ln { display: block; }
.output_subarea { max-width: 100%; overflow-wrap: anywhere; overflow-x: auto; } .output_subarea img { max-width: 100%; }
.prompt { display: none; } table.dataframe { border-collapse: collapse; font-size: 12px; max-width: 100%; }
table.dataframe td, table.dataframe th { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
table.dataframe td { overflow-wrap: normal; }
.peagle-plot { min-height: 200px; } .peagle-plot img { max-width: 100%; }
.report-note { color: #555; font-size: 14px; }
math { font-size: 1.1em; } math[display="block"] { margin: .6em 0; }
code.math-source { color: #a00; }
details.records { margin: 1.5em 0; font-size: 13px; } details.records summary { cursor: pointer; color: #555; }
details.records table { border-collapse: collapse; font: 12px ui-monospace, monospace; margin-top: .5em; }
details.records td, details.records th { border: 1px solid #ddd; padding: 1px 6px; text-align: left;
  overflow-wrap: anywhere; }
"""

DRAW_JS = """
document.querySelectorAll('script[data-plot-for]').forEach(function (spec) {
  var div = document.getElementById(spec.getAttribute('data-plot-for'));
  try {
    var fig = JSON.parse(spec.textContent);
    if (typeof Plotly === 'undefined') { return; }
    Plotly.newPlot(div, fig.data || [], fig.layout || {}, {responsive: true, displaylogo: false}).then(function () {
      var img = div.querySelector('.plot-fallback'); if (img) { img.remove(); }
    });
  } catch (err) { div.setAttribute('data-plot-error', String(err)); }
});
"""


def plotly_outputs(nb: dict) -> Iterable[dict]:
    """Every output (display or result) of a notebook that holds a plotly figure."""
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []) or []:
            if PLOTLY_MIME in (out.get("data") or {}):
                yield out


def _figure_size(spec: dict) -> tuple[int, int]:
    layout = spec.get("layout") or {}
    return int(layout.get("width") or DEFAULT_SIZE[0]), int(layout.get("height") or DEFAULT_SIZE[1])


def add_static_images(notebooks: Sequence[dict]) -> tuple[int, str | None]:
    """Add a PNG to every plotly output that lacks one, rendered by kaleido in ONE browser session.

    Returns ``(images added, why none could be made or None)``; never raises for a missing tool."""
    todo = [out for nb in notebooks for out in plotly_outputs(nb) if PNG_MIME not in out["data"]]
    if not todo:
        return 0, None
    try:
        import kaleido
        import plotly.io as pio
    except ImportError:
        return 0, "kaleido is not installed (pip install kaleido; it drives the system Chromium)"
    try:
        kaleido.start_sync_server(silence_warnings=True)
    except Exception as exc:  # noqa: BLE001 -- no Chromium/Chrome found, or it would not start: report, no image
        return 0, f"kaleido could not start a browser: {type(exc).__name__}: {exc}"
    made = 0
    try:
        for out in todo:
            spec = out["data"][PLOTLY_MIME]
            width, height = _figure_size(spec)
            fig = pio.from_json(json.dumps({"data": spec.get("data", []), "layout": spec.get("layout", {})}),
                                skip_invalid=True)
            with warnings.catch_warnings():  # plotly warns that kaleido's server ignores per-call options
                warnings.simplefilter("ignore", UserWarning)
                png = pio.to_image(fig, format="png", width=width, height=height)
            out["data"][PNG_MIME] = base64.b64encode(png).decode("ascii")
            made += 1
    finally:
        kaleido.stop_sync_server()
    return made, None


def _plot_html(spec: dict, png_b64: str | None, div_id: str) -> str:
    if png_b64:
        fallback = ('<img class="plot-fallback" alt="static image of this figure" '
                    f'src="data:image/png;base64,{png_b64}">')
    else:
        fallback = '<p class="plot-fallback">This figure is drawn by JavaScript (no static image was made).</p>'
    payload = json.dumps({"data": spec.get("data", []), "layout": spec.get("layout", {})}).replace("</", "<\\/")
    height = _figure_size(spec)[1]  # plotly.js sizes a figure to its container
    return (f'<div class="peagle-plot" id="{div_id}" style="height: {height}px">{fallback}</div>'
            f'<script type="application/json" data-plot-for="{div_id}">{payload}</script>')


def _is_plotly_loader(out: dict) -> bool:
    """The output plotly's "notebook" renderer emits once to load its own copy of plotly.js."""
    data = out.get("data") or {}
    page = data.get("text/html", "")
    page = "".join(page) if isinstance(page, list) else page
    return PLOTLY_MIME not in data and "window.PlotlyConfig" in page


def _with_plot_divs(nb: dict, prefix: str) -> dict:
    """A copy whose plotly outputs are replaced by the report's div + JSON (other renderings dropped) and
    without plotly.js loaders (the report inlines plotly.js once)."""
    nb = copy.deepcopy(nb)
    for cell in nb.get("cells", []):
        if cell.get("outputs"):
            cell["outputs"] = [o for o in cell["outputs"] if not _is_plotly_loader(o)]
    for i, out in enumerate(plotly_outputs(nb)):
        data = out["data"]
        out["data"] = {"text/html": _plot_html(data[PLOTLY_MIME], data.get(PNG_MIME), f"{prefix}-fig{i}")}
        out.setdefault("metadata", {})
    return nb


_TEXT_OUTPUT = re.compile(r'(<div class="output_subarea [^"]*output_text[^"]*">\s*<pre>)(.*?)(</pre>)', re.S)
HANG_CH = 4  # a wrapped line goes on this many characters right of where its own text starts


def _hang_line(line: str) -> str:
    lead = HANG_CH + len(line) - len(line.lstrip(" "))
    return f'<span class="ln" style="padding-left: {lead}ch; text-indent: -{lead}ch">{line or " "}</span>'


def _hanging_indents(body: str) -> str:
    """Each line of a plain printout in its own block, so that a line too long for the page wraps with a hanging
    indent instead of running off it (or wrapping back to the left edge, where it reads as a new line).
    Printouts with markup (ANSI colours, spans across lines) keep plain wrapping."""
    def one(m: re.Match) -> str:
        text = m.group(2)
        if "<" in text:
            return m.group(0)
        return m.group(1) + "".join(_hang_line(ln) for ln in text.rstrip("\n").split("\n")) + m.group(3)

    return _TEXT_OUTPUT.sub(one, body)


def _body(nb: dict, tally) -> str:
    import nbformat

    from peagle_nb.lab.notebooks.report_math import MathMLExporter

    exporter = MathMLExporter(tally, template_name="basic")
    body, _ = exporter.from_notebook_node(nbformat.reads(json.dumps(nb), as_version=4))  # joins line lists
    return _hanging_indents(body)


def plotly_js() -> str:
    """plotly.js of the installed plotly package (offline)."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs().replace("</script", "<\\/script")


def write_report(executed: Sequence[str | Path], out: str | Path, title: str = "peagle-notebooks: the executed series",
                 images: bool = True, echo: Callable[[str], None] = print) -> Path:
    """Write one HTML page for the executed notebooks (in order); with ``images`` also add static PNGs to
    the figures, in the report and in the executed ``.ipynb`` files themselves."""
    paths_ = [Path(p) for p in executed]
    notebooks = [json.loads(p.read_text(encoding="utf-8")) for p in paths_]
    note = ""
    if images:
        made, why = add_static_images(notebooks)
        if made:
            for p, nb in zip(paths_, notebooks):
                if any(True for _ in plotly_outputs(nb)):
                    p.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        note = f"{made} static image(s) added to the figures" if not why else f"no static images: {why}"
        echo(f"report: {note}")
    from peagle_nb.lab.notebooks.report_math import MathTally, converter_missing  # nbconvert: the notebooks extra

    tally = MathTally()
    sections, toc = [], []
    n_figures = n_records = 0
    for i, (p, nb) in enumerate(zip(paths_, notebooks)):
        anchor = f"nb{i}"
        n_figures += sum(1 for _ in plotly_outputs(nb))
        nb, records = fold_records(nb)
        n_records += len(records)
        toc.append(f'<li><a href="#{anchor}">{html.escape(p.name)}</a></li>')
        sections.append(f'<section class="notebook" id="{anchor}"><p class="report-note">{html.escape(p.name)}</p>'
                        f"{_body(_with_plot_divs(nb, anchor), tally)}{records_html(records)}</section>")
    math_note = tally.summary(converter_missing())
    if tally.unrendered:
        echo(f"report: {math_note}")
    notes = "; ".join(n for n in (note, math_note, f"{n_records} recorded value(s) folded into one table per notebook")
                      if n)
    page = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{CSS}</style><script>{plotly_js()}</script></head><body>"
            f"<h1>{html.escape(title)}</h1><p class=\"report-note\">{len(paths_)} notebook(s), {n_figures} figure(s)"
            f"; {html.escape(notes)}. Self-contained: plotly.js is included once, formulas are MathML, nothing is "
            f"loaded from the network.</p><nav><ol>{''.join(toc)}</ol></nav>{''.join(sections)}"
            f"<script>{DRAW_JS}</script></body></html>\n")
    out = Path(out)
    out.write_text(page, encoding="utf-8")
    return out
