"""``Monitor``: rlvitals inside a training loop, without ever slowing or breaking it.

``log(step, metrics)`` and ``log_rollouts(step, rollouts)`` only put the values on a bounded
queue and return; a daemon worker thread (:mod:`.monitor_worker`) adds them to a
:class:`~rlvitals.run.builder.RunBuilder`
(keys are resolved by the catalog exactly as for any log), analyses each step's rollouts
(:mod:`rlvitals.rollout.analysis`), joins those series onto the Run, diagnoses it at most every
``every`` steps and ``min_interval`` seconds (:class:`MonitorOptions`), and hands the findings to the watcher's alert
policy (:func:`rlvitals.live.alerts.decide`) and sinks. With ``state_path`` the policy and
an outbox of alerts live in the watcher's SQLite file, so a resumed job neither repeats nor
loses an alert.

Failure is contained: every exception inside the worker (a bad value, a broken sink, a bug in
a check) is caught, counted in :meth:`Monitor.errors` and written as one line to ``err``; the
caller's loop never sees it. When the queue is full the oldest item is dropped and counted
(:attr:`Monitor.dropped`) rather than blocking the caller.

>>> with Monitor(run="demo", err=None) as mon:  # doctest: +SKIP
...     for step in range(1, 50):
...         mon.log(step, {"actor/entropy": 0.5, "critic/score/mean": step / 50})
>>> mon.diagnosis().verdict  # doctest: +SKIP
'ok'
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

from ..checks.config import DiagnoseConfig
from ..diagnosis import Diagnosis, Finding
from ..errors import RlvitalsError
from ..live.alerts import Alert, Cooldown
from ..live.confirm import Confirm
from ..run.run import Run
from ..words import Words
from .monitor_worker import PREFIX, Inbox, Ledger, Worker, derived_values, failure, kind_zh, rollout_table
from .sinks import Sink

if TYPE_CHECKING:
    from ..rollout import RolloutSource

__all__ = ["PREFIX", "Monitor", "MonitorError", "MonitorOptions"]


class MonitorError(RlvitalsError):
    """Raised only when a Monitor is made, for options that cannot work (never from the loop)."""


@dataclass(frozen=True)
class MonitorOptions:
    """How a :class:`Monitor` diagnoses and alerts, checked when made.

    ``every``: diagnose at most once per this many new steps; ``min_interval``: and at most once
    per this many seconds (a fast loop must not spend a core on diagnoses). ``run``: the run's name in
    alerts. ``framework``: ``"trl"``, ``"verl"``... when the keys alone may not say it. ``lang``: the
    language of what it says. ``state_path``: the alert state file of ``rlvitals watch`` (a resumed job
    neither repeats nor loses an alert). ``cooldown``: how soon a key may alert again. ``queue_size``:
    the items the queue holds before the oldest is dropped. ``stop_on``: once a diagnosis' verdict is at
    least this bad (``"warn"`` or ``"fail"``; a note is never part of a verdict, so notes alone never stop
    a run), :meth:`Monitor.should_stop` says so (and stays so): the loop's cue to save and stop, before more
    GPU-hours go to a dead run (the TRL callback acts on it; a custom loop checks it). Notes send no alert
    either (:mod:`rlvitals.live.alerts`). ``confirm``: how long a new finding must hold before it is
    alerted, by default as ``rlvitals watch`` waits (:class:`~rlvitals.live.confirm.Confirm`: two diagnoses
    in a row, and a failure over half the steps logged, alerted as the warning it also is until then;
    ``Confirm(looks=1)``: at once); ``stop_on`` acts on what was alerted, and what still waits when the
    loop ends is alerted at :meth:`Monitor.close`. ``config``: the checks' settings. ``algorithm``: the run's
    algorithm, as ``--algorithm`` gives it (None: detected from the keys).

    Example:
        >>> MonitorOptions(every=10, state_path="alerts.sqlite").state_path
        PosixPath('alerts.sqlite')
    """

    every: int = 1
    min_interval: float = 1.0
    run: str = "monitor"
    framework: str | None = None
    lang: str = "en"
    state_path: Path | None = None
    cooldown: Cooldown = field(default_factory=Cooldown)
    queue_size: int = 10_000
    stop_on: str | None = None
    confirm: Confirm = field(default_factory=Confirm)
    config: DiagnoseConfig | None = None
    #: the algorithm the run is (as ``--algorithm``): its keys are read as that algorithm's; None: detected
    algorithm: str | None = None

    def __post_init__(self) -> None:
        every, min_interval, queue_size, stop_on = self.every, self.min_interval, self.queue_size, self.stop_on
        if every < 1 or min_interval < 0 or queue_size < 1:
            head = f"Monitor(every={every}, min_interval={min_interval}, queue_size={queue_size})"
            raise MonitorError(Words(f"{head}: expected every >= 1 step, min_interval >= 0 seconds and queue_size >= 1",
                                     f"{head}：要求 every >= 1 步、min_interval >= 0 秒、queue_size >= 1"))
        if stop_on == "note":
            raise MonitorError(Words("Monitor(stop_on='note'): a note is advice (could be better), never part of a "
                                     "verdict, so it cannot stop a run; expected 'warn', 'fail' or None",
                                     "Monitor(stop_on='note')：提示（note）只是建议（可以更好），不属于判定，"
                                     "不能让运行停下；应为 'warn'、'fail' 或 None"))
        if stop_on not in (None, "warn", "fail"):
            raise MonitorError(Words(f"Monitor(stop_on={stop_on!r}): expected 'warn', 'fail' or None",
                                     f"Monitor(stop_on={stop_on!r})：应为 'warn'、'fail' 或 None"))
        if self.algorithm is not None:  # a name the catalog does not know fails here, not in the worker
            from ..catalog import load_catalog
            from ..run.detect import checked_algorithm

            checked_algorithm(self.algorithm, load_catalog(), "Monitor: algorithm=")
        if self.state_path is not None and not isinstance(self.state_path, Path):
            object.__setattr__(self, "state_path", Path(self.state_path))


class Monitor:
    """Watches a training loop from the inside; see the module docstring.

    ``sinks``: where alerts go (:func:`rlvitals.watch.sinks.parse_sink` specs or sink objects).
    ``options``: how it diagnoses and alerts (:class:`MonitorOptions`); its fields may also be given as
    keywords (``Monitor(every=10, stop_on="fail")``), over ``options`` when both are. ``err``: one line per
    error and per alert (None: silent). ``clock``: wall time, injected for tests.

    Example:
        >>> mon = Monitor(err=None)
        >>> mon.log(1, {"actor/entropy": 0.41})
        >>> mon.close(); mon.errors()
        []
    """

    def __init__(self, sinks: Sequence[Sink | str] = (), options: MonitorOptions | None = None, *,
                 err: IO[str] | None = sys.stderr, clock: Callable[[], float] = time.time, **settings: object) -> None:
        from .sinks import parse_sink

        unknown = sorted(set(settings) - {f.name for f in fields(MonitorOptions)})
        if unknown:
            known = ", ".join(f.name for f in fields(MonitorOptions))
            raise MonitorError(Words(f"Monitor({unknown[0]}=...): not an option; expected one of {known}",
                                     f"Monitor({unknown[0]}=...)：没有这个选项；可用的选项：{known}"))
        # a keyword names a field (checked above); the record checks the values it can
        self.options = replace(options or MonitorOptions(), **cast("dict[str, Any]", settings))
        self.sinks: list[Sink] = [parse_sink(s, self.options.lang) if isinstance(s, str) else s for s in sinks]
        self.err, self.clock = err, clock
        self._inbox = Inbox(self.options.queue_size)
        self._ledger = Ledger(self.options.lang, err)
        self._worker = Worker(self.options, self.sinks, self._inbox, self._ledger, clock)
        self._worker.thread.start()

    @property
    def lang(self) -> str:
        return self.options.lang

    @property
    def stop_on(self) -> str | None:
        return self.options.stop_on

    @property
    def dropped(self) -> int:
        """How many queued items were dropped because the queue was full."""
        return self._inbox.dropped

    # --- the caller's side: never blocks, never raises ---------------------------------------

    def log(self, step: int, metrics: Mapping[str, object]) -> None:
        """Queue the metrics logged at ``step`` (numbers, NumPy or 0-d torch values; text is kept
        as text); returns at once."""
        self._put("metrics", step, metrics)

    def log_rollouts(self, step: int, rollouts: RolloutSource) -> None:
        """Queue the rollouts sampled at ``step``: a list of dicts (``prompt``, ``response``,
        ``score`` ...), a polars/pandas frame, a :class:`~rlvitals.rollout.readers.RolloutSet`, or the
        path of a rollout file (read by the worker), as :func:`rlvitals.analyze_rollouts` reads them."""
        self._put("rollouts", step, rollouts)

    def log_probe_results(self, path: str | Path) -> None:
        """Queue a probe results file (``rlvitals-probes.jsonl``, as ``rlvitals probe`` or a
        :class:`~rlvitals.probe.ProbeWorker` writes it): the worker reads it and joins its per-step
        ``reasoning/…`` metrics onto the Run by step, as every reader of rollouts joins it, so the
        ``faithfulness`` check judges them. Queue it again when the file changed; returns at once."""
        self._put("probes", 0, Path(path))

    def derive(self, step: int, rollouts: RolloutSource) -> dict[str, float]:
        """The rollout metrics of ``step`` as ``rlvitals/<key>`` → value, computed now in the caller's
        thread (one step's rollouts: milliseconds), to write back to the trainer's loggers at once;
        the rollouts are also queued for the diagnosis, as :meth:`log_rollouts` does. It never waits
        for the worker (which may be in the middle of a long diagnosis) and never raises: an error is
        reported and ``{}`` returned.

        Example:
            >>> mon = Monitor(err=None)
            >>> mon.derive(3, [{"prompt": "q", "response": "4", "score": 1.0},
            ...                {"prompt": "q", "response": "5", "score": 0.0}])["rlvitals/group/zero_std/share"]
            0.0
            >>> mon.close()
        """
        from .rollouts import step_frame

        try:
            if self._inbox.closed:
                self._put("rollouts", step, rollouts)  # reported there, once
                return {}
            table = rollout_table(step, rollouts)
            frame = step_frame(table)
        except Exception as exc:  # noqa: BLE001 (the training loop must go on whatever happens)
            why = failure(exc, named=True)
            self._ledger.error(Words(f"rollouts of step {step!r} could not be analysed ({why}); training goes on",
                                     f"第 {step!r} 步的 rollout 无法分析（{why.zh}）；训练继续"),
                               kind=f"derive {type(exc).__name__}")
            return {}
        self._put("analysed", step, (table, frame))
        return derived_values(frame)

    def _put(self, kind: str, step: int, payload: Any) -> None:
        try:
            if self._inbox.closed:
                self._ledger.error(Words(f"{kind} for step {step} arrived after close(); they were ignored "
                                         "(reported once)",
                                         f"第 {step} 步的{kind_zh(kind)}在 close() 之后才到，已忽略（只报告一次）"),
                                   kind="closed")
                return
            if kind == "metrics":
                payload = dict(payload)  # a copy: the caller may reuse its dict
            elif isinstance(payload, list):
                payload = list(payload)
            self._inbox.put(kind, step, payload)
        except Exception as exc:  # noqa: BLE001 (the training loop must go on whatever happens)
            why = failure(exc, named=True)
            self._ledger.error(Words(f"{kind} for step {step!r} could not be queued ({why})",
                                     f"第 {step!r} 步的{kind_zh(kind)}无法放入队列（{why.zh}）"))

    def flush(self, timeout: float | None = 30.0) -> bool:
        """Wait until everything queued so far is processed and diagnosed; whether it was in time."""
        return self._inbox.wait(self._worker.stopped, timeout, flush=True)

    def close(self, timeout: float | None = 60.0) -> None:
        """Process what is queued, diagnose a last time, send its alerts, stop the worker."""
        if self._inbox.closed:
            return
        self.flush(timeout)
        self._inbox.close()
        self._worker.thread.join(timeout)

    def __enter__(self) -> Monitor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- results, safe to read from any thread ----------------------------------------------

    def diagnosis(self) -> Diagnosis | None:
        """The latest diagnosis (None before the first)."""
        with self._ledger.lock:
            return self._ledger.diagnosis

    def findings(self) -> tuple[Finding, ...]:
        """The latest diagnosis's findings."""
        d = self.diagnosis()
        return d.findings if d is not None else ()

    def alerts(self) -> list[Alert]:
        """Every alert raised so far, oldest first."""
        with self._ledger.lock:
            return list(self._ledger.alerts)

    def errors(self) -> list[str]:
        """The first error of each kind caught so far (at most :data:`~.monitor_worker.MAX_ERRORS`);
        :meth:`error_count` counts every one."""
        with self._ledger.lock:
            return list(self._ledger.errors)

    def error_count(self) -> int:
        with self._ledger.lock:
            return self._ledger.error_count

    def run(self) -> Run | None:
        """The Run of the latest diagnosis, rollout series joined."""
        d = self.diagnosis()
        return d.run if d is not None else None

    def derived(self, step: int, timeout: float = 0.0) -> dict[str, float]:
        """The rollout metrics of ``step`` as ``rlvitals/<key>`` → value, as the worker has them.
        Waits up to ``timeout`` seconds for the worker to reach what was queued before the call,
        which may mean waiting for a diagnosis in progress; to write metrics back at once, use
        :meth:`derive`, which computes them in the caller's thread."""
        if timeout > 0:
            self._inbox.wait(self._worker.stopped, timeout, flush=False)
        with self._ledger.lock:
            return dict(self._ledger.derived.get(step, {}))

    def should_stop(self) -> bool:
        """Whether a diagnosis' verdict reached ``stop_on`` (never, without it); once true, stays true."""
        with self._ledger.lock:
            return self._ledger.stop is not None

    def stop_reason(self) -> Words | None:
        """Why :meth:`should_stop` is true: the verdict, its step and the worst findings' titles (English,
        with its Chinese: :func:`~rlvitals.words.in_lang` picks)."""
        with self._ledger.lock:
            return self._ledger.stop

    def say(self, line: str) -> None:
        """Write one line to ``err`` (an integration's news, such as stopping the training), in the
        Monitor's language when ``line`` is :class:`~rlvitals.words.Words`."""
        self._ledger.say(line)

    def report_error(self, message: str, kind: str | None = None) -> None:
        """Count and report an error found outside the worker (an integration's own problem); a
        :class:`~rlvitals.words.Words` message is printed in the Monitor's language."""
        self._ledger.error(message, kind)
