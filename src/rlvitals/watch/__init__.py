"""``rlvitals watch``: follow growing training logs, re-diagnose them, alert once per finding.

Modules: :mod:`.sources` (a watched path as growing Runs), :mod:`.alerts` (the policy),
:mod:`.state` (SQLite memory across restarts), :mod:`.sinks` (JSONL, webhook, command),
:mod:`.view` (terminal), :mod:`.watcher` (the loop). The CLI imports this package only when
the ``watch`` command runs (it loads the checks).
"""

from __future__ import annotations

__all__ = ["Alert", "Cooldown", "WatchOptions", "Watcher", "decide", "open_watcher", "parse_sink"]

from .alerts import Alert, Cooldown, decide
from .sinks import parse_sink
from .watcher import Watcher, WatchOptions, open_watcher
