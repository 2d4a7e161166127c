"""Quiet logs: read whole, diagnosed, and let go, so a folder of a thousand finished runs is read on both cores and
held in little memory.

A sweep is mostly finished runs. A log not written for ``settle`` seconds is read whole (:func:`rlvitals.run.load.load`,
the reader's fast path, several times quicker than following it line by line), diagnosed, and kept only as its
*facts*: the run list's entry (:func:`.listing.facts_of`), its last step and verdict. Neither the Run nor the
Diagnosis is held: a run not looked at costs a few hundred bytes, not its columns. Its page is asked for: the
workspace reads it again then (the follower's first read), and follows it from there; the log written to again:
the same. With ``workers`` the reads run in worker processes (both cores, and the server's own thread stays free
to answer); without, in the calling thread. Only plain values come back from a worker (:class:`Reading`).

The facts are kept in the state file with the log's signature (each file's name, size, mtime and inode): a
restarted server lists an unchanged log's runs from there, without reading it again (:mod:`.store`).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..checks.config import DiagnoseConfig
from ..errors import RlvitalsError
from .listing import facts_of

#: a log's signature: (name, size, mtime in ns, inode) of each of its files (:func:`rlvitals.run.follow.signature`)
Signature = tuple[tuple[str, int, int, int], ...]


@dataclass(frozen=True)
class Found:
    """One run of a quiet log, as the run list says it."""

    path: str
    last_step: int
    verdict: str
    facts: dict[str, Any]


@dataclass(frozen=True)
class Reading:
    """What a read of a quiet log gave: its runs' facts, and the signature it had when read (None: it changed
    while read, or could not be read whole: the log is then followed instead)."""

    path: str
    signature: Signature | None
    runs: tuple[Found, ...]


#: reads one quiet log: (path, format, algorithm, config) -> its reading
Reader = Callable[[Path, "str | None", "str | None", "DiagnoseConfig | None"], Reading]


def read_whole(path: Path, fmt: str | None, algorithm: str | None, config: DiagnoseConfig | None) -> Reading:
    """Read the log at ``path`` whole and diagnose each of its runs; the reading (no runs when it could not be
    read, or changed meanwhile: the workspace then follows it, and says why as it would have).

    Example:
        >>> reading = read_whole(Path("tests/fixtures/verl/grpo_gsm8k.log"), None, None, None)  # doctest: +SKIP
        >>> reading.runs[0].verdict  # doctest: +SKIP
        'warn'
    """
    from ..diagnosis import diagnose
    from ..live import read_to
    from ..run.follow import signature
    from ..run.load import load

    try:
        before = signature(path)
        runs = load(path, fmt, algorithm=algorithm)
        found = []
        for run in runs:
            d = diagnose(run, config, threads=1)  # the reads run side by side already, a process per core
            found.append(Found(run.path, int(read_to(run)), d.verdict, facts_of(d)))
        after = signature(path)
    except (RlvitalsError, OSError, ValueError):
        return Reading(str(path), None, ())
    return Reading(str(path), before if before == after and found else None, tuple(found))


def watch_parent(parent: int, every: float = 1.0) -> None:
    """In a worker: end it once the server that started it is gone (killed without a word), rather than read on
    for no one."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        os._exit(0)

    threading.Thread(target=watch, name="rlvitals-parent-watch", daemon=True).start()


class Readers:
    """Reads quiet logs in ``workers`` processes (0: in the calling thread, at :meth:`submit`)."""

    def __init__(self, workers: int, read: Reader = read_whole) -> None:
        self.workers = workers
        self.read = read
        self._pool: ProcessPoolExecutor | None = None

    def submit(self, path: Path, fmt: str | None, algorithm: str | None,
               config: DiagnoseConfig | None) -> Future[Reading]:
        """Read ``path``: done at once without workers, else in a worker process."""
        if self.workers <= 0:
            done: Future[Reading] = Future()
            done.set_result(self.read(path, fmt, algorithm, config))
            return done
        if self._pool is None:  # spawned, not forked: the server's threads are not copied into a half-state
            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=watch_parent, initargs=(os.getpid(),))
        return self._pool.submit(self.read, path, fmt, algorithm, config)

    def idle(self) -> None:
        """Nothing is being read: let the worker processes go (their memory with them)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


__all__ = ["Found", "Reader", "Readers", "Reading", "Signature", "read_whole", "watch_parent"]
