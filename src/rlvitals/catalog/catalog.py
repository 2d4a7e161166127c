"""The metric catalog: every fact about a metric, loaded from ``catalog.toml``.

The data file holds, per metric, its canonical key, dashboard layer, the three axes of
the multi-scale view, unit, meaning and how to read it in English and Chinese, healthy
range and direction, what to check next, and its aliases per framework and version.
This module only loads and indexes it; it imports nothing else of the package.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..errors import CatalogError, UnknownMetricError
from ..words import Words
from .bundled import bundled_toml

SCALES = ("token", "rollout", "group", "prompt", "batch", "time", "reasoning", "system")
SCOPES = ("token", "rollout", "group", "batch", "run")
VARIES = ("vocabulary", "rollout", "prompt", "time", "rank", "none")
KINDS = ("train", "eval", "bookkeeping")
FRAMEWORKS = ("verl", "openrlhf", "trl", "any")
LANGS = ("en", "zh")
BETTER = ("", "higher", "lower")  # a metric's ``better``: none, or which way its best value lies


@dataclass(frozen=True)
class Layer:
    """A layer of the dashboard: its id, its question in both languages, its short name in both."""

    id: str
    en: str
    zh: str
    short_en: str
    short_zh: str

    def name(self, lang: str = "en") -> str:
        return self.zh if lang == "zh" else self.en

    def short(self, lang: str = "en") -> str:
        return self.short_zh if lang == "zh" else self.short_en


@dataclass(frozen=True)
class Text:
    """A metric's words in one language."""

    name: str
    meaning: str
    read: str


@dataclass(frozen=True)
class Alias:
    """One name a framework writes for a metric.

    Exactly one of ``name`` (a literal key) or ``pattern`` (with ``{placeholder}``
    parts) is set. ``algo`` restricts the alias to runs of those algorithm families
    (``rl``, ``preference``, ``reward-model``, ``sft``) or algorithm ids; empty means any.
    ``since``/``until`` bound the framework version (half-open) in which the name has
    this meaning. ``scale`` multiplies the logged value (veRL's ``actor/lr(1e-4)``).
    ``bind`` fills placeholders of the canonical key that the raw key does not carry.
    ``prefer`` says this name is the better reading where a run logged several names of the metric (a
    window's mean beside its last micro-batch's value): its values come first.
    """

    framework: str
    name: str | None = None
    pattern: str | None = None
    algo: tuple[str, ...] = ()
    since: str | None = None
    until: str | None = None
    scale: float = 1.0
    bind: tuple[tuple[str, str], ...] = ()
    default: bool = False
    note: str = ""
    regex: re.Pattern[str] | None = field(default=None, compare=False, repr=False)
    prefer: bool = False


@dataclass(frozen=True)
class Metric:
    """One entry of the catalog. ``key`` may be a template such as
    ``val-core/{source}/{var}/{stat}``; ``regex`` then matches its concrete keys."""

    key: str
    layer: str
    scale: str
    scope: str
    varies: str
    measures: str
    unit: str
    kind: str
    direction: str
    en: Text
    zh: Text
    family: tuple[str, ...] = ()
    healthy_low: float | None = None
    healthy_high: float | None = None
    next: tuple[str, ...] = ()
    source: str = ""
    aliases: tuple[Alias, ...] = ()
    regex: re.Pattern[str] | None = field(default=None, compare=False, repr=False)
    #: which way the metric's best value lies (``higher``, ``lower``), for an outcome a comparison ranks runs
    #: by (reward, validation, a loss); empty where a "best" value would mislead (KL, entropy, length)
    better: str = ""

    def text(self, lang: str = "en") -> Text:
        return self.zh if lang == "zh" else self.en

    @property
    def is_template(self) -> bool:
        return self.regex is not None


@dataclass(frozen=True)
class Mangling:
    """A rewrite a logging backend applies to keys (W&B ``train/`` prefix, MLflow ``@``→``_at_``)."""

    backend: str
    match: re.Pattern[str]
    replace: str
    eval_split: bool = False
    note: str = ""


@dataclass(frozen=True)
class AlgorithmSignature:
    """How to recognise an algorithm from a run's keys and config."""

    id: str
    family: str
    label: str
    #: the algorithm's name in a table column (``GRPO``, ``DPO-family``); ``label`` is its description
    short: str
    #: ``label`` as the Chinese views write it (``label_zh``; the English label where there is none)
    label_zh: str = ""
    config: tuple[tuple[str, tuple[str, ...]], ...] = ()
    keys_any: tuple[str, ...] = ()
    keys_all: tuple[str, ...] = ()
    keys_none: tuple[str, ...] = ()
    frameworks: tuple[str, ...] = ()
    #: config keys only this algorithm's trainer has (any value, even None, says it)
    config_keys: tuple[str, ...] = ()
    #: two keys whose logged values differ on most steps (returns vs advantages: a discounted return)
    values_differ: tuple[str, ...] = ()
    #: two keys whose values keep one ratio on every step (rewards = β·logps: reference-free rewards)
    values_proportional: tuple[str, ...] = ()


