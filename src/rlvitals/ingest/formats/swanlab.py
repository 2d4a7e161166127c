"""SwanLab runs (``swanlog/run-<time>-<id>/run-<id>.swanlab``), read without the swanlab package.

SwanLab 0.8 and later write every run, online, offline or local, as a ``.swanlab`` file: the LevelDB-style
log of :mod:`._leveldb` after a 7-byte header (``:SWL``, ``0xE1D6`` little endian, version 2). Each record is
a ``swanlab.record.v1.Record`` protobuf; the fields read here (numbers from SwanLab's ``record.proto``,
``data.proto``, ``run.proto``):

- Record: ``num=1``, ``start=10``, ``finish=11``, ``column=12``, ``scalar=13``, ``media=14``
- ScalarRecord: ``key=1``, ``step=2``, ``timestamp=4`` {``seconds=1``, ``nanos=2``}, ``value=5`` {``number=1``
  double}; proto3 leaves a zero out (step 0, value 0.0 are absent)
- StartRecord: ``project=1``, ``name=4``, ``id=10``, ``started_at=12``; FinishRecord: ``state=1`` (1 finished,
  2 crashed, 3 aborted), ``error=2``

A key's steps rise, but keys interleave (a step's values are spread over the file), so the values are
gathered per step and handed on in step order, each step's wall time its last value's timestamp. SwanLab's
system metrics (``__swanlab__.cpu.pct``, ``__swanlab__.gpu.0.mem.pct``…) count their own steps (a sample
every 10 s), not training steps: they are left out and named in a note, as are media (text, images).

The config is ``files/config.yaml`` beside the file (``{key: {value, desc, sort}}``), flattened with dots.
A run killed while writing keeps every complete record (SwanLab buffers its writes, so the last few steps
may never have reached the file; a run killed at once leaves an empty one); a run without a finish record
was killed or is still running, and says so. Files from SwanLab before 0.8 (``backup.swanlab``, header
version 0 or 1, JSON payloads) are refused with a clear error.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ...errors import InputError
from ...words import Words
from .._config import Cut, capped_yaml, dotted, too_deep
from .._files import open_file, read_file, regular
from .._leveldb import HEADER_LEN, frames, frames_from
from .._protobuf import FIXED64, LEN, VARINT, WireError, double, fields, signed64, text
from .._reader import Reader
from ..record import LoggedTable, Record, SkipLog, SourceMeta, Value

FORMAT = "swanlab"
MAGIC = b":SWL\xd6\xe1"
VERSION = 2
SYSTEM_PREFIX = "__swanlab__."
CONFIG_FILE = Path("files") / "config.yaml"
_HEADER = Words(f"SwanLab header (':SWL' + 0xE1D6, version {VERSION})",
                f"SwanLab 文件头（':SWL' + 0xE1D6，版本 {VERSION}）")
_SNIFF_ENTRIES = 5000
#: FinishRecord.state
_FINISHED, _CRASHED, _ABORTED = 1, 2, 3
#: MediaRecord.type of an ECharts chart (``swanlab.echarts.Table`` among them)
_ECHARTS = 6


def _run_file(folder: Path) -> Path | None:
    """The run's ``run-*.swanlab`` (SwanLab writes one per run folder)."""
    try:
        found = sorted(p for p in folder.glob("run-*.swanlab") if p.is_file())
    except OSError:
        return None
    return found[0] if found else None


def _run_dirs(folder: Path) -> list[Path]:
    try:
        children = sorted(folder.iterdir())
    except OSError:
        return []
    if len(children) > _SNIFF_ENTRIES:  # a folder of thousands of files is no swanlog/: sniffing stays cheap
        return []
    return [c for c in children if c.name.startswith("run-") and c.is_dir() and _run_file(c) is not None]


def sniff(path: Path, head: bytes) -> bool:
    if path.is_file():
        return head.startswith(MAGIC)
    return _run_file(path) is not None or bool(_run_dirs(path))


def runs(path: Path) -> list[Path]:
    """One root per run: the ``.swanlab`` file or run folder itself, or every run folder of a ``swanlog/``."""
    if path.is_file() or _run_file(path) is not None:
        return [path]
    return _run_dirs(path) or [path]


