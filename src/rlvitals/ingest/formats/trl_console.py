"""TRL / HF Trainer console output: the logs dict ProgressCallback prints at every logging step.

``ProgressCallback.on_log`` writes ``str(logs)`` through tqdm (``total_flos`` removed):
``{'loss': -0.0982, 'grad_norm': 0.12, ..., 'epoch': 0.03}`` for training,
``{'eval_loss': ..., 'epoch': ...}`` after an evaluation and
``{'train_runtime': ..., 'train_loss': ..., 'epoch': ...}`` at the end. Recent transformers
formats every float as ``f"{v:.4g}"`` first, so the dict holds quoted strings
(``{'loss': '0.0186', 'learning_rate': '3.6e-05'}``); a quoted value in that form is read as the
number it prints (4 significant digits) and a note says so. A dict is found wherever it starts
on a line — after a progress bar it was glued to, inside a markdown terminal capture — and
banners that repeat some of its values (``📊 Logging 44 metrics``) are not dicts.

The dicts carry no step: :mod:`rlvitals.ingest._console_steps` gives each training dict its
step from the training bar drawn before it when the bar can be trusted, else by order ×
``logging_steps``, and says which in a note. Evaluation dicts attach to the latest training
step; the summary is a ``summary`` record. A log that ends in a traceback gets the crash; a log
holding only a traceback through TRL's or the Trainer's code is read too. The training bar shows the
steps finished between two dicts: a traceback it was drawn past was survived, and a crash's last step is
the bar's count before it.

A log may hold several trainings (a script that trains twice, a relaunch appended to the log): a training
dict after the summary of the one before, or after the training bar was drawn anew from its start, begins
another. Each is numbered on its own, and ``SourceMeta.starts`` says where each begins
(docs/formats/consoles.md).

Memory: the records are kept until the end of the file (their steps are known only then); a
console log holds one dict per logging step, so this is small.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...words import Words
from .._console_steps import Witnesses, number, training_total
from .._crash import FRAMEWORK_FRAMES, CrashScanner
from .._reader import Reader
from ..pyrepr import ReprError, metric_values, parse_cut_dict, parse_dict_at
from ..record import Record, SkipLog, SourceMeta, Value
from ..text import cut_note, integer, iter_lines, search_file, strip_ansi

FORMAT = "trl-console"

_SNIFF = re.compile(rb"\{'[^\r\n]*'epoch': [^\r\n,{}]+\}|" + FRAMEWORK_FRAMES["trl"].pattern)
#: a dict the Trainer printed: its first key, or an 'epoch' entry, says so
_FIRST_KEY = re.compile(r"\{'(?:loss|grad_norm|learning_rate|reward|kl|epoch|train_\w+|eval_\w+|test_\w+)'")
#: a bar's ``count/total [`` with no description before it ("Map: ", "Processed prompts: " are other bars)
_BAR = re.compile(r"(?:^|\r|\s|\|)(\d+)/(\d+) \[")
_DESCRIBED = re.compile(r"[A-Za-z][\w ]*:\s+\d+%\|")
_SUMMARY_KEYS = ("train_runtime", "train_samples_per_second", "train_steps_per_second")
_EVAL_PREFIXES = ("eval_", "test_")
#: how ProgressCallback prints a float: ``f"{v:.4g}"`` (and ``nan``, ``inf``)
_G4 = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)")
_LOGGING_STEPS = re.compile(r"""logging[_-]steps['"]?\s*[=:]\s*['"]?(\d+(?:\.\d+)?)"""
                            r"""|--logging[_-]steps[= ](\d+(?:\.\d+)?)""")
_TOTAL = re.compile(r"Total (?:optimization )?steps\s*[=:]\s*([\d,]+)")
_EPOCHS = re.compile(r"Num Epochs\s*[=:]\s*([\d.,]+)")


def sniff(path: Path, head: bytes) -> bool:
    return search_file(path, head, _SNIFF)


def _classify(values: dict[str, Value]) -> str:
    if any(k in values for k in _SUMMARY_KEYS):
        return "summary"
    if any(k.startswith(_EVAL_PREFIXES) for k in values):
        return "eval"
    return "train"


def _numbers(values: dict[str, Value]) -> int:
    """Read the quoted ``.4g`` strings of a dict as the numbers they print; how many there were."""
    quoted = 0
    for key, value in values.items():
        if isinstance(value, str) and _G4.fullmatch(value.strip()):
            values[key] = float(value)
            quoted += 1
    return quoted


def _number(text: str) -> float | None:
    try:
        number = float(text.replace(",", ""))
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _epoch(value: Value | None) -> float | None:
    """A dict's epoch as a witness of its step: a finite float, else none (``inf`` is no epoch)."""
    return value if isinstance(value, float) and math.isfinite(value) else None


