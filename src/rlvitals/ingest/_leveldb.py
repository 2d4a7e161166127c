"""The LevelDB-style log W&B's ``.wandb`` file and SwanLab's ``.swanlab`` file are written in.

After a 7-byte header (its magic is the writer's), the file is 32 KiB blocks of chunks ``crc32(4)
length(2, LE) type(1)`` with types FULL=1, FIRST=2, MIDDLE=3, LAST=4 (a record too long for its block is
split in a FIRST, MIDDLE… and LAST chunk); the CRC is zlib's CRC-32 of the type byte and the data. Fewer than
7 bytes left in a block are padding. A run killed while writing leaves an incomplete tail: every complete
record is read and the tail counts as one skip.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

from ..words import Words
from ._files import open_file
from .record import SkipLog, SourceMeta

HEADER_LEN = 7
BLOCK = 32 * 1024
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
_HEAD = struct.Struct("<IHB").unpack_from

#: what is wrong with a framed record of a ``.wandb`` file (empty: the file ends there, nothing wrong)
_NO_PROBLEM = Words("", "")
_ZEROS = Words("zeros before the end of the block", "块结束之前出现了全零")
_PAST_BLOCK = Words("length runs past the block", "长度超出了块的边界")
_CHECKSUM = Words("checksum mismatch", "校验和不符")


def _problem(block: bytes, pos: int, last: bool) -> Words | None:
    """What is wrong with the chunk at ``pos`` of ``block`` (the file's last when ``last``): None when nothing,
    :data:`_NO_PROBLEM` when the file ends there."""
    crc, length, kind = _HEAD(block, pos)
    stop = pos + 7 + length
    if kind == 0 and length == 0 and crc == 0:
        return _NO_PROBLEM if last or not block[pos:].strip(b"\0") else _ZEROS
    if stop > len(block):
        return _NO_PROBLEM if last else _PAST_BLOCK  # at the end: truncated, told by the caller
    if not FULL <= kind <= LAST or zlib.crc32(block[pos + 7:stop], zlib.crc32(bytes((kind,)))) != crc:
        return _CHECKSUM
    return None


def frames(path: Path, meta: SourceMeta, skips: SkipLog, magic: bytes, header: Words) -> Iterator[tuple[int, bytes]]:
    """``(record_number, payload)`` of every complete, intact record of a log whose first 7 bytes start with
    ``magic`` (``header`` names it in the skip of a file without it)."""
    for number, payload, _ in frames_from(path, meta, skips, magic, header):
        yield number, payload


def frames_from(path: Path, meta: SourceMeta, skips: SkipLog, magic: bytes, header: Words, *, start: int = 0,
                number: int = 0, live: bool = False) -> Iterator[tuple[int, bytes, int]]:
    """``(record_number, payload, end)`` of every complete, intact record from the offset ``start`` (0: the
    file's beginning; else where a record began, an ``end`` returned before) on, numbered after ``number``;
    ``end`` is the offset just past the record, where a reader that stops there goes on. ``live``: the file is
    still being written, so an incomplete tail is the record being written, not a skip."""
    parts: list[bytes] = []
    with open_file(path) as fh:
        if start < HEADER_LEN:
            head = fh.read(HEADER_LEN)
            meta.bytes_read += len(head)
            if len(head) < HEADER_LEN or not head.startswith(magic):
                skips.skip(f"{path}#record 1", Words(f"no {header}; the file was skipped",
                                                     f"没有{header.zh}；这个文件已跳过"))
                return
            start = HEADER_LEN
        fh.seek(start)
        at, offset = start, start % BLOCK  # the file offset of the block read next, and where in its block
        while True:
            block = fh.read(BLOCK - offset)
            meta.bytes_read += len(block)
            last = len(block) < BLOCK - offset  # the file ends in this block
            pos = 0
            end = len(block)
            while end - pos >= 7:
                _, length, kind = _HEAD(block, pos)
                stop = pos + 7 + length
                bad = _problem(block, pos, last)
                if bad is not None:
                    if bad:
                        number += 1
                        skips.skip(f"{path}#record {number}",
                                   Words(f"corrupt record ({bad}); the rest of its 32 KiB block was skipped",
                                         f"记录已损坏（{bad.zh}）；它所在的 32 KiB 块余下的部分已跳过"))
                        parts = []
                        pos = end
                    break
                data = block[pos + 7:stop]
                pos = stop
                if kind == FULL:
                    number += 1
                    yield number, data, at + pos
                elif kind == FIRST:
                    parts = [data]
                elif parts:
                    parts.append(data)
                    if kind == LAST:
                        number += 1
                        yield number, b"".join(parts), at + pos
                        parts = []
            if last:
                if (block[pos:].strip(b"\0") or parts) and not live:
                    skips.skip(f"{path}#record {number + 1}",
                               Words("truncated record at the end of the file (the run was killed or is "
                                     "still writing); the incomplete tail was skipped",
                                     "文件末尾的记录不完整（运行被杀掉了，或者还在写入）；不完整的尾部已跳过"))
                return
            at, offset = at + len(block), 0
