"""``rlvitals watch`` and the in-process ``Monitor``: follow growing training logs (or a training loop),
re-diagnose them, alert once per finding.

Modules: :mod:`.watcher` (the loop over log files), :mod:`.monitor` (the in-process Monitor), :mod:`.state`
(SQLite memory across restarts), :mod:`.sinks` (JSONL, webhook, command), :mod:`.view` (terminal). Both hand
their diagnoses to the live path they share with ``rlvitals serve`` (:mod:`rlvitals.live`: pace, confirm,
decide → commit → say → deliver). The CLI imports this package only when the ``watch`` command runs (it loads
the checks).
"""


from __future__ import annotations

from ..live import Alert, Confirm, Cooldown, decide
from .exports import WandbTarget
from .monitor import PREFIX, Monitor, MonitorOptions
from .sinks import JsonlSink, parse_sink
from .watcher import Watcher, WatchOptions, ignore_stop_signals, open_watcher, terminate_as_interrupt

__all__ = ["Alert", "Confirm", "Cooldown", "decide", "ignore_stop_signals", "JsonlSink", "Monitor", "MonitorOptions",
    "open_watcher", "PREFIX", "parse_sink", "terminate_as_interrupt", "WandbTarget", "Watcher", "WatchOptions"]
