"""Which optimisation step each metrics dict of a TRL / HF Trainer console log belongs to.

The dicts carry no step. Three witnesses can give it, in order of trust:

1. **The training bar** drawn just before a dict (``  50/160 [21:49<53:16, 29.06s/it]``). It is
   right when the log was written as the terminal showed it. When stdout was block-buffered (a
   ``nohup`` log) the bar, written to stderr, runs ahead of the dicts: the first GRPO dict of a
   run logging every 20 steps follows bar 620. The dicts' ``epoch`` is exact (it is computed
   from the step), so the bar is trusted only when the epochs are proportional to the bar counts.
2. **Order × logging steps**: the Trainer logs every ``logging_steps`` steps, so dict ``i`` is
   step ``i × logging_steps`` (``1, L, 2L, ...`` with ``logging_first_step``). ``logging_steps``
   comes from the log's own text (a printed TrainingArguments or config), else from the number
   of dicts and the last step the bar reached (``n`` dicts in ``R`` steps leave one integer ``L``
   with ``n·L ≤ R < (n+1)·L`` when ``R`` is large enough), else from the epochs
   (``Δepoch per dict × steps per epoch``, steps per epoch from the bar total or the banner's
   ``Total steps`` and the number of epochs).
3. **Order alone** (1, 2, 3, ...) when nothing else is known; a note says so.

No witness may put a dict beyond the run's total optimisation steps.

A log still being written (no end-of-training summary yet) whose bar runs ahead of its dicts cannot use the
bar's reach for ``logging_steps``: the dicts of the last few steps still wait in stdout's buffer, so ``n``
dicts in ``R`` steps overstates the gap (14 dicts after bar 98 read 7 steps apart when they were 5). Each dict
was written no earlier than its step, so the count the bar had reached when a dict appeared bounds its step
from above; ``logging_steps`` is the largest gap every dict allows (:func:`_ahead_bound`). That reading is
marked an estimate (``Numbering.estimated``), as are steps by order or by the bar where some dicts had none:
a later look at the same log may number them differently, and a watcher holds what it finds on them until
the numbering stops changing.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from ..words import Words


@dataclass
class Witnesses:
    """What a console log said about its steps, gathered while it was read."""

    #: per training dict, in order: the last count drawn by each bar total since the dict before it
    #: (the bar drawn last, right before the dict, is the last key)
    bars: list[dict[int, int]] = field(default_factory=list)
    #: per training dict: its ``epoch`` (None when it logged none)
    epochs: list[float | None] = field(default_factory=list)
    #: the highest count each bar total reached anywhere in the log
    reached: dict[int, int] = field(default_factory=dict)
    #: ``logging_steps`` as the log printed it (a TrainingArguments repr, a config, a command line)
    logging_steps: float | None = None
    #: total optimisation steps and epochs from a banner (``Num Epochs = 3 | Total steps = 111``)
    total_steps: int | None = None
    num_epochs: float | None = None
    #: the epoch of the end-of-training summary (the run's last epoch), when it printed one
    end_epoch: float | None = None


@dataclass(frozen=True)
class Numbering:
    steps: list[int]
    note: Words | None
    #: the steps are an estimate a longer reading of the same log may change
    estimated: bool = False


#: epochs that give this close to a whole number of steps between dicts (at the banner's steps per epoch) are
#: exact: printed with 4 significant digits, they are off by far less, and a wrong steps per epoch (a run cut by
#: max_steps mid-epoch) lands between whole numbers
EXACT = 0.02


def number(w: Witnesses, where: str) -> Numbering:
    """The step of every training dict, and a note when they are not the bar's own counts."""
    n = len(w.epochs)
    if n == 0:
        return Numbering([], None)
    total = training_total(w)
    bars = _bar_steps(w.bars, total)
    doubt = _doubt(bars, w.epochs, total)
    if doubt is None:  # a single count cannot be checked against the epochs before the run has ended
        checked = sum(b is not None for b in bars) >= 2 or w.end_epoch is not None
        return Numbering([b for b in bars if b is not None], None, estimated=not checked)
    reached, said = _reached(w, total)
    logging, source = _logging_steps(w, n, total, reached, said)
    estimated = False
    bound = _ahead_bound(w, total, _logs_first_step(w.epochs)) if total is not None else None
    # buffered, and the bar ran ahead of the dicts (a bar still at 0 bounds nothing), and the epochs do not give
    # whole steps at the banner's steps per epoch (they are exact then, whatever the bar drew)
    if (w.end_epoch is None and w.logging_steps is None and _buffered(w, total) and bound is not None
            and _by_epochs(w, total, EXACT) is None):
        logging, estimated = bound, True
        source = Words("the most steps between dicts that the bar drawn before each allows; an estimate "
                       "until the run prints its summary",
                       "每个 dict 之前画出的进度条所允许的最大间隔；在运行打印结束汇总之前只是估计")
    if logging is not None:
        first = _logs_first_step(w.epochs)
        steps = ([1] if first else []) + [i * logging for i in range(1, n + 1 - int(first))]
        if reached is None or steps[-1] <= max(reached, total or 0):
            return Numbering(steps, Words(
                f"{where}: {doubt}; the {n} training dicts were numbered by order × "
                f"logging_steps = {logging} ({source}){', after step 1' if first else ''}",
                f"{where}：{doubt.zh}；{n} 个训练 dict 的步数按顺序 × logging_steps = {logging} 编排"
                f"（{source.zh}）{'，从第 1 步之后起' if first else ''}"), estimated)
    partial = _partial(bars, w.epochs, total)
    inferred = sum(b is None for b in bars) if partial is not None else n
    return Numbering(partial or list(range(1, n + 1)), estimated=True, note=Words(
        f"{where}: {inferred} of {n} training dicts had no usable progress bar before them "
        "and logging_steps is not in the log, so their steps were inferred by order (1, 2, 3, ...); "
        "with logging_steps > 1 the true steps differ. trainer_state.json in a checkpoint folder "
        "gives exact steps",
        f"{where}：{n} 个训练 dict 中有 {inferred} 个前面没有可用的进度条，日志里也没有 logging_steps，"
        "所以它们的步数是按顺序推断的（1、2、3……）；logging_steps > 1 时真实步数与此不同。"
        "检查点文件夹里的 trainer_state.json 有准确的步数"))


