"""The rollout families as one mergeable state: :class:`RolloutState` with :func:`update` / :func:`merge` /
:func:`compute` is the per-step frame of :func:`~rlvitals.rollout.analysis.analyze_rollouts` as an aggregate
over chunks of whole groups (each family keeps exact partial state), and :func:`overall_chunk` turns a chunk
into one step 0 whose state gives the metrics over the whole table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import polars as pl

from ..words import Words, both
from . import (
    by_source,
    degeneration,
    diversity,
    groups,
    lengths,
    prompts,
    segment_entropy,
    segments,
    splits,
    step_groups,
    tokens,
    tool_turns,
)
from .needs import KEY_NEEDS
from .options import RolloutOptions, RolloutSettings
from .readers import Progress
from .schema import GROUP, LENGTH, RESPONSE, SOURCE, STEP, TRUNCATED

__all__ = ["RolloutState", "compute", "families", "fold", "merge", "overall_chunk", "prepare", "skipped_reasons",
           "table_options", "update"]

@dataclass(frozen=True)
class RolloutState:
    """Mergeable partial state of every rollout family: the options, per step the number of groups and
    rollouts, one state per family (``families``), the families that could not be computed with
    the reason, and the rollout columns the chunks carried (for the keys a family leaves out).

    Shard by group: ``compute(merge(update(None, a), update(None, b)))`` equals the per-step frame of
    :func:`analyze_rollouts` on ``a`` and ``b`` together, bit for bit.

    >>> import polars as pl
    >>> df = pl.DataFrame({"step": [1, 1, 1, 1], "group": ["a", "a", "b", "b"], "sample": [0, 1, 0, 1],
    ...                    "response": ["4", "5", "7", "7"], "score": [1.0, 0.0, 1.0, 1.0]})
    >>> parts = [update(None, df.filter(pl.col("group") == g), ks=(1, 2)) for g in ("a", "b")]
    >>> compute(merge(*parts)).select("groups", "pass@2").row(0)
    (2, 1.0)
    """

    options: RolloutOptions = field(default_factory=RolloutOptions)
    counts: dict[int, tuple[int, int]] = field(default_factory=dict)
    families: dict[str, Any] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    columns: frozenset[str] = frozenset()

    @property
    def ks(self) -> tuple[int, ...]:
        return self.options.ks

    @property
    def embed(self) -> bool:
        return self.options.embed


#: family name → (update with options bound, merge, compute), in the order their columns are joined
_Family = tuple[str, Callable[[Any, pl.DataFrame], Any], Callable[[Any, Any], Any], Callable[[Any], pl.DataFrame]]


def families(o: RolloutOptions, encode: Callable[[Sequence[str]], np.ndarray] | None = None) -> list[_Family]:
    """The families with ``o`` bound; ``encode`` replaces the embedding model's encoder (with ``o.embed``)."""
    return [
        ("group", lambda s, df: groups.update(s, df, ks=o.ks), groups.merge, groups.compute),
        ("step_groups", step_groups.update, step_groups.merge, step_groups.compute),
        ("diversity", lambda s, df: diversity.update(s, df, n_states=o.n_states,
                                                     embed=(encode or _encoder()) if o.embed else None),
         diversity.merge, diversity.compute),
        ("segments", lambda s, df: segments.update(s, df, tags=o.segment_tags, tool_call_cap=o.tool_call_cap),
         segments.merge, segments.compute),
        ("length", lengths.update, lengths.merge, lengths.compute),
        ("prompts", prompts.update, prompts.merge, prompts.compute),
        ("id_ood", _id_ood_update(o), splits.merge, splits.compute),
        ("sources", lambda s, df: by_source.update(s, df, id_sources=o.id_sources), by_source.merge, by_source.compute),
        ("tokens", tokens.update, tokens.merge, tokens.compute),
        ("tool_turns", lambda s, df: tool_turns.update(s, df, tags=o.segment_tags, schemas=o.schema_map()),
         tool_turns.merge,
         tool_turns.compute),
        ("segment_entropy", lambda s, df: segment_entropy.update(s, df, tags=o.segment_tags), segment_entropy.merge,
         segment_entropy.compute),
        ("degeneration", degeneration.update, degeneration.merge, degeneration.compute),
    ]


