"""``rlvitals diagnose`` on long logs: peak memory against the size of the log's numeric columns.

Run:  python benchmarks/bench_large_log.py [--steps 73250,146500,293000,586000]

For each length, a simulated veRL GRPO run written as veRL JSONL (586,000 steps is about 1 GB) is
diagnosed by ``rlvitals diagnose LOG --json`` in a process of its own, timed end to end with its
peak RSS (``getrusage`` of the child). Printed beside it: the log's numeric columns (every numeric
key at every step as float64: what a reader must hold at the least), the peak of a process that only
imports rlvitals (the fixed part, measured in the same run), and what is left — the margin — in all
and per step. The target: the peak under the numeric columns plus a margin that does not grow with
the number of values (< 1 GB at 1 GB of log).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from _timing import child

from rlvitals.synthetic.simulate import Scenario, jsonl_lines, simulate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", default="73250,146500,293000,586000")
    args = ap.parse_args()
    _, imports = child([sys.executable, "-c", "import rlvitals.cli, rlvitals.diagnosis"])
    print(f"a process importing rlvitals: {imports:.0f} MiB peak")
    print(f"{'steps':>8} {'log MB':>7} {'seconds':>8} {'peak MiB':>9} {'columns':>8} {'margin':>7} {'B/step':>7}")
    for steps in (int(s) for s in args.steps.split(",")):
        sc = Scenario(steps=steps, collapse_at=None, grad_spike_at=None)
        keys = len(simulate(Scenario(steps=20, collapse_at=None, grad_spike_at=None)))
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "run.jsonl"
            with log.open("wb") as fh:
                for line in jsonl_lines(sc):
                    fh.write(line + b"\n")
            took, peak = child([sys.executable, "-m", "rlvitals", "diagnose", str(log), "--json"])
            size = log.stat().st_size
        columns = keys * steps * 8 / 2**20
        margin = peak - imports - columns
        print(f"{steps:>8} {size / 1e6:>7.0f} {took:>8.1f} {peak:>9.0f} {columns:>8.0f} {margin:>7.0f} "
              f"{margin * 2**20 / steps:>7.0f}")


if __name__ == "__main__":
    main()
