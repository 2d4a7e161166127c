"""Scenario suite: detection rate, onset error and false alarms of every check.

Run:  python benchmarks/scenario_suite.py [--quick]

The grid: run lengths × noise multipliers × entropy scales × seeds, for every pathology in
rlvitals.synthetic.pathologies and for healthy GRPO and PPO controls. Prints one row per pathology
(share of runs where a target check warned or failed, share where it failed, median and
worst onset error in steps) and, for the controls, every check that raised an alarm.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from rlvitals.synthetic.scenarios import grid, run_suite  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        points = grid([300], [1.0], [0.55], [0])
    else:
        points = grid([200, 600, 2000], [0.5, 1.0, 2.0], [0.05, 0.55, 2.0], [0, 1])
    t0 = time.perf_counter()
    tallies = run_suite(points)
    took = time.perf_counter() - t0
    print(f"{len(points)} grid points; {sum(t.runs for t in tallies.values())} diagnoses in {took:.1f} s\n")
    print(f"{'pathology':<22} {'runs':>5} {'detected':>9} {'failed':>7} {'onset med':>10} {'onset max':>10}")
    for name, tally in tallies.items():
        if name.startswith("healthy"):
            continue
        r = tally.row()
        print(f"{name:<22} {r['runs']:>5} {r['detection']:>9.0%} {r['fail']:>7.0%} "
              f"{r['onset_median']:>10.1f} {r['onset_max']:>10.1f}")
    print("\nhealthy controls: alarms raised (check:status → runs)")
    for name, tally in tallies.items():
        if name.startswith("healthy"):
            fails = sum(v for k, v in tally.alarms.items() if k.endswith(":fail"))
            print(f"  {name}: {tally.runs} runs; runs with any warn/fail: {tally.alarm_runs}; fail findings: {fails}")
            for key, count in sorted(tally.alarms.items(), key=lambda kv: -kv[1]):
                print(f"    {key:<40} {count:>4} ({count / tally.runs:.0%})")


if __name__ == "__main__":
    main()
