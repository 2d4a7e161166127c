"""Terminal renderings: pure functions from result data to text (rich markup rendered)."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

#: width when the output is not a terminal (files, pipes, tests)
WIDTH = 110


def console(buf: io.StringIO, color: bool, width: int = WIDTH) -> Console:
    """A rich console writing into ``buf``: colour only for a terminal, no environment lookups."""
    return Console(file=buf, width=width, force_terminal=color, color_system="standard" if color else None,
                   highlight=False, soft_wrap=False, _environ={})


def _short(items: list[str], limit: int) -> str:
    if len(items) <= limit:
        return ", ".join(items)
    return ", ".join(items[:limit]) + f", … (+{len(items) - limit} more)"


def render_inspect(summary: dict[str, Any], color: bool = False, width: int = WIDTH) -> str:
    buf = io.StringIO()
    con = console(buf, color, width)
    con.print(Text(summary["path"], style="bold"))
    era = f" ({summary['framework_era']})" if summary.get("framework_era") else ""
    rows = [
        ("format", summary["format"]),
        ("framework", f"{summary['framework']}{era}"),
        ("algorithm", f"{summary['algorithm_label']} [{summary['algorithm']}]"),
        ("steps", f"{summary['steps']} training steps"
                  + (f", {summary['first_step']} → {summary['last_step']}" if summary["steps"] else "")
                  + (f"; {summary['eval_only_steps']} evaluation-only" if summary["eval_only_steps"] else "")),
        ("metrics", f"{len(summary['metrics'])} canonical: {_short(summary['metrics'], 12)}"),
        ("validation", "; ".join(f"{src}: {_short(cols, 4)}" for src, cols in summary["validation"].items())
         or "none logged"),
        ("unmapped", f"{len(summary['unmapped'])}: {_short(summary['unmapped'], 10)}" if summary["unmapped"]
         else "none"),
        ("skipped", f"{summary['skipped']['count']} records" if summary["skipped"]["count"] else "none"),
    ]
    table = Table.grid(padding=(0, 2))
    table.add_column(style="cyan", no_wrap=True)
    table.add_column(overflow="fold")
    for name, value in rows:
        table.add_row(name, value)
    con.print(table)
    for reason in summary["skipped"]["reasons"]:
        con.print(f"  [yellow]skipped[/] {reason}", markup=True, highlight=False)
    for note in summary["notes"]:
        con.print(f"  [yellow]note[/] {note}", markup=True, highlight=False)
    return buf.getvalue()


def render_explain(info: dict[str, Any], color: bool = False, width: int = WIDTH) -> str:
    buf = io.StringIO()
    con = console(buf, color, width)
    con.print(Text(f"{info['key']} — {info['name']}", style="bold"))
    for line in info["resolved"]:
        con.print(Text(f"  {line}", style="dim"))
    con.print(Text(f"layer {info['layer']} · scale {info['scale']} · over {info['axes']['scope']} · "
                   f"varies across {info['axes']['varies']} · measures {info['axes']['measures']}"
                   + (f" · unit {info['unit']}" if info["unit"] else "")))
    con.print()
    con.print(Text(info["meaning"]))
    con.print()
    con.print(Text(info["read"]))
    if info["healthy"]:
        lo, hi = info["healthy"]["low"], info["healthy"]["high"]
        con.print(Text(f"\nhealthy: {'' if lo is None else lo} … {'' if hi is None else hi}"))
    if info["direction"]:
        con.print(Text(f"over training: {info['direction']}"))
    if info["next"]:
        con.print(Text(f"check next: {', '.join(info['next'])}"))
    if info["aliases"]:
        names = [f"{a.get('name') or a.get('pattern')} ({a['framework']})" for a in info["aliases"]]
        con.print(Text(f"aliases: {', '.join(names)}", style="dim"))
    return buf.getvalue()


def render_list(rows: list[dict[str, str]], color: bool = False, width: int = WIDTH) -> str:
    buf = io.StringIO()
    con = console(buf, color, width)
    table = Table(show_header=True, header_style="bold", box=None, padding=(0, 1))
    for col in ("layer", "scale", "key", "name"):
        table.add_column(col, overflow="fold")
    for row in sorted(rows, key=lambda r: (r["layer"], r["key"])):
        table.add_row(row["layer"], row["scale"], row["key"], row["name"])
    con.print(table)
    return buf.getvalue()


def render_rollouts(doc: dict[str, Any], ks: tuple[int, ...], color: bool = False, width: int = WIDTH) -> str:
    """Per-step rollout metrics at a glance: groups, σ_G, zero-variance split, pass@k and maj@k."""
    buf = io.StringIO()
    con = console(buf, color, width)
    con.print(Text(doc["path"], style="bold"))
    kmax = str(max(ks))
    table = Table(show_header=True, header_style="bold", box=None, padding=(0, 1))
    for col in ("step", "groups", "rollouts", "σ_G", "zero-var", "all ✓", "all ✗", "pass@1", f"pass@{kmax}",
                f"maj@{kmax}"):
        table.add_column(col, justify="right")

    def num(v: Any) -> str:
        return "" if v is None or (isinstance(v, float) and v != v) else f"{v:.3g}"

    for row in [*doc["steps"], {**doc["overall"], "step": "all"}]:
        zv = row["zero_variance"]
        table.add_row(str(row["step"]), num(row["groups"]), num(row["rollouts"]),
                      num(row["metrics"].get("group/reward_std/mean")), num(zv.get("share")),
                      num(zv.get("all_correct")), num(zv.get("all_wrong")), num(row["pass@k"].get("1")),
                      num(row["pass@k"].get(kmax)), num(row["maj@k"].get(kmax)))
    con.print(table)
    skipped = doc["skipped"]
    if skipped["count"]:
        con.print(f"  [red]skipped[/] {skipped['count']} line(s) or row(s) of the input:", markup=True,
                  highlight=False)
        for reason in skipped["reasons"]:
            con.print(Text(f"    {reason}"))
        if skipped["count"] > len(skipped["reasons"]):
            con.print(Text(f"    … and {skipped['count'] - len(skipped['reasons'])} more"))
    for line in doc["not_computed"]:
        con.print(f"  [dim]not computed[/] {line}", markup=True, highlight=False)
    for note in doc["notes"]:
        con.print(f"  [yellow]note[/] {note}", markup=True, highlight=False)
    return buf.getvalue()
