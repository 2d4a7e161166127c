"""L1 training stability: loss, gradient norm, KL, clip fraction, learning rate, NaN/Inf, critic.

Every threshold is read against the run's own scale (trailing median and robust spread, rounding step of
the log; docs/reading-rules.md#run-relative) except where a rule gives a number with a meaning of its own:
the clip-fraction band (0.1–0.3), the PPO KL band (0.01–0.1), the 10× of a grad-norm spike
and an explained variance below 0 (worse than a constant).

One module per metric family: :mod:`.gradient` (spikes, explosion, vanishing and zero gradient norms),
:mod:`.nan` (NaN/Inf), :mod:`.loss` (loss jumps, a loss climbing steadily, the policy-gradient loss climbing, a
flat preference loss), :mod:`.critic` (value-loss lag, explained variance) and :mod:`.clip` (clip fraction); the
learning-rate schedule is read in :mod:`.._schedule`. The words of every check are in ``stability.toml`` beside
this package.
"""

from __future__ import annotations

from .._base import CheckFn
from .._schedule import lr_schedule
from .clip import clipfrac_high, clipfrac_low, clipfrac_lower
from .critic import critic_lag, explained_variance
from .gradient import grad_norm_explosion, grad_norm_spike, grad_norm_vanishing, grad_norm_zero
from .loss import loss_flat, loss_jump, loss_trend, pg_loss_climb
from .nan import nan_inf

__all__ = ["FUNCTIONS"]

FUNCTIONS: dict[str, CheckFn] = {
    "grad_norm_spike": grad_norm_spike,
    "grad_norm_zero": grad_norm_zero,
    "grad_norm_explosion": grad_norm_explosion,
    "grad_norm_vanishing": grad_norm_vanishing,
    "nan_inf": nan_inf,
    "loss_jump": loss_jump,
    "loss_flat": loss_flat,
    "loss_trend": loss_trend,
    "pg_loss_climb": pg_loss_climb,
    "clipfrac_high": clipfrac_high,
    "clipfrac_low": clipfrac_low,
    "clipfrac_lower": clipfrac_lower,
    "lr_schedule": lr_schedule,
    "critic_lag": critic_lag,
    "explained_variance": explained_variance,
}
