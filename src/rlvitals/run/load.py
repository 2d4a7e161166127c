"""Turn a path into Runs: find the reader, stream its records into a RunBuilder per run.

One training logged to several places (a trainer's ``output_dir`` with its trackers' copies, a console
beside a W&B run) is one run (:mod:`.twins`).

A folder that no folder format takes (a plain folder of logs: ``runs/exp1/train.log``, what
``rlvitals example DIR`` writes) is read as the logs in it: see :mod:`rlvitals.ingest._folder`. A console
log that holds several trainings one after the other gives a run for each: ``train.log``, ``train.log#2``,
… (:mod:`.trainings`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import EmptyInputError, InputError, UnknownFormatError
from ..ingest import Reader, SkipLog, SourceMeta, beside, find_reader, logs_in, readers, unique
from ..words import Words, in_lang

if TYPE_CHECKING:
    from .run import Run
    from .trainings import Trainings


def sources(path: Path, fmt: str | None) -> tuple[list[tuple[Reader, Path]], list[str]]:
    """Every (reader, root) under ``path``, and notes about what a plain folder held besides."""
    reader: Reader | None
    try:
        reader = find_reader(path, fmt)
    except UnknownFormatError:
        if not path.is_dir():
            raise
        reader = None
    if reader is not None and (path.is_dir() == reader.takes_dir or not path.is_dir()):
        return _once(_roots(reader, path, fmt)), []
    found = logs_in(path, readers(), fmt)
    if not found.logs:
        raise UnknownFormatError(_not_a_run(path, fmt, found.others))
    return _once([rr for r, log in found.logs for rr in _roots(r, log, fmt)]), found.notes


def _once(found: list[tuple[Reader, Path]]) -> list[tuple[Reader, Path]]:
    """Each run once, by its root's real path: a run folder reached through links as well (an experiment
    linking to another's run, ``runs/latest -> exp3``) is one run."""
    kept, out = set(unique(root for _, root in found)), []
    for reader, root in found:
        if root in kept:
            kept.discard(root)
            out.append((reader, root))
    return out


def _roots(reader: Reader, log: Path, fmt: str | None) -> list[tuple[Reader, Path]]:
    """One (reader, root) per run of ``log``: a log may hold several (a wandb/ of runs, a Trackio project),
    and a folder a folder format takes whole may hold a training console beside its own files (``train.log``
    next to ``.aim/``); a format forced with ``--format`` reads its own alone."""
    own = [(reader, root) for root in reader.runs(log)]
    if not (log.is_dir() and reader.takes_dir and fmt is None):
        return own
    return own + [(r, root) for r, path in beside(log, reader, readers()) for root in r.runs(path)]


def _not_a_run(path: Path, fmt: str | None, others: list[str]) -> Words:
    """Why a folder holding no log that can be read is not a run."""
    what = f"no {fmt} log" if fmt else "no training log rlvitals can read"
    what_zh = f"没有 {fmt} 日志" if fmt else "没有 rlvitals 能读的训练日志"
    more = len(others) > 5
    left = f" (it holds {', '.join(others[:5])}{', …' if more else ''})" if others else " (it is empty)"
    left_zh = f"（里面有 {'、'.join(others[:5])}{'……' if more else ''}）" if others else "（它是空的）"
    return Words(f"{path}: this folder is not a run rlvitals knows (W&B, MLflow, TensorBoard, a "
                 f"Trainer output_dir) and holds {what}, nor do its subfolders{left}; pass the log file itself",
                 f"{path}：这个文件夹不是 rlvitals 认识的运行（W&B、MLflow、TensorBoard、Trainer 的 output_dir），"
                 f"它和它的子文件夹里都{what_zh}{left_zh}；请直接传入日志文件")


#: how many records are read between two calls of ``load``'s ``progress``
PROGRESS_EVERY = 1 << 14


