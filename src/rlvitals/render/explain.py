"""What ``rlvitals explain`` prints: one metric of the catalog, or the list of them all."""

from __future__ import annotations

import io
from typing import Any

from rich.table import Table
from rich.text import Text

from .console import WIDTH, console
from .said import ENGLISH_ORIGINAL

__all__ = ["render_explain", "render_list"]

#: the words of ``explain``, per language; a key list is joined with spaces around its separator so that
#: rich wraps a key whole, never cuts it
_EXPLAIN = {
    "en": {"layer": "layer {v}", "scale": "scale {v}", "scope": "over {v}", "varies": "varies across {v}",
           "measures": "measures {v}", "unit": "unit {v}", "healthy": "healthy: ", "direction": "over training: ",
           "next": "check next: ", "aliases": "aliases: ", "keys": ", ", "alias": "{name} ({where})", "any": "any"},
    "zh": {"layer": "所在层：{v}", "scale": "尺度：{v}", "scope": "统计范围：{v}", "varies": "波动来源：{v}",
           "measures": "衡量：{v}", "unit": "单位：{v}", "healthy": "健康范围：", "direction": "正常走势：",
           "next": "接着看：", "aliases": "别名：", "keys": " · ", "alias": "{name}（{where}）", "any": "各框架通用"},
}


def _placement(info: dict[str, Any], lang: str) -> str:
    """The metric's layer, scale, axes and unit on one line, each in ``lang``."""
    from ..catalog import load_catalog

    catalog, w, axes = load_catalog(), _EXPLAIN[lang], info["axes"]
    layer = catalog.layers[info["layer"]].short("zh") if lang == "zh" else info["layer"]
    unit = catalog.units_zh.get(info["unit"], info["unit"]) if lang == "zh" else info["unit"]
    parts = [w["layer"].format(v=layer), w["scale"].format(v=catalog.words("axis", info["scale"], lang)),
             w["scope"].format(v=catalog.words("axis", axes["scope"], lang)),
             w["varies"].format(v=catalog.words("axis", axes["varies"], lang)),
             w["measures"].format(v=catalog.words("measures", axes["measures"], lang))]
    return " · ".join(parts + ([w["unit"].format(v=unit)] if unit else []))


def render_explain(info: dict[str, Any], color: bool = False, width: int = WIDTH, lang: str = "en") -> str:
    """What ``rlvitals explain`` prints: the metric's name, how the key was reached, its place in the
    layers and the multi-scale view, what it means and how to read it, its healthy range and course,
    what to check next and its aliases. ``info`` is :func:`~rlvitals.catalog.lookup.explain` in ``lang``."""
    from ..catalog import load_catalog

    w = _EXPLAIN[lang]
    buf = io.StringIO()
    con = console(buf, color, width)
    con.print(Text(f"{info['key']} — {info['name']}", style="bold"))
    for line in info["resolved"]:  # an alias's note is English only: unwrapped, the terminal wraps it
        con.print(Text(f"  {line}", style="dim"), soft_wrap=ENGLISH_ORIGINAL in line)
    con.print(Text(_placement(info, lang)))
    con.print()
    con.print(Text(info["meaning"]))
    con.print()
    con.print(Text(info["read"]))
    if info["healthy"]:
        lo, hi = info["healthy"]["low"], info["healthy"]["high"]
        con.print(Text(f"\n{w['healthy']}{'' if lo is None else lo} … {'' if hi is None else hi}"))
    if info["direction"]:
        con.print(Text(w["direction"] + load_catalog().words("direction", info["direction"], lang)))
    if info["next"]:
        con.print(Text(w["next"] + w["keys"].join(info["next"])))
    if info["aliases"]:
        names = [w["alias"].format(name=a.get("name") or a.get("pattern"),
                                   where=w["any"] if a["framework"] == "any" else a["framework"])
                 for a in info["aliases"]]
        con.print(Text(w["aliases"] + w["keys"].join(names), style="dim"))
    return buf.getvalue()


#: the headers of ``explain --list``
_LIST_HEADERS = {"en": ("layer", "scale", "key", "name"), "zh": ("层", "尺度", "指标", "名称")}


def render_list(rows: list[dict[str, str]], color: bool = False, width: int = WIDTH, lang: str = "en") -> str:
    """``explain --list``: every metric with its layer, scale and name (``rows`` of ``list_metrics(lang)``)."""
    from ..catalog import load_catalog

    catalog = load_catalog()
    buf = io.StringIO()
    con = console(buf, color, width)
    table = Table(show_header=True, header_style="bold", box=None, padding=(0, 1))
    for col in _LIST_HEADERS[lang]:
        table.add_column(col, overflow="fold")
    for row in sorted(rows, key=lambda r: (r["layer"], r["key"])):
        layer = catalog.layers[row["layer"]].short(lang).split()[0] if lang == "zh" else row["layer"]
        table.add_row(layer, catalog.words("axis", row["scale"], lang), row["key"], row["name"])
    con.print(table)
    return buf.getvalue()
