"""The rollouts ``diagnose FOLDER`` joins without ``--rollouts``: those ``serve FOLDER`` joins; and where else
a run was logged (its trackers' copies, read once: :mod:`rlvitals.run.twins`), said on stderr.

A TRL ``output_dir`` holds its ``completions/``, a veRL log its ``rollout_data_dir`` beside it; ``serve``
finds them and joins each to its run by one rule (:func:`rlvitals.rollout.pair`); ``diagnose`` given the same
folder does the same, so the two say the same of one training. A log that gave several runs (two
trainings in one console, a tracker's copy that is another training) has its rollouts joined to none of
them, and that is said.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..errors import RlvitalsError
from ..ingest import real_path
from ..words import Words
from ._common import error_line, said_line

if TYPE_CHECKING:
    from ..rollout.options import RolloutSettings
    from ..run import Run


def _log(run: Run) -> Path:
    """The log (a file, or a folder read whole) ``run`` was read from: its path less a ``#run`` inside it."""
    return real_path(Path(run.path.split("#", 1)[0]))


def joined_beside(paths: list[str], runs: list[Run], fmt: str | None, settings: RolloutSettings | None,
                  err: IO[str], progress: bool = False, lang: str = "en") -> tuple[list[Run], list[Any]]:
    """``runs`` with the rollouts found beside their logs joined, and per run its (rollout folder, analysis)
    or None (what ``--rollouts`` gives :func:`rlvitals.cli._common.paired_runs`). Rollouts are looked for in
    the folders given: a log given as a file has none joined (the rollout readers are not even imported)."""
    from ..run import behind_note, copies_note

    for run in runs:  # one training read once: say where else it was logged, and which copies stop earlier
        for note in (copies_note(run), behind_note(run)):
            if note is not None:
                err.write(said_line(note, lang))
    given = [Path(path) for path in paths if Path(path).is_dir()]
    if not given:
        return list(runs), [None] * len(runs)
    from ..rollout import dump_folders, pair
    from .progress import analysed

    folders: dict[Path, tuple[Path, ...]] = {}
    for path in given:
        folders.update(dump_folders(real_path(path)))
    logs = [_log(run) for run in runs]
    formats = {log: run.format for log, run in zip(logs, runs, strict=True)}
    found = pair(folders, list(dict.fromkeys(logs)), formats)
    out: list[Run] = list(runs)
    analyses: list[Any] = [None] * len(runs)
    for log, folder in found.pairs.items():
        mine = [i for i, own in enumerate(logs) if own == log]
        if len(mine) > 1:
            err.write(said_line(Words(
                f"{log} holds {len(mine)} runs, so the rollouts in {folder} are joined to none of them; pass the "
                "run's log as its own PATH with --rollouts DIR",
                f"{log} 里有 {len(mine)} 个运行，所以 {folder} 里的 rollout 不与其中任何一个关联；请把该运行的日志"
                "单独作为 PATH，并加 --rollouts DIR"), lang))
            continue
        try:
            analysis = analysed(str(folder), settings, err, progress, lang)
        except RlvitalsError as exc:
            err.write(error_line(exc, lang))
            continue
        i = mine[0]
        out[i] = analysis.join(runs[i], Words(f"rollouts in {folder}", f"{folder} 里的 rollout"))
        analyses[i] = (str(folder), analysis)
    return out, analyses
