"""The Monitor's two halves' meeting points and its worker thread.

:class:`Inbox` is the bounded queue the training loop puts onto and the worker takes from; :class:`Ledger` is
what the worker found (the diagnosis, its alerts, the errors, the derived metrics, a stop), read from any thread;
:class:`Worker` is the thread: it adds what was logged to a :class:`~rlvitals.run.builder.RunBuilder`, analyses
each step's rollouts, diagnoses at the pace the options allow and hands the findings to the alert path of
``rlvitals watch`` (:class:`~rlvitals.live.alerting.Alerting`). Everything it does is guarded: an exception is
counted and reported in the :class:`Ledger`, never raised into the training loop.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import polars as pl

from ..diagnosis import Diagnosis, diagnose
from ..ingest.record import Record, SourceMeta, Value
from ..live.alerting import Alerting, read_to
from ..live.alerts import Alert, KeyState
from ..live.dispatch import messages
from ..live.pace import Pace
from ..live.stopping import stop_reason
from ..rollout import ProbeResults, read_probe_results, with_probe_results
from ..run.builder import RunBuilder
from ..run.run import Run
from ..words import Words, in_lang
from .sinks import Sink

if TYPE_CHECKING:
    from .monitor import MonitorOptions

__all__ = ["PREFIX", "Inbox", "Ledger", "Worker", "derived_values", "failure", "kind_zh", "rollout_table"]

#: derived metrics are written back under this prefix, as ``rlvitals export`` names them
PREFIX = "rlvitals/"
#: how many error lines are kept verbatim (all are counted)
MAX_ERRORS = 50
#: rollout tables kept open for steps whose rollouts arrive in several calls
_OPEN_STEPS = 4
#: what the queued items are, in the Chinese of the error lines (the English names the item's kind); the
#: spaces set a Latin word apart from the Chinese around it
_KIND_ZH = {"metrics": "指标", "rollouts": " rollout ", "analysed": " rollout 及其分析", "probes": "探针结果"}


def kind_zh(kind: str) -> str:
    """A queued item's kind in the Chinese of the error lines."""
    return _KIND_ZH.get(kind, kind)


@dataclass(frozen=True)
class Item:
    seq: int
    kind: str  # "metrics" | "rollouts" | "analysed" (rollouts with their analysis, from Monitor.derive()) | "probes"
    step: int
    payload: Any


class Inbox:
    """The bounded queue between the training loop and the worker: putting never blocks (the oldest item
    is dropped and counted when full); the caller can wait until what it put was processed."""

    def __init__(self, size: int) -> None:
        self.size, self.dropped = size, 0
        self.cond = threading.Condition()
        self._queue: deque[Item] = deque()
        self.seq = self.done = 0
        self.force = self.closed = False

    def put(self, kind: str, step: int, payload: Any) -> None:
        with self.cond:
            if len(self._queue) >= self.size:
                self._queue.popleft()
                self.dropped += 1
            self.seq += 1
            self._queue.append(Item(self.seq, kind, int(step), payload))
            self.cond.notify()

    def take(self) -> tuple[list[Item], bool, bool]:
        """What waits (after at most half a second), and whether a flush and a close were asked."""
        with self.cond:
            self.cond.wait_for(lambda: bool(self._queue) or self.force or self.closed, 0.5)
            batch = list(self._queue)
            self._queue.clear()
            return batch, self.force, self.closed

    def processed(self, seq: int) -> None:
        with self.cond:
            self.done = seq
            self.cond.notify_all()

    def flushed(self, force: bool, closing: bool) -> bool:
        """A look ended (a flush it served is done); whether the worker should stop."""
        with self.cond:
            if force:
                self.force = False
            self.cond.notify_all()
            return closing and not self._queue

    def wait(self, stopped: Callable[[], bool], timeout: float | None, flush: bool) -> bool:
        """Wait until everything put so far was processed (``flush``: and diagnosed); whether it was in time."""
        with self.cond:
            target = self.seq
            if flush:
                self.force = True
                self.cond.notify_all()
            return self.cond.wait_for(lambda: self.done >= target and not (flush and self.force) or stopped(),
                                      timeout)

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify_all()


class Ledger:
    """What the worker found, safe to read from any thread, and the one place errors are counted and said."""

    def __init__(self, lang: str, err: IO[str] | None) -> None:
        self.lang, self.err = lang, err
        self.lock = threading.Lock()
        self.errors: list[str] = []
        self.error_count = 0
        self._error_kinds: set[str] = set()
        self.diagnosis: Diagnosis | None = None
        self.alerts: list[Alert] = []
        self.derived: dict[int, dict[str, float]] = {}
        self.stop: Words | None = None  # why the loop should stop, once a verdict reached stop_on

    def error(self, message: str, kind: str | None = None) -> None:
        """Count an error; the first of each ``kind`` (default: the message) is kept (as given: English
        for the Monitor's own, Chinese beside it) and said in the Monitor's language, so a bad key
        logged at every step is one line, not one per step."""
        kind = kind or message
        with self.lock:
            self.error_count += 1
            first = kind not in self._error_kinds
            if first:
                self._error_kinds.add(kind)
                if len(self.errors) < MAX_ERRORS:
                    self.errors.append(message)
        if first:
            self.say(Words(f"rlvitals monitor: {message}", f"rlvitals：{in_lang(message, 'zh')}"))

    def say(self, line: str) -> None:
        if self.err is None:
            return
        try:
            self.err.write(in_lang(line, self.lang) + "\n")
            self.err.flush()
        except (OSError, ValueError):
            pass  # a closed stream must not become an error in the training loop


