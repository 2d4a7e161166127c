"""CSV tables of metrics: notebook training tables, W&B chart exports, any table with a step column.

* Notebook tables (HF Trainer's progress display copied out of a notebook): ``Step,Training
  Loss,reward,...,rewards / chosen``; headers are kept verbatim (the catalog maps the
  notebook spellings); ``No log`` means not logged. ``Training Loss``/``Validation Loss``
  say the framework: TRL (HF Trainer).
* W&B chart exports: a ``Step`` column and ``<run name> - <metric>`` columns with
  ``__MIN``/``__MAX`` companions. The run prefix is removed and the companions dropped; a
  file with several runs gives one run each, whose root is ``<file>#run=<name>``.
* Any other table: the step column is chosen as for JSONL, else rows are numbered.

An empty cell means the key was not logged in that row. A cell that is not a number is
text only if its whole column is; otherwise it is skipped and counted. Rows are streamed
with the csv module (quoted newlines are honoured); a column's type is settled by a
second pass only when a non-number turns up.
"""

from __future__ import annotations

import contextlib
import csv
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote

from ...errors import InputError
from ...words import Words
from .._reader import Reader
from ..record import Record, SkipLog, SourceMeta, Value
from ..text import parse_number
from .generic_jsonl import STEP_KEYS, WANDB_KEYS, as_step, drop_eval_epoch

FORMAT = "csv"
RUN_MARK = "#run="
WANDB_SEP = " - "
#: cells that mean "not logged": empty, and HF's notebook table before the first log
NOT_LOGGED = frozenset({"", "no log"})
#: headers only HF Trainer's notebook progress table uses
HF_TABLE_KEYS = frozenset({"Training Loss", "Validation Loss"})

_STEP_NAMES = {key.lower(): rank for rank, key in enumerate(STEP_KEYS)}
_MINMAX = re.compile(r"__(?:MIN|MAX)$")
_SAFE = " !$&'()*+,-.:;=@[]^_{}~|"  # kept readable in a run root; '/', '#' and '%' are quoted


@dataclass(frozen=True)
class Column:
    index: int
    key: str
    run: str | None = None


@dataclass(frozen=True)
class Layout:
    """What the header says: the step column, the metric columns and, for a W&B export, the runs."""

    step: int | None
    step_name: str | None
    columns: tuple[Column, ...]
    runs: tuple[str, ...] = ()
    dropped: int = 0


def layout(header: list[str]) -> Layout:
    """Read a header row.

    >>> layout(["Step", "a - train/loss", "a - train/loss__MIN"]).columns
    (Column(index=1, key='train/loss', run='a'),)
    """
    names = [h.strip() for h in header]
    ranked = [(_STEP_NAMES[n.lower()], i) for i, n in enumerate(names) if n.lower() in _STEP_NAMES]
    step = min(ranked)[1] if ranked else None
    others = [(i, n) for i, n in enumerate(names) if n.lower() not in _STEP_NAMES]
    metrics = [(i, n) for i, n in others if not _MINMAX.search(n)]
    if not (metrics and all(WANDB_SEP in n for _, n in metrics)):
        return Layout(step, None if step is None else names[step], tuple(Column(i, n) for i, n in others))
    columns = []
    runs: dict[str, None] = {}
    for i, n in metrics:
        run, _, key = n.partition(WANDB_SEP)
        runs[run] = None
        if key not in WANDB_KEYS and key.lower() not in _STEP_NAMES:
            columns.append(Column(i, key, run))
    return Layout(step, None if step is None else names[step], tuple(columns), tuple(runs),
                  dropped=len(others) - len(metrics))


def _header(path: Path) -> list[str]:
    with path.open(encoding="utf-8-sig", errors="replace", newline="") as fh:
        try:
            return next(csv.reader(fh), [])
        except csv.Error as exc:
            raise InputError(Words(f"{path}:1: the header row is not valid CSV ({exc})",
                                   f"{path} 第 1 行：表头不是有效的 CSV（{exc}）")) from exc


def sniff(path: Path, head: bytes) -> bool:
    first = head.decode("utf-8", "replace").lstrip("\ufeff").split("\n", 1)[0].rstrip("\r")
    try:
        cells = next(csv.reader([first]), [])
    except csv.Error:
        return False
    if len(cells) < 2:
        return False
    if any(c.strip().lower() in _STEP_NAMES for c in cells):
        return True
    return path.suffix.lower() == ".csv"


def runs(path: Path) -> list[Path]:
    """One root per run of a W&B export holding several runs; the file itself otherwise."""
    found = layout(_header(path)).runs
    if len(found) < 2:
        return [path]
    return [Path(f"{path}{RUN_MARK}{quote(name, safe=_SAFE)}") for name in found]


def split_root(root: Path) -> tuple[Path, str | None]:
    """``data.csv#run=a`` → ``(data.csv, 'a')``; a plain path → ``(path, None)``."""
    text = str(root)
    if RUN_MARK not in text or root.exists():
        return root, None
    path, _, name = text.rpartition(RUN_MARK)
    return Path(path), unquote(name)


