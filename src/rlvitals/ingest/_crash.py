"""One scanner, shared by the text readers, for how a log ends when the run died.

A run that dies leaves a Python traceback at the end of its log: the driver's
(``Traceback (most recent call last):`` … ``torch.OutOfMemoryError: CUDA out of memory``),
Ray's (``ray.exceptions.RayTaskError(OutOfMemoryError): ray::WorkerDict.update_actor()`` followed by
the worker's frames, or ``Unhandled error … ray::…`` with no ``Traceback`` header), torchrun's
(``SignalException: Process 12152 got signal: 1``), often behind a Ray prefix
(``(TaskRunner pid=1)``) and followed by harmless lines (``Set the environment variable
HYDRA_FULL_ERROR=1``, XLA's allocation report, progress bars).

A reader feeds every line that is not a record to :meth:`CrashScanner.feed`, calls
:meth:`~CrashScanner.progress` when it reads a training record (a traceback the training went on
after was survived: a worker's logged error, a retried request) and :meth:`~CrashScanner.finished`
at the training's own end marker; :meth:`~CrashScanner.crash` then says how the log ends. A
warning after the end (NCCL's ``destroy_process_group``, Ray's SIGTERM to its workers after the
final validation) is not a traceback and is no crash.

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
from dataclasses import dataclass

from .record import Crash, CrashKind
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
    """Reads the lines of one log for a traceback that ends it (see the module docstring)."""

    def __init__(self, path: object) -> None:
        self.path = str(path)
        self.in_traceback = False
        self.frame: str | None = None  # the innermost frame in the run's own code (not torch, ray, ...)
        self.any_frame: str | None = None  # the innermost frame of all
        self.seen: list[_Seen] = []  # exceptions since the last training record
        self.ended_at: int | None = None  # the line of the training's end marker, if it came

    def feed(self, lineno: int, line: str) -> None:
        """One line that is not a record (a cheap test rejects most lines)."""
        if not self.in_traceback and "Traceback" not in line and 'File "' not in line:
            return
        text = _strip(line)
        if text.startswith("Traceback (most recent call last)"):
            self.in_traceback, self.frame, self.any_frame = True, None, None
            return
        frame = _FRAME.match(text)
        if frame:
            self.in_traceback = True
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
        if len(self.seen) >= MAX_KEPT:
            del self.seen[1]  # keep the first (often the root cause) and the latest
        self.seen.append(_Seen(m["type"], (m["message"] or "").strip(), lineno, self.frame or self.any_frame))

    def progress(self) -> None:
        """A training record came: the tracebacks before it did not end the run."""
        if self.seen:
            self.seen.clear()
        self.ended_at = None

    def finished(self, lineno: int) -> None:
        """The training printed its end (its summary, its final validation) at ``lineno``."""
        self.ended_at = lineno

    def crash(self) -> Crash | None:
        """The exception the log ends in, or None when it ends without one."""
        if not self.seen:
            return None
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
        after_end = self.ended_at is not None and self.ended_at < self.seen[0].lineno
        return Crash(last.type, last.message, f"{self.path}:{last.lineno}", kind, last.origin,
                     tuple(causes[:3]), after_end=after_end)


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
