"""Rollouts read and folded shard by shard: memory bounded by the largest shard, the result of one read.

A shard is one file of a rollout input: a veRL ``<step>.jsonl``, a TRL ``completions_<step>.parquet``, a
generic JSONL/Parquet/CSV file. Each is read by the reader a whole read uses (:func:`.readers.read_located`),
folded into the families' mergeable states (per step and over the whole table, :mod:`.state`) and let go;
the driver merges the states, the skips and the notes (:mod:`.tally`). Where the shards run — one after
another here, or on the workers of a Ray cluster (:mod:`.ray_engine`) — changes no value.

What one shard cannot know is guessed from the shard and checked against the whole input:

* whether the scores of the whole input lie in [-1, 1] (correctness is then taken from the score);
* the largest group, for ``ks="all"``.

A shard that guessed wrong is folded again with the whole input's answer. Shards that share a step (a step
written into two files) or carry different columns cannot be folded apart; they are read as one table,
the way a whole read does, and a note says so.

>>> import tempfile
>>> from .writers import write_verl_dump
>>> d = tempfile.mkdtemp()
>>> for step in (1, 2):
...     _ = write_verl_dump([{"prompt": "q", "response": r, "score": float(r == "4")} for r in "45"], d, step)
>>> from .readers import locate
>>> found = locate(d)
>>> [Path(f).name for job in jobs(found, RolloutSettings()) for f in job.files]
['1.jsonl', '2.jsonl']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import polars as pl

from ..ingest.record import SkipLog
from . import groups
from .options import RolloutOptions, RolloutSettings
from .readers import Located, Progress, RolloutSet, ShardRead, read_located
from .schema import STEP
from .state import RolloutState, fold, merge, overall_chunk, prepare, table_options
from .tally import Tally, binary_scores, combined_scores, merged

__all__ = ["Engine", "Folded", "Job", "Sharded", "ShardedRollouts", "Unshardable", "fold_job", "jobs", "local",
           "run_jobs", "table_at"]


@dataclass(frozen=True)
class Job:
    """One shard to fold: its files, its place in the input, the settings, and what the driver decided for
    it (``options`` None: the shard's own, from its largest group; ``binary`` None: from its own scores)."""

    found: Located
    files: tuple[str, ...]
    index: int
    settings: RolloutSettings
    options: RolloutOptions | None = None
    binary: bool | None = None
    #: rows ``(offset, length)`` of the one Parquet file a slice shard reads (None: the whole files)
    rows: tuple[int, int] | None = None


@dataclass(frozen=True)
class Folded:
    """A shard folded: the families' states over its steps (``state``) and over its table as one step
    (``whole``), and what the driver checks against the other shards."""

    job: Job
    rows: int
    steps: frozenset[int]
    columns: frozenset[str]
    largest: int
    lacking: int
    options: RolloutOptions
    #: the score decision this shard's correctness rests on (None: it rests on none)
    binary: bool | None
    skips: SkipLog
    said: list[str]
    format: str
    state: RolloutState | None
    whole: RolloutState | None

    @property
    def correct(self) -> tuple[bool, int, int, float, float] | None:
        """The data of the shard's score-range tally (:func:`.tally.correct_tally`)."""
        return _correct_data(self.said)


def _correct_data(said: Sequence[str]) -> tuple[bool, int, int, float, float] | None:
    return next((n.data for n in said if isinstance(n, Tally) and n.key[0] == "correct"), None)


#: a generic Parquet table longer than this is read in slices of about as many rows, cut between steps
SLICE_ROWS = 1_000_000


def jobs(found: Located, settings: RolloutSettings, slice_rows: int | None = None) -> list[Job]:
    """One job per file of ``found``, in read order; a generic Parquet file of more than ``slice_rows``
    (default :data:`SLICE_ROWS`) rows is cut into slices of whole steps (by its step column) of about
    ``slice_rows`` rows each."""
    slice_rows = SLICE_ROWS if slice_rows is None else slice_rows
    out: list[Job] = []
    for f in found.files:
        slices = _slices(f, settings, slice_rows) if found.kind == "generic" and f.suffix == ".parquet" else None
        whole: list[tuple[int, int] | None] = [None]
        for rows in slices or whole:
            out.append(Job(found, (str(f),), len(out), settings, rows=rows))
    return out


def _slices(path: Path, settings: RolloutSettings, slice_rows: int) -> list[tuple[int, int]] | None:
    """Row ranges of whole steps of about ``slice_rows`` rows, or None (one shard: a small file, no step
    column, or one the reader will refuse: its error is the whole read's)."""
    step = settings.columns.step if settings.columns is not None and settings.columns.step else STEP
    try:
        if pl.scan_parquet(path).select(pl.len()).collect().item() <= slice_rows:
            return None
        steps = pl.read_parquet(path, columns=[step]).get_column(step)
    except (Exception, pl.exceptions.PanicException):  # polars raises several types, or panics
        return None
    starts = np.flatnonzero(steps.ne_missing(steps.shift(1)).fill_null(True).to_numpy())  # where a step starts
    return _runs(starts.tolist(), steps.len(), slice_rows)


def _runs(starts: Sequence[int], total: int, rows: int) -> list[tuple[int, int]]:
    """``(offset, length)`` of runs of whole steps of about ``rows`` rows, given the rows where steps start."""
    cuts, last = [0], 0
    for start in starts:
        if start - last >= rows:
            cuts.append(start)
            last = start
    cuts.append(total)
    return [(a, b - a) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]


def _read(job: Job) -> RolloutSet:
    s = job.settings
    return read_located(job.found, [Path(f) for f in job.files], columns=s.columns, group_size=s.group_size,
                        reward_weights=s.reward_weights, shard=ShardRead(job.binary, job.rows))


def fold_job(job: Job) -> Folded:
    """Read ``job``'s files and fold them (what a worker does)."""
    rs = _read(job)
    df = rs.table
    options = job.options or table_options(job.settings, df)
    correct = _correct_data(rs.said)
    binary = None
    if correct is not None and correct[1] and (not correct[0] or correct[2]):  # the decision made a value
        binary = binary_scores(correct) if job.binary is None else job.binary
    if df.height == 0:
        return Folded(job, 0, frozenset(), frozenset(), 0, 0, options, binary, rs.skips, rs.said, rs.format,
                      None, None)
    steps = frozenset(int(s) for s in df.get_column(STEP).unique().to_list())
    largest = int(df.group_by(STEP, "group").len().get_column("len").max())  # type: ignore[arg-type]
    lacking = df.height - groups.with_outcome(df).height if _has_outcome_columns(df) else df.height
    state, whole = _fold_pieces(df, options)
    return Folded(job, df.height, steps, frozenset(df.columns), largest, lacking, options, binary, rs.skips,
                  rs.said, rs.format, state, whole)


#: a shard's table is folded a run of whole steps at a time, about this many rows: the families' working
#: memory (a diversity family's words, say) is bounded by a piece, not by the file
PIECE_ROWS = 65_536


def _fold_pieces(df: pl.DataFrame, options: RolloutOptions) -> tuple[RolloutState, RolloutState]:
    """The states of ``df`` per step and over the whole table, folded piece by piece and merged (exact: the
    pieces hold whole steps, so whole groups); the whole table at once where a family could be computed
    in some pieces and not in others (what it can say depends on the values)."""
    overall = replace(options, embed=False)
    parts = [(fold(p, options), fold(overall_chunk(p), overall)) for p in _pieces(df, PIECE_ROWS)]
    if len({(frozenset(s.skipped), frozenset(w.skipped)) for s, w in parts}) > 1:
        return fold(df, options), fold(overall_chunk(df), overall)
    state, whole = parts[0]
    for s, w in parts[1:]:
        state, whole = merge(state, s), merge(whole, w)
    return state, whole


def _pieces(df: pl.DataFrame, rows: int) -> list[pl.DataFrame]:
    """``df`` (sorted by step) as runs of whole steps of about ``rows`` rows (a larger step is a piece alone)."""
    if df.height <= rows:
        return [df]
    starts = (np.flatnonzero(np.diff(df.get_column(STEP).to_numpy())) + 1).tolist()
    return [df.slice(offset, length) for offset, length in _runs(starts, df.height, rows)]


def _has_outcome_columns(df: pl.DataFrame) -> bool:
    return "score" in df.columns or "correct" in df.columns


def local(todo: Sequence[Job], done: Callable[[Folded], None]) -> None:
    """The local engine: the shards one after another, in this process."""
    for job in todo:
        done(fold_job(job))


#: an engine folds every job and hands each result to ``done`` as it arrives, in any order
Engine = Callable[[Sequence[Job], Callable[[Folded], None]], None]


@dataclass(frozen=True)
class Sharded:
    """The shards of an input folded and merged: the states, the counts the analysis reports, the
    skips and notes as one read would give them, and the shards' jobs (to read a step again)."""

    found: Located
    state: RolloutState
    whole: RolloutState
    rows: int
    lacking: int
    columns: frozenset[str]
    skips: SkipLog
    notes: list[str]
    format: str
    by_step: dict[int, Job]


class Unshardable(Exception):
    """The shards cannot be folded apart (the reason is the message): the input is read as one table."""


def run_jobs(found: Located, settings: RolloutSettings, engine: Engine = local,
             progress: Progress | None = None) -> Sharded:
    """Fold every shard of ``found`` with ``engine``, fold again the shards that guessed wrong, and merge.

    Raises :class:`Unshardable` when shards share a step or differ in their columns (a correctness column
    in some files only among them)."""
    planned = jobs(found, settings)
    files = len(planned)
    results: dict[int, Folded] = {}

    def done(result: Folded) -> None:
        results[result.job.index] = result
        if progress is not None:
            progress("reading", len(results), files)

    if progress is not None:
        progress("reading", 0, files)
    engine(planned, done)
    again = _second_pass(list(results.values()), settings)
    if again:
        engine(again, lambda r: results.__setitem__(r.job.index, r))
    final = [results[i] for i in sorted(results)]
    _check_apart([r for r in final if r.rows])
    return _merged(found, final)


def _second_pass(results: Sequence[Folded], settings: RolloutSettings) -> list[Job]:
    """The jobs to fold again with the whole input's answers, after checking the shards agree."""
    full = [r for r in results if r.rows]
    options = settings.options_for(max((r.largest for r in full), default=0))
    datas = [r.correct for r in results if r.correct is not None]
    binary = binary_scores(combined_scores(datas)) if datas else None
    again = []
    for r in full:
        wrong = r.binary is not None and binary is not None and r.binary != binary
        if r.options != options or wrong:  # the whole input's answer changes nothing a shard did not decide
            again.append(replace(r.job, options=options, binary=binary))
    return again


def _check_apart(full: Sequence[Folded]) -> None:
    seen: dict[int, str] = {}
    for r in full:
        for step in r.steps:
            if step in seen:
                raise Unshardable(f"step {step} is in {seen[step]} and {r.job.files[0]}")
            seen[step] = r.job.files[0]
    columns = {r.columns for r in full}
    if len(columns) > 1:
        a, b = sorted(columns, key=sorted)[:2]
        raise Unshardable(f"the files differ in their columns ({sorted(a ^ b)} in some only)")
    if len({r.correct[0] for r in full if r.correct is not None and r.correct[1]}) > 1:
        raise Unshardable("some files give a correctness column and some do not")


def _merged(found: Located, results: Sequence[Folded]) -> Sharded:
    full = [r for r in results if r.rows]
    skips = SkipLog()
    for r in results:
        skips.merge(r.skips)
    state = whole = None
    for r in full:
        assert r.state is not None and r.whole is not None
        state = r.state if state is None else merge(state, r.state)
        whole = r.whole if whole is None else merge(whole, r.whole)
    notes = merged(r.said for r in results)
    by_step = {step: r.job for r in full for step in r.steps}
    empty = RolloutState(results[0].options) if results else RolloutState()
    return Sharded(found, state or empty, whole or empty, sum(r.rows for r in full), sum(r.lacking for r in full),
                   frozenset().union(*(r.columns for r in full)), skips, notes,
                   results[0].format if results else found.kind, by_step)


def table_at(sharded: Sharded, steps: Iterable[int]) -> pl.DataFrame:
    """The rollout table at ``steps`` (as the families read it), read again from the shards holding them."""
    wanted = sorted(set(steps) & set(sharded.by_step))
    todo = {id(job): job for job in (sharded.by_step[s] for s in wanted)}
    frames = []
    for job in todo.values():
        df = _read(job).table
        options = job.options or table_options(job.settings, df)
        frames.append(prepare(df, options.max_response_length).filter(pl.col(STEP).is_in(wanted)))
    return pl.concat(frames, how="diagonal_relaxed").sort(STEP, maintain_order=True) if frames else pl.DataFrame()


class ShardedRollouts(RolloutSet):
    """The rollouts of an input read shard by shard: skips, format, files and notes as a whole read gives
    them; the table is read again from the shards when first asked for (all of it: memory then holds the
    whole table; :func:`table_at` reads some steps only)."""

    def __init__(self, sharded: Sharded) -> None:
        self._sharded = sharded
        self._table: pl.DataFrame | None = None
        super().__init__(None, sharded.skips, sharded.format,  # type: ignore[arg-type]  # read on first use
                         [str(f) for f in sharded.found.files], sharded.notes)

    @property
    def table(self) -> pl.DataFrame:
        if self._table is None:
            self._table = table_at(self._sharded, self._sharded.by_step)
        return self._table

    @table.setter
    def table(self, value: pl.DataFrame | None) -> None:
        self._table = value

    def __repr__(self) -> str:
        return (f"ShardedRollouts(format={self.format!r}, files={len(self.files)}, rows={self._sharded.rows}, "
                f"skips={self.skips.count})")
