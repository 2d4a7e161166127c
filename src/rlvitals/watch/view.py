"""What the watcher shows: plain lines for a pipe or a log file, a live table of the layers on a
terminal. Both only render results the watcher computed (alerts, diagnoses)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import IO, Any

from ..checks import VERDICT_STATUSES, RunForecast
from ..diagnosis import LAYER_NAMES, READING_ORDER, Diagnosis
from ..live.alerts import Alert
from ..render.diagnosis import STATUS_STYLE, STATUS_WORDS
from ..words import in_lang


def note_line(message: str, lang: str = "en") -> str:
    """What watch prints for ``message`` (a warning, a sink's failure, a note): its Chinese under ``"zh"``
    when it has one (:class:`~rlvitals.words.Words`).

    >>> from rlvitals.words import Words
    >>> note_line(Words("a.log: truncated", "a.log：被截断"), "zh"), note_line("plain", "zh")
    ('rlvitals：a.log：被截断', 'rlvitals：plain')
    """
    return f"rlvitals{'：' if lang == 'zh' else ': '}{in_lang(message, lang)}"


def alert_line(alert: Alert, lang: str = "en", clock: float | None = None) -> str:
    """``[12:03:04] FAIL entropy_collapse since step 181, seen at step 190 (run.log): ...``"""
    stamp = time.strftime("%H:%M:%S", time.localtime(alert.at if clock is None else clock))
    return f"[{stamp}] {alert.text(lang)}"


def forecast_text(fc: RunForecast, lang: str = "en") -> str:
    """The forecast of a run in a few words: the primary series' ceiling and where the run is, or why there is
    none.

    >>> from rlvitals.words import Words
    >>> forecast_text(RunForecast((), Words("no entropy logged", "没有记录熵")), "zh")
    '无法预测：没有记录熵'
    """
    zh = lang == "zh"
    f = fc.primary
    if f is None or f.law is None:
        reason = (f.reason if f is not None else fc.reason) or ""
        return f"{'无法预测：' if zh else 'no forecast: '}{in_lang(reason, lang)}"
    lo, hi = f.law.ceiling_interval
    spent, left = f.entropy_consumed or 0.0, f.gain_left or 0.0
    if zh:
        text = (f"{f.metric} 的天花板 {f.law.ceiling:.3g}（{lo:.3g}–{hi:.3g}），照现在会止步于 {f.plateau:.3g} 左右；"
                f"目前 {f.observed:.3g}，熵已用掉 {spent:.0%}，提升还剩 {left:.0%}")
    else:
        text = (f"{f.metric}: ceiling {f.law.ceiling:.3g} ({lo:.3g}–{hi:.3g}), heading for {f.plateau:.3g} as it goes; "
                f"at {f.observed:.3g} now, {spent:.0%} of the entropy spent, {left:.0%} of the gain left")
    if fc.target is not None:
        text += (f"；目标 {fc.target:.3g} {'达不到' if fc.below_target else '够得着'}" if zh else
                 f"; target {fc.target:.3g} {'out of reach' if fc.below_target else 'within reach'}")
    return text


def layers_table(diagnoses: Mapping[str, Diagnosis], lang: str = "en",
                 forecasts: Mapping[str, RunForecast] | None = None) -> Any:
    """A rich Table: one row per layer, one column per run, each cell the layer's verdict and
    its worst finding, then, dimmed, how many notes it has (advice: they never change the verdict)."""
    from rich.table import Table
    from rich.text import Text

    zh = lang == "zh"
    table = Table(title="rlvitals watch", expand=False)
    table.add_column("层" if zh else "layer")
    for path, d in diagnoses.items():
        steps = int(len(d.run.train_steps))
        # a path may hold brackets: a Text, not markup
        table.add_column(Text(f"{path} · {steps} 步 · {STATUS_WORDS['zh'][d.verdict]}" if zh
                              else f"{path} · {steps} steps · {d.verdict}"))
    index = 1 if zh else 0
    for layer in READING_ORDER:
        cells = []
        for d in diagnoses.values():
            status = d.layers[layer]
            worst = next((f for f in d.findings if f.layer == layer and f.status == status), None)
            detail = f" {worst.check}" if worst is not None and status in VERDICT_STATUSES else ""
            notes = sum(f.layer == layer and f.status == "note" for f in d.findings)
            words = f"{notes} 项提示" if zh else f"{notes} {'note' if notes == 1 else 'notes'}"
            quiet = f" [dim]· {words}[/]" if notes else ""
            said = STATUS_WORDS["zh"][status] if zh else status
            cells.append(f"[{STATUS_STYLE[status]}]{said}[/]{detail}{quiet}")
        table.add_row(LAYER_NAMES[layer][index], *cells)
    if forecasts:
        table.add_row("预测" if zh else "forecast", *(Text(forecast_text(forecasts[p], lang), style="dim")
                                                     if p in forecasts else "" for p in diagnoses))
    return table


class PlainView:
    """Alerts and notes as lines (stdout is not a terminal)."""

    def __init__(self, out: IO[str], err: IO[str], lang: str = "en") -> None:
        self.out, self.err, self.lang = out, err, lang

    def alert(self, alert: Alert) -> None:
        self.out.write(alert_line(alert, self.lang) + "\n")
        self.out.flush()

    def note(self, message: str) -> None:
        self.err.write(note_line(message, self.lang) + "\n")
        self.err.flush()

    def show(self, diagnoses: Mapping[str, Diagnosis]) -> None:
        """Plain output shows alerts only (the entropy_ceiling check's findings among them); the state of every
        layer is in ``diagnose``, the forecast in ``rlvitals forecast``."""

    def status(self, line: str) -> None:
        """Plain output has no status line (it would fill a log file)."""

    def close(self) -> None:
        """Nothing to tear down."""


class LiveView(PlainView):
    """A rich Live table of the six layers (and efficiency), alerts printed above it."""

    def __init__(self, out: IO[str], err: IO[str], lang: str = "en") -> None:
        from rich.console import Console
        from rich.live import Live

        super().__init__(out, err, lang)
        self.console = Console(file=out)
        self.live = Live(console=self.console, auto_refresh=False, transient=False)
        self._table: Any = None
        self._status = ""
        #: each run's latest forecast: a tail pass judges the sudden checks only and has none
        self.forecasts: dict[str, RunForecast] = {}
        self.live.start()

    def alert(self, alert: Alert) -> None:
        from rich.text import Text

        # a Text, not markup: a message may hold brackets
        self.console.print(Text(alert_line(alert, self.lang), style=STATUS_STYLE.get(alert.status, "")))

    def note(self, message: str) -> None:
        from rich.text import Text

        self.console.print(Text(note_line(message, self.lang), style="dim"))

    def show(self, diagnoses: Mapping[str, Diagnosis]) -> None:
        if diagnoses:
            self.forecasts.update({p: d.forecast for p, d in diagnoses.items() if d.forecast is not None})
            self._table = layers_table(diagnoses, self.lang, self.forecasts)
            self._render()

    def status(self, line: str) -> None:
        """The line under the table: each log's records read, its last step, its next diagnosis."""
        if line != self._status:
            self._status = line
            self._render()

    def _render(self) -> None:
        from rich.console import Group
        from rich.text import Text

        parts = [p for p in (self._table, Text(self._status, style="dim") if self._status else None) if p is not None]
        self.live.update(Group(*parts), refresh=True)

    def close(self) -> None:
        self.live.stop()
