"""What a watcher keeps across its own restarts, in one SQLite file (WAL mode, stdlib sqlite3).

Tables: ``sources`` (each watched path's cursor: where reading stopped and which file that
was, and what its reader learned: framework, config, notes, skips), ``blocks`` and ``records``
(every record read from a text log, in order: all but the newest packed as compressed blocks of up
to :data:`BLOCK` records, the newest one row each), ``layouts`` (the key lists the records' values follow),
``keys`` (the alert policy's memory of every finding key) and ``alerts`` (every alert raised,
with the sinks it has not reached yet).

A text log's records are stored as they are read, in the transaction that moves its cursor
past them, so a restart rebuilds the Run exactly from the state file alone: a file deleted or
replaced since (a trainer that recreated its log, a rotated backup dropped) takes nothing with
it, and no gap opens in a series to raise a false alert. A record is its step, the id of its key list (a
log's steps mostly share one) and its values as float64 (exact, NaN and infinities included). Once
:data:`MIN_BLOCK` records wait as rows, they are rewritten as a block (:mod:`.blocks`): each key's
values side by side, compressed; the last block, until it is full, is packed again with them.

An alert is written with its pending sinks in the same transaction as the policy state that
raised it, before any sink is called; a sink that delivers it is struck off. So a watcher
killed at any point neither forgets an alert (a restart delivers what is still pending) nor
raises it twice (the policy state says it was raised). ``schema`` holds the layout's version;
a file of version 2 (records as rows only) is read as it is and written on in version 3; a file of
another version is refused with the fix rather than misread.
"""

from __future__ import annotations

import json
import sqlite3
from array import array
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, overload

import orjson

from .._sqlite import connect_wal, schema_version
from ..errors import RlvitalsError
from ..ingest import WALL_KEY, Record
from ..ingest.record import Packed, Value
from ..live.alerts import Alert, KeyState, upgraded
from ..words import Words
from .blocks import BlockError, decode, encode

