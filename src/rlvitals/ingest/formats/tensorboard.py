"""TensorBoard event files (``events.out.tfevents.*``), read without tensorflow or tensorboard.

Scalars come as ``simple_value`` (tensorboardX, torch's SummaryWriter — what veRL,
OpenRLHF and HF/TRL use) or as one-element tensors of the ``scalars`` plugin
(tensorboard's own writer, TF2); tags are kept verbatim (``train/loss``, ``critic/score/mean``).
Histograms, images, audio and text are not metrics: their tags are listed once in the
run notes and nothing is counted as skipped for them.

Every record length is checked against its CRC, and so is the payload of every record a
value is taken from (see :mod:`._tfevents`). A corrupt record, or a file that ends
mid-record (a run still being written), stops that file with one counted skip:
``file#record N: truncated record ...; the rest of the file was skipped``.

A folder that directly holds event files is one run; several files in it (restarts) are
merged in file-name order, a later value winning for a step logged twice. Nested run
folders (``tb/run_a``, ``tb/run_b``) are split by :func:`runs`; a folder is taken whole only when it is
TensorBoard's alone (:func:`_tensorboard_tree`), so an experiment folder holding ``tensorboard/`` beside other
logs is read as a plain folder and none of them is lost. All tags of one step
become one :class:`Record`; a tag seen again at the same step starts a new record so the
Run notes the duplicate. Each Event's ``wall_time`` (seconds since the Unix epoch) gives the
record its wall time; the first Event of the run's first file, when it started.

Text summaries (``add_text``) are not metrics either; :func:`tables` reads them apart, as the tables the
run logged (a text a table of one row, its ``text``), for the rollout readers: OpenRLHF's PPO trainer logs
its samples so when W&B is off.
"""

from __future__ import annotations

import mmap
import os
import re
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import InputError
from ...words import Words
from .._crc import masked_crc32c
from .._files import open_file, regular
from .._protobuf import LEN, VARINT, WireError, fields, signed64, text
from .._reader import Reader
from ..record import LoggedTable, Record, SkipLog, SourceMeta, Value

if TYPE_CHECKING:  # the decoder (numpy) is imported when a file is read: sniffing needs only the CRC
    from ..tfevents import Hits

FORMAT = "tensorboard"
_NAN = float("nan")

EVENT_MARK = ".tfevents."
#: a folder named like a float timestamp inside a run folder is where add_hparams writes
_HPARAMS_DIR = re.compile(r"\d+(?:\.\d+)?")
_SNIFF_DEPTH = 4
_SNIFF_ENTRIES = 5000


def event_files(folder: Path, skips: SkipLog | None = None) -> list[Path]:
    """The event files directly in ``folder``, in file-name order; a FIFO or a device named like one is
    not opened, and counted in ``skips``."""
    try:
        named = sorted(p for p in folder.iterdir() if EVENT_MARK in p.name)
    except OSError:
        return []
    return [p for p in regular(named, skips if skips is not None else SkipLog()) if p.is_file()]


def _framed(head: bytes) -> bool:
    """Whether ``head`` starts with a TFRecord whose length checksum holds."""
    if len(head) < 12:
        return False
    length, stored = struct.unpack_from("<QI", head)
    return bool(length < 1 << 30 and masked_crc32c(head[:8]) == stored)


def sniff(path: Path, head: bytes) -> bool:
    if path.is_file():
        return _framed(head) and (EVENT_MARK in path.name or b"brain.Event" in head[12:64])
    return _tensorboard_tree(path, 0, [_SNIFF_ENTRIES]) is True


def _tensorboard_tree(folder: Path, depth: int, budget: list[int]) -> bool | None:
    """Whether ``folder`` is TensorBoard's alone: it directly holds event files (a run: whatever else it holds,
    an ``hparams.yaml``, a plugin folder, is the run's), or it holds no file of its own and only sub-folders
    that are TensorBoard's (a folder of runs: ``tb/run_a``, HF's ``runs/<date>``). A folder of runs with
    anything else in it (an experiment folder holding ``tensorboard/`` beside ``train.log`` or ``wandb/``) is
    not: read whole, its other logs would be lost; it is a plain folder, whose TensorBoard sub-folders are runs.
    None for a folder with nothing in it yet (a run not begun), which neither makes nor breaks its parent."""
    try:
        children = [c for c in folder.iterdir() if not c.name.startswith(".")]
    except OSError:
        return False
    budget[0] -= len(children)
    if any(EVENT_MARK in c.name and c.is_file() for c in children):
        return True
    if budget[0] < 0 or any(not c.is_dir() for c in children):
        return False
    if children and depth + 1 >= _SNIFF_DEPTH:
        return False
    found = False
    for child in sorted(children):
        tree = _tensorboard_tree(child, depth + 1, budget)
        if tree is False:
            return False
        found = found or tree is True
    return True if found else None


