"""The benchmark record: each benchmark appends what it measured to ``benchmarks/results/<bench>.jsonl`` (one JSON
object a line, committed), so a regression shows the day it lands (``benchmarks/compare.py`` reads them).

A figure is a ratio against a baseline the benchmark measured in the same run (``kind="ratio"``: comparable across
machines and loads), a peak memory (``"memory"``), or a time in seconds (``"time"``: kept for people, never flagged,
as it moves with the machine). Each says which way is better. An entry carries the commit (and whether the tree
had uncommitted changes), the machine's core count and the benchmark's arguments: figures are compared only with
an earlier entry of the same benchmark run with the same arguments.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import orjson

HERE = Path(__file__).resolve().parent
#: where the entries go: benchmarks/results/, or the folder RLVITALS_BENCH_RESULTS names (the tests' own)
RESULTS = Path(os.environ.get("RLVITALS_BENCH_RESULTS") or HERE / "results")
KINDS = ("ratio", "memory", "time")


@dataclass(frozen=True)
class Figure:
    """One measured figure: its name, value, unit, kind and which way is better."""

    name: str
    value: float
    unit: str
    kind: Literal["ratio", "memory", "time"]
    better: Literal["higher", "lower"]


def commit(root: Path = HERE.parent) -> tuple[str, bool]:
    """The checked-out commit (12 hex digits, ``"unknown"`` outside a git checkout) and whether tracked files
    differ from it — the records under ``benchmarks/results/`` aside: a figure recorded a moment before does not
    make the code measured next another."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=False)
        return done.stdout.strip() if done.returncode == 0 else ""

    head = git("rev-parse", "--short=12", "HEAD")
    return (head or "unknown"), bool(git("status", "--porcelain", "--untracked-files=no", "--", ".",
                                         ":(exclude)benchmarks/results"))


def record(bench: str, args: Sequence[str], figures: Sequence[Figure], *, results: Path = RESULTS,
           now: dt.datetime | None = None, head: tuple[str, bool] | None = None) -> Path:
    """Append one entry to ``results/<bench>.jsonl`` and say so; returns the file."""
    sha, dirty = head if head is not None else commit()
    when = (now or dt.datetime.now(dt.timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
    entry: dict[str, Any] = {"bench": bench, "commit": sha, "dirty": dirty, "cores": os.cpu_count(),
                             "when": when, "args": list(args), "figures": [asdict(f) for f in figures]}
    results.mkdir(parents=True, exist_ok=True)
    path = results / f"{bench}.jsonl"
    with path.open("ab") as fh:
        fh.write(orjson.dumps(entry) + b"\n")
    print(f"recorded {len(figures)} figure(s) of {bench} at {sha}{' (uncommitted changes)' if dirty else ''} "
          f"in {path.relative_to(HERE.parent) if path.is_relative_to(HERE.parent) else path}")
    return path
