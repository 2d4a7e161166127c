"""rlvitals: is this RL post-training run healthy, and if not, what is wrong since when?"""

from __future__ import annotations

from typing import Any

from .catalog import load_catalog
from .errors import RlvitalsError
from .loader import load
from .run import Run

__all__ = ["Run", "RlvitalsError", "analyze_rollouts", "load", "load_catalog"]
__version__ = "0.1.0"


def analyze_rollouts(source: Any, **options: Any) -> Any:
    """Every rollout metric per step and overall; see :func:`rlvitals.rollout.analysis.analyze_rollouts`.

    Imported on first use, so ``import rlvitals`` stays light for readers of logs only.
    """
    from .rollout.analysis import analyze_rollouts as analyze

    return analyze(source, **options)