@dataclass(frozen=True)
class FrameworkSignature:
    """How to recognise a framework whose keys are the canonical names themselves (no alias votes
    for it): the namespaces it logs under, and the config sections only it has."""

    id: str
    key_prefixes: tuple[str, ...] = ()
    config_prefixes: tuple[str, ...] = ()
    #: how many keys under its namespaces it takes
    min_keys: int = 3


@dataclass(frozen=True)
class Catalog:
    """The loaded catalog with its indexes."""

    metrics: dict[str, Metric]
    manglings: tuple[Mangling, ...]
    algorithms: tuple[AlgorithmSignature, ...]
    placeholders: dict[str, str]
    templates: tuple[Metric, ...]
    #: a metric's ``unit`` as the Chinese pages write it (``units_zh`` in the catalog file)
    units_zh: dict[str, str] = field(default_factory=dict)
    frameworks: tuple[FrameworkSignature, ...] = ()
    #: every layer by id (``[layers]``), and the dashboard's layers in reading order (the layers of a verdict)
    layers: dict[str, Layer] = field(default_factory=dict)
    reading_order: tuple[str, ...] = ()
    #: an algorithm family (``rl``, ``preference`` …) as the Chinese views name it (``families_zh``)
    families_zh: dict[str, str] = field(default_factory=dict)
    #: a metric's ``direction`` and ``measures``, and the words of the axes (scale, scope, varies), as the
    #: Chinese views write them (``directions_zh``, ``measures_zh``, ``axes_zh``)
    directions_zh: dict[str, str] = field(default_factory=dict)
    measures_zh: dict[str, str] = field(default_factory=dict)
    axes_zh: dict[str, str] = field(default_factory=dict)
    #: what a reward function pays for, read from its name (``reward_roles``): role → the words of a name that
    #: say it (``{"accuracy": ("accuracy", "correct", …)}``; docs/reading-rules.md#reward-component-hacking)
    reward_roles: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def unit(self, metric: Metric, lang: str = "en") -> str:
        """``metric``'s unit in ``lang`` (the English words where the catalog has no translation).

        Example:
            >>> c = load_catalog(); c.unit(c.get("timing_s/gen"), "zh")
            '秒'
        """
        return self.units_zh.get(metric.unit, metric.unit) if lang == "zh" else metric.unit

    def algorithm_short(self, algorithm: str) -> str | None:
        """The short name of a detected algorithm id (``Run.algorithm``) for a table column; None for an
        id the catalog has no signature of (``unknown``).

        Example:
            >>> c = load_catalog(); c.algorithm_short("dpo-family"), c.algorithm_short("unknown")
            ('DPO-family', None)
        """
        return next((a.short for a in self.algorithms if a.id == algorithm), None)

    def words(self, kind: str, text: str, lang: str = "en") -> str:
        """A metric fact in ``lang``: its ``direction``, its ``measures``, or the word of an axis
        (``axis``: a scale, scope or varies value); the English where the catalog has no translation.

        Example:
            >>> c = load_catalog(); c.words("direction", "rises steadily", "zh"), c.words("axis", "vocabulary", "zh")
            ('稳步上升', '词表')
        """
        if lang != "zh":
            return text
        table = {"direction": self.directions_zh, "measures": self.measures_zh, "axis": self.axes_zh}[kind]
        return table.get(text, text)

    def algorithm_label(self, label: str, lang: str = "en") -> str:
        """A detected algorithm's description (``Run.algorithm_label``) in ``lang``: the ``label_zh`` of
        the signature with that label; the label itself in English or where there is no translation.

        Example:
            >>> load_catalog().algorithm_label("PPO with a critic (GAE)", "zh")
            '带 critic 的 PPO（GAE）'
        """
        if lang != "zh":
            return label
        if label == "unknown":
            return "未识别"
        return next((a.label_zh for a in self.algorithms if a.label == label and a.label_zh), label)

    def family_name(self, family: str, lang: str = "en") -> str:
        """An algorithm family id in ``lang`` (the id itself in English).

        Example:
            >>> load_catalog().family_name("preference", "zh")
            '偏好优化'
        """
        return self.families_zh.get(family, family) if lang == "zh" else family

    def find(self, key: str) -> Metric | None:
        """The entry a canonical key belongs to (exact, else by template), or None."""
        hit = self.metrics.get(key)
        if hit is not None:
            return hit
        for metric in self.templates:
            assert metric.regex is not None
            if metric.regex.fullmatch(key):
                return metric
        return None

    def get(self, key: str) -> Metric:
        """Like :meth:`find` but raises :class:`UnknownMetricError` with a hint."""
        hit = self.find(key)
        if hit is None:
            raise UnknownMetricError(Words(
                f"metric {key!r} is not in the catalog; run 'rlvitals explain --list' to see every canonical key",
                f"指标 {key!r} 不在指标目录中；运行 'rlvitals explain --list' 可以查看全部规范键名"))
        return hit


