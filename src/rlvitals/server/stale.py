"""Whether a served run's last good reading is still what its log holds.

A followed log keeps the runs it was last read as when a newer reading fails, so the dashboard does not go
blank while a trainer rewrites a file. But the log may be gone for good: deleted or moved away, emptied,
or rewritten into something that is no training log (a text log that rotated into a file holding no step
since). Then the run shown is stale, and :class:`Freshness` says why, so the run list and the run's page
say it on that run (``error``, ``stale``), beside the last good reading.
"""

from __future__ import annotations

import stat
from pathlib import Path

from ..errors import InputError, UnknownFormatError
from ..ingest import find_reader
from ..run.follow import Follow, LineSource
from ..words import Words


def gone(path: Path) -> Words:
    return Words(f"{path}: the log is gone (deleted or moved away)", f"{path}：日志不见了（被删除或移走）")


def emptied(path: Path) -> Words:
    return Words(f"{path}: the log is empty now (truncated, or rewritten)", f"{path}：日志现在是空的（被截断或重写）")


def no_metrics(path: Path) -> Words:
    return Words(f"{path}: the log holds no metrics now (its files were emptied, deleted or rewritten)",
                 f"{path}：日志里现在没有指标（其文件被清空、删除或重写）")


def left_out(run: str, path: Path) -> Words:
    return Words(f"{run}: no longer in {path} (its files were deleted, or hold no metrics now)",
                 f"{run}：已不在 {path} 中（其文件被删除，或现在没有指标）")


class Freshness:
    """Looks at a served log's path after each poll (see the module docstring); the sniff of a text log
    that gave no step since it was replaced is redone only when the file changes."""

    def __init__(self, path: Path, fmt: str | None) -> None:
        self.path = path
        self.fmt = fmt
        self._sniffed: tuple[tuple[int, int], Words | None] | None = None

    def look(self, follow: Follow) -> Words | None:
        """Why the last reading of a log that was read before is stale; None when it is not."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return gone(self.path)
        except OSError as exc:
            return Words(f"{self.path}: cannot be looked at ({exc.strerror or exc})",
                         f"{self.path}：无法查看（{exc.strerror or exc}）")
        if stat.S_ISREG(st.st_mode) and st.st_size == 0:
            return emptied(self.path)
        inner = follow.inner
        if isinstance(inner, LineSource) and inner.cursor.offset == 0 and inner.progress[0] > 0:
            return self._replaced((st.st_size, st.st_mtime_ns))
        return None

    def _replaced(self, seen: tuple[int, int]) -> Words | None:
        """A text log replaced (rewritten, truncated, rotated) by a file that gave no step yet: stale, and what
        it holds now, when that is no training log."""
        if self._sniffed is not None and self._sniffed[0] == seen:
            return self._sniffed[1]
        said: Words | None
        try:
            find_reader(self.path, self.fmt)
            said = Words(f"{self.path}: the log was replaced and gives no step yet (rewritten, truncated or "
                         "rotated)", f"{self.path}：日志被替换了，还没有读到任何一步（被重写、截断或轮转）")
        except UnknownFormatError:
            said = Words(f"{self.path}: the log was replaced by a file that is no training log rlvitals can read",
                         f"{self.path}：日志被替换成了一个 rlvitals 读不了的文件，它不是训练日志")
        except InputError as exc:
            said = Words(f"{self.path}: the log was replaced by a file that cannot be read ({exc})",
                         f"{self.path}：日志被替换成了一个读不了的文件（{exc.text('zh')}）")
        except OSError as exc:
            said = gone(self.path) if isinstance(exc, FileNotFoundError) else None
        self._sniffed = (seen, said)
        return said


__all__ = ["Freshness", "emptied", "gone", "left_out", "no_metrics"]
