"""Map the keys a run logged to canonical catalog keys.

Resolution of one raw key, in order: a literal alias (or the canonical key itself);
a pattern alias or a templated canonical key; then each backend mangling rule
(W&B/TensorBoard ``train/``/``eval/`` prefixes, MLflow ``_at_``, notebook ``" / "``)
followed by the same two steps. Among several candidates the one written for this
framework, algorithm and version wins; when the version cannot decide, the alias
marked ``default`` wins and the choice is reported as a note.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

from ..words import Words
from .catalog import Alias, Catalog, Metric

Version = tuple[int, ...]
#: before every version, and after every version: the open ends of a version window
EARLIEST: Version = ()
LATEST: Version = (10**9,)


def parse_version(text: str | None) -> Version | None:
    """``'0.17'`` → ``(0, 17)``; ``'2025-04'`` → ``(2025, 4)``; None stays None."""
    if text is None:
        return None
    parts = re.findall(r"\d+", text)
    return tuple(int(p) for p in parts) if parts else None


@dataclass(frozen=True)
class Context:
    """What is known about the run when its keys are mapped."""

    framework: str | None = None
    algorithm: str | None = None
    family: str | None = None
    version_low: Version = EARLIEST
    version_high: Version = LATEST


@dataclass(frozen=True)
class Resolved:
    """The canonical reading of one raw key."""

    raw: str
    canonical: str
    metric: Metric
    scale: float = 1.0
    alias: Alias | None = None
    via: str = "exact"
    split: str = "train"


@dataclass
class _Candidate:
    metric: Metric
    alias: Alias | None
    groups: dict[str, str] = field(default_factory=dict)


def _fill(template: str, groups: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: groups.get(m.group(1), m.group(0)), template)


def _ambiguous(key: str, framework: str | None, read_as: str, note: str) -> Words:
    """The note on a key whose meaning changed across ``framework``'s versions, read as ``read_as``; the
    chosen alias' ``note`` is the catalog's English, marked so in the Chinese.

    Example:
        >>> _ambiguous("reward_std", "trl", "reward/std", "").zh
        "'reward_std' 在 trl 的不同版本里含义不同；这份日志看不出版本，所以按 'reward/std' 读取"
    """
    where = f"在 {framework} 的不同版本里" if framework else "在不同的框架版本里"
    return Words(f"{key!r} means different things across {framework or 'framework'} versions; "
                 f"the version is not visible in this log, so it was read as {read_as!r}"
                 + (f" ({note})" if note else ""),
                 f"{key!r} {where}含义不同；这份日志看不出版本，所以按 {read_as!r} 读取"
                 + (f"（英文原文：{note}）" if note else ""))


class KeyResolver:
    """Resolves raw keys for one catalog; build once, call per run context."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._exact: dict[str, list[tuple[Metric, Alias | None]]] = defaultdict(list)
        self._patterns: list[tuple[Metric, Alias]] = []
        for metric in catalog.metrics.values():
            if not metric.is_template:
                self._exact[metric.key].append((metric, None))
            for alias in metric.aliases:
                if alias.name is not None:
                    self._exact[alias.name].append((metric, alias))
                else:
                    self._patterns.append((metric, alias))

    # -- candidates -------------------------------------------------------------------------
    def candidates(self, key: str) -> list[_Candidate]:
        """Every catalog reading of ``key`` before context filtering (no manglings)."""
        found = [_Candidate(m, a, dict(a.bind) if a is not None else {}) for m, a in self._exact.get(key, ())]
        if found:
            return found
        for metric, alias in self._patterns:
            assert alias.regex is not None
            hit = alias.regex.fullmatch(key)
            if hit:
                groups = {k: v for k, v in hit.groupdict().items() if v is not None}
                for name, value in alias.bind:
                    groups[name] = _fill(value, groups)
                found.append(_Candidate(metric, alias, groups))
        for metric in self.catalog.templates:
            assert metric.regex is not None
            hit = metric.regex.fullmatch(key)
            if hit:
                found.append(_Candidate(metric, None, dict(hit.groupdict())))
        return found

    def version_range(self, key: str, framework: str) -> tuple[Version, Version] | None:
        """The framework versions in which ``key`` is a known name, or None if unbounded/unknown."""
        lows: list[Version] = []
        highs: list[Version] = []
        for cand in self.candidates(key):
            alias = cand.alias
            if alias is None or alias.framework != framework:
                continue
            lows.append(parse_version(alias.since) or EARLIEST)
            highs.append(parse_version(alias.until) or LATEST)
        if not lows:
            return None
        return min(lows), max(highs)

    # -- resolution -------------------------------------------------------------------------
    def resolve(self, key: str, ctx: Context, notes: list[str] | None = None) -> Resolved | None:
        """The canonical reading of ``key`` in ``ctx``, or None when the catalog has none."""
        direct = self._pick(key, self.candidates(key), ctx, notes)
        if direct is not None:
            return direct
        for mangling in self.catalog.manglings:
            if not mangling.match.search(key):
                continue
            inner = mangling.match.sub(mangling.replace, key, count=1)
            if inner == key or not inner:
                continue
            hit = self.resolve(inner, ctx, notes)
            if hit is None:
                continue
            split = "eval" if (mangling.eval_split or hit.split == "eval") else "train"
            canonical = hit.canonical
            if split == "eval" and hit.metric.kind != "eval" and not canonical.startswith("eval/"):
                canonical = "eval/" + canonical
            return Resolved(key, canonical, hit.metric, hit.scale, hit.alias,
                            f"{mangling.backend}:{hit.via}", split)
        return None

    def _pick(self, key: str, found: list[_Candidate], ctx: Context,
              notes: list[str] | None) -> Resolved | None:
        scored: list[tuple[int, _Candidate]] = []
        for cand in found:
            score = self._score(cand.alias, ctx)
            if score is not None:
                scored.append((score, cand))
        if not scored:
            return None
        scored.sort(key=lambda sc: -sc[0])
        best_score, best = scored[0]
        rivals = [c for s, c in scored[1:] if s == best_score and c.metric.key != best.metric.key]
        if rivals:
            defaults = [c for s, c in scored if s == best_score and c.alias is not None and c.alias.default]
            if defaults:
                best = defaults[0]
            if notes is not None:
                notes.append(_ambiguous(key, ctx.framework, _fill(best.metric.key, best.groups),
                                        best.alias.note if best.alias is not None else ""))
        alias = best.alias
        via = "exact" if alias is None or alias.name is not None else "pattern"
        if alias is None and best.metric.is_template:
            via = "pattern"
        canonical = _fill(best.metric.key, best.groups)
        # a template filled in may name a key that has an entry of its own (timing_s/gen)
        metric = self.catalog.metrics.get(canonical, best.metric)
        return Resolved(key, canonical, metric, alias.scale if alias else 1.0, alias, via,
                        "eval" if metric.kind == "eval" else "train")

    @staticmethod
    def _score(alias: Alias | None, ctx: Context) -> int | None:
        """Rank an alias in ``ctx``; None rules it out."""
        if alias is None:
            return 10  # the canonical key itself: right in any framework
        score = 0
        if alias.algo:
            if ctx.algorithm is None and ctx.family is None:
                score -= 1
            elif ctx.algorithm in alias.algo or ctx.family in alias.algo:
                score += 4
            else:
                return None
        if alias.framework == "any" or ctx.framework is None:
            score += 1
        elif alias.framework == ctx.framework:
            score += 3
        # an alias of another framework is still a reading of the same letters
        low = parse_version(alias.since) or EARLIEST
        high = parse_version(alias.until) or LATEST
        if ctx.framework is not None and alias.framework == ctx.framework:
            if high <= ctx.version_low or low >= ctx.version_high:
                return None
            if low <= ctx.version_low and ctx.version_high <= high and (alias.since or alias.until):
                score += 2
        return score
