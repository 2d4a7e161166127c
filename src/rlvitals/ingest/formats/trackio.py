"""Trackio projects (Hugging Face's local-first tracker), read from their SQLite files without trackio.

Trackio keeps one database per project, ``<TRACKIO_DIR>/<project>.db`` (``TRACKIO_DIR`` defaults to
``~/.cache/huggingface/trackio``), written in WAL mode. Its ``metrics`` table holds a row per log call:
``run_name``, ``step``, ``timestamp`` (ISO 8601, the time the batch of calls was flushed, every 0.5 s) and
``metrics``, a flat JSON object (stored as text or as bytes) in which NaN and infinities are the strings
``"NaN"``, ``"Infinity"`` and ``"-Infinity"``; ``run_id`` tells apart runs of one name (Trackio 0.24 and
later). ``configs`` holds each run's config (its ``_``-prefixed keys are Trackio's own), and
``system_metrics`` samples of the machine on their own clock (no step), which are left out and counted.
Media and tables (a dict with ``_type``: ``trackio.image``, ``trackio.table``…) are not metrics: left out
and named. Columns are found with ``PRAGMA table_info``, not by version.

A file is opened read-only, so a training that is still writing it is never blocked (WAL lets a reader and
the writer work at once); a run is named ``<db>#<run name>`` (``<db>#<run name>@<run id>`` when two runs share
a name; a bare ``<db>#<run id>`` is taken too).
"""

from __future__ import annotations

import contextlib
import math
import sqlite3
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from ..._sqlite import connect_read_only, split_root, table_columns
from ...errors import InputError
from ...words import Words
from .._config import Cut, dotted, too_deep
from .._reader import Reader
from ..record import LoggedTable, Record, SkipLog, SourceMeta, Value

FORMAT = "trackio"
SQLITE_MAGIC = b"SQLite format 3\x00"
_NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
#: a folder holding more entries than this is not looked into for project databases
_SNIFF_ENTRIES = 500


def _is_trackio_db(db: Path) -> bool:
    try:
        with db.open("rb") as fh:
            if fh.read(16) != SQLITE_MAGIC:
                return False
        con = connect_read_only(db)
        try:
            return {"run_name", "step", "metrics", "timestamp"} <= table_columns(con, "metrics")
        finally:
            con.close()
    except (OSError, sqlite3.Error, UnicodeDecodeError):
        return False


def _databases(folder: Path) -> list[Path]:
    try:
        children = sorted(folder.iterdir())
    except OSError:
        return []
    if len(children) > _SNIFF_ENTRIES:
        return []
    return [c for c in children if c.suffix == ".db" and c.is_file() and _is_trackio_db(c)]


def sniff(path: Path, head: bytes) -> bool:
    if path.is_file():
        return head.startswith(SQLITE_MAGIC) and _is_trackio_db(path)
    return bool(_databases(path))


def _runs_of(db: Path) -> list[tuple[str, str | None]]:
    """``(name, id)`` of every run of a project, in the order they began (id None before Trackio 0.24)."""
    con = connect_read_only(db)
    try:
        if "run_id" in table_columns(con, "metrics"):
            rows = con.execute("SELECT run_name, run_id FROM metrics GROUP BY run_id ORDER BY MIN(id)").fetchall()
            return [(str(name), str(rid)) for name, rid in rows]
        return [(str(r[0]), None) for r in con.execute("SELECT run_name FROM metrics GROUP BY run_name "
                                                       "ORDER BY MIN(id)")]
    finally:
        con.close()


def runs(path: Path) -> list[Path]:
    """One root per run: ``<db>#<run>`` for each run of each project database given (or in the folder)."""
    db, run = split_root(path)
    if run is not None:
        return [path]
    out = []
    for file in [db] if db.is_file() else _databases(db):
        try:
            found = _runs_of(file)
        except (sqlite3.Error, UnicodeDecodeError):
            out.append(file)
            continue
        names = [name for name, _ in found]
        out += [Path(f"{file}#{name if names.count(name) == 1 or rid is None else f'{name}@{rid}'}")
                for name, rid in found]
    return out or [path]


