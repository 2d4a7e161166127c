"""Diagnosis speed: end to end on the largest real fixture, and on simulated runs of growing length.

Run:  python benchmarks/bench_diagnose.py [--quick]

Prints, pinned to one core:
- import time of rlvitals (paid once per process),
- for the largest real fixture: load time, diagnose time, and their ratio,
- for simulated runs of 1k, 10k and 100k steps × ~200 metrics: diagnose time, time per step, and the
  ratio to a baseline measured in the same run (one pass of NumPy over every metric column: mean,
  std and a sort each), so growth can be read as linear or not.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "fixtures" / "real"
sys.path.insert(0, str(ROOT / "src"))

from _timing import best  # noqa: E402

import rlvitals  # noqa: E402
from rlvitals.diagnosis import diagnose  # noqa: E402
from rlvitals.run.run import Run  # noqa: E402
from rlvitals.synthetic.pathologies import Spec, scenario  # noqa: E402
from rlvitals.synthetic.scenarios import run_from_series  # noqa: E402


def import_time() -> float:
    code = "import time; t = time.perf_counter(); import rlvitals.diagnosis; print(time.perf_counter() - t)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    return float(out.stdout.strip())


def wide_run(steps: int, width: int = 200) -> Run:
    """A simulated GRPO run with an entropy collapse at 60%, widened to ``width`` metrics with
    per-reward-function series (canonical template keys)."""
    series = scenario(Spec(steps=steps, seed=1, pathology="entropy_collapse", at=int(steps * 0.6)))
    rng = np.random.default_rng(0)
    extra = width - len(series)
    for i in range(max(extra, 0)):
        series[f"reward_fn/fn_{i:03d}/mean"] = np.clip(0.5 + rng.normal(0, 0.1, steps), 0, 1)
    return run_from_series(series, config={"algorithm.adv_estimator": "grpo"})


def baseline(run: Run) -> float:
    t0 = time.perf_counter()
    for key in run.metrics:
        _, v = run.series(key, finite=True)
        float(v.mean()), float(v.std()), np.sort(v)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    print(f"import rlvitals.diagnosis: {import_time():.2f} s (once per process)\n")

    biggest = max((p for p in REAL.iterdir() if p.suffix == ".log"), key=lambda p: p.stat().st_size)
    t_load = best(lambda: rlvitals.load(biggest), 3)
    run = rlvitals.load(biggest)[0]
    diagnose(run)  # warm caches (catalog, checks)
    t_diag = best(lambda: diagnose(run), 3)
    print(f"largest real fixture {biggest.name} ({biggest.stat().st_size / 1e6:.1f} MB, "
          f"{len(run.train_steps)} steps × {len(run.metrics)} metrics):")
    print(f"  load {t_load:.3f} s   diagnose {t_diag:.3f} s   diagnose/load {t_diag / t_load:.2f}\n")

    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    print(f"{'steps':>8} {'metrics':>8} {'diagnose s':>11} {'µs/step':>9} {'baseline s':>11} {'ratio':>7}")
    for steps in sizes:
        run = wide_run(steps)
        repeat = 3 if steps <= 10_000 else 1
        t_diag = best(lambda run=run: diagnose(run), repeat)  # type: ignore[misc]
        t_base = best(lambda run=run: baseline(run), repeat)  # type: ignore[misc]
        print(f"{steps:>8} {len(run.metrics):>8} {t_diag:>11.3f} {t_diag / steps * 1e6:>9.1f} "
              f"{t_base:>11.3f} {t_diag / t_base:>7.1f}")


if __name__ == "__main__":
    main()
