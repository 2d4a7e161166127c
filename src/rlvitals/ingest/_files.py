"""How a reader opens a file: never a FIFO, a socket or a device, and each folder once by its real path.

A FIFO waits for a writer forever when it is opened, ``/dev/zero`` and ``/dev/urandom`` never end, and a
socket cannot be read at all; a symbolic link can point at any of them from inside a store
(``mlruns/<exp>/<run>/metrics/loss -> /dev/zero``). So every file a reader opens, the input and each file
inside a folder it reads (an MLflow run's metric files, a SwanLab run's config, a ClearML session's
metrics, an Aim run's tables), is looked at first (:func:`special_kind`, through links) and refused
unopened when it is not a regular file:

* a file a reader lists inside a folder is passed over by :func:`regular` with a counted skip that names
  it (the rest of the run is read);
* a file opened anyway, by :func:`open_file`, raises an :class:`~rlvitals.errors.InputError` naming it.
  It is opened without waiting (``O_NONBLOCK``) and looked at again once open, so a FIFO put in the file's
  place between the look and the open is refused too, never waited on.

A folder reached through several links (``runs/latest -> exp3``) is one folder: :func:`real_path` names
it (a loop of links is its own name, never an error) and :func:`unique` keeps one path per folder.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from ..errors import InputError
from ..words import Words
from .record import SkipLog

#: opening a FIFO without it waits for a writer (a system without FIFOs has no such flag)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
#: a special file's kind (:func:`special_kind`) in Chinese
SPECIAL_ZH = {"FIFO": "一个 FIFO（命名管道）", "socket": "一个套接字", "device": "一个设备文件"}


def special_kind(path: Path) -> str | None:
    """What ``path`` is when it is neither a regular file nor a folder (a FIFO, a socket, a device): such a
    file is never opened, since reading a FIFO waits for a writer forever. None for a file or folder.

    Example:
        >>> special_kind(Path("/dev/null")), special_kind(Path("/tmp"))
        ('device', None)
    """
    try:
        mode = path.stat().st_mode
    except (OSError, RuntimeError):  # gone, or a loop of links: nothing to open either way
        return None
    return _kind(mode)


def _kind(mode: int) -> str | None:
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return "FIFO" if stat.S_ISFIFO(mode) else "socket" if stat.S_ISSOCK(mode) else "device"


def not_opened(kind: str) -> Words:
    """Why a special file of ``kind`` was passed over: what follows its path in a note or a skip."""
    return Words(f"a {kind}, not a log file; it was not opened", f"这是{SPECIAL_ZH[kind]}，不是日志文件；没有打开它")


def refusal(path: Path, kind: str) -> InputError:
    """The error for opening ``path``, a special file of ``kind``."""
    why = not_opened(kind)
    return InputError(Words(f"{path}: {why} (reading a FIFO or a device would wait forever or never end)",
                            f"{path}：{why.zh}（读 FIFO 或设备文件会一直等下去，或者永远读不完）"))


def open_file(path: Path) -> BinaryIO:
    """``path`` opened to read bytes; an :class:`InputError` naming it when it is a FIFO, a socket or a
    device (see the module docstring). Other failures are the OSError ``open`` raises.

    Example:
        >>> open_file(Path("/dev/zero"))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        rlvitals.errors.InputError: /dev/zero: a device, not a log file; it was not opened (reading a FIFO ...
    """
    kind = special_kind(path)
    if kind is not None:
        raise refusal(path, kind)
    fd = os.open(path, os.O_RDONLY | _NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        kind = _kind(mode)
        if kind is not None:  # put there since the look above
            raise refusal(path, kind)
        if _NONBLOCK:
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_file(path: Path) -> bytes:
    """The bytes of ``path``, opened by :func:`open_file`."""
    with open_file(path) as fh:
        return fh.read()


def regular(paths: Iterable[Path], skips: SkipLog) -> list[Path]:
    """The paths among ``paths`` (files a reader found in a folder) that can be opened: a FIFO, a socket or
    a device (a link to one included) is left out with a counted skip naming it."""
    out = []
    for path in paths:
        kind = special_kind(path)
        if kind is None:
            out.append(path)
        else:
            skips.skip(str(path), not_opened(kind))
    return out


def real_path(path: Path) -> Path:
    """``path`` with every link resolved, as far as it can be: a loop of links, or a link to nothing, is
    named as it stands (where :meth:`Path.resolve` raises on a loop).

    Example:
        >>> real_path(Path("/tmp/../tmp"))
        PosixPath('/tmp')
    """
    return Path(os.path.realpath(path))


def unique(paths: Iterable[Path]) -> list[Path]:
    """``paths`` with each file or folder once, by its real path: of several ways to one folder (a link
    ``runs/latest -> exp3`` beside ``runs/exp3``) the path through no link is kept, else the first; the
    order of ``paths`` is kept.

    Example:
        >>> unique([Path("/tmp"), Path("/tmp/../tmp"), Path("/")])
        [PosixPath('/tmp'), PosixPath('/')]
    """
    paths = list(paths)
    chosen: dict[Path, Path] = {}
    for path in paths:
        real = real_path(path)
        kept = chosen.get(real)
        if kept is None or (Path(os.path.abspath(kept)) != real and Path(os.path.abspath(path)) == real):
            chosen[real] = path
    keep = set(chosen.values())
    return [p for p in dict.fromkeys(paths) if p in keep]