def _text_columns(path: Path, columns: tuple[Column, ...]) -> set[int]:
    """Columns that hold no number at all (and at least one text cell): text, not metrics."""
    numeric: set[int] = set()
    text: set[int] = set()
    with path.open(encoding="utf-8-sig", errors="replace", newline="") as fh:
        rows = csv.reader(fh)
        _skip_header(rows)
        while True:
            try:
                row = next(rows)
            except StopIteration:
                break
            except csv.Error:
                continue
            for col in columns:
                cell = row[col.index].strip() if col.index < len(row) else ""
                if cell.lower() in NOT_LOGGED:
                    continue
                (numeric if parse_number(cell) is not None else text).add(col.index)
    return text - numeric


def _select(path: Path, found: Layout, run: str | None, meta: SourceMeta) -> tuple[Column, ...]:
    if run is not None and run not in found.runs:
        raise InputError(Words(f"{path}: no run named {run!r} in this W&B export; it holds: {', '.join(found.runs)}",
                               f"{path}：这份 W&B 导出里没有名为 {run!r} 的运行；其中有：{', '.join(found.runs)}"))
    if found.runs:
        name = run if run is not None else found.runs[0]
        meta.notes.append(Words(
            f"{path}: W&B export; read run {name!r} (the '{name}{WANDB_SEP}' prefix was removed)"
            + (f", {found.dropped} __MIN/__MAX columns were dropped" if found.dropped else ""),
            f"{path}：W&B 导出；读取了运行 {name!r}（去掉了前缀 '{name}{WANDB_SEP}'）"
            + (f"，丢弃了 {found.dropped} 个 __MIN/__MAX 列" if found.dropped else "")))
        return tuple(c for c in found.columns if c.run == name)
    if found.step is None:
        meta.notes.append(Words(f"{path}: no step column ({', '.join(STEP_KEYS)}); "
                                "the rows were numbered 1, 2, 3, ... as steps",
                                f"{path}：没有步数列（{', '.join(STEP_KEYS)}）；各行依次编为第 1、2、3…… 步"))
    return found.columns


def _skip_header(rows: Iterator[list[str]]) -> None:
    with contextlib.suppress(csv.Error):
        next(rows, None)


def _step(cell: str) -> int | None:
    number = parse_number(cell)
    return None if number is None else as_step(number)


class _Rows:
    """Streams one file's rows as records for the chosen columns."""

    def __init__(self, path: Path, found: Layout, columns: tuple[Column, ...], skips: SkipLog) -> None:
        self.path, self.found, self.columns, self.skips = path, found, columns, skips
        self.text: set[int] | None = None  # settled on the first non-number

    def values(self, row: list[str], where: str) -> dict[str, Value]:
        values: dict[str, Value] = {}
        width = len(row)
        for col in self.columns:
            if col.index >= width:
                continue
            cell = row[col.index]
            try:
                values[col.key] = float(cell)  # the common case, fast
                continue
            except ValueError:
                cell = cell.strip()
            if cell.lower() in NOT_LOGGED:
                continue
            number = parse_number(cell)
            if number is not None:
                values[col.key] = number
                continue
            if self.text is None:
                self.text = _text_columns(self.path, self.columns)
            if col.index in self.text:
                values[col.key] = cell
            else:
                self.skips.skip(where, Words(f"value {cell!r} for {col.key!r} is not a number; the value was skipped",
                                             f"{col.key!r} 的值 {cell!r} 不是数字；这个值已跳过"))
        return values

    def records(self) -> Iterator[Record]:
        step_at = self.found.step
        with self.path.open(encoding="utf-8-sig", errors="replace", newline="") as fh:
            rows = csv.reader(fh)
            _skip_header(rows)
            ordinal = 0
            while True:
                try:
                    row = next(rows)
                except StopIteration:
                    break
                except csv.Error as exc:
                    self.skips.skip(f"{self.path}:{rows.line_num}",
                                    Words(f"not a CSV row ({exc}); the row was skipped",
                                          f"不是 CSV 行（{exc}）；这一行已跳过"))
                    continue
                if not any(c.strip() for c in row):
                    continue
                ordinal += 1
                where = f"{self.path}:{rows.line_num}"
                if step_at is None:
                    step = ordinal
                else:
                    cell = row[step_at].strip() if step_at < len(row) else ""
                    found = _step(cell)
                    if found is None:
                        if any(c.index < len(row) and row[c.index].strip() for c in self.columns):
                            self.skips.skip(where, Words(f"step {cell!r} is not an integer; the row was skipped",
                                                         f"步数 {cell!r} 不是整数；这一行已跳过") if cell else
                                            Words("the step cell is empty; the row was skipped",
                                                  "步数单元格是空的；这一行已跳过"))
                        continue
                    step = found
                values = self.values(row, where)
                drop_eval_epoch(values)
                if values:
                    yield Record(step, values, where)


def read(root: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    path, run = split_root(root)
    meta.files = [str(path)]
    header = _header(path)
    found = layout(header)
    columns = _select(path, found, run, meta)
    if not found.runs and any(c.key in HF_TABLE_KEYS for c in columns):
        meta.framework = "trl"  # HF Trainer's notebook table, as TRL trainers show it
    yield from _Rows(path, found, columns, skips).records()
    meta.bytes_read += path.stat().st_size


READER = Reader(FORMAT, sniff, read, runs=runs,
                describes="a CSV table of metrics with a step column: a notebook's training table, a W&B chart export")
