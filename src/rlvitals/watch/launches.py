"""``watch --one-run``: the logs of one run's launches (one file per launch of a resumed run) watched
as one run, in step order, as ``diagnose --one-run`` reads them (:func:`rlvitals.run.concat.load_launches`).

Each log is still followed on its own (its cursor, its records in the state file, a log that is not
there yet is waited for: a later launch's file appears when it starts), so the watcher knows when any of
them grew. The run itself is read from the logs found so far at each full diagnosis, under one name
that does not change as launches appear (all the PATHs, joined by ``+``), so a finding is alerted once
for the run however many launches it took. What the joining did (steps a later launch logged again, an
earlier launch's crash) is said whenever the set of logs joined changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ..errors import EmptyInputError
from ..run.concat import load_launches
from ..run.follow import Follow
from ..run.run import Run

__all__ = ["Launches"]


class Launches:
    """One run read from the launch logs of ``follows`` that are followed already.

    Example:
        >>> Launches([Path("a.jsonl"), Path("b.jsonl")]).name
        'a.jsonl + b.jsonl'
    """

    def __init__(self, paths: Sequence[Path], fmt: str | None = None, lang: str = "en",
                 algorithm: str | None = None) -> None:
        self.name = " + ".join(str(p) for p in paths)
        self.fmt, self.lang, self.algorithm = fmt, lang, algorithm
        #: what the joining did, to be said (collected by the watcher)
        self.messages: list[str] = []
        self._joined: tuple[Path, ...] = ()

    def run(self, follows: Sequence[Follow]) -> Run | None:
        """The run of the launch logs found so far (None before any holds metrics), named :attr:`name`."""
        found = tuple(f.path for f in follows if f.inner is not None)
        if not found:
            return None
        told: list[str] = []
        try:
            run = load_launches(found, self.fmt, tell=lambda note: told.append(note.text(self.lang)),
                                algorithm=self.algorithm)
        except EmptyInputError:
            return None  # no launch has logged a step yet: waited for, as one log without metrics is
        if found != self._joined:
            self._joined = found
            head = "--one-run：" if self.lang == "zh" else "--one-run: "
            self.messages.extend(head + note for note in told)
        return replace(run, path=self.name)
