"""The run list: what each entry says of a served run (or of a log no reading has succeeded for), and the
orders the list comes in.

An entry names its run by an opaque id (a hash of its path), gives its verdict per layer and its counts of
findings, and says when a reading of its log failed: ``error`` names why (``error_zh`` in Chinese), and
``stale`` says the run shown is its last good reading, not what its log holds now (the log was deleted,
emptied, or rewritten into something that is no training log; a read failed). A log never read is an
``unreadable`` entry with its error.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..catalog.catalog import load_catalog
from ..checks import FINDING_STATUSES
from ..diagnosis import READING_ORDER, Diagnosis
from ..ingest import real_path
from ..run.follow import signature
from ..run.run import Run
from ..words import in_lang
from .security import AccessError, confine

if TYPE_CHECKING:
    from ..rollout.analysis import RolloutAnalysis

SORTS = ("updated", "name")  # the run list's orders; the first is the default
MAX_ENTRIES = 1000  # a folder listing stops here; a served folder is a place for logs, not a file browser


def run_id(path: str) -> str:
    """The opaque id of the run read from ``path`` (a hash: no path in any URL).

    Example:
        >>> run_id("/runs/a/train.log")
        'd3a3326f2cdaf8b7'
    """
    return hashlib.sha256(os.fsencode(path)).hexdigest()[:16]  # a name's bytes: UTF-8 or not


@dataclass(frozen=True)
class Served:
    """One run as served now; replaced whole on every update, so a reader never sees half of one.
    ``run``/``diagnosis`` are None while a run remembered from the state file is read again, and for a run read
    whole and let go (:mod:`.quiet`): its ``facts`` (what the run list says of it) stay until its page is asked
    for, which reads it again."""

    id: str
    path: str
    root: int
    version: int
    last_step: int
    verdict: str
    seq: int
    updated: float
    run: Run | None = None
    diagnosis: Diagnosis | None = None
    rollouts: RolloutAnalysis | None = None  # joined into ``run``; its texts are browsed
    modified: float = 0.0  # when its log was last written (its mtime, seconds since the epoch)
    facts: Mapping[str, Any] | None = None  # the diagnosis as the run list says it (:func:`facts_of`)

    @property
    def ready(self) -> bool:
        """Whether the run has been read (held whole, or only as its facts)."""
        return self.diagnosis is not None or self.facts is not None

    def summary(self, error: str | None = None) -> dict[str, Any]:
        """The run-list entry: verdict per layer and counts of failing and warning findings and of notes;
        ``updated`` is when it was last diagnosed, ``modified`` when its log was last written; ``error`` why
        the newest reading failed (the entry is then ``stale`` once a reading has succeeded)."""
        facts = self.facts if self.diagnosis is None else facts_of(self.diagnosis)
        shown = facts or _NO_FACTS
        return {"id": self.id, "label": Path(self.path).name or self.path, "path": self.path, "root": self.root,
                "status": "ready" if facts else "loading", "version": self.version, "last_step": self.last_step,
                "verdict": self.verdict, **{k: v for k, v in shown.items() if k != "headline"},
                "updated": self.updated, "modified": self.modified, "headline": shown["headline"], "error": error,
                "error_zh": None if error is None else in_lang(error, "zh"),
                "stale": error is not None and facts is not None}


_NO_FACTS: dict[str, Any] = {"layers": {}, "findings": {}, "framework": None, "algorithm": None,
                             "algorithm_short": None, "steps": None, "headline": None}


def facts_of(d: Diagnosis) -> dict[str, Any]:
    """What the run list says of a diagnosis (plain values: kept in the state file, sent by a worker process):
    its verdict per layer, its counts of findings, framework, algorithm, steps and headline."""
    return {"layers": {k: d.layers[k] for k in READING_ORDER},
            "findings": {s: sum(f.status == s for f in d.findings) for s in FINDING_STATUSES},
            "framework": d.run.framework, "algorithm": d.run.algorithm_label,
            "algorithm_short": load_catalog().algorithm_short(d.run.algorithm) or d.run.algorithm_label,
            "steps": int(len(d.run.train_steps)), "headline": _headline(d)}


def _headline(d: Diagnosis | None) -> dict[str, Any] | None:
    """What the run list says first of a run: its root cause (check, status, since when, its name) and how
    many findings it explains; None when nothing needs action or the run is still being read."""
    head = d.headline if d else None
    if head is None:
        return None
    return {"check": head.finding.check, "status": head.finding.status, "onset_step": head.onset_step,
            "title": dict(head.finding.title), "explains": len(head.explains)}


def unreadable(path: Path, root: int, error: str) -> dict[str, Any]:
    """The run-list entry of a log no reading has succeeded for."""
    return {"id": run_id(str(path)), "label": path.name, "path": str(path), "root": root,
            "status": "unreadable", "version": 0, "last_step": 0, "verdict": "skipped", "layers": {},
            "findings": dict.fromkeys(FINDING_STATUSES, 0), "framework": None, "algorithm": None,
            "algorithm_short": None, "steps": None, "updated": 0.0, "modified": modified(path), "error": error,
            "error_zh": in_lang(error, "zh"), "stale": False}


def modified(path: Path) -> float:
    """When ``path`` was last written: a file's mtime, a folder's newest file's; 0.0 when it is gone."""
    try:
        if path.is_file():
            return path.stat().st_mtime
        return max((ns for *_, ns, _ in signature(path)), default=0) / 1e9
    except OSError:
        return 0.0


