"""HF Trainer / TRL ``trainer_state.json``, a bare ``log_history`` list, or a folder holding them.

``log_history`` holds one record per logging step (``{"loss": ..., "step": N}``), evaluation
records (``eval_*`` keys) at their own step, and a final summary (``train_runtime``,
``train_loss``, ...) that goes to ``Run.summary``. GRPO logs ``null`` for a metric that was
NaN on every process; Python's ``json`` (which writes the file) writes ``NaN`` for a NaN loss.
The scalar top-level fields become config under ``trainer_state.<field>``; ``global_step``
(and the summary's step) is the step the run reached, which ``Run.last_step`` reports when the
last logging step came before it.

A folder is read through its ``trainer_state.json``, or else through the one in the
highest-numbered ``checkpoint-N/`` (each checkpoint holds the whole history up to N).

Memory: the file is parsed whole (it is one JSON document). trainer_state files are small (a record per
logging step, well under 100 MB even for long runs), so this is acceptable; the columnar read lets each
entry go once its values are in columns.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...words import Words
from .._files import read_file
from .._reader import Reader
from ..columnar import Columns
from ..record import Record, SkipLog, SourceMeta, Value
from ..text import json_document
from .generic_jsonl import as_step, drop_eval_epoch, fill, flatten

FORMAT = "trl-state"
STATE_FILE = "trainer_state.json"
#: the keys of the record HF Trainer logs once, at the end of ``train()``
SUMMARY_KEYS = frozenset({"train_runtime", "train_samples_per_second", "train_steps_per_second",
                          "total_flos", "train_loss"})

_STEP = frozenset({"step"})
_CHECKPOINT = re.compile(r"checkpoint-(\d+)")
_LIST_OF_OBJECTS = re.compile(rb"\[\s*\{")


def sniff(path: Path, head: bytes) -> bool:
    if path.name == STATE_FILE:
        return True
    start = head.lstrip()
    if start.startswith(b"{"):
        return b'"log_history"' in head
    return _LIST_OF_OBJECTS.match(start) is not None and b'"step"' in head


def _checkpoints(folder: Path) -> list[tuple[int, Path]]:
    found = []
    for child in folder.iterdir():
        hit = _CHECKPOINT.fullmatch(child.name)
        if hit and (child / STATE_FILE).is_file():
            found.append((int(hit.group(1)), child / STATE_FILE))
    return sorted(found)


def sniff_dir(path: Path, head: bytes) -> bool:
    return (path / STATE_FILE).is_file() or bool(_checkpoints(path))


def _candidates(folder: Path) -> list[tuple[Words, Path]]:
    """The trainer_state.json files of ``folder``, fullest history first: its own, else each checkpoint's
    from the latest down (each holds the whole history up to its step)."""
    direct = folder / STATE_FILE
    if direct.is_file():
        return [(Words("", ""), direct)]
    found = _checkpoints(folder)
    if not found:
        raise InputError(Words(f"{folder}: no {STATE_FILE} in this folder or in a checkpoint-N/ subfolder; "
                               "expected a Trainer output_dir or one of its checkpoints",
                               f"{folder}：这个文件夹和它的 checkpoint-N/ 子文件夹里都没有 {STATE_FILE}；"
                               "这里应当是 Trainer 的 output_dir 或其中的某个检查点"))
    many = len(found)
    return [(Words("the only checkpoint", "唯一的检查点") if many == 1
             else Words(f"the latest of {many} checkpoints", f"{many} 个检查点中最新的一个") if i == 0
             else Words(f"checkpoint {i + 1} of {many} from the latest", f"{many} 个检查点中从新到旧的第 {i + 1} 个"),
             path) for i, (_, path) in enumerate(reversed(found))]


def _state(path: Path, meta: SourceMeta) -> list[Any]:
    data = read_file(path)  # never a FIFO put in its place: it would wait for a writer
    meta.bytes_read += len(data)
    expected = Words("a trainer_state.json object or a log_history list", "trainer_state.json 对象或 log_history 列表")
    return _history(path, json_document(path, data, expected), meta)


def _read_folder(folder: Path, meta: SourceMeta) -> tuple[Path, list[Any]]:
    """The history of the newest readable trainer_state.json of ``folder``: a checkpoint cut short while it
    was being written (the run died saving it) falls back to the one before, with a note; only when none
    can be read is the error the oldest one's."""
    *newer, (last_which, last) = _candidates(folder)
    unreadable: list[Words] = []
    for which, path in newer:
        try:
            history = _state(path, meta)
        except InputError as exc:
            unreadable.append(Words(f"{path.parent.name}/{STATE_FILE} ({exc})",
                                    f"{path.parent.name}/{STATE_FILE}（{exc.text('zh')}）"))
            continue
        return path, _noted(folder, path, which, unreadable, history, meta)
    return last, _noted(folder, last, last_which, unreadable, _state(last, meta), meta)


