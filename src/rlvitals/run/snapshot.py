"""A whole-file log (TRL ``trainer_state.json``, TensorBoard, W&B offline, a folder) followed by
re-reading it whole when it changes: see :mod:`.follow` for why replacing the last read is right
for these formats."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import EmptyInputError, InputError
from ..words import Words
from .run import Run
from .said import told


def signature(path: Path) -> tuple[tuple[str, int, int, int], ...]:
    """What changes when a whole-file log is written: each file's name, size, mtime and inode. A SQLite store's
    ``-shm`` file is left out: it holds no data, and a reader writes it (a Trackio or MLflow store read would
    otherwise change the folder it lies in at every read)."""
    if path.is_file():
        st = path.stat()
        return ((path.name, st.st_size, st.st_mtime_ns, st.st_ino),)
    out = []
    for folder, _dirs, files in os.walk(path):
        for name in files:
            if name.endswith("-shm"):
                continue
            full = os.path.join(folder, name)
            try:
                st = os.stat(full)
            except OSError:
                continue
            out.append((os.path.relpath(full, path), st.st_size, st.st_mtime_ns, st.st_ino))
    return tuple(sorted(out))


class SnapshotSource:
    """Re-reads a whole-file log (or a folder) when it changes, at most once per ``min_gap`` s."""

    def __init__(self, path: Path, fmt: str | None, min_gap: float, algorithm: str | None = None) -> None:
        self.path = path
        self.fmt = fmt
        self.algorithm = algorithm
        self.min_gap = min_gap
        self.messages: list[str] = []
        self._runs: list[Run] = []
        self._sig: tuple[tuple[str, int, int, int], ...] = ()
        self._next = 0.0
        self._last_error = ""
        #: why the last read failed (None after a good one): a page lists the file with it
        self.error: str | None = None

    def state(self) -> dict[str, Any]:
        return {"kind": "snapshot"}

    def runs(self) -> list[Run]:
        return list(self._runs)

    def poll(self, now: float, cost: float = 0.0) -> bool:
        """Re-read if the files changed and the throttle allows; whether the runs changed."""
        from .load import load

        try:
            sig = signature(self.path)
        except OSError:
            return False
        if sig == self._sig or now < self._next:
            return False
        try:
            runs = load(self.path, self.fmt, algorithm=self.algorithm)
        except EmptyInputError as exc:  # recognised, no metric yet (or only text and tables): said once
            if str(exc) != self._last_error and not self._runs:
                self.messages.append(told("written", Words(str(exc), exc.text("zh"))))
                self._last_error = str(exc)
            runs = []
        except (InputError, OSError) as exc:  # mid-rewrite (half a JSON file): keep the last good read, retry
            if str(exc) != self._last_error:
                self.messages.append(f"{exc}; kept the last complete read and will retry")
                self._last_error = str(exc)
            self.error = str(exc)
            self._next = now + self.min_gap
            return False
        self.error = None
        self._sig = sig
        self._next = now + max(self.min_gap, 2 * cost)
        changed = bool(runs) or bool(self._runs)
        self._runs = runs
        return changed


__all__ = ["SnapshotSource", "signature"]
