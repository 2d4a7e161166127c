"""The entropy–performance law of Cui et al. 2025 ("The Entropy Mechanism of Reinforcement Learning for
Reasoning Language Models", arXiv 2505.22617, Eq. 6): over an RL run, validation performance follows

    R = −a · exp(H) + b

in the policy's entropy H (nats), across model families and algorithms (GRPO, RLOO, PRIME,
REINFORCE++). Performance is bought by spending entropy; at H = 0 nothing is left to spend, so
``b − a`` is the ceiling. The law is linear in ``x = exp(H)``, so the fit is a straight line through
``(exp(H), R)``; what makes it trustworthy is the rest: intervals from a moving-block bootstrap over
the run's steps (neighbouring steps are correlated, so single points are not resampled), and a verdict
on whether the law holds at all, read from the fit itself, before anything is forecast from it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .resample import Resamples, block_indices, exact_quantiles, line_fits, seeded_starts

__all__ = ["LawFit", "block_indices", "fit_law", "line_fits"]

#: bootstrap replicates; fixed, with a fixed seed, so the same run always gives the same intervals
REPLICATES = 400
SEED = 20250528
#: the 95 % interval's quantiles
LOW, HIGH = 0.025, 0.975


@dataclass(frozen=True)
class LawFit:
    """``R = b − a·exp(H)`` fitted to ``n`` (entropy, performance) pairs, with 95 % intervals.

    ``explained`` is the share of how the performance moved over the run (its level in ``bins``
    stretches of consecutive points) that the law accounts for: 1 for a run on the law, near 0 for one
    whose performance moved with something other than its entropy."""

    a: float
    b: float
    a_interval: tuple[float, float]
    b_interval: tuple[float, float]
    ceiling_interval: tuple[float, float]
    explained: float
    residual_sd: float
    n: int
    bins: int
    #: every replicate's (a, b): forecasts carry their uncertainty forward through these (pooled from the
    #: resamples' blocks: within ``slack`` of the plain fits, which ``resamples`` gives exactly)
    replicates: np.ndarray
    resamples: Resamples | None = field(default=None, repr=False, compare=False)
    #: how far a replicate's ``a`` and ``b`` may be from the plain fit of its resample
    slack: tuple[float, float] = (0.0, 0.0)

    @property
    def ceiling(self) -> float:
        """The performance at zero entropy, ``b − a``."""
        return self.b - self.a

    def at(self, entropy: np.ndarray | float) -> np.ndarray:
        """The law's performance at ``entropy`` (nats).

        >>> fit = fit_law(np.linspace(2.0, 0.5, 20), 0.8 - 0.1 * np.exp(np.linspace(2.0, 0.5, 20)))
        >>> round(float(fit.at(0.0)), 6), round(fit.ceiling, 6)
        (0.7, 0.7)
        """
        out: np.ndarray = self.b - self.a * np.exp(np.asarray(entropy, dtype=float))
        return out


def _explained(x: np.ndarray, y: np.ndarray, a: float, b: float, bins: int) -> float:
    """Share of the variance of the performance's level over ``bins`` consecutive stretches that the
    law's line accounts for (R² of the binned means; bins average the step-to-step noise away, so what is
    left is how the performance moved, which the law must explain)."""
    edges = np.linspace(0, len(x), bins + 1).astype(int)
    xb, yb = _bin_means(x, edges), _bin_means(y, edges)
    total = float(((yb - yb.mean()) ** 2).sum())
    if total <= 0:
        return 0.0
    return 1.0 - float(((yb - (b - a * xb)) ** 2).sum()) / total


def _bin_means(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The mean of each ``x[edges[i]:edges[i + 1]]``, bins of a length at a time (the means of the rows of a
    gathered matrix are the slices' means to the bit: each row is summed as the slice is)."""
    lengths = np.diff(edges)
    out = np.empty(len(lengths))
    for width in sorted(set(lengths.tolist())):
        at = np.flatnonzero(lengths == width)
        out[at] = np.lib.stride_tricks.sliding_window_view(x, width)[edges[at]].mean(axis=-1)
    return out


#: the largest float64
_LARGEST = float(np.finfo(np.float64).max)


def fits_in(n: int) -> float:
    """The largest |value| (of ``exp(entropy)`` and of the performance) :func:`fit_law` takes for ``n`` pairs: the
    sums of squares of ``n`` such values, their deviations and their residuals stay finite.

    >>> f"{fits_in(100):.2e}"
    '3.35e+152'
    """
    return math.sqrt(_LARGEST / (16.0 * max(n, 1)))


def in_range(entropy: np.ndarray, performance: np.ndarray) -> bool:
    """Whether :func:`fit_law` can fit these pairs: ``exp(entropy)`` and ``|performance|`` below
    :func:`fits_in` of their number.

    >>> in_range(np.array([1.0, 0.5]), np.array([0.2, 0.4])), in_range(np.array([400.0]), np.array([0.2]))
    (True, False)
    """
    bound = fits_in(len(entropy))
    return bool(np.max(entropy) < math.log(bound) and np.abs(performance).max() < bound)


def fit_law(entropy: np.ndarray, performance: np.ndarray, *, replicates: int = REPLICATES,
            seed: int = SEED, bins: int = 12) -> LawFit:
    """Fit ``performance = b − a·exp(entropy)`` to pairs in step order.

    The pairs must be finite and at least 3. The intervals are the 2.5 and 97.5 percentiles over
    ``replicates`` moving-block resamples, from a generator seeded with ``seed`` (the same pairs always
    give the same intervals).

    >>> h = np.linspace(1.5, 0.2, 40)
    >>> fit = fit_law(h, 0.9 - 0.2 * np.exp(h))
    >>> round(fit.a, 6), round(fit.b, 6), round(fit.explained, 6)
    (0.2, 0.9, 1.0)
    """
    h, r = np.asarray(entropy, dtype=float), np.asarray(performance, dtype=float)
    if len(h) != len(r) or len(h) < 3 or not (np.isfinite(h).all() and np.isfinite(r).all()):
        raise ValueError(f"fit_law needs at least 3 finite pairs of equal length, got {len(h)} and {len(r)}")
    if not in_range(h, r):
        raise ValueError(f"fit_law needs exp(entropy) and the performance below {fits_in(len(h)):.3g} in size "
                         f"(their sums of squares overflow past it), got entropy up to {h.max():.3g} and "
                         f"|performance| up to {np.abs(r).max():.3g}")
    x = np.exp(h)
    a, b = (float(v) for v in line_fits(x, r))
    resamples = Resamples(x, r, *seeded_starts(len(x), replicates, seed))
    reps, slack_a, slack_b = resamples.fits()
    reps.setflags(write=False)

    def exact(which: np.ndarray) -> np.ndarray:
        ab = resamples.exact(which)
        return np.column_stack([ab, ab[:, 1] - ab[:, 0]])

    fast = np.column_stack([reps, reps[:, 1] - reps[:, 0]])
    (a_lo, b_lo, c_lo), (a_hi, b_hi, c_hi) = exact_quantiles(
        fast, [LOW, HIGH], exact, np.array([slack_a, slack_b, slack_a + slack_b])).tolist()
    bins = max(3, min(bins, len(x)))
    resid = r - (b - a * x)
    return LawFit(a, b, (a_lo, a_hi), (b_lo, b_hi), (c_lo, c_hi), _explained(x, r, a, b, bins),
                  float(np.sqrt((resid ** 2).sum() / max(1, len(x) - 2))), len(x), bins, reps, resamples,
                  (slack_a, slack_b))
