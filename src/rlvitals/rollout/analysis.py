"""``analyze_rollouts``: a rollout table in, every per-step rollout metric out.

Each metric family (group, diversity, segments, length × correctness, prompts, tokens) needs
some columns; a family whose columns the rollouts lack is listed in ``skipped`` with the
reason, never silently absent. The per-step frame uses catalog keys, so it can be joined
onto a Run (``Run.with_series``) for the diagnosis checks to read.

:class:`RolloutState` with :func:`update` / :func:`merge` / :func:`compute` is the same per-step frame
as a mergeable aggregate over chunks of whole groups (each family keeps exact partial state).
"""

from __future__ import annotations

import html
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import polars as pl

from ..errors import InputError
from ..run.run import Run
from ..words import Words
from . import by_source, groups, lengths, spread
from ._core import empty_error
from .needs import states_needed
from .options import DEFAULT_KS, RolloutOptions, RolloutSettings, ToolSchemas, source_names
from .probe_results import probe_results_for, with_probe_results
from .readers import ColumnMap, Progress, RewardWeights, RolloutSet, RolloutSource, locate, rollouts_from_python
from .schema import LENGTH, RESPONSE, STEP
from .shards import Engine, Sharded, ShardedRollouts, Unshardable, local, run_jobs, table_at
from .state import (
    RolloutState,
    compute,
    families,
    fold,
    merge,
    overall_chunk,
    prepare,
    skipped_reasons,
    table_options,
    update,
)
from .tags import SegmentTags

__all__ = ["DEFAULT_KS", "NOT_SERIES", "RolloutAnalysis", "RolloutOptions", "RolloutSettings", "RolloutState",
           "analyze", "analyze_rollouts", "compute", "join_series", "merge", "overall_chunk", "prepare",
           "skipped_reasons", "step_json", "step_series", "table_options", "update"]

#: per-step columns that are counts, histograms or labels, not catalog metrics: kept out of ``series``
NOT_SERIES = ("groups", "rollouts", "group_sizes", lengths.KEY_READING, lengths.KEY_READING_GROUPS, spread.HIST,
              spread.SHAPE)


@dataclass(frozen=True)
class RolloutAnalysis:
    """Per-step rollout metrics (``steps``: one row per step, ``groups``/``rollouts`` counts and
    catalog keys), the same over the whole table (``overall``), and what could not be computed."""

    steps: pl.DataFrame
    overall: dict[str, int | float | str]
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rollouts: RolloutSet | None = None
    #: the shards a path was read in, to read the rollouts of some steps again (None: ``rollouts`` holds the table)
    shards: Sharded | None = field(default=None, repr=False)

    @property
    def ks(self) -> tuple[int, ...]:
        """The k the group metrics were computed for (``pass@{k}`` columns of ``steps``)."""
        return tuple(sorted(int(c[5:]) for c in self.steps.columns if c.startswith("pass@") and c[5:].isdigit()))

    def __repr__(self) -> str:
        """``<RolloutAnalysis: 4,096 rollouts in 256 groups over 8 steps (verl-dump); pass@1 0.41; 3 not computed>``"""
        o = self.overall
        fmt = f" ({self.rollouts.format})" if self.rollouts is not None else ""
        steps = self.steps.height
        groups = int(o.get("groups", 0))
        head = (f"{int(o.get('rollouts', 0)):,} rollouts in {groups:,} group{'s' if groups != 1 else ''} over "
                f"{steps:,} step{'s' if steps != 1 else ''}{fmt}")
        p1 = o.get("pass@1")
        score = f"; pass@1 {p1:.3g}" if isinstance(p1, float) and math.isfinite(p1) else ""
        return f"<RolloutAnalysis: {head}{score}; {len(self.skipped)} not computed>"

    def _repr_html_(self) -> str:
        """What a notebook shows: the counts, every metric over the whole table that has a value, and
        what could not be computed (folded)."""
        cells = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{_shown(v)}</td></tr>"
                        for k, v in self.overall.items()
                        if not (isinstance(v, float) and not math.isfinite(v)) and k != lengths.KEY_READING)
        why = "".join(f"<li>{html.escape(r)}</li>" for r in self.skipped)
        folded = (f"<details><summary>{len(self.skipped)} not computed</summary><ul>{why}</ul></details>"
                  if self.skipped else "")
        return (f"<div><p><b>{html.escape(repr(self)[1:-1])}</b></p><p>over the whole table, "
                f"{self.steps.height} step rows in <code>.steps</code></p><table>{cells}</table>{folded}</div>")

    def rollout_steps(self) -> list[int]:
        """The steps that have rollouts, ascending."""
        if self.shards is not None:
            return sorted(self.shards.by_step)
        table = self.rollouts.table if self.rollouts is not None else None
        return sorted(int(s) for s in table[STEP].unique().to_list()) if table is not None and table.height else []

    def table_at(self, steps: Sequence[int]) -> pl.DataFrame:
        """The rollout table at ``steps`` (lengths and truncation flags as the metrics used them): the table
        held, or the shards holding those steps read again."""
        if self.shards is not None:
            return table_at(self.shards, steps)
        table = self.rollouts.table if self.rollouts is not None else pl.DataFrame({STEP: [], "group": []})
        return table.filter(pl.col(STEP).is_in(list(steps))) if table.height else table

    def series(self) -> pl.DataFrame:
        """The per-step columns that become a Run's series (:func:`step_series`), for ``Run.with_series``."""
        return step_series(self.steps)

    def join(self, run: Run, origin: str = "rollouts") -> Run:
        """``run`` with these rollouts' per-step series joined onto its step axis (:func:`join_series`)."""
        return join_series(run, [self.series()], origin)