def _id_ood_update(o: RolloutOptions) -> Callable[[Any, pl.DataFrame], Any]:
    """``val/id_ood_gap`` by data source when the ID sources are given, else by the ``split`` column."""
    if o.id_sources:
        return lambda s, df: splits.update(s, df, id_values=o.id_sources, ood_values=o.ood_sources, by=SOURCE)
    return splits.update


def _encoder() -> Callable[[Sequence[str]], np.ndarray]:
    from .embedding import encode  # loads torch and the model on first use only

    return encode


def _counted(chunk: pl.DataFrame, progress: Progress) -> Callable[[Sequence[str]], np.ndarray]:
    """The embedding model's encoder telling ``progress`` ``("embedding", steps embedded, of how many)``:
    the diversity family encodes the responses of one step at a time, steps without a response not at all."""
    encode = _encoder()
    total = chunk.filter(pl.col(RESPONSE).is_not_null())[STEP].n_unique() if RESPONSE in chunk.columns else 0
    done = 0

    def counted(texts: Sequence[str]) -> np.ndarray:
        nonlocal done
        progress("embedding", done, total)
        out = encode(texts)
        done += 1
        progress("embedding", done, total)
        return out

    return counted


def prepare(df: pl.DataFrame, max_response_length: int | None = None) -> pl.DataFrame:
    """The rollout table as the families read it. With ``max_response_length`` and token counts
    (``length``), ``truncated`` is ``length >= max_response_length`` where the table has no flag (a
    ``truncated`` value, when not null, wins). Then, without token counts, ``length`` is the
    response's length in characters (never compared with the token limit).

    >>> prepare(pl.DataFrame({"length": [10, 512], "truncated": [True, None]}), 512)["truncated"].to_list()
    [True, True]
    """
    if max_response_length is not None and LENGTH in df.columns:
        reached = pl.col(LENGTH) >= max_response_length
        flag = pl.col(TRUNCATED).fill_null(reached) if TRUNCATED in df.columns else reached
        df = df.with_columns(flag.alias(TRUNCATED))
    if LENGTH not in df.columns and RESPONSE in df.columns:
        return df.with_columns(pl.col(RESPONSE).str.len_chars().cast(pl.Int64).alias(LENGTH))
    return df


def update(state: RolloutState | None, chunk: pl.DataFrame, *, ks: Sequence[int] | None = None,
           embed: bool | None = None, options: RolloutOptions | None = None) -> RolloutState:
    """Fold a chunk of whole groups into ``state`` (None: a new state with ``options``, where ``ks``
    and ``embed``, when given, replace the options' own); a family whose columns the chunk lacks is
    recorded in ``skipped``."""
    base = options or (state.options if state is not None else RolloutOptions())
    opts = replace(base, ks=base.ks if ks is None else tuple(ks), embed=base.embed if embed is None else embed)
    if state is not None and opts != state.options:
        raise ValueError(f"update: the settings differ from the state's ({state.options.differences(opts)}); "
                         "build a new state instead")
    new = fold(chunk, opts)
    return new if state is None else merge(state, new)


def fold(chunk: pl.DataFrame, opts: RolloutOptions, tell: Callable[[str], None] | None = None,
          progress: Progress | None = None) -> RolloutState:
    """A new state of ``chunk``: ``tell`` hears each family's name before it is computed, ``progress``
    the steps embedded (:func:`_counted`)."""
    columns = frozenset(chunk.columns)
    chunk = prepare(chunk, opts.max_response_length)
    per = chunk.group_by(STEP).agg(pl.col(GROUP).n_unique().alias("g"), pl.len().alias("n"))
    counts = {int(s): (int(g), int(n)) for s, g, n in per.iter_rows()}
    fams: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    encode = _counted(chunk, progress) if progress is not None and opts.embed else None
    for name, upd, _, _ in families(opts, encode):
        if tell is not None:
            tell(name)
        try:
            fams[name] = upd(None, chunk)
        except ValueError as exc:  # a family that cannot be computed says why, in Words where it can
            skipped[name] = exc.args[0] if exc.args and isinstance(exc.args[0], Words) else str(exc)
    return RolloutState(opts, counts, fams, skipped, columns)


