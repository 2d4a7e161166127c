"""A watched run's derived series and findings exported while it grows: a TensorBoard event file
(:class:`LiveTensorBoard`) or a W&B run (:class:`LiveWandb`).

Both write only what is new at each full diagnosis, and both remember what they wrote across a
restart of the watcher, so nothing is written twice.

TensorBoard:

``rlvitals watch --export-tensorboard LOGDIR`` keeps one event file per run,
``events.out.tfevents.<time>.<host>.rlvitals-live``, and after each full diagnosis appends only
what is new (TensorBoard drops a tag's point whose step goes back within a file):

- each derived series' points after the last step written under its tag;
- at the diagnosed run's last step: each finding's status (0 ok, 0.5 note, 1 warn, 2 fail) under
  ``rlvitals/findings/<name>`` and the verdict under ``rlvitals/verdict``, so their charts show
  when a finding appeared and how it went on; and the findings' words as a Markdown table
  (``rlvitals/diagnosis``) when they changed.

A restarted watcher finds its file, reads back the last step of every tag in it (cutting off a
record a crash left half-written) and appends after them: nothing written twice, nothing lost.
"""

from __future__ import annotations

import json
import math
import os
import socket
import struct
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import RlvitalsError
from ..ingest import SkipLog, SourceMeta, masked_crc32c
from ..ingest.formats import tensorboard as tb_reader
from ..words import Words
from ._wire import scalar_event, text_event, tfrecords, version_event
from .plan import PREFIX, STATUS_VALUE, TENSORBOARD_FOLDER, WANDB_FOLDER, ExportPlan, expect_folder
from .tensorboard import TEXT_TAG, VERDICT_TAG, findings_markdown
from .wandb import STEP_KEY, TABLE_COLUMNS, TABLE_KEY, findings_table

SUFFIX = "rlvitals-live"


def complete_length(path: Path) -> int:
    """The length of ``path``'s leading whole TFRecords (a crash may leave the last one cut short).

    >>> import tempfile
    >>> from rlvitals.export._wire import tfrecord
    >>> f = Path(tempfile.mkdtemp()) / "events"
    >>> _ = f.write_bytes(tfrecord(b"abc") + tfrecord(b"de")[:7])
    >>> complete_length(f)
    19
    """
    data = path.read_bytes()
    pos = 0
    while pos + 12 <= len(data):
        header = data[pos:pos + 8]
        if struct.unpack("<I", data[pos + 8:pos + 12])[0] != masked_crc32c(header):
            break
        end = pos + 16 + struct.unpack("<Q", header)[0]
        if end > len(data):
            break
        pos = end
    return pos


@dataclass(frozen=True)
class Point:
    """One value to write: a number under ``tag`` at ``step``, or the findings' words (``text``)."""

    step: int
    tag: str
    value: float = math.nan
    text: str | None = None


def news(plan: ExportPlan, last: Mapping[str, int], text: str | None) -> list[Point]:
    """What ``plan`` holds that was not written yet, by ascending step: each series' points after the
    last step written under its tag (``last``), and, when the diagnosed run's last step is new,
    every finding's status and the verdict there, with the findings' words when they differ from
    ``text`` (the words last written).

    >>> plan = ExportPlan("run.log", "en", "ok", 5, (), ())
    >>> [(p.step, p.tag) for p in news(plan, {}, None)]
    [(5, 'rlvitals/verdict'), (5, 'rlvitals/diagnosis')]
    >>> news(plan, {VERDICT_TAG: 5}, None)
    []
    """
    points: list[tuple[int, int, Point]] = []
    for order, series in enumerate(plan.series):
        after = last.get(series.tag, -1)
        points += [(step, order, Point(step, series.tag, value))
                   for step, value in zip(series.steps.tolist(), series.values.tolist(), strict=True) if step > after]
    step, order = plan.last_step, len(plan.series)
    if step > last.get(VERDICT_TAG, -1):
        points += [(step, order, Point(step, f.tag, STATUS_VALUE[f.status])) for f in plan.findings
                   if step > last.get(f.tag, -1)]
        if plan.verdict in STATUS_VALUE:
            points.append((step, order + 1, Point(step, VERDICT_TAG, STATUS_VALUE[plan.verdict])))
        words = findings_markdown(plan)
        if words != text:
            points.append((step, order + 2, Point(step, TEXT_TAG, text=words)))
    points.sort(key=lambda p: (p[0], p[1]))  # stable: a series keeps its own order within a step
    return [p[2] for p in points]


