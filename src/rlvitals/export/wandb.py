"""An :class:`~rlvitals.export.plan.ExportPlan` written to a W&B run through the real ``wandb`` client.

Offline by default (``mode="offline"``: a run folder under ``<dir>/wandb/`` that
``wandb sync`` uploads later). A new run, or, with ``run_id``, the user's own run
(``resume="allow"``; offline, wandb writes a separate ``offline-run-*-<id>`` folder that
``wandb sync`` appends to that run).

Step axis: W&B's ``_step`` counts ``log`` calls, not training steps, so every row carries
``rlvitals/step`` and ``define_metric("rlvitals/*", step_metric="rlvitals/step")`` makes the
W&B charts plot the series against it. A new run also logs each row with
``step=<training step>``, so ``_step`` itself is the training step (what readers without
``define_metric``, rlvitals' own included, use). A resumed run cannot: its ``_step`` is
already past the training steps, and W&B drops rows logged at an earlier step.

Findings: their status (0 ok, 0.5 note, 1 warn, 2 fail) as ``rlvitals/findings/<name>`` at the
onset step, a ``wandb.Table`` ``rlvitals/findings`` (check, layer, status, onset, span, the steps
of point events, title, message, advice in the chosen language) and ``summary["rlvitals/verdict"]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from ..errors import RlvitalsError
from ..words import Words, in_lang
from .plan import PREFIX, STATUS_VALUE, WANDB_FOLDER, ExportPlan, Tally, expect_folder, tally

STEP_KEY = PREFIX + "step"
TABLE_KEY = PREFIX + "findings"
VERDICT_KEY = PREFIX + "verdict"
TABLE_COLUMNS = ["check", "name", "layer", "status", "onset_step", "span", "points", "metrics", "title", "message",
                 "advice"]


@dataclass(frozen=True)
class WandbExport:
    """Where the export went: the run's folder (offline) and its id, the rows logged and what they held."""

    run_dir: Path
    run_id: str
    rows: int
    written: Tally


def _wandb() -> ModuleType:
    try:
        import wandb
    except ImportError:
        raise RlvitalsError(Words("--wandb needs the wandb client, which is not installed; "
                                  "install it with: pip install 'rlvitals[export]'",
                                  "--wandb 需要 wandb 客户端，但它没有安装；"
                                  "请用 pip install 'rlvitals[export]' 安装")) from None
    return wandb


def rows(plan: ExportPlan) -> list[tuple[int, dict[str, float]]]:
    """One W&B row per step, ascending: every series value and finding status at that step,
    and ``rlvitals/step``.

    >>> from rlvitals.export.plan import ExportPlan
    >>> rows(ExportPlan("run.log", "en", "ok", 3, (), ()))
    [(3, {'rlvitals/step': 3.0})]
    """
    by_step: dict[int, dict[str, float]] = {s: {STEP_KEY: float(s)} for s in plan.steps}
    for series in plan.series:
        for step, value in zip(series.steps.tolist(), series.values.tolist(), strict=True):
            by_step[step][series.tag] = value
    for f in plan.findings:
        by_step[f.step][f.tag] = STATUS_VALUE[f.status]
    return sorted(by_step.items())


def findings_table(plan: ExportPlan) -> list[list[Any]]:
    """The rows of the findings table, in the columns :data:`TABLE_COLUMNS`."""
    return [[f.check, f.name, f.layer, f.status, f.onset_step, list(f.span) if f.span else None, list(f.points),
             ", ".join(f.metrics), f.title, f.message, f.advice] for f in plan.findings]


def write_wandb(plan: ExportPlan, *, directory: str | Path, project: str = "rlvitals", run_id: str | None = None,
                name: str | None = None, mode: Literal["offline", "online"] = "offline") -> WandbExport:
    """Log ``plan`` to a new W&B run, or resume the run ``run_id``; returns where it went.

    ``run.finish()`` returns before wandb's service process has flushed the run file; it is
    complete at process exit (the CLI) or after ``wandb.teardown()``. Shutting the service
    down here would end any other run the caller has open, so it is left to the caller.

    Example:
        >>> out = write_wandb(plan, directory="exports")  # doctest: +SKIP
        >>> out.run_dir.name  # doctest: +SKIP
        'offline-run-20261129_105746-3kx9a1b2'
    """
    wandb = _wandb()
    directory = Path(directory)
    expect_folder(directory, "--wandb-dir", WANDB_FOLDER)
    directory.mkdir(parents=True, exist_ok=True)
    run = wandb.init(project=project, id=run_id, resume="allow" if run_id else None, name=name, mode=mode,
                     dir=str(directory), config={"rlvitals/source": plan.run_path, "rlvitals/lang": plan.lang})
    try:
        run.define_metric(STEP_KEY)
        run.define_metric(PREFIX + "*", step_metric=STEP_KEY)
        table = wandb.Table(columns=TABLE_COLUMNS, data=findings_table(plan))
        # a new run puts _step on the training step; a resumed one may only move _step forward
        explicit = run_id is None and all(step >= 0 for step in plan.steps)
        logged = rows(plan)
        for i, (step, row) in enumerate(logged):
            payload: dict[str, Any] = dict(row)
            if i == len(logged) - 1:
                payload[TABLE_KEY] = table
            run.log(payload, step=step if explicit else None)
        run.summary[VERDICT_KEY] = plan.verdict
        if plan.dropped:
            # in the plan's language, as the findings table
            run.summary[PREFIX + "dropped"] = ("；" if plan.lang == "zh" else "; ").join(
                in_lang(d, plan.lang) for d in plan.dropped)
        return WandbExport(Path(run.dir).parent, run.id, len(logged), tally(plan))
    finally:
        run.finish()
