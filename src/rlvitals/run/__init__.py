"""A run: the records of one log turned into aligned series on canonical names (:class:`Run`), loading a
path into runs (:func:`load`), detecting framework, version and algorithm, and following a growing path
(:mod:`.follow`)."""


from __future__ import annotations

from .builder import RunBuilder
from .follow import Follow, LineSource, signature
from .load import load
from .run import Run

__all__ = ["Follow", "LineSource", "load", "Run", "RunBuilder", "signature"]
