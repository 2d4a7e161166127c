"""Per-group sampling estimators: unbiased pass@k, G-Pass@k, mG-Pass@k and exact maj@k.

Every estimator takes the counts of one or many groups (``n`` = rollouts in the group, ``c`` =
correct rollouts) and returns one value per group. A group with fewer rollouts than ``k`` has no
unbiased estimate, so its value is NaN (human-eval skips such a k; lighteval returns 0 for
G-Pass@k — we prefer NaN so a mean over groups can leave these groups out).

The work is done once per distinct ``(n, c)`` pair (a step rarely has more than a few hundred),
so the vectorised functions cost one ``np.unique`` plus a table lookup.

maj@k is computed exactly: the expectation over all ``C(n, k)`` subsets of size k (drawn without
replacement) of "the majority answer of the subset is correct". **Tie rule:** when several answers
share the top count in a subset, the vote picks one of them uniformly at random, so a tie between t
answers contributes ``1/t`` of each tied answer's correctness. (lighteval's ``MajAtN`` gives a tie to
the earliest answer instead; that depends on the order of the rollouts, which a set of samples does
not have.) A rollout without an extracted answer is its own distinct answer that no other rollout
shares. If rollouts with the same answer disagree on correctness, the answer counts as correct with
the fraction of its rollouts that are correct.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from ..words import Words

__all__ = [
    "g_pass_at_k", "maj_at_k", "maj_at_k_answers", "maj_curve", "maj_curves", "mg_pass_at_k", "pass_at_k",
    "pass_curves",
]

IntArray = npt.ArrayLike
FloatArray = npt.NDArray[np.float64]


def _check_counts(n: IntArray, c: IntArray, k: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    n_arr = np.asarray(n, dtype=np.int64)
    c_arr = np.asarray(c, dtype=np.int64)
    if k < 1:
        raise ValueError(Words(f"k must be a positive integer, got k={k}", f"k 必须是正整数，给的是 k={k}"))
    if np.any(c_arr < 0) or np.any(c_arr > n_arr):
        raise ValueError(Words("every group needs 0 <= c <= n (c correct out of n rollouts); got c outside that range",
                               "每组都要满足 0 <= c <= n（n 条 rollout 中有 c 条正确）；给的 c 超出了这个范围"))
    return np.broadcast_arrays(n_arr, c_arr)  # type: ignore[return-value]


class _Pairs:
    """The distinct (n, c) pairs of many groups, found once: ``of(fn)`` evaluates ``fn(n, c)`` once per pair
    and scatters the values back to the groups."""

    def __init__(self, n: IntArray, c: IntArray, k: int) -> None:
        n_arr, c_arr = _check_counts(n, c, k)
        self.shape = n_arr.shape
        self.pairs: list[tuple[int, int]] = []
        self.inverse = np.zeros(0, dtype=np.intp)
        if n_arr.size:
            key = n_arr.ravel() * (int(c_arr.max()) + 1) + c_arr.ravel()
            _, first, self.inverse = np.unique(key, return_index=True, return_inverse=True)
            self.pairs = list(zip(n_arr.ravel()[first].tolist(), c_arr.ravel()[first].tolist(), strict=True))

    def of(self, fn: Callable[[int, int], float]) -> FloatArray:
        if not self.pairs:
            return np.zeros(self.shape, dtype=np.float64)
        vals = np.array([fn(a, b) for a, b in self.pairs], dtype=np.float64)
        return vals[self.inverse].reshape(self.shape)


def _per_pair(n: IntArray, c: IntArray, k: int, fn: Callable[[int, int], float]) -> FloatArray:
    """Evaluate ``fn(n, c)`` once per distinct (n, c) pair and scatter the values back."""
    return _Pairs(n, c, k).of(fn)


def _pass_one(n: int, c: int, k: int) -> float:
    if n < k:
        return math.nan
    if n - c < k:
        return 1.0
    # Chen et al.'s product form: C(n-c, k) / C(n, k) = prod_{i=n-c+1}^{n} (1 - k/i)
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def pass_at_k(n: IntArray, c: IntArray, k: int) -> FloatArray:
    """Unbiased pass@k per group: ``1 - C(n-c, k) / C(n, k)``, NaN where ``n < k``.

    Uses the numerically stable product form; exactly 1.0 when ``n - c < k``.

    >>> pass_at_k([10, 10, 3], [3, 0, 1], 5).round(6).tolist()
    [0.916667, 0.0, nan]
    """
    return _per_pair(n, c, k, lambda a, b: _pass_one(a, b, k))


@lru_cache(maxsize=65536)
def _hyper_tail(n: int, c: int, k: int, m: int) -> float:
    """P[X >= m] for X ~ Hypergeom(population n, successes c, draws k), exact in integers."""
    if k > n:
        return math.nan
    lo, hi = max(m, 0, k - (n - c)), min(c, k)
    if lo > hi:
        return 0.0
    num = sum(math.comb(c, x) * math.comb(n - c, k - x) for x in range(lo, hi + 1))
    return num / math.comb(n, k)  # int / int is correctly rounded


def g_pass_at_k(n: IntArray, c: IntArray, k: int, tau: float = 0.5) -> FloatArray:
    """G-Pass@k_τ per group: P[X ≥ max(ceil(k·τ), 1)], X ~ Hypergeom(n, c, k); NaN where ``n < k``.

    τ = 0 gives pass@k; τ = 1 asks for all k draws to be correct.

    >>> g_pass_at_k([8], [4], 5, tau=0.25).round(6).tolist()
    [0.928571]
    """
    if not 0.0 <= tau <= 1.0:
        raise ValueError(Words(f"tau must be in [0, 1], got {tau}", f"tau 必须在 [0, 1] 之内，给的是 {tau}"))
    m = max(math.ceil(k * tau), 1)
    return _per_pair(n, c, k, lambda a, b: _hyper_tail(a, b, k, m))


def pass_curves(n: IntArray, c: IntArray, ks: Sequence[int], tau: float = 0.5
                ) -> tuple[dict[int, FloatArray], dict[int, FloatArray]]:
    """pass@k and G-Pass@k_τ per group for every k in ``ks`` (``{k: values}`` each): the values of
    :func:`pass_at_k` and :func:`g_pass_at_k`, bit for bit, with the distinct (n, c) pairs found once.

    >>> p, g = pass_curves([10, 3], [3, 1], (1, 5))
    >>> p[5].round(6).tolist(), g[5][:1].tolist() == g_pass_at_k([10], [3], 5).tolist()
    ([0.916667, nan], True)
    """
    if not 0.0 <= tau <= 1.0:
        raise ValueError(Words(f"tau must be in [0, 1], got {tau}", f"tau 必须在 [0, 1] 之内，给的是 {tau}"))
    pairs = _Pairs(n, c, min(ks, default=1))
    passes, g_passes = {}, {}
    for k in ks:
        m = max(math.ceil(k * tau), 1)
        passes[k] = pairs.of(lambda a, b, k=k: _pass_one(a, b, k))  # type: ignore[misc]
        g_passes[k] = pairs.of(lambda a, b, k=k, m=m: _hyper_tail(a, b, k, m))  # type: ignore[misc]
    return passes, g_passes


def mg_pass_at_k(n: IntArray, c: IntArray, k: int) -> FloatArray:
    """mG-Pass@k per group: ``(2/k) · Σ_{i=ceil(k/2)+1}^{k} P[X ≥ i]``; NaN where ``n < k``.

    >>> mg_pass_at_k([4], [2], 2).round(6).tolist()
    [0.166667]
    """
    lo = math.ceil(k / 2) + 1

    def one(a: int, b: int) -> float:
        if a < k:
            return math.nan
        return 2.0 / k * sum(_hyper_tail(a, b, k, i) for i in range(lo, k + 1))

    return _per_pair(n, c, k, one)


_Memo = dict[tuple[Any, ...], FloatArray]
#: doubles hold every integer below this exactly
_EXACT_BELOW = 1 << 53


def _pooled_poly(pool: int, big: tuple[int, ...], width: int, j: int, kmax: int, memo: _Memo) -> FloatArray:
    """Ways to draw x rollouts from the other answers with every count <= j and t counts == j.

    The answers with fewer than j rollouts can never tie or beat a: by Vandermonde they draw like one
    ``pool``; ``big`` are the counts of the others that hold j or more, ``width`` how many others there are
    (the t axis).
    Returns P[x, t] (float; the counts are integers, exact up to 2**53, then rounded)."""
    poly = np.zeros((kmax + 1, width + 1), dtype=np.float64)
    poly[: min(pool, kmax) + 1, 0] = [float(math.comb(pool, i)) for i in range(min(pool, kmax) + 1)]
    total = pool + sum(big)
    # every count (and every partial sum of one) is at most C(total, x): below 2**53 all are exact integers, so
    # a product of matrices gives the very numbers the term-by-term sums give
    exact = math.comb(total, min(kmax, total // 2)) < _EXACT_BELOW
    for m_b in big:
        if exact:
            step, tie = _draws(m_b, j, kmax, memo)
            new = step @ poly
            if tie:
                new[j:, 1:] += tie * poly[: kmax + 1 - j, :-1]
            poly = new
            continue
        new = np.zeros_like(poly)
        for i in range(min(m_b, j, kmax) + 1):
            w = float(math.comb(m_b, i))
            if i == j:
                new[i:, 1:] += w * poly[: kmax + 1 - i, :-1]
            else:
                new[i:, :] += w * poly[: kmax + 1 - i, :]
        poly = new
    return poly


def _draws(m_b: int, j: int, kmax: int, memo: _Memo) -> tuple[FloatArray, float]:
    """Drawing i < j of answer b's m_b rollouts as a matrix over x (``C(m_b, i)`` on the i-th lower diagonal),
    and the weight ``C(m_b, j)`` of drawing exactly j (a tie, which moves t; 0 when it cannot happen)."""
    key = ("draws", m_b, j, kmax)
    got = memo.get(key)
    if got is None:
        lag = np.subtract.outer(np.arange(kmax + 1), np.arange(kmax + 1))
        top = min(m_b, j - 1, kmax)
        w = np.array([float(math.comb(m_b, i)) for i in range(top + 1)])
        got = memo[key] = np.where((lag >= 0) & (lag <= top), w[np.clip(lag, 0, top)], 0.0)
    tie = float(math.comb(m_b, j)) if j <= min(m_b, kmax) else 0.0
    return got, tie


def _share(others: Sequence[int], j: int, kmax: int, memo: _Memo) -> FloatArray:
    """Per x: the ways the others draw x rollouts with none above j, each weighted by 1/(1 + ties at j) —
    answer a's share of the vote when it holds j of the draw. Memoised on what the DP depends on."""
    big = tuple(m_b for m_b in others if m_b >= j)  # the DP depends on the others only through these
    key = (sum(others) - sum(big), big, len(others), j, kmax)
    got = memo.get(key)
    if got is None:
        poly = _pooled_poly(*key, memo)
        got = memo[key] = poly @ (1.0 / np.arange(1, poly.shape[1] + 1))
    return got


