"""rlvitals: is this RL post-training run healthy, and if not, what is wrong since when?"""

from __future__ import annotations

from .catalog import load_catalog
from .errors import RlvitalsError
from .loader import load
from .rollout.analysis import analyze_rollouts
from .run import Run

__all__ = ["Run", "RlvitalsError", "analyze_rollouts", "load", "load_catalog"]
__version__ = "0.1.0"
