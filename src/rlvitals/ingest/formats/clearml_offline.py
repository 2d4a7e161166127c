"""ClearML offline sessions (``Task.set_offline(True)``), read without the clearml package.

An offline task writes ``<CLEARML_CACHE_DIR>/offline/offline-<id>/`` (default cache ``~/.clearml/cache``)
while it runs, and at ``task.close()`` the same files zipped beside it as ``offline-<id>.zip``:

- ``task.json``: the task (``id``, ``name``, ``project_name``) and its ``hyperparams``
  (``{section: {name: {"value": text, "type": "int"|"float"|"bool"|"str"…}}}``; ``task.connect(dict)`` puts a
  nested dict in section ``General`` with ``/`` between its keys);
- ``metrics.jsonl``: a JSON list of events per line (one flushed batch); a scalar is
  ``{"type": "training_stats_scalar", "task", "metric", "variant", "iter", "value", "timestamp"}`` (ms), read
  here as the metric ``<metric>/<variant>`` at step ``iter`` (``report_scalar(title="train", series="loss")`` is
  ``train/loss``, as HF's ClearML callback logs); ``report_single_value`` is the iteration -2**31 under the
  title ``Summary``, read as the run's summary. Plots, other tasks' events and model events are left out.
  ClearML writes a NaN or an infinite scalar as 0.0 (its reporter replaces them), so a NaN a training
  reported does not reach the file: ``nan_inf`` cannot see it in a ClearML run.

A session still being written (no zip yet) is read as far as its complete lines go: a line cut by a kill
is a counted skip. The folder is read when both it and its zip are there (the same session). The metrics
are read a chunk at a time, from the folder or as the zip's member inflates, never whole: a line longer than
16 MiB is a counted skip, and a member the zip says inflates past :data:`MAX_MEMBER` (a zip bomb: 1.5 MB
inflating to 1.5 GB) is not read, a counted skip naming it and the cap.
"""

from __future__ import annotations

import math
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, Any

import orjson

from ...errors import InputError
from ...words import Words
from .._files import open_file, read_file, regular
from .._reader import Reader
from ..record import LoggedTable, Record, SkipLog, SourceMeta, Value
from ..text import CHUNK, MAX_LINE

FORMAT = "clearml"
PREFIX = "offline-"
TASK, METRICS = "task.json", "metrics.jsonl"
SUMMARY_ITER = -(2**31)
_ZIP = b"PK\x03\x04"
_TYPED = {"int": int, "float": float}
#: a folder holding more entries than this is not looked into for sessions (sniffing stays cheap)
_SNIFF_ENTRIES = 500
#: the most a zip's metrics are read inflated: a session's metrics are streamed, so this bounds the time a zip
#: bomb takes (a 1.5 MB zip inflates to 1.5 GB), not the memory; a long run's metrics.jsonl is a few hundred MB
MAX_MEMBER = 1 << 30
#: the most a task.json is read (it is read whole: hyperparameters, a few kB to a few MB)
MAX_TASK = 64 << 20


def _is_session_dir(path: Path) -> bool:
    return path.name.startswith(PREFIX) and (path / TASK).is_file()


def _is_session_zip(path: Path) -> bool:
    try:
        with open_file(path) as fh, zipfile.ZipFile(fh) as z:
            return TASK in z.namelist()
    except (OSError, InputError, zipfile.BadZipFile, NotImplementedError, EOFError, ValueError):
        return False  # NotImplementedError: a zip of a version zipfile does not read


def _sessions(folder: Path) -> list[Path]:
    """The sessions of an ``offline/`` folder: each session folder, and each zip without its folder."""
    try:
        children = sorted(folder.iterdir())
    except OSError:
        return []
    if len(children) > _SNIFF_ENTRIES:
        return []
    dirs = [c for c in children if c.is_dir() and _is_session_dir(c)]
    names = {d.name for d in dirs}
    zips = [c for c in children if c.suffix == ".zip" and c.name.startswith(PREFIX) and c.stem not in names
            and _is_session_zip(c)]
    return sorted(dirs + zips, key=lambda p: p.name)


