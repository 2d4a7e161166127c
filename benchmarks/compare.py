"""Each benchmark's latest figures against the entry recorded before them (``benchmarks/results/*.jsonl``).

Run:  python benchmarks/compare.py [BENCH ...] [--results DIR] [--tolerance 0.15]

For every benchmark (or those named), the latest entry is set against the last earlier entry run with the same
arguments (a ``--quick`` run is never compared with a full one), figure by figure: before, now, the change, and
``WORSE`` where a ratio or a peak memory moved the wrong way by more than ``--tolerance`` (15 %). Times are shown,
never flagged: they move with the machine; the ratios are against a baseline measured in the same run. Exits 1
when a figure is flagged, 0 otherwise (2 on a results file that cannot be read, naming it and the line).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _record import RESULTS  # noqa: E402

FLAGGED = ("ratio", "memory")


class BadRecord(Exception):
    """A results file that cannot be read."""


def entries(path: Path) -> list[dict[str, Any]]:
    """The entries of one results file, in the order they were recorded."""
    out = []
    for n, line in enumerate(path.read_bytes().splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = orjson.loads(line)
            if not isinstance(entry, dict) or not isinstance(entry.get("figures"), list):
                raise ValueError("no figures")
        except ValueError as exc:
            raise BadRecord(f"{path}:{n}: not a benchmark entry ({exc})") from None
        out.append(entry)
    return out


def worse(before: float, now: float, better: str, tolerance: float) -> bool:
    """Whether ``now`` is worse than ``before`` by more than ``tolerance`` of it, ``better`` being the good way.

    >>> worse(3000, 2500, "higher", 0.15), worse(3000, 2700, "higher", 0.15), worse(2.0, 2.4, "lower", 0.15)
    (True, False, True)
    """
    if before == 0:
        return False
    change = (now - before) / abs(before)
    return change < -tolerance if better == "higher" else change > tolerance


def compare(found: list[dict[str, Any]], tolerance: float) -> tuple[list[str], int]:
    """The lines that set the latest entry against its predecessor, and how many figures were flagged."""
    latest = found[-1]
    earlier = [e for e in found[:-1] if e.get("args") == latest.get("args")]
    head = f"{latest['bench']}: {latest['commit']}{'+' if latest.get('dirty') else ''} ({latest['when']})"
    if not earlier:
        return [f"{head}: the first entry run with these arguments; nothing to compare with"], 0
    before = earlier[-1]
    lines = [f"{head} against {before['commit']}{'+' if before.get('dirty') else ''} ({before['when']})"]
    old = {f["name"]: f for f in before["figures"]}
    flagged = 0
    for f in latest["figures"]:
        prev = old.get(f["name"])
        if prev is None:
            lines.append(f"  {f['name']}: {f['value']:.4g} {f['unit']} (new)")
            continue
        change = (f["value"] - prev["value"]) / abs(prev["value"]) if prev["value"] else 0.0
        bad = f["kind"] in FLAGGED and worse(prev["value"], f["value"], f["better"], tolerance)
        flagged += bad
        mark = "  WORSE" if bad else ""
        lines.append(f"  {f['name']}: {prev['value']:.4g} -> {f['value']:.4g} {f['unit']} ({change:+.1%}, "
                     f"{f['better']} is better){mark}")
    return lines, flagged


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bench", nargs="*", help="benchmarks to compare (default: every results file)")
    ap.add_argument("--results", type=Path, default=RESULTS, help="the folder of results files")
    ap.add_argument("--tolerance", type=float, default=0.15, help="the change that flags a figure (default 0.15)")
    args = ap.parse_args(argv)
    paths = [args.results / f"{b}.jsonl" for b in args.bench] or sorted(args.results.glob("*.jsonl"))
    flagged = 0
    for path in paths:
        if not path.is_file():
            print(f"{path}: no results recorded (run the benchmark first)", file=sys.stderr)
            return 2
        try:
            found = entries(path)
        except BadRecord as exc:
            print(exc, file=sys.stderr)
            return 2
        if not found:
            continue
        lines, n = compare(found, args.tolerance)
        flagged += n
        print("\n".join(lines))
    if flagged:
        print(f"{flagged} figure(s) worse by more than {args.tolerance:.0%}")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