def _version(path: Path) -> None:
    """Refuse a file of SwanLab before 0.8 (its records are JSON, not protobuf)."""
    with open_file(path) as fh:
        head = fh.read(HEADER_LEN)
    if len(head) == HEADER_LEN and head.startswith(MAGIC) and head[6] != VERSION:
        raise InputError(Words(f"{path}: a SwanLab log of format version {head[6]} (SwanLab before 0.8, "
                               f"backup.swanlab); rlvitals reads version {VERSION} (SwanLab 0.8 and later)",
                               f"{path}：这是格式版本 {head[6]} 的 SwanLab 日志（SwanLab 0.8 之前的 backup.swanlab）；"
                               f"rlvitals 读取的是版本 {VERSION}（SwanLab 0.8 及以后）"))


def _timestamp(buf: bytes, a: int, b: int) -> float:
    seconds, nanos = 0, 0
    for num, wire, x, _ in fields(buf, a, b):
        if wire == VARINT:
            if num == 1:
                seconds = signed64(x)
            elif num == 2:
                nanos = signed64(x)
    return seconds + nanos / 1e9


def _scalar(buf: bytes, a: int, b: int) -> tuple[str, int, float, float | None]:
    """``(key, step, value, wall)`` of a ScalarRecord (absent fields are proto3's zero)."""
    key, step, value, wall = "", 0, 0.0, None
    for num, wire, x, y in fields(buf, a, b):
        if num == 1 and wire == LEN:
            key = text(buf, x, y)
        elif num == 2 and wire == VARINT:
            step = signed64(x)
        elif num == 4 and wire == LEN:
            wall = _timestamp(buf, x, y)
        elif num == 5 and wire == LEN:
            for vnum, vwire, va, _ in fields(buf, x, y):
                if vnum == 1 and vwire == FIXED64:
                    value = double(buf, va)
    return key, step, value, wall


def _start(buf: bytes, a: int, b: int, meta: SourceMeta) -> None:
    names = {1: "project", 4: "name", 10: "id"}
    for num, wire, x, y in fields(buf, a, b):
        if num in names and wire == LEN:
            meta.config[f"swanlab.{names[num]}"] = text(buf, x, y)
        elif num == 12 and wire == LEN:
            meta.started = _timestamp(buf, x, y)


def _finish(buf: bytes, a: int, b: int) -> tuple[int, str]:
    state, error = 0, ""
    for num, wire, x, y in fields(buf, a, b):
        if num == 1 and wire == VARINT:
            state = x
        elif num == 2 and wire == LEN:
            error = text(buf, x, y)
    return state, error


class _Steps:
    """The values of each step as they come (keys interleave), and what was left out."""

    def __init__(self) -> None:
        self.values: dict[int, dict[str, Value]] = {}
        self.where: dict[int, str] = {}
        self.walls: dict[int, float] = {}
        self.system: set[str] = set()
        self.media: set[str] = set()
        self.charts: list[tuple[str, int, list[str]]] = []  # (key, step, file names) of each ECharts media
        self.finish: tuple[int, str] | None = None

    def scalar(self, key: str, step: int, value: float, wall: float | None, where: str) -> None:
        if key.startswith(SYSTEM_PREFIX):
            self.system.add(key)
            return
        if step not in self.values:
            self.values[step], self.where[step] = {}, where
        self.values[step][key] = value
        if wall is not None:
            self.walls[step] = max(wall, self.walls.get(step, wall))

    def media_key(self, buf: bytes, a: int, b: int) -> None:
        """A MediaRecord (``key=1``, ``step=2``, ``type=3``, ``value=5`` {``items=1`` {``filename=1``}}):
        its key is named in a note; an ECharts one's (type 6, a table among them) files are kept."""
        key, step, kind, names = "", 0, 0, []
        for num, wire, x, y in fields(buf, a, b):
            if num == 1 and wire == LEN:
                key = text(buf, x, y)
            elif num in (2, 3) and wire == VARINT:
                step, kind = (x, kind) if num == 2 else (step, x)
            elif num == 5 and wire == LEN:
                names += [text(buf, c, d) for n, w, i, j in fields(buf, x, y) if n == 1 and w == LEN
                          for m, v, c, d in fields(buf, i, j) if m == 1 and v == LEN]
        self.media.add(key)
        if kind == _ECHARTS:
            self.charts.append((key, step, names))

    def records(self) -> Iterator[Record]:
        for step in sorted(self.values):
            yield Record(step, self.values[step], self.where[step], wall=self.walls.get(step))