def _shown(value: int | float | str) -> str:
    return html.escape(f"{value:,}" if isinstance(value, int) else f"{value:.4g}" if isinstance(value, float)
                       else str(value))


def step_series(frame: pl.DataFrame) -> pl.DataFrame:
    """The one rule for which per-step rollout columns become a Run's series, wherever rollouts are
    joined onto a Run (``diagnose``/``report``/``export --rollouts``, ``watch``, ``serve``, ``Monitor``):
    every column but the counts and labels of ``NOT_SERIES``, each a catalog key.

    A metric with no defined value at a step (pass@8 of groups of 4, a family whose groups all
    lack the input) is null there — not logged — rather than NaN: in a Run, NaN means the
    trainer logged a NaN, which the stability checks rightly treat as a failure. Columns with no
    value at any step are left out.

    >>> step_series(pl.DataFrame({"step": [1], "groups": [2], "pass@1": [0.5], "pass@8": [float("nan")]})).columns
    ['step', 'pass@1']
    """
    frame = frame.drop([c for c in NOT_SERIES if c in frame.columns])
    floats = [c for c, t in frame.schema.items() if t.is_float()]
    frame = frame.with_columns(pl.col(c).fill_nan(None) for c in floats)
    return frame.select(c for c in frame.columns if c == STEP or frame.get_column(c).null_count() < frame.height)


def join_series(run: Run, frames: Sequence[pl.DataFrame], origin: str = "rollouts") -> Run:
    """``run`` with per-step rollout series (frames of :func:`step_series`, one for all steps or one
    per step) joined onto its step axis by ``Run.with_series``: a key the run logged keeps its logged
    values. ``origin`` names the rollouts in the run's notes."""
    frames = [f for f in frames if f.height]
    if not frames:
        return run
    return run.with_series(pl.concat(frames, how="diagonal_relaxed"), origin)


def _load(source: RolloutSource, settings: RolloutSettings, progress: Progress | None = None) -> RolloutSet:
    if isinstance(source, (str, os.PathLike)):
        return settings.read(os.fspath(source), progress)
    if settings.reward_weights is not None:
        kind = type(source).__name__
        raise InputError(Words(f"reward_weights apply when reading TRL completion files, not to a {kind}; "
                               "give the path of the completions, or put the weighted total in the score column",
                               f"reward_weights 只适用于读取 TRL completions 文件，不适用于 {kind}；请给出 "
                               "completions 的路径，或把加权后的总分放进 score 列"))
    if isinstance(source, RolloutSet):
        return source
    return rollouts_from_python(source, columns=settings.columns, group_size=settings.group_size)


