"""The dashboard's comparison of runs: ``/compare?runs=ID,ID`` is the report's page of those runs together.

The page is :func:`rlvitals.report.html.render_html` of the report's page model built over several runs (what
``rlvitals report A B`` writes: every chart overlays the runs, the comparison section holds the final/best
table and the config diff), served as a run page is (:mod:`.page`: Plotly from this server, the dashboard's
stylesheet), with a bar naming the runs in place of a run's live bar. Each run in the page data carries its API
path (:func:`with_apis`), so a zoomed chart fetches each line's range at full resolution from its own run.
``compare.js`` keeps it current: when one of the runs has a newer reading it fetches the page again and swaps its
``<main>`` in, keeping the reader's zoom and open layers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .page import WORDS, _page, served_report
from .security import AccessError

if TYPE_CHECKING:
    from .listing import Served
    from .workspace import Workspace

__all__ = ["IDS_PATTERN", "compare_html", "compare_ids", "compare_page", "compared", "with_apis"]

#: what ``/api/compare`` accepts (its schema says it): two or more ids, comma-separated
IDS_PATTERN = r"^[^,]*[^,\s][^,]*(,[^,]*[^,\s][^,]*)+$"


def compare_ids(text: str) -> list[str]:
    """The run ids of ``?runs=`` (comma-separated, in order; a run named twice is compared with itself); fewer
    than two is refused (400).

    Example:
        >>> compare_ids("ab, cd,")
        ['ab', 'cd']
    """
    ids = [part.strip() for part in text.split(",") if part.strip()]
    if len(ids) < 2:
        got = f"got {len(ids)}" + (f": {ids[0]!r}" if ids else "")
        raise AccessError(400, f"compare: pick two or more runs to compare ({got}); tick them on the run list at / "
                               "and press Compare, or open /compare?runs=ID,ID with ids from GET /api/runs")
    return ids


def compared(ws: Workspace, text: str) -> list[Served]:
    """The served runs ``?runs=`` names, ready; an id the workspace does not serve is refused (404) by name,
    a run still being read again after a restart with 503."""
    out = []
    for rid in compare_ids(text):
        try:
            out.append(ws.get(rid))
        except AccessError as err:
            if err.status != 404:
                raise
            raise AccessError(404, f"compare: no run {rid!r} in this workspace; pick runs from the list at / "
                                   "(GET /api/runs lists their ids)") from err
    return out


def compare_page(ws: Workspace, served: Sequence[Served]) -> dict[str, Any]:
    """The report's page model of ``served`` together, built once per set of their versions."""
    from ..report.model import build_page

    labels = ws.labels()
    key = "compare:" + ",".join(s.id for s in served)

    def build() -> dict[str, Any]:
        runs = [s.run for s in served]
        diagnoses = [s.diagnosis for s in served]
        assert all(r is not None for r in runs) and all(d is not None for d in diagnoses)  # ready runs only
        return build_page(runs, diagnoses, [s.rollouts for s in served],  # type: ignore[arg-type]
                          labels=[labels[s.id] for s in served])

    page: dict[str, Any] = ws.memo(key, served[0], build, tuple((s.id, s.version) for s in served))
    return page


def compare_html(page: Mapping[str, Any], served: Sequence[Served], labels: Mapping[str, str],
                 lang: str = "en") -> str:
    """The comparison page in ``lang``: the report of ``page`` with Plotly from this server, the dashboard's
    stylesheet, the bar naming the runs (``labels``: run id → name) and ``compare.js``.

    Example:
        >>> from rlvitals.diagnosis import diagnose
        >>> from rlvitals.report.model import build_page
        >>> from rlvitals.server.listing import Served
        >>> from rlvitals.synthetic.scenarios import run_from_series
        >>> a, b = run_from_series({"actor/entropy": [1.0, 0.9]}), run_from_series({"actor/entropy": [1.0, 0.5]})
        >>> s = [Served(i, r.path, 0, 1, 2, "ok", 1, 0.0, r) for i, r in (("aa", a), ("bb", b))]
        >>> html = compare_html(build_page([a, b], [diagnose(a), diagnose(b)]), s, {"aa": "A", "bb": "B"})
        >>> 'data-runs="aa,bb"' in html, "/static/compare.js" in html, "cdn.plot.ly" in html
        (True, True, False)
    """
    bar = _page("compare.html.j2").render(served=served, labels=labels, words=WORDS)
    return served_report(with_apis(page, served), lang, bar, "compare.js")


def with_apis(page: Mapping[str, Any], served: Sequence[Served]) -> dict[str, Any]:
    """``page`` with each run's API path (``runs[i].api``, the run ``served[i]``), so a zoomed chart fetches each
    line's range from its own run (``/api/runs/{id}/series``); a copy: the page model is shared (memoised).

    Example:
        >>> from rlvitals.server.listing import Served
        >>> page = {"runs": [{"id": "r0"}, {"id": "r1"}]}
        >>> s = [Served(i, "x.log", 0, 1, 2, "ok", 1, 0.0) for i in ("aa", "bb")]
        >>> [r["api"] for r in with_apis(page, s)["runs"]], "api" in page["runs"][0]
        (['/api/runs/aa', '/api/runs/bb'], False)
    """
    runs = [{**r, "api": f"/api/runs/{s.id}"} for r, s in zip(page["runs"], served, strict=True)]
    return {**page, "runs": runs}
