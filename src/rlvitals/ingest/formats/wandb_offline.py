"""W&B offline runs (``wandb/offline-run-*/run-<id>.wandb``), read without the wandb package.

The ``.wandb`` file is a LevelDB-style log (:mod:`._leveldb`) after a 7-byte header (``:W&B``,
``0xBEE1`` little endian, a version byte). Each record is a ``wandb_internal.Record`` protobuf; the fields read here
(numbers from wandb's ``wandb_internal.proto``):

- Record: ``history=2``, ``summary=3``, ``config=5``, ``run=17``
- HistoryRecord: ``item=1`` repeated, ``step=2`` {``num=1``}
- HistoryItem: ``key=1``, ``nested_key=2`` repeated, ``value_json=16``, or a typed value
  ``none=3``, ``boolean=4``, ``integer=5`` (sint64), ``number=6`` (double), ``text=7``,
  ``json=8``
- SummaryRecord / ConfigRecord: ``update=1`` and ``remove=2`` of items (``key=1``,
  ``nested_key=2``, ``value_json=16``); RunRecord: ``config=4``

Values are JSON: numbers, ``NaN``/``Infinity``/``-Infinity`` (as wandb writes them),
booleans, strings. A nested dict is logged as items with a ``nested_key`` path, read here
as ``a.b``; tables, images and histograms (a dict with ``_type``) are not metrics and are
dropped. ``_step``/``_runtime``/``_timestamp`` are not metrics either: ``_timestamp`` (or
``_runtime``) is each record's wall time (:class:`._wall.WandbClock`).

Step axis: ``_step`` counts every ``wandb.log`` call, so when rows carry
``train/global_step`` (HF/TRL, OpenRLHF; OpenRLHF's eval rows carry ``eval/global_step``)
that is the step. A row without it is placed at the last global step logged before it
(what W&B's ``step_sync`` does). The choice is made on the first rows: if none of the
first :data:`LOOKAHEAD` rows has a global step, ``_step`` is the axis for the whole run.

A killed run leaves an incomplete tail: everything complete is read and the tail counts as
one skip. The run folder's ``files/output.log`` (W&B's copy of the console) says how the run
ended: read by its own console reader (or scanned alone) for a crash. Without a ``.wandb``
file, ``files/wandb-history.jsonl`` (older wandb) is read.
The config goes to ``meta.config`` flattened with dots; summary keys that never appear in
the history (HF's ``train_runtime``, ``total_flos``) become a summary record.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from ...errors import InputError
from ...words import Words
from .._config import TOO_DEEP, Cut, dotted, too_deep
from .._files import open_file, regular
from .._leveldb import frames
from .._profiling import StepZero
from .._protobuf import FIXED64, LEN, VARINT, WireError, double, fields, text, zigzag
from .._reader import Reader
from .._wall import WandbClock
from ..record import Record, SkipLog, SourceMeta, Value
from ..text import BOM, iter_lines, json_objects
from . import openrlhf_bars, openrlhf_console, plain_console, trl_console, verl_console

FORMAT = "wandb-offline"

MAGIC = b":W&B\xe1\xbe"
_HEADER = Words("W&B header (':W&B' + 0xBEE1)", "W&B 文件头（':W&B' + 0xBEE1）")
#: rows read before deciding between ``train/global_step`` and ``_step`` as the step axis
LOOKAHEAD = 1000
STEP_KEYS = ("train/global_step", "eval/global_step")
SYSTEM_KEYS = frozenset({"_step", "_runtime", "_timestamp"})
_RUN_DIR = re.compile(r"(?:offline-)?run-.+")
_NAN = math.nan

# --- protobuf payloads -------------------------------------------------------------------------

def _json_value(raw: str) -> Value | None:
    """A value_json as a metric value: a number (``NaN``/``Infinity`` included), a bool,
    null (NaN) or a string; None for lists and dicts."""
    try:
        return float(raw)
    except ValueError:
        pass
    if raw in ("true", "false"):
        return 1.0 if raw == "true" else 0.0
    if raw == "null":
        return _NAN
    if raw.startswith('"'):
        try:
            got = json.loads(raw)
        except ValueError:
            return None
        return got if isinstance(got, str) else None
    return None


def _item(buf: bytes, a: int, b: int) -> tuple[str, Value | None, bool]:
    """``(key, value, is_type_marker)`` of a HistoryItem / SummaryItem."""
    key = ""
    path: list[str] = []
    value: Value | None = None
    for num, wire, x, y in fields(buf, a, b):
        if num == 1 and wire == LEN:
            key = text(buf, x, y)
        elif num == 2 and wire == LEN:
            path.append(text(buf, x, y))
        elif (num == 16 or num == 8) and wire == LEN:
            value = _json_value(text(buf, x, y))
        elif num == 6 and wire == FIXED64:
            value = double(buf, x)
        elif num == 5 and wire == VARINT:
            value = float(zigzag(x))
        elif num == 4 and wire == VARINT:
            value = float(x != 0)
        elif num == 3 and wire == VARINT:
            value = _NAN
        elif num == 7 and wire == LEN:
            value = text(buf, x, y)
    if path:
        key = ".".join(path)
        return key, value, path[-1] == "_type"
    return key, value, False


def _item_fast(buf: bytes, a: int, b: int, keys: dict[bytes, str]) -> tuple[str, Value | None, bool]:
    """:func:`_item` for the common shape ``nested_key=[one key]`` + ``value_json`` (both
    shorter than 128 bytes): ``12 <n> <key> 82 01 <m> <json>``; anything else goes the long way."""
    if b - a > 5 and buf[a] == 0x12 and buf[a + 1] < 0x80:
        k_end = a + 2 + buf[a + 1]
        if k_end + 3 <= b and buf[k_end] == 0x82 and buf[k_end + 1] == 0x01 and buf[k_end + 2] == b - k_end - 3:
            raw = buf[a + 2:k_end]
            key = keys.get(raw)
            if key is None:
                key = raw.decode("utf-8", "replace")
                if len(keys) < 100_000:
                    keys[raw] = key
            value_raw = buf[k_end + 3:b]
            try:
                return key, float(value_raw), False
            except ValueError:
                return key, _json_value(value_raw.decode("utf-8", "replace")), False
    return _item(buf, a, b)


def _items(buf: bytes, a: int, b: int, keys: dict[bytes, str]) -> tuple[dict[str, Value], list[tuple[int, int]]]:
    """The items (field 1) of a history row or summary update, without media (tables,
    images...), and the spans of field 2 (a HistoryRecord's step, a summary's removals)."""
    out: dict[str, Value] = {}
    media: list[str] = []
    second: list[tuple[int, int]] = []
    for num, wire, x, y in fields(buf, a, b):
        if wire != LEN:
            continue
        if num == 1:
            key, value, marker = _item_fast(buf, x, y, keys)
            if marker:
                media.append(key[: -len("._type")])
            elif value is not None:
                out[key] = value
        elif num == 2:
            second.append((x, y))
    for prefix in media:
        dotted = prefix + "."
        for key in [k for k in out if k == prefix or k.startswith(dotted)]:
            del out[key]
    return out, second


def _history(buf: bytes, a: int, b: int, keys: dict[bytes, str]) -> tuple[dict[str, Value], int | None]:
    row, steps = _items(buf, a, b, keys)
    step: int | None = None
    for x, y in steps:
        step = 0
        for num, wire, value, _ in fields(buf, x, y):
            if num == 1 and wire == VARINT:
                step = value
    return row, step


def _config(buf: bytes, a: int, b: int, config: dict[str, Any]) -> list[Cut]:
    """Apply a ConfigRecord's updates and removals to ``config`` (flattened with dots); what was left out,
    nested too deep (:func:`._config.dotted`)."""
    cut: list[Cut] = []
    for num, wire, x, y in fields(buf, a, b):
        if num not in (1, 2) or wire != LEN:
            continue
        key = ""
        path: list[str] = []
        raw = "null"
        for inum, iwire, ia, ib in fields(buf, x, y):
            if inum == 1 and iwire == LEN:
                key = text(buf, ia, ib)
            elif inum == 2 and iwire == LEN:
                path.append(text(buf, ia, ib))
            elif inum == 16 and iwire == LEN:
                raw = text(buf, ia, ib)
        key = ".".join(path) if path else key
        if key.startswith("_wandb"):
            continue
        if num == 2:
            for k in [k for k in config if k == key or k.startswith(key + ".")]:
                del config[k]
            continue
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        except RecursionError:  # nested past the parser's stack: far deeper than dotted() keeps
            value = TOO_DEEP
        cut += dotted(key, value, config)
    return cut


# --- the step axis -----------------------------------------------------------------------------

def _as_step(value: Value | None) -> int | None:
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


class _Axis:
    """Turns history rows into Records on the right step axis (see the module docstring)."""

    def __init__(self, meta: SourceMeta, path: Path) -> None:
        self.meta = meta
        self.zero = StepZero(str(path))  # TRL's profiling rows at global step 0: no training step
        self.mode: str | None = None  # None until decided, then "global" or "_step"
        self.pending: list[tuple[dict[str, Value], int, str]] = []
        self.first: int | None = None  # the first global step, for rows logged before it
        self.last: int | None = None
        self.carried = 0
        self.clock = WandbClock(meta)

    def add(self, row: dict[str, Value], plain: int, where: str) -> Iterator[Record]:
        if self.mode is None:
            self.first = _global_step(row)
            if self.first is not None:
                self.mode = "global"
            elif len(self.pending) < LOOKAHEAD:
                self.pending.append((row, plain, where))
                return
            else:
                self.mode = "_step"
            pending, self.pending = self.pending, []
            for old in pending:
                yield from self._emit(*old)
        yield from self._emit(row, plain, where)

    def finish(self) -> Iterator[Record]:
        if self.mode is None:
            self.mode = "_step"
        pending, self.pending = self.pending, []
        for old in pending:
            yield from self._emit(*old)
        if self.carried:
            self.meta.notes.append(Words(
                f"{self.carried} W&B history rows had no train/global_step; each was placed at the "
                "last global step logged before it (the first one for rows before any)",
                f"有 {self.carried} 行 W&B history 没有 train/global_step；每一行都放在它之前记录的最后一个"
                "global step 上（在任何 global step 之前的行放在第一个上）"))
        self.zero.note(self.meta)

    def _emit(self, row: dict[str, Value], plain: int, where: str) -> Iterator[Record]:
        values = {k: v for k, v in row.items() if k not in SYSTEM_KEYS}
        if self.mode == "_step":
            step = plain
        else:
            for key in STEP_KEYS:
                values.pop(key, None)
            found = _global_step(row)
            if found is None:
                step = self.last if self.last is not None else self.first or 0
                if values:
                    self.carried += 1
            else:
                step = self.last = found
                if self.zero.drops(step, values):
                    return
        if values:
            yield Record(step, values, where, wall=self.clock.wall(row))


def _global_step(row: dict[str, Value]) -> int | None:
    for key in STEP_KEYS:
        step = _as_step(row.get(key))
        if step is not None:
            return step
    return None


# --- sources -----------------------------------------------------------------------------------

class _Summary:
    """The latest summary value per key, kept until the end (bounded by the number of keys)."""

    def __init__(self, keys: dict[bytes, str]) -> None:
        self.values: dict[str, Value] = {}
        self.history_keys: set[str] = set()
        self.keys = keys

    def update(self, buf: bytes, a: int, b: int) -> None:
        updates, removals = _items(buf, a, b, self.keys)
        for x, y in removals:
            self.values.pop(_item(buf, x, y)[0], None)
        for key, value in updates.items():
            if not key.startswith("_"):
                self.values[key] = value

    def record(self, where: str) -> Record | None:
        left = {k: v for k, v in self.values.items()
                if k not in self.history_keys and k not in STEP_KEYS and not k.startswith("_")}
        return Record(0, left, where, kind="summary") if left else None


def _read_wandb_file(path: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    axis = _Axis(meta, path)
    keys: dict[bytes, str] = {}
    summary = _Summary(keys)
    rows = 0
    for number, payload in frames(path, meta, skips, MAGIC, _HEADER):
        where = f"{path}#record {number}"
        try:
            for num, wire, a, b in fields(payload, 0, len(payload)):
                if wire != LEN:
                    continue
                if num == 2:
                    row, step = _history(payload, a, b, keys)
                    summary.history_keys.update(row)
                    plain = _as_step(row.get("_step"))
                    plain = plain if plain is not None else step if step is not None else rows
                    rows += 1
                    yield from axis.add(row, plain, where)
                elif num == 3:
                    summary.update(payload, a, b)
                elif num == 5:
                    too_deep(where, _config(payload, a, b, meta.config), skips)
                elif num == 17:
                    for rnum, rwire, ra, rb in fields(payload, a, b):
                        if rnum == 4 and rwire == LEN:
                            too_deep(where, _config(payload, ra, rb, meta.config), skips)
        except (WireError, IndexError) as exc:
            skips.skip(where, Words(f"not a W&B record ({exc or type(exc).__name__}); the record was skipped",
                                    f"不是 W&B 记录（{exc or type(exc).__name__}）；这条记录已跳过"))
    yield from axis.finish()
    last = summary.record(f"{path}#summary")
    if last is not None:
        yield last


def _flat_row(obj: dict[str, Any], prefix: str, out: dict[str, Value]) -> None:
    for key, value in obj.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            if "_type" not in value:
                _flat_row(value, name + ".", out)
        elif isinstance(value, (bool, int, float)):
            out[name] = float(value)
        elif value is None:
            out[name] = _NAN
        elif isinstance(value, str):
            out[name] = value


def _read_history_jsonl(path: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    axis = _Axis(meta, path)
    # wandb writes NaN and Infinity, which strict JSON parsers refuse (json_objects reads them)
    expected = Words("a JSON object (one history row)", "JSON 对象（一行 history）")
    for lineno, _, obj in json_objects(path, meta, skips, expected):
        where = f"{path}:{lineno}"
        row: dict[str, Value] = {}
        _flat_row(obj, "", row)
        plain = _as_step(row.get("_step"))
        yield from axis.add(row, plain if plain is not None else lineno - 1, where)
    yield from axis.finish()


# --- the reader --------------------------------------------------------------------------------

def _wandb_files(folder: Path, skips: SkipLog | None = None) -> list[Path]:
    """The ``.wandb`` files of a run folder; a FIFO or a device named like one is not opened, and counted in
    ``skips``."""
    try:
        named = sorted(p for p in folder.iterdir() if p.suffix == ".wandb")
    except OSError:
        return []
    return [p for p in regular(named, skips if skips is not None else SkipLog()) if p.is_file()]


def _is_run_dir(folder: Path) -> bool:
    return bool(_wandb_files(folder)) or (folder / "files" / "wandb-history.jsonl").is_file()


def _run_dirs(folder: Path) -> list[Path]:
    seen: dict[Path, Path] = {}
    try:
        children = sorted(folder.iterdir())
    except OSError:
        return []
    for child in children:
        if _RUN_DIR.fullmatch(child.name) and child.is_dir() and _is_run_dir(child):
            seen.setdefault(child.resolve(), child)
    return list(seen.values())


def sniff(path: Path, head: bytes) -> bool:
    if path.is_file():
        return head.startswith(MAGIC)
    return _is_run_dir(path) or bool(_run_dirs(path))


def runs(path: Path) -> list[Path]:
    """One root per run: the ``.wandb`` file or run folder itself, or every run folder in a
    ``wandb/`` folder (``latest-run`` is a link to one of them and is not counted twice)."""
    if path.is_file() or _is_run_dir(path):
        return [path]
    return _run_dirs(path) or [path]


#: the formats a run's console copy (``files/output.log``) may be in, in the registry's sniffing order
#: (:data:`rlvitals.ingest.READER_MODULES`; a test holds the two to one order)
CONSOLES: tuple[ModuleType, ...] = (verl_console, openrlhf_bars, openrlhf_console, trl_console, plain_console)


def _console_reader(log: Path) -> Reader | None:
    """The console format ``log`` is in (the first of :data:`CONSOLES` whose sniffer takes it), or None."""
    with open_file(log) as fh:
        head = fh.read(64 << 10).removeprefix(BOM)  # a sniffer reads what follows a byte-order mark
    for module in CONSOLES:
        options: tuple[Reader, ...] = module.READERS if hasattr(module, "READERS") else (module.READER,)
        for reader in options:
            try:
                if not reader.takes_dir and reader.sniff(log, head):
                    return reader
            except (ValueError, RecursionError, UnicodeError):  # bytes no console writes: not this one
                continue
    return None


def _console_ending(folder: Path, meta: SourceMeta) -> None:
    """The crash in the run's console copy (``files/output.log``), if it has one: read by the console format it
    is in (the consoles in the registry's sniffing order), else scanned for a traceback alone."""
    from .._crash import CrashScanner

    log = folder / "files" / "output.log"
    if not log.is_file() or log.stat().st_size == 0:
        return
    seen = SourceMeta(format="console", files=[str(log)])
    reader = _console_reader(log)
    try:
        for _ in reader.read(log, seen, SkipLog()) if reader is not None else ():
            pass
    except InputError:  # not a console it reads after all
        reader = None
    if reader is None:  # no console format: the traceback alone can still be there
        scanner = CrashScanner(log)
        for lineno, line in iter_lines(log, seen):
            scanner.feed(lineno, line)
        seen.crash, seen.crash_scanned = scanner.crash(), True
    meta.crash, meta.crash_scanned = seen.crash, seen.crash_scanned


def read(path: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    if path.is_file():
        meta.files = [str(path)]
        yield from _read_wandb_file(path, meta, skips)
        _console_ending(path.parent, meta)
        return
    files = _wandb_files(path, skips)
    if files:
        meta.files = [str(f) for f in files]
        for file in files:
            yield from _read_wandb_file(file, meta, skips)
        _console_ending(path, meta)
        return
    history = path / "files" / "wandb-history.jsonl"
    if history.is_file():
        meta.files = [str(history)]
        meta.notes.append(Words("no .wandb file in the run folder; read files/wandb-history.jsonl "
                                "(the run config was not read)",
                                "运行文件夹里没有 .wandb 文件；读取了 files/wandb-history.jsonl（没有读到运行的配置）"))
        yield from _read_history_jsonl(history, meta, skips)


#: the same reader for both forms: a file (event file, .wandb file, SQLite database) or a folder
DESCRIBES = "a W&B offline run (run-<id>.wandb), or a wandb/ folder of runs"
READER = Reader(FORMAT, sniff, read, runs=runs, describes=DESCRIBES)
DIR_READER = Reader(FORMAT, sniff, read, takes_dir=True, runs=runs, describes=DESCRIBES)
READERS = (READER, DIR_READER)
