"""Several runs side by side as a table: each headline metric's final and best value per run, and the config
keys the runs were given different values for.

The rows are the catalog's: the first screen's slots of each run's algorithm family (``views.toml``: the
validation curve of every data source, reward, KL, entropy, response length …), then the family's
``[compare]`` slots (grad norm). A slot is filled, per run, by the first of its keys that run logged (runs of
two frameworks share a row under different names). The *final* value is the last finite one; the *best* is
the highest or the lowest, by the metric's catalog ``better`` (a validation curve's by the checks' reading of
its source), with the step it was reached at, and only for a metric whose best means something: the lowest
entropy or the highest KL of a run is no achievement, so those rows show the final value alone. Nothing is
diagnosed here; the values are the runs' own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..catalog.catalog import Catalog
from ..catalog.views import VALIDATION, Views
from ..checks import RunView, core_tracks
from ..run.run import Run

#: a validation curve's mean over n samples (``acc/mean@16``)
_MEAN_AT = re.compile(r"mean@\d+$")

__all__ = ["WORDS", "comparison_table", "config_diff", "final_best", "headline_rows"]

#: the table's words (English, Chinese): the template shows them through the page model
WORDS: dict[str, dict[str, str]] = {
    "table": {"en": "Final and best values", "zh": "最终值与最佳值"},
    "table_note": {"en": "final: the last finite value logged; best: the highest or lowest, by which way the "
                         "metric improves, at its step (none for a metric whose extreme is no achievement, such as "
                         "KL or entropy); — where a run did not log the metric",
                   "zh": "最终值：最后一个有限的记录值；最佳值：按指标变好的方向取最高或最低，并注明所在步"
                         "（KL、熵这类极值不代表更好的指标不给最佳值）；— 表示该运行没有记录这个指标"},
    "metric": {"en": "metric", "zh": "指标"},
    "final": {"en": "final", "zh": "最终"},
    "best": {"en": "best", "zh": "最佳"},
    "at_step": {"en": "step {}", "zh": "第 {} 步"},
    "higher": {"en": "higher is better", "zh": "越高越好"},
    "lower": {"en": "lower is better", "zh": "越低越好"},
    "config": {"en": "Config differences", "zh": "配置差异"},
    "config_note": {"en": "only the keys whose values differ between the runs; — where a run's config lacks the key",
                    "zh": "只列出各运行取值不同的配置项；— 表示该运行的配置里没有这一项"},
    "config_same": {"en": "The runs' configs hold the same values for every key.",
                    "zh": "各运行的配置在所有配置项上取值相同。"},
    "config_none": {"en": "No config in the log of:", "zh": "日志里没有配置的运行："},
    "key": {"en": "key", "zh": "配置项"},
}


def _number(x: Any) -> float | int:
    """A step or value as JSON writes it: an int where it is whole (a step), else a float."""
    v = float(x)
    return int(v) if v.is_integer() and abs(v) < 2**53 else v


def final_best(steps: np.ndarray, values: np.ndarray, better: str = "") -> dict[str, Any] | None:
    """The last finite value of a series and its step, and, for ``better`` ``"higher"`` or ``"lower"``, its
    best value and the first step it was reached at (``best`` and ``best_step`` None otherwise); None for a
    series without a finite value.

    Example:
        >>> final_best(np.array([1, 2, 3, 4]), np.array([0.1, 0.5, np.nan, 0.3]), "higher")
        {'final': 0.3, 'final_step': 4, 'best': 0.5, 'best_step': 2}
        >>> final_best(np.array([1, 2]), np.array([2.0, 1.0]))["best"] is None
        True
    """
    keep = np.isfinite(values)
    if not keep.any():
        return None
    x, y = np.asarray(steps)[keep], np.asarray(values, dtype=float)[keep]
    out: dict[str, Any] = {"final": _number(y[-1]), "final_step": _number(x[-1]), "best": None, "best_step": None}
    if better in ("higher", "lower"):
        i = int(np.argmax(y) if better == "higher" else np.argmin(y))
        out |= {"best": _number(y[i]), "best_step": _number(x[i])}
    return out


def _slots(runs: Sequence[tuple[str, Run]], views: Views) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for _, run in runs:
        out.extend(s for s in views.table(run.family) if s not in out)
    return out


def _logged(run: Run, key: str) -> bool:
    return key in run.frame.columns and run.frame[key].null_count() < run.frame.height


def _validation_rows(runs: Sequence[tuple[str, Run]]) -> list[dict[str, Any]]:
    """One row per core validation curve (``source/label``, as the checks and the first screen name it; ``mean@n``
    for a mean over any number of samples)."""
    rows: dict[str, dict[str, Any]] = {}
    for rid, run in runs:
        for t in core_tracks(RunView(run)):
            name = f"{t.source}/{t.label}"
            key = next((k for k in run.metrics if k.endswith(name) or k in (t.label, f"eval/{t.label}")), name)
            # a mean over n samples estimates one accuracy whatever n a run drew: mean@16 and mean@32 share a row
            row_id = _MEAN_AT.sub("mean@n", name)
            row = rows.setdefault(row_id, {"row": row_id, "validation": True,
                                            "better": "higher" if t.sign > 0 else "lower", "cells": {}})
            row["cells"][rid] = (key, final_best(t.steps, t.values, row["better"]))
    return list(rows.values())


def headline_rows(runs: Sequence[tuple[str, Run]], views: Views, catalog: Catalog) -> list[dict[str, Any]]:
    """The table's rows: per slot a run logged, ``{"row", "name", "better", "validation", "cells"}``, a cell per
    run in their order (``{"run", "key", "final", "final_step", "best", "best_step"}``, ``key`` None where the
    run logged none of the slot's keys) and ``top``: the run whose best (else final) value leads, when the
    metric has a better side."""
    rows: list[dict[str, Any]] = []
    for slot in _slots(runs, views):
        if VALIDATION in slot:
            found = _validation_rows(runs)
            if found:
                rows.extend(found)
                continue
        cells = {}
        for rid, run in runs:
            key = next((k for k in slot if k != VALIDATION and _logged(run, k)), None)
            if key is not None:
                entry = catalog.find(key)
                x, y = run.series(key, train_only=VALIDATION not in slot)
                cells[rid] = (key, final_best(x, y, entry.better if entry is not None else ""))
        if cells:
            entry = catalog.find(next(iter(cells.values()))[0])
            rows.append({"row": slot[0] if VALIDATION not in slot else next(iter(cells.values()))[0],
                         "validation": False, "better": entry.better if entry is not None else "", "cells": cells})
    return [_finish(row, runs, catalog) for row in rows]


def _finish(row: dict[str, Any], runs: Sequence[tuple[str, Run]], catalog: Catalog) -> dict[str, Any]:
    """A row's cells in run order, its name in both languages and the leading run."""
    cells = []
    for rid, _ in runs:
        key, got = row["cells"].get(rid, (None, None))
        cells.append({"run": rid, "key": key, **(got or {"final": None, "final_step": None, "best": None,
                                                         "best_step": None})})
    keys = list(dict.fromkeys(c["key"] for c in cells if c["key"] is not None))
    entry = catalog.find(keys[0]) if keys else None
    name = {"en": entry.en.name, "zh": entry.zh.name} if entry is not None else {"en": row["row"], "zh": row["row"]}
    return {"row": row["row"], "keys": keys, "name": name, "better": row["better"] or None,
            "validation": row["validation"], "cells": cells, "top": _top(cells, row["better"])}


def _top(cells: Sequence[Mapping[str, Any]], better: str) -> str | None:
    """The run whose best value (the final where there is no best) leads; None without a better side, with
    fewer than two runs logged, or on a tie."""
    values = [(c["best"] if c["best"] is not None else c["final"], c["run"]) for c in cells if c["final"] is not None]
    if better not in ("higher", "lower") or len(values) < 2:
        return None
    lead = max(v for v, _ in values) if better == "higher" else min(v for v, _ in values)
    leaders = [rid for v, rid in values if v == lead]
    return leaders[0] if len(leaders) == 1 else None


def _shown(value: object) -> str:
    """A config value as the table shows it (and compares it: ``True`` is not ``1``)."""
    return value if isinstance(value, str) else str(value)


def config_diff(configs: Sequence[tuple[str, Mapping[str, object]]]) -> dict[str, Any]:
    """The config keys whose values differ between runs: ``{"rows": [{"key", "values": [shown or None per
    run]}], "without": [runs whose log carries no config]}``, keys in the order the first run holding them
    lists them; a key one run lacks differs (None stands for it). Runs without a config are left out of the
    comparison (their every key would differ), so a difference needs two runs with a config.

    Example:
        >>> config_diff([("r0", {"lr": 1e-6, "n": 8, "seed": 1}), ("r1", {"lr": 1e-6, "n": 16}), ("r2", {})])
        {'rows': [{'key': 'n', 'values': ['8', '16', None]}, {'key': 'seed', 'values': ['1', None, None]}], \
'without': ['r2']}
    """
    with_config = [(rid, c) for rid, c in configs if c]
    rows = []
    if len(with_config) >= 2:
        keys = list(dict.fromkeys(k for _, c in with_config for k in c))
        for key in keys:
            seen = {_shown(c[key]) if key in c else None for _, c in with_config}
            if len(seen) > 1:
                rows.append({"key": key, "values": [_shown(c[key]) if key in c else None for _, c in configs]})
    return {"rows": rows, "without": [rid for rid, c in configs if not c]}


def comparison_table(runs: Sequence[tuple[str, Run]], views: Views, catalog: Catalog) -> dict[str, Any]:
    """The comparison's tables of ``runs`` (``(id, run)`` pairs): ``{"rows": headline_rows, "config":
    config_diff, "words": WORDS}``.

    Example:
        >>> from rlvitals.catalog import load_catalog
        >>> from rlvitals.catalog.views import load_views
        >>> from rlvitals.synthetic.scenarios import run_from_series
        >>> a = run_from_series({"critic/score/mean": [0.1, 0.6, 0.4]})
        >>> b = run_from_series({"critic/score/mean": [0.2, 0.3, 0.5]})
        >>> t = comparison_table([("r0", a), ("r1", b)], load_views(), load_catalog())
        >>> [(c["final"], c["best"], c["best_step"]) for c in t["rows"][0]["cells"]], t["rows"][0]["top"]
        ([(0.4, 0.6, 2), (0.5, 0.5, 3)], 'r0')
    """
    return {"rows": headline_rows(runs, views, catalog), "config": config_diff([(rid, r.config) for rid, r in runs]),
            "words": WORDS}
