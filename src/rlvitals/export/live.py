"""A watched run's derived series and findings appended to a TensorBoard event file as it grows.

``rlvitals watch --export-tensorboard LOGDIR`` keeps one event file per run,
``events.out.tfevents.<time>.<host>.rlvitals-live``, and after each full diagnosis appends only
what is new (TensorBoard drops a tag's point whose step goes back within a file):

- each derived series' points after the last step written under its tag;
- at the diagnosed run's last step: each finding's status (0 ok, 1 warn, 2 fail) under
  ``rlvitals/findings/<name>`` and the verdict under ``rlvitals/verdict``, so their charts show
  when a finding appeared and how it went on; and the findings' words as a Markdown table
  (``rlvitals/diagnosis``) when they changed.

A restarted watcher finds its file, reads back the last step of every tag in it (cutting off a
record a crash left half-written) and appends after them: nothing written twice, nothing lost.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path

from ..errors import RlvitalsError
from ..ingest import SkipLog, SourceMeta
from ..ingest import tensorboard as tb_reader
from ..ingest._tfevents import masked_crc32c
from ._wire import scalar_event, text_event, tfrecords, version_event
from .plan import STATUS_VALUE, ExportPlan
from .tensorboard import TEXT_TAG, VERDICT_TAG, findings_markdown

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
        if logdir.exists() and not logdir.is_dir():
            raise RlvitalsError(f"--export-tensorboard {logdir}: is a file, expected a folder (the run's "
                                "TensorBoard log folder, or a new one)")
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
                for tag in record.values:
                    self.last[tag] = max(self.last.get(tag, record.step), record.step)
        except OSError as exc:
            raise RlvitalsError(f"--export-tensorboard {path}: cannot read the file an earlier watcher wrote "
                                f"({exc.strerror}); move it away or give another folder") from None

    def update(self, plan: ExportPlan) -> int:
        """Append what ``plan`` holds that the file does not yet; the number of points written.
        Raises RlvitalsError when the folder or the file cannot be written."""
        now = self.clock()
        events: list[tuple[int, int, bytes]] = []
        written: dict[str, int] = {}
        for order, series in enumerate(plan.series):
            after = self.last.get(series.tag, -1)
            for step, value in zip(series.steps.tolist(), series.values.tolist(), strict=True):
                if step > after:
                    events.append((step, order, scalar_event(now, step, series.tag, value)))
                    written[series.tag] = step
        step, order = plan.last_step, len(plan.series)
        text = findings_markdown(plan)
        if step > self.last.get(VERDICT_TAG, -1):
            for f in plan.findings:
                if step > self.last.get(f.tag, -1):
                    events.append((step, order, scalar_event(now, step, f.tag, STATUS_VALUE[f.status])))
                    written[f.tag] = step
            if plan.verdict in STATUS_VALUE:
                events.append((step, order + 1, scalar_event(now, step, VERDICT_TAG, STATUS_VALUE[plan.verdict])))
                written[VERDICT_TAG] = step
            if text != self.text:
                events.append((step, order + 2, text_event(now, step, TEXT_TAG, text)))
                written[TEXT_TAG] = step
        if not events:
            return 0
        events.sort(key=lambda e: (e[0], e[1]))
        payloads = [e[2] for e in events]
        self._append(payloads, now)
        self.last.update(written)
        if TEXT_TAG in written:
            self.text = text
        return len(payloads)

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
            raise RlvitalsError(f"--export-tensorboard {where}: cannot write ({exc.strerror}); the derived series "
                                "and findings are not exported until it can") from None
