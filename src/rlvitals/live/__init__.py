"""The live path every live reader shares — ``rlvitals watch``, ``rlvitals serve`` and the in-process ``Monitor``.

Modules: :mod:`.pace` (how often a growing run is diagnosed), :mod:`.estimates` (runs whose steps are an
estimate, held until stable), :mod:`.confirm` (a new finding waits until it has held), :mod:`.alerts` (the
policy: one alert per root cause and onset, escalated, cleared), :mod:`.causes` (the root cause an alert
names), :mod:`.dispatch` (decide → commit → say → deliver), :mod:`.alerting` (all of it, one object per
reader), :mod:`.stopping` (when a loop is told to stop). Nothing here reads a file or sends a message: the
readers bring the diagnoses, the sinks and where the alerts are stored.
"""

from __future__ import annotations

from .alerting import Alerting, read_to
from .alerts import Alert, Cooldown, KeyState, Observation, alert_key, decide, finding_key, upgraded
from .confirm import Confirm, Confirmations
from .dispatch import Sink, messages
from .pace import Pace
from .stopping import stop_reason

__all__ = ["Alert", "Alerting", "alert_key", "Confirm", "Confirmations", "Cooldown", "decide", "finding_key",
           "KeyState", "messages", "Observation", "Pace", "read_to", "Sink", "stop_reason", "upgraded"]
