"""The alerts ``rlvitals watch --alert jsonl:FILE`` wrote into a served folder, by run: what a run's page shows.

A watcher and a dashboard on the same folder tell one story: the run page lists the alerts of its run —
raised, escalated, raised again and **cleared** (a finding the diagnosis stopped holding) — from the alert
files the folder holds (files beginning ``{"alert_id":``, the JSONL sink's lines; the scan finds them and
serves them as no run). Each line names its run by the path the watcher was given; it is matched to a
served run by real path (a relative one against the alert file's folder, then the server's working folder).

Bounded: the last ``MAX_BYTES`` of a file are read, again only when its size or time changed; a line that is
not an alert is skipped and counted; an alert delivered twice (a watcher restarted mid-delivery says it
again, with the same ``alert_id``) is shown once.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..ingest import real_path

__all__ = ["AlertFiles", "Said", "said_of"]

#: how much of the end of one alert file is read
MAX_BYTES = 4 << 20


@dataclass(frozen=True)
class Said:
    """One alert as its page lists it."""

    alert_id: str
    kind: str  # new, escalated, again, cleared
    status: str  # warn or fail; ok for a cleared one
    previous: str | None
    check: str
    step: int
    onset: int | None
    title: Mapping[str, str]
    at: float


class AlertFiles:
    """The alert files of the served folders, read as they change; their alerts by run (real path)."""

    def __init__(self) -> None:
        self._sig: dict[Path, tuple[int, int]] = {}
        self._of: dict[Path, dict[str, list[Said]]] = {}
        #: lines passed over (not an alert) in the last reading of each file
        self.skipped: dict[Path, int] = {}

    def update(self, files: Iterable[Path]) -> set[str]:
        """Read the files of ``files`` that changed (and forget those gone); the runs whose alerts changed."""
        changed: set[str] = set()
        files = set(files)
        for gone in set(self._sig) - files:
            changed |= set(self._of.pop(gone, {}))
            del self._sig[gone]
        for path in files:
            try:
                st = path.stat()
            except OSError:
                continue
            sig = (st.st_size, st.st_mtime_ns)
            if self._sig.get(path) == sig:
                continue
            self._sig[path] = sig
            before = self._of.get(path, {})
            self._of[path] = self._read(path, st.st_size)
            changed |= {run for run in set(before) | set(self._of[path]) if before.get(run) != self._of[path].get(run)}
        return changed

    def of(self, run: str) -> list[Said]:
        """The alerts of the run at path ``run`` (its real path), in the order they were said, each once."""
        key = str(real_path(Path(run)))
        seen: dict[str, Said] = {}
        for by_run in self._of.values():
            for said in by_run.get(key, []):
                seen.setdefault(said.alert_id, said)
        return sorted(seen.values(), key=lambda s: (s.at, s.step))

    def _read(self, path: Path, size: int) -> dict[str, list[Said]]:
        try:
            with path.open("rb") as fh:
                fh.seek(max(0, size - MAX_BYTES))
                data = fh.read(MAX_BYTES)
        except OSError:
            return {}
        lines = data.split(b"\n")
        if size > MAX_BYTES:
            lines = lines[1:]  # the first line read is cut
        out: dict[str, list[Said]] = {}
        skipped = 0
        for line in lines:
            if not line.strip():
                continue
            said = _said(line)
            if said is None:
                skipped += 1
                continue
            run, alert = said
            out.setdefault(_run_key(run, path.parent), []).append(alert)
        self.skipped[path] = skipped
        return out


def _said(line: bytes) -> tuple[str, Said] | None:
    try:
        obj: Any = json.loads(line)
    except ValueError:
        return None
    return said_of(obj)


def said_of(obj: Any) -> tuple[str, Said] | None:
    """The run an alert's payload (:meth:`rlvitals.live.alerts.Alert.payload`, a JSONL sink's line) names, and
    the alert as a page lists it; None for anything else."""
    try:
        title = obj.get("title") or {}
        return str(obj["run"]), Said(
            str(obj["alert_id"]), str(obj["kind"]), str(obj["status"]), obj.get("previous"), str(obj["check"]),
            int(obj["step"]), None if obj.get("onset_step") is None else int(obj["onset_step"]),
            {k: str(v) for k, v in title.items()} if isinstance(title, dict) else {}, float(obj.get("at", 0.0)))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def _run_key(run: str, folder: Path) -> str:
    """The real path of the run an alert names: as given when absolute, else the first of the alert file's folder
    and the working folder that holds it."""
    path = Path(run)
    if not path.is_absolute():
        for base in (folder, Path(os.getcwd())):
            if (base / path).exists():
                path = base / path
                break
    return str(real_path(path))
