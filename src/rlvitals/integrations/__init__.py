"""Hooks into training frameworks. Each module imports its framework when it is imported
itself, never when ``rlvitals`` is: ``from rlvitals.integrations.trl import RlvitalsCallback``.

veRL and OpenRLHF need no code: ``rlvitals watch`` follows the files they write
(see ``docs/integrations.md``).
"""

from __future__ import annotations