def _wins(others: tuple[int, ...], m_a: int, kmax: int, memo: _Memo) -> FloatArray:
    """Per k: the number of k-subsets in which answer a (m_a rollouts, beside ``others``) wins the vote,
    ties shared; memoised per (others, m_a)."""
    key = ("wins", others, m_a, kmax)
    acc = memo.get(key)
    if acc is None:
        acc = np.zeros(kmax + 1, dtype=np.float64)
        for j in range(1, min(m_a, kmax) + 1):
            acc[j:] += math.comb(m_a, j) * _share(others, j, kmax - j, memo)
        memo[key] = acc
    return acc


def _curve(signature: tuple[tuple[int, int], ...], kmax: int, memo: _Memo) -> tuple[float, ...]:
    counts = [m for m, _ in signature]
    n = sum(counts)
    wins = np.zeros(kmax + 1, dtype=np.float64)
    done: dict[tuple[int, int], FloatArray] = {}
    for idx, (m_a, mc_a) in enumerate(signature):
        if mc_a == 0:
            continue
        if (m_a, mc_a) not in done:  # answers with the same (count, correct) win equally often
            done[(m_a, mc_a)] = _wins(tuple(counts[:idx] + counts[idx + 1:]), m_a, kmax, memo)
        wins += (mc_a / m_a) * done[(m_a, mc_a)]
    out = [wins[k] / math.comb(n, k) if k <= n else math.nan for k in range(1, kmax + 1)]
    return tuple(float(v) for v in out)


