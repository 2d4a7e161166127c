"""The dashboard's HTML: the run list, and a run's page — the report's own page, served live.

A run page is :func:`rlvitals.report.html.render_html` of the report's page model, changed in three
places only: Plotly comes from this server (``/static/``, cached by the browser) instead of being
inlined, and runs at the end of the body instead of in the head (so it does not hold back the first
paint); a live bar (last step, verdict) opens the body; ``live.js`` closes it. ``live.js`` polls
``/api/events``; when the run has a newer version it fetches the page again and swaps its ``<main>``
in, so findings, verdicts and charts all come from the same templates as the report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib import resources
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from ..errors import RlvitalsError
from ..report.html import STATUS, render_html
from .workspace import Served

PLOTLY_PATH = "/static/plotly.min.js"
_DATA = '<script type="application/json" id="rlv-data">'


@lru_cache(maxsize=1)
def _env() -> Environment:
    return Environment(loader=PackageLoader("rlvitals.server", "templates"), undefined=StrictUndefined,
                       autoescape=select_autoescape(default=True, default_for_string=True), trim_blocks=True,
                       lstrip_blocks=True)


@lru_cache(maxsize=1)
def report_script() -> str:
    """The report's page script exactly as the report inlines it (its CSP hash allows it to run)."""
    text = resources.files("rlvitals.report").joinpath("templates", "report.js").read_text(encoding="utf-8")
    return text.replace("</", "<\\/")


@lru_cache(maxsize=1)
def _plotly_cdn() -> str:
    from plotly.offline import get_plotlyjs_version  # type: ignore[import-untyped]

    return f'<script src="https://cdn.plot.ly/plotly-{get_plotlyjs_version()}.min.js" charset="utf-8"></script>'


def run_html(page: Mapping[str, Any], served: Served) -> str:
    """The live page of one run (see the module docstring).

    Example:
        >>> from rlvitals.diagnosis import diagnose
        >>> from rlvitals.pathologies import Spec, scenario
        >>> from rlvitals.report.model import build_page
        >>> from rlvitals.scenarios import run_from_series
        >>> run = run_from_series(scenario(Spec(steps=200, seed=1, pathology="entropy_collapse", at=120)))
        >>> d = diagnose(run)
        >>> s = Served("ab", run.path, 0, 3, 200, d.verdict, 1, 0.0, run, d)
        >>> html = run_html(build_page([run], [d]), s)
        >>> 'data-version="3"' in html, "/static/live.js" in html, "cdn.plot.ly" in html
        (True, True, False)
    """
    html = render_html(page, cdn=True)
    cdn, script = _plotly_cdn(), f"<script>{report_script()}</script>"
    if html.count(cdn) != 1 or html.count(script) != 1 or "<body>\n" not in html or html.count(_DATA) != 1:
        raise RlvitalsError("serve: the report template no longer has the Plotly <script src>, the page data or the "
                            "inline page script this server expects; update rlvitals/server/page.py with "
                            "rlvitals/report")
    # Plotly (4.6 MB of JS) in <head> blocks the first paint until it has run; just before the data it
    # still runs before the report script, while the page above it is already shown
    html = html.replace(cdn, f'<link rel="preload" href="{PLOTLY_PATH}" as="script">', 1)
    html = html.replace(_DATA, f'<script src="{PLOTLY_PATH}" charset="utf-8"></script>\n{_DATA}', 1)
    bar = _env().get_template("live.html.j2").render(s=served, status=STATUS, loading=False)
    html = html.replace("<body>\n", "<body>\n" + bar, 1)
    end = html.rfind("</body>")
    return html[:end] + '<script src="/static/live.js"></script>\n' + html[end:]


def loading_html(served: Served) -> str:
    """A run remembered from the state file whose log is still being read: it reloads when ready."""
    return _env().get_template("loading.html.j2").render(s=served, status=STATUS, loading=True)


def index_html(runs: Sequence[Mapping[str, Any]], roots: Sequence[str], messages: Sequence[str],
               layers: Sequence[str]) -> str:
    """The run list: every run with its verdict per layer, linked to its page.

    Example:
        >>> html = index_html([], ["/runs"], [], ["L5", "L1"])
        >>> "/runs" in html and 'id="rlv-live"' in html
        True
    """
    return _env().get_template("index.html.j2").render(runs=runs, roots=roots, messages=messages, layers=layers,
                                                       status=STATUS)
