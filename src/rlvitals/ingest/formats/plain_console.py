"""Console logs of trainers with a line format of their own, each described by a :class:`Dialect`.

Hand-written and research trainers print one line per optimisation step in a format of their own.
Each dialect here is one such format, as data: how its step line looks (with or without the step
number), how a ``key: value`` pair is split, the lines that add values to the step just printed
(DeepSpeed-Chat's ``average reward score: 2.4``), lines that carry a step of their own (a periodic
evaluation), and sample lines whose values are averaged into the next step (the rewards of a printed
group). Keys are kept as printed; the catalog maps them (aliases with ``framework = "any"``). A
format is one :class:`Reader`, so ``rlvitals formats`` lists each and ``--format`` forces one.

* ``deepspeed-chat-console`` — DeepSpeed-Chat step 3 (PPO): ``epoch: 0|step: 3|ppo_ep: 1|act_loss:
  ..|cri_loss: ..|unsuper_loss: ..``, then ``average reward score: ..`` and the ``|E2E latency=..s
  |Generate time=..s (..%) |Training time=..s ..`` line.
* ``minimind-console`` — MiniMind's RL trainers: ``Epoch:[1/1](12/9751), Reward: .., KL_ref: ..,
  Actor Loss: .., Learning Rate: ..``; the step is counted across epochs (``(e-1)·N + n``).
* ``posttraining-llm-small-console`` — PostTraining-LLM-Small's GRPO trainer: ``grpo_loss is L and kl
  is K`` once per step (numbered in order), the sampled group before it (``reward is R``, ``is result
  truncated? B``) and ``[step 25] avg_loss=.. acc=..`` every 25 steps (read as evaluation).

These logs name no framework the catalog knows, so their framework is ``unknown``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ...words import Words
from .._crash import CrashScanner
from .._reader import Reader
from ..record import Record, SkipLog, SourceMeta, Value
from ..text import integer, iter_lines, parse_number, search_file, strip_ansi


@dataclass(frozen=True)
class Extra:
    """Lines that add values to a step: to the one just printed (``after``) or, for a sample line, to
    the next one (their mean)."""

    line: re.Pattern[str]
    #: the key of a single ``value`` group; without it the line's pairs (``pair``) are read
    key: str | None = None
    pair: re.Pattern[str] | None = None
    samples: bool = False


@dataclass(frozen=True)
class Dialect:
    format: str
    sniff: re.Pattern[bytes]
    #: a training line: named groups ``step`` (else lines are numbered 1, 2, ...), ``epoch`` and
    #: ``per_epoch`` (a step counted within its epoch), ``pairs`` (its ``key: value`` text) and any
    #: other named group is a value under its own name
    step_line: re.Pattern[str]
    #: one ``key: value`` pair, and what separates two of them
    pair: re.Pattern[str]
    separator: str = ","
    extras: tuple[Extra, ...] = ()
    #: a line with a step of its own (``[step 25] acc=0.9``): its pairs under ``own_prefix``
    own_step: re.Pattern[str] | None = None
    own_prefix: str = ""
    #: values that mean "yes"/"no" in a sample line
    words: dict[str, float] = field(default_factory=lambda: {"true": 1.0, "false": 0.0})
    #: what a user would hand the reader (``rlvitals formats``)
    describes: str = ""


_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)"
DIALECTS: tuple[Dialect, ...] = (
    Dialect(
        "deepspeed-chat-console",
        re.compile(rb"(?:^|\n)epoch: \d+\|step: \d+\|ppo_ep: \d+\|act_loss: "),
        re.compile(r"^epoch: (?P<epoch>\d+)\|step: (?P<step>\d+)\|(?P<pairs>.*)$"),
        re.compile(rf"\s*(\w+): ({_NUM})\s*"), "|",
        (Extra(re.compile(rf"^average reward score: (?P<value>{_NUM})\s*$"), key="average reward score"),
         Extra(re.compile(r"^\|E2E latency="),
               pair=re.compile(rf"\s*([A-Za-z][\w ]*?)=({_NUM})s?(?: \([\d.]+%\))?\s*"))),
        describes="DeepSpeed-Chat step-3 (PPO) console log: epoch: N|step: N|ppo_ep: N|act_loss: ... lines",
    ),
    Dialect(
        "minimind-console",
        re.compile(rb"(?:^|\n)Epoch:\[\d+/\d+\]\(\d+/\d+\), [A-Z][\w ]*: "),
        re.compile(r"^Epoch:\[(?P<epoch>\d+)/\d+\]\((?P<step>\d+)/(?P<per_epoch>\d+)\),\s*(?P<pairs>.*)$"),
        re.compile(rf"\s*([A-Za-z][\w ]*?):\s*({_NUM})\s*"), ",",
        describes="MiniMind's RL trainers' log: Epoch:[e/E](s/S), Reward: ..., KL_ref: ... lines",
    ),
    Dialect(
        "posttraining-llm-small-console",
        re.compile(rb"(?:^|\n)grpo_loss is \S+ and kl is \S+"),
        re.compile(rf"^grpo_loss is (?P<grpo_loss>{_NUM}) and kl is (?P<kl>{_NUM})\s*$"),
        re.compile(rf"\s*(\w+)=({_NUM})\s*"), " ",
        (Extra(re.compile(rf"^reward is (?P<value>{_NUM})\s*$"), key="reward", samples=True),
         Extra(re.compile(r"^is result truncated\? (?P<value>True|False)\s*$"), key="completions/clipped_ratio",
               samples=True)),
        own_step=re.compile(r"^\[step (?P<step>\d+)\] (?P<pairs>.*)$"),
        own_prefix="eval/",
        describes="the post-training-llm-small GRPO script's log: grpo_loss is X and kl is Y lines",
    ),
)


class _Steps:
    """The open record (extras after a step line still belong to it) and the samples for the next."""

    def __init__(self, dialect: Dialect) -> None:
        self.d = dialect
        self.open: Record | None = None
        self.samples: dict[str, list[float]] = {}
        self.count = 0

    def step_of(self, m: re.Match[str]) -> int:
        groups = m.groupdict()
        if groups.get("step") is None:
            return self.count
        step = integer(groups["step"])
        if groups.get("per_epoch") and groups.get("epoch"):
            step += (integer(groups["epoch"]) - 1) * integer(groups["per_epoch"])
        return step

    def training(self, m: re.Match[str], where: str, skips: SkipLog) -> Record | None:
        self.count += 1
        values: dict[str, Value] = {}
        for name, text in m.groupdict().items():
            if name in ("step", "per_epoch", "pairs") or text is None:
                continue
            number = parse_number(text)
            if number is not None:
                values[name] = number
        values.update(_pairs(self.d.pair, self.d.separator, m.groupdict().get("pairs") or "", where, skips))
        for key, seen in self.samples.items():
            values[key] = sum(seen) / len(seen)
        self.samples = {}
        done, self.open = self.open, Record(self.step_of(m), values, where)
        return done

    def extra(self, extra: Extra, m: re.Match[str], where: str, skips: SkipLog) -> None:
        if extra.key is not None:
            text = m.group("value")
            number = self.d.words.get(text.lower(), parse_number(text))
            if number is None:  # the line's pattern admits only numbers and the words: cannot happen
                return
            if extra.samples:
                self.samples.setdefault(extra.key, []).append(number)
            elif self.open is not None:
                self.open.values[extra.key] = number
            return
        if self.open is not None and extra.pair is not None:
            self.open.values.update(_pairs(extra.pair, "|", m.string, where, skips))


def _pairs(pair: re.Pattern[str], separator: str, text: str, where: str, skips: SkipLog) -> dict[str, Value]:
    """The ``key: value`` pairs of ``text``; a piece that is no such pair is skipped and counted."""
    out: dict[str, Value] = {}
    for piece in text.split(separator):
        if not piece.strip():
            continue
        m = pair.fullmatch(piece)
        number = parse_number(m.group(2)) if m else None
        if m is None or number is None:
            skips.skip(where, Words(f"{piece.strip()!r} is not a key and a number; the value was skipped",
                                    f"{piece.strip()!r} 不是“键 + 数值”；这个值已跳过"))
        else:
            out[m.group(1).strip()] = number
    return out


def _read(dialect: Dialect, path: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    meta.framework = "unknown"  # the catalog knows no framework by these trainers' names
    steps = _Steps(dialect)
    crash = CrashScanner(path)
    for lineno, line in iter_lines(path, meta):
        if "\x1b" in line:
            line = strip_ansi(line)
        where = f"{path}:{lineno}"
        m = dialect.step_line.match(line)
        if m is not None:
            crash.progress(lineno)
            done = steps.training(m, where, skips)
            if done is not None:
                yield done
            continue
        own = dialect.own_step.match(line) if dialect.own_step is not None else None
        if own is not None:
            found = _pairs(dialect.pair, dialect.separator, own.group("pairs"), where, skips)
            values = {dialect.own_prefix + k: v for k, v in found.items()}
            if values:
                crash.progress(lineno)  # an evaluation at a step of its own: the training went on
                yield Record(integer(own.group("step")), values, where)
            continue
        extra = next(((e, x) for e in dialect.extras if (x := e.line.match(line)) is not None), None)
        if extra is not None:
            steps.extra(extra[0], extra[1], where, skips)
            continue
        crash.feed(lineno, line)
    if steps.open is not None:
        yield steps.open
    crash.into(meta)


def _reader(dialect: Dialect) -> Reader:
    def sniff(path: Path, head: bytes) -> bool:
        return search_file(path, head, dialect.sniff)

    def read(path: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
        return _read(dialect, path, meta, skips)

    return Reader(dialect.format, sniff, read, describes=dialect.describes, trainings=True)


READERS = tuple(_reader(d) for d in DIALECTS)