def _noted(folder: Path, path: Path, which: Words, unreadable: list[Words], history: list[Any],
           meta: SourceMeta) -> list[Any]:
    if unreadable:
        meta.notes.append(Words(f"{folder}: could not read {'; '.join(unreadable)}; read {path.parent.name}/"
                                f"{STATE_FILE} instead, {which}",
                                f"{folder}：读不出 {'；'.join(u.zh for u in unreadable)}；改读了{which.zh}"
                                f" {path.parent.name}/{STATE_FILE}"))
    elif which:
        step = _CHECKPOINT.fullmatch(path.parent.name)
        upto = step.group(1) if step else "?"
        meta.notes.append(Words(f"{folder}: read {path.parent.name}/{STATE_FILE}, {which} (it holds the whole "
                                f"history up to step {upto})",
                                f"{folder}：读取了{which.zh} {path.parent.name}/{STATE_FILE}"
                                f"（其中有截至第 {upto} 步的全部历史）"))
    return history


def _history(path: Path, doc: Any, meta: SourceMeta) -> list[Any]:
    if isinstance(doc, list):
        return doc
    history = doc.get("log_history") if isinstance(doc, dict) else None
    if isinstance(history, list):
        for key, value in doc.items():
            if key != "log_history" and not isinstance(value, (dict, list)):
                meta.config[f"trainer_state.{key}"] = value
        return history
    found = Words("an object without a 'log_history' list", "一个没有 'log_history' 列表的对象") \
        if isinstance(doc, dict) else Words(type(doc).__name__, f"一个 {type(doc).__name__}")
    raise InputError(Words(f"{path}: found {found}; expected a trainer_state.json object with a "
                           "'log_history' list, or that list itself",
                           f"{path}：读到的是{found.zh}；这里应当是带 'log_history' 列表的 trainer_state.json 对象，"
                           "或者就是这个列表"))


def _entries(path: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[tuple[int, dict[str, Value], str, bool]]:
    """Each logging step of the history as (step, values, where, is the end-of-training summary); an entry
    is let go once its values are taken (the document is parsed whole, but none of its dicts is kept)."""
    meta.framework = "trl"
    if path.is_dir():
        path, history = _read_folder(path, meta)
        meta.files = [str(path)]
    else:
        history = _state(path, meta)
    global_step = as_step(meta.config.get("trainer_state.global_step"))
    if global_step is not None:
        meta.reached = global_step
    history.reverse()
    n = 0
    while history:
        entry, n = history.pop(), n + 1
        where = f"{path}#record {n}"
        if not isinstance(entry, dict):
            skips.skip(where, Words(f"expected a JSON object, found {type(entry).__name__}; the record was skipped",
                                    f"应为 JSON 对象，读到的是 {type(entry).__name__}；这条记录已跳过"))
            continue
        step = as_step(entry.get("step"))
        if step is None:
            skips.skip(where, Words(f"step {entry.get('step')!r} is not an integer; the record was skipped",
                                    f"步数 {entry.get('step')!r} 不是整数；这条记录已跳过"))
            continue
        values: dict[str, Value] = {}
        flatten(entry, values, skip=_STEP)
        if SUMMARY_KEYS.intersection(entry):
            meta.reached = max(meta.reached or 0, step)
            yield step, values, where, True
            continue
        drop_eval_epoch(values)
        if values:
            yield step, values, where, False


def read(path: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    for step, values, where, summary in _entries(path, meta, skips):
        yield Record(step, values, where, kind="summary" if summary else "metrics")


def read_columns(path: Path, meta: SourceMeta, skips: SkipLog, *, min_bytes: int = 0,
                 progress: Callable[[int], None] | None = None) -> Columns:
    """What :func:`read` yields, as :class:`Columns` (one process: the file is one JSON document)."""
    cols = Columns(progress=progress)

    def logged() -> Iterator[tuple[int, dict[str, Value], str, float | None]]:
        for step, values, where, summary in _entries(path, meta, skips):
            if summary:
                cols.summary.update(values)  # as Columns.add takes a summary record
            else:
                yield step, values, where, None

    return fill(cols, logged(), skips)


DESCRIBES = "HF Trainer / TRL trainer_state.json (log_history), or an output_dir of checkpoints"
READER = Reader(FORMAT, sniff, read, columns=read_columns, describes=DESCRIBES)
#: the same reader for a Trainer output folder or checkpoint folder
DIR_READER = Reader(FORMAT, sniff_dir, read, takes_dir=True, describes=DESCRIBES)
#: both forms, for a registry that takes several readers from one module
READERS = (READER, DIR_READER)
