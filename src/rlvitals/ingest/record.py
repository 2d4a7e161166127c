"""What every reader yields: records of (step, raw key -> value), skips, and source metadata."""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import orjson

from ..words import Words, both

if TYPE_CHECKING:
    from ._crash import CrashScanner

Value = float | str
RecordKind = Literal["metrics", "summary"]
#: what ended a run that died: out of memory (GPU, TPU HBM, host), a signal (Ctrl-C, SIGHUP, SIGTERM),
#: a worker process that died, a failed import (the environment), or any other exception
CrashKind = Literal["oom", "signal", "worker", "import", "error"]

#: how many skip reasons are kept verbatim; the rest are only counted
MAX_SKIP_REASONS = 20


@dataclass(slots=True)
class Record:
    """One logged row: the metrics a trainer wrote at one step.

    ``values`` maps the key exactly as written in the log to a float (NaN for
    ``nan``/``null``) or, rarely, a string. ``where`` is ``file:line`` (or
    ``file#n`` for binary formats) so that any later complaint can point at it.
    A ``summary`` record (TRL's end-of-training totals) has no place on the step axis.
    ``wall`` is when the tracker logged the row, as its own clock says (see
    :attr:`SourceMeta.clock`): not a metric, it never joins ``values``.
    """

    step: int
    values: dict[str, Value]
    where: str
    kind: RecordKind = "metrics"
    wall: float | None = None


@dataclass(frozen=True)
class Crash:
    """How a log ends when the run died: the exception that ended it.

    ``where`` is the ``file:line`` of the exception line in the log, ``origin`` the innermost frame
    of its traceback (``verl/workers/actor/dp_actor.py:483 in update_policy``), ``causes`` the other
    exceptions printed with it (``ImportError: ... undefined symbol``), earliest first. ``last_step``
    is the last step the log shows finished before it, by a record or a progress bar (None: it died
    before any); ``after_end`` says the training had printed its end (TRL's summary, veRL's final
    validation) before it died.
    """

    exception: str
    message: str
    where: str
    kind: CrashKind
    origin: str | None = None
    causes: tuple[str, ...] = ()
    last_step: int | None = None
    after_end: bool = False

    @property
    def oom(self) -> bool:
        return self.kind == "oom"

    def to_json(self) -> dict[str, object]:
        return {"exception": self.exception, "message": self.message, "where": self.where, "kind": self.kind,
                "oom": self.oom, "origin": self.origin, "causes": list(self.causes), "last_step": self.last_step,
                "after_end": self.after_end}


@dataclass
class SkipLog:
    """Counts records that could not be read, keeping the first few reasons verbatim."""

    count: int = 0
    reasons: list[str] = field(default_factory=list)

    def skip(self, where: str, reason: str) -> None:
        self.count += 1
        if len(self.reasons) < MAX_SKIP_REASONS:
            self.reasons.append(both(lambda r: f"{where}: {r}", reason))  # a reason in Words keeps its Chinese

    def merge(self, other: SkipLog) -> None:
        self.count += other.count
        room = MAX_SKIP_REASONS - len(self.reasons)
        self.reasons.extend(other.reasons[: max(room, 0)])


#: the step axis is 64-bit: a step outside it cannot be placed (a corrupt line, a hash logged as a step)
STEP_RANGE = (-(1 << 63), (1 << 63) - 1)


#: control characters (C0 but tab, DEL, C1): in a key they could move a terminal's cursor, clear it or set
#: its title (ESC [ 2 J) when the key is printed; they are shown escaped instead
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    r"""``text`` with every control character written as its escape, so that printing it cannot drive a
    terminal.

    Example:
        >>> printable("loss\x1b[2J\x07")
        'loss\\x1b[2J\\x07'
    """
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


class RecordCheck:
    """Whether a record can join a run; the one check every record passes on its way into a Run (the
    builder and a followed log alike). Keys already seen are not checked again, so the cost per record is
    a type test per value. A key holding control characters is renamed to its :func:`printable` form."""

    def __init__(self) -> None:
        self._keys: set[str] = set()
        self._renamed: dict[str, str] = {}

    def problem(self, record: Record) -> Words | None:
        """Why ``record`` cannot join a run (the skip reason), or None.

        Example:
            >>> RecordCheck().problem(Record(2**64, {"loss": 0.1}, "run.jsonl:3"))
            'step 18446744073709551616 is outside the 64-bit step axis; the record was skipped'
        """
        step = record.step
        if type(step) is not int or not STEP_RANGE[0] <= step <= STEP_RANGE[1]:
            if type(step) is int:
                return Words(f"step {step} is outside the 64-bit step axis; the record was skipped",
                             f"步 {step} 超出了 64 位步数轴的范围；这条记录已跳过")
            return Words(f"step {step!r} is not a whole number; the record was skipped",
                         f"步 {step!r} 不是整数；这条记录已跳过")
        keys = self._keys
        for key, value in record.values.items():
            if key not in keys:
                try:
                    key.encode("utf-8")
                except UnicodeEncodeError:
                    return Words(f"the key {key!r} is not valid text (a lone surrogate); the record was skipped",
                                 f"键 {key!r} 不是有效的文本（含落单的代理码位）；这条记录已跳过")
                keys.add(key)
                if _CONTROL.search(key):
                    self._renamed[key] = printable(key)
            if type(value) is not float and not isinstance(value, str):
                try:
                    record.values[key] = float(value)
                except (TypeError, ValueError, OverflowError):
                    return Words(f"{key!r} = {str(value)[:40]!r} is not a number a float holds; "
                                 "the record was skipped",
                                 f"{key!r} = {str(value)[:40]!r} 不是 float 能表示的数；这条记录已跳过")
        if self._renamed and not self._renamed.keys().isdisjoint(record.values):
            record.values = {self._renamed.get(k, k): v for k, v in record.values.items()}
        return None

    def plain(self, keys: tuple[str, ...]) -> bool:
        """Whether every key of ``keys`` was checked already and keeps its name: a record of only these
        keys and float values needs no check (a columnar reader's fast path)."""
        return self._keys.issuperset(keys) and (not self._renamed or self._renamed.keys().isdisjoint(keys))


