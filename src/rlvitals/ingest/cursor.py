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

Before starting again, :func:`rotations` looks beside the file for everything written since the
last read. The old content is found by identity (the renamed file: same device and inode,
``run.log.1`` after a rotation) or by content (a copy whose first bytes are the ones read:
``copytruncate``, or a copy put aside before a new file replaced the log). The files rotated off
after it — when the log was rotated more than once between two looks — are the files named after
the log, last written no earlier than the cursor's last read, that are none of the generations
read already (by identity or content). So any sequence of rename and copy rotations between two
polls, or across a restart, loses no line that still exists in some file.

The trainer rotates while the follower looks, so each look is of one file and of one state of the
folder: the bytes compared with a cursor are read from the very file its stat was taken of
(:meth:`Generation.matches` refuses another file that took the name in between), and the folder
is listed until two listings agree (a file renamed while the folder is listed may be under no
name the listing saw).
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO, Literal

#: how many leading bytes identify a file's content (a log's first line: a command, a config)
HEAD = 4096
_SCAN = 1 << 16
#: how many times a folder is looked at, at most, for two looks that agree (a rotation renames a few
#: files in a row; a folder that changes at every look is taken as the last look saw it)
_LOOKS = 8

Change = Literal["same", "grown", "truncated", "replaced", "missing"]


