"""rlvitals: is this RL post-training run healthy, and if not, what is wrong since when?"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__
from .catalog import load_catalog
from .errors import RlvitalsError
from .run import Run, load

if TYPE_CHECKING:
    from .diagnosis import Diagnosis
    from .watch.monitor import Monitor

__all__ = ["Monitor", "Run", "RlvitalsError", "analyze_rollouts", "diagnose", "load", "load_catalog"]


def analyze_rollouts(source: Any, **options: Any) -> Any:
    """Every rollout metric per step and overall; see :func:`rlvitals.rollout.analysis.analyze_rollouts`.

    Imported on first use, so ``import rlvitals`` stays light for readers of logs only.
    """
    from .rollout.analysis import analyze_rollouts as analyze

    return analyze(source, **options)


def diagnose(run: Run, config: Any = None) -> Diagnosis:
    """Every check on ``run``; see :func:`rlvitals.diagnosis.diagnose` (imported on first use)."""
    from .diagnosis import diagnose as run_checks

    return run_checks(run, config)


def __getattr__(name: str) -> Any:
    # the in-process Monitor (a worker thread, the alert sinks) loads only when asked for
    if name == "Monitor":
        from .watch.monitor import Monitor

        return Monitor
    raise AttributeError(f"module 'rlvitals' has no attribute {name!r}")
