"""What ``rlvitals serve`` lists for a folder of a tracker's runs: the run list and its notes after two scans,
on a clock that moves a minute a call (each scan sees the files as settled)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def served(folder: Path, tmp_path: Path, sort: str = "updated") -> tuple[list[dict[str, Any]], list[str]]:
    """The run summaries and the notes of a workspace serving ``folder``; its state lives in ``tmp_path``."""
    from rlvitals.server.store import ServeState
    from rlvitals.server.workspace import Workspace

    now = [1000.0]

    def clock() -> float:
        now[0] += 60.0
        return now[0]

    ws = Workspace([folder], ServeState(tmp_path / "serve.sqlite"), clock=clock)
    try:
        ws.poll_once()
        ws.poll_once()
        return ws.summaries(sort=sort), ws.notes()
    finally:
        ws.close()
