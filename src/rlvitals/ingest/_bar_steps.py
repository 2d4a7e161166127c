"""Which micro-batch each frame of an OpenRLHF trainer's bar shows, and the optimizer step of a record.

The bar ``Train step of epoch e`` counts micro-batches (``total`` per epoch, on rank 0). Two ways
of drawing it were seen in OpenRLHF's own trainers (openrlhf 0.11.2 and 0.9.5, run on a CPU):

* **postfix before the count** (DPO, RM, KTO): each micro-batch sets the postfix (a frame is
  printed at once, at the old count ``c``) and then moves the bar on (a frame at ``c + 1``, which
  tqdm may leave out when the bar moves fast). So the last frame drawn at count ``c`` shows the
  values of micro-batch ``c + 1``; the frames at a bar's highest count repeat its last micro-batch.
* **window first** (SFT of 0.11): the bar moves through a whole gradient-accumulation window as the
  micro-batches are loaded, then each one's postfix is set at the window's end. The first postfix is
  drawn at count ``A``, the accumulation, and the last frame at ``k·A`` shows micro-batch ``k·A``.

Before 0.4.0 the postfix was set only every ``logging_steps`` micro-batches (docs/formats/openrlhf-trainers.md
§5); no such log was seen, and one would be read the same way, a count with no postfix of its own showing
the last one set.

Micro-batches are numbered across epochs (``e · total + …``), as OpenRLHF's own ``step`` counter is.
The optimizer step (``global_step``, W&B's ``train/global_step``) is every ``A`` micro-batches. The
log says ``A`` through its evaluations: ``Eval stage of global_step N`` is drawn right after the
micro-batch ``N · A`` (whose own frame may or may not have been drawn), so the count before it
leaves two candidates per evaluation and the evaluations together one. Before the first evaluation (a
live training, or a run that evaluates only at its end) the values say it too: ``grad_norm`` and ``lr``
change only when the optimizer steps, so the micro-batches where they change first are multiples of ``A``,
and their greatest common divisor is ``A`` once a few steps show it. With ``A`` each record is an
optimizer step holding the values of the micro-batch that ended it, as OpenRLHF logs them to W&B.
Without it each record is a micro-batch, and a note says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..words import Words
from .pyrepr import ReprError, parse
from .record import Record, SkipLog, Value

#: what a frame left: its postfix (None: none drawn) and its ``file:line``
Frame = tuple[str | None, str]


@dataclass
class TrainBar:
    """The frames of one epoch's training bar: the last drawn at each count."""

    total: int
    last: dict[int, Frame] = field(default_factory=dict)
    #: the count at which the bar first showed a postfix
    first_postfix: int | None = None

    def frame(self, count: int, shown: str | None, where: str) -> None:
        if shown is not None and self.first_postfix is None:
            self.first_postfix = count
        self.last[count] = (shown, where)


@dataclass
class EvalBar:
    """One evaluation: the step its description names, and its last postfix."""

    at: int
    unit: str
    #: the training bar's epoch and count when the evaluation began (None: before any)
    after: tuple[int, int] | None
    shown: Frame = (None, "")

    def frame(self, shown: str | None, where: str) -> None:
        if shown is not None:
            self.shown = (shown, where)


@dataclass
class Bars:
    train: dict[int, TrainBar] = field(default_factory=dict)
    evals: dict[str, EvalBar] = field(default_factory=dict)
    _at: tuple[int, int] | None = None

    def train_frame(self, epoch: int, total: int, count: int, shown: str | None, where: str) -> None:
        self.train.setdefault(epoch, TrainBar(total)).frame(count, shown, where)
        self._at = (epoch, count)

    def position(self) -> tuple[int, int] | None:
        """Where the training bar was last drawn: ``(epoch, count)``."""
        return self._at


def pairs(text: str) -> list[tuple[str, str]] | None:
    """tqdm's postfix ``k=v, k=v`` as pairs (a value such as ``tensor(0.5, device='cuda:0')`` keeps
    its own ``, ``), or None when a piece has no ``=``.

    Example:
        >>> pairs("eval gpt_loss=5.24, lr=tensor(5e-07, device='cuda:0')")
        [('eval gpt_loss', '5.24'), ('lr', "tensor(5e-07, device='cuda:0')")]
    """
    pieces, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0 and text.startswith(", ", i):
            pieces.append(text[start:i])
            start = i + 2
    pieces.append(text[start:])
    out = []
    for piece in pieces:
        key, sep, value = piece.partition("=")
        if not sep or not key.strip():
            return None
        out.append((key.strip(), value.strip()))
    return out


