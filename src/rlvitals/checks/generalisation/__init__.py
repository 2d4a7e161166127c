"""L5 generalisation (validation, ID vs OOD, preference and reward-model overfitting) and
L6 reasoning quality (self-consistency gap).

Validation is sparse (every ``test_freq`` steps) and noisy, so every comparison here is
between *levels* — medians of a few evaluations — and a change counts only when it exceeds
``z`` standard errors of the series' own step-to-step noise (docs/reading-rules.md#val-progress: the core
validation metric should rise steadily; falling or flat for long, look back at the training).

One module per family: :mod:`.validation` (validation progress, reward against validation, ID vs OOD),
:mod:`.preference` (preference and reward-model training) and :mod:`.reasoning` (self-consistency), over the
validation curves of :mod:`.tracks`. The words of every check are in ``generalisation.toml`` beside this package.
"""

from __future__ import annotations

from .._base import CheckFn
from .preference import kto_kl, pref_accuracy_saturated, pref_margins, rm_health
from .reasoning import self_consistency
from .validation import ood_gap, val_progress, val_reward_divergence

__all__ = ["FUNCTIONS"]

FUNCTIONS: dict[str, CheckFn] = {
    "val_progress": val_progress,
    "val_reward_divergence": val_reward_divergence,
    "ood_gap": ood_gap,
    "pref_accuracy_saturated": pref_accuracy_saturated,
    "pref_margins": pref_margins,
    "kto_kl": kto_kl,
    "rm_health": rm_health,
    "self_consistency": self_consistency,
}
