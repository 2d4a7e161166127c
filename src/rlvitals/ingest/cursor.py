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

The cursor also keeps a fingerprint of every byte read (a short hash of each
:data:`PIECE` of them): a log rewritten in place — the same file, its earlier lines changed, as long as
before or longer — is ``replaced`` too, found out a piece a look (:class:`Sweep`) however far from its
first and last bytes the change is. And it keeps where a symlinked path led (``target``): a link the trainer
re-points at each new segment is followed through its targets.

Before starting again, :func:`rlvitals.ingest.rotated.rotations` looks for everything written since the
last read (renamed, copied, compressed, moved into another folder).

The trainer rotates while the follower looks, so each look is of one file: the bytes compared with a
cursor are read from the very file its stat was taken of (:meth:`Generation.matches` refuses another
file that took the name in between).
"""

from __future__ import annotations

import errno
import hashlib
import os
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO, Literal

from .compressed import INFLATE_ERRORS, inflatable, wrapped

#: how many leading bytes identify a file's content (a log's first line: a command, a config)
HEAD = 4096
_SCAN = 1 << 16
#: the bytes read are fingerprinted a piece of this many at a time (32 characters of state per MB read;
#: a look compares one piece again)
PIECE = 1 << 18
#: hex characters of a piece's hash, a CRC-32: a change is told from chance at 2^-32, and a piece's hash
#: goes on from where it stopped when lines are appended to it (the bytes before are not read again)
_DIGEST = 8

Change = Literal["same", "grown", "truncated", "replaced", "missing"]


@dataclass(frozen=True)
class FileCursor:
    """Where reading of one file stopped. ``offset`` is the byte after the last complete line
    read, ``lines`` the number of lines before it, ``head`` the hash of the first
    ``min(offset, HEAD)`` bytes (``""`` before anything was read), ``first`` the hash of its first
    line (a copy shorter than what was read is still known by it), ``mtime`` the file's
    modification time when it was last looked at (what is rotated off after it is written later),
    ``target`` the real path the path led to when it is a symlink (or under one; ``""`` otherwise), and
    ``pieces`` the fingerprint of the bytes read: a hash of each :data:`PIECE` of them, the last maybe partial.

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
    target: str = ""
    pieces: str = ""

    @classmethod
    def start(cls, path: Path) -> FileCursor:
        """A cursor at the beginning of ``path`` (identity taken when it is first read)."""
        return cls(str(path))

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "device": self.device, "inode": self.inode, "offset": self.offset,
                "lines": self.lines, "head": self.head, "first": self.first, "tail": self.tail,
                "mtime": self.mtime, "target": self.target, "pieces": self.pieces}

    @classmethod
    def from_json(cls, obj: dict[str, object]) -> FileCursor:
        return cls(str(obj["path"]), _int(obj, "device"), _int(obj, "inode"), _int(obj, "offset"),
                   _int(obj, "lines"), str(obj.get("head", "")), str(obj.get("first", "")),
                   str(obj.get("tail", "")), _int(obj, "mtime"), str(obj.get("target", "")),
                   str(obj.get("pieces", "")))

    @property
    def piece_count(self) -> int:
        """How many pieces of the bytes read the fingerprint holds."""
        return len(self.pieces) // _DIGEST

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
        """Whether the file at ``path`` that ``st`` was taken of holds this generation's content — inflated,
        when it is compressed (:func:`rlvitals.ingest.compressed.inflatable`) — (raises OSError;
        FileNotFoundError when another file took the name since ``st`` was taken: what it holds says nothing
        of the file ``st`` describes)."""
        if self.empty:
            return False
        with path.open("rb") as fh:
            if _identity(os.fstat(fh.fileno())) != _identity(st):
                raise FileNotFoundError(errno.ENOENT, "another file took its name since it was looked at", str(path))
            if inflatable(path.name):
                try:
                    with wrapped(path, fh) as plain:
                        return self._matches_stream(plain)
                except INFLATE_ERRORS:
                    return False  # cut short (still being written) or not what its name says: not this content
            head = fh.read(HEAD)
            if st.st_size < self.length:
                return bool(self.first) and _first_line(head) == self.first
            if _hash(head[:self.length]) != self.head:
                return False
            # a cursor stored by an older version has no tail hash: its head alone decides
            return not self.tail or _hash(_tail(fh, self.length)) == self.tail

    def _matches_stream(self, fh: BinaryIO) -> bool:
        """:meth:`matches` of a stream of unknown length (inflated as far as this generation's length)."""
        head = fh.read(HEAD)
        if _hash(head[:self.length]) != self.head and not (self.first and _first_line(head) == self.first):
            return False  # neither this content nor a shorter copy of it: not inflated further
        tail = _stream_window(fh, head, max(0, self.length - HEAD), self.length)
        if tail is None:  # shorter than what was read
            return bool(self.first) and _first_line(head) == self.first
        return _hash(head[:self.length]) == self.head and (not self.tail or _hash(tail) == self.tail)


def _stream_window(fh: BinaryIO, head: bytes, start: int, end: int) -> bytes | None:
    """The bytes ``[start, end)`` of a stream whose first bytes, ``head``, were read already; None when it
    ends before ``end``."""
    if end <= len(head):
        return head[start:end]
    kept = bytearray(head[start:])
    at = len(head)
    while at < end:
        chunk = fh.read(min(1 << 20, end - at))
        if not chunk:
            return None
        kept += chunk[max(0, start - at):]
        at += len(chunk)
    return bytes(kept)


