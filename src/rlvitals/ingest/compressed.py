"""Rotated logs that a rotation tool compressed (logrotate's ``compress``: ``run.log.2.gz``,
``run.log-20240101.gz``), read as the plain text they hold.

gzip, bzip2 and xz are in Python's standard library and are opened; zstd, lz4 and zip are not (their name
still tells a rotated log: the steps it holds are named as not read). A compressed file is never inflated
into memory: it is streamed, into a temporary file the readers read like any log, and at most
:data:`INFLATE_CAP` bytes of it — a rotated log larger than that is read up to the cap, and the caller
says so.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import shutil
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, cast

__all__ = ["COMPRESSED", "INFLATABLE", "INFLATE_CAP", "INFLATE_ERRORS", "Inflated", "inflatable", "inflated",
           "opened", "twin_of", "wrapped"]

#: what rotation tools append to a compressed log's name
COMPRESSED = (".gz", ".bz2", ".xz", ".zst", ".lz4", ".zip")

#: how many bytes of a compressed rotated log are inflated at most (a log rotated daily is some MB to
#: a few hundred; a file that inflates to more is not a rotated log of a training, or not all of it is needed)
INFLATE_CAP = 1 << 30

#: the compressions that are opened (Python's standard library reads them)
INFLATABLE = (".gz", ".bz2", ".xz")

#: what a compressed stream raises when it is cut short (still being written) or is not what its name says
INFLATE_ERRORS = (OSError, EOFError, lzma.LZMAError, zlib.error)


def inflatable(name: str) -> bool:
    """Whether ``name`` is a compressed file that is opened (gzip, bzip2, xz).

    Example:
        >>> [inflatable(n) for n in ("run.log.2.gz", "run.log.2.xz", "run.log.2.zst", "run.log.2")]
        [True, True, False, False]
    """
    return name.endswith(INFLATABLE)


def twin_of(path: Path) -> Path | None:
    """The plain file ``path`` is compressed from, when ``path`` is compressed; else None. A compressed
    file whose plain twin is still there is being written from it (gzip removes the plain file last)."""
    suffix = path.suffix
    return path.with_name(path.name[: -len(suffix)]) if suffix in COMPRESSED else None


@contextmanager
def opened(path: Path) -> Iterator[BinaryIO]:
    """The inflated bytes of ``path``, as a stream (raises one of :data:`INFLATE_ERRORS` when the file is cut
    short or corrupt)."""
    with path.open("rb") as fh, wrapped(path, fh) as plain:
        yield plain


@contextmanager
def wrapped(path: Path, fh: BinaryIO) -> Iterator[BinaryIO]:
    """The inflated bytes of ``fh``, the file ``path`` opened already (its compression told by its name)."""
    suffix = path.suffix
    with (gzip.GzipFile(fileobj=fh, mode="rb") if suffix == ".gz" else bz2.BZ2File(fh, "rb") if suffix == ".bz2"
          else lzma.LZMAFile(fh, "rb")) as plain:
        yield cast(BinaryIO, plain)


@dataclass(frozen=True)
class Inflated:
    """A compressed file inflated into ``path`` (a temporary file), ``size`` bytes of it; ``capped`` when it
    holds more than ``cap`` bytes and only that many were inflated."""

    path: Path
    size: int
    capped: bool
    cap: int


@contextmanager
def inflated(path: Path, cap: int | None = None) -> Iterator[Inflated]:
    """``path`` inflated into a temporary file named like it without its compression suffix (so a reader
    that looks at the name sees the log's), removed on exit; at most ``cap`` (:data:`INFLATE_CAP`) bytes.

    Example:
        >>> import gzip, tempfile
        >>> from pathlib import Path
        >>> gz = Path(tempfile.mkdtemp()) / "run.log.1.gz"
        >>> _ = gz.write_bytes(gzip.compress(b"step:1 - loss:0.5\\n"))
        >>> with inflated(gz) as plain:
        ...     plain.path.name, plain.path.read_bytes(), plain.capped
        ('run.log.1', b'step:1 - loss:0.5\\n', False)
    """
    limit = INFLATE_CAP if cap is None else cap
    with tempfile.TemporaryDirectory(prefix="rlvitals-inflated-") as folder:
        plain = Path(folder) / (twin_of(path) or path).name
        with opened(path) as src, plain.open("wb") as dst:
            shutil.copyfileobj(_Capped(src, limit), dst, 1 << 20)
            capped = src.read(1) != b""
        yield Inflated(plain, plain.stat().st_size, capped, limit)


class _Capped:
    """A stream that ends after ``left`` bytes."""

    def __init__(self, fh: BinaryIO, left: int) -> None:
        self.fh, self.left = fh, left

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        data = self.fh.read(n) if n > 0 else b""
        self.left -= len(data)
        return data
