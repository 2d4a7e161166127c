"""The one way rlvitals opens SQLite files: its own state files (watch, serve) in WAL mode, so a reader
never blocks the writer, with a versioned schema; and other programs' databases (MLflow, Trackio)
read-only, so a writer is never disturbed."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

__all__ = ["connect_read_only", "connect_wal", "schema_version", "split_root", "table_columns"]


def connect_wal(path: Path, tables: Sequence[str], *, threads: bool = False) -> sqlite3.Connection:
    """Open or create ``path`` in WAL mode (autocommit; ``threads``: the connection may be used from
    other threads, under the caller's lock) and create ``tables``. Raises sqlite3/OS errors as they are,
    for the caller to word."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(str(path), timeout=10.0, isolation_level=None, check_same_thread=not threads)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    for sql in tables:
        db.execute(sql)
    return db


def schema_version(db: sqlite3.Connection, current: int) -> int:
    """The layout version the file holds; a new file is stamped with ``current`` (table ``schema``)."""
    row = db.execute("SELECT version FROM schema").fetchone()
    if row is None:
        db.execute("INSERT INTO schema (version) VALUES (?)", (current,))
        return current
    return int(row[0])


def connect_read_only(path: Path) -> sqlite3.Connection:
    """Open another program's database read-only; a damaged file's TEXT that is not UTF-8 reads with U+FFFD
    rather than failing the whole read."""
    con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5.0)
    con.text_factory = lambda raw: raw.decode("utf-8", "replace")
    return con


def table_columns(con: sqlite3.Connection, table: str) -> set[str]:
    """The column names of ``table`` (none when there is no such table)."""
    return {row[1] for row in con.execute(f"PRAGMA table_info({table})")}


def split_root(path: Path) -> tuple[Path, str | None]:
    """A root ``<db>#<run>`` (as the MLflow and Trackio readers name one run of a database) into the
    database and the run; a path that exists, or whose part before ``#`` is no file, is itself."""
    if path.exists():
        return path, None
    db, sep, run = str(path).rpartition("#")
    if sep and Path(db).is_file():
        return Path(db), run
    return path, None