def folder_entries(roots: Sequence[Path], root: int, rel: str, served: Sequence[Served]) -> dict[str, Any]:
    """What lies at ``rel`` inside served root ``root`` and which of the ``served`` runs each entry serves."""
    target = confine(roots, root, rel)
    entries = [target] if target.is_file() else sorted(target.iterdir())[:MAX_ENTRIES]
    by_path: dict[str, list[str]] = {}
    for s in served:
        by_path.setdefault(s.path, []).append(s.id)
    out = []
    for entry in entries:
        real = real_path(entry)  # a loop of links names itself (resolve() raises on one)
        if not real.is_relative_to(roots[root]) or not real.exists():
            continue  # a link out of the folder, or to nothing, is not listed
        runs = [rid for path, ids in by_path.items() if Path(path) == real or Path(path).is_relative_to(real)
                for rid in ids]
        out.append({"name": entry.name, "path": str(real.relative_to(roots[root])),
                    "dir": real.is_dir(), "size": real.stat().st_size if real.is_file() else None,
                    "runs": sorted(runs)})
    return {"root": root, "path": rel, "entries": out}


_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple[str | int, ...]:
    """A sort key that orders the numbers in names by value.

    Example:
        >>> sorted(["run10", "Run2", "run1"], key=natural_key)
        ['run1', 'Run2', 'run10']
    """
    return tuple(int(part) if i % 2 else part.casefold() for i, part in enumerate(_DIGITS.split(name)))


def sort_runs(runs: Sequence[dict[str, Any]], by: str = "updated") -> list[dict[str, Any]]:
    """Run-list entries most recently written first (``updated``), or by label in natural order
    (``name``); ties by label. Any other ``by`` is refused (a 400: it comes from ``?sort=``).

    Example:
        >>> runs = [{"label": "run10", "modified": 5.0}, {"label": "run2", "modified": 1.0}]
        >>> [r["label"] for r in sort_runs(runs, "name")], [r["label"] for r in sort_runs(runs)]
        (['run2', 'run10'], ['run10', 'run2'])
    """
    if by not in SORTS:
        raise AccessError(400, f"sort {by!r}: expected one of {', '.join(SORTS)}; open the list with ?sort=updated "
                               "(most recently written first) or ?sort=name")
    named = sorted(runs, key=lambda r: (natural_key(r["label"]), r.get("path", "")))
    return named if by == "name" else sorted(named, key=lambda r: -float(r.get("modified") or 0.0))


__all__ = ["MAX_ENTRIES", "SORTS", "Served", "facts_of", "folder_entries", "modified", "natural_key", "run_id",
           "sort_runs", "unreadable"]
