"""``Monitor``: rlvitals inside a training loop, without ever slowing or breaking it.

``log(step, metrics)`` and ``log_rollouts(step, rollouts)`` only put the values on a bounded
queue and return; a daemon worker thread adds them to a :class:`~rlvitals.run.builder.RunBuilder`
(keys are resolved by the catalog exactly as for any log), analyses each step's rollouts
(:mod:`rlvitals.rollout.analysis`), joins those series onto the Run, diagnoses it at most every
``every`` steps and ``min_interval`` seconds, and hands the findings to the watcher's alert
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
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import polars as pl

from ..checks.config import DiagnoseConfig
from ..diagnosis import Diagnosis, Finding, diagnose
from ..errors import RlvitalsError
from ..ingest.record import Record, SourceMeta, Value
from ..live.alerting import Alerting, read_to
from ..live.alerts import Alert, Cooldown, KeyState
from ..live.confirm import Confirm
from ..live.dispatch import messages
from ..live.pace import Pace
from ..live.stopping import stop_reason
from ..run.builder import RunBuilder
from ..run.run import Run
from ..words import Words, in_lang
from .sinks import Sink

if TYPE_CHECKING:
    from ..rollout import RolloutSource

__all__ = ["PREFIX", "Monitor", "MonitorError"]

#: derived metrics are written back under this prefix, as ``rlvitals export`` names them
PREFIX = "rlvitals/"
#: how many error lines are kept verbatim (all are counted)
MAX_ERRORS = 50
#: rollout tables kept open for steps whose rollouts arrive in several calls
_OPEN_STEPS = 4
#: what the queued items are, in the Chinese of the error lines (the English names the item's kind); the
#: spaces set a Latin word apart from the Chinese around it
_KIND_ZH = {"metrics": "指标", "rollouts": " rollout ", "analysed": " rollout 及其分析"}


class MonitorError(RlvitalsError):
    """Raised only by the constructor, for arguments that cannot work (never from the loop)."""


@dataclass(frozen=True)
class _Item:
    seq: int
    kind: str  # "metrics" | "rollouts" | "analysed" (rollouts with their analysis, from derive())
    step: int
    payload: Any


class Monitor:
    """Watches a training loop from the inside; see the module docstring.

    ``sinks``: where alerts go (:func:`rlvitals.watch.sinks.parse_sink` specs or sink objects).
    ``every``: diagnose at most once per this many new steps; ``min_interval``: and at most once
    per this many seconds (a fast loop must not spend a core on diagnoses). ``framework``:
    ``"trl"``, ``"verl"``... when the keys alone may not say it. ``err``: one line per error
    and per alert (None: silent). ``clock``: wall time, injected for tests. ``stop_on``: once a
    diagnosis' verdict is at least this bad (``"warn"`` or ``"fail"``; a note is never part of a
    verdict, so notes alone never stop a run), :meth:`should_stop` says so (and stays so): the
    loop's cue to save and stop, before more GPU-hours go to a dead run (the TRL callback acts
    on it; a custom loop checks it). Notes send no alert either (:mod:`rlvitals.live.alerts`).
    ``confirm``: how long a new finding must hold before it is alerted, by default as ``rlvitals watch`` waits
    (:class:`~rlvitals.live.confirm.Confirm`: two diagnoses in a row, and a failure over half the steps logged,
    alerted as the warning it also is until then; ``Confirm(looks=1)``: at once); ``stop_on`` acts on what was alerted,
    and what still waits when the loop ends is alerted at :meth:`close`.

    Example:
        >>> mon = Monitor(err=None)
        >>> mon.log(1, {"actor/entropy": 0.41})
        >>> mon.close(); mon.errors()
        []
    """

    def __init__(self, sinks: Sequence[Sink | str] = (), *, config: DiagnoseConfig | None = None, every: int = 1,
                 min_interval: float = 1.0, run: str = "monitor", framework: str | None = None, lang: str = "en",
                 state_path: str | Path | None = None, cooldown: Cooldown | None = None, queue_size: int = 10_000,
                 err: IO[str] | None = sys.stderr, clock: Callable[[], float] = time.time,
                 stop_on: str | None = None, confirm: Confirm | None = None) -> None:
        from .sinks import parse_sink

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
        self.stop_on = stop_on
        self._stop: Words | None = None  # why the loop should stop, once a verdict reached stop_on
        self.sinks: list[Sink] = [parse_sink(s, lang) if isinstance(s, str) else s for s in sinks]
        self.config, self.every, self.min_interval = config, every, min_interval
        self.run_name, self.lang, self.cooldown = run, lang, cooldown or Cooldown()
        self.state_path = Path(state_path) if state_path is not None else None
        self.err, self.clock = err, clock
        self.dropped = 0
        self._meta = SourceMeta(format="monitor", framework=framework)
        self._builder = RunBuilder(self._meta)
        self._queue: deque[_Item] = deque()
        self._queue_size = queue_size
        self._cond = threading.Condition()
        self._seq = self._done = 0
        self._force = self._closed = False
        self._lock = threading.Lock()  # guards everything below, read by the caller's threads
        self._errors: list[str] = []
        self._error_count = 0
        self._error_kinds: set[str] = set()
        self._diagnosis: Diagnosis | None = None
        self._alerts: list[Alert] = []
        self._derived: dict[int, dict[str, float]] = {}
        self._rollout_frames: dict[int, pl.DataFrame] = {}
        self._rollout_tables: dict[int, pl.DataFrame] = {}
        self._state: Any = None  # the alert state file, opened by the worker (sqlite3 connections are per thread)
        self._shown: Diagnosis | None = None  # the diagnosis whose alerts are being committed
        #: the alert path of ``rlvitals watch`` and ``serve`` (rlvitals.live): new findings wait until they hold
        self._alerting = Alerting(confirm or Confirm(), self.cooldown, commit=self._commit, say=self._say_alert,
                                  sinks=self.sinks, send=self._send)
        self._diagnosed_step = 0  # the first diagnosis comes at step `every`
        self._pace = Pace(floor=min_interval)  # and at most every min_interval seconds
        self._dirty = False
        self._last_step = 0
        self._thread = threading.Thread(target=self._work, name="rlvitals-monitor", daemon=True)
        self._thread.start()

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
            if self._closed:
                self._put("rollouts", step, rollouts)  # reported there, once
                return {}
            table = _rollout_table(step, rollouts)
            frame = step_frame(table)
        except Exception as exc:  # noqa: BLE001 (the training loop must go on whatever happens)
            why = _failure(exc, named=True)
            self._error(Words(f"rollouts of step {step!r} could not be analysed ({why}); training goes on",
                              f"第 {step!r} 步的 rollout 无法分析（{why.zh}）；训练继续"),
                        kind=f"derive {type(exc).__name__}")
            return {}
        self._put("analysed", step, (table, frame))
        return _derived(frame)

    def _put(self, kind: str, step: int, payload: Any) -> None:
        try:
            if self._closed:
                self._error(Words(f"{kind} for step {step} arrived after close(); they were ignored (reported once)",
                                  f"第 {step} 步的{_KIND_ZH.get(kind, kind)}在 close() 之后才到，已忽略（只报告一次）"),
                            kind="closed")
                return
            if kind == "metrics":
                payload = dict(payload)  # a copy: the caller may reuse its dict
            elif isinstance(payload, list):
                payload = list(payload)
            with self._cond:
                if len(self._queue) >= self._queue_size:
                    self._queue.popleft()
                    self.dropped += 1
                self._seq += 1
                self._queue.append(_Item(self._seq, kind, int(step), payload))
                self._cond.notify()
        except Exception as exc:  # noqa: BLE001 (the training loop must go on whatever happens)
            why = _failure(exc, named=True)
            self._error(Words(f"{kind} for step {step!r} could not be queued ({why})",
                              f"第 {step!r} 步的{_KIND_ZH.get(kind, kind)}无法放入队列（{why.zh}）"))

    def flush(self, timeout: float | None = 30.0) -> bool:
        """Wait until everything queued so far is processed and diagnosed; whether it was in time."""
        with self._cond:
            target = self._seq
            self._force = True
            self._cond.notify_all()
            return self._cond.wait_for(lambda: self._done >= target and not self._force or self._stopped(),
                                       timeout)

    def close(self, timeout: float | None = 60.0) -> None:
        """Process what is queued, diagnose a last time, send its alerts, stop the worker."""
        if self._closed:
            return
        self.flush(timeout)
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout)

    def __enter__(self) -> Monitor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- results, safe to read from any thread ----------------------------------------------

    def diagnosis(self) -> Diagnosis | None:
        """The latest diagnosis (None before the first)."""
        with self._lock:
            return self._diagnosis

    def findings(self) -> tuple[Finding, ...]:
        """The latest diagnosis's findings."""
        d = self.diagnosis()
        return d.findings if d is not None else ()

    def alerts(self) -> list[Alert]:
        """Every alert raised so far, oldest first."""
        with self._lock:
            return list(self._alerts)

    def errors(self) -> list[str]:
        """The first error of each kind caught so far (at most :data:`MAX_ERRORS`);
        :meth:`error_count` counts every one."""
        with self._lock:
            return list(self._errors)

    def error_count(self) -> int:
        with self._lock:
            return self._error_count

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
            with self._cond:
                target = self._seq
                self._cond.wait_for(lambda: self._done >= target or self._stopped(), timeout)
        with self._lock:
            return dict(self._derived.get(step, {}))

    def should_stop(self) -> bool:
        """Whether a diagnosis' verdict reached ``stop_on`` (never, without it); once true, stays true."""
        with self._lock:
            return self._stop is not None

    def stop_reason(self) -> Words | None:
        """Why :meth:`should_stop` is true: the verdict, its step and the worst findings' titles (English,
        with its Chinese: :func:`~rlvitals.words.in_lang` picks)."""
        with self._lock:
            return self._stop

    def say(self, line: str) -> None:
        """Write one line to ``err`` (an integration's news, such as stopping the training), in the
        Monitor's language when ``line`` is :class:`~rlvitals.words.Words`."""
        self._say(line)

    def _stopped(self) -> bool:
        return not self._thread.is_alive()

    # --- the worker ----------------------------------------------------------------------------

    def _work(self) -> None:
        state = self._state = self._open_state()
        try:
            while True:
                with self._cond:
                    self._cond.wait_for(lambda: bool(self._queue) or self._force or self._closed, 0.5)
                    batch = list(self._queue)
                    self._queue.clear()
                    force, closing = self._force, self._closed
                for item in batch:
                    what = Words(f"{item.kind} of step {item.step}",
                                 f"处理第 {item.step} 步的{_KIND_ZH.get(item.kind, item.kind)}")
                    self._guarded(what, self._process, item)
                    with self._cond:
                        self._done = item.seq
                        self._cond.notify_all()
                self._guarded(Words("the diagnosis", "诊断"), self._maybe_diagnose, force, closing)
                with self._cond:
                    if force:
                        self._force = False
                    self._cond.notify_all()
                    if closing and not self._queue:
                        return
        finally:
            if state is not None:
                state.close()

    def _open_state(self) -> Any:
        """The watcher's SQLite state, opened in this thread (sqlite3 connections are per thread)."""
        if self.state_path is None:
            return None
        from .state import WatchState

        try:
            state = WatchState(self.state_path)
            self._alerting.keys = state.keys()
            waiting = state.pending()
            for sink in self.sinks:
                for ids, alert in messages([(i, a) for i, a, pending in waiting if sink.name in pending], sink):
                    self._send(sink, ids, alert, state)
            return state
        except Exception as exc:  # noqa: BLE001
            why = _failure(exc)
            self._error(Words(f"{self.state_path}: the alert state could not be opened ({why}); alerts are kept "
                              "in memory only",
                              f"{self.state_path}：告警状态无法打开（{why.zh}）；告警只保存在内存里"))
            return None

    def _guarded(self, what: Words, fn: Callable[..., None], *args: Any) -> None:
        try:
            fn(*args)
        except Exception as exc:  # noqa: BLE001 (contained: counted, reported, never raised)
            why = _failure(exc, named=True)
            self._error(Words(f"{what} failed ({why}); training goes on", f"{what.zh}时出错（{why.zh}）；训练继续"),
                        kind=f"{what.split(' of ')[0]} {type(exc).__name__}")

    def report_error(self, message: str, kind: str | None = None) -> None:
        """Count and report an error found outside the worker (an integration's own problem); a
        :class:`~rlvitals.words.Words` message is printed in the Monitor's language."""
        self._error(message, kind)

    def _error(self, message: str, kind: str | None = None) -> None:
        """Count an error; the first of each ``kind`` (default: the message) is kept (as given: English
        for the Monitor's own, Chinese beside it) and printed in the Monitor's language, so a bad key
        logged at every step is one line, not one per step."""
        kind = kind or message
        with self._lock:
            self._error_count += 1
            first = kind not in self._error_kinds
            if first:
                self._error_kinds.add(kind)
                if len(self._errors) < MAX_ERRORS:
                    self._errors.append(message)
        if first:
            self._say(Words(f"rlvitals monitor: {message}", f"rlvitals：{in_lang(message, 'zh')}"))

    def _say(self, line: str) -> None:
        if self.err is None:
            return
        try:
            self.err.write(in_lang(line, self.lang) + "\n")
            self.err.flush()
        except (OSError, ValueError):
            pass  # a closed stream must not become an error in the training loop

    def _process(self, item: _Item) -> None:
        if item.kind == "metrics":
            values, bad = _values(item.payload)
            self._builder.add(Record(item.step, values, f"{self.run_name}:step {item.step}"))
            self._last_step = max(self._last_step, item.step)
            if bad:
                self._error(Words(f"step {item.step}: {', '.join(bad[:5])} not a number or text; those values "
                                  "were skipped (reported once per set of keys)",
                                  f"第 {item.step} 步：{'、'.join(bad[:5])} 既不是数字也不是文本；这些值已跳过"
                                  "（同一组键只报告一次）"), kind=f"values {bad}")
        elif item.kind == "analysed":
            self._add_rollouts(item.step, None, item.payload)
        else:
            self._add_rollouts(item.step, item.payload)
        self._dirty = True

    def _add_rollouts(self, step: int, rollouts: Any, analysed: Any = None) -> None:
        """Add a step's rollouts (``analysed``: the table and its frame, already computed by
        :meth:`derive`); a step's rollouts may come in several calls, and are then analysed together."""
        from .rollouts import step_frame

        table, frame = analysed if analysed is not None else (_rollout_table(step, rollouts), None)
        old = self._rollout_tables.get(step)
        if old is not None:
            table, frame = pl.concat([old, table], how="diagonal_relaxed"), None
        self._rollout_tables[step] = table
        for done in sorted(self._rollout_tables)[:-_OPEN_STEPS]:
            del self._rollout_tables[done]
        frame = step_frame(table) if frame is None else frame
        with self._lock:
            self._rollout_frames[step] = frame
            self._derived[step] = _derived(frame)

    def _due(self, force: bool) -> bool:
        if not self._dirty:
            return False
        if force:
            return True
        steps_ok = self._last_step - self._diagnosed_step >= self.every
        return steps_ok and self._pace.due(self.run_name, self.clock())

    def _build(self) -> Run | None:
        from .rollouts import join_series

        if self._builder.records == 0 and not self._rollout_frames:
            return None
        run = self._builder.finish(self.run_name)
        with self._lock:
            frames = [self._rollout_frames[s] for s in sorted(self._rollout_frames)]
        return join_series(run, frames, "rollouts logged to the monitor")

    def _maybe_diagnose(self, force: bool, closing: bool = False) -> None:
        if not self._due(force or closing):  # inside the guard: even the injected clock may fail
            if closing:
                self._release()
            return
        try:
            self._diagnose(closing)
        except Exception:
            self._dirty = True  # tried again with the next data or flush (at most every min_interval)
            raise

    def _diagnose(self, closing: bool = False) -> None:
        self._dirty = False
        now = self.clock()
        self._pace.spent(self.run_name, now, 0.0)
        run = self._build()
        if run is None:
            return
        d = self._shown = diagnose(run, self.config)
        step = self._diagnosed_step = read_to(run)
        # the loop ended: no later step can take back what waits, so it is alerted at its own level
        self._alerting.observe(self._alerting.look(run, d, at_once=closing), now, at_once=closing)
        if closing:
            self._alerting.restart()
        self._judge_stop(d, step)

    def _release(self) -> None:
        """At close with nothing new to diagnose: what waits in the last diagnosis is alerted now."""
        self._shown = self._diagnosis
        if self._shown is not None:
            self._alerting.release(self.clock())

    def _commit(self, changed: Mapping[str, KeyState], alerts: Sequence[Alert]) -> list[int]:
        """Keep the alerts, with the policy's changed keys in the state file when there is one: the diagnosis
        being decided and its alerts become visible together."""
        with self._lock:
            self._diagnosis = self._shown
            self._alerts.extend(alerts)
        if self._state is None:
            return [0] * len(alerts)
        return list(self._state.commit({}, changed, list(alerts), [s.name for s in self.sinks]))

    def _say_alert(self, alert: Alert) -> None:
        self._say(Words(f"rlvitals: {alert.text('en')}", f"rlvitals：{alert.text('zh')}"))

    def _judge_stop(self, d: Diagnosis, step: int) -> None:
        if self.stop_on is None or self._stop is not None:
            return
        reason = stop_reason(d, self._alerting.keys, self.stop_on, step)
        if reason is None:
            return
        with self._lock:
            self._stop = reason
        self._say(Words(f"rlvitals: stop requested: {reason}", f"rlvitals：请求停止训练：{reason.zh}"))

    def _send(self, sink: Sink, ids: list[int], alert: Alert, state: Any = None) -> None:
        """One message to one sink, in this thread; a failure is reported, struck off and not retried."""
        state = state if state is not None else self._state
        try:
            problem = sink.send(alert)
        except Exception as exc:  # noqa: BLE001 (a third-party sink may raise)
            who, why = sink.name or type(sink).__name__, _failure(exc, named=True)
            problem = Words(f"{who}: {why}", f"{who}：{why.zh}")
        if problem is not None:
            self._error(Words(f"alert not delivered: {problem}", f"告警未送达：{in_lang(problem, 'zh')}"),
                        kind=f"sink {sink.name} {problem[:40]}")
        if state is not None:
            for alert_id in ids:  # failed deliveries are not retried, as in watch
                state.delivered(alert_id, sink.name)


