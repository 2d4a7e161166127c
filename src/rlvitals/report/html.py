"""The page model as one self-contained HTML file: jinja2 templates, the data as embedded JSON, and a
small script that draws the charts client-side with Plotly (its basic bundle, vendored in ``vendor/``,
inlined; or its CDN ``<script src>`` with ``cdn=True`` for a small file).

Nothing is computed here. Every string from a log or a rollout is escaped: the templates autoescape,
the embedded JSON escapes ``<``, ``>``, ``&`` and U+2028/U+2029, and the script puts rollout text
into the page with ``textContent`` only.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from jinja2 import ChoiceLoader, Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape

from ..checks import FINDING_STATUSES
from ..errors import RlvitalsError
from ..render import STORY_WORDS, json_dumps, shown
from ..render.diagnosis import when_words
from ..rollout import EXTREME_WHY
from ..words import Words

if TYPE_CHECKING:
    from ..rollout import Progress

_SEPARATORS = re.compile(r"([_./-]+)")
_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
UI: dict[str, tuple[str, str]] = {
    "title": ("rlvitals report", "rlvitals 训练诊断报告"),
    "verdict": ("verdict", "结论"),
    "runs": ("Runs", "训练"),
    "run": ("run", "训练"),
    "framework": ("framework", "框架"),
    "algorithm": ("algorithm", "算法"),
    "efficiency": ("efficiency", "效率"),
    "stack_share": ("% of the logged phases", "各阶段耗时占比"),
    "charts_elsewhere": ("The curves this layer's checks read are in other sections:",
                         "这一层的检查所读的曲线在其他部分："),
    "rollout_curves": ("Curves from the rollouts (in the sections of their layers)",
                       "由 rollout 计算的曲线（在各自所属的层里）"),
    "steps": ("steps", "步"),
    "metrics": ("metrics", "指标"),
    "findings": ("Findings", "发现"),
    "others": ("Passed and skipped checks", "通过与跳过的检查"),
    "advice": ("Advice", "建议"),
    "evidence": ("Evidence", "证据"),
    "charts": ("Curves", "曲线"),
    "validation": ("Validation per data source", "按数据源的验证集"),
    "forecast": ("Forecast: where the entropy says the run tops out", "预测：从熵看这次训练最终能到多高"),
    "sigma_g": ("σ_G across groups: concentrated at 0, spread or bimodal", "组间 σ_G 分布：集中在 0、分散还是双峰"),
    "sigma_readings": ("What each shape means (multi-scale view §4)", "每种形状的含义（多尺度视角 §4）"),
    "no_charts": ("This run logged no metric of this layer.", "本次训练没有记录这一层的指标。"),
    "rollouts": ("Rollouts", "Rollout 样本"),
    "rollouts_at": ("rollouts at step", "该步的 rollout"),
    # a spike finding's extreme rollouts (rlvitals.diagnosis.with_rollouts), each with why it was picked
    "spike_rollouts": ("Extreme rollouts of the spike steps", "尖峰所在步的极端 rollout"),
    **{f"why_{key}": (str(words), words.zh) for key, words in EXTREME_WHY.items()},
    "reward": ("reward", "reward"),
    "advantage": ("advantage", "优势"),
    "group_z": ("z in its group", "组内 z 值"),
    "length": ("length", "长度"),
    "group_of": ("group of", "所在组："),
    "on_chart": ("{} on the chart", "图上的 {}"),  # {}: the finding's metrics that chart draws
    "comparison": ("Comparison of runs", "多次训练对比"),
    "per_token_missing": ("No run logged per-token timings (timing_per_token_ms/*): compare step times with care.",
                          "没有训练记录每 token 耗时（timing_per_token_ms/*）：比较步耗时时要谨慎。"),
    "glossary": ("Metric glossary", "指标释义"),
    "meaning": ("Meaning", "含义"),
    "read": ("How to read it", "怎么看"),
    "points": ("points shown of", "个点，共"),
    "nonfinite": ("not finite", "个非有限值"),
    "step": ("step", "步"),
    "notes": ("Notes", "说明（英文原文）"),  # the readers write their notes in English only
    "skipped_families": ("Not computed", "未计算（原因为英文原文）"),
    "controls": ("Chart controls", "图表控制"),
    "search": ("Find a metric", "查找指标"),
    "smoothing": ("Smoothing", "平滑"),
    "x_axis": ("x axis", "横轴"),
    "elapsed": ("elapsed time (h)", "已用时间（小时）"),
    "wall_clock": ("wall-clock time (UTC)", "实际时间（UTC）"),
    "tokens_seen": ("tokens trained on", "已训练 token 数"),
    "reset_zoom": ("Reset zoom", "还原缩放"),
    "log_scale": ("Logarithmic y axis", "纵轴取对数"),
    "overview": ("The curves to read first", "先看这几条曲线"),
    "overview_many": ("The curves to read first, runs overlaid", "先看这几条曲线（多次训练叠加）"),
    "overview_missing": ("Not logged by any run:", "所有训练都没有记录："),
    "clock_from": ("Elapsed time: the log's own timestamps where it has them (TensorBoard, W&B, MLflow: real time, "
                   "validation and checkpoints included), else the sum of each step's time:",
                   "已用时间：日志自带时间戳的（TensorBoard、W&B、MLflow）按实际经过的时间算，验证和存 checkpoint "
                   "的时间都算在内；没有的由每步耗时累加而得："),
    "no_match": ("No chart matches.", "没有匹配的图表。"),
    "story": ("Diagnosis: the root cause first", "诊断：先看根本原因"),
    **{f"story_{key}": (STORY_WORDS["en"][key], STORY_WORDS["zh"][key])
       for key in ("root", "others", "followed", "timeline", "todo", "root_mark", "finding", "because", "step")},
}
STATUS: dict[str, tuple[str, str]] = {"fail": ("FAIL", "失败"), "warn": ("WARN", "警告"), "note": ("NOTE", "提示"),
                                      "ok": ("OK", "正常"), "skipped": ("SKIPPED", "跳过")}


def safe_json(obj: Any) -> str:
    """JSON to embed inside ``<script type="application/json">``: no ``</script>``, comment opener or
    line separator can end the block or the script early.

    Example:
        >>> safe_json({"t": "</script><b>&"})
        '{"t":"\\\\u003c/script\\\\u003e\\\\u003cb\\\\u003e\\\\u0026"}'
    """
    text = json_dumps(obj).decode()
    for char, escaped in _JSON_ESCAPES.items():
        text = text.replace(char, escaped)
    return text


def breakable(name: str) -> Markup:
    """``name`` escaped, with a line-break opportunity (``<wbr>``) after each run of ``_ . / -``: a long
    run name (a file name without spaces) wraps at its separators in a narrow column, not mid-word.

    Example:
        >>> str(breakable("ppo__run<1>.log"))
        'ppo__<wbr>run&lt;1&gt;.<wbr>log'
    """
    return Markup(_SEPARATORS.sub(r"\1<wbr>", str(escape(name))))


@lru_cache(maxsize=4)
def jinja_env(package: str = "rlvitals.report") -> Environment:
    """The one way pages are templated (the report's and the dashboard's): the ``templates`` folder of
    ``package``, then the report's (the pieces every page shares: ``theme.html.j2``), strict about undefined
    names, escaping everything, with the ``breakable`` filter, the statuses a finding is listed with
    (``finding_statuses``, worst first, from :mod:`rlvitals.checks`) and the theme's head script (``theme_js``)."""
    loader = ChoiceLoader([PackageLoader(package, "templates"), PackageLoader("rlvitals.report", "templates")])
    env = Environment(loader=loader, undefined=StrictUndefined,
                      autoescape=select_autoescape(default=True, default_for_string=True), trim_blocks=True,
                      lstrip_blocks=True)
    env.filters["breakable"] = breakable
    env.globals["finding_statuses"] = FINDING_STATUSES
    env.globals["theme_js"] = theme_script()
    return env