def _which(con: sqlite3.Connection, db: Path, run: str | None) -> tuple[str, str]:
    """The column and value that pick the run (its id when the name is shared, else its name)."""
    has_id = "run_id" in table_columns(con, "metrics")
    if run is None:
        key = "run_id" if has_id else "run_name"
        ids = [r[0] for r in con.execute(f"SELECT DISTINCT {key} FROM metrics LIMIT 2")]
        if len(ids) != 1:
            raise InputError(Words(f"{db}: this Trackio project holds {'several runs' if ids else 'no run'}; read "
                                   "it with load() to get one Run each, or name one as <db>#<run name>",
                                   f"{db}：这个 Trackio 项目里{'有多个运行' if ids else '没有运行'}；用 load() 读取，"
                                   "每个运行得到一个 Run，或者用 <db>#<运行名> 指定其中一个"))
        return key, str(ids[0])
    if has_id:
        for rid in (run, run.rpartition("@")[2]):  # <run id>, or <run name>@<run id> of a shared name
            if rid and con.execute("SELECT 1 FROM metrics WHERE run_id = ? LIMIT 1", (rid,)).fetchone():
                return "run_id", rid
    return "run_name", run


def _value(value: Any) -> Value | None:
    """A logged value as a metric (a number or text), None for media, tables and lists."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    if isinstance(value, str):
        return _NONFINITE.get(value, value)
    return None


def _wall(stamp: object) -> float | None:
    try:
        return datetime.fromisoformat(str(stamp)).timestamp()
    except ValueError:
        return None


def _config(con: sqlite3.Connection, key: str, run: str, meta: SourceMeta, where: str, skips: SkipLog) -> None:
    if "config" not in table_columns(con, "configs") or key not in table_columns(con, "configs"):
        return
    row = con.execute(f"SELECT config FROM configs WHERE {key} = ?", (run,)).fetchone()
    try:
        config = orjson.loads(row[0]) if row is not None else {}
    except orjson.JSONDecodeError:
        config = {}
    if isinstance(config, dict):
        cut: list[Cut] = []
        for name, value in config.items():
            if not str(name).startswith("_"):  # Trackio's own (_Username, _Created, _Group)
                cut += dotted(str(name), value, meta.config)
        too_deep(where, cut, skips)
        created = _wall(config.get("_Created"))
        if created is not None:
            meta.started = created


GLOBAL_STEP = "train/global_step"


def _as_step(value: Any) -> int | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value == int(value):
        return int(value)
    return None


class _Rows:
    """The metric rows of a run into one record per step (a step logged in several calls is one record; a
    key logged twice at a step starts the next record), what was left out, and how far they were read."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.last = 0  # the highest row id read (where a follower goes on from)
        self.step: int | None = None
        self.values: dict[str, Value] = {}
        self.wall: float | None = None
        self.media: set[str] = set()
        # the step axis: Trackio's own step, or (once a row holds HF's train/global_step) the global step
        self.global_axis = False
        self.global_step: int | None = None  # the last global step read (the first, before any is read)
        self.carried = 0  # rows without a global step, placed at the next one
        self.waiting: list[tuple[dict[str, Any], float | None]] = []

    def decide(self, con: sqlite3.Connection, key: str, chosen: str) -> None:
        """Take HF's ``train/global_step`` as the step axis when a row of the run holds it: transformers'
        Trackio callback logs it with every row but lets Trackio count the step, while TRL's profiling
        and completions rows are logged with steps of their own."""
        if self.global_axis:
            return
        hit = con.execute(f"SELECT metrics FROM metrics WHERE {key} = ? AND CAST(metrics AS TEXT) LIKE "
                          "'%\"train/global_step\"%' ORDER BY id LIMIT 1", (chosen,)).fetchone()
        if hit is not None:
            with contextlib.suppress(orjson.JSONDecodeError, TypeError, AttributeError):
                self.global_step = _as_step(orjson.loads(hit[0]).get(GLOBAL_STEP))
            self.global_axis = self.global_step is not None

    def route(self, step: int, metrics: dict[str, Any], wall: float | None) -> Iterator[Record]:
        """One row to its step: Trackio's, or on the global axis its ``train/global_step``; a row without one
        (TRL's profiling, logged while the next step is computed) waits for the next global step."""
        if not self.global_axis:
            yield from self.add(step, metrics, wall)
            return
        found = _as_step(metrics.pop(GLOBAL_STEP, None))
        if found is None:
            self.waiting.append((metrics, wall))
            return
        self.global_step = found
        yield from self.release(found)
        yield from self.add(found, metrics, wall)

    def release(self, step: int | None) -> Iterator[Record]:
        """The rows waiting for a global step, at ``step`` (the last one, at the end of a whole read)."""
        waiting, self.waiting = self.waiting, []
        if step is None:
            return
        for metrics, wall in waiting:
            self.carried += 1 if metrics else 0
            yield from self.add(step, metrics, wall)

    def add(self, step: int, metrics: dict[str, Any], wall: float | None) -> Iterator[Record]:
        values = {}
        for key, raw in metrics.items():
            value = _value(raw)
            if value is None:
                self.media.add(str(key))
            else:
                values[str(key)] = value
        if self.step is not None and (step != self.step or self.values.keys() & values.keys()):
            yield from self.flush()
        self.step = step
        self.values.update(values)
        self.wall = wall if wall is not None else self.wall

    def flush(self) -> Iterator[Record]:
        if self.values and self.step is not None:
            yield Record(self.step, self.values, f"{self.where} step {self.step}", wall=self.wall)
        self.values, self.wall = {}, None


