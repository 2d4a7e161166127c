"""The training reward and its range as the checks read them, the truncation share that says whether a reward
"at its top" is a solved batch, and the two-level severity most checks use."""

from __future__ import annotations

from typing import cast

import numpy as np

from ..signals import median
from ._base import RunView, Series, Status

__all__ = ["REWARD_KEYS", "TRUNCATION_KEYS", "natural_bounds", "reward_bounds", "reward_of", "severity",
           "truncated_after"]

REWARD_KEYS = ("critic/score/mean", "critic/rewards/mean")


def severity(bad: bool) -> Status:
    """``fail`` when the worse threshold is crossed, else ``warn``."""
    return "fail" if bad else "warn"


def reward_of(view: RunView) -> Series | None:
    """The batch mean reward: the verifier score when logged, else the reward after penalties."""
    return view.first(*REWARD_KEYS)


def natural_bounds(view: RunView, reward: Series) -> tuple[float, float] | None:
    """The reward's natural range — the median batch min and max logged beside the mean (0 and 1
    for a 0/1 verifier) — or None when the run did not log them. It depends on the reward's key only: taken
    once per view, as several checks ask for it."""
    prefix = reward.key.rsplit("/", 1)[0]

    def bounds() -> tuple[float, float] | None:
        lo, hi = view.series(prefix + "/min"), view.series(prefix + "/max")
        if lo is not None and hi is not None:
            a, b = float(median(lo.values)), float(median(hi.values))
            if b > a:
                return a, b
        return None

    return cast("tuple[float, float] | None", view.shared(("natural_bounds", prefix), bounds))


def reward_bounds(view: RunView, reward: Series) -> tuple[float, float]:
    """The natural range when logged, else the 2nd–98th percentile of the mean reward itself
    (enough to measure a gain against the run's own movement, not to say "near the top")."""
    found = natural_bounds(view, reward)
    if found is not None:
        return found
    a, b = (float(v) for v in np.percentile(reward.values, [2, 98]))
    return a, max(b, a + 1e-12)


#: the share of responses cut at the length limit, most direct first
TRUNCATION_KEYS = ("response_length/clip_ratio", "response_length_non_aborted/clip_ratio", "rollout/truncation_share")


def truncated_after(view: RunView, step: int, share: float = 0.1) -> bool:
    """Whether the responses were cut at the length limit from ``step`` on: the logged truncation share's
    median there at least ``share`` (the warning level of response_clip_high). A reward "at its top" of a
    batch of cut answers is no solved task."""
    s = view.first(*TRUNCATION_KEYS, min_points=1)
    if s is None:
        return False
    after = s.values[s.steps >= step]
    return bool(len(after)) and float(median(after)) >= share
