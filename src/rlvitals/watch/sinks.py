"""Where alerts go: a JSONL file, a webhook, a command. Each ``send`` returns an error message
(or None) instead of raising, so one broken sink never stops the watcher or the other sinks.

``--alert`` specs: ``jsonl:FILE``, ``webhook:URL`` (http or https; Slack's or Discord's
shape by the URL's host, see :mod:`.webhook`; ``slack:URL`` and ``discord:URL`` force one),
``command:'CMD ARGS'``. A ``jsonl:`` target that is not a regular file (a pipe, ``/dev/stdout``, a terminal)
is streamed to, one flushed line per alert, and never read back; one that cannot be written (a folder, a
block device, a pipe no process reads) is refused when the watcher starts. A command is split like a shell would
split it but run without one; it gets the alert as JSON on stdin and as ``RLVITALS_*``
variables. A sink with ``threaded = True`` (webhook, command: they wait on something else) is
called by the watcher from a worker thread (:mod:`.outbox`). A sink with ``grouped = True``
(webhook, command: a person reads them, or they act once) gets the alerts of one check raised
together as one (:func:`rlvitals.live.alerts.combine`); the JSONL file gets one line per finding.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import stat
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ..errors import RlvitalsError
from ..live.alerts import Alert
from ..live.dispatch import Sink
from ..words import Words
from .webhook import DISCORD_LIMIT, Flavour, WebhookSink, webhook_body

__all__ = ["DISCORD_LIMIT", "CommandSink", "JsonlSink", "Sink", "WebhookSink", "alert_env", "parse_sink",
           "webhook_body"]


@dataclass
class JsonlSink:
    """Appends one JSON object per alert to a file, once: an alert sent again after a watcher was
    killed between the append and striking it off in its state file (at-least-once delivery) is
    found by its ``alert_id`` near the end of the file and not appended twice."""

    path: Path
    name: str = ""
    threaded: bool = False  # an append to a local file: done in the watch loop
    grouped: bool = False  # one line per finding, for machines
    #: a target that is not a regular file (a pipe, a terminal), opened once: written to, never read back
    stream: IO[str] | None = None

    def close(self) -> None:
        """Close the stream (a pipe, a terminal) it holds, if it holds one."""
        if self.stream is not None:
            stream, self.stream = self.stream, None
            with contextlib.suppress(OSError):  # its reader went away: nothing is left to flush into it
                stream.close()

    def send(self, alert: Alert) -> str | None:
        if self.stream is not None:
            try:
                self.stream.write(json.dumps(alert.payload(), ensure_ascii=False) + "\n")
                self.stream.flush()
            except OSError as exc:  # the reader of the pipe went away
                return Words(f"jsonl:{self.path}: could not write the alert ({exc.strerror or exc})",
                             f"jsonl:{self.path}：无法写入这条告警（{exc.strerror or exc}）")
            return None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if _written(self.path, alert.alert_id):
                return None
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(alert.payload(), ensure_ascii=False) + "\n")
        except OSError as exc:
            return Words(f"jsonl:{self.path}: could not append the alert ({exc.strerror or exc})",
                         f"jsonl:{self.path}：无法追加这条告警（{exc.strerror or exc}）")
        return None


#: how far back from the end of a JSONL alert file a redelivered alert is looked for: the alerts still
#: pending when a watcher is killed are its last ones
_REDELIVERY_WINDOW = 1 << 18


def _written(path: Path, alert_id: str) -> bool:
    """Whether the alert ``alert_id`` is among the last lines of ``path`` already."""
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - _REDELIVERY_WINDOW))
            tail = fh.read()
    except FileNotFoundError:
        return False
    return f'"alert_id": "{alert_id}"'.encode() in tail


def alert_env(alert: Alert, lang: str = "en") -> dict[str, str]:
    """The ``RLVITALS_*`` variables a command hook receives."""
    return {"RLVITALS_ALERT_ID": alert.alert_id,
            "RLVITALS_RUN": alert.run, "RLVITALS_CHECK": alert.check, "RLVITALS_LAYER": alert.layer,
            "RLVITALS_STATUS": alert.status, "RLVITALS_KIND": alert.kind, "RLVITALS_STEP": str(alert.step),
            "RLVITALS_PREVIOUS": alert.previous or "", "RLVITALS_MESSAGE": alert.message.get(lang, ""),
            "RLVITALS_TEXT": alert.text(lang)}


@dataclass
class CommandSink:
    """Runs a command per alert (e.g. ``scancel $SLURM_JOB_ID``) without a shell."""

    argv: list[str]
    lang: str = "en"
    timeout: float = 30.0
    name: str = ""
    environ: Mapping[str, str] | None = None
    threaded: bool = True
    grouped: bool = True  # one call per event (a `scancel` runs once)

    def send(self, alert: Alert) -> str | None:
        env = {**(os.environ if self.environ is None else self.environ), **alert_env(alert, self.lang)}
        try:
            done = subprocess.run(self.argv, input=json.dumps(alert.payload()).encode(), env=env,
                                  capture_output=True, timeout=self.timeout, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Words(f"command {shlex.join(self.argv)}: could not run it ({exc})",
                         f"command {shlex.join(self.argv)}：无法运行（{exc}）")
        if done.returncode != 0:
            tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            return Words(f"command {shlex.join(self.argv)}: exited with {done.returncode} {tail[0]}".rstrip(),
                         f"command {shlex.join(self.argv)}：退出码 {done.returncode} {tail[0]}".rstrip())
        return None


def parse_sink(spec: str, lang: str = "en") -> JsonlSink | WebhookSink | CommandSink:
    """The sink an ``--alert`` spec names.

    Example:
        >>> parse_sink("jsonl:alerts.jsonl").path
        PosixPath('alerts.jsonl')
    """
    kind, sep, rest = spec.partition(":")
    if not sep or not rest.strip():
        raise RlvitalsError(Words(f"--alert {spec!r}: expected KIND:TARGET, one of jsonl:FILE, webhook:URL, "
                                  "command:'CMD ARGS'",
                                  f"--alert {spec!r}：应为 KIND:TARGET，即 jsonl:FILE、webhook:URL、"
                                  "command:'CMD ARGS' 之一"))
    if kind == "jsonl":
        return _jsonl_sink(Path(rest), spec)
    if kind in ("webhook", "slack", "discord"):
        if not rest.startswith(("http://", "https://")):
            raise RlvitalsError(Words(f"--alert {spec!r}: the webhook URL must start with http:// or https://",
                                      f"--alert {spec!r}：webhook URL 必须以 http:// 或 https:// 开头"))
        shape: Flavour | None = "slack" if kind == "slack" else "discord" if kind == "discord" else None
        return WebhookSink(rest, lang, name=spec, kind=shape)
    if kind == "command":
        try:
            argv = shlex.split(rest)
        except ValueError as exc:
            raise RlvitalsError(Words(f"--alert {spec!r}: the command does not parse ({exc}); check its quotes",
                                      f"--alert {spec!r}：命令无法解析（{exc}），请检查引号")) from None
        return CommandSink(argv, lang, name=spec)
    raise RlvitalsError(Words(f"--alert {spec!r}: unknown sink {kind!r}; expected jsonl:FILE, webhook:URL "
                              "(slack:URL, discord:URL to force the body's shape) or command:'CMD ARGS'",
                              f"--alert {spec!r}：未知的告警目标 {kind!r}；应为 jsonl:FILE、webhook:URL"
                              "（slack:URL、discord:URL 可指定消息体格式）或 command:'CMD ARGS'"))


def _jsonl_sink(path: Path, spec: str) -> JsonlSink:
    """A ``jsonl:`` sink: a file appended to (made at the first alert), or a pipe or terminal streamed to;
    refused (RlvitalsError) when it cannot be written."""
    def refused(en: str, zh: str) -> RlvitalsError:
        return RlvitalsError(Words(f"--alert {spec}: {en}", f"--alert {spec}：{zh}"))

    try:
        st = path.stat()
    except FileNotFoundError:
        return JsonlSink(path, name=spec)
    except OSError as exc:
        raise refused(f"cannot be looked at ({exc.strerror or exc})", f"无法查看（{exc.strerror or exc}）") from None
    if stat.S_ISDIR(st.st_mode):
        raise refused("is a folder; give a file's path", "是一个文件夹；请给出文件的路径")
    if stat.S_ISREG(st.st_mode):
        return JsonlSink(path, name=spec)
    if stat.S_ISBLK(st.st_mode):
        raise refused("is a block device, not a file", "是块设备，不是文件")
    try:  # without O_NONBLOCK, a pipe no process reads would hold the watcher here for good
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK)
    except OSError as exc:
        raise refused(f"cannot be written ({exc.strerror or exc}); a pipe needs a process reading it",
                      f"无法写入（{exc.strerror or exc}）；管道需要有进程在读") from None
    os.set_blocking(fd, True)
    return JsonlSink(path, name=spec, stream=os.fdopen(fd, "a", encoding="utf-8"))
