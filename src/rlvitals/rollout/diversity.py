"""Diversity of the rollouts of one prompt group (GRPO's G samples), and its per-step table.

Every metric is computed inside a group — the rollouts of one prompt at one step — and the
per-step value is the mean over the step's groups where it is defined (a group with a single
rollout has no pairs, a group without extracted answers has no answer entropy; such groups are
left out of the mean rather than counted as 0).

Text is tokenised on whitespace (``str.split()``: runs of spaces, tabs and newlines separate
tokens), which is model-agnostic and cheap; it is not the policy's tokenizer. (The vectorised
distinct-n of the table splits on ASCII whitespace only; non-ASCII spaces such as U+3000 stay
inside tokens there.)

The per-step table is a mergeable aggregate: :func:`update` turns a chunk of whole groups into a
:class:`DiversityState` (per metric and step, the defined per-group values), :func:`merge` joins
two states, and :func:`compute` takes each mean as ``math.fsum(values) / count``, which is
correctly rounded and so identical however the groups were sharded (a plain float sum is not).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import polars as pl
from rapidfuzz.distance import Levenshtein
from rapidfuzz.process import cdist

from rlvitals.rollout.schema import ACTIONS, ANSWER, GROUP, RESPONSE, SAMPLE, STATES, STEP

Unit = Literal["word", "char"]
DEFAULT_NS = (1, 2, 3, 4)


def _require(df: pl.DataFrame, *cols: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"this metric needs the rollout column(s) {missing}; the table has {df.columns}")


def distinct_n(texts: Sequence[str], n: int) -> float:
    """Pooled distinct-n of a group: |distinct word n-grams| / |all word n-grams| over all texts.

    N-grams never span two texts. NaN when the texts hold no n-gram at all.

    >>> distinct_n(["a b a b", "a b"], 2)
    0.5
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    grams: list[tuple[str, ...]] = []
    for text in texts:
        words = text.split()
        grams.extend(tuple(words[i:i + n]) for i in range(len(words) - n + 1))
    return len(set(grams)) / len(grams) if grams else math.nan


def duplicate_rate(texts: Sequence[str]) -> float:
    """Share of texts identical to an earlier text of the group: (N - |distinct|) / N; NaN if N = 0.

    >>> duplicate_rate(["x", "y", "x", "x"])
    0.5
    """
    return (len(texts) - len(set(texts))) / len(texts) if texts else math.nan


def _subsample(items: list[Sequence[Hashable]], max_samples: int | None,
               seed: int) -> list[Sequence[Hashable]]:
    if max_samples is None or len(items) <= max_samples:
        return items
    keep = np.sort(np.random.default_rng(seed).choice(len(items), size=max_samples, replace=False))
    return [items[i] for i in keep]


def mean_edit_distance(seqs: Sequence[Sequence[Hashable]], *, max_samples: int | None = 16,
                       seed: int = 0, workers: int = 1) -> float:
    """Mean over pairs i < j of the normalised Levenshtein distance d(s_i, s_j) / max(|s_i|, |s_j|).

    Insert, delete and substitute cost 1; two empty sequences are at distance 0. Sequences may be
    strings (characters) or lists of hashables (words, actions). Groups larger than
    ``max_samples`` are reduced to ``max_samples`` members drawn without replacement by
    ``numpy.random.default_rng(seed)``, so the value is reproducible. NaN for fewer than 2 sequences.

    >>> round(mean_edit_distance(["kitten", "sitting"]), 6)
    0.428571
    """
    items = _subsample(list(seqs), max_samples, seed)
    n = len(items)
    if n < 2:
        return math.nan
    dist = cdist(items, items, scorer=Levenshtein.normalized_distance, workers=workers)
    return float(dist[np.triu_indices(n, k=1)].mean())


def answer_entropy(answers: Sequence[str | None]) -> float:
    """Shannon entropy (nats) of the distribution of extracted answers: -sum p_a ln p_a.

    Missing answers (None) are left out; NaN when none is left. 0 when all answers agree,
    ln N when all N differ.
    """
    counts = Counter(a for a in answers if a is not None)
    total = sum(counts.values())
    if total == 0:
        return math.nan
    return float(-sum(c / total * math.log(c / total) for c in counts.values()))