def _script(name: str) -> str:
    text = resources.files("rlvitals.report").joinpath("templates", name).read_text(encoding="utf-8")
    return _inline(text)


@lru_cache(maxsize=1)
def theme_script() -> str:
    """The colour theme's script (``templates/js/theme.js``), inlined in the ``<head>`` of the report and of
    every dashboard page so the first paint has the reader's theme; ``rlvitals serve`` allows it by hash.

    Example:
        >>> "localStorage" in theme_script(), "</" in theme_script()
        (True, False)
    """
    return _script("js/theme.js")


#: the parts of the page script, in the order they are joined (each may use what an earlier one defines)
SCRIPT_PARTS = ("common.js", "charts.js", "controls.js", "lang.js", "rollouts.js", "main.js")


@lru_cache(maxsize=1)
def page_script() -> str:
    """The report's page script: its parts (``templates/js``) joined into one function scope, made safe
    to inline. The report inlines it and ``rlvitals serve`` serves it, byte for byte the same."""
    folder = resources.files("rlvitals.report").joinpath("templates", "js")
    parts = [folder.joinpath(name).read_text(encoding="utf-8") for name in SCRIPT_PARTS]
    return _inline("// rlvitals report (" + ", ".join(SCRIPT_PARTS) + ")\n(function () {\n  \"use strict\";\n"
                   + "\n".join(parts) + "})();\n")