def values(text: str, where: str, skips: SkipLog, prefix: str = "") -> dict[str, Value]:
    """The numbers of a postfix (``prefix`` before each key); a piece that is no number is skipped and counted."""
    found = pairs(text)
    if found is None:
        skips.skip(where, Words(f"the bar's postfix {text[:80]!r} is not tqdm's 'key=value, ...'; the frame was "
                                "skipped",
                                f"进度条的 postfix {text[:80]!r} 不是 tqdm 的 'key=value, ...' 形式；这一帧已跳过"))
        return {}
    out: dict[str, Value] = {}
    for key, raw in found:
        try:
            number = parse(raw)
        except (ReprError, RecursionError):
            number = None
        if isinstance(number, (int, float)):
            out[prefix + key] = float(number)
        else:
            skips.skip(where, Words(f"the value {raw[:40]!r} of {key!r} in the bar's postfix is not a number; "
                                    "that value was skipped",
                                    f"进度条 postfix 里 {key!r} 的值 {raw[:40]!r} 不是数；这个值已跳过"))
    return out


def _micro(bars: Bars, window_first: bool) -> dict[int, Frame]:
    """The frame showing each micro-batch's values, by the micro-batch's number across epochs."""
    out: dict[int, Frame] = {}
    for epoch, bar in bars.train.items():
        offset, top = epoch * bar.total, max(bar.last, default=0)
        for count, frame in bar.last.items():
            if frame[0] is None:
                continue
            if window_first:
                out[offset + count] = frame
            elif count < top:  # the frames at the highest count repeat the micro-batch before
                out[offset + count + 1] = frame
    return out