def runs(path: Path) -> list[Path]:
    """One root per folder that directly holds event files.

    A timestamp-named folder inside a run folder is what ``add_hparams`` writes (HF's
    TensorBoardCallback does on every run) and holds no metrics, so it is not a run; nor
    is a folder whose event files hold only their header (a writer opened, never used),
    unless nothing else is found.
    """
    if path.is_file():
        return [path]
    roots: list[Path] = []
    for folder, dirs, files in os.walk(path):
        dirs.sort()
        if any(EVENT_MARK in f for f in files):
            roots.append(Path(folder))
    if not roots:
        return [path]
    found = set(roots)
    keep = [r for r in roots
            if not (r.parent in found and _HPARAMS_DIR.fullmatch(r.name))
            and not all(_header_only(f) for f in event_files(r))]
    return keep or roots


def _header_only(file: Path) -> bool:
    """Whether an event file holds nothing but its first record (the file_version header)."""
    try:
        with open_file(file) as fh:
            head = fh.read(12)
        return len(head) == 12 and file.stat().st_size <= 16 + struct.unpack_from("<Q", head)[0]
    except OSError:
        return False


# --- text summaries, read as the run's logged tables ----------------------------------------------

#: ``plugin_name: "text"`` in a value's metadata, as every writer encodes it (a file without it has no text)
_TEXT_PLUGIN = b"\x0a\x04text"


def tables(path: Path, skips: SkipLog) -> list[LoggedTable]:
    """The text summaries of the run at ``path`` (an event file, or a folder holding one run's event files),
    in file and record order: each a :class:`LoggedTable` keyed by its tag, at its step, with a row
    ``{"text": …}`` per string (``add_text`` writes one), where it is ``file#record N``. A corrupt or cut
    record stops its file with one counted skip, as for the scalars.

    >>> tables(Path("tb/run"), SkipLog())  # doctest: +SKIP
    [LoggedTable(key='train/generated_samples/text_summary', step=1, where='tb/run/events…#record 2', …)]
    """
    roots = runs(path)
    if len(roots) > 1:
        shown = ", ".join(str(r.relative_to(path)) for r in roots[:4]) + (" …" if len(roots) > 4 else "")
        raise InputError(Words(f"{path}: {len(roots)} TensorBoard runs here ({shown}); give one run's folder",
                               f"{path}：这里有 {len(roots)} 个 TensorBoard 运行（{shown}）；"
                               "请给出其中一个运行的文件夹"))
    files = [path] if path.is_file() else event_files(roots[0])
    return [t for f in files for t in _texts(f, skips)]


def _texts(file: Path, skips: SkipLog) -> Iterator[LoggedTable]:
    try:
        with open_file(file) as fh:
            if os.fstat(fh.fileno()).st_size == 0:
                return
            buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:
        skips.skip(str(file), Words(f"cannot be read ({type(exc).__name__}: {exc}); it was skipped",
                                    f"无法读取（{type(exc).__name__}：{exc}）；已跳过"))
        return
    with buf:
        if buf.find(_TEXT_PLUGIN) < 0:  # no text in this file: its records need not be framed
            return
        yield from _text_records(file, buf, skips)


def _text_records(file: Path, buf: mmap.mmap, skips: SkipLog) -> Iterator[LoggedTable]:
    """Every record framed and its length checked; a record holding a text has its payload checked and read."""
    seen: dict[str, bytes] = {}  # tags that were text: a writer may send a tag's metadata only the first time
    pos, number, size = 0, 0, len(buf)
    while pos < size:
        number += 1
        where = f"{file}#record {number}"
        if pos + 12 > size or pos + 16 + struct.unpack_from("<Q", buf, pos)[0] > size:
            skips.skip(where, Words("truncated record (the file ends mid-record; still being written?); the rest "
                                    "of the file was skipped", "记录不完整（文件在一条记录中间结束；还在写入？）；"
                                    "文件余下的部分已跳过"))
            return
        length, stored = struct.unpack_from("<QI", buf, pos)
        start, end = pos + 12, pos + 12 + length
        if masked_crc32c(buf[pos:pos + 8]) != stored:
            skips.skip(where, Words("corrupt record (length checksum mismatch); the rest of the file was skipped",
                                    "记录已损坏（长度校验和不符）；文件余下的部分已跳过"))
            return
        pos = end + 4
        if buf.find(_TEXT_PLUGIN, start, end) < 0 and all(buf.find(t, start, end) < 0 for t in seen.values()):
            continue
        payload = buf[start:end]
        if masked_crc32c(payload) != struct.unpack_from("<I", buf, end)[0]:
            skips.skip(where, Words("corrupt record (payload checksum mismatch); the rest of the file was skipped",
                                    "记录已损坏（数据校验和不符）；文件余下的部分已跳过"))
            return
        try:
            step, values = _event_texts(payload, seen)
        except WireError as exc:
            skips.skip(where, Words(f"not a TensorBoard Event ({exc}); the record was skipped",
                                    f"不是 TensorBoard Event（{exc}）；这条记录已跳过"))
            continue
        for tag, strings in values:
            yield LoggedTable(tag, step, where, tuple({"text": s} for s in strings), "tensorboard")


