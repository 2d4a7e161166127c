"""Progress on long work, on a terminal only: a line per log being read, updated as records come in, and a
bar for the work of ``rollouts``, ``sample`` and ``report`` (the phase, how far it got of how much), gone
when the work is done. Nothing is shown when stderr is not a terminal (a pipe, a log file) or the output
is ``--json``: the callers pass ``enabled=False`` then, and get None as their callback."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..words import Words, in_lang

if TYPE_CHECKING:
    from ..rollout import Progress
    from ..rollout.analysis import RolloutAnalysis
    from ..rollout.options import RolloutSettings

#: the least time between two redraws of a bar; a new phase, and the end of one, are drawn at once
INTERVAL = 0.1

#: phase → (words, what is counted: "" a bare count, None no count), in English and Chinese; a phase not
#: listed is said as it is
PHASES: dict[str, tuple[Words, Words | str | None]] = {
    "reading": (Words("reading", "读取"), Words("files", "个文件")),
    # the rollout analysis' metric families (rlvitals.rollout.analysis), each once per step, then "overall"
    "group": (Words("group metrics (σ_G, pass@k)", "组指标（σ_G、pass@k）"), ""),
    "step_groups": (Words("step-level groups", "步级分组"), ""),
    "diversity": (Words("diversity", "多样性"), ""),
    "segments": (Words("think / answer / tool segments", "think / answer / tool 片段"), ""),
    "length": (Words("length × correctness", "长度 × 正确率"), ""),
    "prompts": (Words("prompt difficulty", "prompt 难度"), ""),
    "id_ood": (Words("in- vs out-of-distribution", "分布内与分布外"), ""),
    "sources": (Words("per data source", "按数据源"), ""),
    "tokens": (Words("token metrics", "token 指标"), ""),
    "embedding": (Words("embedding the responses", "嵌入回答"), Words("steps", "步")),
    "overall": (Words("metrics over the whole table", "整表指标"), ""),
    "loading": (Words("loading the model", "加载模型"), None),
    "sampling": (Words("sampling", "采样"), Words("prompt groups", "组 prompt")),
    "diagnosing": (Words("diagnosing", "诊断"), Words("runs", "次训练")),
    "charts": (Words("drawing the charts", "绘制图表"), Words("sections", "个部分")),
    "rollouts": (Words("choosing the rollouts to show", "挑选要展示的 rollout"), Words("steps", "步")),
    "writing": (Words("writing the page", "写出页面"), None),
    # rlvitals probe's interventions (rlvitals.probe.runner), said in English by their names
    "reference": (Words("reference", "参考答案"), ""),
    "early_answering": (Words("early_answering", "提前作答"), ""),
    "mistakes": (Words("mistakes", "生成错误步骤"), ""),
    "add_mistake": (Words("add_mistake", "加入错误"), ""),
    "paraphrase": (Words("paraphrase", "改写推理"), ""),
    "filler": (Words("filler", "用填充内容替换推理"), ""),
    "biased": (Words("biased", "暗示错误答案"), ""),
    "self_consistency": (Words("self_consistency", "自洽性采样"), ""),
}


def _colon(lang: str) -> str:
    return "：" if lang == "zh" else ": "


@contextlib.contextmanager
def reading(err: IO[str], enabled: bool = True, lang: str = "en") -> Iterator[Callable[[Path, int], None] | None]:
    """A ``progress`` for :func:`rlvitals.run.load.load` that shows ``reading train.log: 49,152 records``
    (in ``lang``) on ``err`` while it reads, or None when ``err`` is not a terminal or progress is not wanted."""
    if not enabled or not err.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn

    shown = Progress(SpinnerColumn(), TextColumn("{task.description}"), console=Console(file=err),
                     transient=True, auto_refresh=False)
    tasks: dict[Path, Any] = {}  # rich's TaskID

    def update(root: Path, records: int) -> None:
        words = f"读取 {root.name}：{records:,} 条记录" if lang == "zh" else f"reading {root.name}: {records:,} records"
        if root not in tasks:
            tasks[root] = shown.add_task(words)
        shown.update(tasks[root], description=words)
        shown.refresh()

    with shown:
        yield update


def words(phase: str, done: int, total: int | None, lang: str = "en") -> tuple[str, str]:
    """What a bar says of ``phase`` in ``lang``: its words, and the count.

    Example:
        >>> words("reading", 45, 100), words("diversity", 2, 18), words("writing", 0, 1)
        (('reading', '45/100 files'), ('diversity', '2/18'), ('writing the page', ''))
        >>> words("reading", 45, 100, "zh"), words("overall", 18, 18, "zh")
        (('读取', '45/100 个文件'), ('整表指标', '18/18'))
    """
    said, unit = PHASES.get(phase, (phase, ""))
    count = f"{done:,}" if total is None else f"{done:,}/{total:,}"
    return in_lang(said, lang), "" if unit is None else f"{count} {in_lang(unit, lang)}".rstrip()


class Throttle:
    """Whether a bar is redrawn now: on a new phase, at the end of one (``done == total``), else when
    ``interval`` seconds of ``clock`` have passed since the last redraw.

    Example:
        >>> now = [0.0]
        >>> t = Throttle(lambda: now[0], 0.1)
        >>> t("reading", 0, 9), t("reading", 1, 9), t("group", 0, 18)
        (True, False, True)
        >>> now[0] = 0.2; t("group", 1, 18), t("group", 2, 18), t("group", 18, 18)
        (True, False, True)
    """

    def __init__(self, clock: Callable[[], float], interval: float = INTERVAL) -> None:
        self.clock, self.interval = clock, interval
        self.phase: str | None = None
        self.last = 0.0

    def __call__(self, phase: str, done: int, total: int | None) -> bool:
        now = self.clock()
        if phase != self.phase or done == total or now - self.last >= self.interval:
            self.phase, self.last = phase, now
            return True
        return False


@contextlib.contextmanager
def working(err: IO[str], what: str, enabled: bool = True,
            clock: Callable[[], float] | None = None, lang: str = "en") -> Iterator[Progress | None]:
    """A ``progress(phase, done, total)`` that shows ``what: phase ━━━━━━━╺━━━ done/total unit`` on
    ``err`` while the work goes on (``what`` and the phase's words from :data:`PHASES` in ``lang``), redrawn
    as :class:`Throttle` says with ``clock`` (default the monotonic clock), and gone when it is done; None
    when ``err`` is not a terminal or progress is not wanted."""
    if not enabled or not err.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn

    shown = Progress(TextColumn("{task.description}"), BarColumn(bar_width=30), TextColumn("{task.fields[count]}"),
                     console=Console(file=err), transient=True, auto_refresh=False)
    head = in_lang(what, lang)
    task = shown.add_task(head, total=None, count="")
    redraw = Throttle(clock or time.monotonic)

    def update(phase: str, done: int, total: int | None) -> None:
        said, count = words(phase, done, total, lang)
        shown.update(task, description=f"{head}{_colon(lang)}{said}", completed=done, total=total, count=count)
        if redraw(phase, done, total):
            shown.refresh()

    with shown:
        yield update


def analysed(path: str, settings: RolloutSettings | None, err: IO[str], enabled: bool = True,
             lang: str = "en") -> RolloutAnalysis:
    """The rollouts at ``path`` analysed with ``settings``, the analysis' phases shown on a terminal
    (``rollouts in rollout_data: reading ━━━━━╺━━━━ 45/100 files``, in ``lang``) when ``enabled``."""
    from ..rollout.analysis import analyze

    with working(err, rollouts_in(path), enabled, lang=lang) as told:
        return analyze(path, settings, progress=told)


def rollouts_in(path: str) -> Words:
    """What a bar calls the rollout folder at ``path``.

    Example:
        >>> w = rollouts_in("/data/rollout_data/"); w, in_lang(w, "zh")
        ('rollouts in rollout_data', 'rollout_data 里的 rollout')
    """
    name = Path(path).name or path
    return Words(f"rollouts in {name}", f"{name} 里的 rollout")


def status_line(err: IO[str], what: str, clock: Callable[[], float] | None = None,
                lang: str = "en") -> Progress | None:
    """A ``progress(phase, done, total)`` that keeps one line on ``err`` (``what: phase done/total unit``,
    in ``lang``), redrawn in place as :class:`Throttle` says and wiped when a phase is done, so that whatever
    is printed next starts on a clean line (``watch --once --rollouts``, whose output follows the reading);
    None when ``err`` is not a terminal."""
    if not err.isatty():
        return None
    redraw = Throttle(clock or time.monotonic)
    head = in_lang(what, lang) + _colon(lang)

    def update(phase: str, done: int, total: int | None) -> None:
        if not redraw(phase, done, total):
            return
        said, count = words(phase, done, total, lang)
        err.write("\r\x1b[2K" if total is not None and done >= total else f"\r\x1b[2K{head}{said} {count}")
        err.flush()

    return update
