"""Every check: records from the data files joined with the function of the same id.

Each layer module or package (``stability`` …) exposes ``FUNCTIONS`` (id → function) and has a data
file beside it (``stability.toml`` …) giving, per check, its layer, needed metrics,
applicable algorithm families, default parameters and its words in English and Chinese.
:func:`load_checks` joins them and refuses any id present on one side only.
"""

from __future__ import annotations

from . import behaviour, ceiling, crash, efficiency, generalisation, joint, kl, learning, rollout, stability
from ._base import (
    FINDING_STATUSES,
    MIN_POINTS,
    STATUS_RANK,
    VERDICT_STATUSES,
    WORST_FIRST,
    Check,
    CheckFn,
    Outcome,
    RunView,
    Series,
    Status,
    Text,
)
from .ceiling import RunForecast, forecast_params, run_forecast, target_of
from .config import CheckSettings, DiagnoseConfig, load_config
from .generalisation.tracks import core_tracks
from .registry import FUNCTIONS, MODULES, final_checks, load_checks, parse_checks, quiet_checks, sudden_checks

__all__ = ["FINDING_STATUSES", "FUNCTIONS", "MIN_POINTS", "MODULES", "STATUS_RANK", "VERDICT_STATUSES", "WORST_FIRST",
           "Check", "CheckFn", "CheckSettings", "core_tracks", "forecast_params", "RunForecast", "run_forecast",
           "target_of",
           "DiagnoseConfig", "Outcome", "RunView", "Series", "Status", "Text",
           "behaviour", "ceiling", "crash", "efficiency", "generalisation", "joint", "kl", "learning", "load_checks",
           "final_checks", "load_config", "parse_checks", "quiet_checks", "rollout", "stability", "sudden_checks"]