def compile_template(template: str, placeholders: dict[str, str]) -> re.Pattern[str]:
    """Turn ``val-core/{source}/{var}/{stat}`` into a regex with named groups."""
    out: list[str] = []
    pos = 0
    for m in re.finditer(r"\{(\w+)\}", template):
        out.append(re.escape(template[pos : m.start()]))
        name = m.group(1)
        if name not in placeholders:
            raise CatalogError(f"catalog: unknown placeholder {{{name}}} in {template!r}")
        out.append(f"(?P<{name}>{placeholders[name]})")
        pos = m.end()
    out.append(re.escape(template[pos:]))
    return re.compile("".join(out))


def _text(raw: Any, where: str) -> Text:
    if not isinstance(raw, dict) or not all(raw.get(k) for k in ("name", "meaning", "read")):
        raise CatalogError(f"catalog: {where} needs name, meaning and read")
    return Text(str(raw["name"]), str(raw["meaning"]).strip(), str(raw["read"]).strip())


def _tuple(raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str):
        return (raw,)
    return tuple(str(x) for x in raw)


def _alias(raw: dict[str, Any], key: str, placeholders: dict[str, str]) -> Alias:
    name, pattern = raw.get("name"), raw.get("pattern")
    if (name is None) == (pattern is None):
        raise CatalogError(f"catalog: alias of {key!r} needs exactly one of name/pattern: {raw}")
    framework = raw.get("framework", "any")
    if framework not in FRAMEWORKS:
        raise CatalogError(f"catalog: alias {name or pattern!r} of {key!r} has framework {framework!r}")
    bind = tuple(sorted((str(k), str(v)) for k, v in raw.get("bind", {}).items()))
    return Alias(
        framework=framework,
        name=name,
        pattern=pattern,
        algo=_tuple(raw.get("algo")),
        since=raw.get("since"),
        until=raw.get("until"),
        scale=float(raw.get("scale", 1.0)),
        bind=bind,
        default=bool(raw.get("default", False)),
        note=str(raw.get("note", "")),
        regex=compile_template(pattern, placeholders) if pattern else None,
        prefer=bool(raw.get("prefer", False)),
    )


def _layers(raw: Any) -> tuple[dict[str, Layer], tuple[str, ...]]:
    """The ``[layers]`` table: ``order`` (the reading order) and one table of words per layer id."""
    if not isinstance(raw, dict) or not isinstance(raw.get("order"), list) or not raw["order"]:
        raise CatalogError("catalog: [layers] needs order = [layer ids in reading order] and a [layers.<id>] "
                           "table per layer")
    layers = {}
    for lid, words in raw.items():
        if lid == "order":
            continue
        fields = ("en", "zh", "short_en", "short_zh")
        if not isinstance(words, dict) or not all(isinstance(words.get(k), str) and words[k] for k in fields):
            raise CatalogError(f"catalog: [layers.{lid}] needs {', '.join(fields)}")
        layers[str(lid)] = Layer(str(lid), *(str(words[k]) for k in fields))
    order = tuple(str(x) for x in raw["order"])
    unknown = [x for x in order if x not in layers]
    if unknown or len(set(order)) != len(order):
        raise CatalogError(f"catalog: [layers] order = {list(order)} names layers without a table or twice: "
                           f"{unknown or sorted(x for x in order if order.count(x) > 1)}")
    return layers, order