@dataclass
class SourceMeta:
    """What a reader learned about the source besides the metrics.

    ``framework`` is set only when the format itself says it (a veRL console log,
    a TRL trainer_state.json); otherwise the Run detects it from the keys.
    ``config`` holds flat ``dotted.key -> value`` pairs from a config dump or a
    command line the log carries. ``window`` and ``line_base`` make text readers read only a
    byte range of the file (see :func:`rlvitals.ingest.text.iter_lines`).
    """

    format: str
    files: list[str] = field(default_factory=list)
    framework: str | None = None
    #: the algorithm id the user said the run is (``--algorithm``, ``rlvitals.load(algorithm=...)``): its keys are
    #: read as that algorithm's whatever they look like; None: the Run detects it from its keys and config
    algorithm: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    bytes_read: int = 0
    #: read only the bytes ``[start, end)`` of a text file (a watcher feeding a reader the lines
    #: appended since its last poll); ``None`` reads the whole file
    window: tuple[int, int] | None = None
    #: how many lines come before the window, so ``file:line`` stays the line's number in the file
    line_base: int = 0
    #: the exception that ended the run, when the log ends in one (see :mod:`rlvitals.ingest._crash`)
    crash: Crash | None = None
    #: whether the reader looked for a crash (a console log can show one; a trainer_state.json cannot)
    crash_scanned: bool = False
    #: what the reader's crash scanner kept of the log's tracebacks and progress bars, to tell the ending of
    #: each training when the log holds several (:meth:`~rlvitals.ingest._crash.CrashScanner.account`)
    tracebacks: CrashScanner | None = None
    #: the records (numbered in the order read, summaries left out) at which the reader saw a new training
    #: begin by evidence of its own (TRL: a training dict after the summary of the training before)
    starts: list[int] = field(default_factory=list)
    #: the last step the source says the run reached when that is beyond its last record (a
    #: trainer_state.json's ``global_step``, the step of its end-of-training summary)
    reached: int | None = None
    #: the tracker's own clock the records' ``wall`` times come from (``TensorBoard wall_time``,
    #: ``W&B _timestamp``, ``MLflow timestamp``); None when the source has none
    clock: str | None = None
    #: whether those times are seconds since the Unix epoch; False for seconds since the run started
    #: (W&B's ``_runtime``, when a row has no ``_timestamp``)
    clock_epoch: bool = True
    #: the steps are the reader's estimate, which a longer reading of the same log may change (a TRL console
    #: whose buffered progress bar ran ahead of its metric dicts, before the run printed its summary)
    estimated_steps: bool = False
    #: when the run started, in seconds since the Unix epoch, when the source says it (a TensorBoard
    #: file's first event, W&B's ``_timestamp - _runtime``, MLflow's ``start_time``)
    started: float | None = None

    def take_clock(self, other: SourceMeta) -> None:
        """Take ``other``'s clock when this meta has none yet (a watcher reads a log window by window)."""
        if self.clock is None and other.clock is not None:
            self.clock, self.clock_epoch, self.started = other.clock, other.clock_epoch, other.started


#: a record as it waits to be stored: step, its numeric keys, their values as float64 bytes, its text
#: values as JSON (or None), whether it is a summary record. A record's ``wall`` time is its last
#: numeric value, under :data:`WALL_KEY`.
Packed = tuple[int, tuple[str, ...], bytes, bytes | None, bool]

#: the name a packed record keeps its ``wall`` time under: no logged key can have it (a key's control
#: characters are escaped by :class:`RecordCheck` before a record is packed)
WALL_KEY = "\x00wall"


def pack(record: Record, layouts: dict[tuple[str, ...], tuple[str, ...]] | None = None) -> Packed:
    """``record`` as the watch state stores it (one row), in a tenth of the memory of its dict;
    ``layouts`` shares one tuple among the records with the same keys.

    Example:
        >>> pack(Record(3, {"a": 1.0, "b": "x"}, "run.log:3"))[:2]
        (3, ('a',))
        >>> pack(Record(3, {"a": 1.0}, "run.log:3", wall=1.7e9))[1] == ("a", WALL_KEY)
        True
    """
    numbers: dict[str, float] = {}
    text: dict[str, str] = {}
    for key, value in record.values.items():
        if isinstance(value, str):
            text[key] = value
        else:
            numbers[key] = value
    if record.wall is not None:
        numbers[WALL_KEY] = record.wall
    names = tuple(numbers)
    if layouts is not None:
        names = layouts.setdefault(names, names)
    return (record.step, names, array("d", numbers.values()).tobytes(), orjson.dumps(text) if text else None,
            record.kind == "summary")


@dataclass(frozen=True)
class LoggedTable:
    """A table a training logged to its tracker (TRL's ``completions``, veRL's ``val/generations``): the
    key it was logged under, the step it was logged at (None when the tracker did not record one), where it
    is (``file``, ``file#row``) and its rows as the tracker kept them, a dict per row. A row's values are
    the logged ones: text, numbers, lists of chat messages."""

    key: str
    step: int | None
    where: str
    rows: tuple[dict[str, Any], ...]
    writer: str
