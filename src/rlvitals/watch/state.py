"""What a watcher keeps across its own restarts, in one SQLite file (WAL mode, stdlib sqlite3).

Tables: ``sources`` (each watched path's cursor: where reading stopped and which file that
was, and what its reader learned: framework, config, notes, skips), ``records`` (every record
read from a text log, in order), ``layouts`` (the key lists the records' values follow),
``keys`` (the alert policy's memory of every finding key) and ``alerts`` (every alert raised,
with the sinks it has not reached yet).

A text log's records are stored as they are read, in the transaction that moves its cursor
past them, so a restart rebuilds the Run exactly from the state file alone: a file deleted or
replaced since (a trainer that recreated its log, a rotated backup dropped) takes nothing with
it, and no gap opens in a series to raise a false alert. A record is one row: its step, the id
of its key list (a log's steps mostly share one) and its values as float64 bytes (exact, NaN
and infinities included), about a third of the size of the JSON line it came from.

An alert is written with its pending sinks in the same transaction as the policy state that
raised it, before any sink is called; a sink that delivers it is struck off. So a watcher
killed at any point neither forgets an alert (a restart delivers what is still pending) nor
raises it twice (the policy state says it was raised). ``schema`` holds the layout's version;
a file of another version is refused with the fix rather than misread.
"""

from __future__ import annotations

import json
import sqlite3
from array import array
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from .._sqlite import connect_wal, schema_version
from ..errors import RlvitalsError
from ..ingest import Record
from ..ingest.record import Packed, Value
from .alerts import Alert, KeyState

SCHEMA = 2
_TABLES = (
    "CREATE TABLE IF NOT EXISTS schema (version INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS sources (id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, state TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS layouts (source INTEGER NOT NULL, id INTEGER NOT NULL, keys BLOB NOT NULL, "
    "PRIMARY KEY (source, id)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS records (source INTEGER NOT NULL, seq INTEGER NOT NULL, step INTEGER NOT NULL, "
    "layout INTEGER NOT NULL, nums BLOB NOT NULL, texts BLOB, summary INTEGER NOT NULL DEFAULT 0, "
    "PRIMARY KEY (source, seq)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS keys (key TEXT PRIMARY KEY, state TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS alerts (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, "
    "status TEXT NOT NULL, at REAL NOT NULL, alert TEXT NOT NULL, pending TEXT NOT NULL)",
)


def default_state_path(first: Path) -> Path:
    """``.rlvitals/watch.sqlite`` in the folder of the first log (or in the folder watched).

    Example:
        >>> default_state_path(Path("/runs/a/train.log"))
        PosixPath('/runs/a/.rlvitals/watch.sqlite')
    """
    folder = first if first.is_dir() else first.parent
    return folder / ".rlvitals" / "watch.sqlite"


