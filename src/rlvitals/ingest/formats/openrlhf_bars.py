"""OpenRLHF's DPO, RM, SFT, KTO and PRM trainers' console: their tqdm bars are the log.

These trainers print no metrics line. Every micro-batch they call ``step_bar.set_postfix(logs)``
on the bar ``Train step of epoch N`` (``loss=0.693, acc=0.5, chosen_reward=..., lr=5e-7,
grad_norm=0.51``: tqdm's 3 significant digits, ``nan``/``inf``, ``tensor(...)`` when a value was
a tensor), and an evaluation draws ``Eval stage of global_step N`` (DPO, KTO) or ``Eval stage of
steps N`` (RM, SFT, PRM) with its results as the postfix (``eval_loss=0.686, acc_mean=0.625``;
SFT's key has a space: ``eval gpt_loss=5.24``). Written to a file, each redraw is a frame after a
``\\r`` with cursor escapes around it; a bar's last frame is printed again when it is closed.

What a frame says, and the step of a record, is worked out in :mod:`._bar_steps`: the bar counts
micro-batches, OpenRLHF's optimizer step (W&B's ``train/global_step``) is every *gradient
accumulation* micro-batches, and the log says how many through its evaluation bars. Evaluation
values are read under ``eval/`` as OpenRLHF logs them to W&B (``eval/eval_loss``), so that KTO's
``chosen_reward`` at evaluation does not overwrite the training one.

The trainer is told by its keys and lines (``gpt_loss`` SFT, ``kto_loss`` KTO, ``prm_loss`` PRM,
``distil_loss`` KD; the reward model prints ``LogSigmoid Loss`` at start and ``Set reward mean
std`` at each evaluation, DPO's evaluation bar says ``global_step``) and set as ``trainer_class``
in the run's config, which the catalog's algorithm signatures read. A log that ends in a traceback
gets the crash; one after the epoch bar reached its end came after the training (0.9.5's KTO command
fails there, saving the model).

Memory: the last frame of each bar count is kept until the end of the log (one short string per
micro-batch).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from ...words import Words
from .._bar_steps import Bars, EvalBar, records
from .._crash import CrashScanner
from .._reader import Reader
from ..record import Record, SkipLog, SourceMeta
from ..text import integer, iter_lines, search_file

FORMAT = "openrlhf-trainer-console"

_SNIFF = re.compile(rb"(?:Train step of epoch \d+|Eval stage of (?:global_step|steps) \d+): +\d+%\|")
#: a frame of a trainer's bar up to its ``[``: the description, the count and the total
_FRAME = re.compile(r"(?P<desc>Train step of epoch (?P<epoch>\d+)|Eval stage of (?P<unit>global_step|steps) "
                    r"(?P<at>\d+)): +\d+%\|[^|]*\| *(?P<n>\d+)/(?P<total>\d+) \[")
#: the bar over the epochs, full: the training ran to its end (a traceback after it came later: saving the model)
_DONE = re.compile(r"Train epoch: +100%\|[^|]*\| *(\d+)/\1 \[")
#: what splits a line into frames: carriage returns and terminal escapes (tqdm's cursor moves)
_SPLIT = re.compile(r"\r|\x1b\[[0-9;?]*[ -/]*[@-~]")
#: lines only OpenRLHF's reward-model trainer prints, and the trainer each postfix key belongs to
_RM_LINES = ("LogSigmoid Loss", "LogExp Loss", "Set reward mean std", "histgram")
_TRAINER_KEYS = (("distil_loss", "kdtrainer"), ("gpt_loss", "sfttrainer"), ("kto_loss", "ktotrainer"),
                 ("prm_loss", "processrewardmodeltrainer"))


def sniff(path: Path, head: bytes) -> bool:
    return search_file(path, head, _SNIFF)


def postfix(body: str) -> str | None:
    """The postfix of a frame's bracket (``00:02<00:05, 2.28it/s, loss=0.693, acc=1``), None
    when it has none; ``body`` runs from after the ``[`` to the frame's closing ``]``."""
    parts = body.split(", ", 2)
    return parts[2] if len(parts) == 3 else None


def _body(segment: str, start: int) -> str | None:
    """The text between a frame's ``[`` (at ``start``) and its closing ``]``: the last ``]`` of the
    segment (a postfix may hold brackets), else None (the frame was cut off)."""
    end = segment.rfind("]")
    return segment[start:end] if end >= start else None


class _Log:
    """What one pass over the console gathers."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.bars = Bars()
        self.crash = CrashScanner(path)
        self.rm_lines = False
        self.done = False  # the epoch bar was full: a step bar's frame after it is its last one printed again
        self.highest: int | None = None  # the step bars' highest count, numbered across epochs

    def segment(self, lineno: int, text: str, skips: SkipLog) -> None:
        m = _FRAME.search(text)
        if m is None:
            if "Train epoch" in text and _DONE.search(text):
                self.crash.finished(lineno)
                self.done = True
            elif text.strip():
                if any(said in text for said in _RM_LINES):  # may follow a bar on its line
                    self.rm_lines = True
                self.crash.feed(lineno, text)
            return
        body = _body(text, m.end())
        where = f"{self.path}:{lineno}"
        if body is None:
            skips.skip(where, Words(f"a frame of the bar '{m.group('desc')}' at {m.group('n')}/{m.group('total')} "
                                    "was cut off before its closing ']'; it was skipped",
                                    f"进度条“{m.group('desc')}”在 {m.group('n')}/{m.group('total')} 处的一帧在结尾的"
                                    "“]”之前被截断了；已跳过"))
            return
        count, total = integer(m.group("n")), integer(m.group("total"))
        shown = postfix(body)
        if m.group("epoch") is not None:
            epoch = integer(m.group("epoch"))
            self.bars.train_frame(epoch, total, count, shown, where)
            # a step is a count above every count drawn before (numbered across epochs); the first frame and a
            # frame drawn again, as tqdm does when a dying program's bar is closed, show none (docs/formats/consoles.md)
            across = epoch * total + count
            if not self.done and self.highest is not None and across > self.highest:
                self.crash.progress(lineno)
            self.highest = across if self.highest is None else max(self.highest, across)
        else:
            key = m.group("desc")
            if key not in self.bars.evals:
                self.bars.evals[key] = EvalBar(integer(m.group("at")), m.group("unit"), self.bars.position())
            self.bars.evals[key].frame(shown, where)


def _trainer(log: _Log, recs: list[Record]) -> str | None:
    """OpenRLHF's trainer class (lower case) that printed this log, when its keys or lines say."""
    keys = {k for r in recs for k in r.values}
    for key, trainer in _TRAINER_KEYS:
        if key in keys:
            return trainer
    if not keys & {"loss", "preference_loss", "train_loss"}:
        return None
    units = {e.unit for e in log.bars.evals.values()}
    if log.rm_lines or "eval/reward_mean" in keys or units == {"steps"}:
        return "rewardmodeltrainer"
    if "nll_loss" in keys or units == {"global_step"}:
        return "dpotrainer"
    return None


def read(path: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    meta.framework = "openrlhf"
    log = _Log(path)
    for lineno, line in iter_lines(path, meta):
        for text in _SPLIT.split(line) if ("\r" in line or "\x1b" in line) else (line,):
            log.segment(lineno, text, skips)
    recs, notes = records(log.bars, str(path), skips)
    meta.notes.extend(notes)
    trainer = _trainer(log, recs)
    if trainer is not None:
        meta.config.setdefault("trainer_class", trainer)
    yield from recs
    log.crash.into(meta)


READER = Reader(FORMAT, sniff, read,
                describes="OpenRLHF's DPO / RM / SFT / KTO / PRM trainer console: the tqdm bars of its "
                          "training and evaluation steps")
