"""One scanner, shared by the text readers, for how a log ends when the run died.

A run that dies leaves a Python traceback at the end of its log: the driver's
(``Traceback (most recent call last):`` … ``torch.OutOfMemoryError: CUDA out of memory``),
Ray's (``ray.exceptions.RayTaskError(OutOfMemoryError): ray::WorkerDict.update_actor()`` followed by
the worker's frames, or ``Unhandled error … ray::…`` with no ``Traceback`` header), torchrun's
(``SignalException: Process 12152 got signal: 1``), often behind a Ray prefix
(``(TaskRunner pid=1)``) and followed by harmless lines (``Set the environment variable
HYDRA_FULL_ERROR=1``, XLA's allocation report, progress bars).

A crash is a traceback after which the training showed no further step. A reader feeds every line that
is not a record to :meth:`CrashScanner.feed` and tells the scanner what shows the training going on:
:meth:`~CrashScanner.progress` at each record it reads (a training or an evaluation line),
:meth:`~CrashScanner.advanced` at each frame of the training's progress bar (veRL's ``Training Progress:
3/100``, the Trainer's ``3/100 [``: a count above any drawn before is a step finished, a bar drawn again
at its count is not) and :meth:`~CrashScanner.finished` at the training's own end marker (TRL's summary,
veRL's final validation). The tracebacks before any of these were survived (a worker's logged error, a
failed tool call, a retried request): they are kept, counted, and said in a note
(:func:`survived_note`), never the crash. :meth:`~CrashScanner.crash` says how the log ends: the
tracebacks after the last sign of progress, with the last step a progress bar showed finished before
them. A warning after the end (NCCL's ``destroy_process_group``, Ray's SIGTERM to its workers after the
final validation) is not a traceback and is no crash.

A log may hold several trainings, one after the other (a second launch appended to it): which lines
belong to which is decided on its records (:mod:`rlvitals.run.trainings`), and :meth:`~CrashScanner.account`
then tells each training's ending from what the scanner kept. The rules and the evidence for them:
docs/formats/consoles.md.

Example:
    >>> s = CrashScanner("run.log")
    >>> for n, line in enumerate(["step:3 - loss:0.1", "Traceback (most recent call last):",
    ...                           '  File "verl/trainer/main_ppo.py", line 5, in main',
    ...                           "KeyboardInterrupt"], 1):
    ...     s.feed(n, line)
    >>> crash = s.crash(); crash.kind, crash.where, crash.origin
    ('signal', 'run.log:4', 'verl/trainer/main_ppo.py:5 in main')
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..words import Words
from .record import Crash, CrashKind, SourceMeta
from .text import ANSI

#: a frame of a traceback; veRL, Ray and torch print the same form
_FRAME = re.compile(r'^\s+File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>.+?)\s*$')
#: the line naming the exception: ``module.Name[(Inner)][: message]`` where Name reads as an exception
_EXCEPTION = re.compile(
    r"^(?P<type>(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Failure|Fault)|KeyboardInterrupt))"
    r"(?:\((?P<inner>[\w.]+)\))?(?::\s?(?P<message>.*))?$"
)
#: a Ray worker's prefix before its lines: ``(TaskRunner pid=1)``, ``(raylet)``
_PREFIX = re.compile(r"^\((?:[^()]*pid=\d+[^()]*|raylet|[\w.]+ pid=\d+)\)\s?")
_OOM = re.compile(r"out of memory|OutOfMemoryError|Ran out of memory in memory space|RESOURCE_EXHAUSTED"
                  r"|running low on memory|OOM[- ]?kill", re.I)
_SIGNAL_TYPES = frozenset({"KeyboardInterrupt", "SignalException", "SystemExit"})
_SIGNAL = re.compile(r"got signal|received signal|SIG(?:HUP|INT|TERM|KILL)\b")
_WORKER = re.compile(r"ActorDiedError|RayActorError|WorkerCrashedError|NodeDiedError|ChildFailedError"
                     r"|actor died|worker died", re.I)
_IMPORT = re.compile(r"^(?:ImportError|ModuleNotFoundError)$|undefined symbol|Failed to import", re.I)
#: Ray's wrappers around a worker's exception, which it prints in full after them
_WRAPPERS = frozenset({"RayTaskError", "RaySystemError"})
#: how many exceptions of one ending are kept (a multi-worker crash prints the same one many times)
MAX_KEPT = 16
#: the largest bar count or total kept (the marks are 64-bit)
_LARGEST = (1 << 63) - 1


@dataclass(frozen=True)
class _Seen:
    type: str
    message: str
    lineno: int
    origin: str | None


def _strip(line: str) -> str:
    if "\x1b" in line:
        line = ANSI.sub("", line)
    if line.startswith("("):
        m = _PREFIX.match(line)
        if m:
            line = line[m.end():]
    return line.rstrip("\r\n")


class CrashScanner:
    """Reads the lines of one log for the traceback that ends it and the ones the training survived (see
    the module docstring)."""

    def __init__(self, path: object) -> None:
        self.path = str(path)
        self.in_traceback = False
        self.frame: str | None = None  # the innermost frame in the run's own code (not torch, ray, ...)
        self.any_frame: str | None = None  # the innermost frame of all
        self.seen: list[_Seen] = []  # exceptions since the last sign of progress
        self.opened: int | None = None  # the line the tracebacks of ``seen`` began at
        self._begun = 0  # the line the traceback being read began at
        self.ended_at: int | None = None  # the line of the training's end marker, if it came
        #: the total of the training's progress bar, when the reader knows which of its bars that is
        self.total: int | None = None
        #: the groups of tracebacks progress came after, 4 numbers each: the line the group began at, the
        #: line of the progress after it, the line of the exception it is told by, which of ``told`` that is
        self.closed: array[int] = array("q")
        self.told: list[Crash] = []  # each exception closed groups are told by, once (its ``where`` empty)
        self._told_at: dict[Crash, int] = {}
        #: the progress bars drawn, 3 numbers a frame whose count changed: its line, count and total
        self.marks: array[int] = array("q")
        self.drawn: dict[int, int] = {}  # a bar's total -> the count it was last drawn at
        self.highest: dict[int, int] = {}  # a bar's total -> the highest count it was drawn at
        self.finishes: list[int] = []  # the lines of the training's end markers
        #: the first frame of a bar drawn while tracebacks were open or after the end: where a scanner that
        #: had read the lines before (and seen the bar) could have read the lines after differently
        self.blind: int | None = None

    def feed(self, lineno: int, line: str) -> None:
        """One line that is not a record (a cheap test rejects most lines)."""
        if not self.in_traceback and "Traceback" not in line and 'File "' not in line:
            return
        text = _strip(line)
        if text.startswith("Traceback (most recent call last)"):
            self.in_traceback, self.frame, self.any_frame, self._begun = True, None, None, lineno
            return
        frame = _FRAME.match(text)
        if frame:
            if not self.in_traceback:
                self.in_traceback, self._begun = True, lineno
            file = _short(frame["file"])
            self.any_frame = f"{file}:{frame['line']} in {frame['func']}"
            if not file.startswith(_PLUMBING):
                self.frame = self.any_frame
            return
        if not self.in_traceback or not text.strip():
            return
        if text[0].isspace() or set(text.strip()) <= {"^", "~", " "}:
            return  # a frame's source line or its caret marks
        m = _EXCEPTION.match(text)
        if m is None:
            if not text.startswith(("During handling", "The above exception")):
                self.in_traceback = False
            return
        if m["type"].rsplit(".", 1)[-1] in _WRAPPERS:
            return  # Ray's wrapper: the worker's frames and the real exception follow
        if self.opened is None:
            self.opened = self._begun or lineno
        if len(self.seen) >= MAX_KEPT:
            del self.seen[1]  # keep the first (often the root cause) and the latest
        self.seen.append(_Seen(m["type"], (m["message"] or "").strip(), lineno, self.frame or self.any_frame))

    def progress(self, lineno: int = 0) -> None:
        """A record came (at ``lineno``): the tracebacks before it did not end the run."""
        if self.seen:
            self._close(lineno)
        self.ended_at = None

    def stalled(self) -> bool:
        """Whether tracebacks are open and the training bar, drawn before them, has not moved since: a record
        now is no progress but output held in a buffer and written as the process exited (stdout to a file is
        block-buffered, the traceback on stderr is not)."""
        return bool(self.seen) and bool(self.highest)

    def advanced(self, lineno: int, count: int, total: int = 0) -> None:
        """The training's progress bar (of ``total`` steps) was drawn at ``count``: above every count it was
        drawn at before, a step finished (the tracebacks before it were survived); the first frame and a
        frame drawn again (tqdm redraws a bar as it closes) show none."""
        if not (0 <= count <= _LARGEST and 0 <= total <= _LARGEST):
            return  # no bar counts that far (a corrupt line): it shows nothing
        if self.drawn.get(total) != count:
            self.drawn[total] = count
            self.marks.extend((lineno, count, total))
        top = self.highest.get(total)
        if top is None or count > top:
            self.highest[total] = count
            if top is not None:
                self._close(lineno)
                self.ended_at = None
            elif self.blind is None and (self.seen or self.ended_at is not None):
                self.blind = lineno  # a scanner that had seen this bar before would have closed them here

    def finished(self, lineno: int) -> None:
        """The training printed its end (its summary, its final validation) at ``lineno``: it went on after
        the tracebacks before."""
        self._close(lineno)
        self.ended_at = lineno
        self.finishes.append(lineno)

    def _close(self, until: int) -> None:
        """The open group of tracebacks was survived: progress came at line ``until``."""
        if not self.seen:
            return
        crash, line = self._ending()
        key = replace(crash, where="")
        at = self._told_at.setdefault(key, len(self.told))
        if at == len(self.told):
            self.told.append(key)
        self.closed.extend((self.opened or line, until, line, at))
        self.seen.clear()
        self.opened, self._begun = None, 0

    def absorb(self, later: CrashScanner) -> bool:
        """Take over ``later``, a scanner of the lines after this one's (a second worker's, begun with nothing
        under way), as if this one had read them too; False, nothing taken, where it could have read them
        differently (a bar this one saw was first drawn there while tracebacks were open: :attr:`blind`)."""
        if self.seen or self.ended_at is not None or (later.blind is not None and self.highest):
            return False
        for name in ("in_traceback", "frame", "any_frame", "seen", "opened", "_begun", "ended_at"):
            setattr(self, name, getattr(later, name))
        closed = later.closed
        for i in range(0, len(closed), 4):
            key = later.told[closed[i + 3]]
            at = self._told_at.setdefault(key, len(self.told))
            if at == len(self.told):
                self.told.append(key)
            self.closed.extend((closed[i], closed[i + 1], closed[i + 2], at))
        self.marks.extend(later.marks)
        self.finishes.extend(later.finishes)
        self.drawn.update(later.drawn)
        for bar, top in later.highest.items():
            self.highest[bar] = max(top, self.highest.get(bar, top))
        self.blind = self.blind if self.blind is not None else later.blind
        return True

    def into(self, meta: SourceMeta) -> None:
        """How the log ends into ``meta``: its crash, this scanner (to tell each training's ending when the log
        holds several) and a note counting the tracebacks the training went on after."""
        meta.crash, meta.crash_scanned, meta.tracebacks = self.crash(), True, self
        count, first = self.survived()
        if count:
            meta.notes.append(survived_note(self.path, count, first))

    def crash(self, total: int | None = None) -> Crash | None:
        """The exception the log ends in, or None when it ends without one; its ``last_step`` is the last
        step the progress bar of ``total`` (or ``self.total``, else any bar) showed finished before it."""
        if not self.seen:
            return None
        crash, _ = self._ending()
        after_end = self.ended_at is not None and self.ended_at < self.seen[0].lineno
        reached = self.reached(0, self.opened or self.seen[0].lineno, total)
        return replace(crash, last_step=reached, after_end=after_end)

    def _ending(self) -> tuple[Crash, int]:
        """The exception the tracebacks of ``seen`` are told by, and its line."""
        kind = _kind(self.seen)
        last = self.seen[-1]
        if kind == "oom":  # the memory error is what killed it, whatever the driver raised after it
            last = next(s for s in reversed(self.seen) if _OOM.search(f"{s.type}: {s.message}"))
        elif kind == "import":  # the import that failed, not what failed because of it
            last = (next((s for s in reversed(self.seen) if _IMPORT.search(s.type)), None)
                    or next(s for s in reversed(self.seen) if _IMPORT.search(s.message)))
        causes: list[str] = []
        for s in self.seen:
            said = f"{s.type}: {s.message}" if s.message else s.type
            if s is not last and said not in causes and said != f"{last.type}: {last.message}":
                causes.append(said)
        return Crash(last.type, last.message, f"{self.path}:{last.lineno}", kind, last.origin,
                     tuple(causes[:3])), last.lineno

    def reached(self, start: int, stop: int, total: int | None = None) -> int | None:
        """The last step the training's bar (of ``total``, or ``self.total``, else any bar) showed finished on
        the lines ``[start, stop)``: counted again from where a bar was drawn anew (a count below the one
        before it); None for no bar, or one that showed no step finished."""
        total = self.total if total is None else total
        best: dict[int, int] = {}
        prev: dict[int, int] = {}
        marks = self.marks
        for i in range(0, len(marks), 3):
            line, count, bar = marks[i], marks[i + 1], marks[i + 2]
            if line >= stop:
                break  # the frames are kept in line order
            if total is not None and bar != total:
                continue
            if line >= start:
                before = best.get(bar)
                best[bar] = count if before is None or count < prev.get(bar, -1) else max(before, count)
            prev[bar] = count
        found = max(best.values(), default=0)
        return found if found > 0 else None

    def survived(self) -> tuple[int, int | None]:
        """How many groups of tracebacks the training went on after, and the line the first began at."""
        return self._others(0, None, None)

    def _others(self, start: int, stop: int | None, ending: int | None) -> tuple[int, int | None]:
        """The groups of tracebacks the training went on after that began on the lines ``[start, stop)``,
        but for the one that began at ``ending``: how many, and the line the first began at."""
        count, first = 0, None
        closed = self.closed
        for i in range(0, len(closed), 4):
            began = closed[i]
            if start <= began and (stop is None or began < stop) and began != ending:
                count += 1
                first = began if first is None else first
        return count, first

    def account(self, spans: Sequence[tuple[int, int]]) -> list[Ending]:
        """How each training of the log ended, given the lines of its first and last record (``spans``, in file
        order). The crash of one before the last is the group of tracebacks after its last record that the
        next one's first record closed (nothing in between showed it going on); the last one's is how the
        log ends. The other groups it survived: those that began on its lines (the first training's: from
        the log's start) before the next one's first record."""
        out: list[Ending] = []
        for k, (first, last) in enumerate(spans):
            start = first if k else 0
            stop = spans[k + 1][0] if k + 1 < len(spans) else None
            if stop is None:
                crash, began = self.crash(), self.opened
                if crash is not None and k:
                    crash = replace(crash, last_step=self.reached(start, began or self.seen[0].lineno))
            else:
                crash, began = self._ended(start, last, stop)
            count, at = self._others(start, stop, began if stop is not None else None)
            out.append(Ending(crash, count, at))
        return out

    def _ended(self, start: int, last: int, stop: int) -> tuple[Crash | None, int | None]:
        """The group of tracebacks that began after line ``last`` and that the record at line ``stop`` closed,
        as a crash (its last step: what the bar showed from line ``start`` on), and the line it began at;
        (None, None) when there is none."""
        closed = self.closed
        for i in range(0, len(closed), 4):
            began, until = closed[i], closed[i + 1]
            if last < began < stop <= until:
                return replace(self.told[closed[i + 3]], where=f"{self.path}:{closed[i + 2]}",
                               last_step=self.reached(start, began),
                               after_end=any(last <= f < began for f in self.finishes)), began
        return None, None


@dataclass(frozen=True)
class Ending:
    """How one training of a log ended: the crash that ended it (None: it did not die), and how many groups
    of tracebacks it went on after, the first beginning at line ``first_survived``."""

    crash: Crash | None
    survived: int = 0
    first_survived: int | None = None


def survived_note(path: str, count: int, first: int | None) -> Words:
    """The note a run gets for the tracebacks its training went on after.

    Example:
        >>> print(survived_note("train.log", 3, 120))
        train.log: the training went on after 3 tracebacks (the first at line 120): errors a process printed and \
survived (a failed tool call, a retried request), not a crash
    """
    what = "a traceback" if count == 1 else f"{count} tracebacks"
    first_en = f"the first at line {first}" if count > 1 else f"at line {first}"
    return Words(f"{path}: the training went on after {what} ({first_en}): errors a process printed and survived "
                 "(a failed tool call, a retried request), not a crash",
                 f"{path}：训练在 {count} 段 traceback 之后继续进行（{'第一段' if count > 1 else ''}在第 {first} 行）："
                 "这些是某个进程打印出来、但训练挺过去了的错误（工具调用失败、请求重试），不是崩溃")


def crash_from(exception: str, message: str, where: str, origin: str | None = None) -> Crash:
    """The crash of one exception known by its name and message (a notebook's error output),
    with its kind read as a traceback's would be."""
    return Crash(exception, message, where, _kind([_Seen(exception, message, 0, origin)]), origin)


def _kind(seen: list[_Seen]) -> CrashKind:
    said = [f"{s.type}: {s.message}" for s in seen]
    if any(_OOM.search(s) for s in said):
        return "oom"
    last = seen[-1]
    if last.type.rsplit(".", 1)[-1] in _SIGNAL_TYPES or _SIGNAL.search(last.message):
        return "signal"
    if any(_IMPORT.search(s.type) or _IMPORT.search(s.message) for s in seen):
        return "import"
    if any(_WORKER.search(s) for s in said):
        return "worker"
    return "error"


#: libraries a traceback passes through on its way to the code that failed: not the place to look
_PLUMBING = ("torch/", "ray/", "concurrent/", "asyncio/", "importlib/", "multiprocessing/", "threading.py",
             "contextlib.py", "functools.py", "<frozen", "/usr/lib/python")
_SITE = re.compile(r"^.*?/(?:site-packages|dist-packages)/")


def _short(file: str) -> str:
    """A frame's file without the machine's own prefix: ``torch/autograd/graph.py``,
    ``verl/workers/actor/dp_actor.py`` (from ``/data0/user/Open-AgentRL/verl/workers/...``)."""
    site = _SITE.match(file)
    if site:
        return file[site.end():]
    for root in ("/verl/", "/trl/", "/openrlhf/", "/transformers/"):
        at = file.rfind(root)
        if at >= 0:
            return file[at + 1:]
    return file


#: a traceback frame in each framework's own code: how a log holding only a traceback is recognised
FRAMEWORK_FRAMES: dict[str, re.Pattern[bytes]] = {
    "verl": re.compile(rb'File "[^"\r\n]*/verl/(?:trainer|workers|single_controller|utils|models)/[^"\r\n]*\.py"'),
    "openrlhf": re.compile(rb'File "[^"\r\n]*/openrlhf/[^"\r\n]*\.py"'),
    "trl": re.compile(rb'File "[^"\r\n]*/(?:trl/trainer/[^"\r\n]*|transformers/trainer)\.py"'),
}