def _event_texts(event: bytes, seen: dict[str, bytes]) -> tuple[int, list[tuple[str, list[str]]]]:
    """The step of an Event and its text values: ``(tag, strings)`` of each value whose tensor holds strings
    (``string_val``) and whose plugin is ``text`` (or whose tag was text before, sent without metadata)."""
    step, out = 0, []
    for num, wire, x, y in fields(event, 0, len(event)):
        if num == 2 and wire == VARINT:
            step = signed64(x)
        elif num == 5 and wire == LEN:
            for vnum, vwire, va, vb in fields(event, x, y):
                if vnum == 1 and vwire == LEN:
                    tag, strings, plugin = _text_value(event, va, vb)
                    if strings and (plugin == "text" or (not plugin and tag in seen)):
                        seen[tag] = tag.encode()
                        out.append((tag, strings))
    return step, out


def _text_value(event: bytes, a: int, b: int) -> tuple[str, list[str], str]:
    """A Summary.Value's tag, the strings of its tensor and its plugin's name."""
    tag, strings, plugin = "", [], ""
    for num, wire, x, y in fields(event, a, b):
        if num == 1 and wire == LEN:
            tag = text(event, x, y)
        elif num == 8 and wire == LEN:  # tensor: string_val=8, one entry per string
            strings += [text(event, sx, sy) for n, w, sx, sy in fields(event, x, y) if n == 8 and w == LEN]
        elif num == 9 and wire == LEN:  # metadata: plugin_data=1 { plugin_name=1 }
            for pnum, pwire, px, py in fields(event, x, y):
                if pnum == 1 and pwire == LEN:
                    plugin = next((text(event, nx, ny) for n, w, nx, ny in fields(event, px, py)
                                   if n == 1 and w == LEN), "")
    return tag, strings, plugin


def read(path: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    """Stream one run: a single event file, or every event file directly in a folder."""
    from ..tfevents import EventScanner

    files = [path] if path.is_file() else event_files(path, skips)
    meta.files = [str(f) for f in files]
    nonscalar: set[str] = set()
    meta.clock = "TensorBoard wall_time"
    for file in files:
        yield from _by_step(file, EventScanner(file, meta, skips, nonscalar).chunks())
    if nonscalar:
        names = sorted(nonscalar)
        shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
        meta.notes.append(Words(f"{len(names)} non-scalar TensorBoard tags (histograms, images, text) "
                                f"are not metrics and were not read: {shown}",
                                f"有 {len(names)} 个非标量的 TensorBoard 标签（直方图、图像、文本）不是指标，"
                                f"没有读取：{shown}"))


def _by_step(path: Path, chunks: Iterator[Hits]) -> Iterator[Record]:
    """Group consecutive values of one step into one Record. Event files are step-ordered
    per writer, but nothing relies on it: a step that comes back is a new Record. A Record's
    wall time is the wall_time of its last value (when the step's last value was logged)."""
    step = -1
    values: dict[str, Value] = {}
    where = ""
    wall = _NAN
    import numpy as np  # here, not at the top: a log's worker is forked before numpy is imported

    for hits in chunks:
        steps = hits.steps
        walls = hits.walls.tolist()
        bounds = [0, *(np.flatnonzero(steps[1:] != steps[:-1]) + 1).tolist(), len(steps)]
        for a, b in zip(bounds, bounds[1:], strict=False):
            run_step = int(steps[a])
            block: dict[str, Value] = dict(zip(hits.tags[a:b], hits.values[a:b], strict=True))
            if len(block) == b - a and not (run_step == step and block.keys() & values.keys()):
                last = walls[b - 1]
                if run_step == step:
                    values.update(block)
                    wall = last
                    continue
                if values:
                    yield _record(step, values, where, wall)
                step, values, where, wall = run_step, block, f"{path}#record {hits.numbers[a]}", last
                continue
            # a tag repeats within this step: one Record per repetition
            for i in range(a, b):
                tag = hits.tags[i]
                if run_step != step or tag in values or not values:
                    if values:
                        yield _record(step, values, where, wall)
                    step, values, where, wall = run_step, {}, f"{path}#record {hits.numbers[i]}", _NAN
                values[tag] = hits.values[i]
                wall = walls[i]
    if values:
        yield _record(step, values, where, wall)


def _record(step: int, values: dict[str, Value], where: str, wall: float) -> Record:
    return Record(step, values, where, wall=wall if wall == wall else None)


#: the same reader for both forms: a file (event file, .wandb file, SQLite database) or a folder
DESCRIBES = "TensorBoard event files (events.out.tfevents.*), or a folder of runs holding them"
READER = Reader(FORMAT, sniff, read, runs=runs, describes=DESCRIBES)
DIR_READER = Reader(FORMAT, sniff, read, takes_dir=True, runs=runs, describes=DESCRIBES)
READERS = (READER, DIR_READER)
