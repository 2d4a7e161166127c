"""An :class:`~rlvitals.export.plan.ExportPlan` written to a Trackio project through the real ``trackio``
library (the extra ``rlvitals[trackio]``), in a local ``TRACKIO_DIR``.

The run is the user's run name (default: the log's name) in the project (default ``rlvitals``): a new run,
or the run of that name continued (``resume="allow"``). Each row is logged at its training step with the
series values and finding statuses (0 ok, 0.5 note, 1 warn, 2 fail, as ``rlvitals/findings/<name>``) of that
step; the findings' words go as a ``trackio.Table`` (``rlvitals/findings``) at the last step, the verdict
and the source into the run's config. Exporting again continues after the last step the run holds (read
from the project's SQLite file by rlvitals' own reader): nothing is logged twice, and a log that grew
exports only its new steps.

Trackio settles its folder when it is imported, from ``TRACKIO_DIR``: the folder is set before the import,
and an export to another folder than the one a process already imported trackio with is refused.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from ..errors import RlvitalsError
from ..words import Words, in_lang
from .plan import ExportPlan, Tally, expect_folder, tally
from .wandb import TABLE_COLUMNS, TABLE_KEY, findings_table, rows

TRACKIO_FOLDER = Words("(a TRACKIO_DIR: the folder of Trackio's project databases)",
                       "（TRACKIO_DIR：Trackio 存放项目数据库的文件夹）")


@dataclass(frozen=True)
class TrackioExport:
    """Where the export went: the project's database, the run's name, the rows logged now and those the
    run held already (not logged again), and what the rows logged now held."""

    database: Path
    run: str
    rows: int
    kept: int
    written: Tally


def _trackio(directory: Path) -> ModuleType:
    wanted = str(directory.resolve())
    imported = os.environ.get("TRACKIO_DIR")
    if "trackio" in sys.modules and imported != wanted:
        raise RlvitalsError(Words(f"--trackio {directory}: trackio was imported in this process with TRACKIO_DIR="
                                  f"{imported or 'its default'}, and keeps that folder; export in a new process",
                                  f"--trackio {directory}：本进程已经以 TRACKIO_DIR={imported or '默认值'} 导入了 "
                                  "trackio，它会一直用那个文件夹；请在新的进程里导出"))
    os.environ["TRACKIO_DIR"] = wanted
    try:
        import trackio
    except ImportError:
        raise RlvitalsError(Words("--trackio needs the trackio library, which is not installed; install it with: "
                                  "pip install 'rlvitals[trackio]'",
                                  "--trackio 需要 trackio 库，但它没有安装；请用 pip install 'rlvitals[trackio]' 安装"
                                  )) from None
    return trackio


def _last_step(database: Path, name: str) -> int | None:
    """The last step the run ``name`` of the project holds (None: no such run), read by rlvitals."""
    from ..run import load

    if not database.is_file():
        return None
    root = f"{database}#{name}"  # <db>#<name>@<id> where two runs share the name: the last step of either
    last = [int(run.steps.max()) for run in load(database)
            if (run.path == root or run.path.startswith(f"{root}@")) and len(run.steps)]
    return max(last, default=None)


def write_trackio(plan: ExportPlan, *, directory: str | Path, project: str = "rlvitals",
                  name: str | None = None) -> TrackioExport:
    """Log ``plan`` to the run ``name`` of ``project`` in the Trackio folder ``directory`` (continued after
    its last step when it exists); returns where it went.

    Example:
        >>> out = write_trackio(plan, directory="trackio")  # doctest: +SKIP
        >>> out.database.name, out.rows  # doctest: +SKIP
        ('rlvitals.db', 300)
    """
    directory = Path(directory)
    expect_folder(directory, "--trackio", TRACKIO_FOLDER)
    directory.mkdir(parents=True, exist_ok=True)
    trackio = _trackio(directory)
    from trackio.utils import canonical_project_name  # the file name Trackio gives the project

    run_name = name or Path(plan.run_path).name or "run"
    database = directory.resolve() / f"{canonical_project_name(project)}.db"
    last = _last_step(database, run_name)
    logged = [(step, row) for step, row in rows(plan) if last is None or step > last]
    kept = len(rows(plan)) - len(logged)
    if not logged:
        return TrackioExport(database, run_name, 0, kept, tally(plan, last))
    config = {"rlvitals/source": plan.run_path, "rlvitals/lang": plan.lang, "rlvitals/verdict": plan.verdict}
    if plan.dropped:
        joint = "；" if plan.lang == "zh" else "; "
        config["rlvitals/dropped"] = joint.join(in_lang(d, plan.lang) for d in plan.dropped)
    with contextlib.redirect_stdout(io.StringIO()):  # trackio prints its banner and hints: not this command's words
        trackio.init(project=project, name=run_name, config=config, resume="allow", auto_log_gpu=False,
                     auto_log_cpu=False)
        try:
            for i, (step, row) in enumerate(logged):
                payload: dict[str, object] = dict(row)
                if i == len(logged) - 1:
                    payload[TABLE_KEY] = trackio.Table(columns=TABLE_COLUMNS, data=findings_table(plan))
                trackio.log(payload, step=step)
        finally:
            trackio.finish()
    return TrackioExport(database, run_name, len(logged), kept, tally(plan, last))
