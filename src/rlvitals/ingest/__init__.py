"""Readers for every log format, and how a path finds its reader.

Each reader lives in its own module and exposes ``READER`` (a :class:`Reader`).
They are tried in the order of ``READER_MODULES``; the first whose ``sniff`` accepts
the path reads it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import ModuleType

from ..errors import EmptyInputError, MissingInputError, UnknownFormatError
from ..words import Words
from ._crash import CrashScanner, Ending, survived_note
from ._crc import masked_crc32c, masked_crc32c_columns
from ._files import SPECIAL_ZH, open_file, real_path, refusal, regular, special_kind, unique
from ._folder import beside, logs_in
from ._reader import Reader
from .columnar import Block, Columns, split_rows
from .compressed import COMPRESSED, INFLATABLE, INFLATE_ERRORS, inflatable, inflated
from .cursor import FileCursor, Generation, Sweep, advance, complete_end, count_lines, examine, resolved, same_file
from .formats import (
    aim_repo,
    clearml_offline,
    csv_table,
    generic_jsonl,
    mlflow_store,
    notebook,
    openrlhf_bars,
    openrlhf_console,
    parquet_table,
    plain_console,
    swanlab,
    tensorboard,
    trackio,
    trl_console,
    trl_state,
    verl_console,
    verl_jsonl,
    wandb_offline,
)
from .pieces import done_reading, while_reading
from .pyrepr import parse as parse_literal
from .record import (
    STEP_RANGE,
    WALL_KEY,
    Crash,
    LoggedTable,
    Packed,
    Record,
    RecordCheck,
    SkipLog,
    SourceMeta,
    Value,
    pack,
)
from .rotated import RotationRules, Rotations, locate, rotations, same_format, segments
from .tables import holds_tables, logged_tables
from .text import BOM, json_objects

__all__ = [
    "COMPRESSED", "INFLATABLE", "INFLATE_ERRORS", "STEP_RANGE", "Block", "Columns", "Crash", "CrashScanner", "Ending",
    "FileCursor", "Generation", "LoggedTable", "Packed", "SPECIAL_ZH",
    "READER_MODULES", "Reader", "Record", "RecordCheck", "RotationRules", "Rotations", "SkipLog", "SourceMeta",
    "Sweep", "Value", "advance",
    "beside", "complete_end", "count_lines", "examine", "find_reader", "holds_tables", "inflatable", "inflated",
    "json_objects", "locate", "logged_tables", "logs_in", "masked_crc32c", "masked_crc32c_columns", "open_file", "pack",
    "refusal", "WALL_KEY", "done_reading", "parse_literal", "readers", "real_path", "regular", "resolved", "rotations",
    "same_format",
    "same_file", "segments", "special_kind", "split_rows", "survived_note", "unique", "while_reading"
]

HEAD_BYTES = 64 << 10

#: sniffing order: binary and folder formats first, loose text formats last
READER_MODULES: tuple[ModuleType, ...] = (
    wandb_offline,
    swanlab,
    mlflow_store,
    trackio,
    clearml_offline,
    aim_repo,
    tensorboard,
    notebook,
    trl_state,
    verl_jsonl,
    generic_jsonl,
    parquet_table,
    csv_table,
    verl_console,
    openrlhf_bars,
    openrlhf_console,
    trl_console,
    plain_console,
)


def readers() -> list[Reader]:
    """Every reader in sniffing order; a module exposes ``READER`` or, when it reads both a
    file and a folder form, ``READERS``."""
    out: list[Reader] = []
    for module in READER_MODULES:
        out.extend(module.READERS if hasattr(module, "READERS") else (module.READER,))
    return out


def _head(path: Path) -> bytes:
    if path.is_dir():
        return b""
    with open_file(path) as fh:
        return fh.read(HEAD_BYTES).removeprefix(BOM)  # sniffers read what follows a byte-order mark


def find_reader(path: Path, fmt: str | None = None) -> Reader:
    """The reader for ``path`` (or the one named ``fmt``), else a clear error."""
    if not path.exists():
        raise MissingInputError(Words(f"{path}: no such file or folder", f"{path}：没有这个文件或文件夹"))
    special = special_kind(path)
    if special is not None:
        raise UnknownFormatError(*refusal(path, special).args)
    all_readers = readers()
    names = ", ".join(dict.fromkeys(r.format for r in all_readers))  # a format with a file and a folder form once
    if fmt is not None:
        named = [r for r in all_readers if r.format == fmt]
        if named:  # the form that takes what the path is (a folder or a file), else the format's first
            return next((r for r in named if r.takes_dir == path.is_dir()), named[0])
        raise UnknownFormatError(Words(f"unknown format {fmt!r}; expected one of: {names}",
                                       f"未知的格式 {fmt!r}；可用的格式：{names}"))
    if path.is_file() and path.stat().st_size == 0:
        raise EmptyInputError(Words(f"{path}: the file is empty; expected a training log",
                                    f"{path}：文件是空的；这里应当是一份训练日志"))
    head = _head(path)
    for reader in all_readers:
        if path.is_dir() != reader.takes_dir:
            continue
        if _sniffs(reader, path, head):
            return reader
    kind = "folder" if path.is_dir() else "file"
    hint = _traceback_hint(path) if path.is_file() else Words("", "")
    raise UnknownFormatError(Words(
        f"{path}: this {kind} is not a training log rlvitals can read (tried: {names}){hint}; "
        "pass --format to force a reader",
        f"{path}：这个{'文件夹' if path.is_dir() else '文件'}不是 rlvitals 能读的训练日志（试过：{names}）{hint.zh}；"
        "可以用 --format 指定读取器"))


def _sniffs(reader: Reader, path: Path, head: bytes) -> bool:
    """Whether ``reader`` takes ``path``. Bytes no reader would write (a nesting bomb, a damaged SQLite
    schema, text that is not UTF-8) make a sniffer's parse fail: that is "not mine", never a crash."""
    try:
        return reader.sniff(path, head)
    except (ValueError, RecursionError, UnicodeError, sqlite3.Error):
        return False


#: how much of the end of an unrecognised file is searched for a traceback
TAIL_BYTES = 1 << 20


def _traceback_hint(path: Path) -> Words:
    """What an unrecognised file ends in when that is a Python traceback: a crashed program that is
    not one of the frameworks read (no frame of their code, no metric line)."""
    from ._crash import CrashScanner

    with open_file(path) as fh:
        fh.seek(max(path.stat().st_size - TAIL_BYTES, 0))
        tail = fh.read().decode("utf-8", "replace").split("\n")
    scanner = CrashScanner(path)
    for n, line in enumerate(tail, 1):
        scanner.feed(n, line)
    crash = scanner.crash()
    if crash is None:
        return Words("", "")
    said = f"{crash.exception}: {crash.message}" if crash.message else crash.exception
    return Words(f"; it ends in a Python traceback ({said[:160]}) but holds no metrics and no frame of veRL, TRL "
                 "or OpenRLHF code",
                 f"；它以一段 Python traceback 结尾（{said[:160]}），但没有任何指标，也没有 veRL、TRL 或 OpenRLHF "
                 "代码的栈帧")
