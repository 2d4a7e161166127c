"""The file cursor: how far a growing log has been read, and what happened to the file since.

A :class:`FileCursor` remembers a file's identity (device and inode, and a hash of its first
bytes) and the end of the last complete line read. :func:`examine` compares it with the file
now at the same path and names what happened:

- ``same``: nothing new (or only a partial last line, which stays unread until its newline);
- ``grown``: complete lines were appended; read ``[offset, complete_end)``;
- ``truncated``: same inode, now shorter than the offset (``> run.log``, logrotate's
  ``copytruncate``): start again at byte 0;
- ``replaced``: same path, another inode or other first bytes (the trainer restarted and
  recreated its log, an editor saved a new file): start again at byte 0;
- ``missing``: the path is gone for now (between a rename and the new file's creation, or
  renamed away between the look at it and the read of its first bytes).

Before starting again, :func:`find_previous` looks beside the file for the old content — the
renamed file (same inode: ``run.log.1`` after a rotation) or a copy holding the same first
bytes and at least the bytes read (``copytruncate``) — so the lines written between the last
poll and the rotation are read from there first and no step is lost. When the log was
rotated more than once since the last poll, :func:`rotated_since` finds the files in between
(never seen at the log's path), to be read whole.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Collection
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

#: how many leading bytes identify a file's content (a log's first line: a command, a config)
HEAD = 4096
_SCAN = 1 << 16

Change = Literal["same", "grown", "truncated", "replaced", "missing"]


@dataclass(frozen=True)
class FileCursor:
    """Where reading of one file stopped. ``offset`` is the byte after the last complete line
    read, ``lines`` the number of lines before it, ``head`` the hash of the first
    ``min(offset, HEAD)`` bytes (``""`` before anything was read).

    Example:
        >>> FileCursor.start(Path("run.log")).offset
        0
    """

    path: str
    device: int = 0
    inode: int = 0
    offset: int = 0
    lines: int = 0
    head: str = ""

    @classmethod
    def start(cls, path: Path) -> FileCursor:
        """A cursor at the beginning of ``path`` (identity taken when it is first read)."""
        return cls(str(path))

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "device": self.device, "inode": self.inode, "offset": self.offset,
                "lines": self.lines, "head": self.head}

    @classmethod
    def from_json(cls, obj: dict[str, object]) -> FileCursor:
        return cls(str(obj["path"]), _int(obj, "device"), _int(obj, "inode"), _int(obj, "offset"),
                   _int(obj, "lines"), str(obj.get("head", "")))


def _int(obj: dict[str, object], key: str) -> int:
    value = obj.get(key, 0)
    return value if isinstance(value, int) else 0


def head_hash(path: Path, length: int) -> str:
    """The hash of the first ``length`` bytes of ``path`` (fewer if the file is shorter)."""
    if length <= 0:
        return ""
    with path.open("rb") as fh:
        return hashlib.blake2b(fh.read(length), digest_size=16).hexdigest()


def examine(cursor: FileCursor, path: Path | None = None) -> tuple[Change, os.stat_result | None]:
    """What happened to the file at the cursor's path since the cursor was taken.

    Example:
        >>> examine(FileCursor.start(Path("/no/such.log")))[0]
        'missing'
    """
    path = path or Path(cursor.path)
    try:
        st = path.stat()
    except OSError:
        return "missing", None
    if cursor.inode and (st.st_dev, st.st_ino) != (cursor.device, cursor.inode):
        return "replaced", st  # also before a line of it was read: rotated on at once
    if cursor.head == "" and cursor.offset == 0:
        return ("grown" if st.st_size > 0 else "same"), st
    if (st.st_dev, st.st_ino) != (cursor.device, cursor.inode):
        return "replaced", st
    if st.st_size < cursor.offset:
        return "truncated", st
    try:
        head = head_hash(path, min(cursor.offset, HEAD))
    except OSError:  # renamed away since the stat: a rotation under way
        return "missing", None
    if head != cursor.head:
        return "replaced", st  # rewritten in place, at least as long as before
    return ("grown" if st.st_size > cursor.offset else "same"), st


def complete_end(path: Path, offset: int, size: int) -> int:
    """The byte after the last newline in ``[offset, size)``, or ``offset`` when the bytes
    after it hold no complete line yet (a trainer in the middle of writing one)."""
    with path.open("rb") as fh:
        hi = size
        while hi > offset:
            lo = max(offset, hi - _SCAN)
            fh.seek(lo)
            at = fh.read(hi - lo).rfind(b"\n")
            if at >= 0:
                return lo + at + 1
            hi = lo
    return offset


def count_lines(path: Path, start: int, end: int) -> int:
    """How many newlines the bytes ``[start, end)`` hold."""
    n = 0
    with path.open("rb") as fh:
        fh.seek(start)
        left = end - start
        while left > 0:
            chunk = fh.read(min(left, 1 << 20))
            if not chunk:
                break
            n += chunk.count(b"\n")
            left -= len(chunk)
    return n


def advance(cursor: FileCursor, path: Path, st: os.stat_result, end: int, lines: int) -> FileCursor:
    """The cursor after reading up to ``end`` (``lines`` more lines), with the file's identity."""
    head = cursor.head
    if cursor.offset < HEAD or not head:
        head = head_hash(path, min(end, HEAD))
    return replace(cursor, device=st.st_dev, inode=st.st_ino, offset=end, lines=cursor.lines + lines, head=head)