def sniff(path: Path, head: bytes) -> bool:
    if path.is_file():
        return head.startswith(_ZIP) and path.name.startswith(PREFIX) and _is_session_zip(path)
    return _is_session_dir(path) or bool(_sessions(path)) or bool(_sessions(path / "offline"))


def runs(path: Path) -> list[Path]:
    """One root per session: the session folder or zip itself, or each session of a cache's ``offline/``."""
    if path.is_file() or _is_session_dir(path):
        return [path]
    return _sessions(path) or _sessions(path / "offline") or [path]


def _too_big(name: str, size: int, cap: int) -> Words:
    return Words(f"its {name} holds {size} bytes (inflated), more than the {cap} bytes rlvitals reads of a "
                 f"session's {name} (a zip bomb, or no ClearML session); it was not read",
                 f"其中的 {name} 有 {size} 字节（解压后），超过 rlvitals 对会话 {name} 的读取上限 {cap} 字节"
                 "（像是 zip 炸弹，或者不是 ClearML 会话）；没有读取")


def _task_too_big(path: Path, size: int) -> InputError:
    why = _too_big(TASK, size, MAX_TASK)
    return InputError(Words(f"{path}: {why}", f"{path}：{why.zh}"))


@contextmanager
def _session(path: Path, skips: SkipLog) -> Iterator[tuple[bytes, IO[bytes] | None]]:
    """The task (bytes) and the metrics (a stream, None when nothing was logged) of a session folder or zip.
    A zip's members are inflated as they are read, never whole: a metrics member declared larger than
    :data:`MAX_MEMBER` (a task larger than :data:`MAX_TASK`) is not read, and counted in ``skips`` (an
    :class:`InputError` for the task); a FIFO or a device in a folder is not opened, and counted."""
    with ExitStack() as stack:
        if path.is_dir():
            task_file, metrics = path / TASK, path / METRICS
            if task_file.stat().st_size > MAX_TASK:
                raise _task_too_big(path, task_file.stat().st_size)
            task = read_file(task_file)
            found = regular([metrics], skips) if metrics.exists() else []
            yield task, stack.enter_context(open_file(found[0])) if found and found[0].is_file() else None
            return
        fh = stack.enter_context(open_file(path))
        try:
            z = stack.enter_context(zipfile.ZipFile(fh))
            info = z.getinfo(TASK)
            if info.file_size > MAX_TASK:
                raise _task_too_big(path, info.file_size)
            task = z.read(info)
            member = next((i for i in z.infolist() if i.filename == METRICS), None)
            if member is not None and member.file_size > MAX_MEMBER:
                skips.skip(str(path), _too_big(METRICS, member.file_size, MAX_MEMBER))
                member = None
            stream = stack.enter_context(z.open(member)) if member is not None else None
        # OSError: an offset in the zip's directory that is no place in the file (a seek before its start)
        except (zipfile.BadZipFile, KeyError, NotImplementedError, EOFError, zlib.error, OSError) as exc:
            raise InputError(Words(f"{path}: not a ClearML offline session zip ({exc})",
                                   f"{path}：不是 ClearML 的离线会话压缩包（{exc}）")) from None
        yield task, stream


def _typed(entry: Any) -> Any:
    if not isinstance(entry, dict):
        return entry
    text, kind = entry.get("value"), entry.get("type")
    if isinstance(text, str) and isinstance(kind, str) and kind in _TYPED:
        try:
            return _TYPED[kind](text)
        except ValueError:
            return text
    if isinstance(text, str) and kind == "bool" and text in ("True", "False"):
        return text == "True"
    return text


