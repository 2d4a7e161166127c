"""Alert dispatch, the one way `watch` and the in-process `Monitor` turn findings into alerts.

Four steps, always in this order: **decide** (the alert policy compares what was observed with what
it remembers, :func:`.alerts.decide`), **commit** (the new policy state and the alerts, each with the
sinks it has not reached yet, are stored before anything is sent, so a process killed at any point
neither forgets an alert nor raises it twice), **say** (one line per event on the console) and
**deliver** (each sink gets the alerts, grouped into one message per event for a sink a person
reads, one by one otherwise). Where the alerts are stored, how a line is said and how one message
reaches a sink are the caller's: a watcher stores its cursors in the same transaction and hands
slow sinks to their own threads; the monitor may run without a state file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from .alerts import Alert, Cooldown, KeyState, Observation, changed_keys, decide, grouped

__all__ = ["Commit", "Send", "Sink", "dispatch", "messages"]


class Sink(Protocol):
    """Where alerts go (:mod:`rlvitals.watch.sinks`): ``send`` returns an error message, or None."""

    name: str

    def send(self, alert: Alert) -> str | None: ...

#: store the policy keys that changed and the alerts (with their pending sinks); returns one id per alert
Commit = Callable[[Mapping[str, KeyState], Sequence[Alert]], list[int]]
#: deliver one message (the ids of the alerts it carries, and the alert that says them) to a sink
Send = Callable[[Sink, list[int], Alert], None]


def messages(pairs: Sequence[tuple[int, Alert]], sink: Sink) -> list[tuple[list[int], Alert]]:
    """What ``sink`` is sent for ``(alert id, alert)`` pairs: one message per event (the same run,
    check, kind and step) when a person reads it (``sink.grouped``), else one per alert.

    Example:
        >>> from rlvitals.watch.sinks import JsonlSink
        >>> messages([], JsonlSink(__import__("pathlib").Path("alerts.jsonl")))
        []
    """
    if getattr(sink, "grouped", False):
        return grouped(pairs)
    return [([alert_id], alert) for alert_id, alert in pairs]


def dispatch(keys: Mapping[str, KeyState], observed: Sequence[Observation], now: float, cooldown: Cooldown, *,
             commit: Commit, say: Callable[[Alert], None], sinks: Sequence[Sink],
             send: Send, quiet: Mapping[str, int] | None = None) -> tuple[list[Alert], dict[str, KeyState]]:
    """Decide → commit → say → deliver; returns the alerts raised and the policy's new memory. ``quiet``: runs
    not observed now, with their last steps, whose cleared findings may be due to be said cleared."""
    alerts, after = decide(keys, observed, now, cooldown, quiet)
    ids = commit(changed_keys(keys, after), alerts)
    pairs = list(zip(ids, alerts, strict=True))
    for _, alert in grouped(pairs):
        say(alert)
    for sink in sinks:
        for carried, alert in messages(pairs, sink):
            send(sink, carried, alert)
    return alerts, after
