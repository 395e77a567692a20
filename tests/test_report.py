"""The HTML report of an executed series: self-contained, figures drawn by plotly.js in headless Chromium,
a static PNG in place when JavaScript is off, formulas as MathML, ``[record]`` lines folded into one toggle per
notebook, printouts no wider than the page, nothing fetched from the network."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from peagle_nb.lab.notebooks.authoring import code, md, params, write_notebook
from peagle_nb.notebook.record import RECORD_MIME
from peagle_nb.lab.notebooks.report import PLOTLY_MIME, PNG_MIME, plotly_outputs, write_report
from peagle_nb.lab.notebooks.report_math import MISSING_CONVERTER, MathTally, converter_missing, latex_to_mathml
from peagle_nb.lab.notebooks.report_records import fold_records, records_html
from peagle_nb.lab.notebooks.runner import execute_notebook

ARTIFACTS = Path(__file__).resolve().parent.parent / "build" / "test-artifacts"
FIGURES_JS = """() => Array.from(document.querySelectorAll('.peagle-plot')).map(d => ({
    drawn: d.classList.contains('js-plotly-plot'), traces: d.querySelectorAll('.trace').length,
    svgs: d.querySelectorAll('svg.main-svg').length, fallback: !!d.querySelector('.plot-fallback'),
    svg_area: Array.from(d.querySelectorAll('svg.main-svg')).map(s => s.getBoundingClientRect())
        .reduce((a, r) => Math.max(a, r.width * r.height), 0)}))"""
MATH_JS = """() => Array.from(document.querySelectorAll('math')).map(m => ({
    display: m.getAttribute('display'), width: m.getBoundingClientRect().width,
    height: m.getBoundingClientRect().height}))"""
# Every output block, and the page itself: wider content than box means a printout runs off the page.
OVERFLOW_JS = """() => ({
    page: [document.documentElement.scrollWidth, document.documentElement.clientWidth],
    blocks: document.querySelectorAll('.output_area').length,
    wide: Array.from(document.querySelectorAll('.output_area, .output_subarea, .output_subarea pre'))
        .filter(e => e.scrollWidth > e.clientWidth)
        .map(e => `${e.className || e.tagName}: ${e.scrollWidth} > ${e.clientWidth}: ${e.textContent.slice(0, 60)}`)
    })"""
LONG_LINE = "verdict: " + " ".join(f"K={k} tau=3.{k} speedup=1.{k}x -> peagle faster" for k in range(1, 25))


def _kaleido_available() -> bool:
    try:
        import kaleido  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """A small notebook with two plotly figures (a returned figure and fig.show()), a table, formulas, records
    and a printout far wider than the page, executed."""
    tmp = tmp_path_factory.mktemp("report")
    nb = write_notebook(tmp / "figures.ipynb", [
        md("# Figures\n\nA line and a bar. One step yields $\\tau(K) = 1 + a_1 + \\dots + a_K$ tokens on "
           "average, and `$HOME` stays code.\n\n$$\\frac{B\\,\\tau(K)}{t_d + t_v}$$"),
        params("SMOKE = None"),
        code("import pandas as pd\nimport plotly.graph_objects as go\nfrom peagle_nb.notebook import record\n"
             "record('smoke', SMOKE)\ngo.Figure(go.Scatter(x=[1, 2, 3], y=[3, 1, 2], name='tau'))"),
        code("import plotly.io as pio\npio.renderers.default = 'plotly_mimetype+notebook'  # loads its own plotly.js\n"
             "fig = go.Figure(go.Bar(x=['eagle3', 'peagle'], y=[2.6, 3.4]))\nfig.show()\n"
             "pd.DataFrame({'k': [3, 7], 'tau': [2.87, 3.70]})"),
        code(f"record('tau', [2.87, 3.70])\nprint({LONG_LINE!r})\nprint('x' * 600)"),
    ])
    res = execute_notebook(nb, tmp / "out", {}, timeout_s=180)
    messages: list[str] = []
    report = write_report([res.output_path], tmp / "out" / "report.html", echo=messages.append)
    return res, report, messages


def test_smoke_none_is_decided_in_the_kernel(executed):
    from peagle_nb.notebook.modes import decide_smoke

    res, _, _ = executed
    assert res.records["smoke"] == decide_smoke(None)[0]  # a notebook outside the series
    assert res.records["mode.smoke"] is res.records["smoke"] and res.records["mode.reason"]


def test_report_is_self_contained_with_static_fallbacks(executed):
    res, report, messages = executed
    page = report.read_text(encoding="utf-8")
    assert page.count("data-plot-for=") == 2 and page.count("Plotly.newPlot") == 1
    assert "<script src=" not in page and "<link" not in page  # nothing loaded from elsewhere
    assert len(re.findall(r"plotly\.js v\d", page)) == 1  # one copy of plotly.js (its banner), not the renderer's
    nb = json.loads(Path(res.output_path).read_text())
    figures = list(plotly_outputs(nb))
    assert len(figures) == 2 and all(PLOTLY_MIME in f["data"] for f in figures)
    if _kaleido_available():  # the executed notebook itself now shows the figures on a code host
        assert all(PNG_MIME in f["data"] for f in figures)
        assert len(re.findall(r'<img[^>]*class="plot-fallback"[^>]*src="data:image/png;base64,', page)) == 2
        assert messages == ["report: 2 static image(s) added to the figures"]
    else:
        assert messages and messages[0].startswith("report: no static images: kaleido is not installed")


def _body_of(report: Path) -> str:
    """The page after its head (which holds plotly.js, whose source has its own dollars and brackets)."""
    page = report.read_text(encoding="utf-8")
    return page[page.index("</head>"):]


def test_formulas_are_mathml_and_code_spans_stay_code(executed):
    assert not converter_missing(), MISSING_CONVERTER  # a dependency of the notebooks extra, never skipped
    _, report, _ = executed
    page = _body_of(report)
    maths = re.findall(r'<math [^>]*display="(inline|block)"', page)
    assert sorted(maths) == ["block", "inline"], maths
    assert 'alttext="\\tau(K) = 1 + a_1 + \\dots + a_K"' in page  # the source travels with the MathML
    assert "$\\tau" not in page and "$$" not in page  # no formula left as raw LaTeX
    assert "<code>$HOME</code>" in page
    assert "2 formula(s) rendered as MathML" in page


def test_record_lines_are_folded_into_one_toggle(executed):
    res, report, _ = executed
    page = _body_of(report)
    assert "[record]" not in page  # not one record line among the outputs
    assert page.count('<details class="records">') == 1
    folded = re.search(r'<details class="records">(.*?)</details>', page, re.S).group(1)
    rows = dict(re.findall(r"<tr><td>([^<]+)</td><td>([^<]*)</td></tr>", folded))
    assert f"<summary>{len(rows)} recorded value(s)" in folded
    assert set(rows) == set(res.records) and rows["tau"] == "[2.87, 3.7]"  # every recorded value, none lost
    assert html.escape(LONG_LINE, quote=False) in page  # the cell's own printout stays where it was


def test_printout_lines_wrap_with_a_hanging_indent(executed):
    _, report, _ = executed
    page = _body_of(report)
    verdict = html.escape(LONG_LINE, quote=False)
    assert f'<span class="ln" style="padding-left: 4ch; text-indent: -4ch">{verdict}</span>' in page
    assert '<span class="ln" style="padding-left: 4ch; text-indent: -4ch">' + "x" * 600 + "</span>" in page


def test_an_indented_line_hangs_past_its_own_indent_and_coloured_printouts_stay_whole():
    from peagle_nb.lab.notebooks.report import _hanging_indents

    stream = '<div class="output_subarea output_stream output_stdout output_text">\n<pre>{}</pre>'
    out = _hanging_indents(stream.format("head\n\n  K=3: wins\n"))
    assert out.count('class="ln"') == 3 and "padding-left: 6ch; text-indent: -6ch\">  K=3: wins<" in out
    assert '-4ch"> </span>' in out  # an empty line keeps its height
    coloured = stream.format('<span class="ansi-red-fg">Error\nline</span>')
    assert _hanging_indents(coloured) == coloured


def test_fold_records_keeps_other_lines_of_a_stream():
    nb = {"cells": [{"cell_type": "code", "source": "", "outputs": [
        {"output_type": "display_data", "data": {RECORD_MIME: {"name": "a.b", "value": 1.5},
                                                 "text/plain": "[record] a.b = 1.5"}, "metadata": {}},
        {"output_type": "stream", "name": "stdout", "text": ["step 1\n", "[record] c = [1, 2]\n", "step 2\n"]},
        {"output_type": "stream", "name": "stdout", "text": "[record] d = \"x\"\n"},
    ]}, {"cell_type": "markdown", "source": "[record] in prose is prose"}]}
    folded, records = fold_records(nb)
    assert [(r.name, r.value) for r in records] == [("a.b", "1.5"), ("c", "[1, 2]"), ("d", '"x"')]
    assert folded["cells"][0]["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "step 1\nstep 2\n"}]
    assert folded["cells"][1] == nb["cells"][1] and len(nb["cells"][0]["outputs"]) == 3  # the input is untouched
    assert records_html([]) == "" and records_html(records).count("<tr><td>") == 3


def test_a_formula_the_converter_cannot_read_stays_visible_as_source():
    tally = MathTally()
    html_ = latex_to_mathml("x = \\notacommand{y}", False, tally)
    assert html_.startswith('<code class="math-source"') and "$x = \\notacommand{y}$" in html_
    assert "<math" in latex_to_mathml("a_j", False, tally)
    assert (tally.rendered, tally.unrendered) == (1, 1)
    assert "unknown command \\notacommand" in tally.summary(converter_missing=False)


@pytest.mark.browser
@pytest.mark.slow
def test_figures_are_drawn_in_headless_chromium(executed):
    from tests.compare.test_browser import CHROMIUM_ARGS, chromium_path

    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    _, report, _ = executed
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    fetched: list[str] = []

    def only_local(route):
        url = route.request.url
        if url.startswith(("file:", "data:", "blob:")):
            return route.continue_()
        fetched.append(url)
        return route.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.route("**/*", only_local)
            page.goto(report.as_uri(), timeout=60_000)
            page.wait_for_function(f"() => ({FIGURES_JS})().every(f => f.drawn && f.traces > 0)", timeout=60_000)
            figures = page.evaluate(FIGURES_JS)
            assert len(figures) == 2
            assert all(f["svgs"] >= 1 and f["svg_area"] > 0 and not f["fallback"] for f in figures), figures
            assert page.locator("table.dataframe").count() == 1
            maths = page.evaluate(MATH_JS)  # drawn by the browser's own MathML layout, no script
            assert sorted(m["display"] for m in maths) == ["block", "inline"]
            assert all(m["width"] > 20 and m["height"] > 8 for m in maths), maths
            overflow = page.evaluate(OVERFLOW_JS)
            assert overflow["blocks"] >= 5 and overflow["wide"] == [], overflow
            assert overflow["page"][0] <= overflow["page"][1], overflow  # no horizontal scroll of the page
            assert not page.locator("details.records table").is_visible()  # folded until asked for
            page.locator("details.records summary").click()
            assert page.locator("details.records table").is_visible()
            page.screenshot(path=str(ARTIFACTS / "report_figures.png"), full_page=True)
            assert not errors, errors

            if _kaleido_available():  # JavaScript off: the static images stand in for the figures
                ctx = browser.new_context(java_script_enabled=False)
                still = ctx.new_page()
                still.goto(report.as_uri(), timeout=60_000)
                widths = still.evaluate("() => Array.from(document.querySelectorAll('.peagle-plot img'))"
                                        ".map(i => i.naturalWidth)")
                assert widths == [900, 900]
                ctx.close()
        finally:
            browser.close()
    assert fetched == []
