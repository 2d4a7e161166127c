"""The answer votes of every group of a table at once: exact maj@1..kmax per group (groups.py's maj@k).

A group's vote depends only on its *signature*: for each distinct answer, how many rollouts gave it and how
many of those are correct (:func:`.passk.maj_curve`). So the rollouts are counted per (group, answer) in
NumPy — answers coded as dense integers, the counts taken by ``np.bincount`` (or one sort when the grid of
groups × answers would be too large) — each group's signature is read off one sort, and the DP runs once
per distinct signature (:func:`.passk.maj_curves`). The values are those of one ``maj_curve`` call per group.

A rollout without an answer is a singleton answer of its own; a group in which no rollout states an answer
has no vote (NaN: voting among its singletons would only score its pass@1).

>>> import polars as pl
>>> m = maj_matrix(np.array([0, 0, 0, 1]), np.array([1, 1, 0, 1]), pl.Series(["x", "x", "y", None]), 2, 2)
>>> m[0].tolist(), bool(np.isnan(m[1]).all())
([0.6666666666666666, 0.6666666666666666], True)
"""

from __future__ import annotations

import numpy as np
import polars as pl

from ..words import Words
from .passk import maj_curves

#: (count, correct) of an answer packed in one integer, as ``count * PACK + correct``
PACK = 4096


def answer_codes(answer: pl.Series) -> tuple[np.ndarray, int]:
    """Per row a dense code of its answer in ``0 .. A - 1`` (any value on a null row), and A, the number of
    distinct answers. By their 64-bit hashes when those differ for every distinct answer of the column (a
    search in A sorted numbers), else by value.

    >>> codes, a = answer_codes(pl.Series(["b", "a", None, "b"]))
    >>> a, bool(codes[0] == codes[3] != codes[1])
    (2, True)
    """
    distinct = answer.drop_nulls().unique()
    hashes = np.sort(distinct.hash().to_numpy())
    if np.any(hashes[1:] == hashes[:-1]):  # two answers share a hash: code them by value
        codes = answer.replace_strict(distinct, pl.int_range(distinct.len(), eager=True), default=0,
                                      return_dtype=pl.Int64)
        return codes.to_numpy(), distinct.len()
    return np.searchsorted(hashes, answer.hash().to_numpy()).astype(np.int64), int(hashes.size)


def _tally(gid: np.ndarray, code: np.ndarray, ok: np.ndarray, answers: int, groups: int
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per (group, answer) present: the group, the count and the correct count."""
    if groups * answers <= 2 * gid.size + (1 << 16):
        key = gid * answers + code
        count = np.bincount(key, minlength=groups * answers)
        good = np.bincount(key, weights=ok, minlength=groups * answers)  # exact: counts below 2**53
        used = np.flatnonzero(count)
        return used // answers, count[used], good[used].astype(np.int64)
    order = np.lexsort((code, gid))  # too many answers for a dense grid: one sort
    g, c = gid[order], code[order]
    starts = np.flatnonzero(np.r_[True, (g[1:] != g[:-1]) | (c[1:] != c[:-1])])
    return g[starts], np.diff(np.r_[starts, g.size]), np.add.reduceat(ok[order], starts)


#: an odd multiplier per position in a signature (mod 2**64): a group's fingerprint is its packed counts, each + 1,
#: times these, summed; groups that share a fingerprint are compared entry by entry, so a collision costs time only
_MIX = np.uint64(0x9E3779B97F4A7C15)


def _signatures(g: np.ndarray, packed: np.ndarray) -> tuple[np.ndarray, list[bytes], np.ndarray]:
    """The groups that vote, their distinct signatures (the packed counts ascending, as bytes), and each
    group's index among them."""
    key = np.sort(g * (PACK * PACK) + packed)
    g, packed = key // (PACK * PACK), key % (PACK * PACK)
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    sizes = np.diff(np.r_[starts, g.size])
    pos = np.arange(g.size) - np.repeat(starts, sizes)
    weights = np.cumprod(np.full(int(sizes.max()), _MIX, dtype=np.uint64)) | np.uint64(1)  # wraps: mod 2**64
    fingerprint = np.add.reduceat((packed.astype(np.uint64) + np.uint64(1)) * weights[pos], starts)
    _, first, index = np.unique(fingerprint, return_index=True, return_inverse=True)
    rep = first[index]  # per group, the first group with its fingerprint: the same signature, or a collision
    same = bool(np.array_equal(sizes[rep], sizes)) and bool(
        np.array_equal(packed[np.repeat(starts[rep], sizes) + pos], packed))
    buf = packed.tobytes()
    bounds = (np.r_[starts, g.size] * packed.itemsize).tolist()
    if same:
        sigs = [buf[bounds[i]:bounds[i + 1]] for i in first.tolist()]
        return g[starts], sigs, index.astype(np.int64)
    seen: dict[bytes, int] = {}  # two signatures share a fingerprint: tell them apart by their bytes
    slow = [seen.setdefault(buf[a:b], len(seen)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    return g[starts], list(seen), np.asarray(slow, dtype=np.int64)


def maj_matrix(gid: np.ndarray, ok: np.ndarray, answer: pl.Series, groups: int, kmax: int) -> np.ndarray:
    """Exact maj@1..kmax (columns) of each group ``0 .. groups - 1`` (rows), from the rollouts whose
    correctness is known: per rollout its group ``gid``, ``ok`` (1 or 0) and its answer (null: none). NaN
    where k exceeds the group's rollouts and for a group with no vote."""
    gid, ok = np.asarray(gid, dtype=np.int64), np.asarray(ok, dtype=np.int64)
    out = np.full((groups, kmax), np.nan)
    has = answer.is_not_null().to_numpy()
    if not has.any():
        return out
    code, answers = answer_codes(answer)
    g, m, mc = _tally(gid[has], code[has], ok[has], answers, groups)
    votes = np.zeros(groups, dtype=bool)
    votes[g] = True
    alone = ~has & votes[gid]  # the answerless rollouts of a group that votes: singletons
    if int(m.max()) >= PACK:
        raise ValueError(Words("maj@k needs groups of fewer than 4096 rollouts; drop the answer column for larger "
                               "groups",
                               "maj@k 要求每组少于 4096 条 rollout；组更大时请去掉 answer 列"))
    voting, sigs, index = _signatures(np.r_[g, gid[alone]], np.r_[m * PACK + mc, PACK + ok[alone]])
    decoded = [tuple(divmod(v, PACK) for v in np.frombuffer(s, dtype=np.int64).tolist()) for s in sigs]
    out[voting] = np.asarray(maj_curves(decoded, kmax), dtype=np.float64).reshape(len(sigs), kmax)[index]
    return out