def _scan(con: sqlite3.Connection, db: Path, key: str, chosen: str, rows: _Rows, skips: SkipLog, *,
          by_step: bool) -> Iterator[Record]:
    """The records of the rows after ``rows.last``: in step order for a whole read, in the order written for a
    follower (whose steps may come back in a later poll: a Run puts the values of one step together)."""
    rows.decide(con, key, chosen)
    order = "step, id" if by_step and not rows.global_axis else "id"
    for row_id, step, stamp, blob in con.execute(f"SELECT id, step, timestamp, metrics FROM metrics WHERE {key} = ? "
                                                 f"AND id > ? ORDER BY {order}", (chosen, rows.last)):
        rows.last = max(rows.last, row_id)
        try:
            metrics = orjson.loads(blob)
        except orjson.JSONDecodeError as exc:
            metrics = exc
        if not isinstance(metrics, dict) or not isinstance(step, int):
            skips.skip(f"{rows.where} row {row_id}",
                       Words(f"expected a step and a JSON object of metrics, got step {step!r}; the row was "
                             "skipped", f"应为步数和指标的 JSON 对象，读到的步数是 {step!r}；这一行已跳过"))
            continue
        yield from rows.route(step, metrics, _wall(stamp))
    if by_step:  # a whole read: what logged after the last global step belongs to it
        yield from rows.release(rows.global_step)
    yield from rows.flush()


def _where(db: Path, run: str | None, chosen: str | None = None) -> str:
    """How a run is named in a note, a skip or a table's origin: by its root (``<db>#<run name>@<run id>`` for
    a shared name), or ``<db>#<run>`` for the one run of a database (the database before it is known)."""
    name = run if run is not None else chosen
    return str(db) if name is None else f"{db}#{name}"


def _begin(con: sqlite3.Connection, db: Path, run: str | None, meta: SourceMeta,
           skips: SkipLog) -> tuple[str, str]:
    key, chosen = _which(con, db, run)
    meta.files, meta.clock = [str(db)], "Trackio timestamp"
    meta.config["trackio.project"] = db.stem
    _config(con, key, chosen, meta, _where(db, run, chosen), skips)
    return key, chosen


