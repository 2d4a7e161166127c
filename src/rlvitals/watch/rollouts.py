"""A rollout dump followed beside a log: ``rlvitals watch LOG --rollouts DIR``.

veRL writes ``trainer.rollout_data_dir/<step>.jsonl`` once per training step, TRL (with
``log_completions=True``) ``completions/completions_<step>.parquet``. Each poll reads only the
step files that are new or changed since the last poll (size, mtime or inode), analyses each
step by itself (:func:`step_frame`: every rollout metric is per step, so a step's row does not
depend on the others) and keeps one row per step; :meth:`RolloutFollow.join` puts those series
on a Run before it is diagnosed, by the same rule as ``rlvitals diagnose --rollouts``
(:func:`rlvitals.rollout.analysis.step_series`).

Any other rollout table — a JSONL/Parquet/CSV file, or a folder of them, read with the column
options (``--step``, ``--score`` …) — is read whole again whenever one of its files changes, and
split into the same per-step rows. The rollouts are read and analysed with the watch's
:class:`~rlvitals.rollout.options.RolloutSettings` (the rollout options of ``rlvitals rollouts``).

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
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path

import polars as pl

from .._sqlite import split_root
from ..errors import InputError, RlvitalsError
from ..ingest import holds_tables
from ..ingest.record import SkipLog
from ..rollout import (
    PROBES_FILE,
    ProbeResults,
    Progress,
    RolloutSet,
    read_probe_results,
    run_each,
    states_needed,
    with_probe_results,
)
from ..rollout.analysis import compute, join_series, step_series, table_options, update
from ..rollout.options import RolloutSettings
from ..run.follow import signature
from ..run.run import Run
from ..words import Words

__all__ = ["RolloutFollow", "join_series", "step_frame"]

#: veRL ``<step>.jsonl`` and TRL ``completions_<step>.parquet``
_STEP_FILE = re.compile(r"^(?:(\d+)\.jsonl|completions_(\d+)\.parquet)$")
_TABLES = (".jsonl", ".ndjson", ".json", ".parquet", ".csv")


def step_frame(table: pl.DataFrame, settings: RolloutSettings | None = None) -> pl.DataFrame:
    """The per-step rollout series of a rollout table (:func:`~rlvitals.rollout.analysis.step_series`),
    analysed with ``settings`` (default: the defaults of ``rlvitals rollouts``).

    Example:
        >>> from rlvitals.rollout.readers import rollouts_from_records
        >>> t = rollouts_from_records([{"step": 2, "prompt": "q", "response": r, "score": s}
        ...                            for r, s in (("4", 1.0), ("5", 0.0))]).table
        >>> frame = step_frame(t)
        >>> frame.select("step", "group/zero_std/share").row(0), "pass@4" in frame.columns
        ((2, 0.0), False)
    """
    settings = settings or RolloutSettings()
    options = table_options(settings, table)
    no_states = states_needed(options, frozenset(table.columns))
    if no_states is not None:  # reported as a step file that cannot be read, as ``rlvitals rollouts`` refuses it
        raise InputError(no_states)
    return step_series(compute(update(None, table, options=options)))


#: what a step file that cannot be read (yet) raises: reported once, retried when it changes
_UNREAD = (RlvitalsError, ValueError, pl.exceptions.PolarsError)


def _step_frame_of(item: tuple[int, Path, RolloutSettings]) -> pl.DataFrame:
    """One step file's per-step series, the step being the file's (what a worker runs for a watch)."""
    step, path, settings = item
    table = settings.read(path).table
    return step_frame(table.with_columns(pl.lit(step, dtype=pl.Int64).alias("step")), settings)


def _step_file_rollouts(path: Path, step: int, settings: RolloutSettings) -> RolloutSet:
    """A step file's rollouts, every row at the file's step (as :func:`_step_frame_of` reads it)."""
    rs = settings.read(path)
    return replace(rs, table=rs.table.with_columns(pl.lit(step, dtype=pl.Int64).alias("step")))


def _step_rollouts(table: pl.DataFrame, step: int) -> RolloutSet:
    """The rows of one step of a rollout table read whole."""
    return RolloutSet(table.filter(pl.col("step") == step), SkipLog(), "table")


def _unread(path: Path, exc: Exception) -> Words:
    """What watch says of rollouts it could not read (it retries when they change)."""
    why_zh = exc.text("zh") if isinstance(exc, RlvitalsError) else str(exc)
    return Words(f"{path}: could not read these rollouts ({exc}); will retry when it changes",
                 f"{path}：读不出这些 rollout（{why_zh}）；它们变化后会再试")


def _signature(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


class RolloutFollow:
    """Follows a folder of per-step rollout dumps (or a rollout table, read whole when it changes),
    read and analysed with ``settings``; ``poll()`` reads new or changed step files.

    ``messages`` collects what the user should read (a file that could not be read); the
    watcher prints and clears them. ``progress(phase, done, total)`` (a :data:`rlvitals.rollout.Progress`,
    such as the CLI's progress bar) hears how far a poll got: ``("reading", files read, of how many)``
    over the step files a poll reads (a first poll of a large folder reads them all), and the reader's
    own phases for a table read whole.
    """

    def __init__(self, folder: Path, settings: RolloutSettings | None = None,
                 progress: Progress | None = None) -> None:
        self.folder = folder
        self.settings = settings or RolloutSettings()
        self.progress = progress
        self.messages: list[str] = []
        self.frames: dict[int, pl.DataFrame] = {}
        self._seen: dict[str, tuple[int, int, int]] = {}
        self._reported: set[str] = set()
        self._waiting = False
        self._whole: tuple[tuple[str, int, int, int], ...] | None = None  # a table read whole, as last read
        #: rlvitals probe's results beside the rollouts (per-step metrics like the dumps'), and their file's signature
        self.probed: ProbeResults | None = None
        self._probed_sig: tuple[int, int, int] | None = None
        #: with ``track_new`` (``watch --probe-every``), each step read for the first time, with what reads its
        #: rollouts again (called later, in the probing thread), until :meth:`take_new` hands them over
        self.track_new = False
        self._new: list[tuple[int, Callable[[], RolloutSet]]] = []

    def _step_files(self) -> list[tuple[int, Path]]:
        base = self.folder / "completions" if (self.folder / "completions").is_dir() else self.folder
        try:
            names = os.listdir(base)
        except OSError:
            if not self._waiting:
                self.messages.append(Words(f"{self.folder}: no such rollout folder yet; waiting for it to appear",
                                           f"{self.folder}：还没有这个 rollout 文件夹；等它出现"))
                self._waiting = True
            return []
        found = []
        for name in names:
            m = _STEP_FILE.match(name)
            if m is not None:
                found.append((int(m.group(1) or m.group(2)), base / name))
        return sorted(found)

    def poll(self) -> bool:
        """Read the step files that are new or changed (or the table, when it changed) and the probe results
        beside them when they changed; whether any step's metrics changed."""
        probed = self._poll_probes()
        return self._poll_rollouts() or probed

    def _poll_probes(self) -> bool:
        path = (self.folder if self.folder.is_dir() else self.folder.parent) / PROBES_FILE
        sig = _signature(path)
        if sig is None or sig == self._probed_sig:
            return False
        self._probed_sig = sig
        try:
            self.probed = read_probe_results(path)
        except RlvitalsError as exc:
            self.messages.append(_unread(path, exc))
            return False
        self.messages.extend(self.probed.skips.reasons)
        return True

    def _poll_rollouts(self) -> bool:
        if self.folder.is_file() or (not self.folder.exists() and holds_tables(self.folder)):  # <db>#<run>
            return self._poll_whole()
        files = self._step_files()
        if not files and ((self.settings.columns is not None and self._has_tables()) or holds_tables(self.folder)):
            return self._poll_whole()  # a table, or the tables a tracker's run logged (read whole when it changed)
        todo = []
        for step, path in files:
            sig = _signature(path)
            if sig is None or self._seen.get(path.name) == sig or sig[0] == 0:
                continue
            self._seen[path.name] = sig
            todo.append((step, path))
        if self.settings.engine == "ray" and len(todo) > 1:  # a backlog of step files: on the cluster's workers
            return self._read_on_ray(todo)
        changed = False
        for done, (step, path) in enumerate(todo):
            if self.progress is not None:
                self.progress("reading", done, len(todo))
            changed |= self._read(step, path)
        if self.progress is not None and todo:
            self.progress("reading", len(todo), len(todo))
        return changed

    def _read_on_ray(self, todo: list[tuple[int, Path]]) -> bool:
        """The step files of ``todo`` read and analysed in Ray tasks, each as :meth:`_read` does it here."""
        if self.progress is not None:
            self.progress("reading", 0, len(todo))
        got = run_each(_step_frame_of, [(step, path, self.settings) for step, path in todo], self.settings.address)
        changed = False
        for (step, path), frame in zip(todo, got, strict=True):
            changed |= self._took(step, path, frame)
        if self.progress is not None:
            self.progress("reading", len(todo), len(todo))
        return changed

    def _has_tables(self) -> bool:
        try:
            return any(name.endswith(_TABLES) and name != PROBES_FILE for name in os.listdir(self.folder))
        except OSError:
            return False

    def _poll_whole(self) -> bool:
        """Read the whole table again when any of its files changed (a file, or a folder of tables)."""
        try:
            sig = signature(split_root(self.folder)[0])  # a run of a Trackio database changes with the database
        except OSError:
            return False
        if sig == self._whole or not any(size for _, size, _, _ in sig):
            return False
        self._whole = sig
        try:
            table = self.settings.read(self.folder, self.progress).table
            frame = step_frame(table, self.settings)
        except (RlvitalsError, ValueError, pl.exceptions.PolarsError) as exc:
            message = _unread(self.folder, exc)
            if message not in self._reported:  # once, however often a growing table is retried
                self._reported.add(message)
                self.messages.append(message)
            return False
        self._reported.clear()
        frames = {int(step): frame.filter(pl.col("step") == step) for step in frame["step"].unique().sort()}
        if self.track_new:
            self._new += [(step, partial(_step_rollouts, table, step)) for step in frames if step not in self.frames]
        self.frames = frames
        return True

    def _read(self, step: int, path: Path) -> bool:
        try:
            frame: pl.DataFrame | Exception = _step_frame_of((step, path, self.settings))
        except _UNREAD as exc:
            frame = exc
        return self._took(step, path, frame)

    def _took(self, step: int, path: Path, frame: pl.DataFrame | Exception) -> bool:
        if isinstance(frame, Exception):
            if not isinstance(frame, _UNREAD):
                raise frame
            if path.name not in self._reported:  # once per file; it is retried when it changes
                self._reported.add(path.name)
                self.messages.append(_unread(path, frame))
            return False
        self._reported.discard(path.name)
        if self.track_new and step not in self.frames:
            self._new.append((step, partial(_step_file_rollouts, path, step, self.settings)))
        self.frames[step] = frame
        return True

    def take_new(self) -> list[tuple[int, Callable[[], RolloutSet]]]:
        """The steps read for the first time since the last call (with ``track_new``), each with what reads its
        rollouts: the step file read again, or the table's rows of that step."""
        new, self._new = self._new, []
        return new

    def derived_keys(self) -> list[str]:
        """The series the dumps read so far give, in the order first seen."""
        keys: dict[str, None] = {}
        for step in sorted(self.frames):
            keys.update(dict.fromkeys(c for c in self.frames[step].columns if c != "step"))
        if self.probed is not None:
            keys.update(dict.fromkeys(c for c in self.probed.frame.columns if c != "step"))
        return list(keys)

    def join(self, run: Run) -> Run:
        """``run`` with every step's rollout metrics read so far (and the probe results beside them)."""
        frames = [self.frames[s] for s in sorted(self.frames)]
        if self.probed is not None:
            whole = pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame(schema={"step": pl.Int64})
            frames = [with_probe_results(whole, self.probed)]
        return join_series(run, frames, f"rollouts in {self.folder}")
