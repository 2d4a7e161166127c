"""Recognise the framework, its version era and the algorithm of a run from its keys and config."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..catalog import EARLIEST, LATEST, KeyResolver, Version
from ..catalog.catalog import AlgorithmSignature, Catalog
from ..errors import InputError
from ..words import Words

#: the share of steps on which two series must differ for ``values_differ``
DIFFER_SHARE = 0.5
#: how far one step's ratio may stray from the median ratio for ``values_proportional`` (printed values
#: are rounded: 6 decimals in a notebook table, 4 significant digits in a console dict)
RATIO_TOLERANCE = 0.01


@dataclass(frozen=True)
class Detection:
    framework: str
    version_low: Version
    version_high: Version
    algorithm: str
    family: str
    label: str
    #: the algorithm was given by the user (``--algorithm``), not detected
    given: bool = False
    #: with ``given``: the algorithm the keys and config alone read as (``unknown`` when none)
    detected: str = "unknown"

    @property
    def era(self) -> str | None:
        """A readable version window such as ``>=0.20`` or ``2024-12..2025-04``."""
        return format_window(self.framework, self.version_low, self.version_high)


def _fmt(framework: str, v: Version) -> str:
    if framework == "verl" and len(v) >= 2 and v[0] > 1000:
        return f"{v[0]}-{v[1]:02d}"
    return ".".join(str(p) for p in v)


def format_window(framework: str, low: Version, high: Version) -> str | None:
    has_low, has_high = low != EARLIEST, high != LATEST
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


def _by_namespace(keys: set[str], config: Mapping[str, Any], catalog: Catalog) -> str:
    """The framework whose namespaces the keys use (or whose config sections the config has), when
    exactly one fits; else ``unknown``."""
    fits = []
    for sig in catalog.frameworks:
        under = sum(1 for k in keys if k.startswith(sig.key_prefixes)) if sig.key_prefixes else 0
        configured = bool(sig.config_prefixes) and any(str(k).startswith(sig.config_prefixes) for k in config)
        if under >= sig.min_keys or configured:
            fits.append(sig.id)
    return fits[0] if len(fits) == 1 else "unknown"


def detect_framework(keys: set[str], resolver: KeyResolver, hint: str | None,
                     config: Mapping[str, Any] | None = None, catalog: Catalog | None = None) -> str:
    """The reader's hint if it has one, else the framework whose names the keys use most, else the
    one whose namespaces they use (a veRL run logs the canonical names: no alias votes for it)."""
    if hint:
        return hint
    found = _by_votes(keys, resolver)
    if found == "unknown" and catalog is not None:
        return _by_namespace(keys, config or {}, catalog)
    return found


def _by_votes(keys: set[str], resolver: KeyResolver) -> str:
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
    low, high = EARLIEST, LATEST
    for key in keys:
        window = resolver.version_range(key, framework)
        if window is None:
            continue
        if window[0] > low:
            low = window[0]
        if window[1] < high:
            high = window[1]
    if low >= high:  # contradictory evidence (a fork mixing eras): claim nothing
        return EARLIEST, LATEST
    return low, high


def _config_matches(config: Mapping[str, Any], cond: tuple[tuple[str, tuple[str, ...]], ...]) -> bool:
    if not cond:
        return False
    for key, allowed in cond:
        value = config.get(key)
        if value is None or str(value).strip("'\"").lower() not in allowed:
            return False
    return True


def _differ(a: np.ndarray, b: np.ndarray) -> bool:
    both = np.isfinite(a) & np.isfinite(b)
    if not both.any():
        return False
    apart = np.abs(a[both] - b[both]) > 1e-9 + 1e-6 * np.maximum(np.abs(a[both]), np.abs(b[both]))
    return bool(apart.mean() >= DIFFER_SHARE)


def _proportional(a: np.ndarray, b: np.ndarray) -> bool:
    both = np.isfinite(a) & np.isfinite(b) & (np.abs(b) > 1e-12) & (np.abs(a) > 1e-12)
    if both.sum() < 3:
        return False
    ratio = a[both] / b[both]
    middle = float(np.median(ratio))
    return middle != 0 and bool(np.all(np.abs(ratio - middle) <= RATIO_TOLERANCE * abs(middle)))


def _values_match(sig: AlgorithmSignature, values: Mapping[str, np.ndarray]) -> bool:
    """Whether the logged values show what the signature's value test asks for."""
    for pair, test in ((sig.values_differ, _differ), (sig.values_proportional, _proportional)):
        if not pair:
            continue
        a, b = (values.get(k) for k in pair[:2])
        if a is None or b is None or not test(a, b):
            return False
    return True