def remember(last: dict[str, int], points: Sequence[Point]) -> None:
    """Note in ``last`` the step each tag of ``points`` was written at."""
    for p in points:
        last[p.tag] = max(last.get(p.tag, p.step), p.step)


class LiveTensorBoard:
    """The live event file of one run in ``logdir``; :meth:`update` appends a diagnosis' news.

    Example:
        >>> live = LiveTensorBoard(Path("tensorboard_log/grpo"))  # doctest: +SKIP
        >>> live.update(plan_export(diagnose(run), derived=["pass@4"]))  # doctest: +SKIP
        412
    """

    def __init__(self, logdir: Path, *, clock: Callable[[], float] = time.time, host: str | None = None) -> None:
        self.logdir = logdir
        self.clock = clock
        self.host = (host or socket.gethostname()).replace("/", "_")
        self.last: dict[str, int] = {}  # tag -> the last step written under it
        self.text: str | None = None  # the findings table last written
        expect_folder(logdir, "--export-tensorboard", TENSORBOARD_FOLDER)
        found = sorted(logdir.glob(f"events.out.tfevents.*.{SUFFIX}")) if logdir.is_dir() else []
        self.path: Path | None = found[-1] if found else None
        if self.path is not None:
            self._resume(self.path)

    def _resume(self, path: Path) -> None:
        """Learn what an earlier watcher wrote to ``path``, and cut off a record it left half-written."""
        try:
            whole = complete_length(path)
            if whole == 0:  # not even its header: start it again
                path.unlink()
                self.path = None
                return
            if whole < path.stat().st_size:
                with path.open("r+b") as fh:
                    fh.truncate(whole)
            for record in tb_reader.read(path, SourceMeta(format="tensorboard", files=[str(path)]), SkipLog()):
                remember(self.last, [Point(record.step, tag) for tag in record.values])
        except OSError as exc:
            raise RlvitalsError(Words(f"--export-tensorboard {path}: cannot read the file an earlier watcher wrote "
                                      f"({exc.strerror}); move it away or give another folder",
                                      f"--export-tensorboard {path}：无法读取先前的 watcher 写下的文件"
                                      f"（{exc.strerror}）；请把它移走，或换一个文件夹")) from None

    def update(self, plan: ExportPlan) -> int:
        """Append what ``plan`` holds that the file does not yet; the number of points written.
        Raises RlvitalsError when the folder or the file cannot be written."""
        points = news(plan, self.last, self.text)
        if not points:
            return 0
        now = self.clock()
        self._append([text_event(now, p.step, p.tag, p.text) if p.text is not None
                      else scalar_event(now, p.step, p.tag, p.value) for p in points], now)
        remember(self.last, points)
        self.text = next((p.text for p in points if p.text is not None), self.text)
        return len(points)

    def _append(self, payloads: list[bytes], now: float) -> None:
        try:
            if self.path is None:
                self.logdir.mkdir(parents=True, exist_ok=True)
                path = self.logdir / f"events.out.tfevents.{int(now)}.{self.host}.{SUFFIX}"
                with path.open("xb") as fh:
                    fh.write(tfrecords([version_event(now), *payloads]))
                self.path = path
                return
            with self.path.open("ab") as fh:
                fh.write(tfrecords(payloads))
        except OSError as exc:
            where = self.path or self.logdir
            raise RlvitalsError(Words(f"--export-tensorboard {where}: cannot write ({exc.strerror}); the derived "
                                      "series and findings are not exported until it can",
                                      f"--export-tensorboard {where}：无法写入（{exc.strerror}）；在能写入之前，"
                                      "派生序列和各项发现都不会导出")) from None


#: what LiveWandb remembers, beside the W&B run files: per watched run, its W&B run id and the last
#: step written under each key
MEMO = "rlvitals-live.json"