class WatchState:
    """The watcher's persistent memory. ``WatchState(path)`` opens or creates it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.db = connect_wal(path, _TABLES)
            self._check_version()
        except (sqlite3.DatabaseError, OSError) as exc:
            raise RlvitalsError(f"{path}: cannot use this file as the watch state ({exc}); expected a "
                                "watch.sqlite written by 'rlvitals watch' — pass --state NEW_FILE or "
                                "delete this one to start afresh") from None

    def _check_version(self) -> None:
        version = schema_version(self.db, SCHEMA)
        if version != SCHEMA:
            raise sqlite3.DatabaseError(f"its schema version is {version}, this rlvitals writes {SCHEMA}")

    def close(self) -> None:
        self.db.close()

    def sources(self) -> dict[str, dict[str, Any]]:
        return {p: json.loads(s) for p, s in self.db.execute("SELECT path, state FROM sources")}

    def keys(self) -> dict[str, KeyState]:
        return {k: KeyState.from_json(json.loads(s)) for k, s in self.db.execute("SELECT key, state FROM keys")}

    def packed(self, path: str) -> list[Packed]:
        """The records stored for the log ``path``, in the order they were read, packed as they are
        stored (a tenth of the memory of their dicts; the records of one layout share its key tuple):
        what a restarted watcher rebuilds its run from."""
        row = self.db.execute("SELECT id FROM sources WHERE path = ?", (path,)).fetchone()
        if row is None:
            return []
        source = int(row[0])
        layouts = {i: tuple(orjson.loads(k)) for i, k in
                   self.db.execute("SELECT id, keys FROM layouts WHERE source = ?", (source,))}
        return [(int(step), layouts[layout], bytes(nums), texts, bool(summary)) for step, layout, nums, texts, summary
                in self.db.execute("SELECT step, layout, nums, texts, summary FROM records WHERE source = ? "
                                   "ORDER BY seq", (source,))]

    def records(self, path: str) -> list[Record]:
        """The records stored for the log ``path``, in the order they were read."""
        where = f"{path} (stored)"
        out = []
        for step, names, nums, texts, summary in self.packed(path):
            values: dict[str, Value] = dict(zip(names, array("d", nums), strict=True))
            if texts is not None:
                values.update(orjson.loads(texts))
            out.append(Record(step, values, where, "summary" if summary else "metrics"))
        return out

    def commit(self, sources: Mapping[str, Mapping[str, Any]], keys: Mapping[str, KeyState],
               alerts: list[Alert], sinks: list[str],
               records: Mapping[str, tuple[bool, Sequence[Packed]]] | None = None) -> list[int]:
        """Store the cursors, the policy state of ``keys`` (inserted or updated; keys not given
        are left as they are), the new alerts (pending for ``sinks``) and the records read since
        the last commit (``path -> (replace the stored ones?, records)``) in one transaction;
        returns the alerts' ids."""
        ids = []
        with self._transaction():
            self.db.executemany("INSERT INTO sources (path, state) VALUES (?, ?) "
                                "ON CONFLICT (path) DO UPDATE SET state = excluded.state",
                                [(p, json.dumps(s)) for p, s in sources.items()])
            for path, (reset, new) in (records or {}).items():
                self._store(path, reset, new)
            # only the keys given: another watcher (or a Monitor) sharing this file keeps its own
            self.db.executemany("INSERT INTO keys VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET state = excluded.state",
                                [(k, json.dumps(s.to_json())) for k, s in keys.items()])
            for alert in alerts:
                cur = self.db.execute("INSERT INTO alerts (key, status, at, alert, pending) VALUES (?, ?, ?, ?, ?)",
                                      (alert.key, alert.status, alert.at, json.dumps(alert.to_json()),
                                       json.dumps(sinks)))
                ids.append(int(cur.lastrowid or 0))
        return ids

    def _store(self, path: str, reset: bool, new: Sequence[Packed]) -> None:
        """Append ``new`` to the records of ``path`` (after dropping the stored ones if ``reset``)."""
        row = self.db.execute("SELECT id FROM sources WHERE path = ?", (path,)).fetchone()
        if row is None:
            self.db.execute("INSERT INTO sources (path, state) VALUES (?, '{}')", (path,))
            row = self.db.execute("SELECT id FROM sources WHERE path = ?", (path,)).fetchone()
        source = int(row[0])
        if reset:
            self.db.execute("DELETE FROM records WHERE source = ?", (source,))
            self.db.execute("DELETE FROM layouts WHERE source = ?", (source,))
        stored = {tuple(orjson.loads(k)): int(i) for i, k in
                  self.db.execute("SELECT id, keys FROM layouts WHERE source = ?", (source,))}
        seq = int(self.db.execute("SELECT COALESCE(MAX(seq), -1) FROM records WHERE source = ?",
                                  (source,)).fetchone()[0])
        rows = []
        for step, names, nums, texts, summary in new:
            layout = stored.get(names)
            if layout is None:
                layout = stored[names] = len(stored)
                self.db.execute("INSERT INTO layouts VALUES (?, ?, ?)", (source, layout, orjson.dumps(list(names))))
            seq += 1
            rows.append((source, seq, step, layout, nums, texts, int(summary)))
        self.db.executemany("INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?)", rows)

    def delivered(self, alert_id: int, sink: str) -> None:
        """Strike ``sink`` off the alert's pending list."""
        with self._transaction():
            row = self.db.execute("SELECT pending FROM alerts WHERE id = ?", (alert_id,)).fetchone()
            if row is not None:
                left = [s for s in json.loads(row[0]) if s != sink]
                self.db.execute("UPDATE alerts SET pending = ? WHERE id = ?", (json.dumps(left), alert_id))

    def pending(self) -> list[tuple[int, Alert, list[str]]]:
        """Alerts some sink has not received yet (the watcher stopped before sending them)."""
        rows = self.db.execute("SELECT id, alert, pending FROM alerts WHERE pending != '[]' ORDER BY id")
        return [(i, Alert.from_json(json.loads(a)), json.loads(p)) for i, a, p in rows]

    def alerts(self) -> list[Alert]:
        """Every alert ever raised, oldest first."""
        return [Alert.from_json(json.loads(a)) for (a,) in self.db.execute("SELECT alert FROM alerts ORDER BY id")]

    def _transaction(self) -> _Tx:
        return _Tx(self.db)


class _Tx:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, value: object, tb: object) -> None:
        self.db.execute("COMMIT" if kind is None else "ROLLBACK")
