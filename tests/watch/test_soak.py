"""The soak test: a real trainer process writes three logs fast (half-written lines; renames, shifts,
copies, logrotate's ``compress``, ``delaycompress`` and ``olddir``, rewrites in place, a symlink re-pointed
at each new segment and now and then at another run's old log; nothing deleted) while real ``rlvitals
watch`` processes follow them and are SIGKILLed and restarted at random; a last ``watch --once`` finishes
the reading.

Afterwards every step of each log is stored exactly once in the state file (none lost, none twice, no
foreign one: a step of the old log the symlink was pointed at), the run the watcher rebuilds from it
equals a fresh read of everything the trainer wrote, no alert is in the JSONL sink twice, and every warn
or fail finding of that fresh read was alerted.

The kills come at random moments chosen by a seeded generator; what is asserted does not depend
on when they land (that is the point), so the test cannot fail by being slow. A longer run of the
same harness is ``benchmarks/bench_soak.py``.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rlvitals import diagnose, load
from rlvitals.ingest import readers
from rlvitals.run import Run
from rlvitals.run.follow import LineSource
from rlvitals.story import load_links
from rlvitals.watch.state import WatchState

WRITER = Path(__file__).with_name("soak_writer.py")
LOGS = ("run.jsonl", "train.log", "latest.jsonl")
#: what the watchers are told of where rotated files go (the writer's ``olddir``)
ROTATED_INTO = ("--rotated-into", "old")


@dataclass
class Soak:
    """What one soak did and found."""

    steps: dict[str, list[int]] = field(default_factory=dict)  # per log: the steps stored, in stored order
    runs: dict[str, Run] = field(default_factory=dict)  # per log: the run rebuilt from the stored records
    kills: int = 0
    rotations: list[int] = field(default_factory=list)
    kinds: dict[str, dict[str, int]] = field(default_factory=dict)  # per log: the changes of each kind it went through
    alert_ids: list[str] = field(default_factory=list)
    alerted: dict[str, set[str]] = field(default_factory=dict)  # per log: the checks alerted
    watch_errors: list[str] = field(default_factory=list)


def _watch(folder: Path, once: bool = False) -> subprocess.Popen[bytes]:
    args = [sys.executable, "-m", "rlvitals", "watch", *[str(folder / n) for n in LOGS], "--state",
            str(folder / "state.sqlite"), "--alert", f"jsonl:{folder / 'alerts.jsonl'}", "--interval", "0.05",
            *ROTATED_INTO]
    return subprocess.Popen(args + (["--once"] if once else []), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _until_following(folder: Path, sleep: Callable[[float], None]) -> None:
    """Wait until a watcher has stored a cursor into both logs (a condition, not a time: the bound only
    keeps a broken watcher from hanging the suite)."""
    for _ in range(6_000):
        with contextlib.suppress(sqlite3.Error):
            state = WatchState(folder / "state.sqlite")
            sources = state.sources()
            state.close()
            if all(sources.get(str(folder / n), {}).get("cursor", {}).get("lines", 0) > 0 for n in LOGS):
                return
        sleep(0.01)
    raise AssertionError("no watcher followed the logs")


def soak(folder: Path, steps: int, seed: int, rate: float, lives: tuple[float, float],
         sleep: Callable[[float], None] = time.sleep) -> Soak:
    """Run the trainer and the killed watchers in ``folder``; ``lives``: a watcher lives between these
    many seconds before it is killed."""
    rng = random.Random(seed)
    out = Soak()
    writer = subprocess.Popen([sys.executable, str(WRITER), str(folder), str(steps), str(seed), str(rate)])
    try:
        first = _watch(folder)
        _until_following(folder, sleep)
        (folder / "go").write_text("")
        first.send_signal(signal.SIGKILL)
        first.communicate()
        while writer.poll() is None:
            watcher = _watch(folder)
            sleep(rng.uniform(*lives))
            watcher.send_signal(signal.SIGKILL)
            _, err = watcher.communicate()
            out.kills += 1
            if err and b"Traceback" in err:
                out.watch_errors.append(err.decode(errors="replace"))
    finally:
        if writer.poll() is None:
            writer.kill()
        writer.wait()
    assert writer.returncode == 0
    last = _watch(folder, once=True)
    _, err = last.communicate(timeout=600)
    if last.returncode not in (0, 1):  # 1: a finding (the logs hold a collapse) — --once exits like diagnose
        out.watch_errors.append(f"watch --once exited {last.returncode}: {err.decode(errors='replace')}")
    out.kinds = json.loads((folder / "written").read_text())
    out.rotations = [sum(out.kinds[name].values()) for name in LOGS]
    state = WatchState(folder / "state.sqlite")
    sources = state.sources()
    for name in LOGS:
        key = str(folder / name)
        out.steps[name] = [r.step for r in state.records(key) if r.kind != "summary"]
        reader = next(r for r in readers() if r.format == sources[key]["format"])
        run = LineSource(folder / name, reader, sources[key], state.packed(key)).run()  # from the state file alone
        assert run is not None, name
        out.runs[name] = run
    state.close()
    lines = [json.loads(x) for x in (folder / "alerts.jsonl").read_text().splitlines()] \
        if (folder / "alerts.jsonl").exists() else []
    out.alert_ids = [a["alert_id"] for a in lines]
    for a in lines:  # an alert is for a root cause; what followed it rides along (its consequences)
        said = out.alerted.setdefault(Path(a["run"]).name, set())
        said.update([a["check"], *(c["check"] for c in a.get("consequences", []))])
    return out


@pytest.mark.process
@pytest.mark.slow
def test_a_killed_and_restarted_watcher_reads_every_step_once_through_rotations(tmp_path: Path) -> None:
    from watch.soak_writer import KINDS

    steps = 900
    result = soak(tmp_path, steps=steps, seed=11, rate=150.0, lives=(0.8, 2.2))
    assert not result.watch_errors, result.watch_errors[0]
    assert result.kills >= 2 and min(result.rotations) >= 10  # it did what it is here for
    done = {kind for kinds in result.kinds.values() for kind in kinds}
    assert done >= {*KINDS, "segment", "detour"}, f"no {sorted({*KINDS, 'segment', 'detour'} - done)} in this soak"
    for name in LOGS:
        stored = result.steps[name]
        foreign = [s for s in stored if not 1 <= s <= steps]
        assert not foreign, f"{name}: {len(foreign)} foreign records (steps of another log), e.g. {foreign[:3]}"
        assert len(stored) == len(set(stored)), f"{name}: {len(stored) - len(set(stored))} steps stored twice"
        lost = sorted(set(range(1, steps + 1)) - set(stored))
        assert not lost, f"{name}: {len(lost)} steps lost, e.g. {lost[:5]}"
    assert len(result.alert_ids) == len(set(result.alert_ids)), "an alert was delivered twice"
    for name in LOGS:
        whole = load(tmp_path / f"all-{name}", "verl-jsonl" if name.endswith(".jsonl") else "verl-console")[0]
        assert result.runs[name].frame.equals(whole.frame), f"{name}: the stored run differs from what was written"
        # every warn/fail finding alerted, in an alert of its own, under its cause's alert, or — appearing after
        # its cause was alerted — said by that alert already (one fault, one alert); the cause live may be one
        # the whole log no longer shows (a KL trend alerted live; at the end the KL's level out of range)
        said = result.alerted.get(name, set())
        links = load_links()
        unsaid = {m.finding.check for cause in diagnose(whole).causes() for m in (cause, *cause.explains)
                  if m.finding.check not in said and cause.finding.check not in said
                  and not any(links.between(c, m.finding.check) for c in said)}
        assert not unsaid, f"{name}: not alerted: {unsaid}"