def _failure(exc: BaseException, named: bool = False) -> Words:
    """What went wrong, ``named`` with the exception's type: an rlvitals error's own Chinese, otherwise the
    exception's text in both languages (a library's message stays as it was)."""
    arg = exc.args[0] if len(exc.args) == 1 else None
    en, zh = str(exc), arg.zh if isinstance(arg, Words) else str(exc)
    if named:
        return Words(f"{type(exc).__name__}: {en}", f"{type(exc).__name__}: {zh}")
    return Words(en, zh)


def _derived(frame: pl.DataFrame) -> dict[str, float]:
    """A step's rollout metrics as ``rlvitals/<key>`` → value (those with a value)."""
    row = frame.row(0, named=True) if frame.height else {}
    return {PREFIX + k: float(v) for k, v in row.items()
            if k != "step" and isinstance(v, (int, float)) and not isinstance(v, bool)}


def _number(value: Any) -> Value | None:
    """A float (or text) from what a training loop logs: Python and NumPy numbers, 0-d arrays and
    tensors (via ``.item()``); None for anything else."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float, str)):
        return value if isinstance(value, str) else float(value)
    item = getattr(value, "item", None)
    if callable(item):
        try:
            got = item()
        except (ValueError, RuntimeError, TypeError):  # not a single value
            return None
        return _number(got) if isinstance(got, (int, float, bool)) else None
    return None


def _values(metrics: Mapping[str, Any]) -> tuple[dict[str, Value], list[str]]:
    values: dict[str, Value] = {}
    bad: list[str] = []
    for key, raw in metrics.items():
        if raw is None:
            continue  # TRL logs None for a mean with no valid value: nothing was measured
        got = _number(raw)
        if got is None:
            bad.append(f"{key}={type(raw).__name__}")
        else:
            values[str(key)] = got
    return values, bad


def _rollout_table(step: int, rollouts: Any) -> pl.DataFrame:
    """The rollout table of one step, from records or a frame; every row is put at ``step``."""
    from ..rollout.readers import RolloutSet, read_rollouts, rollouts_from_frame, rollouts_from_records

    if isinstance(rollouts, RolloutSet):
        rs = rollouts
    elif isinstance(rollouts, (str, Path)):
        rs = read_rollouts(rollouts)  # read here, in the worker: the training loop does not wait for it
    elif isinstance(rollouts, (list, tuple)):
        rs = rollouts_from_records([{**r, "step": step} if isinstance(r, Mapping) else r for r in rollouts])
    else:
        rs = rollouts_from_frame(rollouts)
    return rs.table.with_columns(pl.lit(step, dtype=pl.Int64).alias("step"))