def accumulation(bars: Bars, window_first: int | None) -> int | None:
    """The micro-batches in one optimizer step, when the evaluations (and a window-first bar) agree on one."""
    known: set[int] | None = {window_first} if window_first else None
    for ev in bars.evals.values():
        if ev.after is None or ev.at <= 0 or ev.after[0] not in bars.train:
            continue
        base = ev.after[0] * bars.train[ev.after[0]].total + ev.after[1]
        fits = {m // ev.at for m in ((base,) if window_first else (base, base + 1)) if m % ev.at == 0 and m >= ev.at}
        known = fits if known is None else known & fits
    return next(iter(known)) if known is not None and len(known) == 1 else None


#: the values that move only when the optimizer steps, and how many of their moves make ``A`` known
STEPPED = ("grad_norm", "lr")
MIN_MOVES = 3


def stepped_accumulation(micro: dict[int, Frame]) -> int | None:
    """``A`` from the micro-batches where ``grad_norm`` or ``lr`` first shows a new value: each is a multiple of
    ``A`` (a value tqdm rounds to the same three digits only hides a move), so their greatest common divisor is
    ``A`` once ``MIN_MOVES`` of them are seen; None before that.

    >>> frames = {m: (f"loss=0.6, lr={(m // 4) * 0.001:g}", "") for m in range(1, 14)}
    >>> stepped_accumulation(frames)
    4
    """
    quiet = SkipLog()  # the values are read for good, and their skips counted, by records()
    moves: set[int] = set()
    before: dict[str, Value] = {}
    for m in sorted(micro):
        now = values(micro[m][0] or "", micro[m][1], quiet)
        for key in STEPPED:
            if key in now and key in before and now[key] != before[key]:
                moves.add(m)
        before.update({k: now[k] for k in STEPPED if k in now})
    if len(moves) < MIN_MOVES:
        return None
    found = 0
    for m in moves:
        found = math.gcd(found, m)
    return found


def records(bars: Bars, path: str, skips: SkipLog) -> tuple[list[Record], list[Words]]:
    """The training and evaluation records of a trainer's bars, and a note on what their step is."""
    first = next(iter(bars.train.values()), None)
    window = first.first_postfix if first is not None and first.first_postfix else None
    micro = _micro(bars, window is not None)
    acc = accumulation(bars, window)
    if window is not None and acc is None:
        acc = window  # the evaluations disagree (a resumed run); the bar's own window still holds
    stepped = acc is None and not any(ev.after is not None for ev in bars.evals.values())
    if stepped:  # no evaluation yet: the optimizer's own moves
        acc = stepped_accumulation(micro)
    out: list[Record] = []
    for m in sorted(micro):
        if acc is None or m % acc == 0:
            shown, where = micro[m]
            got = values(shown or "", where, skips)
            if got:
                out.append(Record(m // acc if acc else m, got, where))
    for ev in bars.evals.values():
        shown, where = ev.shown
        if shown is None:
            continue
        step = ev.at if acc else _micro_index(bars, ev)
        got = values(shown, where, skips, "eval/")
        if got:
            out.append(Record(step, got, where))
    out.sort(key=lambda r: r.step)  # stable: a step's training record before its evaluation
    note = _stepped_note(path, micro, acc) if stepped and acc else _note(bars, path, micro, acc, window)
    return out, [n for n in (note,) if n is not None]


def _stepped_note(path: str, micro: dict[int, Frame], acc: int) -> Words:
    used = sum(1 for m in micro if m % acc == 0)
    return Words(
        f"{path}: the bars count micro-batches and the log has no evaluation yet; grad_norm and lr move every {acc} "
        f"of them, so an optimizer step (OpenRLHF's global_step, W&B's train/global_step) is {acc} micro-batches "
        f"and each of the {used} records is one, with the values of the micro-batch that ended it (rounded to "
        "tqdm's 3 significant digits)",
        f"{path}：进度条按 micro-batch 计数，日志里还没有评估；grad_norm 和 lr 每 {acc} 个 micro-batch 变一次，"
        f"所以一个优化步（OpenRLHF 的 global_step，即 W&B 的 train/global_step）是 {acc} 个 micro-batch，"
        f"这 {used} 条记录每条是一个优化步，取结束这一步的那个 micro-batch 的值（是 tqdm 保留 3 位有效数字后的值）")


def _micro_index(bars: Bars, ev: EvalBar) -> int:
    if ev.after is None or ev.after[0] not in bars.train:
        return 0
    return ev.after[0] * bars.train[ev.after[0]].total + ev.after[1]


def _note(bars: Bars, path: str, micro: dict[int, Frame], acc: int | None, window: int | None) -> Words | None:
    if not micro:
        return None
    three = ("rounded to tqdm's 3 significant digits", "是 tqdm 保留 3 位有效数字后的值")
    if acc is None:
        return Words(
            f"{path}: the bars count micro-batches, and no evaluation in the log tells how many make an optimizer "
            f"step; each of the {len(micro)} records is one micro-batch (1, 2, 3, ... across epochs), not an "
            "optimizer step: W&B's train/global_step of the same run is this number ÷ the gradient accumulation "
            f"(train_batch_size ÷ micro_train_batch_size ÷ world size). Values are {three[0]}",
            f"{path}：进度条按 micro-batch 计数，日志里也没有能说明多少个 micro-batch 构成一个优化步的评估；"
            f"这 {len(micro)} 条记录每条是一个 micro-batch（跨 epoch 连续编号 1、2、3……），不是优化步："
            "同一次运行在 W&B 里的 train/global_step 等于这个编号 ÷ 梯度累积步数"
            f"（train_batch_size ÷ micro_train_batch_size ÷ 卡数）。数值{three[1]}")
    used = sum(1 for m in micro if m % acc == 0)
    if window is not None:
        return Words(
            f"{path}: the trainer draws the values of the {acc} micro-batches of an optimizer step together at its "
            f"end (its first values at {window}/{first_total(bars)}); each of the {used} records is an optimizer step "
            "(OpenRLHF's global_step, W&B's train/global_step) with the values of its last micro-batch, as OpenRLHF "
            f"logs them to W&B, {three[0]}",
            f"{path}：训练器在每个优化步结束时一起画出它的 {acc} 个 micro-batch 的值（第一组值出现在 "
            f"{window}/{first_total(bars)}）；这 {used} 条记录每条是一个优化步（OpenRLHF 的 global_step，即 W&B 的 "
            f"train/global_step），取它最后一个 micro-batch 的值，和 OpenRLHF 记到 W&B 的一致，{three[1]}")
    return Words(
        f"{path}: the bars count micro-batches; the evaluations show that an optimizer step (OpenRLHF's global_step, "
        f"W&B's train/global_step) is {acc} of them, so each of the {used} records is an optimizer step with the "
        f"values of the micro-batch that ended it, as OpenRLHF logs them to W&B ({three[0]}); the values of the "
        f"other {len(micro) - used} micro-batches were not used",
        f"{path}：进度条按 micro-batch 计数；从评估的位置可知一个优化步（OpenRLHF 的 global_step，即 W&B 的 "
        f"train/global_step）是 {acc} 个 micro-batch，所以这 {used} 条记录每条是一个优化步，取结束这一步的那个 "
        f"micro-batch 的值，和 OpenRLHF 记到 W&B 的一致（{three[1]}）；其余 {len(micro) - used} 个 micro-batch "
        "的值没有使用")


def first_total(bars: Bars) -> int:
    return next(iter(bars.train.values())).total if bars.train else 0