def state_coverage(visits: Sequence[Sequence[Hashable]], n_states: int | None = None) -> float:
    """Share of states covered by a group's rollouts.

    With ``n_states`` (the size of the environment's state space): |distinct visited| / n_states.
    Without it: |distinct visited| / |all visits| (each rollout's visits counted with
    repetition), i.e. 1 when no state is visited twice in the group. NaN when nothing was visited.
    """
    flat = [s for seq in visits for s in seq]
    if not flat:
        return math.nan
    if n_states is not None:
        if n_states < 1:
            raise ValueError(f"n_states must be >= 1, got {n_states}")
        return len(set(flat)) / n_states
    return len(set(flat)) / len(flat)


def embedding_cosine(texts: Sequence[str], encode: Callable[[list[str]], np.ndarray]) -> float:
    """Mean pairwise cosine similarity, over pairs i < j, of ``encode(texts)`` rows.

    ``encode`` maps a list of N texts to an (N, d) array (e.g. a sentence-embedding model);
    zero vectors have similarity 0. NaN for fewer than 2 texts. Higher means less diverse.
    """
    if len(texts) < 2:
        return math.nan
    emb = np.asarray(encode(list(texts)), dtype=np.float64)
    if emb.ndim != 2 or emb.shape[0] != len(texts):
        raise ValueError(f"encode() must return an array of shape ({len(texts)}, d), got {emb.shape}")
    norm = np.linalg.norm(emb, axis=1, keepdims=True)
    unit = np.divide(emb, norm, out=np.zeros_like(emb), where=norm > 0)
    sim = unit @ unit.T
    return float(sim[np.triu_indices(len(texts), k=1)].mean())


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser (uint64 arithmetic wraps), so n-gram keys depend on word order."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    out: np.ndarray = x ^ (x >> np.uint64(31))
    return out


def _distinct_frame(df: pl.DataFrame, ns: Sequence[int]) -> pl.DataFrame:
    """distinct-n per (step, group), vectorised: words are exploded, hashed (polars 64-bit hash)
    and each n-gram gets the key mix(key of its (n-1)-gram prefix) XOR hash(last word); 64-bit
    keys make collisions negligible at these sizes."""
    # ASCII whitespace → " " then split: much faster than a regex, same as str.split() on ASCII text
    spaced = pl.col(RESPONSE).fill_null("").str.replace_many(list("\t\n\r\x0b\x0c"), [" "] * 5)
    words = (df.select(STEP, GROUP, spaced.str.split(" ").alias("w"))
             .with_row_index("rid").explode("w").filter(pl.col("w") != ""))
    h = words["w"].hash(7).to_numpy()
    rid = words["rid"].to_numpy()
    cols: dict[str, pl.Series] = {}
    key = h.copy()
    for n in range(1, max(ns) + 1):
        m = max(len(h) - n + 1, 0)  # positions where an n-gram can start
        if n > 1:
            key = np.concatenate([_mix(key[:m]) ^ h[n - 1:n - 1 + m], np.zeros(len(h) - m, np.uint64)])
        if n in ns:
            valid = np.zeros(len(h), bool)
            valid[:m] = rid[n - 1:n - 1 + m] == rid[:m]
            cols[f"g{n}"] = pl.Series(f"g{n}", key, dtype=pl.UInt64).set(pl.Series(~valid), None)
    grams = words.select(STEP, GROUP).with_columns(**cols)
    aggs = [(pl.col(f"g{n}").drop_nulls().n_unique() / pl.col(f"g{n}").count()).alias(f"diversity/distinct_{n}")
            for n in ns]
    return grams.group_by(STEP, GROUP).agg(aggs)


def _answer_entropy_frame(df: pl.DataFrame) -> pl.DataFrame:
    counts = df.filter(pl.col(ANSWER).is_not_null()).group_by(STEP, GROUP, ANSWER).len()
    p = pl.col("len") / pl.col("len").sum().over(STEP, GROUP)
    return (counts.with_columns(p.alias("p")).group_by(STEP, GROUP)
            .agg((-(pl.col("p") * pl.col("p").log()).sum()).alias("diversity/answer_entropy")))


def _pairwise_frame(df: pl.DataFrame, column: str, key: str, unit: Unit,
                    max_samples: int | None, seed: int, workers: int) -> pl.DataFrame:
    """Mean pairwise normalised edit distance per (step, group); rows with a null value are skipped."""
    rows = df.select(STEP, GROUP, column).drop_nulls(column)
    steps, groups = rows[STEP].to_list(), rows[GROUP].to_list()
    values = rows[column].to_list()
    if column == RESPONSE and unit == "word":
        values = [v.split() for v in values]
    out_s, out_g, out_v = [], [], []
    start = 0
    for i in range(1, len(values) + 1):
        if i == len(values) or steps[i] != steps[start] or groups[i] != groups[start]:
            out_s.append(steps[start])
            out_g.append(groups[start])
            out_v.append(mean_edit_distance(values[start:i], max_samples=max_samples,
                                            seed=seed, workers=workers))
            start = i
    frame = pl.DataFrame({STEP: out_s, GROUP: out_g, key: out_v},
                         schema={STEP: df.schema[STEP], GROUP: df.schema[GROUP], key: pl.Float64})
    return frame.with_columns(pl.col(key).fill_nan(None))


