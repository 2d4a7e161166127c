"""The dashboard's HTML: the run list, and a run's page — the report's own page, served live.

A run page is :func:`rlvitals.report.html.render_html` of the report's page model (in the reader's
language), changed in four places only: Plotly comes from this server (``/static/``, cached by the
browser) instead of being inlined, and runs at the end of the body instead of in the head (so it does
not hold back the first paint); the dashboard's stylesheet joins the head; a live bar (last step,
verdict) opens the body; ``live.js`` closes it. ``live.js`` polls
``/api/events``; when the run has a newer version it fetches the page again and swaps its ``<main>``
in, so findings, verdicts and charts all come from the same templates as the report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from jinja2 import Template

from ..catalog.catalog import load_catalog
from ..diagnosis import LAYER_NAMES
from ..errors import RlvitalsError
from ..report.html import STATUS, UI, jinja_env, page_script, plotly_bundle, render_html
from ..words import Words, in_lang
from .alert_files import Said
from .listing import Served
from .security import AccessError

#: where a run page loads Plotly from: this server, with the bundle's digest in the URL, so a browser keeps it a
#: year (the static route answers such a URL as immutable) and a new rlvitals with another bundle is fetched anew
PLOTLY_PATH = f"/static/plotly.min.js?v={plotly_bundle().digest}"
_DATA = '<script type="application/json" id="rlv-data">'
LANGS = ("en", "zh")
#: the reader's language, set by the pages' switch (and by ?lang=): the server renders pages in it, so a
#: run page opened from the Chinese run list is Chinese from its first paint
LANG_COOKIE = "rlvitals_lang"
#: the dashboard's own words, (English, Chinese); the run pages' come from the report (``report.html.UI``)
WORDS: dict[str, tuple[str, str]] = {
    "runs": ("Runs", "训练列表"),
    "serving": ("Serving", "正在服务的目录"),
    "run": UI["run"], "framework": UI["framework"], "algorithm": UI["algorithm"], "verdict": UI["verdict"],
    "last_step": ("last step", "最新步"),
    "findings": ("findings", "发现"),
    "root_cause": ("root cause", "根本原因"),
    "since": ("since step {}", "自第 {} 步"),
    "and_more": ("+{} it explains", "另有 {} 项由它引起"),
    "fail_n": ("{} fail", "{} 项失败"),
    "warn_n": ("{} warn", "{} 项警告"),
    "note_n": ("{} note", "{} 项提示"),
    "loading": ("loading (was {})", "读取中（之前为{}）"),
    "unreadable": ("Could not be read:", "无法读取："),
    "stale": ("Stale: the last good reading is shown, because", "已过时：显示的是上次成功读取的内容，因为"),
    "no_run": ("No run yet: waiting for logs to be written.", "还没有训练：等待日志写入。"),
    "reading_k": ("Reading the logs: {} of {} read; the list grows as they are.",
                  "正在读取日志：已读 {} / {} 个，列表随之增加。"),
    "sort": ("Order:", "排序："),
    "sort_updated": ("last written first", "最近写入的在前"),
    "sort_name": ("by name", "按名称"),
    "notes": UI["notes"],
    "back": ("← runs", "← 训练列表"),
    "step": UI["step"],
    "live_list": ("updates while the logs grow", "日志增长时自动更新"),
    "live_run": ("updates while the log grows", "日志增长时自动更新"),
    "reading": ("Reading the log of {} again; last seen at step {}. This page reloads when it is ready.",
                "正在重新读取 {} 的日志；上次读到第 {} 步。读完后本页会自动刷新。"),
    "alerts": ("Alerts", "告警"),
    "alerts_from": ("said by rlvitals watch, newest first", "由 rlvitals watch 发出，最新的在前"),
    "alerts_own": ("as rlvitals watch would say them, decided by this dashboard while the log grew; newest first",
                   "按 rlvitals watch 的规则，由本看板在日志增长时判定；最新的在前"),
    "was": ("was", "之前为"),
    "since_step": ("since step", "始于第"),
    # the run list's picker and the comparison's bar (server/compare.py)
    "pick": ("compare", "对比"),
    "pick_run": ("pick {} to compare", "选中 {} 参与对比"),
    "filter": ("Filter:", "筛选："),
    "filter_hint": ("name, verdict or algorithm", "名称、结论或算法"),
    "compare": ("Compare", "对比"),
    "compare_pick": ("tick two or more runs, then Compare", "勾选两个或更多训练，再点“对比”"),
    "comparing": ("Comparing", "正在对比"),
}
#: what each kind of alert says on a run's page
KINDS: dict[str, tuple[str, str]] = {"new": ("raised", "告警"), "escalated": ("escalated", "升级"),
                                     "again": ("again", "再次出现"), "cleared": ("cleared", "已解除")}
#: a layer's column head (the layer's id; "efficiency" is a word) and its name as the head's hover title
HEADS: dict[str, tuple[tuple[str, str], tuple[str, str]]] = {
    layer: (UI["efficiency"] if layer == "efficiency" else (layer, layer), names)
    for layer, names in LAYER_NAMES.items()}




@lru_cache(maxsize=1)
def _plotly_cdn() -> str:
    """The ``<script src>`` that ``render_html(..., cdn=True)`` writes, which a run page replaces."""
    return f'<script src="{plotly_bundle().cdn}" charset="utf-8"></script>'


def pick_lang(asked: str | None, remembered: str | None) -> str:
    """The language to render a page in: ``?lang=`` when given (it must be en or zh), else the reader's
    remembered choice (the cookie; anything else there is ignored), else English.

    Example:
        >>> pick_lang(None, "zh"), pick_lang("en", "zh"), pick_lang(None, "fr")
        ('zh', 'en', 'en')
    """
    if asked is not None and asked not in LANGS:
        raise AccessError(400, f"lang {asked!r}: expected en or zh; open the page with ?lang=en or ?lang=zh")
    if asked is not None:
        return asked
    return remembered if remembered in LANGS else "en"


def run_html(page: Mapping[str, Any], served: Served, lang: str = "en", error: str | None = None,
             alerts: Sequence[Said] = (), by_watch: bool = True) -> str:
    """The live page of one run in ``lang`` (see the module docstring); ``error`` says why the reading shown
    is stale (the live bar marks it), or is None; ``alerts``: what ``rlvitals watch`` said of the run
    (:mod:`.alert_files`), or with ``by_watch=False`` what the dashboard decided by its rules (:mod:`.live_alerts`),
    listed under the story (the verdict and root cause come first) inside ``<main>``.

    Example:
        >>> from rlvitals.diagnosis import diagnose
        >>> from rlvitals.synthetic.pathologies import Spec, scenario
        >>> from rlvitals.report.model import build_page
        >>> from rlvitals.synthetic.scenarios import run_from_series
        >>> run = run_from_series(scenario(Spec(steps=200, seed=1, pathology="entropy_collapse", at=120)))
        >>> d = diagnose(run)
        >>> s = Served("ab", run.path, 0, 3, 200, d.verdict, 1, 0.0, run, d)
        >>> html = run_html(build_page([run], [d]), s)
        >>> 'data-version="3"' in html, "/static/live.js" in html, "/static/serve.css" in html, "cdn.plot.ly" in html
        (True, True, True, False)
    """
    bar = _page("live.html.j2").render(s=served, status=STATUS, words=WORDS, loading=False, error=error,
                                       error_zh=in_lang(error, "zh"))
    html = served_report(page, lang, bar, "live.js")
    if alerts:
        said = _page("alerts.html.j2").render(alerts=alerts, by_watch=by_watch, kinds=KINDS, status=STATUS,
                                                  words=WORDS)
        # after the story: the verdict and the root cause stay on the first screen however many alerts there are
        story = html.find('<section id="story"')
        after = html.find("</section>", story) + len("</section>") if story >= 0 else -1
        html = (html[:after] + "\n" + said + html[after:] if story >= 0
                else html.replace("<main>", "<main>\n" + said, 1))
    return html


def served_report(page: Mapping[str, Any], lang: str, bar: str, script: str) -> str:
    """The report of ``page`` in ``lang`` as this server serves it (a run page, a comparison): Plotly from
    ``/static/`` instead of inlined, the dashboard's stylesheet, ``bar`` opening the body and the static
    ``script`` that keeps the page current closing it."""
    html = render_html({**page, "meta": {**page["meta"], "lang": lang}}, cdn=True)
    cdn, inline = _plotly_cdn(), f"<script>{page_script()}</script>"
    if html.count(cdn) != 1 or html.count(inline) != 1 or "<body>\n" not in html or html.count(_DATA) != 1:
        raise RlvitalsError(Words("serve: the report template no longer has the Plotly <script src>, the page data "
                                  "or the inline page script this server expects; update rlvitals/server/page.py "
                                  "with rlvitals/report",
                                  "serve：报告模板里不再有本服务所需的 Plotly <script src>、页面数据或内联页面脚本；"
                                  "请随 rlvitals/report 一起更新 rlvitals/server/page.py"))
    # Plotly in <head> blocks the first paint until it has run; just before the data it still runs before the
    # report script, while the page above it is already shown
    html = html.replace(cdn, f'<link rel="preload" href="{PLOTLY_PATH}" as="script">', 1)
    html = html.replace(_DATA, f'<script src="{PLOTLY_PATH}" charset="utf-8"></script>\n{_DATA}', 1)
    # the live bar's look (dark, as on the run list); the report's own styles are inline
    html = html.replace("</head>", '<link rel="stylesheet" href="/static/serve.css">\n</head>', 1)
    html = html.replace("<body>\n", "<body>\n" + bar, 1)
    end = html.rfind("</body>")
    return html[:end] + f'<script src="/static/{script}"></script>\n' + html[end:]


def _page(name: str) -> Template:
    """A template of the dashboard, from the one environment the report uses too."""
    return jinja_env("rlvitals.server").get_template(name)


def loading_html(served: Served, lang: str = "en") -> str:
    """A run remembered from the state file whose log is still being read: it reloads when ready."""
    return _page("loading.html.j2").render(s=served, status=STATUS, words=WORDS, lang=lang,
                                                         loading=True, error=None, error_zh=None)


def index_html(runs: Sequence[Mapping[str, Any]], roots: Sequence[str], messages: Sequence[str],
               layers: Sequence[str], lang: str = "en", sort: str = "updated",
               progress: Mapping[str, int] | None = None) -> str:
    """The run list in ``lang`` (the switch changes it in place): every run with its verdict per layer,
    linked to its page, in the order ``runs`` come in; ``sort`` names that order, and links offer the
    other (``?sort=updated``: last written first; ``?sort=name``); ``progress`` (``read`` of ``total``
    logs): "reading k of N" above the list while some are still being read.

    Example:
        >>> html = index_html([], ["/runs"], [], ["L5", "L1"], lang="zh", sort="name")
        >>> "/runs" in html and 'id="rlv-live"' in html and 'data-lang="zh"' in html
        True
        >>> '<a href="?sort=name" aria-current="true">' in html
        True
        >>> "L5 generalisation · L1 stability" in html   # the layer columns' key, in the order of the columns
        True
    """
    said = [(str(m), in_lang(m, "zh")) for m in messages]  # each note in both languages; the switch picks one
    # the layer columns are headed by their ids to keep the table narrow; a key above it names them
    layers_known = load_catalog().layers
    key = [(layers_known[lay].short_en, layers_known[lay].short_zh) for lay in layers
           if lay != "efficiency" and lay in layers_known]
    return _page("index.html.j2").render(runs=runs, roots=roots, messages=said, layers=layers,
                                         status=STATUS, words=WORDS, heads=HEADS, layer_key=key, lang=lang, sort=sort,
                                         progress=progress)
