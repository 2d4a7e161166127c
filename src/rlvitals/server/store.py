"""The dashboard's workspace state in one SQLite file (WAL, stdlib sqlite3).

``runs`` remembers every run served: its path, served folder, last step, verdict and version
(a counter bumped each time the run grew and was diagnosed again), so a restarted server lists
the runs with their last known state while it re-reads the logs, and versions keep counting up
(a page open across the restart sees a newer version, never an older one). ``sources`` keeps
each followed log's cursor (see :class:`rlvitals.run.follow.Follow`). ``readings`` keeps what a whole read
of a quiet log gave (:mod:`.quiet`): its signature then, and its runs as the run list says them, so a restarted
server lists an unchanged log's runs without reading it again. Several servers may share one file: WAL lets
one write while the others read.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .._sqlite import connect_wal, schema_version
from ..errors import RlvitalsError
from ..words import Words
from .quiet import Found, Reading

SCHEMA = 1
_TABLES = (
    "CREATE TABLE IF NOT EXISTS schema (version INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS runs (id TEXT PRIMARY KEY, path TEXT NOT NULL, root TEXT NOT NULL, "
    "last_step INTEGER NOT NULL, verdict TEXT NOT NULL, version INTEGER NOT NULL, seen REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS sources (path TEXT PRIMARY KEY, state TEXT NOT NULL)",
    # added within layout 1: a state file written before it just has no readings yet
    "CREATE TABLE IF NOT EXISTS readings (path TEXT PRIMARY KEY, signature TEXT NOT NULL, runs TEXT NOT NULL)",
)


@dataclass(frozen=True)
class RunRow:
    """What the state file remembers of one run."""

    id: str
    path: str
    root: str
    last_step: int
    verdict: str
    version: int
    seen: float


class ServeState:
    """Open (or create) the state file at ``path``.

    Example:
        >>> import tempfile
        >>> st = ServeState(Path(tempfile.mkdtemp()) / "serve.sqlite")
        >>> st.save_run(RunRow("ab12", "/runs/a.log", "/runs", 10, "ok", 1, 0.0)); st.runs()["ab12"].last_step
        10
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()  # one connection shared by the poll thread and the request threads
        try:
            self.db = connect_wal(path, _TABLES, threads=True)
            self._check_version()
        except (sqlite3.DatabaseError, OSError) as exc:
            raise RlvitalsError(Words(f"{path}: cannot use this file as the dashboard state ({exc}); expected a "
                                      "serve.sqlite written by 'rlvitals serve' — pass --state NEW_FILE",
                                      f"{path}：不能把这个文件用作看板状态（{exc}）；应为 'rlvitals serve' 写出的 "
                                      "serve.sqlite。请传入 --state NEW_FILE")) from exc

    def _check_version(self) -> None:
        version = schema_version(self.db, SCHEMA)
        if version != SCHEMA:
            raise RlvitalsError(Words(f"{self.path}: dashboard state of layout version {version}; this rlvitals "
                                      f"writes version {SCHEMA} — pass --state NEW_FILE or delete the old file",
                                      f"{self.path}：看板状态的布局版本是 {version}，而这个 rlvitals 写的是版本 "
                                      f"{SCHEMA}；请传入 --state NEW_FILE，或删掉旧文件"))

    def journal_mode(self) -> str:
        with self._lock:
            return str(self.db.execute("PRAGMA journal_mode").fetchone()[0])

    def runs(self) -> dict[str, RunRow]:
        with self._lock:
            rows = self.db.execute("SELECT id, path, root, last_step, verdict, version, seen FROM runs").fetchall()
        return {r[0]: RunRow(r[0], _path(r[1]), _path(r[2]), *r[3:]) for r in rows}

    def save_run(self, row: RunRow) -> None:
        with self._lock:
            self.db.execute("INSERT OR REPLACE INTO runs (id, path, root, last_step, verdict, version, seen) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?)", (row.id, _stored(row.path), _stored(row.root),
                                                            row.last_step, row.verdict, row.version, row.seen))

    def sources(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            rows = self.db.execute("SELECT path, state FROM sources").fetchall()
        return {_path(path): json.loads(state) for path, state in rows}

    def save_source(self, path: str, state: dict[str, Any]) -> None:
        with self._lock:
            self.db.execute("INSERT OR REPLACE INTO sources (path, state) VALUES (?, ?)",
                            (_stored(path), json.dumps(state)))

    def readings(self) -> dict[str, Reading]:
        """The last whole reading of each quiet log, by path (:mod:`.quiet`); a row this rlvitals cannot
        make sense of is left out (the log is then read again)."""
        with self._lock:
            rows = self.db.execute("SELECT path, signature, runs FROM readings").fetchall()
        out = {}
        for path, sig, runs in rows:
            try:
                found = tuple(Found(r["path"], int(r["last_step"]), str(r["verdict"]), dict(r["facts"]))
                              for r in orjson.loads(runs))
                signature = tuple((str(n), int(size), int(ns), int(ino)) for n, size, ns, ino in orjson.loads(sig))
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                continue
            out[_path(path)] = Reading(_path(path), signature, found)
        return out

    def save_reading(self, reading: Reading) -> None:
        """Keep ``reading`` (one with a signature: read whole while the log stood still)."""
        runs = [{"path": f.path, "last_step": f.last_step, "verdict": f.verdict, "facts": f.facts}
                for f in reading.runs]
        with self._lock:
            self.db.execute("INSERT OR REPLACE INTO readings (path, signature, runs) VALUES (?, ?, ?)",
                            (_stored(reading.path), orjson.dumps(reading.signature).decode(),
                             orjson.dumps(runs, option=orjson.OPT_SERIALIZE_NUMPY).decode()))

    def forget_reading(self, path: str) -> None:
        """The log at ``path`` is followed now: its last whole reading no longer says what it holds."""
        with self._lock:
            self.db.execute("DELETE FROM readings WHERE path = ?", (_stored(path),))

    def forget_source(self, path: str, runs: set[str]) -> None:
        """The log at ``path`` is read with the training folder that holds it now: its runs (ids ``runs``), its
        read position and its last whole reading are forgotten (a restart lists the folder's run alone)."""
        with self._lock:
            self.db.executemany("DELETE FROM runs WHERE id = ?", [(rid,) for rid in sorted(runs)])
            self.db.execute("DELETE FROM sources WHERE path = ?", (_stored(path),))
            self.db.execute("DELETE FROM readings WHERE path = ?", (_stored(path),))

    def close(self) -> None:
        with self._lock:
            self.db.close()


def _stored(path: str) -> str | bytes:
    """A path as its column holds it: text, or for a name that is not UTF-8 (which SQLite's text cannot hold)
    its bytes, which a column of text affinity keeps as they are."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(path)
    return path


def _path(value: str | bytes) -> str:
    return os.fsdecode(value) if isinstance(value, bytes) else value