class LiveWandb:
    """One W&B run per watched run (``key``), open while the watcher runs; :meth:`update` logs a
    diagnosis' news as rows with ``rlvitals/step``, the axis the charts plot against (see
    :mod:`.wandb`), so rows may come in any step order. What was written, and the W&B run id, are
    kept in ``<directory>/rlvitals-live.json``: a restarted watcher resumes the same run
    (``resume="allow"``; offline, in a new folder that ``wandb sync`` appends) and logs only the rest.
    ``run_id``: log into this existing run (the training's own) instead of a new one.

    Example:
        >>> live = LiveWandb(Path("wandb_exports"), key="metrics.jsonl", project="grpo")  # doctest: +SKIP
        >>> live.update(plan_export(diagnose(run), derived=["pass@4"]))  # doctest: +SKIP
        412
    """

    def __init__(self, directory: Path, *, key: str, project: str = "rlvitals", run_id: str | None = None,
                 mode: str = "offline", lang: str = "en") -> None:
        expect_folder(directory, "--export-wandb", WANDB_FOLDER)
        self.directory, self.key, self.project, self.mode, self.lang = directory, key, project, mode, lang
        self.memo = directory / MEMO
        saved = self._load().get(key, {})
        self.run_id: str | None = run_id or saved.get("run_id")
        self.last: dict[str, int] = {str(k): int(v) for k, v in saved.get("last", {}).items()}
        self.text: str | None = saved.get("text")
        self.run: Any = None

    def _load(self) -> dict[str, Any]:
        try:
            memo = json.loads(self.memo.read_text(encoding="utf-8")) if self.memo.is_file() else {}
        except (OSError, ValueError) as exc:
            raise RlvitalsError(Words(f"--export-wandb {self.memo}: cannot read what an earlier watcher wrote "
                                      f"({exc}); move it away to start new W&B runs",
                                      f"--export-wandb {self.memo}：无法读取先前的 watcher 写下的记录（{exc}）；"
                                      "把它移走即可开始新的 W&B run")) from None
        return memo if isinstance(memo, dict) else {}

    def _open(self) -> Any:
        from .wandb import _wandb

        wandb = _wandb()
        self.directory.mkdir(parents=True, exist_ok=True)
        run = wandb.init(project=self.project, id=self.run_id, resume="allow" if self.run_id else None,
                         mode=self.mode, dir=str(self.directory), reinit="create_new",
                         config={"rlvitals/source": self.key, "rlvitals/lang": self.lang})
        run.define_metric(STEP_KEY)
        run.define_metric(PREFIX + "*", step_metric=STEP_KEY)
        self.run_id = run.id
        return run

    def update(self, plan: ExportPlan) -> int:
        """Log what ``plan`` holds that the run does not yet; the number of values logged.
        Raises RlvitalsError when W&B cannot be started or the memo cannot be written."""
        points = news(plan, self.last, self.text)
        if not points:
            return 0
        try:
            if self.run is None:
                self.run = self._open()
            from .wandb import _wandb

            rows: dict[int, dict[str, Any]] = {}
            for p in points:
                row = rows.setdefault(p.step, {STEP_KEY: float(p.step)})
                if p.text is None:
                    row[p.tag] = p.value
                else:  # the findings' words, as the table `rlvitals export --wandb` logs
                    row[TABLE_KEY] = _wandb().Table(columns=TABLE_COLUMNS, data=findings_table(plan))
            for step in sorted(rows):
                self.run.log(rows[step])
            self.run.summary[VERDICT_TAG] = plan.verdict
        except RlvitalsError:
            raise
        except Exception as exc:  # noqa: BLE001 (wandb raises its own errors; the watch goes on)
            raise RlvitalsError(Words(f"--export-wandb {self.directory}: W&B failed ({type(exc).__name__}: {exc}); "
                                      "the derived series and findings are not exported until it works",
                                      f"--export-wandb {self.directory}：W&B 出错（{type(exc).__name__}: {exc}）；"
                                      "在它恢复正常之前，派生序列和各项发现都不会导出")) from None
        remember(self.last, points)
        self.text = next((p.text for p in points if p.text is not None), self.text)
        self._save()
        return len(points)

    def _save(self) -> None:
        memo = self._load()
        memo[self.key] = {"run_id": self.run_id, "last": self.last, "text": self.text}
        tmp = self.memo.with_name(self.memo.name + ".tmp")
        try:
            tmp.write_text(json.dumps(memo), encoding="utf-8")
            os.replace(tmp, self.memo)
        except OSError as exc:
            raise RlvitalsError(Words(f"--export-wandb {self.memo}: cannot write ({exc.strerror}); a restarted "
                                      "watcher would log again what this one logged",
                                      f"--export-wandb {self.memo}：无法写入（{exc.strerror}）；watcher 重启后会把"
                                      "这次已记录的内容再记录一遍")) from None

    def close(self) -> None:
        """Finish the W&B run (its files are complete once wandb's service has flushed them)."""
        if self.run is not None:
            run, self.run = self.run, None
            run.finish()