class ConsoleLog:
    """What one pass over the log gathers: the dicts (held until their steps are known) and the witnesses of
    each training the log holds (a second one begins at a training dict after the summary of the one
    before, or where the training bar is drawn anew from its start: another launch appended to the log)."""

    def __init__(self, path: Path, split: bool = True) -> None:
        self.path = path
        self.split = split  # False: every dict is one training's (a notebook's outputs, read as one run)
        self.trainings = [Witnesses()]
        self.since: dict[int, int] = {}  # bar total -> last count since the last training dict
        #: kind, values, where, index among its training's training dicts, which training
        self.dicts: list[tuple[str, dict[str, Value], str, int, int]] = []
        self.quoted = 0
        self.crash = CrashScanner(path)
        #: a pretty-printed dict being collected, one item per line: (its lines, where it began, that line)
        self.pending: tuple[list[str], str, int] | None = None
        #: what a banner said (logging_steps, total steps, epochs) since the last training dict: the
        #: training it is about is the one that dict belongs to
        self.said: dict[str, float | None] = {}
        self.ended = False  # the summary came: a training dict after it begins another training

    @property
    def w(self) -> Witnesses:
        """The witnesses of the training being read."""
        return self.trainings[-1]

    def text(self, lineno: int, segment: str) -> None:
        """A piece of a line that is no dict: a bar, a banner, a traceback line."""
        if "/" in segment and "[" in segment and not _DESCRIBED.search(segment):
            for m in _BAR.finditer(segment):
                count, total = integer(m.group(1)), integer(m.group(2))
                if 0 <= count <= total:
                    self.since.pop(total, None)  # the last key is the bar drawn last
                    self.since[total] = count
                    if count > self.w.reached.get(total, -1):
                        self.w.reached[total] = count
                    self.crash.advanced(lineno, count, total)
        elif "logging" in segment and "logging_steps" not in self.said:
            found = _LOGGING_STEPS.search(segment)
            if found:
                self.said["logging_steps"] = _number(found.group(1) or found.group(2))
        elif "Total" in segment or "Num Epochs" in segment:
            said_total, said_epochs = _TOTAL.search(segment), _EPOCHS.search(segment)
            if said_total:
                self.said["total_steps"] = int(_number(said_total.group(1)) or 0) or None
            if said_epochs:
                self.said["num_epochs"] = _number(said_epochs.group(1))
        self.crash.feed(lineno, segment)

    def add(self, values: dict[str, Value], where: str, lineno: int) -> None:
        self.quoted += _numbers(values)
        kind = _classify(values)
        if kind == "train":
            if self.split and (self.ended or self._drawn_anew()):
                self.trainings.append(Witnesses())
            self.ended = False
            self._take_said()
            self.w.epochs.append(_epoch(values.get("epoch")))
            self.w.bars.append(self.since)
            self.since = {}
        trained = len(self.w.epochs) - (kind == "train")
        if kind == "summary":
            self.w.end_epoch = _epoch(values.get("epoch")) or self.w.end_epoch
            self.crash.finished(lineno)
            self.ended = True
        else:
            if kind != "train":
                values.pop("epoch", None)  # the training record of this step holds it already
            if not self.crash.stalled():  # dicts flushed from stdout's buffer after the traceback are no progress
                self.crash.progress(lineno)
        self.dicts.append((kind, values, where, trained, len(self.trainings) - 1))

    def _drawn_anew(self) -> bool:
        """Whether the bar drawn last before this training dict went back to where the training's own bar
        began, or before: a new bar, so another training (a resumed one restarts the bar at its checkpoint,
        past its first count, and is the same training)."""
        if not self.since or not self.w.bars:
            return False
        total, count = next(reversed(self.since.items()))
        before = self.w.bars[-1].get(total)
        begun = next((bars[total] for bars in self.w.bars if total in bars), None)
        return before is not None and count < before and (begun is None or count <= begun)

    def _take_said(self) -> None:
        """What the banners said since the last training dict, into the witnesses of this one's training."""
        w, said = self.w, self.said
        if w.logging_steps is None and said.get("logging_steps") is not None:
            w.logging_steps = said["logging_steps"]
        if "total_steps" in said:
            total = said["total_steps"]
            w.total_steps = int(total) if total is not None else None
        if "num_epochs" in said:
            w.num_epochs = said["num_epochs"]
        self.said = {}

    def records(self, meta: SourceMeta) -> Iterator[Record]:
        """The records gathered, numbered now that the whole log has been seen (each training on its own);
        ``meta.starts`` says which record begins each training after the first."""
        self._take_said()
        if self.dicts or self.crash.seen:
            _remember(self, meta)
        numberings = [number(w, str(self.path) if k == 0 else f"{self.path}#{k + 1}")
                      for k, w in enumerate(self.trainings)]
        meta.notes.extend(n.note for n in numberings if n.note)
        meta.estimated_steps = any(n.estimated for n in numberings)
        if self.quoted:
            meta.notes.append(Words(
                f"{self.path}: {self.quoted} values were printed as quoted strings (recent transformers "
                "formats every float as '{:.4g}'); they were read as the numbers they print, to 4 "
                "significant digits",
                f"{self.path}：有 {self.quoted} 个值打印成了带引号的字符串（新版 transformers 把每个 float 都按 "
                "'{:.4g}' 格式化）；已按它们打印出的数读入，精确到 4 位有效数字"))
        self.crash.total = training_total(self.w)
        order, at = 0, 0
        for kind, values, where, trained, training in self.dicts:
            steps = numberings[training].steps
            if kind != "summary":
                if training > at:  # the first record of a later training
                    meta.starts.append(order)
                    at = training
                order += 1
            if kind == "train":
                yield Record(steps[trained], values, where)
            else:  # an evaluation or the summary belongs to the training step before it
                yield Record(steps[trained - 1] if trained else 0, values, where,
                             kind="summary" if kind == "summary" else "metrics")