def _take(payload: bytes, where: str, steps: _Steps, meta: SourceMeta, skips: SkipLog) -> None:
    """One record of the file into ``steps`` (a scalar, a media key, the start or the finish)."""
    try:
        for num, wire, a, b in fields(payload, 0, len(payload)):
            if wire != LEN:
                continue
            if num == 13:
                steps.scalar(*_scalar(payload, a, b), where)
            elif num == 14:
                steps.media_key(payload, a, b)
            elif num == 10:
                _start(payload, a, b, meta)
            elif num == 11:
                steps.finish = _finish(payload, a, b)
    except WireError as exc:
        skips.skip(where, Words(f"not a SwanLab record ({exc}); the record was skipped",
                                f"不是 SwanLab 记录（{exc}）；这条记录已跳过"))


def _read_file(path: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    if path.stat().st_size == 0:
        skips.skip(f"{path}#record 1", Words("the file is empty: SwanLab had written nothing to it yet (the run was "
                                             "killed at once, or has only just started)",
                                             "文件是空的：SwanLab 还没有往里写任何东西"
                                             "（运行一开始就被杀掉了，或者刚刚开始）"))
        return
    _version(path)
    steps = _Steps()
    for number, payload in frames(path, meta, skips, MAGIC + bytes((VERSION,)), _HEADER):
        _take(payload, f"{path}#record {number}", steps, meta, skips)
    yield from steps.records()
    _notes(path, steps, meta)


class _Position:
    """How far a follower has read a file: the offset after the last complete record, its number, and
    what was left out so far (the steps read are handed on at each poll, not kept)."""

    def __init__(self) -> None:
        self.offset, self.number, self.steps = 0, 0, _Steps()


def since(path: Path, meta: SourceMeta, skips: SkipLog, position: Any) -> tuple[list[Record], Any]:
    """The records in the part of the run's file written after ``position`` (what the last call returned;
    None: from the start), and the new position: a follower reads each byte once. A step's values may be
    spread over two polls (keys interleave): a Run puts them together."""
    file = path if path.is_file() else _run_file(path)
    at: _Position = position or _Position()
    if file is None or file.stat().st_size < HEADER_LEN:  # nothing written yet: not a skip while it runs
        return [], at
    if position is None:
        _version(file)
    meta.files, meta.clock = [str(file)], "SwanLab timestamp"
    _config(file.parent, meta, skips if position is None else SkipLog())  # what it skips, counted once
    steps = at.steps
    read = frames_from(file, meta, skips, MAGIC + bytes((VERSION,)), _HEADER, start=at.offset, number=at.number,
                       live=True)
    for number, payload, end in read:
        _take(payload, f"{file}#record {number}", steps, meta, skips)
        at.number, at.offset = number, end
    records = list(steps.records())
    steps.values, steps.where, steps.walls = {}, {}, {}
    meta.notes.clear()  # what was left out so far, said again in full
    _notes(file, steps, meta)
    return records, at


def _listed(names: set[str]) -> str:
    shown = sorted(names)
    return ", ".join(shown[:6]) + (", …" if len(shown) > 6 else "")


def _notes(path: Path, steps: _Steps, meta: SourceMeta) -> None:
    if steps.system:
        meta.notes.append(Words(f"{path}: SwanLab's system metrics ({len(steps.system)}: {_listed(steps.system)}) "
                                "are sampled on their own clock, not at training steps; they were left out",
                                f"{path}：SwanLab 的系统指标（{len(steps.system)} 个：{_listed(steps.system)}）"
                                "按自己的时钟采样，不在训练步上；没有读入"))
    if steps.media:
        meta.notes.append(Words(f"{path}: media ({len(steps.media)}: {_listed(steps.media)}; text, images) are not "
                                "metrics; they were left out",
                                f"{path}：媒体（{len(steps.media)} 个：{_listed(steps.media)}；文本、图片）不是指标；"
                                "没有读入"))
    state, error = steps.finish or (0, "")
    if steps.finish is None:
        meta.notes.append(Words(f"{path}: no finish record: the run was killed or is still running (SwanLab "
                                "buffers its writes, so its last steps may not be in the file)",
                                f"{path}：没有结束记录：运行被杀掉了，或者还在运行（SwanLab 的写入有缓冲，"
                                "最后几步可能不在文件里）"))
    elif state in (_CRASHED, _ABORTED):
        how = Words("crashed", "崩溃") if state == _CRASHED else Words("was aborted", "被中止")
        said = f": {error.strip().splitlines()[-1]}" if error.strip() else ""
        meta.notes.append(Words(f"{path}: SwanLab recorded that the run {how}{said}",
                                f"{path}：SwanLab 记录到这个运行{how.zh}{said}"))


def _config(folder: Path, meta: SourceMeta, skips: SkipLog) -> None:
    """``files/config.yaml``: each ``{key: {value: …}}`` flattened into ``meta.config`` with dots; a value
    nested too deep is left out and counted (:func:`._config.dotted`)."""
    path = folder / CONFIG_FILE
    if not regular([path], skips) or not path.is_file():
        return
    import yaml  # type: ignore[import-untyped]  # PyYAML (no stubs here): imported for a SwanLab config only

    try:
        doc = capped_yaml(read_file(path).decode("utf-8", errors="replace"))
    except (yaml.YAMLError, ValueError) as exc:  # ValueError: a scalar YAML reads but Python refuses (5,000 digits)
        meta.notes.append(Words(f"{path}: not YAML ({type(exc).__name__}); the run config was not read",
                                f"{path}：不是 YAML（{type(exc).__name__}）；没有读到运行的配置"))
        return
    if isinstance(doc, dict):
        cut: list[Cut] = []
        for key, entry in doc.items():
            value = entry.get("value") if isinstance(entry, dict) and "value" in entry else entry
            cut += dotted(str(key), value, meta.config)
        too_deep(str(path), cut, skips)


def read(path: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    file = path if path.is_file() else _run_file(path)
    if file is None:
        raise InputError(Words(f"{path}: no run-*.swanlab file in this folder",
                               f"{path}：这个文件夹里没有 run-*.swanlab 文件"))
    meta.files, meta.clock = [str(file)], "SwanLab timestamp"
    _config(file.parent, meta, skips)
    yield from _read_file(file, meta, skips)


def tables(path: Path, skips: SkipLog) -> list[LoggedTable]:
    """The tables (``swanlab.echarts.Table``) the run logged, in the order logged: each is a JSON file
    ``media/echarts/<step>-<hash>.json`` beside the run's file (``{"_swanLab": "table", "colDefs": …,
    "rowData": [row…]}``), named with its key and step by a media record. A file that is missing or not
    such a table is a counted skip."""
    file = path if path.is_file() else _run_file(path)
    if file is None:
        return []
    _version(file)
    meta, steps = SourceMeta(format=FORMAT), _Steps()
    for number, payload in frames(file, meta, skips, MAGIC + bytes((VERSION,)), _HEADER):
        _take(payload, f"{file}#record {number}", steps, meta, skips)
    out = []
    for key, step, names in steps.charts:
        for name in names:
            table = file.parent / "media" / "echarts" / name
            try:
                doc = orjson.loads(read_file(table))
            except (OSError, InputError, orjson.JSONDecodeError) as exc:
                skips.skip(str(table), Words(f"the table logged as {key!r} at step {step} cannot be read "
                                             f"({type(exc).__name__}); it was skipped",
                                             f"在第 {step} 步以 {key!r} 记录的表无法读取（{type(exc).__name__}）；"
                                             "已跳过"))
                continue
            if isinstance(doc, dict) and doc.get("_swanLab") == "table" and isinstance(doc.get("rowData"), list):
                rows = tuple(r for r in doc["rowData"] if isinstance(r, dict))
                out.append(LoggedTable(key, step, str(table), rows, FORMAT))
    return out


DESCRIBES = "a SwanLab run (swanlog/run-<time>-<id>/run-<id>.swanlab, SwanLab 0.8+), or a swanlog/ folder of runs"
READER = Reader(FORMAT, sniff, read, runs=runs, describes=DESCRIBES, since=since)
DIR_READER = Reader(FORMAT, sniff, read, takes_dir=True, runs=runs, describes=DESCRIBES, since=since)
READERS = (READER, DIR_READER)
