"""Charts of the report's page model: series in, small JSON-able dicts out (drawn client-side by Plotly).

A chart is ``{"id", "keys", "kind", "traces", "markers"}``; a trace carries its downsampled points
(:mod:`rlvitals.report.downsample`: a spike is never averaged away), how many points it had before, the
non-finite values of the whole series, and the non-finite points that survived as markers. Values
are rounded to a few significant digits of the series' typical magnitude: a chart is about 1000
pixels tall at most, and a shorter number is most of the JSON a 200-chart report sends.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..checks import FINDING_STATUSES
from ..diagnosis import Finding
from .downsample import downsample_index, nonfinite

DIGITS = 6  # significant digits kept for a series' typical value

Chart = dict[str, Any]
Trace = dict[str, Any]


def _decimals(y: np.ndarray) -> int:
    """Decimal places that keep ``DIGITS`` significant digits of the median non-zero magnitude."""
    mags = np.abs(y[np.isfinite(y) & (y != 0)])
    if not len(mags):
        return 0
    return int(np.clip(DIGITS - 1 - np.floor(np.log10(np.median(mags))), 0, 15))


def _bad_points(x: np.ndarray, y: np.ndarray) -> list[list[Any]]:
    bad = ~np.isfinite(y)
    kinds = np.where(np.isnan(y[bad]), "nan", np.where(y[bad] > 0, "+inf", "-inf"))
    return [[int(a) if float(a).is_integer() else float(a), str(k)] for a, k in zip(x[bad], kinds, strict=True)]


def rounded_to_zero(y: np.ndarray) -> dict[str, int] | None:
    """``{"decimals", "zeros", "of"}`` when a series was logged rounded to a few decimals and some of its
    values read 0 (a logger printing 4 decimals turns a KL of 3e-5 into 0.0): the zeros may be small
    values, not zeros. None when the values are not on such a grid or none of them is 0.

    Example:
        >>> rounded_to_zero(np.array([0.0, 0.0001, 0.0003, 0.0, 0.0012]))
        {'decimals': 4, 'zeros': 2, 'of': 5}
        >>> rounded_to_zero(np.array([0.0, 1.25e-05, 3.1e-06])) is None
        True
    """
    v = y[np.isfinite(y)]
    zeros = int(np.count_nonzero(v == 0))
    if not zeros or zeros == len(v):
        return None
    for decimals in range(1, 7):
        scaled = v * 10.0**decimals
        if np.all(np.abs(scaled - np.round(scaled)) <= 1e-6 * np.maximum(1.0, np.abs(scaled))):
            # on the grid, and small beside it: the smallest non-zero value is a few steps of the grid
            if np.min(np.abs(v[v != 0])) * 10.0**decimals <= 100:
                return {"decimals": decimals, "zeros": zeros, "of": int(len(v))}
            return None
    return None


def _xs(x: np.ndarray) -> list[Any]:
    values: list[Any] = x.astype(np.int64).tolist() if np.all(np.mod(x, 1) == 0) else x.tolist()
    return values


def trace(name: str, run: str, key: str, x: np.ndarray, y: np.ndarray, buckets: int) -> Trace:
    """One line of a chart: ``y`` over ``x`` (steps), reduced to at most ``4 * buckets`` points.

    Non-finite values become ``null`` in ``y`` (a gap) and are listed in ``bad`` so the chart can
    mark them; ``nonfinite`` counts them over the whole series.

    Example:
        >>> import numpy as np
        >>> t = trace("kl", "r0", "actor/ppo_kl", np.arange(3), np.array([0.1, np.nan, 0.3]), 100)
        >>> t["y"], t["bad"], t["n"], t["rounded"]
        ([0.1, None, 0.3], [[1, 'nan']], 3, None)
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    keep = downsample_index(x, y, buckets)
    xs, ys = x[keep], y[keep]
    rounded = np.round(ys, _decimals(ys))
    values = [None if not np.isfinite(v) else v for v in rounded.tolist()]
    return {"name": name, "run": run, "key": key, "x": _xs(xs), "y": values, "bad": _bad_points(xs, ys),
            "n": int(len(x)), "nonfinite": nonfinite(x, y), "rounded": rounded_to_zero(y)}