class Worker:
    """The Monitor's thread (see the module); ``clock`` is the Monitor's injected wall time."""

    def __init__(self, options: MonitorOptions, sinks: Sequence[Sink], inbox: Inbox, ledger: Ledger,
                 clock: Callable[[], float]) -> None:
        self.options, self.sinks, self.inbox, self.ledger, self.clock = options, sinks, inbox, ledger, clock
        self.builder = RunBuilder(SourceMeta(format="monitor", framework=options.framework,
                                             algorithm=options.algorithm))
        self._rollout_tables: dict[int, pl.DataFrame] = {}
        self._rollout_frames: dict[int, pl.DataFrame] = {}
        self._probed: ProbeResults | None = None  # a probe results file, read again each time it is queued
        self._state: Any = None  # the alert state file, opened in this thread (sqlite3 connections are per thread)
        self._shown: Diagnosis | None = None  # the diagnosis whose alerts are being committed
        #: the alert path of ``rlvitals watch`` and ``serve`` (rlvitals.live): new findings wait until they hold
        self.alerting = Alerting(options.confirm, options.cooldown, commit=self._commit, say=self._say_alert,
                                 sinks=sinks, send=self._send)
        self._diagnosed_step = 0  # the first diagnosis comes at step `every`
        self._pace = Pace(floor=options.min_interval)  # and at most every min_interval seconds
        self._dirty = False
        self._last_step = 0
        self.thread = threading.Thread(target=self._work, name="rlvitals-monitor", daemon=True)

    def stopped(self) -> bool:
        return not self.thread.is_alive()

    def _work(self) -> None:
        state = self._state = self._open_state()
        try:
            while True:
                batch, force, closing = self.inbox.take()
                for item in batch:
                    what = Words(f"{item.kind} of step {item.step}", f"处理第 {item.step} 步的{kind_zh(item.kind)}")
                    self._guarded(what, self._process, item)
                    self.inbox.processed(item.seq)
                self._guarded(Words("the diagnosis", "诊断"), self._maybe_diagnose, force, closing)
                if self.inbox.flushed(force, closing):
                    return
        finally:
            if state is not None:
                state.close()

    def _open_state(self) -> Any:
        """The watcher's SQLite state, opened in this thread (sqlite3 connections are per thread)."""
        path = self.options.state_path
        if path is None:
            return None
        from .state import WatchState

        try:
            state = WatchState(path)
            self.alerting.keys = state.keys()
            waiting = state.pending()
            for sink in self.sinks:
                for ids, alert in messages([(i, a) for i, a, pending in waiting if sink.name in pending], sink):
                    self._send(sink, ids, alert, state)
            return state
        except Exception as exc:  # noqa: BLE001
            why = failure(exc)
            self.ledger.error(Words(f"{path}: the alert state could not be opened ({why}); alerts are kept "
                                    "in memory only",
                                    f"{path}：告警状态无法打开（{why.zh}）；告警只保存在内存里"))
            return None

    def _guarded(self, what: Words, fn: Callable[..., None], *args: Any) -> None:
        try:
            fn(*args)
        except Exception as exc:  # noqa: BLE001 (contained: counted, reported, never raised)
            why = failure(exc, named=True)
            self.ledger.error(Words(f"{what} failed ({why}); training goes on",
                                    f"{what.zh}时出错（{why.zh}）；训练继续"),
                              kind=f"{what.split(' of ')[0]} {type(exc).__name__}")

    def _process(self, item: Item) -> None:
        if item.kind == "metrics":
            values, bad = _values(item.payload)
            self.builder.add(Record(item.step, values, f"{self.options.run}:step {item.step}"))
            self._last_step = max(self._last_step, item.step)
            if bad:
                self.ledger.error(Words(f"step {item.step}: {', '.join(bad[:5])} not a number or text; those values "
                                        "were skipped (reported once per set of keys)",
                                        f"第 {item.step} 步：{'、'.join(bad[:5])} 既不是数字也不是文本；这些值已跳过"
                                        "（同一组键只报告一次）"), kind=f"values {bad}")
        elif item.kind == "analysed":
            self._add_rollouts(item.step, None, item.payload)
        elif item.kind == "probes":
            self._probed = read_probe_results(item.payload)
            for reason in self._probed.skips.reasons:
                self.ledger.error(reason, kind=f"probes {reason[:40]}")
        else:
            self._add_rollouts(item.step, item.payload)
        self._dirty = True

    def _add_rollouts(self, step: int, rollouts: Any, analysed: Any = None) -> None:
        """Add a step's rollouts (``analysed``: the table and its frame, already computed by
        ``Monitor.derive``); a step's rollouts may come in several calls, and are then analysed together."""
        from .rollouts import step_frame

        table, frame = analysed if analysed is not None else (rollout_table(step, rollouts), None)
        old = self._rollout_tables.get(step)
        if old is not None:
            table, frame = pl.concat([old, table], how="diagonal_relaxed"), None
        self._rollout_tables[step] = table
        for done in sorted(self._rollout_tables)[:-_OPEN_STEPS]:
            del self._rollout_tables[done]
        frame = step_frame(table) if frame is None else frame
        with self.ledger.lock:
            self._rollout_frames[step] = frame
            self.ledger.derived[step] = derived_values(frame)

    def _due(self, force: bool) -> bool:
        if not self._dirty:
            return False
        if force:
            return True
        steps_ok = self._last_step - self._diagnosed_step >= self.options.every
        return steps_ok and self._pace.due(self.options.run, self.clock())

    def _build(self) -> Run | None:
        from .rollouts import join_series

        if self.builder.records == 0 and not self._rollout_frames:
            return None
        run = self.builder.finish(self.options.run)
        with self.ledger.lock:
            frames = [self._rollout_frames[s] for s in sorted(self._rollout_frames)]
        if self._probed is not None:  # joined by step as every reader of rollouts joins a probe file
            whole = pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame(schema={"step": pl.Int64})
            frames = [with_probe_results(whole, self._probed)]
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
        self._pace.spent(self.options.run, now, 0.0)
        run = self._build()
        if run is None:
            return
        d = self._shown = diagnose(run, self.options.config)
        step = self._diagnosed_step = read_to(run)
        # the loop ended: no later step can take back what waits, so it is alerted at its own level
        self.alerting.observe(self.alerting.look(run, d, at_once=closing), now, at_once=closing)
        if closing:
            self.alerting.restart()
        self._judge_stop(d, step)

    def _release(self) -> None:
        """At close with nothing new to diagnose: what waits in the last diagnosis is alerted now."""
        self._shown = self.ledger.diagnosis
        if self._shown is not None:
            self.alerting.release(self.clock())

    def _commit(self, changed: Mapping[str, KeyState], alerts: Sequence[Alert]) -> list[int]:
        """Keep the alerts, with the policy's changed keys in the state file when there is one: the diagnosis
        being decided and its alerts become visible together."""
        with self.ledger.lock:
            self.ledger.diagnosis = self._shown
            self.ledger.alerts.extend(alerts)
        if self._state is None:
            return [0] * len(alerts)
        return list(self._state.commit({}, changed, list(alerts), [s.name for s in self.sinks]))

    def _say_alert(self, alert: Alert) -> None:
        self.ledger.say(Words(f"rlvitals: {alert.text('en')}", f"rlvitals：{alert.text('zh')}"))

    def _judge_stop(self, d: Diagnosis, step: int) -> None:
        stop_on = self.options.stop_on
        if stop_on is None or self.ledger.stop is not None:
            return
        reason = stop_reason(d, self.alerting.keys, stop_on, step)
        if reason is None:
            return
        with self.ledger.lock:
            self.ledger.stop = reason
        self.ledger.say(Words(f"rlvitals: stop requested: {reason}", f"rlvitals：请求停止训练：{reason.zh}"))

    def _send(self, sink: Sink, ids: list[int], alert: Alert, state: Any = None) -> None:
        """One message to one sink, in this thread; a failure is reported, struck off and not retried."""
        state = state if state is not None else self._state
        try:
            problem = sink.send(alert)
        except Exception as exc:  # noqa: BLE001 (a third-party sink may raise)
            who, why = sink.name or type(sink).__name__, failure(exc, named=True)
            problem = Words(f"{who}: {why}", f"{who}：{why.zh}")
        if problem is not None:
            self.ledger.error(Words(f"alert not delivered: {problem}", f"告警未送达：{in_lang(problem, 'zh')}"),
                              kind=f"sink {sink.name} {problem[:40]}")
        if state is not None:
            for alert_id in ids:  # failed deliveries are not retried, as in watch
                state.delivered(alert_id, sink.name)


def failure(exc: BaseException, named: bool = False) -> Words:
    """What went wrong, ``named`` with the exception's type: an rlvitals error's own Chinese, otherwise the
    exception's text in both languages (a library's message stays as it was)."""
    arg = exc.args[0] if len(exc.args) == 1 else None
    en, zh = str(exc), arg.zh if isinstance(arg, Words) else str(exc)
    if named:
        return Words(f"{type(exc).__name__}: {en}", f"{type(exc).__name__}: {zh}")
    return Words(en, zh)


def derived_values(frame: pl.DataFrame) -> dict[str, float]:
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


def rollout_table(step: int, rollouts: Any) -> pl.DataFrame:
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