def _doubt(bars: list[int | None], epochs: list[float | None], total: int | None) -> Words | None:
    """Why the training bar's counts cannot be the dicts' steps, or None when they can: every dict
    had its own count, the counts rise within the total, and the epochs (exact: computed from the
    step) are proportional to them."""
    known = [(b, e) for b, e in zip(bars, epochs, strict=True) if b is not None]
    if not known:
        return Words("no training progress bar was drawn before the metric dicts", "指标 dict 之前没有画出训练进度条")
    if not _proportional([b for b, _ in known], [e for _, e in known]):
        first, epoch = known[0]
        return Words(f"the progress bar ran ahead of the metric dicts (buffered output): a dict follows bar "
                     f"{first}/{total} but its epoch {epoch} does not fit that step",
                     f"进度条跑在了指标 dict 前面（输出有缓冲）：一个 dict 跟在进度 {first}/{total} 之后，"
                     f"但它的 epoch {epoch} 与这一步对不上")
    if len(known) < len(bars):
        return Words(f"{len(bars) - len(known)} of {len(bars)} metric dicts had no training progress bar of their own",
                     f"{len(bars)} 个指标 dict 中有 {len(bars) - len(known)} 个没有自己的训练进度条")
    counts = [b for b, _ in known]
    if any(b <= a for a, b in zip(counts, counts[1:], strict=False)) or (total is not None and counts[-1] > total):
        return Words("the progress bar counts before the metric dicts do not rise within the bar's total",
                     "指标 dict 之前的进度条计数没有在进度条总数之内逐步上升")
    return None


def _buffered(w: Witnesses, total: int | None) -> bool:
    """Whether stdout was buffered, so the bar (stderr) runs ahead of the dicts: a training bar was drawn,
    yet dicts follow one another with no bar drawn between them at all. Written as the terminal shows it,
    tqdm draws its bar again after every dict it prints."""
    if total is None or not any(total in seen for seen in w.bars):
        return False
    return any(not seen for seen in w.bars[1:])


def _ahead_bound(w: Witnesses, total: int | None, first: bool) -> int | None:
    """The largest ``logging_steps`` every dict allows when the bar runs ahead of them: dict ``k`` (of
    those logged every ``logging_steps``) is step ``k × logging_steps``, written no earlier than that
    step, so no later than the bar's count when it appeared. None without a training bar.

    Example:
        >>> w = Witnesses(bars=[{200: 40}, {}, {}, {}, {}, {}, {}, {200: 75}], epochs=[0.0] * 8)
        >>> _ahead_bound(w, 200, False)
        5
    """
    if total is None:
        return None
    reached, bound = 0, None
    for i, seen in enumerate(w.bars):
        reached = max(reached, seen.get(total, 0))
        k = i + 1 - int(first)
        if k > 0 and reached > 0:
            bound = reached // k if bound is None else min(bound, reached // k)
    return bound if bound is not None and bound >= 1 else None


def training_total(w: Witnesses) -> int | None:
    """The total of the bar drawn right before most training dicts: the training bar's (an
    evaluation bar is drawn before an evaluation dict, and the training bar again after it)."""
    votes = Counter(next(reversed(bars)) for bars in w.bars if bars)
    if votes:
        return votes.most_common(1)[0][0]
    return w.total_steps


def _bar_steps(bars: list[dict[int, int]], total: int | None) -> list[int | None]:
    out: list[int | None] = []
    last = 0
    for seen in bars:
        count = seen.get(total) if total is not None else None
        # tqdm redraws the bar unchanged right after printing a dict: that count is used up
        if count is None or count == last:
            out.append(None)
            continue
        out.append(count)
        last = count
    return out


