"""The facts a diagnosis's story is told from: which check's finding can explain which, and why.

They live in ``links.toml`` beside this module (one ``[[link]]`` per mechanism, with its words in English and
Chinese and, in ``rule``, the entries of docs/reading-rules.md it rests on); this module only reads and validates
them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from ..catalog import bundled_toml
from ..checks import load_checks
from ..errors import CatalogError

__all__ = ["Link", "Links", "Timing", "load_links", "parse_links"]

Timing = Literal["during", "same_step", "after", "first"]
_TIMINGS: tuple[Timing, ...] = ("during", "same_step", "after", "first")
_KNOWN = {"id", "cause", "effect", "cause_metrics", "cause_templates", "effect_templates", "cause_status", "timing",
          "rule", "en", "zh"}
#: an anchor of docs/reading-rules.md: lower-case words joined by hyphens
_ANCHOR = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


@dataclass(frozen=True)
class Link:
    """One mechanism: a finding of a ``cause`` check explains a finding of an ``effect`` check, when the
    evidence it names is there (the cause is about one of ``cause_metrics``; the findings' templates are
    among ``cause_templates`` / ``effect_templates``; the cause's status is among ``cause_status``; an empty
    tuple asks for nothing)."""

    id: str
    cause: tuple[str, ...]
    effect: tuple[str, ...]
    words: Mapping[str, str]
    timing: Timing = "during"
    cause_metrics: tuple[str, ...] = ()
    cause_templates: tuple[str, ...] = ()
    effect_templates: tuple[str, ...] = ()
    #: the anchors of the entries of docs/reading-rules.md the link rests on (where the mechanism comes from)
    rule: tuple[str, ...] = ()
    cause_status: tuple[str, ...] = ()


@dataclass(frozen=True)
class Links:
    """Every link, and the tolerance an onset comparison allows: ``steps`` logged steps, or ``share`` of the
    run's length, whichever is more (``links.toml`` ``[timing]`` says why)."""

    links: tuple[Link, ...]
    steps: int
    share: float

    def between(self, cause: str, effect: str) -> tuple[Link, ...]:
        """The links from check ``cause`` to check ``effect``, in file order."""
        return tuple(k for k in self.links if cause in k.cause and effect in k.effect)


def _strings(raw: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise CatalogError(f"story links: {where} {key} = {value!r}; expected a list of names")
    return tuple(value)


def _link(raw: Mapping[str, Any], checks: Mapping[str, Iterable[str]]) -> Link:
    lid = str(raw.get("id", ""))
    where = f"link {lid!r}" if lid else "a link without an id"
    unknown = sorted(set(raw) - _KNOWN)
    if not lid or unknown:
        raise CatalogError(f"story links: {where} " + (f"has unknown fields {unknown}" if unknown else "needs an id"))
    cause, effect = _strings(raw, "cause", where), _strings(raw, "effect", where)
    if not cause or not effect:
        raise CatalogError(f"story links: {where} needs a cause and an effect")
    for name in (*cause, *effect):
        if name not in checks:
            raise CatalogError(f"story links: {where} names the check {name!r}, which does not exist")
    if set(cause) & set(effect):
        raise CatalogError(f"story links: {where} has {sorted(set(cause) & set(effect))} as its own cause")
    for key, names in (("cause_templates", cause), ("effect_templates", effect)):
        templates = set().union(*(checks[n] for n in names))
        bad = sorted(set(_strings(raw, key, where)) - templates)
        if bad:
            raise CatalogError(f"story links: {where} {key} names {bad}, which none of {list(names)} has")
    timing = raw.get("timing", "during")
    if timing not in _TIMINGS:
        raise CatalogError(f"story links: {where} timing = {timing!r}; expected one of {list(_TIMINGS)}")
    if not raw.get("en") or not raw.get("zh"):
        raise CatalogError(f"story links: {where} needs its words in English (en) and Chinese (zh)")
    rule = _strings(raw, "rule", where)
    if not rule or not all(_ANCHOR.fullmatch(a) for a in rule):
        raise CatalogError(f"story links: {where} rule = {list(rule)}; expected the anchors of its entries in "
                           "docs/reading-rules.md (rule = [\"links-symptom-table\", \"kl-shape\"])")
    status = _strings(raw, "cause_status", where)
    if not set(status) <= {"warn", "fail"}:
        raise CatalogError(f"story links: {where} cause_status = {list(status)}; expected warn and/or fail")
    return Link(lid, cause, effect, {"en": str(raw["en"]), "zh": str(raw["zh"])}, timing,
                _strings(raw, "cause_metrics", where), _strings(raw, "cause_templates", where),
                _strings(raw, "effect_templates", where), rule, status)


def parse_links(data: Mapping[str, Any]) -> Links:
    """``links.toml``'s content checked against the shipped checks: every named check and template exists,
    the ids are unique, no check is its own cause, and the words are there in both languages."""
    checks = {c.id: set(c.en.messages) for c in load_checks()}
    links = tuple(_link(raw, checks) for raw in data.get("link", []))
    ids = [k.id for k in links]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise CatalogError(f"story links: {twice} defined twice")
    timing = data.get("timing", {})
    steps, share = timing.get("steps"), timing.get("share")
    if not isinstance(steps, int) or steps < 0 or not isinstance(share, float) or not 0 <= share < 1:
        raise CatalogError(f"story links: [timing] steps = {steps!r}, share = {share!r}; expected a whole number "
                           "of steps ≥ 0 and a share of the run in [0, 1)")
    return Links(links, steps, share)


@lru_cache(maxsize=1)
def load_links() -> Links:
    """The shipped links (``links.toml``), read once."""
    return parse_links(bundled_toml(__package__, "links.toml"))
