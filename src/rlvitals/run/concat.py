"""The logs of one run's launches read as one Run, in step order.

A run that was stopped and resumed from a checkpoint often leaves one log per launch: veRL's file
logger opens ``$VERL_FILE_LOGGER_PATH`` with mode ``"wb"``, so a launch given a file of its own keeps
its steps, and the next launch (resumed from the last checkpoint) logs again the steps after that
checkpoint. :func:`load_launches` reads such files as one run: the launches in the order of their
first step (launches that start at the same step in the order given), and where two launches logged
the same step, each value the later one logged replaces the earlier one's (a key only the earlier
launch logged at that step keeps its value: veRL logs the validation of a resumed checkpoint at the
checkpoint's own step, a step whose training the earlier launch logged). How many steps of a launch a
later launch logged again is said in the Run's notes, never silently. A tracker's wall clock (epoch
seconds) goes on across launches: a step logged again takes the later launch's time, and the time
between two launches stays on the clock.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path

import numpy as np

from ..errors import EmptyInputError, InputError
from ..ingest import Reader, SourceMeta
from ..ingest.record import Record, SkipLog
from ..words import Words, both
from .builder import RunBuilder
from .load import PROGRESS_EVERY, sources
from .run import Run

__all__ = ["JoinNote", "load_launches"]


@dataclass(frozen=True)
class JoinNote:
    """A note about how the launches were joined, in English (the Run's notes hold it) and Chinese."""

    en: str
    zh: str

    def text(self, lang: str = "en") -> str:
        return self.zh if lang == "zh" else self.en


@dataclass
class _Launch:
    path: Path
    root: Path
    reader: Reader
    meta: SourceMeta
    records: Iterator[Record]
    #: the records read to find its first step
    head: list[Record] = field(default_factory=list)
    first: int | None = None
    #: the steps of the records the run took from this launch
    steps: array[int] = field(default_factory=lambda: array("q"))


def load_launches(paths: Sequence[str | Path], fmt: str | None = None,
                  progress: Callable[[Path, int], None] | None = None,
                  tell: Callable[[JoinNote], None] | None = None, *, algorithm: str | None = None) -> Run:
    """One Run from the logs of one run's launches (one log each), in step order; a later launch's
    values win at the steps it logged again, and the Run's notes count those steps. ``progress`` is
    :func:`~rlvitals.run.load.load`'s; ``tell(note)`` is called with each :class:`JoinNote` about the
    joining (the steps logged again, a launch without metrics, an earlier launch's crash), whose
    English text the Run's notes hold too. ``algorithm``: :func:`~rlvitals.run.load.load`'s.

    Example:
        >>> import tempfile, json, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> for name, steps in (("a.jsonl", range(1, 6)), ("b.jsonl", range(4, 9))):
        ...     _ = (d / name).write_text("".join(json.dumps({"step": s, "data": {"actor/entropy": s / 10}})
        ...                                        + "\\n" for s in steps))
        >>> run = load_launches([d / "b.jsonl", d / "a.jsonl"])
        >>> run.frame["step"].to_list(), [n[:13] for n in run.notes if "logged again" in n]
        ([1, 2, 3, 4, 5, 6, 7, 8], ['2 steps (4–5)'])
    """
    if not paths:
        raise InputError(Words("no log given: pass the logs of the run's launches, one file per launch",
                               "没有给出日志：请传入这次运行各次启动的日志，每次启动一个文件"))
    skipped = SkipLog()
    launches = [_open(Path(p), fmt, skipped) for p in paths]
    _same_framework(launches)
    order = sorted(launches, key=lambda la: (la.first is None, la.first if la.first is not None else 0))
    meta = SourceMeta(format="+".join(dict.fromkeys(la.reader.format for la in order)),
                      files=[f for la in order for f in la.meta.files], algorithm=algorithm)
    builder = RunBuilder(meta, skipped)
    for launch in order:
        _feed(builder, launch, progress)
    fed = [la for la in order if len(la.steps)]
    if builder.is_empty:
        given = ", ".join(str(la.root) for la in order)
        raise EmptyInputError(Words(f"{given}: none of these logs holds metrics", f"{given}：这些日志里都没有指标"))
    joined = _merge_meta(meta, order, fed) + _overlaps(fed)
    joined += [JoinNote(f"{la.root} holds no metrics; the run was read from the other logs",
                        f"{la.root} 里没有指标；这个 run 由其余的日志读出") for la in order
               if not len(la.steps) and la.first is None]
    meta.notes.extend(Words(note.en, note.zh) for note in joined)
    if tell is not None:
        for note in joined:
            tell(note)
    return builder.finish(" + ".join(str(la.root) for la in order), final=True)


def _open(path: Path, fmt: str | None, skipped: SkipLog) -> _Launch:
    found, _ = sources(path, fmt)
    if len(found) != 1:
        names = ", ".join(str(root) for _, root in found[:3]) + (", …" if len(found) > 3 else "")
        raise InputError(Words(f"{path}: it holds {len(found)} runs ({names}), and a launch of one run is one log; "
                               "pass each launch's log itself",
                               f"{path}：其中有 {len(found)} 个运行（{names}），而一次启动只对应一份日志；"
                               "请分别传入每次启动的日志本身"))
    reader, root = found[0]
    meta = SourceMeta(format=reader.format, files=[str(root)])
    launch = _Launch(path, root, reader, meta, iter(reader.read(root, meta, skipped)))
    for record in launch.records:  # the first step decides the launch's place
        launch.head.append(record)
        if record.kind != "summary":
            launch.first = record.step
            break
    return launch


def _same_framework(launches: list[_Launch]) -> None:
    said = {la.meta.framework: la.root for la in launches if la.meta.framework}
    if len(said) > 1:
        which = ", ".join(f"{root} is a {fw} log" for fw, root in said.items())
        which_zh = "，".join(f"{root} 是 {fw} 日志" for fw, root in said.items())
        raise InputError(Words(f"these logs are not the launches of one run: {which}; give the logs of one run "
                               "(or leave out --one-run to compare them)",
                               f"这些日志不是同一次运行的各次启动：{which_zh}；请给出同一次运行的日志"
                               "（要比较它们就去掉 --one-run）"))


def _feed(builder: RunBuilder, launch: _Launch, progress: Callable[[Path, int], None] | None) -> None:
    steps = launch.steps
    for count, record in enumerate(chain(launch.head, launch.records), 1):
        before = builder.records
        builder.add(record)
        if builder.records > before:  # taken, not skipped nor a summary
            steps.append(record.step)
        if progress is not None and not count % PROGRESS_EVERY:
            progress(launch.root, count)


def _merge_meta(meta: SourceMeta, order: list[_Launch], fed: list[_Launch]) -> list[JoinNote]:
    """What the launches' readers learned, as one source: the config of the last launch wins a key,
    the crash is the last launch's; an earlier launch's crash is returned as a note (the run went on)."""
    last = fed[-1] if fed else order[-1]
    crashes = []
    for launch in order:
        meta.config.update(launch.meta.config)
        meta.notes.extend(_under(launch.root, note) for note in launch.meta.notes)
        meta.bytes_read += launch.meta.bytes_read
        meta.framework = meta.framework or launch.meta.framework
        meta.estimated_steps = meta.estimated_steps or launch.meta.estimated_steps
        crash = launch.meta.crash
        if crash is not None and launch is not last:
            crashes.append(JoinNote(f"{launch.root} ended in {crash.exception}: {crash.message} ({crash.where}); "
                                    "a later launch went on",
                                    f"{launch.root} 以 {crash.exception}: {crash.message}（{crash.where}）结束；"
                                    "之后的一次启动接着训练"))
    meta.crash, meta.crash_scanned, meta.reached = last.meta.crash, last.meta.crash_scanned, last.meta.reached
    return crashes + _one_clock(meta, fed)


def _under(root: Path, note: str) -> str:
    """A launch's note, named by its log (in each language the note has)."""
    return both(lambda s: f"{root}: {s}", note)


def _one_clock(meta: SourceMeta, fed: list[_Launch]) -> list[JoinNote]:
    """The launches' wall clocks as the run's one clock: epoch seconds go on across launches (the time
    between two launches is real time, and shows), from the earliest launch's start. Seconds since each
    launch started (W&B's ``_runtime`` alone) cannot be joined: the run then has no clock, and a note
    says why."""
    timed = [la for la in fed if la.meta.clock is not None]
    if not timed:
        return []
    elapsed = [la for la in timed if not la.meta.clock_epoch]
    if elapsed:
        names = ", ".join(str(la.root) for la in elapsed)
        return [JoinNote(f"{names}: the wall clock ({elapsed[0].meta.clock}) counts from each launch's own start, "
                         "so the launches' clocks were not joined",
                         f"{names} 的时间只从各自启动算起（{elapsed[0].meta.clock}），各次启动的墙钟时间没有接起来")]
    meta.clock = " + ".join(dict.fromkeys(str(la.meta.clock) for la in timed))
    starts = [la.meta.started for la in timed if la.meta.started is not None]
    meta.started = min(starts) if starts else None
    return []


def _overlaps(fed: list[_Launch]) -> list[JoinNote]:
    """One note per launch whose steps a later launch logged again: how many, which, and by whom."""
    notes = []
    unique = [np.unique(np.frombuffer(la.steps, dtype=np.int64)) for la in fed]
    for i, launch in enumerate(fed):
        later = [(fed[j], np.intersect1d(unique[i], unique[j], assume_unique=True)) for j in range(i + 1, len(fed))]
        later = [(la, common) for la, common in later if len(common)]
        if not later:
            continue
        again = np.unique(np.concatenate([common for _, common in later]))
        by = ", ".join(str(la.root) for la, _ in later)
        notes.append(JoinNote(
            f"{len(again)} step{'s' if len(again) > 1 else ''} ({spans(again)}) that {launch.root} logged were logged "
            f"again by {by} (a launch resumed from an earlier checkpoint): at those steps the later launch's values "
            "were kept",
            f"{launch.root} 记录过的 {len(again)} 个 step（{spans(again)}）又被 {by} 记录了一次（从更早的 checkpoint "
            "恢复的一次启动）：这些 step 取后一次启动的值"))
    return notes


def spans(steps: np.ndarray, most: int = 4) -> str:
    """Sorted steps as runs of consecutive steps: ``4–5``, ``100, 102–110``; after ``most`` runs, ``…``.

    >>> spans(np.array([100, 102, 103, 104]))
    '100, 102–104'
    """
    if not len(steps):
        return ""
    breaks = np.flatnonzero(np.diff(steps) != 1)
    starts = np.concatenate([[0], breaks + 1])
    ends = np.concatenate([breaks, [len(steps) - 1]])
    parts = [f"{steps[s]}" if s == e else f"{steps[s]}–{steps[e]}" for s, e in zip(starts, ends, strict=True)]
    return ", ".join(parts[:most]) + (", …" if len(parts) > most else "")
