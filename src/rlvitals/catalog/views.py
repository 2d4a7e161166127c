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

from dataclasses import dataclass, field
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
    #: per algorithm family, the rows a comparison's final/best table adds after the first screen's slots
    compare: dict[str, tuple[tuple[str, ...], ...]] = field(default_factory=dict)
    #: canonical keys counting the tokens trained on so far (cumulative), best first
    tokens_seen: tuple[str, ...] = ()
    #: canonical keys counting one step's tokens (summed over the steps where the log has no cumulative count)
    step_tokens: tuple[str, ...] = ()

    def first_look(self, family: str) -> tuple[tuple[str, ...], ...]:
        """The first screen's slots of ``family`` (the RL family's for a family the file does not name)."""
        return self.slots.get(family, self.slots["rl"])

    def table(self, family: str) -> tuple[tuple[str, ...], ...]:
        """The rows of a comparison's final/best table for ``family``: its first screen's slots, then its
        ``[compare]`` slots (the RL family's for a family the file does not name)."""
        return self.first_look(family) + self.compare.get(family if family in self.slots else "rl", ())

    def keys(self) -> set[str]:
        """Every metric key the file names (the validation slot is not a key)."""
        named = {k for table in (self.slots, self.compare) for slots in table.values() for slot in slots
                 for k in slot}
        return (named | set(self.step_seconds) | set(self.tokens_seen) | set(self.step_tokens)) - {VALIDATION}


def parse_views(data: dict[str, Any]) -> Views:
    """``views.toml`` as parsed TOML to :class:`Views`; a malformed table raises :class:`CatalogError`."""
    raw = data.get("first_look")
    if not isinstance(raw, dict) or "rl" not in raw:
        raise CatalogError("views.toml: [first_look] needs a list of slots per family, the 'rl' family at least")
    step = (data.get("clock") or {}).get("step_seconds")
    if not isinstance(step, list) or not all(isinstance(k, str) for k in step):
        raise CatalogError("views.toml: [clock] needs step_seconds = [keys timing one step, in seconds]")
    compare = data.get("compare", {})
    if not isinstance(compare, dict):
        raise CatalogError("views.toml: [compare] must be a table of slot lists per family")
    tokens = data.get("tokens", {})
    seen, per_step = tokens.get("seen", []), tokens.get("per_step", [])
    if not all(isinstance(x, list) and all(isinstance(k, str) for k in x) for x in (seen, per_step)):
        raise CatalogError("views.toml: [tokens] needs seen = [keys counting the tokens so far] and per_step = "
                           "[keys counting one step's tokens]")
    return Views(_slot_lists(raw, "first_look"), tuple(step), _slot_lists(compare, "compare"), tuple(seen),
                 tuple(per_step))


def _slot_lists(raw: dict[str, Any], table: str) -> dict[str, tuple[tuple[str, ...], ...]]:
    """A table of slot lists per family (``[first_look]``, ``[compare]``); a malformed one raises."""
    slots = {}
    for family, lists in raw.items():
        if not isinstance(lists, list) or not all(isinstance(s, list) and s and all(isinstance(k, str) for k in s)
                                                  for s in lists):
            raise CatalogError(f"views.toml: [{table}] {family} must be a list of non-empty lists of keys")
        slots[str(family)] = tuple(tuple(s) for s in lists)
    return slots


@lru_cache(maxsize=1)
def load_views() -> Views:
    """The bundled ``views.toml``."""
    return parse_views(bundled_toml("rlvitals.catalog", "views.toml"))
