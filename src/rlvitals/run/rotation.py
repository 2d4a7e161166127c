"""What a followed text log does when the file at its path is not the one it was reading any more.

:class:`Rotating` is the part of :class:`~rlvitals.run.follow.LineSource` that decides what happened and
reads what is left where it went:

- **rotated, truncated or replaced** (:func:`~rlvitals.ingest.rotations`): the rest of the old content,
  wherever it went — renamed, copied, compressed (read through gzip, bzip2 or xz), moved into a folder of
  the :class:`~rlvitals.ingest.RotationRules` — then the files rotated off after it, then the new file;
- **re-pointed** (a symlink the trainer moves to each new segment, :func:`~rlvitals.ingest.segments`): the
  rest of the segment it led to, the segments written since, then the new one from its first line — or,
  when the link now leads to a file read to its end already, from where that reading stopped, and when
  it leads to a file last written before the last look (another run's old log), from its end: none of
  their lines is taken as new;
- **rewritten in place** (the same file, its earlier bytes changed, no copy of them anywhere): when the
  file restates what was read of it — its first step is the first one read from it (or, for a log read
  whole, its first line is the same) — it is read again whole, and what it gave is replaced by what it
  holds now, the records of the files before it kept; said once. Otherwise it is a new log written over
  the old one: what was read stays, and the file is read from its first line, as after a truncation.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..ingest import (
    INFLATABLE,
    INFLATE_ERRORS,
    FileCursor,
    Generation,
    Packed,
    Reader,
    RotationRules,
    Rotations,
    SkipLog,
    SourceMeta,
    advance,
    complete_end,
    count_lines,
    inflatable,
    inflated,
    locate,
    resolved,
    rotations,
    same_file,
    same_format,
    segments,
)
from ..words import Words, both
from .builder import RunBuilder
from .said import chinese_of, gap, repointed, restarted, told, with_chinese

#: how many finished generations are remembered (not to read a rotated one twice); a log rotates this often
#: between two polls only if it rotates every few lines
_KNOWN_FILES = 256


class Rotating:
    """Rotation, re-pointing and rewriting for a followed text log (see the module docstring); the reading
    itself is the log's own (:class:`~rlvitals.run.follow.LineSource`)."""

    path: Path
    reader: Reader
    meta: SourceMeta
    builder: RunBuilder
    cursor: FileCursor
    rules: RotationRules
    messages: list[str]
    finished: list[Generation]
    unsaved: list[Packed]
    _keep: bool
    _reset: bool
    _whole: bool
    _got: int
    _seen_size: int
    _last_step: int | None
    _strides: list[int]
    _recent: list[int] | None
    _gap: str
    _layouts: dict[tuple[str, ...], tuple[str, ...]]
    #: the builder's rows before the file followed now began, and its skip log then (what a rewrite keeps)
    _file_rows: int
    _file_skips: SkipLog
    _restarting: bool
    _rewrites: int
    _capped: list[str]

    def _turned(self, change: str, st: os.stat_result) -> bool:
        """Whether the file at the path (``st``, ``change`` as :func:`~rlvitals.ingest.examine` says) is not
        the one the cursor was reading, or was rewritten; then its rest was read wherever it went and the
        cursor is in the file now at the path (the caller looks at it again)."""
        cursor = self.cursor
        if cursor.inode == 0:
            self._know(st, resolved(self.path, st))
            cursor = self.cursor
        unread = cursor.offset == 0 and bool(cursor.mtime) and st.st_mtime_ns != cursor.mtime
        if change not in ("truncated", "replaced") and not unread:
            return False
        target = resolved(self.path, st)  # before a line is read: a link moved since the look raises, and is retried
        same = (st.st_dev, st.st_ino) == (cursor.device, cursor.inode)
        if change == "replaced" and cursor.target and target != cursor.target and not same:
            self._repointed(st, target)
            return True
        rot: Rotations | None = None
        why = change
        if change in ("truncated", "replaced"):
            rot = rotations(cursor, (st.st_dev, st.st_ino), self.finished, self.rules, self._kin)
            # a file cut shorter is said as truncated (and restarted), not taken for a rewrite of what was read
            if (same and change != "truncated" and rot.old is None and not rot.between and not rot.compressed
                    and self._rewritten(st, target)):
                return True
        else:
            # nothing read of it yet: a copytruncate of it, or a new file given its inode number, leaves no
            # trace at the path, only the copies beside it
            found = rotations(cursor, (st.st_dev, st.st_ino), self.finished, self.rules, self._kin)
            if found.between or found.compressed:
                rot, why = found, "rotated before a line of it was read"
            else:  # what is rotated off from now on is written after this look
                self.cursor = replace(cursor, mtime=st.st_mtime_ns)
        if rot is None:
            return False
        self._restart_file(st, target, rot, lambda old, lost: restarted(self.path, why, cursor.lines, old, lost))
        return True

    def _kin(self, path: Path) -> bool:
        """Whether ``path``, named as a rotation tool names the log's old content, holds that content: the log's
        reader recognises it (a name alone is no evidence: :func:`~rlvitals.ingest.same_format`)."""
        return same_format(self.reader.sniff)(path)

    def _repointed(self, st: os.stat_result, target: str) -> None:
        """The symlink at the path leads to another file now (``target``): read the rest of the one it led
        to, and the segments written since, then the new one from where it is new."""
        before = self.cursor
        # the longest generation read of it: a segment left and come back to was finished each time
        known = max((g for g in self.finished if g.length <= st.st_size and g.matches(self.path, st)),
                    key=lambda g: g.length, default=None)
        stale = known is None and st.st_mtime_ns < before.mtime and complete_end(self.path, 0, st.st_size) > 0
        rot = segments(before, st, self.finished)
        end = known.length if known is not None else complete_end(self.path, 0, st.st_size) if stale else 0
        lines = count_lines(self.path, 0, end) if end else 0
        self._restart_file(st, target, rot, lambda old, lost: repointed(self.path, before.target, target,
                                                                        before.lines, old, lost, lines))
        if end:  # read already, or another log's: only what comes after it is this log's
            cursor = advance(self.cursor, self.path, st, end, lines)
            self.cursor = replace(cursor, mtime=max(cursor.mtime, before.mtime))
        if stale:
            self.messages.append(told("stale", path=self.path, name=Path(target).name, lines=lines))

    def _rewritten(self, st: os.stat_result, target: str) -> bool:
        """The file followed was changed in place, and no copy of what it held is anywhere: when it restates
        what was read of it, read it again whole (replacing what it gave) and True; else False."""
        if self._whole:  # read whole at each change anyway: the next read replaces what this file gave
            if Generation.of(self.path, st.st_size).first != self.cursor.first:
                return False
            self._know(st, target)
            self._seen_size = -1
            self._said_rewrite()
            return True
        cursor = self._reread(self.path, st, FileCursor(str(self.path), target=target))
        if cursor is None:
            return False
        self.cursor, self._seen_size = cursor, st.st_size
        return True

    def _restated(self, found: tuple[Path, tuple[int, int]]) -> Path | None:
        """The first file a rotation left, when it is the file followed rewritten before it was rotated off (it
        restates what was read of it): read again whole, replacing what the file followed gave; where it was
        read, or None (it is some other file, or unreadable: it is read as the rotation's files are)."""
        here = locate(*found, self.rules.folders(Path(self.cursor.target or self.path)))
        if here is None:
            return None
        at, st = here
        try:
            if inflatable(at.name):
                with inflated(at) as plain:
                    done = self._reread(plain.path, plain.path.stat(), FileCursor(str(plain.path)), shown=at)
                    whole = Generation.of(plain.path, plain.size)
            else:
                done = self._reread(at, st, FileCursor(str(at)))
                whole = Generation.of(at, st.st_size)
        except (*INFLATE_ERRORS, OSError):
            return None
        if done is None:
            return None
        self._finish(whole)
        return at

    def _reread(self, path: Path, st: os.stat_result, start: FileCursor,
                shown: Path | None = None) -> FileCursor | None:
        """Read ``path`` (the file ``st`` was taken of) whole; when it restates what the file followed gave —
        its first step is the first step read from that file — replace those records by its own and give the
        cursor at its end (taken from ``start``), else change nothing and give None (a new log written over
        the old one). Raises OSError when the file changed while it was read."""
        end = complete_end(path, 0, st.st_size)
        meta = SourceMeta(format=self.reader.format, files=[str(shown or path)], window=(0, end))
        skipped = SkipLog()
        cursor = advance(start, path, st, end, count_lines(path, 0, end))
        records = self._packed(path, meta, skipped)
        self._unchanged(path, st, end, cursor)
        first = next((r[0] for r in records if not r[4]), None)
        if first is None or first != self.builder.step_at(self._file_rows):
            return None
        if shown is not None:
            skipped.reasons = [both(lambda r: r.replace(str(path), str(shown)), r) for r in skipped.reasons]
        earlier = self.builder.packed_rows(self._file_rows, self._layouts)
        self._fresh()
        self.builder.skipped.merge(self._file_skips)
        self._add(earlier, SkipLog(), news=False)
        self._add(records, skipped, news=False, meta=meta)
        self._ending(meta, records)
        self.meta.bytes_read += meta.bytes_read
        self._last_step = max((r[0] for r in earlier + records if not r[4]), default=None)
        if self._keep:
            self.unsaved, self._reset = earlier + records, True
        self._got += 1  # the run changed, whatever the number of records
        self._said_rewrite()
        return cursor

    def _said_rewrite(self) -> None:
        self._rewrites += 1
        if self._rewrites == 1:  # a trainer that writes its log again at every step would say it at every step
            self.messages.append(told("rewritten", path=self.path))

    def _restart_file(self, st: os.stat_result, target: str, rot: Rotations,
                      said: Callable[[Path | None, bool], Words]) -> None:
        """The file at the path (``st``) is not the one the cursor was reading: read what is left of
        the old content wherever it went (``rot``), then the files rotated off after it, before the new file;
        ``said`` is what is told of it (given where the old content was read, and whether lines were lost)."""
        cursor, self._gap, self._capped, self._restarting = self.cursor, "", [], True
        self._recent = [] if self._last_step is None else [self._last_step]
        try:
            old = self._read_found(rot.old, cursor.offset, cursor.lines) if rot.old is not None else None
            if old is None and cursor.offset and not self._whole:
                old, rot = self._rewritten_away(rot)
            if old is None:
                self._finish(cursor.generation())
                if self._whole:
                    self._carry(None, None)
            lost = old is None and cursor.offset != 0
            self.messages.append(said(old, lost))
            gone = self._read_between(rot)
            if lost or gone or rot.compressed or self._capped:  # the steps lost are named at the new file's first
                self._gap = gap(lost, gone, [p.name for p in rot.compressed], self._capped)
            else:
                self._recent = None
            self._file_rows, self._file_skips = self.builder.rows, _copy(self.builder.skipped)
            self._know(st, target)
            self._seen_size = -1
        finally:
            self._restarting = False

    def _rewritten_away(self, rot: Rotations) -> tuple[Path | None, Rotations]:
        """The old content not found, the file of ``rot.between`` that is the file followed rewritten in place
        before it was rotated off (it restates what was read of it), read again whole; where, and the rest."""
        for i, found in enumerate(rot.between):
            old = self._restated(found)
            if old is not None:
                return old, replace(rot, between=rot.between[:i] + rot.between[i + 1:])
        return None, rot

    def _read_between(self, rot: Rotations) -> list[str]:
        """Read whole the files rotated off after the one followed; the names of those gone meanwhile."""
        gone: list[str] = []
        for found in rot.between:
            path = self._read_found(found, 0, 0)
            if path is None:
                gone.append(found[0].name)
                self.messages.append(told("gone", path=found[0], name=self.path.name))
            else:
                self.messages.append(told("whole", path=self.path, name=path.name))
        for path in rot.compressed:
            self.messages.append(told("compressed", path=path, name=self.path.name))
        for path in rot.refused:
            self.messages.append(told("foreign", path=path, name=self.path.name))
        return gone

    def _read_found(self, found: tuple[Path, tuple[int, int]], start: int, base: int) -> Path | None:
        """Read the file ``found`` (a path, its identity there) from ``start`` to its end, following it through
        renames (and into its compressed form: logrotate's ``compress`` removes the plain file once it is
        made); where it was read, or None if gone or unreadable. Never raises: what it read is added once,
        and its content counts as read to its end (a copy of it found later is not read again)."""
        path, ident = found
        folders = self.rules.folders(Path(self.cursor.target or self.path))
        for _ in range(8):  # a file renamed on more often than this while being read is left for the next poll
            here = locate(path, ident, folders) or _compressed_form(path)
            if here is None:
                return None
            at, st = here
            try:  # every look at the file comes before its records are added: a retry adds them once
                if inflatable(at.name):
                    generation = self._read_inflated(at, st, start, base)
                else:
                    generation = Generation.of(at, st.st_size)
                    if self._whole:
                        self._carry(at, st)
                    elif st.st_size > start:
                        self._read(at, st, start, st.st_size, base)
            except FileNotFoundError:
                path = at
                continue  # renamed (or removed) while it was read: look for it again
            except INFLATE_ERRORS as exc:  # not readable: said, and the rotation goes on (what it read stays read)
                self.messages.append(told("unreadable", str(getattr(exc, "strerror", None) or exc), path=at))
                return None
            self._finish(generation)
            return at
        self.messages.append(told("renamed", path=path))
        return None

    def _read_inflated(self, path: Path, st: os.stat_result, start: int, base: int) -> Generation:
        """Read a compressed rotated file from ``start`` (of its plain bytes) to its end, at most
        :data:`~rlvitals.ingest.compressed.INFLATE_CAP` of them; the generation of its plain content."""
        with inflated(path) as plain:
            if not same_file(path, st, st.st_size):  # before a record is added: a retry adds them once
                raise FileNotFoundError(errno.ENOENT, "another file took its name while it was read", str(path))
            plain_st = plain.path.stat()
            end = complete_end(plain.path, 0, plain.size)
            if self._whole:
                self._carry(plain.path, plain_st)
            elif end > start:
                self._read(plain.path, plain_st, start, end, base, shown=path)
            if plain.capped:
                self._capped.append(path.name)
                self.messages.append(told("capped", path=path, cap=plain.cap))
            return Generation.of(plain.path, plain.size)

    def _know(self, st: os.stat_result, target: str) -> None:
        """Take the identity of the file now at the path before reading it: rotated before, it is found by it."""
        self.cursor = FileCursor(str(self.path), st.st_dev, st.st_ino, mtime=st.st_mtime_ns, target=target)

    def _finish(self, generation: Generation) -> None:
        """``generation`` was read to its end: a copy of it found later is not read again."""
        if not generation.empty and generation not in self.finished:
            self.finished.append(generation)
            del self.finished[:-_KNOWN_FILES]

    def _lost_steps(self) -> None:
        """Name the stretches of steps a rotation lost: gaps wider than any of the last few strides."""
        assert self._recent is not None
        seen, usual = sorted(set(self._recent)), max(self._strides, default=0)
        for a, b in zip(seen, seen[1:], strict=False):
            if usual and b - a > usual:
                self.messages.append(told("lost", self._gap, path=self.path, a=a, b=b))
        self._recent, self._gap = None, ""

    def _rotation_state(self) -> dict[str, Any]:
        """What a restart needs to read the file followed again whole: where its records begin."""
        skips = self._file_skips
        return {"file_rows": self._file_rows, "file_skipped": {"count": skips.count, "reasons": skips.reasons,
                                                               "reasons_zh": chinese_of(skips.reasons)}}

    def _resume_rotation(self, saved: Mapping[str, Any]) -> None:
        rows = saved.get("file_rows", 0)
        self._file_rows = rows if isinstance(rows, int) else 0
        skips = saved.get("file_skipped", {})
        self._file_skips = SkipLog(int(skips.get("count", 0)),
                                   with_chinese(skips.get("reasons", []), skips.get("reasons_zh")))

    # the reading, the log's own (LineSource)
    def _read(self, path: Path, st: os.stat_result, start: int, end: int, base: int,
              live: FileCursor | None = None, shown: Path | None = None) -> None:
        raise NotImplementedError

    def _carry(self, old: Path | None, old_st: os.stat_result | None) -> None:
        raise NotImplementedError

    def _packed(self, path: Path, meta: SourceMeta, skipped: SkipLog) -> list[Packed]:
        raise NotImplementedError

    def _unchanged(self, path: Path, st: os.stat_result, end: int, cursor: FileCursor,
                   since: FileCursor | None = None) -> None:
        raise NotImplementedError

    def _fresh(self) -> None:
        raise NotImplementedError

    def _add(self, records: list[Packed], skipped: SkipLog, news: bool = True, meta: SourceMeta | None = None) -> None:
        raise NotImplementedError

    def _ending(self, meta: SourceMeta, records: list[Packed]) -> bool:
        raise NotImplementedError


def _compressed_form(path: Path) -> tuple[Path, os.stat_result] | None:
    """``path`` compressed beside it (``run.log.1.gz``), once the plain file is gone: gzip removes it last."""
    for suffix in INFLATABLE:
        packed = path.with_name(path.name + suffix)
        try:
            return packed, packed.stat()
        except OSError:
            continue
    return None


def _copy(skips: SkipLog) -> SkipLog:
    return SkipLog(skips.count, list(skips.reasons))
