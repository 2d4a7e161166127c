"""The report's σ_G distribution (L3): per run, the share of groups in each band of σ_G over the steps, and
which of the three readings of the multi-scale view §4 the run's last steps have — with all three said, so
a reader learns what the other shapes would have meant (docs/reading-rules.md#sigma-g-distribution).

The bands come from the rollouts (:mod:`rlvitals.rollout.spread`), joined onto the run as its series; the
chart stacks them (Plotly normalises to percent), the same kind of chart as the time per phase of a step.
The dashboard's run page is this report served, so it shows the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from ..rollout import spread
from ..run.run import Run
from .charts import Page, stacked

__all__ = ["BAND_KEYS", "TITLE", "sigma_section"]

BAND_KEYS = tuple(spread.band_key(b) for b in spread.BANDS)
TITLE = {"en": "σ_G across groups: share of the groups per band (=0, then % of the largest spread)",
         "zh": "组间 σ_G 分布：各档组所占比例（=0，然后按占最大离散的百分比）"}
_SHAPE = {"en": {"at_zero": "concentrated at 0", "spread": "spread", "bimodal": "bimodal"},
          "zh": {"at_zero": "集中在 0", "spread": "分散", "bimodal": "双峰"}}


def _said(shape: str, shares: dict[str, float], first: int, last: int) -> dict[str, str]:
    zero, top = shares["zero"], shares["75-100"]
    return {"en": f"Over the last fifth of the rollouts (steps {first}–{last}) σ_G across the groups is "
                  f"{_SHAPE['en'][shape]}: {zero:.0%} of the groups at 0, {top:.0%} in the top band (75-100).",
            "zh": f"在最后五分之一的 rollout 中（第 {first}–{last} 步），组间 σ_G 的分布是「{_SHAPE['zh'][shape]}」："
                  f"{zero:.0%} 的组在 0，{top:.0%} 在最高一档（75-100）。"}


def _one(page: Page, rid: str, run: Run, many: bool) -> dict[str, Any] | None:
    if not all(k in run.metrics for k in BAND_KEYS):
        return None
    sub = run.frame.select(["step", *BAND_KEYS]).filter(pl.all_horizontal([pl.col(k).is_not_null() for k in BAND_KEYS]))
    if not sub.height:
        return None
    steps = sub["step"].to_numpy()
    label = f"{page.labels[rid]}: " if many else ""
    c = stacked(f"c{len(page.charts)}", steps, {k: sub[k].to_numpy() for k in BAND_KEYS}, rid, label, page.buckets)
    c["title"] = dict(TITLE)
    page.charts[c["id"]] = c
    tail = sub.tail(max(1, sub.height // 5))
    shares = {b: float(np.mean(tail[k].to_numpy())) for b, k in zip(spread.BANDS, BAND_KEYS, strict=True)}
    shape = spread.shape(shares) or "spread"
    return {"run": rid, "label": page.labels[rid], "chart": c["id"], "shape": shape, "shares": shares,
            "said": _said(shape, shares, int(tail["step"][0]), int(tail["step"][-1])),
            "readings": [{"shape": s, "name": {"en": _SHAPE["en"][s], "zh": _SHAPE["zh"][s]},
                          "words": {"en": str(w), "zh": w.zh}} for s, w in spread.READINGS.items()]}


def sigma_section(page: Page, runs: Sequence[tuple[str, Run]]) -> list[dict[str, Any]]:
    """Per run with σ_G bands (rollouts given): its stacked band chart (added to ``page``), the shape of its
    last fifth of steps, and the three readings in English and Chinese.

    Example:
        >>> sigma_section(Page(100), [])
        []
    """
    found = (_one(page, rid, run, len(runs) > 1) for rid, run in runs)
    return [s for s in found if s is not None]