def _inline(js: str) -> str:
    """A script's text made safe to sit inside ``<script>…</script>`` (``</`` cannot close it early)."""
    return js.replace("</", "<\\/")


#: plotly.js's basic partial bundle (scatter, bar, pie and the core), vendored beside this module with its licence
#: and source (``vendor/SOURCE.md``): every chart the page script draws is a scatter trace with shapes,
#: annotations and linear, log or date axes, and the basic bundle is a quarter of the full one
PLOTLY_BUNDLE = "plotly-basic.min.js"
_BUNDLE_HEAD = re.compile(r"plotly\.js \(basic - minified\) v(\d+\.\d+\.\d+)")


class Bundle(NamedTuple):
    """The vendored Plotly: its ``text``, plotly.js ``version``, ``digest`` (the first 16 hex digits of the
    sha256 of its UTF-8 bytes: a URL that carries it never names another bundle) and the ``cdn`` URL of the
    same file."""

    text: str
    version: str
    digest: str
    cdn: str


@lru_cache(maxsize=1)
def plotly_bundle() -> Bundle:
    """The Plotly the report inlines and ``rlvitals serve`` serves (see ``PLOTLY_BUNDLE``).

    Example:
        >>> b = plotly_bundle()
        >>> b.cdn == f"https://cdn.plot.ly/plotly-basic-{b.version}.min.js", len(b.digest)
        (True, 16)
    """
    data = resources.files("rlvitals.report").joinpath("vendor", PLOTLY_BUNDLE).read_bytes()
    head = _BUNDLE_HEAD.search(data[:200].decode("ascii", "replace"))
    if head is None:  # pragma: no cover - the file ships with the package
        raise RlvitalsError(Words(f"report: rlvitals/report/vendor/{PLOTLY_BUNDLE} is not plotly.js's basic bundle; "
                                  "this install is broken: pip install --force-reinstall rlvitals",
                                  f"report：rlvitals/report/vendor/{PLOTLY_BUNDLE} 不是 plotly.js 的 basic 包；"
                                  "这次安装已损坏：pip install --force-reinstall rlvitals"))
    version = head.group(1)
    return Bundle(data.decode("utf-8"), version, hashlib.sha256(data).hexdigest()[:16],
                  f"https://cdn.plot.ly/plotly-basic-{version}.min.js")


def _plotly(cdn: bool) -> tuple[str, str]:
    """``(inline source, CDN url)``: one of them is empty."""
    bundle = plotly_bundle()
    return ("", bundle.cdn) if cdn else (_inline(bundle.text), "")


