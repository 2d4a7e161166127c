"""TRL / HF Trainer console output: the logs dict ProgressCallback prints at every logging step.

``ProgressCallback.on_log`` writes ``str(logs)`` through tqdm (``total_flos`` removed, the
epoch rounded to 2 places): ``{'loss': -0.0982, 'grad_norm': 0.12, ..., 'epoch': 0.03}`` for
training, ``{'eval_loss': ..., 'epoch': ...}`` after an evaluation and
``{'train_runtime': ..., 'train_loss': ..., 'epoch': ...}`` at the end. The dicts carry no
step. When the training bar (``  12/250 [00:10<03:20, 1.2it/s]``) was drawn before a dict,
its count is the step; otherwise training dicts are numbered 1, 2, 3 in order and a note says
so. Evaluation dicts attach to the latest training step; the summary is a ``summary`` record.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from ._pyrepr import ReprError, metric_values, parse_dict
from ._reader import Reader
from ._record import Record, SkipLog, SourceMeta, Value
from ._text import iter_lines, search_file, strip_ansi

FORMAT = "trl-console"

_SNIFF = re.compile(rb"(?:^|[\r\n])\{'[^\r\n]*'epoch': [^\r\n,{}]+\}")
#: a dict the Trainer printed: its first key, or an 'epoch' entry, says so
_FIRST_KEY = re.compile(r"\{'(?:loss|grad_norm|learning_rate|reward|kl|epoch|train_\w+|eval_\w+|test_\w+)'")
#: the training bar without a description ("Map: ", "Processed prompts: " are other bars)
_BAR = re.compile(r"^\s*(?:\d+%\|[^|]*\|\s*)?(\d+)/(\d+) \[")
_SUMMARY_KEYS = ("train_runtime", "train_samples_per_second", "train_steps_per_second")
_EVAL_PREFIXES = ("eval_", "test_")


def sniff(path: Path, head: bytes) -> bool:
    return search_file(path, head, _SNIFF)


class _Steps:
    """Which step a dict belongs to: the count of the training bar drawn before it, else order."""

    def __init__(self) -> None:
        self.last = 0  # latest training step
        self.bar: int | None = None  # training-bar count seen since the last training dict
        self.total: int | None = None  # the training bar's total, once a dict has used it
        self.bar_total = 0
        self.inferred = 0

    def see_bar(self, segment: str) -> None:
        m = _BAR.match(segment)
        if m is None:
            return
        count, total = int(m.group(1)), int(m.group(2))
        # tqdm redraws the bar, unchanged, right after printing a dict: that count is used up
        if count != self.last and (self.total is None or total == self.total):
            self.bar, self.bar_total = count, total

    def training(self) -> int:
        if self.bar is not None:
            self.total = self.bar_total
            step = self.bar
        else:
            step = self.last + 1
            self.inferred += 1
        self.last, self.bar = step, None
        return step


def _classify(values: dict[str, Value]) -> str:
    if any(k in values for k in _SUMMARY_KEYS):
        return "summary"
    if any(k.startswith(_EVAL_PREFIXES) for k in values):
        return "eval"
    return "train"


def read(path: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    meta.framework = "trl"
    steps = _Steps()
    trained = 0
    for lineno, line in iter_lines(path, meta):
        if "\x1b" in line:
            line = strip_ansi(line)
        for segment in line.split("\r") if "\r" in line else (line,):
            text = segment.strip()
            if not text.startswith("{'"):
                if "/" in segment and "[" in segment:
                    steps.see_bar(segment)
                continue
            if not (_FIRST_KEY.match(text) or "'epoch': " in text):
                continue
            where = f"{path}:{lineno}"
            try:
                values = metric_values(parse_dict(text))
            except ReprError as exc:
                skips.skip(where, f"the logged dict is not a Python dict repr ({exc}); the line was skipped")
                continue
            kind = _classify(values)
            if kind == "summary":
                yield Record(steps.last, values, where, kind="summary")
                continue
            if kind == "eval":
                values.pop("epoch", None)  # the training record of this step holds it already
                yield Record(steps.last, values, where)
                continue
            trained += 1
            yield Record(steps.training(), values, where)
    if steps.inferred:
        meta.notes.append(
            f"{steps.inferred} of {trained} training dicts had no progress bar before them, so their "
            "steps were inferred by order (1, 2, 3, ...); with logging_steps > 1 the true steps differ. "
            "trainer_state.json in a checkpoint folder gives exact steps")


READER = Reader(FORMAT, sniff, read)
