"""The HTML report of an executed series: self-contained, figures drawn by plotly.js in headless Chromium,
a static PNG in place when JavaScript is off, nothing fetched from the network."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from peagle_nb.notebook.authoring import code, md, params, write_notebook
from peagle_nb.notebook.report import PLOTLY_MIME, PNG_MIME, plotly_outputs, write_report
from peagle_nb.notebook.runner import execute_notebook

ARTIFACTS = Path(__file__).resolve().parent.parent / "build" / "test-artifacts"
FIGURES_JS = """() => Array.from(document.querySelectorAll('.peagle-plot')).map(d => ({
    drawn: d.classList.contains('js-plotly-plot'), traces: d.querySelectorAll('.trace').length,
    svgs: d.querySelectorAll('svg.main-svg').length, fallback: !!d.querySelector('.plot-fallback')}))"""


def _kaleido_available() -> bool:
    try:
        import kaleido  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """A small notebook with two plotly figures (a returned figure and fig.show()) and a table, executed."""
    tmp = tmp_path_factory.mktemp("report")
    nb = write_notebook(tmp / "figures.ipynb", [
        md("# Figures\n\nA line and a bar."),
        params("SMOKE = None"),
        code("import pandas as pd\nimport plotly.graph_objects as go\nfrom peagle_nb.notebook import record\n"
             "record('smoke', SMOKE)\ngo.Figure(go.Scatter(x=[1, 2, 3], y=[3, 1, 2], name='tau'))"),
        code("import plotly.io as pio\npio.renderers.default = 'plotly_mimetype+notebook'  # loads its own plotly.js\n"
             "fig = go.Figure(go.Bar(x=['eagle3', 'peagle'], y=[2.6, 3.4]))\nfig.show()\n"
             "pd.DataFrame({'k': [3, 7], 'tau': [2.87, 3.70]})"),
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
            assert all(f["svgs"] >= 1 and not f["fallback"] for f in figures), figures
            assert page.locator("table.dataframe").count() == 1
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
