"""A run's config: Hydra's ``overrides.yaml`` beside a console log, and a tracker's nested config dotted.

Config a console log does not print but keeps beside it: Hydra's ``overrides.yaml``.

Hydra writes the command-line overrides of every job to ``<output dir>/.hydra/overrides.yaml``
(one ``- key=value`` per line); veRL runs under Hydra, and a W&B run folder of a veRL run often
sits next to it. When a console log prints no config (a W&B ``output.log`` starts after the
dump; a run that died before it printed one), those overrides are the only record of what the
run was asked to do — the algorithm (``algorithm.adv_estimator=grpo``) among them.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from ..words import Words
from .record import SkipLog, SourceMeta

OVERRIDES = "overrides.yaml"
_ITEM = re.compile(r"^- +(?P<quote>['\"]?)(?P<body>.*?)(?P=quote)\s*$")
_PAIR = re.compile(r"\+{0,2}([A-Za-z_][\w-]*(?:\.[\w-]+)*)=(.*)", re.S)
#: an overrides file is a few KiB; anything larger is not one
MAX_BYTES = 1 << 20


def hydra_scalar(text: str) -> Any:
    """A Hydra override's scalar value: a bool, None, an int, a float, else the text.

    >>> hydra_scalar("1e-6"), hydra_scalar("True"), hydra_scalar("null"), hydra_scalar("grpo")
    (1e-06, True, None, 'grpo')
    """
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("null", "none", "~"):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_overrides(text: str) -> dict[str, Any]:
    """``key -> value`` of a Hydra ``overrides.yaml`` (lines ``- key=value``; others are ignored).

    Example:
        >>> parse_overrides("- algorithm.adv_estimator=grpo\\n- +trainer.n_gpus=8\\n- 'data.x=[1, 2]'\\n")
        {'algorithm.adv_estimator': 'grpo', 'trainer.n_gpus': 8, 'data.x': '[1, 2]'}
    """
    out: dict[str, Any] = {}
    for line in text.splitlines():
        item = _ITEM.match(line)
        pair = _PAIR.fullmatch(item["body"]) if item else None
        if pair is not None:
            out[pair.group(1)] = hydra_scalar(pair.group(2).strip())
    return out


def sibling_overrides(log: Path, meta: SourceMeta) -> dict[str, Any]:
    """The overrides in an ``overrides.yaml`` beside ``log`` (or in ``.hydra/`` beside it), with a
    note naming the file; empty when there is none or it cannot be read."""
    for candidate in (log.parent / OVERRIDES, log.parent / ".hydra" / OVERRIDES):
        try:
            if not candidate.is_file() or candidate.stat().st_size > MAX_BYTES:
                continue
            text = candidate.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            meta.notes.append(Words(
                f"{candidate}: could not be read ({exc.strerror or exc}); its overrides were ignored",
                f"{candidate}：读不出来（{exc.strerror or exc}）；其中的覆盖项没有采用"))
            continue
        found = parse_overrides(text)
        if found:
            meta.notes.append(Words(
                f"{candidate}: {len(found)} Hydra overrides beside the log were read as its config",
                f"{candidate}：日志旁的 {len(found)} 个 Hydra 覆盖项已作为它的配置读入"))
            return found
    return {}


#: how deep a tracker's config may nest (dicts and lists): a value nested deeper is left out, and counted.
#: No real config nests past a few levels; a value nested thousands deep would exhaust the stack of the
#: code that flattens it, or of any that writes it out again (JSON output, the state file)
MAX_DEPTH = 64
#: how many values a config may hold: YAML's aliases can make a file of a few lines hold billions
MAX_VALUES = 100_000
#: why a config value was left out: too deep, or past :data:`MAX_VALUES`
Cut = tuple[str, Literal["deep", "many"]]


class _TooDeep:
    """A value a parser left out because it nests past :data:`MAX_DEPTH` (:data:`TOO_DEEP`)."""

    def __repr__(self) -> str:
        return "TOO_DEEP"


TOO_DEEP = _TooDeep()


def dotted(key: str, value: Any, out: dict[str, Any], depth: int = 0) -> list[Cut]:
    """A tracker's config entry into ``out`` with dots between its keys (``{"a": {"b": 1}}`` is ``a.b``); an
    empty dict stays a value. What was left out (the rest is kept; the caller counts it, :func:`too_deep`):
    each value nested deeper than :data:`MAX_DEPTH` (or :data:`TOO_DEEP`, cut by a parser), and each past
    :data:`MAX_VALUES`, with its key.

    >>> out = {}; dotted("algorithm", {"adv_estimator": "grpo", "kl": {}}, out), out
    ([], {'algorithm.adv_estimator': 'grpo', 'algorithm.kl': {}})
    >>> deep = {}; inner = deep
    >>> for _ in range(100): inner["x"] = {}; inner = inner["x"]
    >>> out = {}; [(key[:10], why) for key, why in dotted("a", {"deep": deep, "lr": 0.1}, out)], out
    ([('a.deep.x.x', 'deep')], {'a.lr': 0.1})
    """
    if len(out) >= MAX_VALUES:
        return [(key, "many")]
    if isinstance(value, dict) and value:
        if depth >= MAX_DEPTH:
            return [(key, "deep")]
        cut: list[Cut] = []
        for k, v in value.items():
            cut += dotted(f"{key}.{k}", v, out, depth + 1)
        return cut
    deeper = _deeper(value, MAX_DEPTH - depth)
    if deeper is not None:
        return [(key, deeper)]
    out[key] = value
    return []


def _deeper(value: Any, levels: int) -> Literal["deep", "many"] | None:
    """Whether ``value`` nests lists and dicts more than ``levels`` deep (``deep``), or holds more than
    :data:`MAX_VALUES` values (``many``: aliases can repeat one list everywhere); looked at without recursion."""
    stack, seen = [(value, 0)], 0
    while stack:
        item, level = stack.pop()
        seen += 1
        if item is TOO_DEEP or (isinstance(item, (list, tuple, dict)) and level >= levels):
            return "deep"
        if seen > MAX_VALUES:
            return "many"
        if isinstance(item, (list, tuple, dict)):
            stack.extend((v, level + 1) for v in (item.values() if isinstance(item, dict) else item))
    return None


def too_deep(where: str, cut: list[Cut], skips: SkipLog) -> None:
    """Counted skips at ``where`` (the config's file or record) for what :func:`dotted` left out: one for each
    value nested too deep, one for all those past :data:`MAX_VALUES`."""
    def shown(key: str) -> str:
        return repr(key if len(key) <= 80 else key[:80] + "…")

    for key, _ in (c for c in cut if c[1] == "deep"):
        skips.skip(where, Words(f"the config value {shown(key)} nests deeper than {MAX_DEPTH} levels; it was left "
                                "out (the rest of the config was read)",
                                f"配置项 {shown(key)} 的嵌套超过 {MAX_DEPTH} 层；已略去（其余配置照常读取）"))
    many = [key for key, why in cut if why == "many"]
    if many:
        skips.skip(where, Words(f"the config holds more than {MAX_VALUES} values (YAML aliases can repeat one value "
                                f"a billion times); the rest, {len(many)} entr{'y' if len(many) == 1 else 'ies'} from "
                                f"{shown(many[0])} on, was left out",
                                f"配置里的值超过 {MAX_VALUES} 个（YAML 别名能把一个值重复十亿次）；其余部分，"
                                f"即从 {shown(many[0])} 起的 {len(many)} 项，已略去"))


def capped_yaml(text: str) -> Any:
    """``text`` read by PyYAML's safe loader, except that a node nested deeper than :data:`MAX_DEPTH` is
    :data:`TOO_DEEP` (its events passed over without composing them): PyYAML composes a document by
    recursion, so a config nested a few hundred levels deep raised RecursionError. Raises ``yaml.YAMLError``.

    >>> doc = capped_yaml("a: {b: 1}\\nc: " + "[" * 100 + "]" * 100)
    >>> doc["a"], str(doc["c"]).count("["), str(doc["c"]).endswith("[TOO_DEEP" + "]" * 63)
    ({'b': 1}, 63, True)
    """
    loader = _capped_loader()(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


_DEEP_TAG = "tag:rlvitals,2025:too-deep"


@lru_cache(maxsize=1)
def _capped_loader() -> Any:
    import yaml  # type: ignore[import-untyped]  # PyYAML (no stubs here): imported for a config file only

    class Capped(yaml.SafeLoader):  # type: ignore[misc]
        depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.depth >= MAX_DEPTH:
                level = 0
                while True:  # the node's events, to its end
                    event = self.get_event()
                    level += isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent))
                    level -= isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent))
                    if level == 0:
                        return yaml.ScalarNode(_DEEP_TAG, "")
            self.depth += 1
            try:
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    Capped.add_constructor(_DEEP_TAG, lambda loader, node: TOO_DEEP)
    return Capped
