"""Progress on long work, on a terminal only: a line per log being read, updated as records come in, and a
bar for the work of ``rollouts``, ``sample`` and ``report`` (the phase, how far it got of how much), gone
when the work is done. Nothing is shown when stderr is not a terminal (a pipe, a log file) or the output
is ``--json``: the callers pass ``enabled=False`` then, and get None as their callback."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..rollout import Progress
    from ..rollout.analysis import RolloutAnalysis
    from ..rollout.options import RolloutSettings

#: the least time between two redraws of a bar; a new phase, and the end of one, are drawn at once
INTERVAL = 0.1

#: phase → (words, what is counted: "" a bare count, None no count); a phase not listed is said as it is
PHASES: dict[str, tuple[str, str | None]] = {
    "reading": ("reading", "files"),
    # the rollout analysis' metric families (rlvitals.rollout.analysis), each once per step, then "overall"
    "group": ("group metrics (σ_G, pass@k)", ""),
    "step_groups": ("step-level groups", ""),
    "diversity": ("diversity", ""),
    "segments": ("think / answer / tool segments", ""),
    "length": ("length × correctness", ""),
    "prompts": ("prompt difficulty", ""),
    "id_ood": ("in- vs out-of-distribution", ""),
    "sources": ("per data source", ""),
    "tokens": ("token metrics", ""),
    "embedding": ("embedding the responses", "steps"),
    "overall": ("metrics over the whole table", ""),
    "loading": ("loading the model", None),
    "sampling": ("sampling", "prompt groups"),
    "diagnosing": ("diagnosing", "runs"),
    "charts": ("drawing the charts", "sections"),
    "rollouts": ("choosing the rollouts to show", "steps"),
    "writing": ("writing the page", None),
}


@contextlib.contextmanager
def reading(err: IO[str], enabled: bool = True) -> Iterator[Callable[[Path, int], None] | None]:
    """A ``progress`` for :func:`rlvitals.run.load.load` that shows ``reading train.log: 49,152 records``
    on ``err`` while it reads, or None when ``err`` is not a terminal or progress is not wanted."""
    if not enabled or not err.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn

    shown = Progress(SpinnerColumn(), TextColumn("{task.description}"), console=Console(file=err),
                     transient=True, auto_refresh=False)
    tasks: dict[Path, Any] = {}  # rich's TaskID

    def update(root: Path, records: int) -> None:
        words = f"reading {root.name}: {records:,} records"
        if root not in tasks:
            tasks[root] = shown.add_task(words)
        shown.update(tasks[root], description=words)
        shown.refresh()

    with shown:
        yield update


def words(phase: str, done: int, total: int | None) -> tuple[str, str]:
    """What a bar says of ``phase``: its words, and the count.

    Example:
        >>> words("reading", 45, 100), words("diversity", 2, 18), words("writing", 0, 1)
        (('reading', '45/100 files'), ('diversity', '2/18'), ('writing the page', ''))
    """
    said, unit = PHASES.get(phase, (phase, ""))
    count = f"{done:,}" if total is None else f"{done:,}/{total:,}"
    return said, "" if unit is None else f"{count} {unit}".rstrip()


class Throttle:
    """Whether a bar is redrawn now: on a new phase, at the end of one (``done == total``), else when
    ``interval`` seconds of ``clock`` have passed since the last redraw.

    Example:
        >>> now = [0.0]
        >>> t = Throttle(lambda: now[0], 0.1)
        >>> t("reading", 0, 9), t("reading", 1, 9), t("group", 0, 18)
        (True, False, True)
        >>> now[0] = 0.2; t("group", 1, 18), t("group", 2, 18), t("group", 18, 18)
        (True, False, True)
    """

    def __init__(self, clock: Callable[[], float], interval: float = INTERVAL) -> None:
        self.clock, self.interval = clock, interval
        self.phase: str | None = None
        self.last = 0.0

    def __call__(self, phase: str, done: int, total: int | None) -> bool:
        now = self.clock()
        if phase != self.phase or done == total or now - self.last >= self.interval:
            self.phase, self.last = phase, now
            return True
        return False


@contextlib.contextmanager
def working(err: IO[str], what: str, enabled: bool = True,
            clock: Callable[[], float] | None = None) -> Iterator[Progress | None]:
    """A ``progress(phase, done, total)`` that shows ``what: phase ━━━━━━━╺━━━ done/total unit`` on
    ``err`` while the work goes on (the phase's words from :data:`PHASES`), redrawn as :class:`Throttle`
    says with ``clock`` (default the monotonic clock), and gone when it is done; None when ``err`` is not a
    terminal or progress is not wanted."""
    if not enabled or not err.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn

    shown = Progress(TextColumn("{task.description}"), BarColumn(bar_width=30), TextColumn("{task.fields[count]}"),
                     console=Console(file=err), transient=True, auto_refresh=False)
    task = shown.add_task(what, total=None, count="")
    redraw = Throttle(clock or time.monotonic)

    def update(phase: str, done: int, total: int | None) -> None:
        said, count = words(phase, done, total)
        shown.update(task, description=f"{what}: {said}", completed=done, total=total, count=count)
        if redraw(phase, done, total):
            shown.refresh()

    with shown:
        yield update


def analysed(path: str, settings: RolloutSettings | None, err: IO[str], enabled: bool = True) -> RolloutAnalysis:
    """The rollouts at ``path`` analysed with ``settings``, the analysis' phases shown on a terminal
    (``rollouts in rollout_data: reading ━━━━━╺━━━━ 45/100 files``) when ``enabled``."""
    from ..rollout.analysis import analyze

    with working(err, f"rollouts in {Path(path).name or path}", enabled) as told:
        return analyze(path, settings, progress=told)


def status_line(err: IO[str], what: str, clock: Callable[[], float] | None = None) -> Progress | None:
    """A ``progress(phase, done, total)`` that keeps one line on ``err`` (``what: phase done/total unit``),
    redrawn in place as :class:`Throttle` says and wiped when a phase is done, so that whatever is printed
    next starts on a clean line (``watch --once --rollouts``, whose output follows the reading); None when
    ``err`` is not a terminal."""
    if not err.isatty():
        return None
    redraw = Throttle(clock or time.monotonic)

    def update(phase: str, done: int, total: int | None) -> None:
        if not redraw(phase, done, total):
            return
        said, count = words(phase, done, total)
        err.write("\r\x1b[2K" if total is not None and done >= total else f"\r\x1b[2K{what}: {said} {count}")
        err.flush()

    return update