def _metric(raw: dict[str, Any], placeholders: dict[str, str], layers: tuple[str, ...]) -> Metric:
    key = raw.get("key")
    if not key:
        raise CatalogError(f"catalog: metric without key: {raw}")
    for fieldname, allowed in (("layer", layers), ("scale", SCALES), ("scope", SCOPES),
                               ("varies", VARIES), ("kind", KINDS)):
        if raw.get(fieldname) not in allowed:
            raise CatalogError(f"catalog: {key!r} has {fieldname}={raw.get(fieldname)!r}; expected one of {allowed}")
    if raw.get("better", "") not in BETTER:
        raise CatalogError(f"catalog: {key!r} has better={raw.get('better')!r}; expected one of {BETTER[1:]}")
    healthy = raw.get("healthy", {})
    templated = "{" in key
    return Metric(
        key=key,
        layer=raw["layer"],
        scale=raw["scale"],
        scope=raw["scope"],
        varies=raw["varies"],
        measures=str(raw.get("measures", "")),
        unit=str(raw.get("unit", "")),
        kind=raw["kind"],
        direction=str(raw.get("direction", "")),
        en=_text(raw.get("en"), f"{key!r} en"),
        zh=_text(raw.get("zh"), f"{key!r} zh"),
        family=_tuple(raw.get("family")),
        healthy_low=healthy.get("low"),
        healthy_high=healthy.get("high"),
        next=_tuple(raw.get("next")),
        source=str(raw.get("source", "")),
        aliases=tuple(_alias(a, key, placeholders) for a in raw.get("alias", [])),
        regex=compile_template(key, placeholders) if templated else None,
        better=str(raw.get("better", "")),
    )


def _short(raw: dict[str, Any]) -> str:
    short = raw.get("short")
    if not isinstance(short, str) or not short.strip():
        raise CatalogError(f"catalog: algorithm {raw.get('id')!r} ({raw.get('label')!r}) has no short name; add "
                           "short = \"NAME\" (its name in the run tables, e.g. \"GRPO\")")
    return short.strip()


def _same_short(algorithms: tuple[AlgorithmSignature, ...]) -> None:
    """One id, one short name: the tables look the short name up by the detected id."""
    seen: dict[str, str] = {}
    for a in algorithms:
        if seen.setdefault(a.id, a.short) != a.short:
            raise CatalogError(f"catalog: algorithm {a.id!r} has the short names {seen[a.id]!r} and {a.short!r}; "
                               "give every signature of one id the same short name")


def parse_catalog(data: dict[str, Any]) -> Catalog:
    """Build a :class:`Catalog` from the parsed TOML document, validating every entry."""
    placeholders = {str(k): str(v) for k, v in data.get("placeholders", {}).items()}
    layers, order = _layers(data.get("layers"))
    metrics: dict[str, Metric] = {}
    for raw in data.get("metric", []):
        metric = _metric(raw, placeholders, tuple(layers))
        if metric.key in metrics:
            raise CatalogError(f"catalog: metric {metric.key!r} is defined twice")
        metrics[metric.key] = metric
    manglings = tuple(
        Mangling(
            backend=str(m["backend"]),
            match=re.compile(m["match"]),
            replace=str(m.get("replace", "")),
            eval_split=bool(m.get("eval", False)),
            note=str(m.get("note", "")),
        )
        for m in data.get("mangling", [])
    )
    algorithms = tuple(
        AlgorithmSignature(
            id=str(a["id"]),
            family=str(a["family"]),
            label=str(a["label"]),
            short=_short(a),
            label_zh=str(a.get("label_zh", "")),
            config=tuple((str(k), _tuple(v)) for k, v in a.get("config", {}).items()),
            keys_any=_tuple(a.get("keys_any")),
            keys_all=_tuple(a.get("keys_all")),
            keys_none=_tuple(a.get("keys_none")),
            frameworks=_tuple(a.get("frameworks")),
            config_keys=_tuple(a.get("config_keys")),
            values_differ=_tuple(a.get("values_differ")),
            values_proportional=_tuple(a.get("values_proportional")),
        )
        for a in data.get("algorithm", [])
    )
    _same_short(algorithms)
    templates = tuple(m for m in metrics.values() if m.is_template)
    units_zh = {str(k): str(v) for k, v in data.get("units_zh", {}).items()}
    frameworks = tuple(FrameworkSignature(str(f["id"]), _tuple(f.get("key_prefixes")),
                                          _tuple(f.get("config_prefixes")), int(f.get("min_keys", 3)))
                       for f in data.get("framework", []))
    zh = {name: {str(k): str(v) for k, v in data.get(name, {}).items()}
          for name in ("families_zh", "directions_zh", "measures_zh", "axes_zh")}
    roles = {str(k): tuple(str(w).lower() for w in _tuple(v)) for k, v in data.get("reward_roles", {}).items()}
    return Catalog(metrics, manglings, algorithms, placeholders, templates, units_zh, frameworks, layers, order,
                   **zh, reward_roles=roles)


@lru_cache(maxsize=1)
def load_catalog() -> Catalog:
    """The catalog shipped with the package (parsed once per process)."""
    return parse_catalog(bundled_toml(__package__, "catalog.toml"))
