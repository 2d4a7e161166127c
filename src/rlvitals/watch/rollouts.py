"""A rollout dump folder followed beside a log: ``rlvitals watch LOG --rollouts DIR``.

veRL writes ``trainer.rollout_data_dir/<step>.jsonl`` once per training step, TRL (with
``log_completions=True``) ``completions/completions_<step>.parquet``. Each poll reads only the
step files that are new or changed since the last poll (size, mtime or inode), analyses each
step by itself (:func:`step_frame`: every rollout metric is per step, so a step's row does not
depend on the others) and keeps one row per step; :meth:`RolloutFollow.join` puts those series
on a Run before it is diagnosed, as ``rlvitals diagnose --rollouts`` does.

A step file seen while still being written is read as far as its complete lines go (the reader
skips a cut last line) and read again when it changes, replacing that step's row, so the result
converges to the finished file's. A file that cannot be read is reported once and retried when
it changes.

>>> follow = RolloutFollow(Path("rollouts"))  # doctest: +SKIP
>>> follow.poll(), follow.join(run).series("group/zero_std/share")  # doctest: +SKIP
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import polars as pl

from ..errors import RlvitalsError
from ..run import Run

__all__ = ["RolloutFollow", "join_series", "step_frame"]

#: veRL ``<step>.jsonl`` and TRL ``completions_<step>.parquet``
_STEP_FILE = re.compile(r"^(?:(\d+)\.jsonl|completions_(\d+)\.parquet)$")
#: per-step columns of the rollout analysis that are counts, not catalog metrics
_COUNTS = ("groups", "rollouts", "group_sizes")


def step_frame(table: pl.DataFrame) -> pl.DataFrame:
    """The per-step rollout metrics of a rollout table (catalog keys only). A NaN means "not
    computable here" (pass@8 of groups of 4, maj@k without answers) and becomes null: it is not a
    non-finite value a trainer logged, which the ``nan_inf`` check would rightly fail on.

    Example:
        >>> from rlvitals.rollout.readers import rollouts_from_records
        >>> t = rollouts_from_records([{"step": 2, "prompt": "q", "response": r, "score": s}
        ...                            for r, s in (("4", 1.0), ("5", 0.0))]).table
        >>> step_frame(t).select("step", "group/zero_std/share", "pass@4").row(0)
        (2, 0.0, None)
    """
    from ..catalog import load_catalog
    from ..rollout.analysis import compute, update

    frame = compute(update(None, table))
    catalog = load_catalog()
    keys = [c for c in frame.columns if c not in _COUNTS and c != "step" and catalog.find(c) is not None]
    return frame.select(["step", *keys]).with_columns(pl.col(pl.Float32, pl.Float64).fill_nan(None))


def join_series(run: Run, frames: list[pl.DataFrame], origin: str = "rollouts") -> Run:
    """``run`` with the per-step rollout frames joined onto its step axis (see ``Run.with_series``)."""
    frames = [f for f in frames if f.height]
    if not frames:
        return run
    return run.with_series(pl.concat(frames, how="diagonal_relaxed"), origin)


def _signature(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


class RolloutFollow:
    """Follows a folder of per-step rollout dumps; ``poll()`` reads new or changed step files.

    ``messages`` collects what the user should read (a file that could not be read); the
    watcher prints and clears them.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.messages: list[str] = []
        self.frames: dict[int, pl.DataFrame] = {}
        self._seen: dict[str, tuple[int, int, int]] = {}
        self._reported: set[str] = set()
        self._waiting = False

    def _step_files(self) -> list[tuple[int, Path]]:
        base = self.folder / "completions" if (self.folder / "completions").is_dir() else self.folder
        try:
            names = os.listdir(base)
        except OSError:
            if not self._waiting:
                self.messages.append(f"{self.folder}: no such rollout folder yet; waiting for it to appear")
                self._waiting = True
            return []
        found = []
        for name in names:
            m = _STEP_FILE.match(name)
            if m is not None:
                found.append((int(m.group(1) or m.group(2)), base / name))
        return sorted(found)

    def poll(self) -> bool:
        """Read the step files that are new or changed; whether any step's metrics changed."""
        changed = False
        for step, path in self._step_files():
            sig = _signature(path)
            if sig is None or self._seen.get(path.name) == sig or sig[0] == 0:
                continue
            self._seen[path.name] = sig
            changed |= self._read(step, path)
        return changed

    def _read(self, step: int, path: Path) -> bool:
        from ..rollout.readers import read_rollouts

        try:
            table = read_rollouts(path).table
            frame = step_frame(table.with_columns(pl.lit(step, dtype=pl.Int64).alias("step")))
        except (RlvitalsError, ValueError, pl.exceptions.PolarsError) as exc:
            if path.name not in self._reported:  # once per file; it is retried when it changes
                self._reported.add(path.name)
                self.messages.append(f"{path}: could not read these rollouts ({exc}); will retry when it changes")
            return False
        self._reported.discard(path.name)
        self.frames[step] = frame
        return True

    def derived_keys(self) -> list[str]:
        """The series the dumps read so far give, in the order first seen."""
        keys: dict[str, None] = {}
        for step in sorted(self.frames):
            keys.update(dict.fromkeys(c for c in self.frames[step].columns if c != "step"))
        return list(keys)

    def join(self, run: Run) -> Run:
        """``run`` with every step's rollout metrics read so far."""
        return join_series(run, [self.frames[s] for s in sorted(self.frames)], f"rollouts in {self.folder}")
