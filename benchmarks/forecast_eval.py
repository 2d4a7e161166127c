"""How well the entropy–performance forecast predicts the end of real runs, against two naive forecasters.

For every real run that logged the policy's entropy and a performance series (each validation source's
core curve, and the training reward) — the labelled corpus (benchmarks/corpus/runs/) and the public logs of
tests/fixtures/real/ it names — the forecast is fitted on the first third of the run's steps and asked
for the performance at the run's last logged point. What happened is the level of the series over its last
points (the median of its last twentieth, at least 3 points). Beside it, measured on the same cut:

- **last value**: the level at the end of the first third (the median of its last twentieth), held flat;
- **saturating exponential**: ``c + d·exp(−k·t)`` fitted to the performance over steps on the first third
  (any sign of ``d``), read at the last point.

A row per run and series: the three errors (forecast − what happened), whether what happened lies in the
forecast's 95 % interval, and, where the law was declined on the first third, its reason. The summary
gives the mean absolute error of each forecaster over the series the law forecast, and over all series for
the naive ones.

    python benchmarks/forecast_eval.py            # the table and the summary (Markdown)
    python benchmarks/forecast_eval.py --json     # every row and the summary as JSON
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpus_eval import labelled_runs, resolve_input  # noqa: E402

#: the share of the run's steps the forecasters see
SEEN = 1 / 3


@dataclass
class Row:
    run: str
    metric: str
    kind: str
    steps: int
    points_seen: int
    seen_to: int
    target_step: int
    actual: float
    last_value: float
    saturating: float | None
    forecast: float | None
    lo: float | None
    hi: float | None
    reason: str | None
    #: the law fitted on the first third, read at the entropy the run really had at the end: what the
    #: forecast would say if it knew where the entropy went (its error is the law's own)
    law_at_entropy: float | None
    #: the series' own spread: the 5–95 % range of its level over the whole run, which the errors are
    #: divided by to compare runs of different scales
    scale: float

    def error(self, name: str) -> float | None:
        value = getattr(self, name)
        return None if value is None else value - self.actual

    @property
    def covered(self) -> bool | None:
        if self.lo is None or self.hi is None:
            return None
        return self.lo <= self.actual <= self.hi


def _level_end(values: np.ndarray) -> float:
    return float(np.median(values[-max(3, len(values) // 20):]))


def _spread(values: np.ndarray) -> float:
    from rlvitals import signals

    level = signals.rolling_level(values, max(3, len(values) // 20))
    lo, hi = np.quantile(level, [0.05, 0.95])
    return max(float(hi - lo), 1e-12)


def _saturating(steps: np.ndarray, values: np.ndarray, at: float) -> float | None:
    from rlvitals.forecast import fit_decay

    if len(values) < 3:
        return None
    return float(fit_decay(steps, values).at(at))


def evaluate_series(run_id: str, entropy: tuple[np.ndarray, np.ndarray], perf: tuple[np.ndarray, np.ndarray],
                    metric: str, kind: str, steps: int, seen: float = SEEN) -> Row | None:
    """The three forecasters of one series, fitted on the first ``seen`` of the run's steps."""
    from rlvitals.forecast import forecast

    hs, h = entropy
    rs, r = perf
    first, last = float(min(hs[0], rs[0])), float(max(hs[-1], rs[-1]))
    cut = first + (last - first) * seen
    h_seen, r_seen = hs <= cut, rs <= cut
    if h_seen.sum() < 3 or r_seen.sum() < 3 or (~r_seen).sum() < 3:
        return None
    # what happened is the level over the last twentieth: it is read at the middle of that stretch
    target = float(np.median(rs[-max(3, len(rs) // 20):]))
    fc = forecast(hs[h_seen], h[h_seen], rs[r_seen], r[r_seen], metric=metric, kind=kind)
    value = lo = hi = oracle = None
    if fc.holds:
        assert fc.law is not None
        value = float(fc.performance_at(target))
        oracle = float(fc.law.at(float(np.median(h[-max(3, len(h) // 20):]))))
        # the interval at the target: the forecast's band, read where the target falls on its grid
        assert fc.future is not None
        lo = float(np.interp(target, fc.future.steps, fc.future.lo))
        hi = float(np.interp(target, fc.future.steps, fc.future.hi))
    return Row(run_id, metric, kind, steps, int(r_seen.sum()), int(cut), int(target), _level_end(r),
               _level_end(r[r_seen]), _saturating(rs[r_seen], r[r_seen], target), value, lo, hi,
               None if fc.reason is None else str(fc.reason), oracle, _spread(r))


def _sources() -> list[tuple[str, Path]]:
    return [(run_id, resolve_input(folder, label)) for run_id, folder, label in labelled_runs()]


def evaluate_all(seen: float = SEEN) -> list[Row]:
    import rlvitals
    from rlvitals.checks import RunView
    from rlvitals.checks.ceiling import ENTROPY_KEY, forecast_inputs

    rows: list[Row] = []
    for run_id, path in _sources():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                runs = rlvitals.load(path)
            except Exception:  # noqa: BLE001 - a run that cannot be read has nothing to forecast
                continue
        for run in runs:
            view = RunView(run)
            entropy = view.series(ENTROPY_KEY, min_points=3)
            if entropy is None:
                continue
            for item in forecast_inputs(view, 3):
                row = evaluate_series(run_id, (entropy.steps, entropy.values), (item.steps, item.values),
                                      item.metric, item.kind, len(run.train_steps), seen)
                if row is not None:
                    rows.append(row)
    return rows


def summary(rows: Sequence[Row]) -> dict[str, object]:
    held = [r for r in rows if r.forecast is not None]

    def mae(pool: Sequence[Row], name: str) -> float | None:
        errors = [abs(e) for r in pool if (e := r.error(name)) is not None]
        return float(np.mean(errors)) if errors else None

    def scaled(pool: Sequence[Row], name: str) -> float | None:
        errors = [abs(e) / r.scale for r in pool if (e := r.error(name)) is not None]
        return float(np.median(errors)) if errors else None

    covered = [r.covered for r in held]
    names = ("forecast", "law_at_entropy", "last_value", "saturating")
    return {
        "series": len(rows), "runs": len({r.run for r in rows}), "forecast": len(held),
        "declined": len(rows) - len(held),
        "mae_where_forecast": {n: mae(held, n) for n in names},
        "median_scaled_error_where_forecast": {n: scaled(held, n) for n in names},
        "mae_all": {n: mae(rows, n) for n in ("last_value", "saturating")},
        "median_scaled_error_all": {n: scaled(rows, n) for n in ("last_value", "saturating")},
        "forecast_best": sum(1 for r in held if abs(r.error("forecast") or 0) <= min(
            abs(r.error("last_value") or np.inf), abs(r.error("saturating") or np.inf))),
        "interval_covers": sum(1 for c in covered if c), "interval_of": len(covered),
    }


def _cell(x: float | None) -> str:
    return "—" if x is None else f"{x:+.3f}"


def markdown(rows: Sequence[Row], figures: dict[str, object]) -> str:
    out = ["| run | series | steps | seen to | actual | forecast (error) | 95 % interval | law at the real entropy "
           "| last value (error) | saturating exp. (error) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        fc = (f"{r.forecast:.3f} ({_cell(r.error('forecast'))})" if r.forecast is not None
              else f"declined: {r.reason}")
        band = f"{r.lo:.3f}–{r.hi:.3f}{' ✓' if r.covered else ''}" if r.lo is not None and r.hi is not None else "—"
        sat = f"{r.saturating:.3f} ({_cell(r.error('saturating'))})" if r.saturating is not None else "—"
        oracle = f"{r.law_at_entropy:.3f} ({_cell(r.error('law_at_entropy'))})" if r.law_at_entropy is not None else "—"
        out.append(f"| {r.run} | {r.metric} ({r.kind}) | {r.steps} | {r.seen_to} | {r.actual:.3f} | {fc} | {band} "
                   f"| {oracle} "
                   f"| {r.last_value:.3f} ({_cell(r.error('last_value'))}) | {sat} |")
    out += ["", "```", json.dumps(_rounded(figures), indent=2), "```"]
    return "\n".join(out)


def _rounded(obj: object) -> object:
    """The figures to 4 significant digits, as the tables show them: a least-squares fit differs in its last
    bits between NumPy/SciPy builds, and the doc must not change with the wheel."""
    if isinstance(obj, float):
        return float(f"{obj:.4g}")
    if isinstance(obj, dict):
        return {k: _rounded(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_rounded(v) for v in obj]
    return obj


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print every row and the summary as JSON")
    parser.add_argument("--seen", type=float, default=SEEN,
                        help="the share of each run's steps the forecasters see (default: a third)")
    args = parser.parse_args(argv)
    rows = evaluate_all(args.seen)
    figures = summary(rows)
    if args.json:
        print(json.dumps({"rows": [asdict(r) for r in rows], "summary": figures}))
    else:
        print(markdown(rows, figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
