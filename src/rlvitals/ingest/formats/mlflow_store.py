"""MLflow tracking stores, read directly (no mlflow package): the file store and SQLite.

File store (``mlruns/``): ``<experiment_id>/meta.yaml`` (``name``), and per run
``<experiment_id>/<run_id>/meta.yaml`` (``run_name``, ``lifecycle_stage``, ...),
``metrics/<key>`` with one ``timestamp value step`` line per logged point (a key with
``/`` is a nested path; names may hold spaces and colons), ``params/<key>`` holding the
value. The store root, an experiment folder or a run folder are accepted.

SQLite store (``mlflow.db``): tables ``metrics(key, value, timestamp, run_uuid, step,
is_nan)``, ``runs(run_uuid, name, experiment_id, lifecycle_stage, start_time, ...)``,
``params(key, value, run_uuid)``, ``experiments(experiment_id, name, ...)``. MLflow stores
NaN as ``value=0, is_nan=1`` and ±inf as ±1.7976931348623157e308; both are mapped back.
:func:`runs` names each run ``<db>#<run_uuid>``, which :func:`read` understands.

Keys are kept verbatim; veRL's MLflow adapter turns ``@`` into ``_at_`` and HF writes
``eval_*`` — the catalog maps those. Params become ``meta.config`` with ``/`` read as
``.`` (veRL flattens its config with ``/``). When a store or experiment is read, deleted
runs and runs without any metric are left out (unless nothing else is left).

Every metric point carries its ``timestamp`` (milliseconds since the Unix epoch): a record's wall
time is the latest of its points'; the run's ``start_time`` is when it started.
"""

from __future__ import annotations

import math
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from ..._sqlite import connect_read_only, split_root, table_columns
from ...errors import InputError
from ...words import Words
from .._files import read_file, regular
from .._profiling import StepZero
from .._reader import Reader
from ..record import Record, SkipLog, SourceMeta, Value
from ..text import iter_lines

FORMAT = "mlflow"

SQLITE_MAGIC = b"SQLite format 3\x00"
#: how MLflow's SQL store writes +inf (and -inf, negated): the largest double
_SQL_INF = 1.7976931348623157e308
_SNIFF_ENTRIES = 2000


# --- file store --------------------------------------------------------------------------------

def meta_yaml(path: Path) -> dict[str, str]:
    """The top-level ``key: value`` pairs of an MLflow ``meta.yaml`` (flat enough to need no
    YAML parser); quotes are removed, nested entries ignored."""
    out: dict[str, str] = {}
    try:
        raw = read_file(path).decode("utf-8", errors="replace")
    except (OSError, InputError):  # gone, or a FIFO or a device in its place: never waited on
        return out
    for line in raw.splitlines():
        if not line or line[0] in " \t#-":
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out[key.strip()] = value
    return out


def _millis(text: str) -> int | None:
    """A ``meta.yaml`` time (milliseconds since the epoch) as an integer; None for anything else (a damaged
    store's ``²``, or 5,000 digits, which Python refuses to convert).

    >>> _millis("1796596592430"), _millis("²"), _millis("9" * 5000)
    (1796596592430, None, None)
    """
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 19 else None


def _is_run_dir(folder: Path) -> bool:
    return (folder / "meta.yaml").is_file() and (folder / "metrics").is_dir()


def _children(folder: Path) -> list[Path]:
    try:
        return sorted(c for c in folder.iterdir() if c.is_dir() and not c.name.startswith("."))
    except OSError:
        return []


def _experiment_runs(folder: Path) -> list[Path]:
    return [c for c in _children(folder) if _is_run_dir(c)]


def _is_experiment_dir(folder: Path) -> bool:
    return (folder / "meta.yaml").is_file() and bool(_experiment_runs(folder))


def _has_metrics(run: Path) -> bool:
    return any(files for _, _, files in os.walk(run / "metrics"))


def _file_store_runs(path: Path) -> list[Path]:
    if _is_run_dir(path):
        return [path]
    if _is_experiment_dir(path):
        found = _experiment_runs(path)
    else:
        found = [run for exp in _children(path) for run in _experiment_runs(exp)]
    if not found:
        return [path]
    metas = {run: meta_yaml(run / "meta.yaml") for run in found}
    keep = [r for r in found if metas[r].get("lifecycle_stage") != "deleted" and _has_metrics(r)]

    def order(run: Path) -> tuple[str, int, str]:
        meta = metas[run]
        start = meta.get("start_time", "")
        return (meta.get("experiment_id", run.parent.name), _millis(start) or 0, run.name)

    return sorted(keep or found, key=order)


