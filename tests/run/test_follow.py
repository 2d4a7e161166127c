"""Following a log through any sequence of rotations: a model of what trainers and logrotate do
to a log between two polls (and across restarts of the follower), run many times with random
choices, checked against the lines written.

Each sequence writes a real log (veRL JSONL or veRL console lines from the simulator), with lines
written in two halves, rotated by renaming (numbered up, or shifted as Python's
RotatingFileHandler does), by ``copytruncate`` (copy, then truncate the same file) and by a copy
put aside before a new file replaces the log, and polled and restarted at random points. Nothing
is deleted, so every step must be read exactly once.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest
from watch.soak_writer import KINDS, Rotator

from rlvitals.ingest import RotationRules, find_reader
from rlvitals.run.follow import LineSource
from rlvitals.synthetic.simulate import Scenario, console_lines, jsonl_lines
from rlvitals.watch.state import WatchState

STEPS = 160


def _lines(kind: str, seed: int) -> list[bytes]:
    sc = Scenario(steps=STEPS, seed=seed, collapse_at=None, grad_spike_at=None)
    if kind == "jsonl":
        return [line + b"\n" for line in jsonl_lines(sc)]
    return [(line + "\n").encode() for line in console_lines(sc)]


class Trainer:
    """Writes a log line by line and rotates it as it is told, keeping every rotated file."""

    def __init__(self, log: Path, lines: list[bytes]) -> None:
        self.log, self.lines, self.next, self.half = log, lines, 0, b""
        self.rotator = Rotator(log)  # the soak's trainer rotates its logs the same four ways
        log.write_bytes(b"")

    @property
    def done(self) -> bool:
        return self.next >= len(self.lines) and not self.half

    def write(self, rng: random.Random) -> None:
        if self.half:  # finish the line begun
            self._append(self.half)
            self.half = b""
            return
        n = rng.randint(1, 6)
        block = b"".join(self.lines[self.next:self.next + n])
        self.next += n
        if rng.random() < 0.3 and self.next < len(self.lines):  # and begin the next one, flushed half-way
            line = self.lines[self.next]
            self.next += 1
            cut = rng.randint(1, len(line) - 1)
            block, self.half = block + line[:cut], line[cut:]
        self._append(block)

    def rotate(self, how: str) -> None:
        """Rotations happen between lines (a writer rotates its own file between two records)."""
        if self.half:
            self._append(self.half)
            self.half = b""
        self.rotator.rotate(how)

    def _append(self, data: bytes) -> None:
        with self.log.open("ab") as fh:
            fh.write(data)


def _restart(src: LineSource, state_path: Path) -> LineSource:
    """Store the follower's state as the watcher does, and rebuild a follower from that file alone."""
    key = str(src.path)
    state = WatchState(state_path)
    state.commit({key: src.state()}, {}, [], [], {key: src.pending()})
    state.close()
    state = WatchState(state_path)
    again = LineSource(src.path, src.reader, state.sources()[key], state.packed(key), OLDDIR)
    state.close()
    return again


def _stored_steps(src: LineSource, state_path: Path) -> list[int]:
    _restart(src, state_path)
    state = WatchState(state_path)
    steps = [r.step for r in state.records(str(src.path)) if r.kind != "summary"]
    state.close()
    return steps


ROTATIONS = KINDS
#: where the trainer's ``olddir`` rotation moves the log (the watcher's ``--rotated-into old``)
OLDDIR = RotationRules(("old",))


@pytest.mark.parametrize("kind", ["jsonl", "console"])
@pytest.mark.parametrize("seed", range(int(os.environ.get("RLVITALS_ROTATION_SEEDS", "24"))))
def test_any_sequence_of_rotations_between_polls_and_restarts_loses_no_step(
        tmp_path: Path, kind: str, seed: int) -> None:
    rng = random.Random(seed * 7919 + len(kind))
    log = tmp_path / ("run.jsonl" if kind == "jsonl" else "run.log")
    trainer = Trainer(log, _lines(kind, seed))
    trainer.write(rng)
    src = LineSource(log, find_reader(log, "verl-jsonl" if kind == "jsonl" else "verl-console"), records=(),
                     rules=OLDDIR)
    src.poll()  # as a watcher does when it opens the log: what was rotated off before is not this run's
    state_path = tmp_path / "state.sqlite"
    restarts = rotations = ops = 0
    while not trainer.done:
        ops += 1
        roll = rng.random() if ops % 40 else 1.0  # and a restart every 40 steps of the model at least
        if roll < 0.45:
            trainer.write(rng)
        elif roll < 0.65:
            trainer.rotate(rng.choice(ROTATIONS))
            rotations += 1
        elif roll < 0.93:
            src.poll()
        else:
            src = _restart(src, state_path)
            restarts += 1
    src.poll()
    src.poll()
    steps = _stored_steps(src, state_path)
    assert sorted(steps) == list(range(1, STEPS + 1)), src.messages  # each step exactly once
    run = src.run()
    assert run is not None and run.steps.tolist() == list(range(1, STEPS + 1))
    assert not [m for m in src.messages if "were not read" in m], src.messages
    assert rotations > 5 and restarts > 0  # the sequence did what it is here for