def same_file(path: Path, st: os.stat_result, end: int) -> bool:
    """Whether ``path`` is still the file ``st`` was taken of and still holds ``end`` bytes: a
    rotation may rename it away (or truncate it) between two looks, and what was read between
    them may then come from another file.

    Example:
        >>> same_file(Path("/no/such.log"), os.stat("/"), 0)
        False
    """
    try:
        now = path.stat()
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino) and now.st_size >= end


def find_by_identity(folder: Path, device: int, inode: int) -> Path | None:
    """The file in ``folder`` that is the file ``(device, inode)``, whatever its name now:
    rotations rename a log on (``run.log`` → ``run.log.1`` → ``run.log.2``...) without
    changing what it is.

    Example:
        >>> find_by_identity(Path("/no/such/folder"), 1, 2) is None
        True
    """
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return None
    for name in names:
        child = folder / name
        try:
            st = child.stat()
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == (device, inode) and child.is_file():
            return child
    return None


#: rotated logs compressed by logrotate (``compress``) or by hand; not opened
COMPRESSED = (".gz", ".bz2", ".xz", ".zst", ".lz4", ".zip")


def rotated_since(log: Path, old: os.stat_result, known: Collection[tuple[int, int]]) -> list[Path]:
    """Files rotated off ``log`` after ``old`` was, oldest first: when the trainer rotates twice
    between two polls, the file in the middle was never seen at the log's path.

    They are the files beside ``log`` named after it (``run.log.2``, ``run.log.40``,
    ``run.log-20240101``...), last written no earlier than ``old`` (a backup from before was
    finished before ``old`` was), and none of the files in ``known`` (device, inode): the ones
    read already, and the log itself. Compressed ones are listed too (the caller says it cannot
    read them).

    Example:
        >>> rotated_since(Path("/no/such/run.log"), os.stat("/"), ())
        []
    """
    found: list[tuple[int, str, Path]] = []
    try:
        names = os.listdir(log.parent)
    except OSError:
        return []
    for name in names:
        if name == log.name or not name.startswith(log.name):
            continue
        child = log.parent / name
        try:
            st = child.stat()
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in known or not child.is_file() or st.st_mtime_ns < old.st_mtime_ns:
            continue
        found.append((st.st_mtime_ns, name, child))
    return [child for _, _, child in sorted(found)]


def find_previous(cursor: FileCursor) -> Path | None:
    """The old content of a rotated, truncated or replaced file, if it is still beside it.

    First a file in the same folder with the cursor's device and inode (renamed, as
    logrotate and Python's RotatingFileHandler do), else one whose first bytes match the
    cursor's and that is at least ``offset`` long (a ``copytruncate`` copy). Compressed
    rotations (``run.log.1.gz``) are not opened.
    """
    here = Path(cursor.path)
    folder = here.parent
    if not folder.is_dir() or cursor.inode == 0:
        return None
    renamed = find_by_identity(folder, cursor.device, cursor.inode)
    if renamed is not None and renamed != here:
        return renamed
    if cursor.offset == 0:
        return None  # nothing read from it: no first bytes to find a copy by
    copies: list[Path] = []
    for child in sorted(folder.iterdir()):
        if child == here or not child.name.startswith(here.stem) or child.suffix in COMPRESSED:
            continue
        try:
            if child.is_file() and child.stat().st_size >= cursor.offset:
                copies.append(child)
        except OSError:
            continue
    for child in copies:
        try:
            if head_hash(child, min(cursor.offset, HEAD)) == cursor.head:
                return child
        except OSError:  # renamed on by the next rotation since it was listed
            continue
    return None
