"""An :class:`~rlvitals.export.plan.ExportPlan` written as a TensorBoard event file, with no dependency.

Written into the user's own log folder, the file is one more event file of that run:
TensorBoard (and ``rlvitals.load``) merge it with the training's own files, and every tag
starts with ``rlvitals/`` so nothing clashes. What is written, all in ascending step order
(TensorBoard drops a tag's later points when its step goes backwards within a file):

- every series point as a ``simple_value`` under ``rlvitals/<key>``; TensorBoard stores
  float32, so a value reads back as ``float(np.float32(value))`` (beyond ±3.4e38: ±inf),
  and a logged NaN stays NaN;
- every finding's status (0 ok, 0.5 note, 1 warn, 2 fail) under ``rlvitals/findings/<name>`` at
  its onset step (the last step when it has none);
- at the run's last step, the verdict under ``rlvitals/verdict`` and the findings' words as
  one Markdown table in the text plugin (``rlvitals/diagnosis``).

Exporting twice into one folder writes a second file; TensorBoard shows the later file's
points where the steps repeat, and ``rlvitals.load`` keeps the later values with a note.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path

from ..errors import RlvitalsError
from ..words import Words
from ._wire import scalar_event, text_event, tfrecords, version_event
from .plan import PREFIX, STATUS_VALUE, TENSORBOARD_FOLDER, ExportPlan, expect_folder

VERDICT_TAG = PREFIX + "verdict"
TEXT_TAG = PREFIX + "diagnosis"
SUFFIX = "rlvitals"


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").strip()


def findings_markdown(plan: ExportPlan) -> str:
    """The verdict and every exported finding as Markdown (what the text dashboard shows).

    >>> from rlvitals.export.plan import ExportPlan
    >>> findings_markdown(ExportPlan("run.log", "en", "ok", 3, (), ())).splitlines()[0]
    '**rlvitals verdict: ok** (run.log)'
    """
    lines = [f"**rlvitals verdict: {plan.verdict}** ({_cell(plan.run_path)})", ""]
    if not plan.findings:
        return "\n".join([*lines, "No finding to show."])
    lines += ["| status | layer | check | onset | title | message | advice |",
              "|---|---|---|---|---|---|---|"]
    for f in plan.findings:
        # a point event's steps one by one (the first eight), not only the first
        steps = f.points[:8] if f.points else (() if f.onset_step is None else (f.onset_step,))
        onset = ", ".join(map(str, steps)) + (f" … +{len(f.points) - 8}" if len(f.points) > 8 else "")
        lines.append(f"| {f.status} | {f.layer} | {_cell(f.name)} | {onset} | {_cell(f.title)} | "
                     f"{_cell(f.message)} | {_cell(f.advice)} |")
    return "\n".join(lines)


def event_records(plan: ExportPlan, wall_time: float) -> list[bytes]:
    """Every Event of the file, in order: the version header, then by ascending step."""
    events: list[tuple[int, int, bytes]] = []
    order = 0
    for series in plan.series:
        for step, value in zip(series.steps.tolist(), series.values.tolist(), strict=True):
            events.append((step, order, scalar_event(wall_time, step, series.tag, value)))
        order += 1
    for f in plan.findings:
        events.append((f.step, order, scalar_event(wall_time, f.step, f.tag, STATUS_VALUE[f.status])))
        order += 1
    if plan.verdict in STATUS_VALUE:
        events.append((plan.last_step, order, scalar_event(wall_time, plan.last_step, VERDICT_TAG,
                                                           STATUS_VALUE[plan.verdict])))
    events.append((plan.last_step, order + 1, text_event(wall_time, plan.last_step, TEXT_TAG,
                                                         findings_markdown(plan))))
    events.sort(key=lambda e: (e[0], e[1]))  # stable: a series keeps its own order within a step
    return [version_event(wall_time), *(e[2] for e in events)]


def _target(logdir: Path, stamp: int, host: str) -> Path:
    expect_folder(logdir, "--tensorboard", TENSORBOARD_FOLDER,
                  Words("; give the folder that holds the events.out.tfevents.* files",
                        "；请给出存放 events.out.tfevents.* 文件的文件夹"))
    try:
        logdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RlvitalsError(Words(f"--tensorboard {logdir}: cannot create the folder ({exc.strerror}); "
                                  "give a writable folder",
                                  f"--tensorboard {logdir}：无法创建这个文件夹（{exc.strerror}）；"
                                  "请给出一个可写的文件夹")) from None
    name = f"events.out.tfevents.{stamp}.{host}.{SUFFIX}"
    path, n = logdir / name, 1
    while path.exists():  # two exports in one second must not overwrite each other
        n += 1
        path = logdir / f"{name}.{n}"
    return path


def write_tensorboard(plan: ExportPlan, logdir: str | Path, *, clock: Callable[[], float] = time.time,
                      host: str | None = None) -> Path:
    """Write ``plan`` as one new event file in ``logdir`` (created if missing); returns its path.

    Example:
        >>> path = write_tensorboard(plan, "runs/grpo")  # doctest: +SKIP
        >>> path.name  # doctest: +SKIP
        'events.out.tfevents.1764409000.myhost.rlvitals'
    """
    now = clock()
    path = _target(Path(logdir), int(now), (host or socket.gethostname()).replace("/", "_"))
    data = tfrecords(event_records(plan, now))
    try:
        with path.open("xb") as fh:
            fh.write(data)
    except OSError as exc:
        raise RlvitalsError(Words(f"--tensorboard {path}: cannot write the event file ({exc.strerror}); "
                                  "give a writable folder",
                                  f"--tensorboard {path}：无法写入 event 文件（{exc.strerror}）；请给出一个可写的文件夹"
                                  )) from None
    return path
