"""The settings of the rollout analysis, as two frozen values checked when they are made.

:class:`RolloutOptions` is what the metric families compute with (the k, the tags, the caps, the
ID/OOD sources); it travels inside every mergeable :class:`~rlvitals.rollout.analysis.RolloutState`.
:class:`RolloutSettings` is everything a user sets about rollouts: how to read them (the column map,
the group size, TRL's reward weights) and those options, with ``ks="all"`` allowed. It is the one
value that ``rlvitals rollouts`` and the ``--rollouts`` of ``diagnose``, ``report``, ``export``,
``watch`` and ``serve`` are built into, so every place that reads rollouts reads them alike.

>>> RolloutSettings(ks="all", tool_call_cap=2).options_for(largest_group=3).ks
(1, 2, 3)
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..words import Words
from .tags import SegmentTags

if TYPE_CHECKING:  # the readers (polars) come in when rollouts are read, not with the settings
    from .readers import ColumnMap, Progress, RewardWeights, RolloutSet

__all__ = ["DEFAULT_KS", "RolloutOptions", "RolloutSettings", "ToolSchemas", "frozen_schemas", "source_names"]

DEFAULT_KS = (1, 2, 4, 8, 16)


def source_names(value: Sequence[str], name: str = "id_sources") -> tuple[str, ...]:
    """``value`` as a tuple of distinct data-source names; ValueError for a bare string or an empty name.

    >>> source_names(["gsm8k", "math", "gsm8k"])
    ('gsm8k', 'math')
    """
    if isinstance(value, str) or any(not isinstance(v, str) or not v for v in value):
        raise ValueError(Words(f"{name} must be a list of data-source names, got {value!r}",
                               f"{name} 必须是数据源名称的列表，给的是 {value!r}"))
    return tuple(dict.fromkeys(value))


#: the tools' argument schemas: name → JSON schema, or the sorted ``(name, JSON text)`` pairs they are kept as
ToolSchemas = tuple[tuple[str, str], ...] | Mapping[str, Mapping[str, object]]


def frozen_schemas(value: ToolSchemas | None) -> tuple[tuple[str, str], ...]:
    """Tool schemas as sorted ``(name, JSON text)`` pairs: a value the frozen options can hold and compare.

    >>> frozen_schemas({"calc": {"type": "object", "required": ["x"]}})
    (('calc', '{"required": ["x"], "type": "object"}'),)
    """
    if isinstance(value, Mapping):
        items = [(str(k), json.dumps(v, sort_keys=True)) for k, v in value.items() if isinstance(v, Mapping)]
        if len(items) != len(value):
            raise ValueError(Words(f"tool_schemas must map each tool's name to a JSON schema (an object), got "
                                   f"{dict(value)!r}",
                                   f"tool_schemas 必须把每个工具名映射到一个 JSON schema（对象），给的是 "
                                   f"{dict(value)!r}"))
        return tuple(sorted(items))
    pairs = tuple(value or ())
    if any(not (isinstance(p, tuple) and len(p) == 2 and all(isinstance(x, str) for x in p)) for p in pairs):
        raise ValueError(Words(f"tool_schemas must be a mapping of tool name to JSON schema, got {value!r}",
                               f"tool_schemas 必须是从工具名到 JSON schema 的映射，给的是 {value!r}"))
    return tuple(sorted(pairs))


def _whole(value: object, at_least: int = 1) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= at_least


@dataclass(frozen=True)
class RolloutOptions:
    """Every setting of the rollout analysis, checked when it is made (``ValueError`` names the bad
    value). ``ks``: the k of ``pass@{k}`` and friends; ``embed``: add ``diversity/embedding_cosine``;
    ``tool_call_cap``: the rollout's tool-call limit, for ``rollout/tool_calls/at_cap``;
    ``segment_tags``: the think / answer / tool-call tags; ``id_sources``: the data sources that are
    in-distribution (``source/{source}/id_gap``, and ``val/id_ood_gap`` by source rather than by
    split); ``ood_sources``: the out-of-distribution ones for ``val/id_ood_gap`` (default: every other);
    ``max_response_length``: the generation limit in tokens, so that a rollout whose token count
    (``length``) reaches it counts as truncated where the ``truncated`` column does not say;
    ``n_states``: the size of the environment's state space, so that ``diversity/state_coverage`` is the
    share of it a group visits (distinct states / ``n_states``) rather than distinct states / visits;
    ``tool_schemas``: the tools offered, name → the JSON schema of their arguments (kept as sorted
    ``(name, JSON)`` pairs), so that ``rollout/tool_calls/valid_args`` also asks a call to fit its tool's schema.

    >>> RolloutOptions(ks=[4, 1], tool_call_cap=3).ks
    (1, 4)
    >>> RolloutOptions(tool_call_cap=0)
    Traceback (most recent call last):
    ...
    ValueError: tool_call_cap must be a whole number >= 1 (the most tool calls a rollout may make), got 0
    """

    ks: tuple[int, ...] = DEFAULT_KS
    embed: bool = False
    tool_call_cap: int | None = None
    segment_tags: SegmentTags = field(default_factory=SegmentTags)
    id_sources: tuple[str, ...] = ()
    ood_sources: tuple[str, ...] | None = None
    max_response_length: int | None = None
    n_states: int | None = None
    tool_schemas: ToolSchemas = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "tool_schemas", frozen_schemas(self.tool_schemas))
        ks = tuple(sorted(set(self.ks)))
        if not ks or any(not _whole(k) for k in ks):
            raise ValueError(Words(f"ks must be positive integers, got {tuple(self.ks)}",
                                   f"ks 必须是正整数，给的是 {tuple(self.ks)}"))
        object.__setattr__(self, "ks", ks)
        cap = self.tool_call_cap
        if cap is not None and not _whole(cap):
            raise ValueError(Words(f"tool_call_cap must be a whole number >= 1 (the most tool calls a rollout may "
                                   f"make), got {cap!r}",
                                   f"tool_call_cap 必须是 >= 1 的整数（一条 rollout 最多可做的工具调用次数），"
                                   f"给的是 {cap!r}"))
        limit = self.max_response_length
        if limit is not None and not _whole(limit):
            raise ValueError(Words(f"max_response_length must be a whole number of tokens >= 1, got {limit!r}",
                                   f"max_response_length 必须是 >= 1 的整数（token 数），给的是 {limit!r}"))
        if self.n_states is not None and not _whole(self.n_states):
            raise ValueError(Words(f"n_states must be a whole number >= 1 (the size of the environment's state "
                                   f"space), got {self.n_states!r}",
                                   f"n_states 必须是 >= 1 的整数（环境状态空间的大小），给的是 {self.n_states!r}"))
        if not isinstance(self.segment_tags, SegmentTags):
            raise ValueError(Words(f"segment_tags must be a rlvitals.rollout.SegmentTags, got {self.segment_tags!r}",
                                   f"segment_tags 必须是 rlvitals.rollout.SegmentTags，给的是 {self.segment_tags!r}"))
        self._check_sources()

    def _check_sources(self) -> None:
        for name in ("id_sources", "ood_sources"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, source_names(value, name))
        if self.ood_sources is not None and not self.id_sources:
            raise ValueError(Words(f"ood_sources {self.ood_sources} need id_sources: the gap is ID minus OOD",
                                   f"ood_sources {self.ood_sources} 需要 id_sources：差距是 ID 减 OOD"))
        both = sorted(set(self.id_sources) & set(self.ood_sources or ()))
        if both:
            raise ValueError(Words(f"the data source(s) {both} are given as both in- and out-of-distribution",
                                   f"数据源 {both} 同时被列为分布内和分布外"))

    def schema_map(self) -> dict[str, Any] | None:
        """``tool_schemas`` as name → schema; None when no tool was described."""
        return {name: json.loads(schema) for name, schema in frozen_schemas(self.tool_schemas)} or None

    def differences(self, other: RolloutOptions) -> str:
        """``"ks (1,) vs (1, 2), embed False vs True"``: the settings in which ``other`` differs."""
        return ", ".join(f"{f.name} {getattr(self, f.name)} vs {getattr(other, f.name)}" for f in fields(self)
                         if getattr(self, f.name) != getattr(other, f.name))


@dataclass(frozen=True)
class RolloutSettings:
    """How rollouts are read and analysed, wherever they are: the reading (``columns``: a column map
    naming or overriding the table's columns; ``group_size``: the expected rollouts per prompt, checked;
    ``reward_weights``: TRL's ``reward_weights``, for TRL completions) and every field of
    :class:`RolloutOptions`, whose ``ks`` may here also be ``"all"``: every k from 1 to the largest
    group of the rollouts read. Checked when made: a bad value raises ``ValueError`` naming it.

    >>> RolloutSettings(group_size=0)
    Traceback (most recent call last):
    ...
    ValueError: group_size must be a whole number of rollouts per prompt >= 1, got 0
    """

    ks: tuple[int, ...] | Literal["all"] = DEFAULT_KS
    columns: ColumnMap | None = None
    group_size: int | None = None
    reward_weights: RewardWeights | None = None
    embed: bool = False
    tool_call_cap: int | None = None
    segment_tags: SegmentTags = field(default_factory=SegmentTags)
    id_sources: tuple[str, ...] = ()
    ood_sources: tuple[str, ...] | None = None
    max_response_length: int | None = None
    n_states: int | None = None
    tool_schemas: ToolSchemas = ()
    #: where a path's shards are folded: ``"local"`` (this process) or ``"ray"`` (a Ray cluster, joined at
    #: ``address``, or a local one started for the run)
    engine: Literal["local", "ray"] = "local"
    address: str | None = None

    def __post_init__(self) -> None:
        if self.engine not in ("local", "ray"):
            raise ValueError(Words(f"engine must be 'local' or 'ray', got {self.engine!r}",
                                   f"engine 必须是 'local' 或 'ray'，给的是 {self.engine!r}"))
        if self.address is not None and self.engine != "ray":
            raise ValueError(Words(f"address={self.address!r} names a Ray cluster: give engine='ray' with it",
                                   f"address={self.address!r} 指的是 Ray 集群：请同时给出 engine='ray'"))
        if self.ks != "all":
            if isinstance(self.ks, str):
                raise ValueError(Words(f"ks must be positive integers or 'all', got {self.ks!r}",
                                       f"ks 必须是正整数或 'all'，给的是 {self.ks!r}"))
            object.__setattr__(self, "ks", tuple(self.ks))
        if self.columns is not None and not isinstance(self.columns, _column_map()):
            raise ValueError(Words(f"columns must be a rollout.readers.ColumnMap, got {self.columns!r}",
                                   f"columns 必须是 rollout.readers.ColumnMap，给的是 {self.columns!r}"))
        if self.group_size is not None and not _whole(self.group_size):
            raise ValueError(Words(f"group_size must be a whole number of rollouts per prompt >= 1, got "
                                   f"{self.group_size!r}",
                                   f"group_size 必须是 >= 1 的整数（每个 prompt 的 rollout 条数），"
                                   f"给的是 {self.group_size!r}"))
        # the analysis options check (and normalise) the rest: sorted k, distinct source names
        options = self.options_for(1)
        for f in fields(RolloutOptions):
            if f.name != "ks" or self.ks != "all":
                object.__setattr__(self, f.name, getattr(options, f.name))

    def options_for(self, largest_group: int) -> RolloutOptions:
        """The analysis options for rollouts whose largest prompt group holds ``largest_group``
        rollouts (used only when ``ks`` is ``"all"``)."""
        ks = tuple(range(1, max(largest_group, 1) + 1)) if self.ks == "all" else self.ks
        given = {f.name: getattr(self, f.name) for f in fields(RolloutOptions) if f.name != "ks"}
        return RolloutOptions(ks=ks, **given)

    def read(self, path: str | Path, progress: Progress | None = None) -> RolloutSet:
        """The rollouts at ``path`` (a dump folder, a step file, a table), read with these settings;
        ``progress`` is told the files read (:func:`~rlvitals.rollout.readers.read_rollouts`)."""
        from .readers import read_rollouts

        return read_rollouts(path, columns=self.columns, group_size=self.group_size,
                             reward_weights=self.reward_weights, progress=progress)


def _column_map() -> type:
    from .readers import ColumnMap

    return ColumnMap