def analyze_rollouts(source: RolloutSource, *, columns: ColumnMap | None = None,
                     ks: Sequence[int] | Literal["all"] = DEFAULT_KS,
                     group_size: int | None = None, reward_weights: RewardWeights | None = None,
                     embed: bool = False, tool_call_cap: int | None = None,
                     segment_tags: SegmentTags | None = None, id_sources: Sequence[str] = (),
                     ood_sources: Sequence[str] | None = None,
                     max_response_length: int | None = None, n_states: int | None = None,
                     tool_schemas: ToolSchemas = (),
                     progress: Progress | None = None, engine: Literal["local", "ray"] = "local",
                     address: str | None = None) -> RolloutAnalysis:
    """Every rollout metric per step and over the whole table.

    ``ks`` are the k of pass@k, maj@k and G-Pass@k; ``"all"`` takes every k from 1 to the largest group's size.

    ``embed=True`` adds ``diversity/embedding_cosine`` per step (sentence embeddings on the CPU, from
    the ``embed`` extra; slow on long texts, so not in ``overall``). ``tool_call_cap`` (the most tool
    calls a rollout may make) adds ``rollout/tool_calls/at_cap``; ``segment_tags`` sets the think /
    answer / tool-call tags (default ``<think>``, ``<answer>``, ``<tool_call>``). ``id_sources`` names
    the in-distribution data sources: it adds ``source/{source}/id_gap`` and takes ``val/id_ood_gap``
    from the sources (``ood_sources``, default every other source) instead of the ``split`` column.
    ``max_response_length`` (the generation limit, in tokens) marks a rollout with a token count
    ``length >= max_response_length`` as truncated where no ``truncated`` flag says otherwise, for
    ``rollout/truncation_share``; rollouts without token counts are not judged against it. ``n_states``, the size
    of the state space: ``diversity/state_coverage`` becomes distinct states / ``n_states`` (needs ``states``);
    ``tool_schemas`` (name → JSON schema; ``read_tool_schemas`` reads a file): tool calls must fit them. Bad
    settings raise ``ValueError`` (:class:`RolloutSettings`). ``progress`` is told how far the work got (see
    :func:`analyze`). A path is read shard by shard, here or, with ``engine="ray"``, on the workers of the Ray
    cluster at ``address`` (``"auto"``, ``HOST:PORT``; None starts a local one): the same result either way.

    ``source`` is one of:

    * a path (``str`` or ``Path``): a veRL dump folder, TRL completions, a generic table with ``columns``;
    * a :class:`RolloutSet`;
    * records: a list, tuple or any iterable (a generator) of dicts, one per rollout;
    * a polars DataFrame or LazyFrame (collected), a pandas DataFrame, a dict of equal-length columns
      (lists, NumPy arrays, tensors), or a NumPy structured array (its fields are the columns);
    * a bare NumPy array or torch tensor of scores, shape (groups, samples) at step 0 or
      (steps, groups, samples) with the step the index along the first axis; booleans are
      correctness, numbers scores, NaN a missing sample.

    NumPy scalars and arrays and torch tensors inside records or columns are read as Python numbers
    and lists (torch is not imported for this). ``reward_weights`` go to :func:`read_rollouts` (TRL
    completion files only).

    Example:
        >>> import numpy as np, rlvitals
        >>> a = rlvitals.analyze_rollouts([{"step": 1, "prompt": "2+2", "response": "4", "score": 1.0},
        ...                                {"step": 1, "prompt": "2+2", "response": "5", "score": 0.0}])
        >>> a.steps["pass@2"].to_list()
        [1.0]
        >>> rlvitals.analyze_rollouts(np.array([[1.0, 0.0], [0.0, 0.0]]), ks=(1,)).steps["pass@1"].to_list()
        [0.25]
    """
    settings = RolloutSettings(ks=tuple(ks) if ks != "all" else "all", columns=columns, group_size=group_size,
                               reward_weights=reward_weights, embed=embed, tool_call_cap=tool_call_cap,
                               segment_tags=segment_tags or SegmentTags(), id_sources=source_names(id_sources),
                               ood_sources=None if ood_sources is None else source_names(ood_sources, "ood_sources"),
                               max_response_length=max_response_length, n_states=n_states, tool_schemas=tool_schemas,
                               engine=engine, address=address)
    return analyze(source, settings, progress=progress)