def _names(page: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """``{key: {"en": name, "zh": name}}`` for every key in the glossary."""
    out = {}
    for entry in page["glossary"]:
        for key in entry["keys"]:
            out[key] = {"en": entry["en"]["name"], "zh": entry["zh"]["name"]}
    return out


def when(f: Mapping[str, Any]) -> dict[str, str] | None:
    """A finding's onset and span (or the steps of its point events) in words, both languages, as the
    terminal says them; None when it has no onset.

    Example:
        >>> when({"onset": 95, "span": [95, 210], "points": [95, 140, 210]})["en"]
        'at steps 95, 140, 210'
    """
    return when_words(f["onset"], f["span"], f.get("points", ()))


def search_text(chart: Mapping[str, Any], names: Mapping[str, Mapping[str, str]]) -> str:
    """What the metric search of a page matches a chart by, lower case: its keys, its lines' names, its
    title and the catalog's names of its keys in both languages.

    Example:
        >>> search_text({"keys": ["actor/entropy"], "traces": [{"name": "actor/entropy"}], "title": None},
        ...             {"actor/entropy": {"en": "Entropy", "zh": "熵"}})
        'actor/entropy entropy 熵'
    """
    words = [*chart["keys"], *(t["name"] for t in chart["traces"])]
    if chart.get("title"):
        words += [chart["title"]["en"], chart["title"]["zh"]]
    words += [names[k][lang] for k in chart["keys"] if k in names for lang in ("en", "zh")]
    return " ".join(dict.fromkeys(w.lower() for w in words))


def render_html(page: Mapping[str, Any], *, cdn: bool = False) -> str:
    """The report as one HTML document (see the module docstring).

    Example:
        >>> from rlvitals.diagnosis import diagnose
        >>> from rlvitals.synthetic.pathologies import Spec, scenario
        >>> from rlvitals.report.model import build_page
        >>> from rlvitals.synthetic.scenarios import run_from_series
        >>> run = run_from_series(scenario(Spec(steps=200, seed=1, pathology="entropy_collapse", at=120)))
        >>> html = render_html(build_page([run], [diagnose(run)]), cdn=True)
        >>> html.startswith("<!doctype html>"), 'id="layer-L5"' in html
        (True, True)
    """
    inline, src = _plotly(cdn)
    data = {"charts": page["charts"], "rollouts": page["rollouts"], "clocks": page["clocks"],
            "tokens": page.get("tokens") or {},
            # a served comparison names each run's API path (server/compare.py): a zoom fetches from it
            "runs": [{"id": r["id"], "label": r["label"], **({"api": r["api"]} if r.get("api") else {})}
                     for r in page["runs"]]}
    html = jinja_env().get_template("report.html.j2").render(
        page=page, ui=UI, status=STATUS, names=_names(page), when=when, search=search_text, plotly_inline=inline,
        plotly_src=src,
        data_json=safe_json(data), report_js=page_script(), report_css=_script("report.css"))
    return shown(html)  # a file name that is not UTF-8 (a path in a heading, a note) as \xNN: the page is UTF-8


def write_report(path: str | Path, page: Mapping[str, Any], *, cdn: bool = False,
                 progress: Progress | None = None) -> int:
    """Render ``page`` and write it to ``path``; returns the bytes written. ``progress`` is told
    ``("writing", 0, 1)`` before and ``("writing", 1, 1)`` once the file is written."""
    target = Path(path)
    if not target.parent.is_dir():
        raise RlvitalsError(Words(f"report: cannot write {str(target)!r}: the folder {str(target.parent)!r} does "
                                  "not exist; create it or choose another -o path",
                                  f"report：无法写入 {str(target)!r}：文件夹 {str(target.parent)!r} 不存在；"
                                  "请先创建它，或换一个 -o 路径"))
    if progress is not None:
        progress("writing", 0, 1)
    data = render_html(page, cdn=cdn).encode("utf-8")
    target.write_bytes(data)
    if progress is not None:
        progress("writing", 1, 1)
    return len(data)
