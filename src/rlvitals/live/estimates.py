"""Runs whose steps are an estimate: what is found on them is held until their numbering stops changing.

A TRL console written with stdout buffered (``python train.py > train.log``) gets its progress bar before
its metric dicts, and its dicts carry no step: until the run prints its summary the reader can only estimate
each dict's step (:mod:`rlvitals.ingest._console_steps`, ``Run.estimated_steps``), and a longer reading may
number the same dicts differently. A finding read on such steps — its onset, or whether it holds at all — may
move with them, so the watcher alerts it only once the estimate is **stable**: the steps of each of the last
:data:`STABLE_LOOKS` diagnoses were the start of the steps of the next one (nothing already shown was
renumbered). Until then the run's observations are *held* (:attr:`.alerts.Observation.held`: they neither
raise nor clear), and the watcher says so once, with the fix: run the trainer unbuffered. Alerts raised on
estimated steps say so.

>>> est = Estimates()
>>> est.held("run.log", [5, 10], True), est.held("run.log", [5, 10, 15], True), est.held("run.log", [5, 10, 15], True)
(True, True, False)
"""

from __future__ import annotations

from collections.abc import Iterable

from ..words import Words

__all__ = ["STABLE_LOOKS", "Estimates"]

#: how many looks in a row must extend the steps before, unchanged, for an estimate to count as stable
STABLE_LOOKS = 2


class Estimates:
    """The numbering of each run whose steps are an estimate, look by look; ``messages`` holds what to say."""

    def __init__(self) -> None:
        self._steps: dict[str, list[int]] = {}
        self._stable: dict[str, int] = {}
        self._said: dict[str, bool] = {}  # run -> whether the last thing said of it was "held"
        self.messages: list[str] = []

    def held(self, run: str, steps: Iterable[int], estimated: bool) -> bool:
        """Whether ``run``'s findings are held at this look, its steps being ``steps``."""
        if not estimated:
            self._forget(run, exact=True)
            return False
        now = [int(s) for s in steps]
        before = self._steps.get(run)
        extended = before is not None and now[: len(before)] == before
        self._stable[run] = self._stable.get(run, 0) + 1 if extended else 0
        self._steps[run] = now
        held = self._stable[run] < STABLE_LOOKS
        if held and not self._said.get(run, False):
            self._said[run] = True
            self.messages.append(Words(
                f"{run}: its steps are an estimate (stdout was buffered: the progress bar ran ahead of the metric "
                "dicts), so what is found on them is held until the numbering stops changing; run the trainer "
                "with 'python -u' or PYTHONUNBUFFERED=1 for exact steps",
                f"{run}：它的步数只是估计（stdout 有缓冲：进度条跑在了指标 dict 前面），在其编号不再变化之前，"
                "发现的问题暂不告警；用 'python -u' 或 PYTHONUNBUFFERED=1 运行训练可得到准确步数"))
        elif not held and self._said.get(run, False):
            self._said[run] = False
            self.messages.append(Words(
                f"{run}: its estimated steps kept their numbering for {STABLE_LOOKS + 1} looks; what is found on "
                "them is alerted from now on (marked as estimated)",
                f"{run}：估计的步数在连续 {STABLE_LOOKS + 1} 次查看中编号未变；从现在起发现的问题会告警"
                "（标明步数为估计）"))
        return held

    def holding(self, run: str) -> bool:
        """Whether ``run``'s findings were held at its last look (what a tail pass between two looks obeys)."""
        return run in self._steps and self._stable.get(run, 0) < STABLE_LOOKS

    def _forget(self, run: str, exact: bool) -> None:
        if self._said.pop(run, False) and exact:
            self.messages.append(Words(f"{run}: its steps are exact now (the log said enough to number them); "
                                       "findings are no longer held",
                                       f"{run}：它的步数现在是准确的（日志给出了足够的信息）；发现的问题不再暂缓"))
        self._steps.pop(run, None)
        self._stable.pop(run, None)