def _read(db: Path, run: str | None, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    meta.bytes_read += db.stat().st_size
    con = connect_read_only(db)
    try:
        key, chosen = _begin(con, db, run, meta, skips)
        rows = _Rows(_where(db, run, chosen))
        yield from _scan(con, db, key, chosen, rows, skips, by_step=True)
        _notes(con, db, key, chosen, rows, meta)
    except (sqlite3.Error, UnicodeDecodeError) as exc:  # the file is damaged from here on
        skips.skip(_where(db, run), Words(f"SQLite error ({exc}); the rest of the run was skipped",
                                        f"SQLite 出错（{exc}）；这个运行余下的部分已跳过"))
    finally:
        con.close()


def since(path: Path, meta: SourceMeta, skips: SkipLog, position: Any) -> tuple[list[Record], Any]:
    """The records of the run ``path`` (``<db>#<run>``) in the rows written after ``position`` (what the
    last call returned; None: from the first row), and the new position: a follower reads each row once."""
    db, run = split_root(path)
    rows: _Rows | None = position
    try:
        con = connect_read_only(db)
    except sqlite3.OperationalError:  # the writer checkpoints its WAL under us: nothing read, the next poll retries
        return [], rows
    try:
        # again each time: the config row may come after the first rows (what it leaves out counted once)
        key, chosen = _begin(con, db, run, meta, skips if position is None else SkipLog())
        rows = rows or _Rows(_where(db, run, chosen))
        before = rows.last
        records = list(_scan(con, db, key, chosen, rows, skips, by_step=False))
        meta.bytes_read = db.stat().st_size if rows.last != before or not meta.bytes_read else meta.bytes_read
        meta.notes.clear()  # what was left out so far, said again in full
        _notes(con, db, key, chosen, rows, meta)
        return records, rows
    except (sqlite3.Error, UnicodeDecodeError) as exc:
        skips.skip(_where(db, run), Words(f"SQLite error ({exc}); the rest of the run was skipped",
                                        f"SQLite 出错（{exc}）；这个运行余下的部分已跳过"))
        return [], rows
    finally:
        con.close()


def _notes(con: sqlite3.Connection, db: Path, key: str, run: str, rows: _Rows, meta: SourceMeta) -> None:
    if rows.carried:
        meta.notes.append(Words(f"{rows.where}: the steps are HF's train/global_step; {rows.carried} rows without it "
                                "(TRL's profiling and completions, logged while the next step ran) were placed at "
                                "the next global step",
                                f"{rows.where}：步数取 HF 的 train/global_step；{rows.carried} 行没有它"
                                "（TRL 的性能剖析计时和补全表，在下一步计算时记录），放在下一个 global step 上"))
    if rows.media:
        shown = sorted(rows.media)
        listed = ", ".join(shown[:6]) + (", …" if len(shown) > 6 else "")
        meta.notes.append(Words(f"{rows.where}: media and tables ({len(shown)}: {listed}) are not metrics; they "
                                "were left out",
                                f"{rows.where}：媒体和表格（{len(shown)} 个：{listed}）不是指标；没有读入"))
    if key in table_columns(con, "system_metrics"):
        (count,) = con.execute(f"SELECT COUNT(*) FROM system_metrics WHERE {key} = ?", (run,)).fetchone()
        if count:
            meta.notes.append(Words(f"{rows.where}: Trackio's system metrics ({count} sample{'s' if count != 1 else ''}"
                                    ": CPU, GPU, memory) are on their own clock, not at training steps; they were "
                                    "left out",
                                    f"{rows.where}：Trackio 的 {count} 条系统指标采样（CPU、GPU、内存）按自己的时钟"
                                    "记录，不在训练步上；没有读入"))


def tables(path: Path, skips: SkipLog) -> list[LoggedTable]:
    """The tables a run (``<db>#<run>``, or the one run of a database) logged, by row: each
    ``trackio.Table`` in its metrics (``{"_type": "trackio.table", "_value": [row…]}``, as TRL logs its
    completions; a cell's ``"NaN"``/``"Infinity"`` read as the number), then its traces (``traces``:
    ``messages`` and ``metadata``, as veRL logs validation generations), one table per key and step, a row
    per trace in trace order: ``messages`` and the metadata's entries. A row that is not JSON is a counted
    skip."""
    db, run = split_root(path)
    con = connect_read_only(db)
    try:
        key, chosen = _which(con, db, run)
        where = _where(db, run, chosen)
        out = list(_metric_tables(con, where, key, chosen, skips))
        if {"step", "key", "messages", "metadata"} <= table_columns(con, "traces"):
            out += _traces(con, where, key, chosen, skips)
        return out
    finally:
        con.close()


def _metric_tables(con: sqlite3.Connection, where: str, key: str, chosen: str, skips: SkipLog) -> Iterator[LoggedTable]:
    for row_id, step, blob in con.execute(f"SELECT id, step, metrics FROM metrics WHERE {key} = ? AND "
                                          "CAST(metrics AS TEXT) LIKE '%trackio.table%' ORDER BY id", (chosen,)):
        try:
            metrics = orjson.loads(blob)
        except orjson.JSONDecodeError:
            skips.skip(f"{where} row {row_id}", Words("not a JSON object; the row's tables were skipped",
                                                            "不是 JSON 对象；这一行里的表已跳过"))
            continue
        for name, value in metrics.items() if isinstance(metrics, dict) else ():
            if isinstance(value, dict) and value.get("_type") == "trackio.table" and isinstance(value.get("_value"),
                                                                                                list):
                rows = tuple({k: _NONFINITE.get(v, v) if isinstance(v, str) else v for k, v in r.items()}
                             for r in value["_value"] if isinstance(r, dict))
                yield LoggedTable(str(name), step, f"{where} row {row_id}", rows, FORMAT)


def _traces(con: sqlite3.Connection, where: str, key: str, chosen: str, skips: SkipLog) -> list[LoggedTable]:
    grouped: dict[tuple[str, int], list[dict[str, Any]]] = {}
    order = "step, key, trace_index, rowid" if "trace_index" in table_columns(con, "traces") else "step, key, rowid"
    for trace_id, step, name, messages, metadata in con.execute(
            f"SELECT id, step, key, messages, metadata FROM traces WHERE {key} = ? ORDER BY {order}", (chosen,)):
        try:
            row = {"messages": orjson.loads(messages), **(orjson.loads(metadata) or {})}
        except (orjson.JSONDecodeError, TypeError):
            skips.skip(f"{where} trace {trace_id}", Words("its messages or metadata are not JSON; the trace "
                                                                "was skipped", "它的 messages 或 metadata 不是 JSON；"
                                                                "这条 trace 已跳过"))
            continue
        grouped.setdefault((str(name), int(step)), []).append(row)
    return [LoggedTable(name, step, f"{where} traces {name} step {step}", tuple(rows), FORMAT)
            for (name, step), rows in grouped.items()]


def read(path: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    db, run = split_root(path)
    if not db.is_file():
        found = _databases(db)
        if len(found) != 1:
            raise InputError(Words(f"{path}: {len(found)} Trackio projects in this folder; read it with load() "
                                   "to get their runs, or pass one project's .db",
                                   f"{path}：这个文件夹里有 {len(found)} 个 Trackio 项目；用 load() 读取它们的运行，"
                                   "或者传入某一个项目的 .db 文件"))
        db = found[0]
    yield from _read(db, run, meta, skips)


DESCRIBES = "a Trackio project database (<TRACKIO_DIR>/<project>.db), or a folder of them"
READER = Reader(FORMAT, sniff, read, runs=runs, describes=DESCRIBES, since=since)
DIR_READER = Reader(FORMAT, sniff, read, takes_dir=True, runs=runs, describes=DESCRIBES, since=since)
READERS = (READER, DIR_READER)