SCHEMA = 3
#: version 2 had no blocks table: the same file with it added (all its records rows) is version 3
_UPGRADES = {2}
#: records in a full block; rows are packed into a block once :data:`MIN_BLOCK` wait, with the last
#: block when it is not full: every block but the last holds :data:`BLOCK` records
BLOCK, MIN_BLOCK = 512, 64
_TABLES = (
    "CREATE TABLE IF NOT EXISTS schema (version INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS sources (id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, state TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS layouts (source INTEGER NOT NULL, id INTEGER NOT NULL, keys BLOB NOT NULL, "
    "PRIMARY KEY (source, id)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS records (source INTEGER NOT NULL, seq INTEGER NOT NULL, step INTEGER NOT NULL, "
    "layout INTEGER NOT NULL, nums BLOB NOT NULL, texts BLOB, summary INTEGER NOT NULL DEFAULT 0, "
    "PRIMARY KEY (source, seq)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS blocks (source INTEGER NOT NULL, seq INTEGER NOT NULL, count INTEGER NOT NULL, "
    "data BLOB NOT NULL, PRIMARY KEY (source, seq))",
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
            raise RlvitalsError(Words(f"{path}: cannot use this file as the watch state ({exc}); expected a "
                                      "watch.sqlite written by 'rlvitals watch' — pass --state NEW_FILE or "
                                      "delete this one to start afresh",
                                      f"{path}：不能把这个文件用作 watch 状态（{exc}）；应为 'rlvitals watch' 写出的 "
                                      "watch.sqlite。请传入 --state NEW_FILE，或删掉这个文件重新开始")) from None

    def _check_version(self) -> None:
        version = schema_version(self.db, SCHEMA)
        if version in _UPGRADES:
            self.db.execute("UPDATE schema SET version = ?", (SCHEMA,))
        elif version != SCHEMA:
            raise sqlite3.DatabaseError(f"its schema version is {version}, this rlvitals writes {SCHEMA}")

    def close(self) -> None:
        self.db.close()

    def sources(self) -> dict[str, dict[str, Any]]:
        return {p: json.loads(s) for p, s in self.db.execute("SELECT path, state FROM sources")}

    def keys(self) -> dict[str, KeyState]:
        """The alert policy's memory, keyed as this version keys alerts (:func:`rlvitals.live.alerts.upgraded`)."""
        rows = self.db.execute("SELECT key, state FROM keys")
        return upgraded({k: KeyState.from_json(json.loads(s)) for k, s in rows})

    def packed(self, path: str) -> StoredRecords:
        """The records stored for the log ``path``, in the order they were read, packed (the records of
        one layout share its key tuple): what a restarted watcher rebuilds its run from. The blocks
        are read now and decoded one at a time as the records are iterated."""
        source = self._source(path)
        if source is None:
            return StoredRecords([], {}, [])
        layouts = self._layouts(source)
        blocks = [(int(c), bytes(d)) for c, d in self.db.execute(
            "SELECT count, data FROM blocks WHERE source = ? ORDER BY seq", (source,))]
        return StoredRecords(blocks, layouts, self._rows(source, layouts), self.path)

    def records(self, path: str) -> list[Record]:
        """The records stored for the log ``path``, in the order they were read."""
        where = f"{path} (stored)"
        out = []
        for step, names, nums, texts, summary in self.packed(path):
            values: dict[str, Value] = dict(zip(names, array("d", nums), strict=True))
            wall = values.pop(WALL_KEY, None)  # the record's time, packed beside its values (ingest.pack)
            if texts is not None:
                values.update(orjson.loads(texts))
            out.append(Record(step, values, where, "summary" if summary else "metrics",
                              wall=wall if isinstance(wall, float) else None))
        return out

    def _source(self, path: str) -> int | None:
        row = self.db.execute("SELECT id FROM sources WHERE path = ?", (path,)).fetchone()
        return None if row is None else int(row[0])

    def _layouts(self, source: int) -> dict[int, tuple[str, ...]]:
        return {int(i): tuple(orjson.loads(k)) for i, k in
                self.db.execute("SELECT id, keys FROM layouts WHERE source = ?", (source,))}

    def _rows(self, source: int, layouts: Mapping[int, tuple[str, ...]]) -> list[Packed]:
        """The records of ``source`` stored one row each (those not packed into a block yet)."""
        return [(int(step), layouts[layout], bytes(nums), texts, bool(summary)) for step, layout, nums, texts, summary
                in self.db.execute("SELECT step, layout, nums, texts, summary FROM records WHERE source = ? "
                                   "ORDER BY seq", (source,))]

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
        """Append ``new`` to the records of ``path`` (after dropping the stored ones if ``reset``); once
        :data:`BLOCK` records wait as rows, they are rewritten as blocks."""
        source = self._source(path)
        if source is None:
            self.db.execute("INSERT INTO sources (path, state) VALUES (?, '{}')", (path,))
            source = int(self.db.execute("SELECT id FROM sources WHERE path = ?", (path,)).fetchone()[0])
        if reset:
            for table in ("records", "blocks", "layouts"):
                self.db.execute(f"DELETE FROM {table} WHERE source = ?", (source,))
        ids = self._layout_ids(source, new)
        waiting = int(self.db.execute("SELECT COUNT(*) FROM records WHERE source = ?", (source,)).fetchone()[0])
        if waiting + len(new) < MIN_BLOCK:
            self._insert_rows(source, self._next_seq(source), new, ids)
            return
        layouts = self._layouts(source)
        start, batch = self._open_block(source, layouts)
        start = self._next_seq(source) - waiting if start is None else start
        batch += self._rows(source, layouts) + list(new)
        self.db.execute("DELETE FROM records WHERE source = ?", (source,))
        rest = self._insert_blocks(source, start, batch, layouts)
        self._insert_rows(source, start + len(batch) - len(rest), rest, self._ids(rest, layouts))

    def _open_block(self, source: int, layouts: Mapping[int, tuple[str, ...]]) -> tuple[int | None, list[Packed]]:
        """The last block when it is not full, taken out to be packed again with the records after it (so
        every block but the last is full): its first number and its records; ``(None, [])`` otherwise."""
        row = self.db.execute("SELECT seq, count, data FROM blocks WHERE source = ? ORDER BY seq DESC LIMIT 1",
                              (source,)).fetchone()
        if row is None or int(row[1]) >= BLOCK:
            return None, []
        records = list(StoredRecords([(int(row[1]), bytes(row[2]))], dict(layouts), [], self.path))
        self.db.execute("DELETE FROM blocks WHERE source = ? AND seq = ?", (source, row[0]))
        return int(row[0]), records

    def _insert_blocks(self, source: int, start: int, batch: Sequence[Packed],
                       layouts: Mapping[int, tuple[str, ...]]) -> Sequence[Packed]:
        """Store ``batch`` (numbered from ``start``) as blocks of up to :data:`BLOCK` records; returns the
        records left over, fewer than :data:`MIN_BLOCK`, for rows."""
        chunks = [batch[at:at + BLOCK] for at in range(0, len(batch), BLOCK)]
        rest: Sequence[Packed] = chunks.pop() if chunks and len(chunks[-1]) < MIN_BLOCK else []
        self.db.executemany("INSERT INTO blocks VALUES (?, ?, ?, ?)",
                            [(source, start + i * BLOCK, len(c), encode(c, self._ids(c, layouts)))
                             for i, c in enumerate(chunks)])
        return rest

    @staticmethod
    def _ids(records: Sequence[Packed], layouts: Mapping[int, tuple[str, ...]]) -> list[int]:
        by_names = {names: i for i, names in layouts.items()}
        return [by_names[r[1]] for r in records]

    def _layout_ids(self, source: int, new: Sequence[Packed]) -> list[int]:
        """The layout id of each record of ``new``, storing the key lists not stored yet."""
        stored = {names: i for i, names in self._layouts(source).items()}
        ids = []
        for names in (r[1] for r in new):
            layout = stored.get(names)
            if layout is None:
                layout = stored[names] = len(stored)
                self.db.execute("INSERT INTO layouts VALUES (?, ?, ?)", (source, layout, orjson.dumps(list(names))))
            ids.append(layout)
        return ids

    def _next_seq(self, source: int) -> int:
        """The number the next record of ``source`` gets (records count on across blocks and rows)."""
        row = self.db.execute("SELECT MAX(seq) + 1 FROM records WHERE source = ?", (source,)).fetchone()
        if row[0] is not None:
            return int(row[0])
        row = self.db.execute("SELECT seq + count FROM blocks WHERE source = ? ORDER BY seq DESC LIMIT 1",
                              (source,)).fetchone()
        return 0 if row is None else int(row[0])

    def _insert_rows(self, source: int, seq: int, records: Sequence[Packed], ids: Sequence[int]) -> None:
        self.db.executemany("INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?)",
                            [(source, seq + i, r[0], layout, r[2], r[3], int(r[4]))
                             for i, (r, layout) in enumerate(zip(records, ids, strict=True))])

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


class StoredRecords(Sequence[Packed]):
    """The stored records of one log: its blocks, decoded one at a time as they are iterated, then its
    records stored as rows. A damaged block raises :class:`~rlvitals.errors.RlvitalsError`."""

    def __init__(self, blocks: list[tuple[int, bytes]], layouts: dict[int, tuple[str, ...]],
                 rows: list[Packed], path: Path | None = None) -> None:
        self._blocks, self._layouts, self._rows, self._path = blocks, layouts, rows, path

    def __len__(self) -> int:
        return sum(count for count, _ in self._blocks) + len(self._rows)

    def __iter__(self) -> Iterator[Packed]:
        for number, (count, data) in enumerate(self._blocks):
            try:
                records = decode(data, self._layouts)
            except BlockError as exc:
                raise RlvitalsError(Words(
                    f"{self._path}: block {number + 1} of the stored records is damaged ({exc}); "
                    "pass --state NEW_FILE or delete this one to read the logs afresh",
                    f"{self._path}：已存记录的第 {number + 1} 块已损坏（{exc}）；"
                    "请传入 --state NEW_FILE，或删掉这个文件重新读取日志")) from None
            if len(records) != count:
                raise RlvitalsError(Words(
                    f"{self._path}: block {number + 1} of the stored records holds {len(records)} "
                    f"records, not {count}; pass --state NEW_FILE or delete this one",
                    f"{self._path}：已存记录的第 {number + 1} 块有 {len(records)} 条记录，而不是 {count} 条；"
                    "请传入 --state NEW_FILE，或删掉这个文件"))
            yield from records
        yield from self._rows

    @overload
    def __getitem__(self, index: int) -> Packed: ...

    @overload
    def __getitem__(self, index: slice) -> list[Packed]: ...

    def __getitem__(self, index: int | slice) -> Packed | list[Packed]:
        return list(self)[index]
