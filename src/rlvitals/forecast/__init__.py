"""Where a run is going: the entropy–performance law (Cui et al. 2025) fitted to a run and read forward.

``law`` fits ``R = b − a·exp(H)`` with bootstrap intervals (``resample``: the moving-block resamples, fitted
from their blocks), ``decay`` the exponential approach an entropy curve follows, and ``model`` puts them together
into a :class:`Forecast` of one performance series. Pure functions over arrays: the checks choose which series
to read.
"""

from __future__ import annotations

from .decay import Decay, fit_decay, fit_decays
from .law import LawFit, fit_law
from .model import Curve, Forecast, ForecastParams, forecast, horizons

__all__ = ["Curve", "Decay", "Forecast", "ForecastParams", "LawFit", "fit_decay", "fit_decays", "fit_law",
           "forecast", "horizons"]