def _identity(st: os.stat_result) -> tuple[int, ...]:
    return st.st_dev, st.st_ino


def _tail(fh: BinaryIO, end: int) -> bytes:
    """The last ``min(end, HEAD)`` bytes before ``end``."""
    fh.seek(max(0, end - HEAD))
    return fh.read(min(end, HEAD))


def examine(cursor: FileCursor, path: Path | None = None,
            sweep: Sweep | None = None) -> tuple[Change, os.stat_result | None]:
    """What happened to the file at the cursor's path since the cursor was taken. With ``sweep``, the piece
    of the bytes read it names is compared too: a change there is a rewrite in place, ``replaced``.

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
    piece = sweep.next(st.st_mtime_ns, cursor.piece_count) if sweep is not None else None
    try:  # the first and the last bytes read: two trainer runs may begin with the same 4 KiB of config
        same = cursor.generation().matches(path, st) and (piece is None or _same_piece(cursor, path, st, piece))
    except OSError:  # renamed away since the stat (another file there now, or none yet): a rotation under way
        return "missing", None
    if not same:
        return "replaced", st  # rewritten in place, at least as long as before
    return ("grown" if st.st_size > cursor.offset else "same"), st


def _same_piece(cursor: FileCursor, path: Path, st: os.stat_result, piece: int) -> bool:
    """Whether the ``piece``-th piece of the bytes ``cursor`` read is still what the file holds there."""
    at = piece * PIECE
    with path.open("rb") as fh:
        if _identity(os.fstat(fh.fileno())) != _identity(st):
            raise FileNotFoundError(errno.ENOENT, "another file took its name since it was looked at", str(path))
        fh.seek(at)
        data = fh.read(min(PIECE, cursor.offset - at))
    return f"{zlib.crc32(data):08x}" == cursor.pieces[piece * _DIGEST:(piece + 1) * _DIGEST]


@dataclass
class Sweep:
    """Which piece of the bytes a cursor read to compare with the file at the next look: one a look, in
    turn, so a rewrite anywhere is found within as many looks as there are pieces (one for a log under
    256 KiB) at the cost of reading one piece a look; and none once a whole round of looks found the file
    unchanged while its modification time stayed the same, until that time changes.

    Example:
        >>> sweep = Sweep()
        >>> [sweep.next(5, 2) for _ in range(3)]
        [0, 1, None]
    """

    at: int = 0
    since: int = -1  # the file's modification time when this round began
    quiet: int = -1  # the modification time a whole round found unchanged

    def next(self, mtime: int, pieces: int) -> int | None:
        """The piece to compare at a look at a file last modified at ``mtime``, of ``pieces``; None for none."""
        if pieces == 0 or mtime == self.quiet:
            return None
        if self.at == 0:
            self.since = mtime
        piece = self.at % pieces
        self.at += 1
        if self.at >= pieces:
            self.at = 0
            if mtime == self.since:
                self.quiet = mtime
        return piece


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
    """The cursor after reading up to ``end`` (``lines`` more lines), with the file's identity; its
    fingerprint goes on from the bytes the cursor had read (of the same file) with those read now."""
    taken = Generation.of(path, end)
    return replace(cursor, device=st.st_dev, inode=st.st_ino, offset=end, lines=cursor.lines + lines,
                   head=taken.head, first=taken.first, tail=taken.tail, mtime=st.st_mtime_ns,
                   pieces=_pieces(cursor, path, st, end))


def _pieces(cursor: FileCursor, path: Path, st: os.stat_result, end: int) -> str:
    """The fingerprint of the first ``end`` bytes of ``path``: the cursor's, for the bytes it read of this
    file, and the hashes of the rest (the last piece it read, partial, goes on)."""
    start, pieces, crc = 0, "", 0
    if cursor.inode == st.st_ino and cursor.piece_count == -(-cursor.offset // PIECE) and cursor.offset <= end:
        start, pieces = cursor.offset, cursor.pieces
        if start % PIECE:
            pieces, crc = pieces[:-_DIGEST], int(pieces[-_DIGEST:], 16)
    with path.open("rb") as fh:
        fh.seek(start)
        while start < end:
            piece_end = min((start // PIECE + 1) * PIECE, end)
            data = fh.read(piece_end - start)
            if not data:
                break
            crc = zlib.crc32(data, crc)
            start += len(data)
            if start == piece_end:
                pieces += f"{crc:08x}"
                crc = 0 if start % PIECE == 0 else crc
    return pieces


def resolved(path: Path, st: os.stat_result) -> str:
    """The real path of the file ``path`` leads to through symlinks, ``""`` when no symlink is on the way
    (raises FileNotFoundError when the file there is not the one ``st`` was taken of: the link moved).

    Example:
        >>> resolved(Path("/"), os.stat("/"))
        ''
    """
    real = os.path.realpath(path)
    if real == os.path.abspath(path):
        return ""
    if _identity(os.stat(real)) != _identity(st):
        raise FileNotFoundError(errno.ENOENT, "the link was re-pointed while it was looked at", str(path))
    return real


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