def _coverage_frame(df: pl.DataFrame, n_states: int | None) -> pl.DataFrame:
    visits = df.select(STEP, GROUP, STATES).explode(STATES).drop_nulls(STATES)
    denom = pl.lit(n_states, dtype=pl.Float64) if n_states is not None else pl.len()
    return visits.group_by(STEP, GROUP).agg((pl.col(STATES).n_unique() / denom)
                                            .alias("diversity/state_coverage"))


def group_diversity(df: pl.DataFrame, ns: Sequence[int] = DEFAULT_NS, *, unit: Unit = "word",
                    max_samples: int | None = 16, seed: int = 0, workers: int = 1,
                    n_states: int | None = None) -> pl.DataFrame:
    """One row per (step, group) with the diversity metrics its columns allow.

    Needs ``response``; adds answer entropy when ``answer`` is present, action edit distance
    with ``actions`` and state coverage with ``states``. ``unit`` chooses the edit distance's
    symbols: whitespace words (default; ~25x faster on 1 kB texts) or characters.
    """
    _require(df, STEP, GROUP, RESPONSE)
    if unit not in ("word", "char"):
        raise ValueError(f"unit must be 'word' or 'char', got {unit!r}")
    df = df.sort(STEP, GROUP, SAMPLE) if SAMPLE in df.columns else df.sort(STEP, GROUP)
    text = df.with_columns(pl.col(RESPONSE).fill_null(""))
    dup = text.group_by(STEP, GROUP).agg(
        ((pl.len() - pl.col(RESPONSE).n_unique()) / pl.len()).alias("diversity/duplicate_rate"))
    frames = [_distinct_frame(text, ns), dup,
              _pairwise_frame(text, RESPONSE, "diversity/edit_distance", unit, max_samples, seed, workers)]
    if ANSWER in df.columns:
        frames.append(_answer_entropy_frame(df))
    if ACTIONS in df.columns:
        frames.append(_pairwise_frame(df, ACTIONS, "diversity/action_edit_distance", unit,
                                      max_samples, seed, workers))
    if STATES in df.columns:
        frames.append(_coverage_frame(df, n_states))
    out = df.select(STEP, GROUP).unique()
    for frame in frames:
        out = out.join(frame, on=[STEP, GROUP], how="left")
    return out.sort(STEP, GROUP)


def diversity_table(df: pl.DataFrame, ns: Sequence[int] = DEFAULT_NS, **options: Any) -> pl.DataFrame:
    """Per-step table: column ``step`` plus catalog keys (``diversity/distinct_{n}``,
    ``diversity/duplicate_rate``, ``diversity/edit_distance`` and, when their columns exist,
    ``diversity/answer_entropy``, ``diversity/action_edit_distance``, ``diversity/state_coverage``),
    each the mean over the step's groups where it is defined. Keyword arguments go to
    :func:`group_diversity`. The same as ``compute(update(None, df, ns=ns, ...))``.

    >>> t = pl.DataFrame({"step": [1, 1], "group": ["a", "a"], "sample": [0, 1], "response": ["x y", "x y"]})
    >>> diversity_table(t)["diversity/duplicate_rate"].to_list()
    [0.5]
    """
    return compute(update(None, df, ns=ns, **options))


# ------------------------------------------------------------------ mergeable partial state

#: catalog keys in the order the per-step frame lists them (distinct-n keys come first)
_ORDER = ("diversity/duplicate_rate", "diversity/edit_distance", "diversity/answer_entropy",
          "diversity/action_edit_distance", "diversity/state_coverage", "diversity/embedding_cosine")


@dataclass(frozen=True)
class DiversityState:
    """Partial per-step diversity of some groups: for each metric and step, the defined per-group
    values (NaN/undefined groups left out), plus the ``(step, group)`` pairs seen and the options.

    Means are taken only in :func:`compute`, with ``math.fsum`` (correctly rounded, so the result
    does not depend on how the groups were split into shards or merged)."""

    options: tuple[object, ...]
    step_dtype: pl.DataType
    groups: frozenset[tuple[object, str]]
    values: Mapping[str, Mapping[object, tuple[np.ndarray, ...]]]


