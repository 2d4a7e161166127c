"""The diagnosis as a careful colleague tells it: the root cause first, what followed under it, then the
independent problems (docs/diagnosis.md).

``links.toml`` holds the facts (which check's finding can explain which, and why: the symptom table and the
mechanisms of docs/reading-rules.md#links); :func:`tell` reads the findings' onsets against them.
"""

from __future__ import annotations

from .links import Link, Links, load_links, parse_links
from .timeline import Event, Scale, Story, Told, tell

__all__ = ["Event", "Link", "Links", "Scale", "Story", "Told", "load_links", "parse_links", "tell"]
