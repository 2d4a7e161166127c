"""The benchmark record (benchmarks/_record.py) and benchmarks/compare.py: entries appended with the commit, the
cores and the arguments; the latest compared with the last entry of the same arguments; a ratio or a peak memory
that moved the wrong way by more than 15 % flagged, a time never; a bad results file named with its line. And the
rollout benchmark, run for real on a small table, records what it printed."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import compare  # noqa: E402
from _record import Figure, record  # noqa: E402

WHEN = dt.datetime(2026, 12, 7, 12, 0, tzinfo=dt.timezone.utc)


def _figures(verl: float, pandas: float, seconds: float, peak: float = 300.0) -> list[Figure]:
    return [Figure("step_metrics", seconds, "s", "time", "lower"),
            Figure("step_metrics vs veRL-style bootstrap", verl, "x", "ratio", "higher"),
            Figure("step_metrics vs pandas", pandas, "x", "ratio", "higher"),
            Figure("jsonl 100,000 steps: peak", peak, "MiB", "memory", "lower")]


def test_an_entry_holds_the_commit_the_cores_and_the_arguments(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = record("bench_x", ["--part", "group"], _figures(3000, 120, 0.6), results=tmp_path, now=WHEN,
                  head=("0123456789ab", True))
    [entry] = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    assert entry["commit"] == "0123456789ab" and entry["dirty"] is True and entry["cores"] == os.cpu_count()
    assert entry["when"] == "2026-12-07T12:00:00Z" and entry["args"] == ["--part", "group"]
    assert entry["figures"][1] == {"name": "step_metrics vs veRL-style bootstrap", "value": 3000, "unit": "x",
                                   "kind": "ratio", "better": "higher"}
    assert capsys.readouterr().out.startswith("recorded 4 figure(s) of bench_x at 0123456789ab (uncommitted changes)")


@pytest.mark.process
def test_a_record_written_before_does_not_make_the_tree_dirty(tmp_path: Path) -> None:
    from _record import commit

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    (tmp_path / "benchmarks" / "results" / "bench_x.jsonl").write_text("{}\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    assert commit(tmp_path)[1] is False
    (tmp_path / "benchmarks" / "results" / "bench_x.jsonl").write_text("{}\n{}\n")  # a figure recorded since
    assert commit(tmp_path)[1] is False
    (tmp_path / "code.py").write_text("x = 2\n")
    assert commit(tmp_path)[1] is True


def test_a_ratio_worse_by_more_than_15_percent_is_flagged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record("bench_x", ["--part", "group"], _figures(3000, 120, 0.6), results=tmp_path, now=WHEN, head=("a" * 12, False))
    record("bench_x", ["--quick"], _figures(100, 10, 0.1), results=tmp_path, now=WHEN, head=("b" * 12, False))
    # slower on a busier machine (a time: not flagged), 1,890x veRL instead of 3,000x (flagged), pandas within 15 %
    record("bench_x", ["--part", "group"], _figures(1890, 105, 0.9, peak=360), results=tmp_path, now=WHEN,
           head=("c" * 12, False))
    capsys.readouterr()
    assert compare.main(["--results", str(tmp_path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"bench_x: {'c' * 12} (2026-12-07T12:00:00Z) against {'a' * 12} (2026-12-07T12:00:00Z)"
    assert out[1] == "  step_metrics: 0.6 -> 0.9 s (+50.0%, lower is better)"
    assert out[2] == "  step_metrics vs veRL-style bootstrap: 3000 -> 1890 x (-37.0%, higher is better)  WORSE"
    assert out[3] == "  step_metrics vs pandas: 120 -> 105 x (-12.5%, higher is better)"
    assert out[4] == "  jsonl 100,000 steps: peak: 300 -> 360 MiB (+20.0%, lower is better)  WORSE"
    assert out[5] == "2 figure(s) worse by more than 15%"
    record("bench_x", ["--part", "group"], _figures(3100, 125, 0.5), results=tmp_path, now=WHEN, head=("d" * 12, False))
    assert compare.main(["bench_x", "--results", str(tmp_path)]) == 0


def test_a_first_entry_and_bad_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record("bench_y", [], _figures(3000, 120, 0.6), results=tmp_path, now=WHEN, head=("a" * 12, False))
    assert compare.main(["bench_y", "--results", str(tmp_path)]) == 0
    assert capsys.readouterr().out.endswith("the first entry run with these arguments; nothing to compare with\n")
    (tmp_path / "bench_z.jsonl").write_text('{"bench": "bench_z", "figures": []}\n{"bench": \n', encoding="utf-8")
    assert compare.main(["bench_z", "--results", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith(f"{tmp_path / 'bench_z.jsonl'}:2: not a benchmark entry (")
    assert compare.main(["bench_w", "--results", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"{tmp_path / 'bench_w.jsonl'}: no results recorded (run the benchmark first)\n"


@pytest.mark.process
def test_the_rollout_benchmark_records_what_it_printed(tmp_path: Path) -> None:
    env = {**os.environ, "RLVITALS_BENCH_RESULTS": str(tmp_path)}
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_rollouts.py"), "--part", "group",
                           "--groups", "1250", "--pandas-groups", "125", "--verl-groups", "10"],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    [entry] = [orjson.loads(line) for line in (tmp_path / "bench_rollouts.jsonl").read_bytes().splitlines()]
    assert entry["args"] == ["--part", "group", "--groups", "1250", "--pandas-groups", "125", "--verl-groups", "10"]
    said = {f["name"]: f["value"] for f in entry["figures"]}
    verl = next(line for line in done.stdout.splitlines() if line.startswith("veRL-style bootstrap"))
    assert f"ratio {said['step_metrics vs veRL-style bootstrap']:.0f}x" in verl
    assert said["step_metrics vs pandas"] > 1 and said["step_metrics"] > 0
