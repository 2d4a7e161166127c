"""``rlvitals watch`` and the in-process ``Monitor``: follow growing training logs (or a training loop),
re-diagnose them, alert once per finding.

Modules: :mod:`.alerts` (the policy), :mod:`.dispatch` (decide → commit → say → deliver, for both),
:mod:`.state` (SQLite memory across restarts), :mod:`.sinks` (JSONL, webhook, command), :mod:`.view`
(terminal), :mod:`.watcher` (the loop), :mod:`.monitor` (the in-process Monitor). The CLI imports this
package only when the ``watch`` command runs (it loads the checks).
"""


from __future__ import annotations

from .alerts import Alert, Cooldown, decide
from .confirm import Confirm
from .exports import WandbTarget
from .monitor import PREFIX, Monitor
from .sinks import JsonlSink, parse_sink
from .watcher import Watcher, WatchOptions, ignore_stop_signals, open_watcher, terminate_as_interrupt

__all__ = ["Alert", "Confirm", "Cooldown", "decide", "ignore_stop_signals", "JsonlSink", "Monitor", "open_watcher",
    "PREFIX", "parse_sink", "terminate_as_interrupt", "WandbTarget", "Watcher", "WatchOptions"]