def load(path: str | Path, fmt: str | None = None,
         progress: Callable[[Path, int], None] | None = None, *, algorithm: str | None = None) -> list[Run]:
    """Read every run under ``path``: one for a log file, several for a folder of runs, and for a plain
    folder one per training log in it (and in its subfolders). ``progress(root, records)`` is called
    every :data:`PROGRESS_EVERY` records read (a progress display). ``algorithm``: the algorithm id the runs
    are (one the catalog has a signature of: ``ppo``, ``rloo``, ``grpo``, ``dpo-family`` …, as ``rlvitals
    inspect`` shows in brackets), read as that whatever their keys say; a run's keys that read otherwise get a
    note; an id the catalog does not know raises :class:`~rlvitals.errors.InputError` before anything is read.

    Example:
        >>> runs = load("trainer_state.json", algorithm="rloo")  # doctest: +SKIP
        >>> runs[0].algorithm, runs[0].algorithm_given  # doctest: +SKIP
        ('rloo', True)
    """
    path = Path(path)
    if algorithm is not None:
        from ..catalog import load_catalog
        from .detect import checked_algorithm

        checked_algorithm(algorithm, load_catalog())
    found, notes = sources(path, fmt)
    runs, empty, read = [], [], []
    for reader, root in found:
        meta, skipped = SourceMeta(format=reader.format, files=[str(root)], algorithm=algorithm), SkipLog()
        try:
            builder = _read(reader, root, meta, skipped, progress)
        except InputError as exc:
            if len(found) == 1:
                raise
            # one log of a folder that cannot be read as one (TRL's completions/ beside its trackers' logs):
            # the others are still runs, and this one is said, as an empty one is
            empty.append(Words(str(exc), exc.text("zh")))
            continue
        if builder.is_empty and meta.crash is None:
            empty.append(_no_metrics(root, reader.format, skipped.count, skipped.reasons))
            continue
        meta.notes.extend(notes)
        runs.extend(builder.finish(str(root)))  # the Run takes the columns, no copy
        read.append((root, reader.format))
    if len(runs) > 1:  # one training logged to several places is one run
        from .twins import merge  # here, as _builder's import: numpy is not imported before a fork

        runs = merge(runs)
    if path.is_dir() and len(read) > 1:  # one training's folder: its run under the folder's path
        from .training import as_one_training

        runs = as_one_training(path, runs, read)
    if not runs:
        raise EmptyInputError(empty[0] if len(empty) == 1 else Words(
            f"{path}: none of its {len(empty)} runs holds metrics; first: {empty[0]}",
            f"{path}：其中的 {len(empty)} 个运行都没有指标；第一个：{empty[0].zh}"))
    for message in empty:  # a folder of runs keeps its readable runs and says which were empty
        runs[0].notes.append(Words(f"skipped an empty run — {message}", f"跳过了一个空的运行——{message.zh}"))
    return runs


def _read(reader: Reader, root: Path, meta: SourceMeta, skipped: SkipLog,
          progress: Callable[[Path, int], None] | None) -> Trainings:
    """The records of ``root`` read into its builder(s), whole-file columns where its reader has them."""
    if reader.columns is not None and root.is_file():
        tell = _every(root, progress) if progress is not None else None
        columns = reader.columns(root, meta, skipped, progress=tell)
        if tell is not None:
            tell(len(columns))
        many = len(columns) >= GIVE_BACK_ROWS
        builder = _builder(meta, skipped, reader.trainings)  # after the read: see _builder
        builder.add_columns(columns)  # it takes the columns a segment at a time; they go as they are taken
        if many:
            _give_back()
        return builder
    builder = _builder(meta, skipped, reader.trainings)
    for count, record in enumerate(reader.read(root, meta, skipped), 1):
        builder.add(record)
        if progress is not None and not count % PROGRESS_EVERY:
            progress(root, count)
    return builder


def _builder(meta: SourceMeta, skipped: SkipLog, split: bool) -> Trainings:
    """What the records of one root go into: one builder, or for a console that may hold several trainings
    one after the other (``split``), a builder per training (:mod:`.trainings`)."""
    # imported here, not at the top: a large log's worker is forked before numpy and the catalog are imported
    from .trainings import Trainings

    return Trainings(meta, skipped, split=split)


#: from how many records a columnar read hands the memory its parse freed back to the system
GIVE_BACK_ROWS = 1 << 16


def _give_back() -> None:
    """Hand the pages the heap holds free back to the system (glibc's ``malloc_trim``): the parse of a
    long log leaves tens of MB freed inside the heap, under everything the diagnosis allocates after it.
    Elsewhere (no glibc) nothing is done."""
    import contextlib
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)


def _every(root: Path, progress: Callable[[Path, int], None]) -> Callable[[int], None]:
    """``progress`` told each multiple of :data:`PROGRESS_EVERY` that the records read have passed (a
    columnar reader tells its count between chunks of lines)."""
    told = 0

    def tell(records: int) -> None:
        nonlocal told
        while told + PROGRESS_EVERY <= records:
            told += PROGRESS_EVERY
            progress(root, told)

    return tell


def _no_metrics(root: Path, fmt: str, unreadable: int, reasons: list[str]) -> Words:
    """Why a run that was read is empty."""
    if not unreadable:
        return Words(f"{root}: read as {fmt} but it holds no metrics", f"{root}：按 {fmt} 读取，但其中没有指标")
    return Words(f"{root}: read as {fmt} but it holds no metrics; {unreadable} records were unreadable, "
                 f"first: {reasons[0]}",
                 f"{root}：按 {fmt} 读取，但其中没有指标；有 {unreadable} 条记录读不出来，"
                 f"第一条：{in_lang(reasons[0], 'zh')}")
