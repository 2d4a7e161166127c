"""A workspace's sources: each served log, with how far it has been read, and the rollout folders given for them."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import RlvitalsError
from ..run.follow import Follow, signature
from ..words import Words
from .quiet import Reading, Signature
from .stale import Freshness


@dataclass
class Source:
    """One served path (a log, or a folder a reader reads whole) and how far it has been read."""

    path: Path
    root: int
    follow: Follow
    dirty: bool = False
    error: str | None = None  # why it could not be read at the last poll (listed with the runs)
    fresh: Freshness | None = None  # whether its last good reading is still what the path holds
    runs: set[str] = field(default_factory=set)  # the ids of the runs read from it
    modified: float = 0.0  # its mtime (a folder's: its newest file's) when last read
    quiet: Signature | None = None  # held as its runs' facts only, read whole at this signature (:mod:`.quiet`)
    reading: Future[Reading] | None = None  # a whole read under way
    tried: bool = False  # a whole read was tried: from now on it is followed
    read: bool = False  # a reading of it has been published (counted by progress())


def inside(sources: dict[Path, Source], logs: Sequence[Path], root: int, roots: Sequence[Path]) -> list[Path]:
    """The sources of served root ``root`` that lie directly in a folder among ``logs`` read whole (a training
    folder, a Trainer output_dir: :mod:`.discover`): found while the folder was still a plain one (a tracker's
    store created a moment before the others, a console before the first checkpoint), their log is now read with
    that folder's. A served path itself stays.

    Example:
        >>> inside({}, [Path("out")], 0, [Path("runs")])
        []
    """
    folders = {log for log in logs if log.is_dir()}
    return [path for path, src in sources.items() if src.root == root and path.parent in folders and path not in roots]


def pair_rollouts(roots: Sequence[Path], rollouts: Path | tuple[Path | None, ...] | None) -> list[Path | None]:
    """One rollout folder (or None) per served root, in their order."""
    if rollouts is None:
        return [None] * len(roots)
    fix = Words("give --rollouts once per PATH, in the order of the paths ('-' for a path without rollouts)",
                "请每个 PATH 给一次 --rollouts，按路径的顺序（没有 rollout 的路径给 '-'）")
    if isinstance(rollouts, tuple):
        if len(rollouts) != len(roots):
            raise RlvitalsError(Words(f"serve: {len(roots)} paths but {len(rollouts)} rollout folders; {fix}",
                                      f"serve：{len(roots)} 个路径，却有 {len(rollouts)} 个 rollout 文件夹；{fix.zh}"))
        return [Path(r) if r is not None else None for r in rollouts]
    if len(roots) > 1:
        raise RlvitalsError(Words(f"serve: one rollout folder for {len(roots)} paths would join the same rollouts to "
                                  f"every run; {fix}",
                                  f"serve：{len(roots)} 个路径只给一个 rollout 文件夹，会把同一批 rollout 关联到"
                                  f"每个运行；{fix.zh}"))
    return [Path(rollouts)]


def signature_now(path: Path) -> Signature | None:
    """``path``'s signature now; None when it cannot be looked at."""
    try:
        return signature(path)
    except OSError:
        return None


def result_of(reading: Future[Reading]) -> Reading | None:
    """What a whole read gave; None when its worker failed (the log is then followed, and says why)."""
    try:
        return reading.result()
    except Exception:  # noqa: BLE001 - a worker that died (out of memory, killed) must not stop the others
        return None


__all__ = ["Source", "inside", "pair_rollouts", "result_of", "signature_now"]
