"""Recognise the framework, its version era and the algorithm of a run from its keys and config."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .aliases import _NEG, _POS, KeyResolver, Version
from .catalog import Catalog


@dataclass(frozen=True)
class Detection:
    framework: str
    version_low: Version
    version_high: Version
    algorithm: str
    family: str
    label: str

    @property
    def era(self) -> str | None:
        """A readable version window such as ``>=0.20`` or ``2024-12..2025-04``."""
        return format_window(self.framework, self.version_low, self.version_high)


def _fmt(framework: str, v: Version) -> str:
    if framework == "verl" and len(v) >= 2 and v[0] > 1000:
        return f"{v[0]}-{v[1]:02d}"
    return ".".join(str(p) for p in v)


def format_window(framework: str, low: Version, high: Version) -> str | None:
    has_low, has_high = low != _NEG, high != _POS
    if has_low and has_high:
        return f">={_fmt(framework, low)},<{_fmt(framework, high)}"
    if has_low:
        return f">={_fmt(framework, low)}"
    if has_high:
        return f"<{_fmt(framework, high)}"
    return None


def normalised_keys(keys: Iterable[str], catalog: Catalog) -> set[str]:
    """The raw keys plus every form the backend manglings turn them into."""
    out: set[str] = set()
    stack = list(keys)
    while stack:
        key = stack.pop()
        if key in out:
            continue
        out.add(key)
        for mangling in catalog.manglings:
            if mangling.match.search(key):
                inner = mangling.match.sub(mangling.replace, key, count=1)
                if inner and inner != key:
                    stack.append(inner)
    return out


def detect_framework(keys: set[str], resolver: KeyResolver, hint: str | None) -> str:
    """The reader's hint if it has one, else the framework whose names the keys use most."""
    if hint:
        return hint
    votes: Counter[str] = Counter()
    for key in keys:
        frameworks = {c.alias.framework for c in resolver.candidates(key)
                      if c.alias is not None and c.alias.framework != "any"}
        if len(frameworks) == 1:
            votes[next(iter(frameworks))] += 2
        for fw in frameworks:
            votes[fw] += 1
    if not votes:
        return "unknown"
    (best, n), *rest = votes.most_common()
    if rest and rest[0][1] == n:
        return "unknown"
    return best


def detect_version(keys: set[str], resolver: KeyResolver, framework: str) -> tuple[Version, Version]:
    low, high = _NEG, _POS
    for key in keys:
        window = resolver.version_range(key, framework)
        if window is None:
            continue
        if window[0] > low:
            low = window[0]
        if window[1] < high:
            high = window[1]
    if low >= high:  # contradictory evidence (a fork mixing eras): claim nothing
        return _NEG, _POS
    return low, high


def _config_matches(config: Mapping[str, Any], cond: tuple[tuple[str, tuple[str, ...]], ...]) -> bool:
    if not cond:
        return False
    for key, allowed in cond:
        value = config.get(key)
        if value is None or str(value).strip("'\"").lower() not in allowed:
            return False
    return True


def detect_algorithm(keys: set[str], config: Mapping[str, Any], framework: str,
                     catalog: Catalog) -> tuple[str, str, str]:
    """``(id, family, label)`` of the first signature that matches; config beats keys."""
    sigs = [s for s in catalog.algorithms if not s.frameworks or framework in s.frameworks]
    for sig in sigs:
        if _config_matches(config, sig.config):
            return sig.id, sig.family, sig.label
    for sig in sigs:
        if sig.config and not (sig.keys_any or sig.keys_all):
            continue
        if sig.keys_all and not all(k in keys for k in sig.keys_all):
            continue
        if sig.keys_any and not any(k in keys for k in sig.keys_any):
            continue
        if any(k in keys for k in sig.keys_none):
            continue
        if sig.keys_any or sig.keys_all:
            return sig.id, sig.family, sig.label
    return "unknown", "unknown", "unknown"


def detect(raw_keys: Iterable[str], config: Mapping[str, Any], hint: str | None,
           catalog: Catalog, resolver: KeyResolver) -> Detection:
    keys = normalised_keys(raw_keys, catalog)
    framework = detect_framework(keys, resolver, hint)
    low, high = detect_version(keys, resolver, framework) if framework != "unknown" else (_NEG, _POS)
    algorithm, family, label = detect_algorithm(keys, config, framework, catalog)
    return Detection(framework, low, high, algorithm, family, label)