def _task(path: Path, raw: bytes, meta: SourceMeta) -> str:
    """The task's id; its name, project and hyperparameters into ``meta.config``."""
    try:
        task = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InputError(Words(f"{path}: {TASK} is not JSON ({exc})", f"{path}：{TASK} 不是 JSON（{exc}）")) from None
    if not isinstance(task, dict):
        raise InputError(Words(f"{path}: {TASK} is not a JSON object", f"{path}：{TASK} 不是 JSON 对象"))
    for key in ("name", "project_name", "id"):
        if isinstance(task.get(key), str):
            meta.config[f"clearml.{key}"] = task[key]
    hyperparams = task.get("hyperparams")
    for section, entries in (hyperparams if isinstance(hyperparams, dict) else {}).items():
        if not isinstance(entries, dict):
            continue
        for name, entry in entries.items():
            key = str(name).replace("/", ".")
            meta.config[key if section == "General" else f"{section}.{key}"] = _typed(entry)
    return str(task.get("id", ""))


def _lines(path: Path, stream: IO[bytes] | None, skips: SkipLog) -> Iterator[tuple[int, bytes, bool]]:
    """``(line number, line, whether it is a last line without its newline)`` of the metrics, read a chunk at a
    time: a line longer than :data:`~.text.MAX_LINE` is skipped (counted) without being held, and a member whose
    bytes turn out damaged (its checksum fails at its end) keeps the lines read before."""
    if stream is None:
        return
    lineno, pending, long = 0, b"", False
    try:
        while chunk := stream.read(CHUNK):
            if long:  # within a line too long to keep: on to its end
                end = chunk.find(b"\n")
                if end < 0:
                    continue
                lineno += 1
                long, chunk = _too_long(path, lineno, skips), chunk[end + 1:]
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                lineno += 1
                yield lineno, line, False
            if len(pending) > MAX_LINE:
                long, pending = True, b""  # the rest of this line is not kept either
    except (zipfile.BadZipFile, EOFError, zlib.error, OSError) as exc:
        skips.skip(f"{path}/{METRICS}:{lineno + 1}", Words(f"the zip member is damaged ({exc}); the rest of it was "
                                                           "skipped", f"压缩包成员已损坏（{exc}）；余下的部分已跳过"))
        return
    if long:
        _too_long(path, lineno + 1, skips)
    elif pending:
        yield lineno + 1, pending, True


def _too_long(path: Path, lineno: int, skips: SkipLog) -> bool:
    skips.skip(f"{path}/{METRICS}:{lineno}", Words(f"a line longer than {MAX_LINE} bytes; it was skipped",
                                                   f"这一行超过 {MAX_LINE} 字节；已跳过"))
    return False


def _events(path: Path, stream: IO[bytes] | None, skips: SkipLog) -> Iterator[tuple[int, dict[str, Any]]]:
    for lineno, line, cut in _lines(path, stream, skips):
        if not line.strip():
            continue
        try:
            batch = orjson.loads(line)
        except orjson.JSONDecodeError:  # no newline after it: the session is being written, or was killed
            skips.skip(f"{path}/{METRICS}:{lineno}",
                       Words("an incomplete last line (the session was killed or is still writing); it was skipped"
                             if cut else "not a JSON list of events; the line was skipped",
                             "最后一行不完整（会话被杀掉了，或者还在写入）；这一行已跳过" if cut
                             else "不是事件的 JSON 列表；这一行已跳过"))
            continue
        for event in batch if isinstance(batch, list) else [batch]:
            if isinstance(event, dict):
                yield lineno, event


def _number(value: Any) -> Value | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if value is None:
        return math.nan
    return None