def _proportional(counts: list[int], epochs: list[float | None]) -> bool:
    pairs = [(b, e) for b, e in zip(counts, epochs, strict=True) if e is not None]
    if len(pairs) < 2:
        return True
    rate = sum(b * e for b, e in pairs) / sum(b * b for b, _ in pairs)
    # an epoch printed with 2 decimals (older transformers) is off by up to 0.005
    return all(abs(e - rate * b) <= 0.006 + 0.05 * e for b, e in pairs)


def _reached(w: Witnesses, total: int | None) -> tuple[int | None, Words]:
    """The last step the run got to and who says so: the training bar's highest count, or the
    total when the training printed its summary (it ran to the end)."""
    got = w.reached.get(total) if total is not None else None
    if w.end_epoch is not None and total is not None and (got is None or got < total):
        return total, Words(f"the {total} steps of the run (it printed its summary)",
                            f"这次运行的 {total} 步（它打印了结束汇总）")
    return got, Words(f"the {got} steps the bar reached", f"进度条走到的 {got} 步")


def _logs_first_step(epochs: list[float | None]) -> bool:
    """``logging_first_step``: the first dict is at step 1, far closer to 0 than the next two are apart."""
    if len(epochs) < 3 or any(e is None for e in epochs[:3]):
        return False
    e1, e2, e3 = (float(e) for e in epochs[:3] if e is not None)
    return e3 - e2 > 0 and e1 < 0.5 * (e3 - e2)


def _steps_per_epoch(w: Witnesses, total: int | None) -> float | None:
    epochs = w.num_epochs or w.end_epoch
    if total is None or not epochs or epochs <= 0:
        return None
    return total / epochs


def _logging_steps(w: Witnesses, n: int, total: int | None, reached: int | None,
                   said: Words) -> tuple[int | None, Words]:
    if w.logging_steps is not None:
        if 0 < w.logging_steps < 1 and total is not None:  # a ratio of the total steps
            ratio = w.logging_steps
            return math.ceil(total * ratio), Words(f"logging_steps = {ratio} of {total} steps",
                                                   f"logging_steps = {ratio}（占 {total} 步的比例）")
        if w.logging_steps >= 1:
            return int(w.logging_steps), Words("as printed in the log", "日志里打印的值")
    per_epoch = _steps_per_epoch(w, total)
    by_epoch = _from_epochs(w.epochs, per_epoch)
    # the epochs (computed from the step) at the banner's steps per epoch giving whole steps are exact, whatever
    # the bar drew (a terminal capture can miss its last redraws)
    exact = _by_epochs(w, total, EXACT)
    dicts = n - int(_logs_first_step(w.epochs))
    if reached is not None and dicts > 0:
        fits = [k for k in range(max(1, reached // (dicts + 1)), reached // dicts + 1)
                if dicts * k <= reached < (dicts + 1) * k]
        if exact is not None and exact not in fits:
            fits = []
        if by_epoch is not None and fits:
            best = min(fits, key=lambda k: abs(k - by_epoch))
            if abs(best - by_epoch) <= 0.2 * by_epoch + 1:
                return best, Words(f"{n} dicts in {said}, and their epochs agree",
                                   f"{said.zh}中有 {n} 个 dict，它们的 epoch 也相符")
        if len(fits) == 1:
            return fits[0], Words(f"{n} dicts in {said}", f"{said.zh}中有 {n} 个 dict")
    logging = _by_epochs(w, total)
    if logging is not None:
        return logging, Words(f"the dicts' epochs at {per_epoch:g} steps per epoch",
                              f"按每个 epoch {per_epoch:g} 步，由各 dict 的 epoch 推算")
    return None, Words("", "")


def _by_epochs(w: Witnesses, total: int | None, within: float = 0.1) -> int | None:
    """The steps between two dicts as their epochs say at the banner's (or summary's) steps per epoch, when that
    is a whole number of steps (within ``within`` of it); None otherwise."""
    by_epoch = _from_epochs(w.epochs, _steps_per_epoch(w, total))
    if by_epoch is not None and by_epoch >= 1 and abs(by_epoch - round(by_epoch)) <= within * by_epoch:
        return round(by_epoch)
    return None


def _from_epochs(epochs: list[float | None], per_epoch: float | None) -> float | None:
    """Steps between two dicts as their epochs say."""
    known = [e for e in epochs if e is not None]
    if per_epoch is None or not known:
        return None
    if len(known) == 1:
        return known[0] * per_epoch
    return (known[-1] - known[0]) / (len(known) - 1) * per_epoch


def _partial(bars: list[int | None], epochs: list[float | None], total: int | None) -> list[int] | None:
    """The bar's count where a dict had one and the step after the last otherwise — the reading
    when some dicts had no bar of their own (fast steps tqdm did not redraw) and the counts that
    are there agree with the epochs; None when they do not, or no dict had a bar."""
    known = [(b, e) for b, e in zip(bars, epochs, strict=True) if b is not None]
    if not known or not _proportional([b for b, _ in known], [e for _, e in known]):
        return None
    out: list[int] = []
    last = 0
    for b in bars:
        step = b if b is not None and b > last and (total is None or b <= total) else last + 1
        out.append(step)
        last = step
    return out