@dataclass(frozen=True)
class FileCursor:
    """Where reading of one file stopped. ``offset`` is the byte after the last complete line
    read, ``lines`` the number of lines before it, ``head`` the hash of the first
    ``min(offset, HEAD)`` bytes (``""`` before anything was read), ``first`` the hash of its first
    line (a copy shorter than what was read is still known by it), ``mtime`` the file's
    modification time when it was last looked at (what is rotated off after it is written later).

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
    first: str = ""
    tail: str = ""
    mtime: int = 0

    @classmethod
    def start(cls, path: Path) -> FileCursor:
        """A cursor at the beginning of ``path`` (identity taken when it is first read)."""
        return cls(str(path))

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "device": self.device, "inode": self.inode, "offset": self.offset,
                "lines": self.lines, "head": self.head, "first": self.first, "tail": self.tail,
                "mtime": self.mtime}

    @classmethod
    def from_json(cls, obj: dict[str, object]) -> FileCursor:
        return cls(str(obj["path"]), _int(obj, "device"), _int(obj, "inode"), _int(obj, "offset"),
                   _int(obj, "lines"), str(obj.get("head", "")), str(obj.get("first", "")),
                   str(obj.get("tail", "")), _int(obj, "mtime"))

    def generation(self) -> Generation:
        """What identifies the content read so far (empty before a byte was read)."""
        return Generation(self.head, self.first, self.tail, self.offset)


def _int(obj: dict[str, object], key: str) -> int:
    value = obj.get(key, 0)
    return value if isinstance(value, int) else 0


def _hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _first_line(data: bytes) -> str:
    """The hash of the first line in ``data`` (its first ``HEAD`` bytes when that line is longer),
    ``""`` when ``data`` holds no complete first line yet."""
    end = data.find(b"\n", 0, HEAD)
    if end < 0:
        return _hash(data[:HEAD]) if len(data) >= HEAD else ""
    return _hash(data[:end + 1])


@dataclass(frozen=True)
class Generation:
    """What identifies the content of one file a log went through between rotations: its
    ``length`` (the bytes read of it), the hash of its first ``min(length, HEAD)`` bytes, of the
    last ``min(length, HEAD)`` bytes before ``length``, and of its first line. Two trainer
    restarts print the same config dump first; the last bytes read tell them apart.

    A file is this generation if it is at least ``length`` long and both hashes match, or — a copy
    taken before the last bytes read were written — if it is shorter and its first line matches.

    Example:
        >>> Generation("", "", "", 0).empty
        True
    """

    head: str
    first: str
    tail: str
    length: int

    @property
    def empty(self) -> bool:
        return self.length == 0 or not self.head

    def to_json(self) -> list[object]:
        return [self.head, self.first, self.tail, self.length]

    @classmethod
    def from_json(cls, obj: object) -> Generation | None:
        if (isinstance(obj, list) and len(obj) == 4 and all(isinstance(v, str) for v in obj[:3])
                and isinstance(obj[3], int)):
            return cls(obj[0], obj[1], obj[2], obj[3])
        return None

    @classmethod
    def of(cls, path: Path, size: int) -> Generation:
        """The generation of ``path``, whose first ``size`` bytes were read (raises OSError)."""
        with path.open("rb") as fh:
            head = fh.read(min(size, HEAD))
            tail = _tail(fh, size)
        return cls(_hash(head), _first_line(head), _hash(tail), size)

    def matches(self, path: Path, st: os.stat_result) -> bool:
        """Whether the file at ``path`` that ``st`` was taken of holds this generation's content (raises
        OSError; FileNotFoundError when another file took the name since ``st`` was taken: what it holds
        says nothing of the file ``st`` describes)."""
        if self.empty:
            return False
        size = st.st_size
        with path.open("rb") as fh:
            if _identity(os.fstat(fh.fileno())) != _identity(st):
                raise FileNotFoundError(errno.ENOENT, "another file took its name since it was looked at", str(path))
            head = fh.read(HEAD)
            if size < self.length:
                return bool(self.first) and _first_line(head) == self.first
            if _hash(head[:self.length]) != self.head:
                return False
            # a cursor stored by an older version has no tail hash: its head alone decides
            return not self.tail or _hash(_tail(fh, self.length)) == self.tail


def _identity(st: os.stat_result) -> tuple[int, ...]:
    return st.st_dev, st.st_ino


def _tail(fh: BinaryIO, end: int) -> bytes:
    """The last ``min(end, HEAD)`` bytes before ``end``."""
    fh.seek(max(0, end - HEAD))
    return fh.read(min(end, HEAD))


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
    try:  # the first and the last bytes read: two trainer runs may begin with the same 4 KiB of config
        same = cursor.generation().matches(path, st)
    except OSError:  # renamed away since the stat (another file there now, or none yet): a rotation under way
        return "missing", None
    if not same:
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
    taken = Generation.of(path, end)
    return replace(cursor, device=st.st_dev, inode=st.st_ino, offset=end, lines=cursor.lines + lines,
                   head=taken.head, first=taken.first, tail=taken.tail, mtime=st.st_mtime_ns)


def same_file(path: Path, st: os.stat_result, end: int, line_end: bool = False) -> bool:
    """Whether ``path`` is still the file ``st`` was taken of and still holds ``end`` bytes (and,
    with ``line_end``, a line still ends at ``end``): a rotation may rename it away, or truncate and
    rewrite it, between two looks, and what was read between them may then come from another file.

    Example:
        >>> same_file(Path("/no/such.log"), os.stat("/"), 0)
        False
    """
    try:
        now = path.stat()
        if line_end and end > 0 and now.st_size >= end:
            with path.open("rb") as fh:
                fh.seek(end - 1)
                if fh.read(1) != b"\n":
                    return False  # truncated and rewritten while it was read: the lines read are cut
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino) and now.st_size >= end




#: rotated logs compressed by logrotate (``compress``) or by hand; not opened
COMPRESSED = (".gz", ".bz2", ".xz", ".zst", ".lz4", ".zip")


#: what the common rotation tools append to a log's name for its old content: a number (Python's
#: RotatingFileHandler, logrotate: ``run.log.1``), logrotate's ``dateext`` (``run.log-20240101``, with
#: ``dateformat`` ``-%Y%m%d%H`` or ``-%Y%m%d-%s``), Python's TimedRotatingFileHandler (``run.log.2024-01-01``,
#: ``…_13``, ``…_13-05``, ``…_13-05-59``)
ROTATION_SUFFIX = re.compile(r"\.\d{1,4}|-\d{8}(?:\d{2})?(?:-\d{9,11})?|\.\d{4}-\d{2}-\d{2}(?:_\d{2}(?:-\d{2}){0,2})?")


def rotation_name(log: Path, name: str, pattern: re.Pattern[str] | None = None) -> bool:
    """Whether ``name`` (beside ``log``) is what a rotation tool names the log's old content
    (:data:`ROTATION_SUFFIX` after the name, or before its extension — logrotate's ``extension``,
    ``run.1.log``, ``run-20240101.log`` — maybe compressed), or what ``pattern`` matches whole (a
    user's own scheme). A name that only begins like the log's is another log: ``run_eval.log``,
    ``run.log.source.txt``, ``metrics-run2.jsonl`` are never read into ``run.log`` / ``metrics.jsonl``.

    Example:
        >>> [rotation_name(Path("run.log"), n) for n in ("run.log.1", "run.1.log", "run.log-20240101.gz",
        ...                                               "runner.log", "run_eval.log", "run.log.txt", "run.log")]
        [True, True, True, False, False, False, False]
    """
    if name == log.name:
        return False
    if pattern is not None and pattern.fullmatch(name):
        return True
    for ext in COMPRESSED:
        name = name.removesuffix(ext)
    if name.startswith(log.name) and ROTATION_SUFFIX.fullmatch(name, len(log.name)):
        return True
    stem, suffix = log.stem, log.suffix
    return (bool(suffix) and name.startswith(stem) and name.endswith(suffix)
            and len(name) > len(stem) + len(suffix)
            and ROTATION_SUFFIX.fullmatch(name, len(stem), len(name) - len(suffix)) is not None)


@dataclass(frozen=True)
class Rotations:
    """What a rotation left beside a log: ``old``, the followed file's old content (renamed, or a
    copy), ``between``, the files rotated off after it and never seen at the log's path, oldest
    first, each with its (device, inode) when it was listed, and ``compressed``, such files that
    are compressed (not opened)."""

    old: tuple[Path, tuple[int, int]] | None
    between: tuple[tuple[Path, tuple[int, int]], ...] = ()
    compressed: tuple[Path, ...] = ()


def rotations(cursor: FileCursor, current: tuple[int, int] | None, finished: Iterable[Generation]) -> Rotations:
    """Where the content written since ``cursor`` was taken is now, after the log at its path was
    rotated, truncated or replaced.

    ``current`` is the (device, inode) of the file now at the log's path and ``finished`` the
    generations read to their end: none of them is read again. Content, not identity, tells a file
    read already from a new one (a removed file's inode is given to the next file made).
    ``between`` holds the other files named after the log (:func:`rotation_name`) last written no
    earlier than the cursor's last look, oldest first (by modification time, then name).

    The folder is looked at until two looks agree (:func:`_settled`): a rotation that renames files
    while they are looked at (RotatingFileHandler's ``.2 -> .3``, ``.1 -> .2``, then the log ``-> .1``)
    can take a file from a name before that name is looked at to one looked at already, or not
    listed: it is seen under no name. And a file not seen now is not looked for again (the next
    look starts from a later cursor, and the file was last written before it): its lines would be
    lost for good, without a word.

    Example:
        >>> rotations(FileCursor.start(Path("/no/such/run.log")), None, ()).old is None
        True
    """
    log = Path(cursor.path)
    done = [g for g in finished if not g.empty]
    look = _look(log.parent, lambda name: rotation_name(log, name))
    found = Rotations(None)
    for _ in range(_LOOKS):
        if look is None:
            return found
        found = _sorted_out(cursor, current, done, look)
        again = _look(log.parent, lambda name: rotation_name(log, name))
        if again is not None and _settled(look, again, _content):
            return found
        look = again
    return found  # rotated on and on while it was looked at: what the last look saw


def _sorted_out(cursor: FileCursor, current: tuple[int, int] | None, done: list[Generation],
                look: dict[str, os.stat_result]) -> Rotations:
    """:func:`rotations` of one look at the folder (the files named after the log, each with its stat)."""
    log = Path(cursor.path)
    mine = cursor.generation()
    renamed: tuple[Path, tuple[int, int]] | None = None
    copies: list[tuple[int, str, tuple[int, int]]] = []
    later: list[tuple[int, str, tuple[int, int]]] = []
    for name, st in look.items():
        child = log.parent / name
        ident = (st.st_dev, st.st_ino)
        if ident == current:
            continue
        try:
            compressed = name.endswith(COMPRESSED)
            ours = not compressed and mine.matches(child, st)
            if cursor.inode and ident == (cursor.device, cursor.inode) and (ours or mine.empty):
                renamed = (child, ident)  # the file followed, renamed (its inode may be reused: its content says)
            elif ours:
                copies.append((st.st_size, name, ident))
            elif ((compressed or not any(g.matches(child, st) for g in done))
                  and cursor.mtime and st.st_mtime_ns >= cursor.mtime):
                later.append((st.st_mtime_ns, name, ident))
        except OSError:  # renamed or removed since the look: the next look sees where it went
            continue
    old = renamed
    if old is None and copies:
        _, name, ident = max(copies)
        old = (log.parent / name, ident)
    order = sorted(later, key=lambda t: (t[0], _natural(t[1])))
    return Rotations(old, tuple((log.parent / n, i) for _, n, i in order if not n.endswith(COMPRESSED)),
                     tuple(log.parent / n for _, n, _i in order if n.endswith(COMPRESSED)))


def locate(path: Path, ident: tuple[int, int]) -> tuple[Path, os.stat_result] | None:
    """The file ``ident`` (device, inode), at ``path`` or, if a rotation renamed it on since it was
    seen there, wherever it is in the same folder now; None when it is gone (not in two looks at the
    folder that agree: a file renamed while the folder is looked at may be in neither name's place).

    Example:
        >>> locate(Path("/no/such/run.log.1"), (1, 2)) is None
        True
    """
    try:
        st = path.stat()
        if (st.st_dev, st.st_ino) == ident and stat.S_ISREG(st.st_mode):
            return path, st
    except OSError:
        pass
    before: dict[str, os.stat_result] | None = None
    for _ in range(_LOOKS):
        look = _look(path.parent, lambda name: True)
        if look is None:
            return None
        for name, st in look.items():
            if (st.st_dev, st.st_ino) == ident:
                return path.parent / name, st
        if before is not None and _settled(before, look, _identity):
            return None
        before = look
    return None


def _look(folder: Path, wanted: Callable[[str], bool]) -> dict[str, os.stat_result] | None:
    """The regular files in ``folder`` whose names are ``wanted``, each with its stat, by name (None when
    the folder cannot be listed). A file renamed or removed between the listing and its stat is left
    out, and one renamed from a name not stat'ed yet to one stat'ed already is missed: only a second
    look that agrees with it (:func:`_settled`) says none was."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return None
    out = {}
    for name in names:
        if not wanted(name):
            continue
        try:
            st = (folder / name).stat()
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            out[name] = st
    return out


def _content(st: os.stat_result) -> tuple[int, ...]:
    """A file and what it holds: a copy still being written grows between two looks."""
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _settled(a: dict[str, os.stat_result], b: dict[str, os.stat_result],
             key: Callable[[os.stat_result], tuple[int, ...]]) -> bool:
    """Whether two looks at a folder saw the same files under the same names (by ``key``): nothing was
    renamed, made or removed from the first listing to the last stat."""
    return a.keys() == b.keys() and all(key(a[name]) == key(b[name]) for name in a)


def _natural(name: str) -> list[object]:
    """``run.log.2`` before ``run.log.10``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]