def read(path: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    if not (path.is_file() or _is_session_dir(path)):
        raise InputError(Words(f"{path}: not a ClearML offline session (an offline-<id>/ folder with {TASK}, or "
                               "its .zip); pass a session or the cache's offline/ folder",
                               f"{path}：不是 ClearML 的离线会话（含 {TASK} 的 offline-<id>/ 文件夹或其 .zip）；"
                               "请传入某个会话，或缓存里的 offline/ 文件夹"))
    meta.files, meta.clock = [str(path)], "ClearML timestamp"
    steps: dict[int, dict[str, Value]] = {}
    walls: dict[int, float] = {}
    where: dict[int, str] = {}
    summary: dict[str, Value] = {}
    with _session(path, skips) as (raw_task, metrics):
        task_id = _task(path, raw_task, meta)
        meta.bytes_read += len(raw_task)
        for lineno, event in _events(path, metrics, skips):
            _scalar(path, lineno, event, task_id, (steps, walls, where, summary), skips)
        meta.bytes_read += metrics.tell() if metrics is not None else 0
    if walls:
        meta.started = min(walls.values())
    for step in sorted(steps):
        yield Record(step, steps[step], where[step], wall=walls.get(step))
    if summary:
        yield Record(max(steps, default=0), summary, f"{path}/{METRICS}#summary", kind="summary")


_Gathered = tuple[dict[int, dict[str, Value]], dict[int, float], dict[int, str], dict[str, Value]]


def _scalar(path: Path, lineno: int, event: dict[str, Any], task_id: str, into: _Gathered, skips: SkipLog) -> None:
    """One event into the values by step, their wall times and where each step was first read, and the summary
    (:data:`SUMMARY_ITER`); an event that is not this task's scalar is passed over."""
    steps, walls, where, summary = into
    if event.get("type") != "training_stats_scalar" or event.get("task", task_id) != task_id \
            or event.get("model_event"):
        return
    value, step = _number(event.get("value")), event.get("iter")
    if value is None or not isinstance(step, int):
        skips.skip(f"{path}/{METRICS}:{lineno}",
                   Words(f"a scalar with value {event.get('value')!r} at iteration {step!r}; it was skipped",
                         f"标量的值是 {event.get('value')!r}，迭代是 {step!r}；这个值已跳过"))
        return
    if step == SUMMARY_ITER:
        summary[str(event.get("variant"))] = value
        return
    key = f"{event.get('metric')}/{event.get('variant')}"
    if step not in steps:
        steps[step], where[step] = {}, f"{path}/{METRICS}:{lineno}"
    steps[step][key] = value
    stamp = event.get("timestamp")
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
        walls[step] = max(stamp / 1000, walls.get(step, stamp / 1000))


def tables(path: Path, skips: SkipLog) -> list[LoggedTable]:
    """The tables the session reported (``report_table``, as veRL logs its validation generations): each a
    ``plot`` event whose ``plot_str`` is a plotly table (``header.values``: a column name per list,
    ``cells.values``: a column per list), keyed ``<title>/<series>`` at its iteration. A table that is no
    such JSON is a counted skip."""
    out = []
    with _session(path, SkipLog()) as (_, metrics):  # a bad line is the metrics read's to count
        for lineno, event in _events(path, metrics, SkipLog()):
            if event.get("type") != "plot" or '"table"' not in str(event.get("plot_str", "")):
                continue
            where = f"{path}/{METRICS}:{lineno}"
            try:
                data = orjson.loads(str(event["plot_str"]))["data"][0]
                names = [str(h[0]) if isinstance(h, list) and h else str(h) for h in data["header"]["values"]]
                columns = data["cells"]["values"]
                rows = tuple(dict(zip(names, cells, strict=False)) for cells in zip(*columns, strict=False))
            except (orjson.JSONDecodeError, KeyError, IndexError, TypeError) as exc:
                skips.skip(where, Words(f"a reported table that is not a plotly table ({type(exc).__name__}); it "
                                        "was skipped", f"报告的表不是 plotly 表格（{type(exc).__name__}）；已跳过"))
                continue
            if data.get("type") == "table":
                step = event.get("iter")
                out.append(LoggedTable(f"{event.get('metric')}/{event.get('variant')}",
                                       step if isinstance(step, int) else None, where, rows, FORMAT))
    return out


DESCRIBES = "a ClearML offline session (offline-<id>/ or its .zip), or the cache's offline/ folder of them"
READER = Reader(FORMAT, sniff, read, runs=runs, describes=DESCRIBES)
DIR_READER = Reader(FORMAT, sniff, read, takes_dir=True, runs=runs, describes=DESCRIBES)
READERS = (READER, DIR_READER)