def chart(cid: str, keys: Iterable[str], traces: Sequence[Trace], kind: str = "line",
          title: Mapping[str, str] | None = None, aliases: Mapping[str, str] | None = None) -> Chart:
    """A chart record; ``keys`` are the canonical metric keys it shows (findings on them get markers),
    ``aliases`` other names findings use for them, ``{alias: key}`` (a validation curve is
    ``source/variable`` to the checks, ``val-core/source/variable`` in the run)."""
    return {"id": cid, "keys": sorted(set(keys)), "aliases": dict(aliases or {}), "kind": kind,
            "traces": list(traces), "markers": [], "title": dict(title) if title else None}


def stacked(cid: str, steps: np.ndarray, parts: Mapping[str, np.ndarray], run: str, label: str,
            buckets: int, logged: Mapping[str, np.ndarray] | None = None) -> Chart:
    """Stacked shares of several series sharing one step axis (the time per phase of a step).

    A part is null at the steps where it was not logged (``logged[key]`` False, or by default where
    it is NaN; a phase such as testing runs every few steps): it adds nothing there, and only its
    logged values count as NaN or inf. The steps kept
    are those the downsampling keeps for the parts' sum, so every part is taken at the same steps
    and a slow step stays in. Plotly normalises the stack to percent.

    Example:
        >>> c = stacked("c0", np.array([1, 2]), {"timing_s/gen": np.array([1.0, 2.0]),
        ...             "timing_s/testing": np.array([np.nan, 3.0])}, "r0", "", 100)
        >>> c["traces"][1]["y"], c["traces"][1]["nonfinite"]["nan"]
        ([None, 3.0], 0)
    """
    values = {k: np.asarray(v, dtype=np.float64) for k, v in parts.items()}
    total = np.nansum(np.vstack(list(values.values())), axis=0)
    keep = downsample_index(steps, total, buckets)
    traces = []
    for key, vals in values.items():
        mask = np.asarray(logged[key], dtype=bool) if logged is not None else ~np.isnan(vals)
        rounded = np.round(vals[keep], _decimals(vals[keep]))
        traces.append({"name": f"{label}{key}", "run": run, "key": key, "x": _xs(steps[keep]),
                       "y": [None if not np.isfinite(v) else v for v in rounded.tolist()], "bad": [],
                       "n": int(len(steps)), "nonfinite": nonfinite(steps[mask], vals[mask]), "rounded": None})
    return chart(cid, parts.keys(), traces, kind="stack")


@dataclass
class Page:
    """The charts collected while a page model is built; ids are assigned in order (``c0``, ``c1`` …)."""

    buckets: int
    charts: dict[str, Chart] = field(default_factory=dict)
    #: run id → the name a reader knows it by (unique on the page)
    labels: dict[str, str] = field(default_factory=dict)

    def add(self, keys: Sequence[str], traces: list[Trace], kind: str = "line",
            title: Mapping[str, str] | None = None, aliases: Mapping[str, str] | None = None) -> str:
        cid = f"c{len(self.charts)}"
        self.charts[cid] = chart(cid, keys, traces, kind, title, aliases)
        return cid


#: the statuses drawn on the charts: what needs action, and notes (in their own colour)
MARKED = FINDING_STATUSES


def add_markers(charts: Mapping[str, Chart], findings: Sequence[tuple[str, str, Finding]]) -> dict[str, list[str]]:
    """Put each fail, warn and note finding with an onset on every chart that shows one of its metrics
    for its run: an onset line labelled with the finding's title and, when it lasts, a span band; a
    finding about point events (``points``) gets a line at each of its steps instead of the band.
    Returns ``{finding id: [chart ids]}``."""
    by_key: dict[str, list[str]] = {}
    for cid, c in charts.items():
        for key in (*c["keys"], *c.get("aliases", ())):
            by_key.setdefault(key, []).append(cid)
    where: dict[str, list[str]] = {}
    for fid, run, f in findings:
        if f.status not in MARKED or f.onset_step is None:
            continue
        cids = [cid for cid in dict.fromkeys(cid for key in f.metrics for cid in by_key.get(key, []))
                if any(t["run"] == run for t in charts[cid]["traces"])]
        where[fid] = cids
        for cid in cids:
            charts[cid]["markers"].append({"finding": fid, "run": run, "status": f.status, "onset": f.onset_step,
                                           "span": list(f.span) if f.span else None, "points": sorted(set(f.points)),
                                           "check": f.check,
                                           "title": dict(f.title)})
    return where