def analyze(source: RolloutSource, settings: RolloutSettings | None = None, *,
            progress: Progress | None = None, engine: Engine | None = None) -> RolloutAnalysis:
    """:func:`analyze_rollouts` with its settings as one value: what ``rlvitals rollouts`` and every
    ``--rollouts`` computes.

    A path is read and folded shard by shard (:mod:`.shards`: a step file, a completions file, a table
    file at a time), so memory holds one shard and the families' states, never the whole table;
    ``engine`` runs the shards (default: one after another in this process; :func:`.ray_engine.engine` on a
    Ray cluster). The result is the same as reading everything at once. Rollouts given as Python objects
    are one table.

    ``progress(phase, done, total)`` is told how far the work got, as plain data (``total`` None when
    not known): ``"reading"`` with the files read of a path's files; then, per metric family, the
    family's name (``"group"``, ``"diversity"`` …) before it is computed per step and ``"overall"``
    before each family is computed over the whole table, ``done`` counting these passes (twice the
    families in all) and one last call with ``done == total``; with ``embed``, for rollouts in memory,
    ``"embedding"`` with the steps whose responses were embedded. Within a phase ``done`` never goes down.

    >>> analyze([{"prompt": "q", "response": "4", "score": 1.0}], RolloutSettings(ks=(1,))).ks
    (1,)
    """
    settings = settings or RolloutSettings()
    if isinstance(source, (str, os.PathLike)):
        found = locate(os.fspath(source), settings.columns, settings.reward_weights)
        try:
            sharded = run_jobs(found, settings, engine or _engine(settings), progress)
        except Unshardable as why:
            rollouts = settings.read(os.fspath(source), progress)
            said = Words(f"the files were read as one table ({why}): memory holds all of them",
                         f"这些文件作为一张表读取（{why}）：内存里放着全部文件")
            return _analyze_table(replace(rollouts, notes=[*rollouts.notes, said]), settings, source, progress)
        return _analyze_shards(sharded, settings, source, progress)
    return _analyze_table(_load(source, settings, progress), settings, source, progress)


def _engine(settings: RolloutSettings) -> Engine:
    if settings.engine == "ray":
        from .ray_engine import engine  # imports Ray when the run asks for it

        return engine(settings.address)
    return local


def _analyze_table(rollouts: RolloutSet, settings: RolloutSettings, source: RolloutSource,
                   progress: Progress | None) -> RolloutAnalysis:
    df = rollouts.table
    # the table handed back carries the lengths and truncation flags the metrics used, so views of it agree
    options = table_options(settings, df)
    rollouts = replace(rollouts, table=prepare(df, options.max_response_length))
    passes = _Passes(progress, 2 * len(families(replace(options, embed=False))))
    state = fold(df, options, passes.tell, progress)
    whole = compute(fold(overall_chunk(df), replace(options, embed=False), passes.overall))
    passes.end()
    lacking = df.height - groups.with_outcome(df).height if "group" not in state.skipped and df.height else 0
    return _result(state, whole, compute(state), _Facts(df.height, lacking, frozenset(df.columns)), rollouts,
                   source)


def _analyze_shards(sharded: Sharded, settings: RolloutSettings, source: RolloutSource,
                    progress: Progress | None) -> RolloutAnalysis:
    if sharded.rows == 0:
        raise empty_error(sharded.found.what, sharded.skips)
    passes = _Passes(progress, 2 * len(families(replace(sharded.state.options, embed=False))))
    steps = compute(sharded.state, passes.tell)
    whole = compute(sharded.whole, passes.overall)
    passes.end()
    return _result(sharded.state, whole, steps, _Facts(sharded.rows, sharded.lacking, sharded.columns),
                   ShardedRollouts(sharded), source, sharded)


