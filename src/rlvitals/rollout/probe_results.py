"""Probe results (``rlvitals probe``) read back as per-step rollout metrics.

``rlvitals probe`` writes one JSON object per training step to ``rlvitals-probes.jsonl`` beside the rollouts
it probed: the step, how many rollouts were probed, the model that answered and the catalog's
``reasoning/faithfulness``, ``reasoning/faithfulness/<probe>`` and ``reasoning/step_verification``. Read
here, they are columns of the rollout analysis' per-step table like pass@k, so every view that reads rollouts
(``diagnose``/``report``/``serve``/``watch --rollouts``) draws and judges them with no step of its own.

>>> import tempfile
>>> d = Path(tempfile.mkdtemp())
>>> _ = (d / PROBES_FILE).write_text('{"model": "m", "step": 4, "rollouts": 8, "reasoning/faithfulness": 0.5}\\n')
>>> found = read_probe_results(d / PROBES_FILE)
>>> found.frame.rows(), found.models
([(4, 0.5)], ['m'])
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from ..ingest.record import SkipLog, SourceMeta
from ..ingest.text import json_objects
from ..words import Words
from .schema import STEP

__all__ = ["PROBES_FILE", "ProbeResults", "probe_file_beside", "probe_results_for", "read_probe_results",
           "with_probe_results"]

#: the file ``rlvitals probe`` writes beside the rollouts it probed (never a rollout dump itself)
PROBES_FILE = "rlvitals-probes.jsonl"
#: the metrics a probe record carries (everything else in it is bookkeeping: the model, the count)
PREFIX = "reasoning/"
_EXPECTED = Words("a probe result object per line (as rlvitals probe writes)",
                  "每行一个探针结果对象（rlvitals probe 写出的格式）")


@dataclass(frozen=True)
class ProbeResults:
    """The per-step probe metrics of one file (``frame``: ``step`` and ``reasoning/…`` columns), the models
    that answered, the rollouts probed in all, and the lines that could not be read."""

    path: Path
    frame: pl.DataFrame
    models: list[str]
    rollouts: int
    skips: SkipLog = field(default_factory=SkipLog)

    def note(self) -> Words:
        """What was read, for the analysis' notes."""
        steps, models = self.frame.height, ", ".join(self.models) or "?"
        en = (f"probe results of {models}: {self.rollouts} rollouts probed at {steps} step"
              f"{'s' if steps != 1 else ''}, read from {self.path}")
        zh = f"探针结果（{models}）：在 {steps} 个 step 上探测了 {self.rollouts} 条 rollout，读自 {self.path}"
        if self.skips.count:
            en += f"; {self.skips.count} line{'s' if self.skips.count != 1 else ''} skipped"
            zh += f"；跳过了 {self.skips.count} 行"
        return Words(en, zh)


def probe_file_beside(path: str | Path) -> Path | None:
    """The probe results beside a rollout path (in the folder, or beside the file), if there are any."""
    p = Path(path)
    found = (p if p.is_dir() else p.parent) / PROBES_FILE
    return found if found.is_file() else None


def probe_results_for(source: object, files: list[str]) -> ProbeResults | None:
    """The probe results that go with rollouts read from ``source`` (a path: beside it; otherwise beside
    the first file read), or None."""
    where = source if isinstance(source, (str, os.PathLike)) else files[0] if files else None
    found = probe_file_beside(os.fspath(where)) if where is not None else None
    return read_probe_results(found) if found is not None else None


def read_probe_results(path: Path) -> ProbeResults:
    """Read a probe results file; a line without a whole step or with no metric is a counted skip, a later
    line for a step already read replaces it (a probe re-run of that step)."""
    skips = SkipLog()
    rows: dict[int, dict[str, float | None]] = {}
    models: list[str] = []
    probed = 0
    for lineno, _, obj in json_objects(path, SourceMeta(format="rlvitals-probes"), skips, _EXPECTED):
        step = obj.get("step")
        if not isinstance(step, int) or isinstance(step, bool):
            skips.skip(f"{path}:{lineno}", Words(f"no whole 'step' ({step!r})", f"没有整数 'step'（{step!r}）"))
            continue
        metrics = {k: float(v) if isinstance(v, (int, float)) and not isinstance(v, bool)
                   and math.isfinite(float(v)) else None
                   for k, v in obj.items() if k.startswith(PREFIX)}
        if not any(v is not None for v in metrics.values()):
            skips.skip(f"{path}:{lineno}", Words("no reasoning/… metric with a number",
                                                 "没有带数值的 reasoning/… 指标"))
            continue
        rows[step] = metrics
        model = obj.get("model")
        if isinstance(model, str) and model not in models:
            models.append(model)
        count = obj.get("rollouts")
        probed += count if isinstance(count, int) and not isinstance(count, bool) else 0
    keys = sorted({k for r in rows.values() for k in r})
    frame = pl.DataFrame({STEP: sorted(rows), **{k: [rows[s].get(k) for s in sorted(rows)] for k in keys}},
                         schema={STEP: pl.Int64, **dict.fromkeys(keys, pl.Float64)})
    return ProbeResults(path, frame, models, probed, skips)


def with_probe_results(steps: pl.DataFrame, found: ProbeResults) -> pl.DataFrame:
    """The per-step table ``steps`` with the probe metrics joined on by step (a step probed but not in the
    table gets a row of its own; a metric the rollouts computed themselves keeps their value)."""
    extra = found.frame.drop([c for c in found.frame.columns if c != STEP and c in steps.columns])
    if extra.width == 1:
        return steps
    if STEP not in steps.columns or steps.height == 0:
        return extra
    out = steps.join(extra, on=STEP, how="full", coalesce=True)
    return out.sort(STEP)
