"""A run: the records of one log turned into aligned series on canonical names (:class:`Run`), loading a
path into runs (:func:`load`), detecting framework, version and algorithm, and following a growing path."""

from __future__ import annotations

from .load import load
from .run import Run, RunBuilder

__all__ = ["Run", "RunBuilder", "load"]
