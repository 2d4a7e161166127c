"""The watch soak, long: a trainer process writing a veRL JSONL log, a veRL console log and a JSONL
log behind a re-pointed symlink, with half-written lines and every kind of change the soak writer makes
(renames, shifts, copytruncate, copy then replace, logrotate's compress, delaycompress and olddir,
rewrites in place, segments, detours to another run's log: ``tests/watch/soak_writer.py``), while
``rlvitals watch`` processes follow them and are SIGKILLed and restarted at random; then one
``watch --once`` finishes the reading.

Run:  python benchmarks/bench_soak.py [--steps 20000] [--rate 400] [--seeds 3] [--life 0.4,2.0]

Prints per seed: rotations per log, kills, steps stored against steps written (lost, stored
twice), alerts sent and sent twice, watcher tracebacks, and the time of the last
``watch --once`` (the catch-up on the state the killed watchers left) as a ratio to a
``diagnose`` of everything written, measured in the same run. The harness is the suite's
(``tests/watch/test_soak.py``), run longer.
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "watch"))

import test_soak  # noqa: E402  (the suite's harness)


def _seconds(args: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--rate", type=float, default=400.0, help="steps a second written to each log")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--life", default="0.4,2.0", help="a watcher lives between these many seconds")
    args = ap.parse_args()
    lives = tuple(float(x) for x in args.life.split(","))
    assert len(lives) == 2
    print(f"{'seed':>4} {'log':<10} {'rotations':>9} {'kills':>5} {'stored':>7} {'lost':>5} {'twice':>5} "
          f"{'alerts':>6} {'again':>5} {'errors':>6} {'catch-up/diagnose':>17}")
    for seed in range(1, args.seeds + 1):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            t0 = time.perf_counter()
            result = test_soak.soak(folder, args.steps, seed, args.rate, (lives[0], lives[1]))
            wall = time.perf_counter() - t0
            once = _seconds([sys.executable, "-m", "rlvitals", "watch", *[str(folder / n) for n in test_soak.LOGS],
                             "--state", str(folder / "state.sqlite"), "--once", *test_soak.ROTATED_INTO])
            fresh = _seconds([sys.executable, "-m", "rlvitals", "diagnose",
                              *[str(folder / f"all-{n}") for n in test_soak.LOGS]])
            for i, name in enumerate(test_soak.LOGS):
                stored = result.steps[name]
                counts = collections.Counter(stored)
                lost = args.steps - len(counts)
                twice = sum(c - 1 for c in counts.values())
                again = len(result.alert_ids) - len(set(result.alert_ids))
                print(f"{seed:>4} {name:<10} {result.rotations[i]:>9} {result.kills:>5} {len(stored):>7} {lost:>5} "
                      f"{twice:>5} {len(result.alert_ids):>6} {again:>5} {len(result.watch_errors):>6} "
                      f"{once / fresh:>17.2f}")
            print(f"     ({wall:.0f} s of writing and killing; a quiet `watch --once` {once:.2f} s, "
                  f"`diagnose` of everything written {fresh:.2f} s)")


if __name__ == "__main__":
    main()
