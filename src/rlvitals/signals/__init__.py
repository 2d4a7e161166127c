"""Series primitives: pure functions over one metric's values (ordered by step).

Everything here is scale-free: a spike, a shift or a collapse is measured against the
series' own robust level and spread (median and MAD over a trailing window), so the same
defaults work for an entropy of 0.05 nats and one of 2 nats, and for a KL of 1e-4 and 0.5.
Functions take plain NumPy arrays (NaN-free: callers drop non-finite values first) and
return indices into them; checks turn indices into steps.

Modules: :mod:`.events` (scale, runs, spikes, shifts), :mod:`.collapse` (falls that stay down), :mod:`.levels`
(slopes, trends, rolling levels), :mod:`.jumps` (level jumps and early moves), :mod:`.median` (NumPy's median
of one series, without its overhead, and polars' rolling median, faster for a small window).
"""

from __future__ import annotations

from .collapse import collapse, collapse_candidate
from .events import (
    MAD_TO_SD,
    Event,
    change_point,
    level_shift,
    noise_scale,
    ratio_spikes,
    robust_scale,
    runs_of,
    spikes,
    trailing_median,
    trailing_scale,
)
from .jumps import Jump, early_move, jumps, plateau_end
from .levels import bucket_medians, fall_from_peak, quantum, rolling_level, sustained_above, theil_sen, trend
from .median import median, rolling_median

__all__ = ["Event", "Jump", "MAD_TO_SD", "bucket_medians", "change_point", "collapse", "collapse_candidate",
           "early_move", "fall_from_peak", "jumps", "level_shift", "median", "noise_scale", "plateau_end", "quantum",
           "ratio_spikes", "robust_scale", "rolling_level", "rolling_median", "runs_of", "spikes", "sustained_above",
           "theil_sen", "trailing_median", "trailing_scale", "trend"]
