"""A run: the records of one log turned into aligned series on canonical names (:class:`Run`), loading a
path into runs (:func:`load`), reading the logs of one run's launches as one run (:func:`load_launches`),
detecting framework, version and algorithm, and following a growing path (:mod:`.follow`)."""


from __future__ import annotations

from .builder import RunBuilder
from .concat import load_launches
from .follow import Follow, LineSource, signature
from .load import load
from .run import Run, WallClock

__all__ = ["Follow", "LineSource", "load", "load_launches", "Run", "RunBuilder", "WallClock", "signature"]