def merge(a: RolloutState, b: RolloutState) -> RolloutState:
    """Combine two states built from disjoint sets of groups; a family skipped in either is skipped."""
    if a.options != b.options:
        raise ValueError("cannot merge rollout states built with different settings: "
                         f"{a.options.differences(b.options)}")
    counts = dict(a.counts)
    for step, (g, n) in b.counts.items():
        g0, n0 = counts.get(step, (0, 0))
        counts[step] = (g0 + g, n0 + n)
    skipped = {**b.skipped, **a.skipped}
    fams = {}
    for name, _, join, _ in families(a.options):
        if name in skipped:
            continue
        x, y = a.families.get(name), b.families.get(name)
        fams[name] = join(x, y) if x is not None and y is not None else (x if y is None else y)
    return RolloutState(a.options, counts, {k: v for k, v in fams.items() if v is not None}, skipped,
                        a.columns | b.columns)


def compute(state: RolloutState, tell: Callable[[str], None] | None = None) -> pl.DataFrame:
    """The per-step frame: step, groups, rollouts, then every family's columns (catalog keys); ``tell``
    hears each family's name before its columns are computed."""
    steps_ = sorted(state.counts)
    out = pl.DataFrame({STEP: steps_, "groups": [state.counts[s][0] for s in steps_],
                        "rollouts": [state.counts[s][1] for s in steps_]},
                       schema={STEP: pl.Int64, "groups": pl.UInt32, "rollouts": pl.UInt32})
    for name, _, _, comp in families(state.options):
        if tell is not None:
            tell(name)
        if name not in state.families:
            continue
        table = comp(state.families[name])
        if table.height == 0:
            continue
        table = table.with_columns(pl.col(STEP).cast(pl.Int64))
        dupes = [c for c in table.columns if c != STEP and c in out.columns]
        out = out.join(table.drop(dupes), on=STEP, how="left")
    return out.sort(STEP)


def _labelled(label: str, reason: str) -> str:
    """``"label: reason"`` in each language the reason has."""
    return both(lambda r: f"{label}: {r}", reason)


def skipped_reasons(state: RolloutState) -> list[str]:
    """What could not be computed and why: ``"family: reason"`` for every family that was skipped,
    in family order, then ``"key: reason"`` for every key a computed family had to leave out."""
    out = [_labelled(name, state.skipped[name]) for name, *_ in families(state.options) if name in state.skipped]
    for family, keys, need in KEY_NEEDS:
        reason = need(state.options, state.columns) if family not in state.skipped else None
        if reason is not None:
            out.append(_labelled(keys, reason))
    return out


def overall_chunk(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` as a single step 0 whose groups are ``step/group``: a state of these chunks gives the
    metrics over the whole table (still mergeable, since groups stay whole)."""
    return df.with_columns(pl.lit(0, dtype=pl.Int64).alias(STEP),
                           (pl.col(STEP).cast(pl.Utf8) + "/" + pl.col(GROUP)).alias(GROUP))


def table_options(settings: RolloutSettings, df: pl.DataFrame) -> RolloutOptions:
    """The analysis options of ``settings`` for the rollout table ``df`` (``ks="all"``: 1 to its largest group)."""
    return settings.options_for(_largest_group(df))


def _largest_group(df: pl.DataFrame) -> int:
    """The most rollouts any prompt group holds (0 for an empty table)."""
    if df.height == 0 or GROUP not in df.columns:
        return df.height
    return int(df.group_by(STEP, GROUP).len().get_column("len").max())  # type: ignore[arg-type]
