"""``benchmarks/bench_probe.py --quick`` runs and prints its rows: the plain loop, one row per concurrency with
the same requests as the loop replays, and a cached re-run that sends nothing and gives the same figures.
No time is asserted (the machine is shared); only that every row is there and what it counts is right."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_probe.py"
NUMBER = r"\d+(?:\.\d+)?"


@pytest.mark.process
def test_the_quick_benchmark_prints_every_row() -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--quick", "--delay", "0.005"], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("probes: 4 rollouts x every probe, server delay 5 ms a request, 127.0.0.1")
    assert re.fullmatch(rf"plain loop \(urllib, one request at a time\): +{NUMBER} s +{NUMBER} requests/s +"
                        rf"{NUMBER} rollouts/s  \(48 requests\)", lines[1]), lines[1]
    for line, c in zip(lines[2:5], (1, 4, 16), strict=True):
        assert re.fullmatch(rf"HttpBackend concurrency +{c}: +{NUMBER} s +{NUMBER} requests/s +{NUMBER} rollouts/s  "
                            rf"ratio +{NUMBER}x the plain loop; same requests: True", line), line
    assert re.fullmatch(rf"cached re-run \(run_probe, SQLite cache, concurrency 4\): first {NUMBER} s \(\d+ sent\), "
                        rf"re-run {NUMBER} s \(0 sent\)  speed-up {NUMBER}x; figures identical: True; "
                        rf"the probing alone {NUMBER} ms", lines[5]), lines[5]
    assert len(lines) == 6