def _segments(line: str) -> list[str]:
    if "\x1b" in line:
        line = strip_ansi(line)
    return line.split("\r") if "\r" in line else [line]


#: the most lines a pretty-printed dict may span (pprint puts one item on a line)
MAX_DICT_LINES = 500


def _continue(log: ConsoleLog, line: str, skips: SkipLog) -> bool:
    """Add ``line`` to the pretty-printed dict being collected; whether the line was taken."""
    assert log.pending is not None
    lines, where, lineno = log.pending
    if not line.startswith(" ") or len(lines) >= MAX_DICT_LINES:  # pprint indents every item after the first
        skips.skip(where, Words(f"a dict printed over {len(lines)} lines does not close; its lines were skipped",
                                f"一个分 {len(lines)} 行打印的 dict 没有闭合；这几行已跳过"))
        log.pending = None
        return False
    lines.append(line)
    if not line.rstrip().endswith("}"):
        return True
    log.pending = None
    try:
        found, _ = parse_dict_at("\n".join(lines), 0)
    except ReprError as exc:
        skips.skip(where, Words(f"the dict printed over {len(lines)} lines is not a Python dict repr ({exc}); "
                                "its lines were skipped",
                                f"这个分 {len(lines)} 行打印的 dict 不是 Python dict 的 repr（{exc}）；这几行已跳过"))
        return True
    log.add(metric_values(found), where, lineno)
    return True


def feed(log: ConsoleLog, lineno: int, line: str, where: str, skips: SkipLog) -> None:
    """One line of console text into ``log``: its dicts, bars, banners and traceback lines
    (``where`` names the line in complaints: ``file:line``, ``notebook#cell 3:12``). A dict that
    pprint spread over several lines (``{'train_runtime': 474.3,`` then `` 'train_loss': 1.08}``)
    is collected until it closes."""
    if log.pending is not None and _continue(log, line, skips):
        return
    for segment in _segments(line):
        at = segment.find("{'")
        while at >= 0 and not (_FIRST_KEY.match(segment, at) or "'epoch': " in segment[at:]):
            at = segment.find("{'", at + 2)
        if at < 0:
            log.text(lineno, segment)
            continue
        if at:
            log.text(lineno, segment[:at])  # the bar it was glued to comes first
        try:
            found, end = parse_dict_at(segment, at)
        except ReprError as exc:
            cut = cut_note(line)
            if cut is None and segment.rstrip().endswith(",") and exc.pos >= len(segment.rstrip()):
                log.pending = ([segment[at:]], where, lineno)  # pprint's first line: the rest follow
                continue
            if cut is None or not (kept := _cut(segment, at)):
                skips.skip(where, Words(f"the logged dict is not a Python dict repr ({exc}); the line was skipped",
                                        f"记录的 dict 不是 Python dict 的 repr（{exc}）；这一行已跳过"))
                continue
            skips.skip(where, Words(f"{cut}: the dict was cut off; the value the cut went through was skipped and "
                                    f"the {len(kept)} values before it were kept",
                                    f"{cut.zh}：这个 dict 被截断了；被截断的那个值已跳过，它前面的 {len(kept)} 个值"
                                    "保留了下来"))
            found, end = kept, len(segment)
        log.add(metric_values(found), where, lineno)
        if segment[end:].strip():
            log.text(lineno, segment[end:])


def _cut(segment: str, at: int) -> dict[Any, Any]:
    try:
        return parse_cut_dict(segment, at)
    except ReprError:
        return {}


def read(path: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    meta.framework = "trl"
    log = ConsoleLog(path)
    for lineno, line in iter_lines(path, meta):
        feed(log, lineno, line, f"{path}:{lineno}", skips)
    if log.pending is not None:
        lines = len(log.pending[0])
        skips.skip(log.pending[1], Words(f"a dict printed over {lines} lines does not close before the end "
                                         "of the log; its lines were skipped",
                                         f"一个分 {lines} 行打印的 dict 到日志结尾都没有闭合；这几行已跳过"))
    yield from log.records(meta)
    log.crash.into(meta)


def _remember(log: ConsoleLog, meta: SourceMeta) -> None:
    """The run's settings the log printed (for its first training), under their TrainingArguments names."""
    w = log.trainings[0]
    for key, value in (("logging_steps", w.logging_steps), ("max_steps", w.total_steps),
                       ("num_train_epochs", w.num_epochs)):
        if value is not None:
            meta.config.setdefault(key, value)


READER = Reader(FORMAT, sniff, read, trainings=True,
                describes="TRL / HF Trainer console output: the logs dicts printed at every logging step")
