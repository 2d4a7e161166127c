"""A followed text log whose last line has no newline, and has stayed so: a finished file cut short.

A trainer writes a line and its newline together, so a text log is followed by complete lines only: a last
line without its newline may be half written. When the file then stays unchanged for ``settle`` seconds, it
is not being written any more (a run killed mid-print, a log copied without its last newline), and the last
line is as complete as it will be: the log is read whole once, as ``load()`` reads it, for that look only —
the follower's cursor stays before the line, so a trainer that writes on after all (its newline, the next
line) is read as before. ``rlvitals watch`` and ``rlvitals serve`` both use it, so neither shows a run one
step short of what ``rlvitals diagnose`` reads.

>>> tails = Unterminated(settle=10.0)
>>> tails.due(follow, now=100.0)  # doctest: +SKIP
False
"""

from __future__ import annotations

from pathlib import Path

from .follow import Follow, LineSource

__all__ = ["Unterminated"]


class Unterminated:
    """Which followed text logs are due to be read whole now: quiet for ``settle`` seconds with bytes after their
    last complete line, once per state of the file."""

    def __init__(self, settle: float) -> None:
        self.settle = settle
        #: path -> the file's (size, mtime) at the last look, and since when it has been so
        self._seen: dict[Path, tuple[tuple[int, int], float]] = {}
        #: path -> the file's (size, mtime) when it was last read whole
        self._read: dict[Path, tuple[int, int]] = {}

    def due(self, follow: Follow, now: float) -> bool:
        """Whether ``follow``'s log should be read whole at this look (it is then marked as read)."""
        inner = follow.inner
        if not isinstance(inner, LineSource):
            return False
        try:
            st = follow.path.stat()
        except OSError:
            return False
        sig = (st.st_size, st.st_mtime_ns)
        seen = self._seen.get(follow.path)
        if seen is None or seen[0] != sig:
            self._seen[follow.path] = (sig, now)
            return False
        if st.st_size <= inner.cursor.offset or now - seen[1] < self.settle or self._read.get(follow.path) == sig:
            return False
        self._read[follow.path] = sig
        return True
