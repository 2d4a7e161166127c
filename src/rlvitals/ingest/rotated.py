"""Where a followed log's content went when the file at its path is not the one being read any more.

:func:`rotations` looks for everything written since the cursor's last read. The old content is found
by identity (the renamed file: same device and inode, ``run.log.1`` after a rotation) or by content (a
copy whose first bytes are the ones read: ``copytruncate``, a copy put aside before a new file replaced
the log, or such a copy compressed: ``run.log-20240101.gz``). The files rotated off after it — when the
log was rotated more than once between two looks — are the files named after the log, last written no
earlier than the cursor's last read, that are none of the generations read already (by identity or
content). So any sequence of rename and copy rotations between two polls, or across a restart, loses no
line that still exists in some file.

Rotated files are looked for beside the log, and in the folders of :class:`RotationRules` (logrotate's
``olddir``); they are named as the rotation tools name them (:func:`rotation_name`) or as the rules'
pattern says. A log followed through a symlink is looked for where the link leads.

A log followed through a symlink that the trainer re-points at each new segment (``latest.jsonl ->
seg-3.jsonl``) changes file with no rotation at all: :func:`segments` finds the segment the link led to
(read to its end) and the segments written since, named like it but for their numbers.

The trainer rotates while the follower looks, so each look is of one state of the folder: it is listed
until two listings agree (a file renamed while the folder is listed may be under no name the listing saw).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .compressed import COMPRESSED, inflatable, twin_of
from .cursor import FileCursor, Generation
from .text import BOM

__all__ = ["ROTATION_SUFFIX", "RotationRules", "Rotations", "locate", "rotation_name", "rotations", "same_format",
           "segments"]

#: how many times a folder is looked at, at most, for two looks that agree (a rotation renames a few
#: files in a row; a folder that changes at every look is taken as the last look saw it)
_LOOKS = 8

#: what the common rotation tools append to a log's name for its old content: a number (Python's
#: RotatingFileHandler, logrotate: ``run.log.1``), logrotate's ``dateext`` (``run.log-20240101``, with
#: ``dateformat`` ``-%Y%m%d%H`` or ``-%Y%m%d-%s``), Python's TimedRotatingFileHandler (``run.log.2024-01-01``,
#: ``…_13``, ``…_13-05``, ``…_13-05-59``)
ROTATION_SUFFIX = re.compile(r"\.\d{1,4}|-\d{8}(?:\d{2})?(?:-\d{9,11})?|\.\d{4}-\d{2}-\d{2}(?:_\d{2}(?:-\d{2}){0,2})?")

_Found = tuple[Path, tuple[int, int]]
_Look = dict[Path, os.stat_result]


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
class RotationRules:
    """What the user says of where a log's rotated files go, when no rotation tool's default says it:
    ``into``, folders they are moved into (logrotate's ``olddir``: relative to the log's folder unless
    absolute, as logrotate takes it), and ``pattern``, a regular expression matching a rotated file's
    whole name (a scheme of the user's own), beside the log or in those folders.

    Example:
        >>> rules = RotationRules(("old",), r"train\\.log\\.bak\\d+")
        >>> rules.folders(Path("/runs/train.log")), rules.named(Path("/runs/train.log"), "train.log.bak3")
        ([PosixPath('/runs'), PosixPath('/runs/old')], True)
    """

    into: tuple[str, ...] = ()
    pattern: str | None = None

    def __post_init__(self) -> None:
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"RotationRules: pattern {self.pattern!r} is not a regular expression "
                                 f"({exc})") from exc

    @classmethod
    def of(cls, into: Sequence[str | Path] = (), pattern: str | None = None) -> RotationRules:
        return cls(tuple(str(d) for d in into), pattern)

    def folders(self, log: Path) -> list[Path]:
        """Where ``log``'s rotated files may be: its own folder first, then the ``into`` folders."""
        out = [log.parent]
        for folder in self.into:
            path = log.parent / Path(folder).expanduser()
            if path not in out:
                out.append(path)
        return out

    def named(self, log: Path, name: str) -> bool:
        """Whether ``name`` is a rotated file of ``log`` (:func:`rotation_name` with the rules' pattern)."""
        return rotation_name(log, name, re.compile(self.pattern) if self.pattern is not None else None)


@dataclass(frozen=True)
class Rotations:
    """What a rotation left beside a log: ``old``, the followed file's old content (renamed, or a
    copy, maybe compressed), ``between``, the files rotated off after it and never seen at the log's
    path, oldest first, each with its (device, inode) when it was listed, ``compressed``, such files
    compressed in a way that is not opened (zstd, lz4, zip), and ``refused``, files named like such files
    whose content is not the log's (a note saved as ``train.log.1``): not read, to be said."""

    old: _Found | None
    between: tuple[_Found, ...] = ()
    compressed: tuple[Path, ...] = ()
    refused: tuple[Path, ...] = ()


def rotations(cursor: FileCursor, current: tuple[int, int] | None, finished: Iterable[Generation],
              rules: RotationRules | None = None, kin: Callable[[Path], bool] | None = None) -> Rotations:
    """Where the content written since ``cursor`` was taken is now, after the log at its path (where its
    link led: ``cursor.target``) was rotated, truncated or replaced.

    ``current`` is the (device, inode) of the file now at the log's path and ``finished`` the
    generations read to their end: none of them is read again. Content, not identity, tells a file
    read already from a new one (a removed file's inode is given to the next file made).
    ``between`` holds the other files named after the log (:meth:`RotationRules.named`) last written no
    earlier than the cursor's last look, oldest first (by modification time, then name), whose content says
    they are the log's too: ``kin(path)`` (the log's reader recognises the file: :func:`same_format`). A
    name is not evidence enough — ``train.log.1`` may be a note someone saved beside the log — and a file
    compressed is taken by its name (its content is the log's only once inflated).

    The folders are looked at until two looks agree (:func:`_settled`): a rotation that renames files
    while they are looked at (RotatingFileHandler's ``.2 -> .3``, ``.1 -> .2``, then the log ``-> .1``)
    can take a file from a name before that name is looked at to one looked at already, or not
    listed: it is seen under no name. And a file not seen now is not looked for again (the next
    look starts from a later cursor, and the file was last written before it): its lines would be
    lost for good, without a word.

    Example:
        >>> rotations(FileCursor.start(Path("/no/such/run.log")), None, ()).old is None
        True
    """
    rules = rules or RotationRules()
    log = Path(cursor.target or cursor.path)
    done = [g for g in finished if not g.empty]
    folders = rules.folders(log)
    return _settled_look(folders, lambda name: rules.named(log, name),
                         lambda look: _sorted_out(cursor, current, done, look, kin))


def segments(cursor: FileCursor, now: os.stat_result, finished: Iterable[Generation]) -> Rotations:
    """Where the content written since ``cursor`` was taken is, after the symlink at its path was
    re-pointed from ``cursor.target`` to another file (``now`` its stat): ``old``, that target (wherever it
    was renamed to in its folder), and ``between``, the files named like it or like the new target but for
    their numbers (``seg-2.jsonl`` between ``seg-1.jsonl`` and ``seg-3.jsonl``), in their folders, written
    since the cursor's last look and before the new target, none of the generations read already, oldest
    first. A segment written after the new target (the trainer writes the next one before it moves the
    link) is read when the link leads to it.

    Example:
        >>> gone = FileCursor("/no/such/latest.jsonl", target="/no/such/seg-1.jsonl")
        >>> segments(gone, os.stat("/"), ()).old is None
        True
    """
    before = Path(cursor.target)
    after = Path(os.path.realpath(cursor.path))
    current = (now.st_dev, now.st_ino)
    mine = cursor.generation()
    old: _Found | None = None
    ident = (cursor.device, cursor.inode)
    here = locate(before, ident) if cursor.inode else None
    try:
        if here is not None and (mine.empty or mine.matches(*here)):
            old = (here[0], ident)
    except OSError:
        pass  # renamed again since it was found: what is left of it is not read, and that is said
    shapes = {s for s in (_shape(before.name), _shape(after.name)) if "#" in s}
    done = [g for g in finished if not g.empty] + ([] if mine.empty else [mine])
    last = (now.st_mtime_ns, _natural(after.name))

    def sort(look: _Look) -> Rotations:
        later = [(st.st_mtime_ns, path, (st.st_dev, st.st_ino)) for path, st in look.items()
                 if (st.st_dev, st.st_ino) not in (current, ident) and st.st_mtime_ns >= cursor.mtime
                 and (st.st_mtime_ns, _natural(path.name)) < last and not _any_match(done, path, st)]
        return Rotations(old, tuple((p, i) for _, p, i in sorted(later, key=lambda t: (t[0], _natural(t[1].name)))))

    return _settled_look(list(dict.fromkeys((before.parent, after.parent))), lambda name: _shape(name) in shapes, sort)


def _shape(name: str) -> str:
    """A name with each run of digits as ``#``: ``seg-12.jsonl`` and ``seg-3.jsonl`` have one shape."""
    return re.sub(r"\d+", "#", name)


def _any_match(generations: Iterable[Generation], path: Path, st: os.stat_result) -> bool:
    try:
        return any(g.matches(path, st) for g in generations)
    except OSError:
        return True  # renamed or removed since the look: the next look sees where it went


def _settled_look(folders: Sequence[Path], wanted: Callable[[str], bool],
                  sort: Callable[[_Look], Rotations]) -> Rotations:
    """``sort`` of the files in ``folders`` whose names are ``wanted``, in a look that a second agrees with
    (at most :data:`_LOOKS` looks: a folder that changes at every look is taken as the last look saw it)."""
    look = _look(folders, wanted)
    found = Rotations(None)
    for _ in range(_LOOKS):
        if look is None:
            return found
        found = sort(look)
        again = _look(folders, wanted)
        if again is not None and _settled(look, again, _content):
            return found
        look = again
    return found


def _sorted_out(cursor: FileCursor, current: tuple[int, int] | None, done: list[Generation],
                look: _Look, kin: Callable[[Path], bool] | None = None) -> Rotations:
    """:func:`rotations` of one look at the folders (the files named after the log, each with its stat)."""
    mine = cursor.generation()
    renamed: _Found | None = None
    copies: list[tuple[bool, int, str, _Found]] = []
    later: list[tuple[int, Path, tuple[int, int]]] = []
    refused: list[Path] = []
    for child, st in look.items():
        ident = (st.st_dev, st.st_ino)
        if ident == current:
            continue
        twin = twin_of(child)
        if twin is not None and twin in look:
            continue  # being compressed from the plain file beside it, which is read
        try:
            packed = twin is not None
            # a compressed file is inflated to be compared: only one written since the last look can hold it
            fresh = not cursor.mtime or st.st_mtime_ns >= cursor.mtime
            ours = (not packed or (inflatable(child.name) and fresh)) and mine.matches(child, st)
            if cursor.inode and ident == (cursor.device, cursor.inode) and (ours or mine.empty):
                renamed = (child, ident)  # the file followed, renamed (its inode may be reused: its content says)
            elif ours:
                copies.append((not packed, st.st_size, child.name, (child, ident)))
            elif cursor.mtime and fresh and ((packed and not inflatable(child.name))
                                             or not any(g.matches(child, st) for g in done)):
                if packed or kin is None or kin(child):
                    later.append((st.st_mtime_ns, child, ident))
                else:
                    refused.append(child)
        except OSError:  # renamed or removed since the look: the next look sees where it went
            continue
    old = renamed if renamed is not None else (max(copies)[3] if copies else None)
    order = sorted(later, key=lambda t: (t[0], _natural(t[1].name)))
    return Rotations(old, tuple((p, i) for _, p, i in order if twin_of(p) is None or inflatable(p.name)),
                     tuple(p for _, p, _i in order if twin_of(p) is not None and not inflatable(p.name)),
                     tuple(sorted(refused)))


#: how much of a file :func:`same_format` shows the log's reader
KIN_BYTES = 64 << 10


def same_format(sniff: Callable[[Path, bytes], bool]) -> Callable[[Path], bool]:
    """``kin`` for :func:`rotations`: whether the log's reader (its ``sniff``) recognises the file — a file that
    cannot be read, or whose bytes the sniffer refuses, is not the log's.

    Example:
        >>> import tempfile
        >>> note = Path(tempfile.mkdtemp()) / "train.log.1"; _ = note.write_text("title = 'not a log'")
        >>> same_format(lambda path, head: b"step" in head)(note)
        False
    """
    def kin(path: Path) -> bool:
        try:
            with path.open("rb") as fh:
                return bool(sniff(path, fh.read(KIN_BYTES).removeprefix(BOM)))
        except (OSError, ValueError, RecursionError, UnicodeError):
            return False

    return kin


def locate(path: Path, ident: tuple[int, int], also: Sequence[Path] = ()) -> tuple[Path, os.stat_result] | None:
    """The file ``ident`` (device, inode), at ``path`` or, if a rotation renamed it on since it was
    seen there, wherever it is in the same folder (or in ``also``) now; None when it is gone (not in two
    looks at the folders that agree: a file renamed while they are looked at may be in neither name's place).

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
    folders = list(dict.fromkeys([path.parent, *also]))
    before: _Look | None = None
    for _ in range(_LOOKS):
        look = _look(folders, lambda name: True)
        if look is None:
            return None
        for child, st in look.items():
            if (st.st_dev, st.st_ino) == ident:
                return child, st
        if before is not None and _settled(before, look, _identity):
            return None
        before = look
    return None


def _look(folders: Sequence[Path], wanted: Callable[[str], bool]) -> _Look | None:
    """The regular files in ``folders`` whose names are ``wanted``, each with its stat, by path (None when
    the first folder, the log's own, cannot be listed; another that cannot be is taken as empty: logrotate
    makes its ``olddir`` at the first rotation). A file renamed or removed between the listing and its stat
    is left out, and one renamed from a name not stat'ed yet to one stat'ed already is missed: only a second
    look that agrees with it (:func:`_settled`) says none was."""
    out: _Look = {}
    for i, folder in enumerate(folders):
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            if i == 0:
                return None
            continue
        for name in names:
            if not wanted(name):
                continue
            try:
                st = (folder / name).stat()
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                out[folder / name] = st
    return out


def _identity(st: os.stat_result) -> tuple[int, ...]:
    return st.st_dev, st.st_ino


def _content(st: os.stat_result) -> tuple[int, ...]:
    """A file and what it holds: a copy still being written grows between two looks."""
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _settled(a: _Look, b: _Look, key: Callable[[os.stat_result], tuple[int, ...]]) -> bool:
    """Whether two looks at the folders saw the same files under the same names (by ``key``): nothing was
    renamed, made or removed from the first listing to the last stat."""
    return a.keys() == b.keys() and all(key(a[path]) == key(b[path]) for path in a)


def _natural(name: str) -> list[object]:
    """``run.log.2`` before ``run.log.10``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]
