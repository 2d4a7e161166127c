"""An :class:`~rlvitals.export.plan.ExportPlan` written to a SwanLab run through the real ``swanlab`` library (the
extra ``rlvitals[swanlab]``), offline, in a ``swanlog`` folder: ``swanlab sync`` uploads it when the user wants.

The run is the user's run name (default: the log's name) in the project (default ``rlvitals``), with an id
made from the two (``rlvitals_<hash>``). Each row is logged at its training step with the series values and
finding statuses (0 ok, 0.5 note, 1 warn, 2 fail, as ``rlvitals/findings/<name>``) of that step; the
findings' words go as a ``swanlab.echarts.Table`` (``rlvitals/findings``) at the last step, the verdict and
the source into the run's config. SwanLab writes each offline session to a folder of its own
(``run-<time>-<id>``), and ``swanlab sync`` resumes the one run by its id: exporting again continues after
the last step the run's folders hold (read by rlvitals' own reader), so nothing is logged twice, and a log
that grew exports only its new steps.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from ..errors import RlvitalsError
from ..words import Words, in_lang
from .plan import ExportPlan, Tally, expect_folder, tally
from .wandb import TABLE_COLUMNS, TABLE_KEY, findings_table, rows

SWANLAB_FOLDER = Words("(a swanlog folder: where SwanLab keeps its offline runs)",
                       "（swanlog 文件夹：SwanLab 存放离线运行的地方）")


@dataclass(frozen=True)
class SwanlabExport:
    """Where the export went: this session's run folder (None when nothing was new), the run's id and
    name, the rows logged now and those the run held already (not logged again), and what the rows logged now
    held."""

    folder: Path | None
    run_id: str
    run: str
    rows: int
    kept: int
    written: Tally


def _swanlab() -> ModuleType:
    try:
        import swanlab  # type: ignore[import-untyped]  # the SDK ships no type information
    except ImportError:
        raise RlvitalsError(Words("--swanlab needs the swanlab library, which is not installed; install it with: "
                                  "pip install 'rlvitals[swanlab]'",
                                  "--swanlab 需要 swanlab 库，但它没有安装；请用 pip install 'rlvitals[swanlab]' 安装"
                                  )) from None
    module: ModuleType = swanlab
    return module


def run_id(project: str, name: str) -> str:
    """The SwanLab run id of run ``name`` in ``project``: the same for every export of that run.

    >>> run_id("rlvitals", "grpo.log")
    'rlvitals_4e370ca1c47f334f'
    """
    return "rlvitals_" + hashlib.sha256(f"{project}\0{name}".encode()).hexdigest()[:16]


def _last_step(directory: Path, rid: str) -> int | None:
    """The last step the run's folders hold (None: no folder yet), read by rlvitals."""
    from ..run import load

    last = None
    for folder in sorted(directory.glob(f"run-*-{rid}")):
        if (folder / f"run-{rid}.swanlab").is_file():
            for run in load(folder):
                if len(run.steps):
                    last = max(int(run.steps.max()), last if last is not None else int(run.steps.max()))
    return last


def write_swanlab(plan: ExportPlan, *, directory: str | Path, project: str = "rlvitals",
                  name: str | None = None) -> SwanlabExport:
    """Log ``plan`` offline to the run ``name`` of ``project`` in the swanlog folder ``directory``
    (continued after the last step its earlier sessions hold); returns where it went.

    Example:
        >>> out = write_swanlab(plan, directory="swanlog")  # doctest: +SKIP
        >>> out.run_id, out.rows  # doctest: +SKIP
        ('rlvitals_…', 300)
    """
    directory = Path(directory)
    expect_folder(directory, "--swanlab", SWANLAB_FOLDER)
    directory.mkdir(parents=True, exist_ok=True)
    swanlab = _swanlab()
    run_name = name or Path(plan.run_path).name or "run"
    rid = run_id(project, run_name)
    last = _last_step(directory, rid)
    logged = [(step, row) for step, row in rows(plan) if last is None or step > last]
    kept = len(rows(plan)) - len(logged)
    if not logged:
        return SwanlabExport(None, rid, run_name, 0, kept, tally(plan, last))
    config = {"rlvitals/source": plan.run_path, "rlvitals/lang": plan.lang, "rlvitals/verdict": plan.verdict}
    if plan.dropped:
        joint = "；" if plan.lang == "zh" else "; "
        config["rlvitals/dropped"] = joint.join(in_lang(d, plan.lang) for d in plan.dropped)
    settings = swanlab.Settings(probe=swanlab.Settings.Probe(monitor=False, hardware=False))
    before = set(directory.glob(f"run-*-{rid}"))
    with contextlib.redirect_stdout(io.StringIO()):  # swanlab prints its banner and hints: not this command's words
        swanlab.init(project=project, experiment_name=run_name, mode="offline", log_dir=str(directory), id=rid,
                     resume="allow", config=config, settings=settings, reinit=True)
        try:
            for i, (step, row) in enumerate(logged):
                payload: dict[str, object] = dict(row)
                if i == len(logged) - 1:
                    table = swanlab.echarts.Table()
                    table.add(headers=list(TABLE_COLUMNS), rows=findings_table(plan))
                    payload[TABLE_KEY] = table
                swanlab.log(payload, step=step)
        finally:
            swanlab.finish()
    made = sorted(set(directory.glob(f"run-*-{rid}")) - before)
    return SwanlabExport(made[-1] if made else None, rid, run_name, len(logged), kept, tally(plan, last))
