"""Delivering alerts through a slow sink (a webhook, a command) from a worker thread.

A receiver that never answers (a blackholed URL, a hung hook) would otherwise hold the watch
loop for the sink's timeout on every alert. :class:`Outbox` puts the alerts on a bounded
queue that one daemon thread per sink works through; the watcher collects the results
(:meth:`Outbox.results`) at each cycle, in its own thread, and strikes the delivered alerts
off in its state file. An alert still queued or in flight when the watcher stops stays
pending there and is sent by the next watcher; :meth:`Outbox.close` waits a bounded time and
says how many that is. A full queue drops the alert from this run's sending (it too stays
pending in the state file) and says so.

>>> box = Outbox(sink)          # doctest: +SKIP
>>> box.put(7, alert)           # doctest: +SKIP
>>> box.results()               # doctest: +SKIP
[(7, None)]
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Sequence

from ..live.alerts import Alert
from ..words import Words
from .sinks import Sink

__all__ = ["QUEUE", "Outbox"]

#: alerts waiting for one sink at most (a watcher raises a few per finding, not per step)
QUEUE = 1000


class Outbox:
    """One sink's queue and worker thread; ``name`` is the sink's."""

    def __init__(self, sink: Sink, size: int = QUEUE) -> None:
        self.sink = sink
        self.name = sink.name
        self.size = size
        self._queue: deque[tuple[list[int], Alert]] = deque()
        self._done: list[tuple[list[int], str | None]] = []
        self._busy = 0  # queued or in flight
        self._closed = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._work, name=f"rlvitals-sink {sink.name}", daemon=True)
        self._thread.start()

    def put(self, alert_id: int | Sequence[int], alert: Alert) -> str | None:
        """Queue the alert (of several ids when it combines several: :func:`rlvitals.live.alerts.combine`); an
        error message (and nothing queued) if the queue is full."""
        ids = [alert_id] if isinstance(alert_id, int) else list(alert_id)
        with self._cond:
            if len(self._queue) >= self.size:
                return Words(f"{self.name}: {self.size} alerts are waiting for this sink already; this one was "
                             "not queued (it stays pending in the state file and the next watcher sends it)",
                             f"{self.name}：已有 {self.size} 条告警在等这个告警目标；这一条没有排进队列"
                             "（它留在状态文件里，由下一个 watch 发送）")
            self._queue.append((ids, alert))
            self._busy += 1
            self._cond.notify_all()
        return None

    def results(self) -> list[tuple[int, str | None]]:
        """(alert id, error or None) of every delivery finished since the last call."""
        return [(alert_id, error) for ids, error in self.deliveries() for alert_id in ids]

    def deliveries(self) -> list[tuple[list[int], str | None]]:
        """(alert ids, error or None) of every delivery finished since the last call: one entry per
        message sent, which may carry several alerts (:func:`rlvitals.live.alerts.combine`)."""
        with self._cond:
            done, self._done = self._done, []
        return done

    def wait(self, timeout: float) -> bool:
        """Wait until nothing is queued or in flight; whether that happened within ``timeout``."""
        with self._cond:
            return self._cond.wait_for(lambda: self._busy == 0, timeout)

    def close(self, timeout: float) -> int:
        """Stop after what is queued, waiting ``timeout`` seconds at most; how many alerts were not
        delivered (still queued or in flight)."""
        self.wait(timeout)
        with self._cond:
            self._closed = True
            left = self._busy
            self._queue.clear()
            self._cond.notify_all()
        return left

    def _work(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._queue) or self._closed)
                if not self._queue:
                    return
                ids, alert = self._queue.popleft()
            try:
                error = self.sink.send(alert)
            except Exception as exc:  # noqa: BLE001 (a third-party sink may raise; the thread must go on)
                error = f"{self.name}: {type(exc).__name__}: {exc}"
            with self._cond:
                if not self._closed:  # a watcher that gave up on it keeps the alert pending
                    self._done.append((ids, error))
                self._busy -= 1
                self._cond.notify_all()