def detect_algorithm(keys: set[str], config: Mapping[str, Any], framework: str,
                     catalog: Catalog, values: Mapping[str, np.ndarray] | None = None) -> tuple[str, str, str]:
    """``(id, family, label)`` of the first signature that matches; config beats keys. ``values``
    (raw key -> logged values) lets a signature read the numbers as well as the names."""
    sigs = [s for s in catalog.algorithms if not s.frameworks or framework in s.frameworks]
    normalised: dict[str, np.ndarray] | None = None  # built the first time a signature reads values
    for sig in sigs:
        if _config_matches(config, sig.config) or any(k in config for k in sig.config_keys):
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
        if sig.values_differ or sig.values_proportional:
            if normalised is None:
                normalised = normalised_values(values or {}, catalog)
            if not _values_match(sig, normalised):
                continue
        if sig.keys_any or sig.keys_all:
            return sig.id, sig.family, sig.label
    return "unknown", "unknown", "unknown"


def normalised_values(values: Mapping[str, np.ndarray], catalog: Catalog) -> dict[str, np.ndarray]:
    """The logged values under every form of their keys (``rewards / chosen`` also as ``rewards/chosen``)."""
    out: dict[str, np.ndarray] = {}
    for raw, arr in values.items():
        for form in normalised_keys([raw], catalog):
            out.setdefault(form, arr)
    return out


def given_signature(algorithm: str, framework: str, catalog: Catalog) -> AlgorithmSignature:
    """The signature of an algorithm id the user gave: the first written for ``framework``, else the first
    of that id. :class:`KeyError` for an id the catalog has no signature of.

    Example:
        >>> from rlvitals.catalog import load_catalog
        >>> given_signature("grpo", "verl", load_catalog()).label
        'GRPO'
    """
    sigs = [s for s in catalog.algorithms if s.id == algorithm]
    if not sigs:
        raise KeyError(algorithm)
    return next((s for s in sigs if framework in s.frameworks), next((s for s in sigs if not s.frameworks), sigs[0]))


def algorithm_ids(catalog: Catalog) -> tuple[str, ...]:
    """Every algorithm id the catalog has a signature of, in the catalog's order (what ``--algorithm`` takes).

    Example:
        >>> from rlvitals.catalog import load_catalog
        >>> algorithm_ids(load_catalog())[:3]
        ('grpo', 'rloo', 'ppo')
    """
    return tuple(dict.fromkeys(a.id for a in catalog.algorithms))


def checked_algorithm(name: str | None, catalog: Catalog, given_as: str = "algorithm=") -> str | None:
    """``name`` when the catalog has a signature of that algorithm id (or None, nothing given); else an
    :class:`InputError` in both languages naming what was given, as ``given_as`` (``--algorithm ``), and the
    ids there are.

    Example:
        >>> from rlvitals.catalog import load_catalog
        >>> checked_algorithm("ppo", load_catalog())
        'ppo'
        >>> checked_algorithm("dpo", load_catalog())  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        rlvitals.errors.InputError: algorithm='dpo': not an algorithm rlvitals knows (did you mean dpo-family?); ...
    """
    if name is None:
        return None
    ids = algorithm_ids(catalog)
    if name in ids:
        return name
    from difflib import get_close_matches

    # a name cut short (dpo for dpo-family) before one spelt a letter off
    close = ([i for i in ids if name and i.startswith(name.lower())][:1]
             or get_close_matches(name.lower(), ids, n=1, cutoff=0.6))
    hint = Words(f" (did you mean {close[0]}?)", f"（是不是想写 {close[0]}？）") if close else Words("", "")
    raise InputError(Words(
        f"{given_as}{name!r}: not an algorithm rlvitals knows{hint}; give one of {', '.join(ids)}, or leave it out "
        "to have the algorithm detected from the run's keys",
        f"{given_as}{name!r}：不是 rlvitals 认识的算法{hint.zh}；请给出 {'、'.join(ids)} 之一，"
        "或者不指定，由运行的键名识别算法"))


def detect(raw_keys: Iterable[str], config: Mapping[str, Any], hint: str | None,
           catalog: Catalog, resolver: KeyResolver, values: Mapping[str, np.ndarray] | None = None,
           given: str | None = None) -> Detection:
    """What the run is; ``given``: the algorithm id the user said it is, which the run is read as whatever
    its keys say (those are kept in ``Detection.detected``)."""
    keys = normalised_keys(raw_keys, catalog)
    framework = detect_framework(keys, resolver, hint, config, catalog)
    low, high = detect_version(keys, resolver, framework) if framework != "unknown" else (EARLIEST, LATEST)
    algorithm, family, label = detect_algorithm(keys, config, framework, catalog, values)
    if given is None:
        return Detection(framework, low, high, algorithm, family, label)
    sig = given_signature(given, framework, catalog)
    return Detection(framework, low, high, sig.id, sig.family, sig.label, given=True, detected=algorithm)
