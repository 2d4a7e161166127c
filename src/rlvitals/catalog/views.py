"""Which metrics a view puts first (``views.toml``): the curves of a report's first screen per
algorithm family, and the keys that time a step (a run's elapsed time where its log has no clock).

Example:
    >>> views = load_views()
    >>> views.first_look("rl")[1][:2]
    ('critic/score/mean', 'critic/rewards/mean')
    >>> views.step_seconds[0]
    'timing_s/step'
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..errors import CatalogError
from .bundled import bundled_toml

#: the slot of a first screen that stands for the run's validation curves, not one key
VALIDATION = "validation"


@dataclass(frozen=True)
class Views:
    """The loaded ``views.toml``."""

    #: per algorithm family, the first screen's slots in reading order; each slot, its alternatives
    slots: dict[str, tuple[tuple[str, ...], ...]]
    #: canonical keys whose value is one step's wall time in seconds, best first
    step_seconds: tuple[str, ...]

    def first_look(self, family: str) -> tuple[tuple[str, ...], ...]:
        """The first screen's slots of ``family`` (the RL family's for a family the file does not name)."""
        return self.slots.get(family, self.slots["rl"])

    def keys(self) -> set[str]:
        """Every metric key the file names (the validation slot is not a key)."""
        named = {k for slots in self.slots.values() for slot in slots for k in slot}
        return (named | set(self.step_seconds)) - {VALIDATION}


def parse_views(data: dict[str, Any]) -> Views:
    """``views.toml`` as parsed TOML to :class:`Views`; a malformed table raises :class:`CatalogError`."""
    raw = data.get("first_look")
    if not isinstance(raw, dict) or "rl" not in raw:
        raise CatalogError("views.toml: [first_look] needs a list of slots per family, the 'rl' family at least")
    slots = {}
    for family, lists in raw.items():
        if not isinstance(lists, list) or not all(isinstance(s, list) and s and all(isinstance(k, str) for k in s)
                                                  for s in lists):
            raise CatalogError(f"views.toml: [first_look] {family} must be a list of non-empty lists of keys")
        slots[str(family)] = tuple(tuple(s) for s in lists)
    step = (data.get("clock") or {}).get("step_seconds")
    if not isinstance(step, list) or not all(isinstance(k, str) for k in step):
        raise CatalogError("views.toml: [clock] needs step_seconds = [keys timing one step, in seconds]")
    return Views(slots, tuple(step))


@lru_cache(maxsize=1)
def load_views() -> Views:
    """The bundled ``views.toml``."""
    return parse_views(bundled_toml("rlvitals.catalog", "views.toml"))