def _options(ns: Sequence[int] = DEFAULT_NS, unit: Unit = "word", max_samples: int | None = 16, seed: int = 0,
             workers: int = 1, n_states: int | None = None) -> tuple[object, ...]:
    del workers  # parallelism never changes a value, so states made with different workers merge
    return (tuple(ns), unit, max_samples, seed, n_states)


def update(state: DiversityState | None, chunk: pl.DataFrame, **options: Any) -> DiversityState:
    """Add the whole groups of ``chunk`` to ``state`` (None: start a new one).

    ``options`` are those of :func:`group_diversity` (``ns``, ``unit``, ``max_samples``, ``seed``,
    ``workers``, ``n_states``) and must match the state's. A group must lie in one chunk only.

    >>> t = pl.DataFrame({"step": [1, 1, 1, 1], "group": ["a", "a", "b", "b"], "sample": [0, 1, 0, 1],
    ...                   "response": ["x", "x", "x", "y"]})
    >>> s = merge(update(None, t[:2]), update(None, t[2:]))
    >>> compute(s)["diversity/duplicate_rate"].to_list()
    [0.25]
    """
    opts = _options(**options)
    per_group = group_diversity(chunk, **options)
    keys = [c for c in per_group.columns if c not in (STEP, GROUP)]
    lists = (per_group.with_columns(pl.col(keys).fill_nan(None)).group_by(STEP)
             .agg(pl.col(keys).drop_nulls()))
    values: dict[str, dict[object, tuple[np.ndarray, ...]]] = {k: {} for k in keys}
    for row in lists.iter_rows(named=True):
        for k in keys:
            values[k][row[STEP]] = (np.asarray(row[k], dtype=np.float64),)
    pairs = frozenset(zip(per_group[STEP].to_list(), per_group[GROUP].to_list(), strict=True))
    new = DiversityState(opts, chunk.schema[STEP], pairs, values)
    return new if state is None else merge(state, new)


def merge(a: DiversityState, b: DiversityState) -> DiversityState:
    """The state of the groups of ``a`` and of ``b`` together (commutative and associative).

    Raises ValueError when the options differ or a ``(step, group)`` is in both (shard by group).
    """
    if a.options != b.options:
        raise ValueError(f"cannot merge diversity states made with different options: {a.options} vs {b.options}; "
                         "use the same ns, unit, max_samples, seed and n_states for every shard")
    both = a.groups & b.groups
    if both:
        step, group = sorted(both, key=str)[0]
        raise ValueError(f"group {group!r} of step {step} is in both diversity states ({len(both)} shared group(s)); "
                         "split the rollouts into shards by whole groups")
    values: dict[str, dict[object, tuple[np.ndarray, ...]]] = {}
    for k in set(a.values) | set(b.values):
        va, vb = a.values.get(k, {}), b.values.get(k, {})
        values[k] = {s: va.get(s, ()) + vb.get(s, ()) for s in set(va) | set(vb)}
    dtype = a.step_dtype if a.groups else b.step_dtype
    return DiversityState(a.options, dtype, a.groups | b.groups, values)


def _column_order(keys: Sequence[str]) -> list[str]:
    distinct = sorted((k for k in keys if k.startswith("diversity/distinct_")), key=lambda k: int(k.rsplit("_", 1)[1]))
    return distinct + [k for k in _ORDER if k in keys]


def compute(state: DiversityState) -> pl.DataFrame:
    """The per-step frame of :func:`diversity_table`: each metric's ``math.fsum`` of the defined
    per-group values divided by their count (null where no group of the step defines it).

    >>> t = pl.DataFrame({"step": [2, 2], "group": ["a", "a"], "sample": [0, 1], "response": ["p q", "p r"]})
    >>> compute(update(None, t))["diversity/distinct_1"].to_list()
    [0.75]
    """
    steps = sorted({s for s, _ in state.groups}, key=lambda s: (s is None, s))
    cols: dict[str, list[float | None]] = {}
    for k in _column_order(list(state.values)):
        per_step = state.values[k]
        cols[k] = []
        for s in steps:
            arr = np.concatenate(per_step.get(s, ()) or [np.empty(0)])
            cols[k].append(math.fsum(arr.tolist()) / arr.size if arr.size else None)
    schema = {STEP: state.step_dtype, **{k: pl.Float64() for k in cols}}
    return pl.DataFrame({STEP: steps, **cols}, schema=schema)
