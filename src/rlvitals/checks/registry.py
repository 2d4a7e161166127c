"""The registry of checks: each layer module's ``FUNCTIONS`` joined with the records of its data file
(``<module>.toml``), validated, and the checks marked ``sudden``."""


from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from ..catalog import bundled_toml, load_catalog
from ..errors import CatalogError
from . import (
    behaviour,
    ceiling,
    crash,
    degeneration,
    efficiency,
    generalisation,
    joint,
    kl,
    learning,
    reward_model,
    rewards,
    rollout,
    stability,
)
from ._base import (
    MIN_POINTS,
    Check,
    CheckFn,
    Text,
)

#: an anchor of docs/reading-rules.md: lower-case words joined by hyphens
_ANCHOR = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")

FUNCTIONS: dict[str, CheckFn] = {
    **crash.FUNCTIONS,
    **stability.FUNCTIONS,
    **kl.FUNCTIONS,
    **behaviour.FUNCTIONS,
    **learning.FUNCTIONS,
    **generalisation.FUNCTIONS,
    **reward_model.FUNCTIONS,
    **rewards.FUNCTIONS,
    **ceiling.FUNCTIONS,
    **efficiency.FUNCTIONS,
    **joint.FUNCTIONS,
    **rollout.FUNCTIONS,
    **degeneration.FUNCTIONS,
}


def _text(raw: Any, where: str) -> Text:
    if not isinstance(raw, dict) or not raw.get("title") or not raw.get("advice"):
        raise CatalogError(f"checks: {where} needs a title and advice")
    messages = {k: str(v) for k, v in raw.items() if k not in ("title", "advice") and not k.startswith("advice_")}
    if not messages:
        raise CatalogError(f"checks: {where} has no message templates")
    advices = {k.removeprefix("advice_"): str(v).strip() for k, v in raw.items() if k.startswith("advice_")}
    unknown = sorted(set(advices) - set(messages))
    if unknown:
        raise CatalogError(f"checks: {where} has advice for templates it does not have: {unknown}")
    return Text(str(raw["title"]), messages, str(raw["advice"]).strip(), advices)


def _rule(rule: Any, cid: str) -> tuple[str, ...]:
    """The anchors a record's ``rule`` names (one, or a list): its entries in docs/reading-rules.md."""
    anchors = [rule] if isinstance(rule, str) else rule if isinstance(rule, list) else []
    if not anchors or not all(isinstance(a, str) and _ANCHOR.fullmatch(a) for a in anchors):
        raise CatalogError(f"checks: check {cid!r} has rule = {rule!r}; expected the anchor of its entry in "
                           "docs/reading-rules.md, or a list of them (rule = \"kl-band\")")
    return tuple(anchors)


def parse_checks(data: dict[str, Any], functions: dict[str, CheckFn]) -> tuple[Check, ...]:
    layers = load_catalog().reading_order  # a check judges one of the verdict's layers
    checks = []
    seen: set[str] = set()
    for raw in data.get("check", []):
        cid = str(raw.get("id", ""))
        if cid in seen:
            raise CatalogError(f"checks: check {cid!r} is defined twice")
        seen.add(cid)
        if cid not in functions:
            raise CatalogError(f"checks: check {cid!r} has no function")
        if raw.get("layer") not in layers:
            raise CatalogError(f"checks: check {cid!r} has layer {raw.get('layer')!r}; expected one of {layers}")
        needs = tuple(tuple(n) if isinstance(n, list) else (str(n),) for n in raw.get("needs", []))
        sudden, final, quiet = raw.get("sudden", False), raw.get("final", False), raw.get("when_quiet", False)
        for name, flag in (("sudden", sudden), ("final", final), ("when_quiet", quiet)):
            if not isinstance(flag, bool):
                raise CatalogError(f"checks: check {cid!r} has {name} = {flag!r}; expected true or false")
        needs_text, needs_text_zh = str(raw.get("needs_text", "")), str(raw.get("needs_text_zh", ""))
        if bool(needs_text) != bool(needs_text_zh):
            raise CatalogError(f"checks: check {cid!r} says what it needs in one language only; give needs_text "
                               "and needs_text_zh both (or neither)")
        min_points = raw.get("min_points", MIN_POINTS)
        if not isinstance(min_points, int) or isinstance(min_points, bool) or min_points < 1:
            raise CatalogError(f"checks: check {cid!r} has min_points = {min_points!r}; expected a whole number ≥ 1")
        checks.append(Check(
            id=cid, layer=raw["layer"], needs=needs, families=tuple(raw.get("families", [])),
            params=dict(raw.get("params", {})), en=_text(raw.get("en"), f"{cid} en"),
            zh=_text(raw.get("zh"), f"{cid} zh"), fn=functions[cid], rule=_rule(raw.get("rule"), cid),
            needs_text=needs_text, needs_text_zh=needs_text_zh, sudden=sudden, final=final, when_quiet=quiet,
            min_points=min_points,
        ))
    missing = sorted(set(functions) - seen)
    if missing:
        raise CatalogError(f"checks: functions without a record: {missing}")
    return tuple(checks)


MODULES = ("crash", "stability", "kl", "behaviour", "learning", "generalisation", "reward_model", "rewards",
           "ceiling", "efficiency", "joint", "rollout", "degeneration")


@lru_cache(maxsize=1)
def load_checks() -> tuple[Check, ...]:
    """Every shipped check, layer module by layer module, in file order."""
    records: list[Any] = []
    for name in MODULES:
        records.extend(bundled_toml(__package__, f"{name}.toml").get("check", []))
    return parse_checks({"check": records}, FUNCTIONS)


def final_checks() -> frozenset[str]:
    """The ids of the shipped checks marked ``final``: what they find, later steps cannot undo (a value went NaN),
    so ``watch`` alerts it at once rather than waiting for it to hold (:mod:`rlvitals.live.confirm`).

    Example:
        >>> sorted(final_checks())
        ['nan_inf']
    """
    return frozenset(c.id for c in load_checks() if c.final)


def quiet_checks() -> frozenset[str]:
    """The ids of the shipped checks marked ``when_quiet``: what they find is read from how the log ends, which
    only the output flushed after it can change (a dying trainer prints its traceback at once and its buffered
    metrics after it), so ``watch`` alerts it once the log has stopped growing (:mod:`rlvitals.live.confirm`).

    Example:
        >>> sorted(quiet_checks())
        ['run_crashed']
    """
    return frozenset(c.id for c in load_checks() if c.when_quiet)


def sudden_checks() -> tuple[Check, ...]:
    """The shipped checks marked ``sudden``: abrupt events a window of recent steps shows as well.

    Example:
        >>> "grad_norm_spike" in [c.id for c in sudden_checks()]
        True
    """
    return tuple(c for c in load_checks() if c.sudden)
