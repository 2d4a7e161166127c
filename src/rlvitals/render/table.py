"""The tables of the terminal views: columns that carry their words in both languages, printed only where
they hold a value, and split across several tables when one would not fit the width."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich.cells import cell_len
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

__all__ = ["Col", "Get", "missing", "print_table"]

#: a value getter over one row of a table and how to print it
Get = Callable[[Mapping[str, Any]], Any]
Kind = Literal["int", "num", "text"]


@dataclass(frozen=True)
class Col:
    """A table column: header, value getter, kind, and a legend entry (shown when the column is)."""

    header: str
    get: Get
    kind: Kind = "num"
    legend: str = ""
    left: bool = False
    #: the header and the legend in Chinese (the English ones when not given: a key, a formula)
    header_zh: str = ""
    legend_zh: str = ""

    def words(self, lang: str) -> tuple[str, str]:
        """The header and the legend in ``lang``."""
        if lang == "zh":
            return self.header_zh or self.header, self.legend_zh or self.legend
        return self.header, self.legend


def missing(v: Any) -> bool:
    """No value: ``None`` or NaN."""
    return v is None or (isinstance(v, float) and v != v)


def _cell(v: Any, kind: Kind) -> str:
    if missing(v):
        return ""
    if kind == "text":
        return str(v)
    if kind == "int":
        return str(int(v))
    # gaps that are 0 in exact arithmetic come out as ±1e-17; printing those would read as a signal
    return "0" if abs(v) < 5e-13 else f"{v:.3g}"


_CONTINUED = {"en": "{title}, continued", "zh": "{title}（续）"}
_LEGEND_SEP = {"en": "; ", "zh": "；"}


def print_table(con: Console, title: str, rows: Sequence[Mapping[str, Any]], cols: Sequence[Col],
                lang: str = "en") -> None:
    """Print the columns that have a value in some row (the first always; nothing when no other has),
    split into several tables, each led by the first column, when one would not fit the width."""
    cells = [[_cell(c.get(r), c.kind) for c in cols] for r in rows]
    keep = [i for i, c in enumerate(cols) if i == 0 or any(row[i] for row in cells)]
    if len(keep) == 1:
        return
    heads = [c.words(lang) for c in cols]
    widths = {i: max(cell_len(heads[i][0]), *(cell_len(row[i]) for row in cells)) + 2 for i in keep}
    for part, chunk in enumerate(_fit(keep[1:], widths, con.width - widths[keep[0]])):
        table = Table(show_header=True, header_style="bold", box=None, padding=(0, 1))
        for i in (keep[0], *chunk):
            table.add_column(heads[i][0], justify="left" if cols[i].left else "right", no_wrap=True)
        for row in cells:
            table.add_row(*(row[i] for i in (keep[0], *chunk)))
        con.print(Text(title if part == 0 else _CONTINUED[lang].format(title=title), style="bold"))
        con.print(table)
        legend = [heads[i][1] for i in chunk if heads[i][1]]
        if legend:
            con.print(Padding(Text(_LEGEND_SEP[lang].join(legend), style="dim"), (0, 0, 0, 2), expand=False))


def _fit(columns: list[int], widths: Mapping[int, int], room: int) -> list[list[int]]:
    """``columns`` in order, cut into runs whose widths add up to at most ``room`` (one column per
    run at least: a column wider than the room is printed as it is, never folded)."""
    runs: list[list[int]] = [[]]
    used = 0
    for i in columns:
        if runs[-1] and used + widths[i] > room:
            runs.append([])
            used = 0
        runs[-1].append(i)
        used += widths[i]
    return runs
