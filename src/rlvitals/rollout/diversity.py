"""Diversity of the rollouts of one prompt group (GRPO's G samples), and its per-step table.

Every metric is computed inside a group — the rollouts of one prompt at one step — and the
per-step value is the mean over the step's groups where it is defined (a group with a single
rollout has no pairs, a group without extracted answers has no answer entropy; such groups are
left out of the mean rather than counted as 0).

Text is tokenised on whitespace (``str.split()``: runs of any character ``str.isspace()``
accepts separate tokens), which is model-agnostic and cheap; it is not the policy's tokenizer.
The table splits every response once (polars) and feeds both distinct-n (64-bit n-gram hashes)
and the edit distance (each word becomes one character, so rapidfuzz compares word sequences
as strings); its values equal the single-group functions below. Two definitions were made
exact on the way: distinct-n in the table used to split on ASCII whitespace only (U+3000,
U+00A0, ... now separate words, as in :func:`distinct_n`), and answer entropy is a
``math.fsum`` (it was a polars sum whose order, hence last bit, could vary between runs).

The per-step table is a mergeable aggregate: :func:`update` turns a chunk of whole groups into a
:class:`DiversityState` (per metric and step, the defined per-group values), :func:`merge` joins
two states, and :func:`compute` takes each mean as ``math.fsum(values) / count``, which is
correctly rounded and so identical however the groups were sharded (a plain float sum is not).
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import numpy as np
import polars as pl
from rapidfuzz.distance import Levenshtein
from rapidfuzz.process import cdist

from ..words import Words
from .schema import ACTIONS, ANSWER, GROUP, RESPONSE, SAMPLE, STATES, STEP

Unit = Literal["word", "char"]
DEFAULT_NS = (1, 2, 3, 4)


def _require(df: pl.DataFrame, *cols: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(Words(f"this metric needs the rollout column(s) {missing}; the table has {df.columns}",
                               f"这个指标需要 rollout 列 {missing}；表中只有这些列：{df.columns}"))


def distinct_n(texts: Sequence[str], n: int) -> float:
    """Pooled distinct-n of a group: |distinct word n-grams| / |all word n-grams| over all texts.

    N-grams never span two texts. NaN when the texts hold no n-gram at all.

    >>> distinct_n(["a b a b", "a b"], 2)
    0.5
    """
    if n < 1:
        raise ValueError(Words(f"n must be >= 1, got {n}", f"n 必须 >= 1，给的是 {n}"))
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


def _mean_pairwise(items: Sequence[Sequence[Hashable]]) -> float:
    """Mean over i < j of d(s_i, s_j) / max(|s_i|, |s_j|) (0 for two empty sequences).

    Integer distances divided here give the same doubles as rapidfuzz's normalized_distance, rounded
    to float32 and averaged in float32 like the result of its ``cdist`` (the historical definition)."""
    n = len(items)
    if n < 2:
        return math.nan
    i, j = _pairs(n)
    dist = cdist(items, items, scorer=Levenshtein.distance, dtype=np.int64, workers=1)[i, j]
    lens = np.array([len(s) for s in items], dtype=np.int64)
    longest = np.maximum(lens[i], lens[j])
    norm = np.divide(dist, longest, out=np.zeros(len(dist)), where=longest > 0).astype(np.float32)
    return float(norm.mean())


@lru_cache(maxsize=64)
def _pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(n, k=1)


def mean_edit_distance(seqs: Sequence[Sequence[Hashable]], *, max_samples: int | None = 16,
                       seed: int = 0) -> float:
    """Mean over pairs i < j of the normalised Levenshtein distance d(s_i, s_j) / max(|s_i|, |s_j|).

    Insert, delete and substitute cost 1; two empty sequences are at distance 0. Sequences may be
    strings (characters) or lists of hashables (words, actions). Groups larger than
    ``max_samples`` are reduced to ``max_samples`` members drawn without replacement by
    ``numpy.random.default_rng(seed)``, so the value is reproducible. NaN for fewer than 2 sequences.
    The pair distances are float32 (rapidfuzz's ``cdist`` type); the mean is taken in float32.

    >>> round(mean_edit_distance(["kitten", "sitting"]), 6)
    0.428571
    """
    return _mean_pairwise(_subsample(list(seqs), max_samples, seed))


def _entropy(counts: Sequence[int]) -> float:
    total = sum(counts)
    if total == 0:
        return math.nan
    # fsum: correctly rounded, so the value does not depend on the order the answers come in
    return -math.fsum(c / total * math.log(c / total) for c in counts)


def answer_entropy(answers: Sequence[str | None]) -> float:
    """Shannon entropy (nats) of the distribution of extracted answers: -sum p_a ln p_a.

    Missing answers (None) are left out; NaN when none is left. 0 when all answers agree,
    ln N when all N differ. The sum is ``math.fsum`` (independent of the answers' order).

    >>> round(answer_entropy(["1", "1", "2", "2", None]), 6)
    0.693147
    """
    return _entropy(list(Counter(a for a in answers if a is not None).values()))


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
            raise ValueError(Words(f"n_states must be >= 1, got {n_states}", f"n_states 必须 >= 1，给的是 {n_states}"))
        return len(set(flat)) / n_states
    return len(set(flat)) / len(flat)


Encoder = Callable[[list[str]], np.ndarray]


def _mean_cosine(emb: np.ndarray) -> float:
    n = emb.shape[0]
    if n < 2:
        return math.nan
    emb = emb.astype(np.float64)
    norm = np.linalg.norm(emb, axis=1, keepdims=True)
    unit = np.divide(emb, norm, out=np.zeros_like(emb), where=norm > 0)
    sim = unit @ unit.T
    return float(sim[np.triu_indices(n, k=1)].mean())


def _encode_checked(encode: Encoder, texts: list[str]) -> np.ndarray:
    emb = np.asarray(encode(texts))
    if emb.ndim != 2 or emb.shape[0] != len(texts):
        raise ValueError(Words(f"encode() must return an array of shape ({len(texts)}, d), got {emb.shape}",
                               f"encode() 必须返回形状为 ({len(texts)}, d) 的数组，实际返回的形状是 {emb.shape}"))
    return emb


def embedding_cosine(texts: Sequence[str], encode: Encoder) -> float:
    """Mean pairwise cosine similarity, over pairs i < j, of ``encode(texts)`` rows.

    ``encode`` maps a list of N texts to an (N, d) array (e.g. :func:`rlvitals.rollout.embedding.encode`);
    zero vectors have similarity 0. NaN for fewer than 2 texts. 1 for identical texts; higher
    means less diverse.

    >>> embedding_cosine(["a", "b"], lambda ts: np.array([[1.0, 0.0], [1.0, 1.0]]))  # doctest: +ELLIPSIS
    0.7071...
    """
    if len(texts) < 2:
        return math.nan
    return _mean_cosine(_encode_checked(encode, list(texts)))


def _embedding_values(df: pl.DataFrame, gid: np.ndarray, n_groups: int, encode: Encoder) -> np.ndarray:
    """Mean pairwise cosine per group; one ``encode`` call per step (a batch of all its responses),
    null responses skipped. ``df`` is sorted by step and group, ``gid`` numbers its groups."""
    out = np.full(n_groups, np.nan)
    keep = df[RESPONSE].is_not_null().to_numpy()
    step_id = df.select(pl.col(STEP).rle_id()).to_series().to_numpy()
    for step_rows in np.split(np.arange(df.height), np.flatnonzero(np.diff(step_id)) + 1):
        rows = step_rows[keep[step_rows]]
        if len(rows) == 0:
            continue
        emb = _encode_checked(encode, df[RESPONSE].gather(rows).to_list())
        bounds = np.flatnonzero(np.diff(gid[rows])) + 1
        for part, members in zip(np.split(emb, bounds), np.split(rows, bounds), strict=True):
            out[gid[members[0]]] = _mean_cosine(part)
    return out


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser (uint64 arithmetic wraps), so n-gram keys depend on word order."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    out: np.ndarray = x ^ (x >> np.uint64(31))
    return out


#: every character ``str.isspace()`` accepts (checked against Python in the tests), so the
#: vectorised split below gives exactly ``str.split()``'s words
WHITESPACE = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000" + "".join(
    chr(c) for c in range(0x2000, 0x200B))


@dataclass(frozen=True)
class _Words:
    """The responses of a table sorted by (step, group[, sample]), split once into words: the
    64-bit polars hash of every word in order, each row's word count and each row's group index."""

    hashes: np.ndarray  # uint64, all words of all rows, row after row
    lens: np.ndarray    # int64 per row
    gid: np.ndarray     # int64 per row, 0..n_groups-1 in table order
    n_groups: int


def _split_words(df: pl.DataFrame) -> _Words:
    # replace_many + split(" ") is much faster than a regex; empty pieces come from runs of spaces
    spaced = pl.col(RESPONSE).fill_null("").str.replace_many(list(WHITESPACE), [" "] * len(WHITESPACE))
    words = df.select(spaced.str.split(" ").list.eval(pl.element().filter(pl.element() != "").hash(7)).alias("h"),
                      pl.struct(STEP, GROUP).rle_id().cast(pl.Int64).alias("gid"))
    gid = words["gid"].to_numpy()
    hashes = words["h"].explode().drop_nulls().to_numpy().astype(np.uint64, copy=False)
    return _Words(hashes, words["h"].list.len().cast(pl.Int64).to_numpy(), gid, int(gid[-1]) + 1 if len(gid) else 0)


def _distinct_values(w: _Words, ns: Sequence[int]) -> dict[str, np.ndarray]:
    """distinct-n per group, vectorised: each n-gram gets the key mix(key of its (n-1)-gram
    prefix) XOR hash(last word); 64-bit keys make collisions negligible at these sizes. A group
    without any word is NaN for every n (like one whose texts are shorter than n)."""
    starts = np.cumsum(w.lens) - w.lens
    left = np.repeat(starts + w.lens, w.lens) - np.arange(len(w.hashes))  # words left in the row from here
    cols: dict[str, np.ndarray] = {"g": np.repeat(w.gid, w.lens).astype(np.int32),
                                   "left": np.minimum(left, max(ns)).astype(np.int32)}
    key = w.hashes
    for n in range(1, max(ns) + 1):
        if n > 1:  # the tail of the table cannot start an n-gram; `left` masks it (and row ends)
            m = max(len(key) - n + 1, 0)
            key = np.concatenate([_mix(key[:m]) ^ w.hashes[n - 1:n - 1 + m], np.zeros(len(key) - m, np.uint64)])
        if n in ns:
            cols[f"k{n}"] = key
    # one group_by for every n: a filtered n_unique per n, so polars walks the words once
    grams = pl.DataFrame(cols).group_by("g").agg(
        pl.col(f"k{n}").filter(pl.col("left") >= n).n_unique() for n in ns)
    where = grams["g"].to_numpy()
    out: dict[str, np.ndarray] = {}
    for n in ns:
        distinct = np.zeros(w.n_groups)
        distinct[where] = grams[f"k{n}"].to_numpy()
        total = np.bincount(w.gid, weights=np.maximum(w.lens - n + 1, 0), minlength=w.n_groups)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[f"diversity/distinct_{n}"] = distinct / total
    return out


def _answer_entropy_frame(df: pl.DataFrame) -> pl.DataFrame:
    counts = (df.filter(pl.col(ANSWER).is_not_null()).group_by(STEP, GROUP, ANSWER).len()
              .group_by(STEP, GROUP).agg("len"))
    values = [_entropy(c) for c in counts["len"].to_list()]
    return counts.select(STEP, GROUP).with_columns(pl.Series("diversity/answer_entropy", values, dtype=pl.Float64))


def _word_codes(w: _Words) -> list[str] | list[list[int]]:
    """Every row as a string with one character per word (equal words, equal characters).

    Words are numbered by falling frequency over the table, so most get a code below 256, which
    rapidfuzz matches with a direct table instead of a hash map (about twice as fast); surrogate
    code points are skipped. With more distinct words than code points, rows are lists of ids."""
    freq = pl.DataFrame({"h": w.hashes}).group_by("h").len().sort(["len", "h"], descending=[True, False])
    ids = np.arange(freq.height, dtype=np.int64)
    ends = np.cumsum(w.lens).tolist()
    if freq.height > 0x10FFFF - 0x800:
        flat = pl.Series(w.hashes).replace_strict(freq["h"], ids, return_dtype=pl.Int64).to_list()
        return [flat[e - n:e] for e, n in zip(ends, w.lens.tolist(), strict=True)]
    ids += np.where(ids >= 0xD800, 0x800, 0)
    codes = pl.Series(w.hashes).replace_strict(freq["h"], ids, return_dtype=pl.UInt32).to_numpy()
    text = codes.astype("<u4").tobytes().decode("utf-32-le")
    return [text[e - n:e] for e, n in zip(ends, w.lens.tolist(), strict=True)]


def _parallel(fn: Callable[[int], float], n: int, workers: int) -> np.ndarray:
    """``[fn(i) for i in range(n)]``; with ``workers`` != 1, groups run on threads (rapidfuzz
    releases the GIL while it computes). -1 means every core."""
    threads = (os.cpu_count() or 1) if workers == -1 else max(workers, 1)
    if threads == 1 or n < 64:
        return np.array([fn(i) for i in range(n)], dtype=np.float64)
    with ThreadPoolExecutor(threads) as pool:
        return np.array(list(pool.map(fn, range(n), chunksize=max(n // (8 * threads), 1))), dtype=np.float64)


def _word_edit_values(w: _Words, max_samples: int | None, seed: int, workers: int) -> np.ndarray:
    """Mean pairwise word-level edit distance per group (every row counts; a null response is "")."""
    bounds = np.searchsorted(w.gid, np.arange(w.n_groups + 1)).tolist()
    rows = _word_codes(w)

    def one(g: int) -> float:
        return _mean_pairwise(_subsample(list(rows[bounds[g]:bounds[g + 1]]), max_samples, seed))

    return _parallel(one, w.n_groups, workers)


def _pairwise_values(df: pl.DataFrame, column: str, gid: np.ndarray, n_groups: int, max_samples: int | None,
                     seed: int, workers: int) -> np.ndarray:
    """Mean pairwise edit distance per group of ``column``'s values (strings or lists); nulls skipped."""
    keep = df[column].is_not_null().to_numpy()
    values = df[column].to_list()
    bounds = np.searchsorted(gid, np.arange(n_groups + 1))

    def one(g: int) -> float:
        return _mean_pairwise(_subsample([values[i] for i in range(bounds[g], bounds[g + 1]) if keep[i]],
                                         max_samples, seed))

    return _parallel(one, n_groups, workers)


def _coverage_frame(df: pl.DataFrame, n_states: int | None) -> pl.DataFrame:
    visits = df.select(STEP, GROUP, STATES).explode(STATES).drop_nulls(STATES)
    denom = pl.lit(n_states, dtype=pl.Float64) if n_states is not None else pl.len()
    return visits.group_by(STEP, GROUP).agg((pl.col(STATES).n_unique() / denom)
                                            .alias("diversity/state_coverage"))


def group_diversity(df: pl.DataFrame, ns: Sequence[int] = DEFAULT_NS, *, unit: Unit = "word",
                    max_samples: int | None = 16, seed: int = 0, workers: int = -1,
                    n_states: int | None = None, embed: Encoder | None = None) -> pl.DataFrame:
    """One row per (step, group) with the diversity metrics its columns allow (null where undefined).

    Needs ``response``; adds answer entropy when ``answer`` is present, action edit distance
    with ``actions`` and state coverage with ``states``. ``unit`` chooses the edit distance's
    symbols: whitespace words (default; ~25x faster on 1 kB texts) or characters. ``workers``
    threads compute the edit distances (-1: every core); it never changes a value. With ``embed``
    (e.g. :func:`rlvitals.rollout.embedding.encode`) it adds ``diversity/embedding_cosine``: the
    mean over pairs i < j of the cosine similarity of the embeddings of the group's non-null
    responses (1 = identical meaning; lower = more diverse), encoding a whole step per call.

    >>> t = pl.DataFrame({"step": [0, 0], "group": ["a", "a"], "sample": [0, 1], "response": ["a b", "a c"]})
    >>> group_diversity(t)["diversity/edit_distance"].to_list()
    [0.5]
    """
    _require(df, STEP, GROUP, RESPONSE)
    if unit not in ("word", "char"):
        raise ValueError(Words(f"unit must be 'word' or 'char', got {unit!r}",
                               f"unit 必须是 'word' 或 'char'，给的是 {unit!r}"))
    if any(n < 1 for n in ns):
        raise ValueError(Words(f"every n of distinct-n must be >= 1, got {tuple(ns)}",
                               f"distinct-n 的每个 n 都必须 >= 1，给的是 {tuple(ns)}"))
    df = df.sort(STEP, GROUP, SAMPLE) if SAMPLE in df.columns else df.sort(STEP, GROUP)
    words = _split_words(df)
    cols = _distinct_values(words, ns)
    keys = df.select(STEP, GROUP, pl.col(RESPONSE).fill_null("")).group_by(STEP, GROUP, maintain_order=True).agg(
        ((pl.len() - pl.col(RESPONSE).n_unique()) / pl.len()).alias("diversity/duplicate_rate"))
    if unit == "word":
        cols["diversity/edit_distance"] = _word_edit_values(words, max_samples, seed, workers)
    else:
        text = df.with_columns(pl.col(RESPONSE).fill_null(""))
        cols["diversity/edit_distance"] = _pairwise_values(text, RESPONSE, words.gid, words.n_groups,
                                                           max_samples, seed, workers)
    if ACTIONS in df.columns:
        cols["diversity/action_edit_distance"] = _pairwise_values(df, ACTIONS, words.gid, words.n_groups,
                                                                  max_samples, seed, workers)
    if embed is not None:
        cols["diversity/embedding_cosine"] = _embedding_values(df, words.gid, words.n_groups, embed)
    out = keys.with_columns(**{k: pl.Series(k, v, dtype=pl.Float64) for k, v in cols.items()})
    if ANSWER in df.columns:
        out = out.join(_answer_entropy_frame(df), on=[STEP, GROUP], how="left")
    if STATES in df.columns:
        out = out.join(_coverage_frame(df, n_states), on=[STEP, GROUP], how="left")
    order = _column_order([c for c in out.columns if c not in (STEP, GROUP)])
    return out.select(STEP, GROUP, *order).with_columns(pl.col(order).fill_nan(None)).sort(STEP, GROUP)


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
             workers: int = -1, n_states: int | None = None, embed: Encoder | None = None) -> tuple[object, ...]:
    del workers  # parallelism never changes a value, so states made with different workers merge
    return (tuple(ns), unit, max_samples, seed, n_states, embed)


def update(state: DiversityState | None, chunk: pl.DataFrame, **options: Any) -> DiversityState:
    """Add the whole groups of ``chunk`` to ``state`` (None: start a new one).

    ``options`` are those of :func:`group_diversity` (``ns``, ``unit``, ``max_samples``, ``seed``,
    ``workers``, ``n_states``, ``embed``) and must match the state's (``embed`` by identity). A group
    must lie in one chunk only. Every column is then bit-exact whatever the sharding, except
    ``diversity/embedding_cosine``: a neural encoder's float32 output moves in the last bits with
    the batch it is run in (padding), so shards that split a step agree to ~1e-7, not exactly.

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
                         "use the same ns, unit, max_samples, seed, n_states and embed for every shard")
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
