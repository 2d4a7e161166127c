"""The scenario suite: how well each check finds what it targets, and how quiet it stays.

For every pathology × length × noise × entropy scale × seed, a simulated run is diagnosed
and the target checks' findings compared with the injection step; healthy controls of the
same grid count false alarms. ``benchmarks/scenario_suite.py`` prints the tables;
``tests/synthetic/test_scenarios.py`` holds the aims on a small grid.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from ..checks import FINDING_STATUSES, VERDICT_STATUSES
from ..diagnosis import Diagnosis, diagnose
from ..ingest import Record, SourceMeta
from ..run.builder import RunBuilder
from ..run.run import Run
from .pathologies import PATHOLOGIES, Spec, scenario


def run_from_series(series: Mapping[str, np.ndarray], *, framework: str = "verl",
                    config: Mapping[str, object] | None = None, path: str = "scenario") -> Run:
    """A Run from arrays over steps 1..N (NaN = not logged), through the normal builder."""
    n = max(len(v) for v in series.values())
    builder = RunBuilder(SourceMeta(format="simulated", framework=framework, config=dict(config or {})))
    items = list(series.items())
    for i in range(n):
        values: dict[str, float | str] = {k: float(v[i]) for k, v in items if i < len(v) and not np.isnan(v[i])}
        if values:
            builder.add(Record(i + 1, values, f"{path}:{i + 1}"))
    return builder.finish(path, final=True)


def run_for(spec: Spec) -> Run:
    config = {"algorithm.adv_estimator": "gae" if spec.algorithm == "ppo" else "grpo",
              "data.max_response_length": 1024}
    return run_from_series(scenario(spec), config=config, path=f"{spec.pathology or 'healthy'}-{spec.seed}")


@dataclass
class Tally:
    """Outcomes of one pathology (or of the healthy controls) over the grid."""

    runs: int = 0
    detected: int = 0
    failed: int = 0
    onset_errors: list[int] = field(default_factory=list)
    alarm_runs: int = 0
    alarms: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def row(self) -> dict[str, float]:
        err = np.array(self.onset_errors, dtype=float)
        return {"runs": self.runs, "detection": self.detected / max(self.runs, 1),
                "fail": self.failed / max(self.runs, 1),
                "onset_median": float(np.median(err)) if len(err) else float("nan"),
                "onset_max": float(np.max(err)) if len(err) else float("nan")}


def grid(lengths: Iterable[int], noises: Iterable[float], entropies: Iterable[float],
         seeds: Iterable[int]) -> list[tuple[int, float, float, int]]:
    return list(itertools.product(lengths, noises, entropies, seeds))


def _score(d: Diagnosis, targets: tuple[str, ...], at: int, tally: Tally) -> None:
    # an efficiency pathology is found as a note (could be better); a note elsewhere is no false alarm
    hits = [f for f in d.findings if f.check in targets and f.status in FINDING_STATUSES]
    tally.runs += 1
    if hits:
        tally.detected += 1
        tally.failed += any(f.status == "fail" for f in hits)
        onsets = [abs(f.onset_step - at) for f in hits if f.onset_step is not None]
        if onsets:
            tally.onset_errors.append(min(onsets))
    others = [f for f in d.findings if f.status in VERDICT_STATUSES and f.check not in targets]
    tally.alarm_runs += bool(others)
    for f in others:
        tally.alarms[f"{f.check}:{f.status}"] += 1


def run_suite(points: list[tuple[int, float, float, int]], pathologies: Iterable[str] | None = None,
              algorithms: Iterable[str] = ("grpo", "ppo")) -> dict[str, Tally]:
    """Diagnose every grid point for every pathology and for healthy controls."""
    names = list(pathologies) if pathologies is not None else list(PATHOLOGIES)
    out: dict[str, Tally] = defaultdict(Tally)
    for steps, noise, entropy, seed in points:
        for algo in algorithms:
            d = diagnose(run_for(Spec(steps, seed, noise, entropy, algo)))
            _score(d, (), 0, out[f"healthy-{algo}"])
        for name in names:
            path = PATHOLOGIES[name]
            at = max(30, min(steps // 2, steps - path.tail))
            spec = Spec(steps, seed, noise, entropy, path.algorithm, name, at)
            _score(diagnose(run_for(spec)), path.targets, at, out[name])
    return dict(out)
