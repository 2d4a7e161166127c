"""A run: the records of one log turned into aligned series on canonical names (:class:`Run`), loading a
path into runs (:func:`load`), reading the logs of one run's launches as one run (:func:`load_launches`),
detecting framework, version and algorithm, and following a growing path (:mod:`.follow`)."""


from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

# bound here, not looked up: the module rlvitals.run.load, once imported, would take the name on this package
from .load import load

if TYPE_CHECKING:
    from .builder import RunBuilder
    from .concat import load_launches
    from .detect import algorithm_ids, checked_algorithm
    from .follow import Follow, LineSource, SnapshotSource, signature
    from .run import Run, WallClock
    from .training import behind_note, one_training
    from .twins import TRACKERS, copies_note, merge
    from .unterminated import Unterminated

__all__ = ["Follow", "LineSource", "SnapshotSource", "TRACKERS", "behind_note", "load", "load_launches", "Run",
           "RunBuilder", "Unterminated", "WallClock", "algorithm_ids", "checked_algorithm", "copies_note", "merge",
           "one_training", "signature"]

#: where each name of the face lives, imported when first asked for: reading a log (and forking a worker to
#: read half of it) comes before polars, which only the Run and its frames need
HOMES = {"RunBuilder": "builder", "load_launches": "concat",
         **dict.fromkeys(("Follow", "LineSource", "SnapshotSource", "signature"), "follow"),
         **dict.fromkeys(("Run", "WallClock"), "run"), "Unterminated": "unterminated",
         **dict.fromkeys(("algorithm_ids", "checked_algorithm"), "detect"),
         **dict.fromkeys(("TRACKERS", "copies_note", "merge"), "twins"),
         **dict.fromkeys(("behind_note", "one_training"), "training")}


def __getattr__(name: str) -> Any:
    home = HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # looked up each time, never kept here: a test that patches the module's name patches the face's too
    return getattr(import_module(f".{home}", __name__), name)