@dataclass(frozen=True)
class _Facts:
    """What the analysis says of the table as a whole: its rows, those without an outcome, its columns."""

    rows: int
    lacking: int
    columns: frozenset[str]


def _result(state: RolloutState, whole: pl.DataFrame, steps: pl.DataFrame, facts: _Facts, rollouts: RolloutSet,
            source: RolloutSource, sharded: Sharded | None = None) -> RolloutAnalysis:
    no_states = states_needed(state.options, facts.columns,
                              os.fspath(source) if isinstance(source, (str, os.PathLike)) else None)
    if no_states is not None:
        raise InputError(no_states)
    notes = list(rollouts.notes)
    if LENGTH not in facts.columns and RESPONSE in facts.columns:
        notes.append(Words("the rollouts carry no token counts: lengths are counted in characters",
                           "rollout 没有 token 数：长度按字符计"))
    # counts stay integers ("groups": 2, not 2.0), as in the per-step rows; the length reading is a label
    overall = {k: v if isinstance(v, (int, str)) else float(v) for k, v in whole.row(0, named=True).items()
               if k != STEP and isinstance(v, (int, float, str)) and not isinstance(v, bool)}
    skipped = skipped_reasons(state)
    _no_outcome(facts, state, skipped, notes)
    probed = probe_results_for(source, rollouts.files)
    if probed is not None:  # rlvitals probe's results beside the rollouts are per-step metrics like the others
        steps = with_probe_results(steps, probed)
        notes += [probed.note(), *probed.skips.reasons]
    return RolloutAnalysis(steps, overall, skipped, notes + _source_notes(state), rollouts, sharded)


class _Passes:
    """Counts the family passes of :func:`analyze` for its ``progress``: the family's name per step, then
    ``"overall"``, with the passes done of ``total``."""

    def __init__(self, progress: Progress | None, total: int) -> None:
        self.progress, self.total, self.done = progress, total, 0

    def tell(self, phase: str) -> None:
        if self.progress is not None:
            self.progress(phase, self.done, self.total)
        self.done += 1

    def overall(self, family: str) -> None:
        self.tell("overall")

    def end(self) -> None:
        if self.progress is not None:
            self.progress("overall", self.total, self.total)


def _no_outcome(facts: _Facts, state: RolloutState, skipped: list[str], notes: list[str]) -> None:
    """Say what the group family left out: rollouts with neither a score nor a known correctness
    (all of them: the family is not computed, rather than reading as all wrong)."""
    if "group" in state.skipped or facts.rows == 0:
        return
    lacking, rows = facts.lacking, facts.rows
    if lacking == rows:
        skipped.insert(0, Words(f"group: none of the {rows} rollouts has a score or a known correctness (all "
                                "null), so σ_G, pass@k, maj@k and the zero-variance split are not computed; map the "
                                "reward (--score COLUMN) or the correctness (--correct COLUMN)",
                                f"group：{rows} 条 rollout 都没有分数，也不知道对错（全为空），因此 σ_G、"
                                "pass@k、maj@k 和零方差拆分都没有计算；请映射 reward（--score COLUMN）或对错"
                                "（--correct COLUMN）"))
    elif lacking:
        notes.append(Words(f"{lacking} of {rows} rollouts have neither a score nor a known correctness: the "
                           "group family (σ_G, pass@k, maj@k, group sizes) leaves them out",
                           f"{rows} 条 rollout 中有 {lacking} 条既没有分数也不知道对错：组指标（σ_G、pass@k、"
                           "maj@k、组大小）不计入它们"))


def _source_notes(state: RolloutState) -> list[str]:
    """A named ID or OOD source that no rollout has is most likely a typo: say so, with the names."""
    if "sources" not in state.families:
        return []
    seen = by_source.sources_seen(state.families["sources"])
    out: list[str] = []
    for what, names in (("in", state.options.id_sources), ("out-of", state.options.ood_sources or ())):
        unknown = [n for n in names if n not in seen]
        if unknown:
            zh = "分布内" if what == "in" else "分布外"
            out.append(Words(f"the {what}-distribution source(s) {unknown} are not among the rollouts' sources {seen}",
                             f"{zh}数据来源 {unknown} 不在 rollout 的来源 {seen} 之中"))
    return out


