"""What ``rlvitals explain`` says about a metric: the catalog entry for a key or any alias."""

from __future__ import annotations

from typing import Any

from ..errors import UnknownMetricError
from ..words import Words
from .aliases import Context, KeyResolver, Resolved
from .catalog import Catalog, Metric, load_catalog


def lookup(key: str, catalog: Catalog | None = None, lang: str = "en") -> tuple[Metric, str, list[str]]:
    """``(entry, canonical key, how it was reached)`` for a canonical key or any alias; ``how`` in ``lang``.
    An unknown key raises :class:`UnknownMetricError`, in English and Chinese, with the keys it is close to."""
    catalog = catalog or load_catalog()
    hit = catalog.find(key)
    if hit is not None:
        return hit, key, []
    resolver = KeyResolver(catalog)
    res = resolver.resolve(key, Context())
    if res is None:
        close = near_misses(key, catalog)
        hint = Words(f" Did you mean {' or '.join(close)}?", f"是不是想找 {'、'.join(close)}？") if close \
            else Words("", "")
        raise UnknownMetricError(Words(
            f"{key!r} is neither a canonical metric nor an alias of one.{hint} "
            "Run 'rlvitals explain --list' to see every metric.",
            f"{key!r} 既不是已收录的指标，也不是它们的别名。{hint.zh}"
            "运行 'rlvitals explain --list' 可以查看全部指标。"))
    return res.metric, res.canonical, _how(key, res, lang)


#: how an alias was matched (``Resolved.via``: ``exact``, ``pattern``, after a backend's renaming ``hf:exact``)
_VIA_ZH = {"exact": "名称完全一致", "pattern": "按名称模式匹配"}
#: the words of how a key was reached, per language; an alias's note is English only, marked so in Chinese (as the
#: report does)
_HOW = {
    "en": {"alias": "{key!r} is an alias of {canonical!r} (via {via})", "any": "any", "versions": ", versions {a}–{b}",
           "note": ": {note}", "scale": "logged values are multiplied by {scale:g}",
           "eval": "logged on the evaluation split"},
    "zh": {"alias": "{key!r} 是 {canonical!r} 的别名（{via}）", "any": "各框架通用", "versions": "，版本 {a}–{b}",
           "note": "；说明（英文原文）：{note}", "scale": "记录的值要乘以 {scale:g}", "eval": "这是评测集上记录的值"},
}


def _via(via: str, lang: str) -> str:
    if lang != "zh":
        return via
    *backend, how = via.split(":")
    return (f"还原 {backend[0]} 的改名后" if backend else "") + _VIA_ZH.get(how, how)


def _how(key: str, res: Resolved, lang: str) -> list[str]:
    """How ``key`` was reached: the alias it matched, where and in which versions it is logged, its scale and
    its split, in ``lang``."""
    w = _HOW[lang]
    how = [w["alias"].format(key=key, canonical=res.canonical, via=_via(res.via, lang))]
    if res.alias is not None:
        alias = res.alias
        where = w["any"] if alias.framework == "any" else alias.framework
        if alias.since or alias.until:
            where += w["versions"].format(a=alias.since or "…", b=alias.until or "…")
        how.append(where + (w["note"].format(note=alias.note) if alias.note else ""))
        if alias.scale != 1.0:
            how.append(w["scale"].format(scale=alias.scale))
    if res.split == "eval":
        how.append(w["eval"])
    return how


#: where the reading rules are written down, in the repository: a metric's ``source`` names an entry of it by its
#: anchor (``#kl-band``), and that entry says in the project's words which rule reads the metric and where it comes from
RULES_DOC = "docs/reading-rules.md"


def cited(source: str) -> str:
    """A catalog ``source`` as a user reads it: the entries of the reading rules it names (``#anchor``) as links a
    reader can open in the repository, then where the metric is named.

    Example:
        >>> cited("#kl-band; metric dictionary §2.4; multi-scale view §2")
        'docs/reading-rules.md#kl-band — metric dictionary §2.4; multi-scale view §2'
        >>> cited("#named-only; veRL verl/trainer/ppo/ray_trainer.py")
        'docs/reading-rules.md#named-only — veRL verl/trainer/ppo/ray_trainer.py'
    """
    parts = [part.strip() for part in source.split(";") if part.strip()]
    links = ", ".join(RULES_DOC + part for part in parts if part.startswith("#"))
    named = "; ".join(part for part in parts if not part.startswith("#"))
    return " — ".join(said for said in (links, named) if said)


def near_misses(key: str, catalog: Catalog, limit: int = 3) -> list[str]:
    """The canonical keys and framework names closest to a key the catalog does not know (a typo, a
    name half remembered), best first."""
    from rapidfuzz import fuzz, process

    names = {k for k in catalog.metrics if "{" not in k}
    names |= {a.name for m in catalog.metrics.values() for a in m.aliases if a.name}
    def score(typed: str, name: str, **_: object) -> float:
        # a key typed without its prefix ("kl_los") is compared with the names' last part too
        whole = fuzz.ratio(typed, name)
        return whole if "/" in typed else max(whole, fuzz.ratio(typed, name.rsplit("/", 1)[-1]) - 5)

    found = process.extract(key, sorted(names), scorer=score, limit=limit, score_cutoff=75)
    return [repr(name) for name, _, _ in found]


def metric_info(metric: Metric, canonical: str, lang: str, how: list[str]) -> dict[str, Any]:
    text = metric.text(lang)
    return {
        "key": canonical,
        "entry": metric.key,
        "name": text.name,
        "meaning": text.meaning,
        "read": text.read,
        "layer": metric.layer,
        "scale": metric.scale,
        "axes": {"scope": metric.scope, "varies": metric.varies, "measures": metric.measures},
        "unit": metric.unit,
        "kind": metric.kind,
        "direction": metric.direction,
        "healthy": {"low": metric.healthy_low, "high": metric.healthy_high}
        if metric.healthy_low is not None or metric.healthy_high is not None else None,
        "family": list(metric.family),
        "next": list(metric.next),
        "source": cited(metric.source),
        "aliases": [
            {k: v for k, v in {
                "name": a.name, "pattern": a.pattern, "framework": a.framework,
                "algo": list(a.algo) or None, "since": a.since, "until": a.until,
                "scale": a.scale if a.scale != 1.0 else None, "note": a.note or None,
            }.items() if v is not None}
            for a in metric.aliases
        ],
        "resolved": how,
    }


def explain(key: str, lang: str = "en") -> dict[str, Any]:
    metric, canonical, how = lookup(key, lang=lang)
    return metric_info(metric, canonical, lang, how)


def list_metrics(lang: str = "en") -> list[dict[str, str]]:
    catalog = load_catalog()
    return [
        {"key": m.key, "layer": m.layer, "scale": m.scale, "name": m.text(lang).name}
        for m in catalog.metrics.values()
    ]
