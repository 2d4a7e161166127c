"""The one way rlvitals opens its own state files (watch, serve): SQLite in WAL mode, so a reader
never blocks the writer, with a versioned schema."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

__all__ = ["connect_wal", "schema_version"]


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