@lru_cache(maxsize=65536)
def maj_curve(signature: tuple[tuple[int, int], ...], kmax: int) -> tuple[float, ...]:
    """Exact maj@k for k = 1..kmax of one group given as ``((m_a, correct_a), ...)``: for each distinct
    answer a, its count m_a and how many of those rollouts are correct. NaN for k > n.

    >>> maj_curve(((2, 2), (1, 0)), 3)
    (0.6666666666666666, 0.6666666666666666, 1.0)
    """
    return _curve(signature, kmax, {})


def maj_curves(signatures: Sequence[tuple[tuple[int, int], ...]], kmax: int) -> list[tuple[float, ...]]:
    """:func:`maj_curve` of many groups, sharing the vote counts of equal answer-count patterns between them
    (for one call, not kept after it): the same values, bit for bit, as one call per group.

    >>> sigs = [((1, 0), (2, 2)), ((1, 1), (2, 0))]
    >>> maj_curves(sigs, 3) == [maj_curve(s, 3) for s in sigs]
    True
    """
    memo: _Memo = {}
    return [_curve(s, kmax, memo) for s in signatures]


def maj_at_k(counts: Sequence[int], correct: Sequence[int], k: int) -> float:
    """Exact maj@k of one group from its answer counts and the number of correct rollouts per answer.

    >>> maj_at_k([1, 1, 1], [1, 0, 0], 3)   # three-way tie: the correct answer wins 1/3 of the time
    0.3333333333333333
    """
    if k < 1:
        raise ValueError(Words(f"k must be a positive integer, got k={k}", f"k 必须是正整数，给的是 k={k}"))
    if len(counts) != len(correct) or any(not 0 <= b <= a for a, b in zip(counts, correct, strict=True)):
        raise ValueError(Words("counts and correct must pair up with 0 <= correct[i] <= counts[i]",
                               "counts 与 correct 必须一一对应，且 0 <= correct[i] <= counts[i]"))
    sig = tuple(sorted(zip((int(a) for a in counts), (int(b) for b in correct), strict=True)))
    return maj_curve(sig, k)[k - 1]


def maj_at_k_answers(answers: Sequence[str | None], correct: Sequence[bool], k: int) -> float:
    """Exact maj@k of one group from per-rollout answers (None = no answer) and correctness.

    >>> maj_at_k_answers(["4", "4", "5", None], [True, True, False, False], 3)
    0.6666666666666666
    """
    if len(answers) != len(correct):
        raise ValueError(Words(f"answers ({len(answers)}) and correct ({len(correct)}) must have the same length",
                               f"answers（{len(answers)} 个）与 correct（{len(correct)} 个）的长度必须相同"))
    tally: dict[object, list[int]] = {}
    for i, (a, ok) in enumerate(zip(answers, correct, strict=True)):
        cell = tally.setdefault(("\0none", i) if a is None else a, [0, 0])
        cell[0] += 1
        cell[1] += int(bool(ok))
    return maj_at_k([v[0] for v in tally.values()], [v[1] for v in tally.values()], k)