def _sigma_json(row: Mapping[str, Any]) -> dict[str, Any] | None:
    """σ_G across the step's groups (:mod:`.spread`): quantiles, group counts per band, shape and its reading."""
    shape, hist = row.get(spread.SHAPE), row.get(spread.HIST)
    if not isinstance(shape, str):  # no group of 2 or more rollouts
        return None
    reading = spread.READINGS[shape]
    return {"quantiles": {q: row.get(f"group/reward_std/{q}") for q, _ in spread.QUANTILES},
            "shares": {b: row.get(spread.band_key(b)) for b in spread.BANDS},
            "counts": None if hist is None else {h["band"]: h["count"] for h in hist},
            "edges": list(spread.EDGES), "shape": shape, "reading": {"en": str(reading), "zh": reading.zh}}


def step_json(row: Mapping[str, Any], ks: Sequence[int]) -> dict[str, Any]:
    """One step as the ``rollouts --json`` schema: counts, the group-size histogram
    (``{"16": 120, "8": 3}``, largest size first; null when the row has none), pass@k / maj@k /
    g-pass@k maps, the zero-variance split, σ_G's distribution across the groups (``sigma_g``: its
    quantiles, the share and the count of groups in each band (counts null over the whole table), the
    bands' upper edges, their shape and what it means in English and Chinese; null without a group of 2
    or more), the length × correctness reading with the numbers it
    rests on (null without the length family), the per-source metrics
    (``{"openai/gsm8k": {"pass@1": …, "score/mean": …, "id_gap": …}}``, empty without sources), and
    every other metric under ``metrics``."""
    def pick(prefix: str) -> dict[str, float]:
        found = {str(k): row[f"{prefix}@{k}"] for k in ks if row.get(f"{prefix}@{k}") is not None}
        # maj@k all NaN: no answer to vote on, an empty map as documented; otherwise a NaN (no group
        # with n >= k) stays and prints as null
        return {} if prefix == "maj" and all(v != v for v in found.values()) else found

    grouped = {f"{p}@{k}" for p in ("pass", "maj", "g_pass", "pass_gap") for k in ks}
    zero = {"share": "group/zero_std/share", "all_correct": "group/zero_std/all_correct",
            "all_wrong": "group/zero_std/all_wrong", "identical": "group/zero_std/identical"}
    per_source: dict[str, dict[str, Any]] = {}
    for key, value in row.items():
        parts = by_source.split_key(key)
        if parts is not None and value is not None:
            per_source.setdefault(parts[0], {})[parts[1]] = value
    sigma = {f"group/reward_std/{q}" for q, _ in spread.QUANTILES} | {spread.band_key(b) for b in spread.BANDS}
    used = grouped | set(zero.values()) | set(NOT_SERIES) | sigma | {STEP}
    hist = row.get("group_sizes")
    reading = None if row.get(lengths.KEY_READING_GROUPS) is None else {
        "reading": row.get(lengths.KEY_READING), "corr": row.get(lengths.KEY_CORR), "tol": lengths.READING_TOL,
        "groups": row.get(lengths.KEY_READING_GROUPS)}
    return {
        "step": row.get(STEP), "groups": row.get("groups"), "rollouts": row.get("rollouts"),
        "group_sizes": None if hist is None else {str(h["size"]): h["count"] for h in hist},
        "pass@k": pick("pass"), "maj@k": pick("maj"), "g_pass@k": pick("g_pass"), "pass_gap@k": pick("pass_gap"),
        "zero_variance": {name: row.get(key) for name, key in zero.items()},
        "sigma_g": _sigma_json(row),
        "length_reading": reading,
        "sources": dict(sorted(per_source.items())),
        "metrics": {k: v for k, v in row.items() if k not in used and v is not None and by_source.split_key(k) is None},
    }
