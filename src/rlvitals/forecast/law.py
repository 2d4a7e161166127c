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

from dataclasses import dataclass

import numpy as np

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
    #: every replicate's (a, b): forecasts carry their uncertainty forward through these
    replicates: np.ndarray

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


def line_fits(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares ``y = b − a·x`` along the last axis of ``x`` and ``y`` (one line per row):
    ``(a, b)``. A row whose ``x`` does not vary has no slope: ``a`` is 0 and ``b`` the mean of ``y``."""
    xm, ym = x.mean(axis=-1, keepdims=True), y.mean(axis=-1, keepdims=True)
    sxx = ((x - xm) ** 2).sum(axis=-1)
    sxy = ((x - xm) * (y - ym)).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = np.where(sxx > 0, sxy / np.where(sxx > 0, sxx, 1.0), 0.0)
    a = -slope
    b = ym[..., 0] + a * xm[..., 0]
    return a, b


def block_indices(n: int, replicates: int, rng: np.random.Generator, block: int | None = None) -> np.ndarray:
    """Moving-block bootstrap resamples of ``range(n)``: ``replicates`` rows of ``n`` indices made of runs
    of ``block`` consecutive indices (``round(n ** (1/3))`` by default), so each replicate keeps the
    short-range correlation of neighbouring steps.

    >>> rows = block_indices(10, 3, np.random.default_rng(0), block=5)
    >>> rows.shape, bool(((np.diff(rows, axis=1) == 1) | (np.arange(1, 10) % 5 == 0)).all())
    ((3, 10), True)
    """
    block = max(1, min(n, block if block is not None else round(n ** (1 / 3))))
    starts = rng.integers(0, n - block + 1, size=(replicates, -(-n // block)))
    rows = (starts[:, :, None] + np.arange(block)).reshape(replicates, -1)[:, :n]
    out: np.ndarray = rows
    return out


def _explained(x: np.ndarray, y: np.ndarray, a: float, b: float, bins: int) -> float:
    """Share of the variance of the performance's level over ``bins`` consecutive stretches that the
    law's line accounts for (R² of the binned means; bins average the step-to-step noise away, so what is
    left is how the performance moved, which the law must explain)."""
    edges = np.linspace(0, len(x), bins + 1).astype(int)
    xb = np.array([x[i:j].mean() for i, j in zip(edges[:-1], edges[1:], strict=True)])
    yb = np.array([y[i:j].mean() for i, j in zip(edges[:-1], edges[1:], strict=True)])
    total = float(((yb - yb.mean()) ** 2).sum())
    if total <= 0:
        return 0.0
    return 1.0 - float(((yb - (b - a * xb)) ** 2).sum()) / total


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
    x = np.exp(h)
    a, b = (float(v) for v in line_fits(x, r))
    rows = block_indices(len(x), replicates, np.random.default_rng(seed))
    ra, rb = line_fits(x[rows], r[rows])
    reps = np.column_stack([ra, rb])
    bins = max(3, min(bins, len(x)))
    resid = r - (b - a * x)
    return LawFit(a, b, _interval(ra), _interval(rb), _interval(rb - ra), _explained(x, r, a, b, bins),
                  float(np.sqrt((resid ** 2).sum() / max(1, len(x) - 2))), len(x), bins, reps)


def _interval(values: np.ndarray) -> tuple[float, float]:
    lo, hi = np.quantile(values, [LOW, HIGH])
    return float(lo), float(hi)