def _metric_files(run: Path, skips: SkipLog) -> list[tuple[str, Path]]:
    """``(key, file)`` for every metric of a run; a key with ``/`` is a nested path. A FIFO or a device
    among them (a link to ``/dev/zero``) is not opened, and counted in ``skips``."""
    root = run / "metrics"
    out = []
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for file in regular([Path(folder) / name for name in sorted(files)], skips):
            out.append((file.relative_to(root).as_posix(), file))
    return out


def _params(run: Path, meta: SourceMeta, skips: SkipLog) -> None:
    root = run / "params"
    for folder, _, files in os.walk(root):
        for file in regular([Path(folder) / name for name in sorted(files)], skips):
            try:
                value = read_file(file).decode("utf-8", errors="replace")
            except OSError:
                continue
            meta.config[file.relative_to(root).as_posix().replace("/", ".")] = value


def _read_run_dir(run: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    info = meta_yaml(run / "meta.yaml")
    above = regular([run.parent / "meta.yaml"], skips)  # the experiment's, when it is a file
    experiment = (meta_yaml(above[0]) if above else {}).get("name", run.parent.name)
    name, run_id = info.get("run_name", ""), info.get("run_id", run.name)
    meta.notes.append(Words(f"MLflow run {name!r} (id {run_id}, experiment {experiment!r})",
                            f"MLflow 运行 {name!r}（id {run_id}，实验 {experiment!r}）"))
    _params(run, meta, skips)
    metrics = _metric_files(run, skips)
    meta.files = [str(f) for _, f in metrics]
    meta.clock = "MLflow timestamp"
    start = info.get("start_time", "")
    millis = _millis(start)
    meta.started = millis / 1000 if millis is not None else None
    zero = StepZero(str(run))
    for key, file in metrics:
        for lineno, line in iter_lines(file, meta):
            parts = line.split()
            if not parts:
                continue
            where = f"{file}:{lineno}"
            if len(parts) not in (2, 3):
                skips.skip(where, Words(f"expected 'timestamp value step', got {line[:80]!r}; the line was skipped",
                                        f"应为 'timestamp value step'，读到的是 {line[:80]!r}；这一行已跳过"))
                continue
            try:
                value = float(parts[1])
                step = int(parts[2]) if len(parts) == 3 else 0
                stamp = int(parts[0])
            except ValueError:
                skips.skip(where, Words(f"expected 'timestamp value step' numbers, got {line[:80]!r}; "
                                        "the line was skipped",
                                        f"'timestamp value step' 应为数字，读到的是 {line[:80]!r}；这一行已跳过"))
                continue
            if not zero.drops(step, (key,)):
                yield Record(step, {key: value}, where, wall=stamp / 1000)
    zero.note(meta)


# --- SQLite store -------------------------------------------------------------------------------

def _is_mlflow_db(db: Path) -> bool:
    try:
        con = connect_read_only(db)
        try:
            return ({"key", "value", "step", "run_uuid"} <= table_columns(con, "metrics")
                    and "run_uuid" in table_columns(con, "runs"))
        finally:
            con.close()
    except (sqlite3.Error, UnicodeDecodeError):  # a damaged schema: a column name that is not UTF-8
        return False


def _sqlite_runs(db: Path) -> list[Path]:
    try:
        con = connect_read_only(db)
        try:
            rows = con.execute(
                "SELECT run_uuid, lifecycle_stage, run_uuid IN (SELECT DISTINCT run_uuid FROM metrics) "
                "FROM runs ORDER BY experiment_id, start_time, run_uuid").fetchall()
        finally:
            con.close()
    except (sqlite3.Error, UnicodeDecodeError):
        return [db]
    keep = [r[0] for r in rows if r[1] != "deleted" and r[2]]
    return [Path(f"{db}#{run}") for run in (keep or [r[0] for r in rows])] or [db]


def _sqlite_run_id(con: sqlite3.Connection, db: Path, run: str | None) -> str:
    if run is not None:
        return run
    ids = [r[0] for r in con.execute("SELECT DISTINCT run_uuid FROM metrics LIMIT 2")]
    if len(ids) == 1:
        return str(ids[0])
    raise InputError(Words(f"{db}: this MLflow database holds several runs; read it with load() to get "
                           "one Run each, or name one as <db>#<run_uuid>",
                           f"{db}：这个 MLflow 数据库里有多个运行；用 load() 读取，每个运行得到一个 Run，"
                           "或者用 <db>#<run_uuid> 指定其中一个"))


def _sqlite_meta(con: sqlite3.Connection, run: str, meta: SourceMeta) -> None:
    for key, value in con.execute("SELECT key, value FROM params WHERE run_uuid = ?", (run,)):
        meta.config[str(key).replace("/", ".")] = value
    row = con.execute("SELECT r.name, e.name, r.start_time FROM runs r LEFT JOIN experiments e "
                      "ON r.experiment_id = e.experiment_id WHERE r.run_uuid = ?", (run,)).fetchone()
    meta.clock = "MLflow timestamp"
    if row is not None:
        meta.notes.append(Words(f"MLflow run {row[0]!r} (id {run}, experiment {row[1]!r})",
                                f"MLflow 运行 {row[0]!r}（id {run}，实验 {row[1]!r}）"))
        meta.started = row[2] / 1000 if isinstance(row[2], int) and not isinstance(row[2], bool) else None


def _sql_value(value: object, is_nan: object) -> float:
    if is_nan:
        return math.nan
    number = float(value)  # type: ignore[arg-type]
    if abs(number) == _SQL_INF:
        return math.copysign(math.inf, number)
    return number


def _read_sqlite(db: Path, run: str | None, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    meta.files = [str(db)]
    meta.bytes_read += db.stat().st_size
    con: sqlite3.Connection | None = None
    try:
        con = connect_read_only(db)
        run = _sqlite_run_id(con, db, run)
        _sqlite_meta(con, run, meta)
        nan_col = "is_nan" if "is_nan" in table_columns(con, "metrics") else "0"
        cursor = con.execute(f"SELECT step, key, value, {nan_col}, timestamp FROM metrics WHERE run_uuid = ? "
                             "ORDER BY step, timestamp", (run,))
        step: int | None = None
        values: dict[str, Value] = {}
        where = ""
        wall: float | None = None
        zero = StepZero(f"{db}#{run}")
        for row_step, key, value, is_nan, stamp in cursor:
            try:
                number = _sql_value(value, is_nan)
                row_step = int(row_step)
            except (TypeError, ValueError):
                skips.skip(f"{db}#{run} step {row_step}",
                           Words(f"metric {key!r} has value {value!r}, not a number; it was skipped",
                                 f"指标 {key!r} 的值是 {value!r}，不是数字；这个值已跳过"))
                continue
            if row_step != step or key in values:
                if values and not zero.drops(step, values):  # type: ignore[arg-type]
                    yield Record(step, values, where, wall=wall)  # type: ignore[arg-type]
                step, values, where, wall = row_step, {}, f"{db}#{run} step {row_step}", None
            values[str(key)] = number
            if isinstance(stamp, int) and not isinstance(stamp, bool):
                wall = stamp / 1000  # the points of one step come in timestamp order: the last is the latest
        if values and not zero.drops(step, values):  # type: ignore[arg-type]
            yield Record(step, values, where, wall=wall)  # type: ignore[arg-type]
        zero.note(meta)
    except (sqlite3.Error, UnicodeDecodeError) as exc:  # the store is damaged from here on
        skips.skip(f"{db}#{run}", Words(f"SQLite error ({exc}); the rest of the run was skipped",
                                        f"SQLite 出错（{exc}）；这个运行余下的部分已跳过"))
    finally:
        if con is not None:
            con.close()


# --- the reader ---------------------------------------------------------------------------------

def sniff(path: Path, head: bytes) -> bool:
    if path.is_file():
        return head.startswith(SQLITE_MAGIC) and _is_mlflow_db(path)
    if _is_run_dir(path) or _is_experiment_dir(path):
        return True
    children = _children(path)
    return len(children) <= _SNIFF_ENTRIES and any(_is_experiment_dir(c) for c in children)


def runs(path: Path) -> list[Path]:
    """One root per run: ``<db>#<run_uuid>`` for SQLite, a run folder for the file store."""
    db, run = split_root(path)
    if db.is_file():
        return [path] if run is not None else _sqlite_runs(db)
    return _file_store_runs(path)


def read(path: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    db, run = split_root(path)
    if db.is_file():
        yield from _read_sqlite(db, run, meta, skips)
    elif _is_run_dir(path):
        yield from _read_run_dir(path, meta, skips)
    else:
        raise InputError(Words(f"{path}: not an MLflow run folder (expected meta.yaml and metrics/); "
                               "pass the store, an experiment or a run folder",
                               f"{path}：不是 MLflow 的运行文件夹（应有 meta.yaml 和 metrics/）；"
                               "请传入存储目录、某个实验或某个运行的文件夹"))


#: the same reader for both forms: a file (event file, .wandb file, SQLite database) or a folder
DESCRIBES = "an MLflow tracking store: an mlruns/ folder or a SQLite mlflow.db"
READER = Reader(FORMAT, sniff, read, runs=runs, describes=DESCRIBES)
DIR_READER = Reader(FORMAT, sniff, read, takes_dir=True, runs=runs, describes=DESCRIBES)
READERS = (READER, DIR_READER)