def test_a_generation_that_starts_like_the_last_is_still_read(tmp_path: Path) -> None:
    """Two trainer runs print the same config dump first; a copy of the second is not mistaken for
    the first (its last bytes differ), so its steps are read."""
    log = tmp_path / "run.log"
    banner = b"config: " + b"x" * 5000 + b"\n"
    log.write_bytes(banner + b"step:1 - actor/entropy:0.5\n")
    src = LineSource(log, find_reader(log), records=())
    src.poll()
    os.rename(log, tmp_path / "run.log.1")
    log.write_bytes(banner + b"step:2 - actor/entropy:0.5\n")
    shutil.copyfile(log, tmp_path / "run.log.2")
    with log.open("r+b") as fh:
        fh.truncate(0)
    log.write_bytes(b"step:3 - actor/entropy:0.5\n")
    src.poll()
    run = src.run()
    assert run is not None and run.steps.tolist() == [1, 2, 3], src.messages


def test_lost_steps_are_named_when_a_rotated_file_is_deleted(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    lines = _lines("jsonl", 3)
    log.write_bytes(b"".join(lines[:10]))
    src = LineSource(log, find_reader(log), records=())
    src.poll()
    with log.open("ab") as fh:
        fh.write(b"".join(lines[10:20]))
    os.rename(log, tmp_path / "run.jsonl.1")
    (tmp_path / "run.jsonl.1").unlink()  # rotated and removed before the next look
    log.write_bytes(b"".join(lines[20:30]))
    src.poll()
    run = src.run()
    assert run is not None and run.steps.tolist() == list(range(1, 11)) + list(range(21, 31))
    assert (f"{log}: the steps after 10 and before 21 were not read: the old file is gone (a log rotated into "
            "another folder or under a name of its own is found with watch --rotated-into DIR or --rotation-pattern "
            "REGEX)") in src.messages


def test_a_copytruncate_just_before_the_first_read_of_a_file_is_found_by_its_copy(tmp_path: Path) -> None:
    """The follower knows the new file but has read nothing of it; the trainer copies and truncates it
    between the last look for copies and the read. The read sees only what came after; the copy beside
    the log holds the rest, and is read."""
    import dataclasses

    log = tmp_path / "run.jsonl"
    lines = _lines("jsonl", 5)
    log.write_bytes(b"".join(lines[:10]))
    src = LineSource(log, find_reader(log), records=())
    src.poll()
    os.rename(log, tmp_path / "run.jsonl.1")
    log.write_bytes(b"")
    src.poll()  # the new, empty file is known now
    with log.open("ab") as fh:
        fh.write(b"".join(lines[10:20]))
    fired: list[bool] = []

    def racing(path, meta, skipped):  # type: ignore[no-untyped-def]
        if not fired and path == log:
            fired.append(True)
            shutil.copyfile(log, tmp_path / "run.jsonl.2")
            with log.open("r+b") as fh:
                fh.truncate(0)
                fh.write(b"".join(lines[20:40]))  # longer than what was there: the read goes through
        return real(path, meta, skipped)

    real = src.reader.read
    src.reader = dataclasses.replace(src.reader, read=racing)
    for _ in range(3):
        src.poll()
    run = src.run()
    assert fired and run is not None and run.steps.tolist() == list(range(1, 41)), src.messages


def test_a_new_generation_that_starts_with_the_same_bytes_is_not_read_as_growth(tmp_path: Path) -> None:
    """copytruncate, and the trainer (restarted) writes the same 5 KB banner again and more: the file is
    as long as before and starts the same, but its last bytes read differ, so it is a new file."""
    log = tmp_path / "run.log"
    banner = b"config: " + b"x" * 5000 + b"\n"
    log.write_bytes(banner + b"step:1 - actor/entropy:0.5\n")
    src = LineSource(log, find_reader(log), records=())
    src.poll()
    shutil.copyfile(log, tmp_path / "run.log.1")
    log.write_bytes(banner + b"step:2 - actor/entropy:0.5\nstep:3 - actor/entropy:0.5\n")  # truncated, rewritten
    src.poll()
    run = src.run()
    assert run is not None and run.steps.tolist() == [1, 2, 3], src.messages


def test_a_followed_wandb_export_keeps_its_clock_across_polls_and_a_restart(tmp_path: Path) -> None:
    """Rows exported from W&B appended while watched: the wall time of every step, read window by window,
    is the same after the watcher restarts from its state file."""
    import json

    log = tmp_path / "history.jsonl"

    def rows(steps: range) -> str:
        return "".join(json.dumps({"train/global_step": s, "train/loss": 1 / s, "_runtime": 10.0 * s,
                                   "_timestamp": 1_700_000_000.0 + 10.0 * s}) + "\n" for s in steps)

    log.write_text(rows(range(1, 4)))
    src = LineSource(log, find_reader(log), {}, [])
    src.poll()
    with log.open("a") as fh:
        fh.write(rows(range(4, 7)))
    src.poll()
    want = [1_700_000_000.0 + 10.0 * s for s in range(1, 7)]
    run = src.run()
    assert run is not None and run.wall is not None and run.wall_times[1].tolist() == want
    assert (run.wall.source, run.wall.started) == ("W&B _timestamp", 1_700_000_000.0)
    again = _restart(src, tmp_path / "state.sqlite").run()
    assert again is not None and again.wall is not None and again.wall_times[1].tolist() == want
    assert (again.wall.source, again.wall.started) == ("W&B _timestamp", 1_700_000_000.0)
    assert again.raw.columns == ["step", "train/loss"]
