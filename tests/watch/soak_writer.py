"""A trainer for the soak test, run as its own process: it writes a veRL JSONL log and a veRL
console log line by line at a steady rate, flushes lines half-way at random, and rotates each log
every few dozen lines in one of four ways (rename numbered up, RotatingFileHandler's shift,
copytruncate, a copy put aside before a new file replaces the log). It deletes nothing, so every
step stays in some file. It writes the first lines of each log and waits for a file ``go`` beside them
before the rest. Everything it wrote is also appended, unrotated, to ``all-<log>``: what
the watcher's run must equal.

    python soak_writer.py FOLDER STEPS SEED LINES_PER_SECOND
"""

from __future__ import annotations

import os
import random
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rlvitals.synthetic.simulate import Scenario, console_lines, jsonl_lines

KINDS = ("rename", "shift", "copytruncate", "copy-replace")


@dataclass
class Rotator:
    """Rotates one log each of the four ways, under the names the real tools give: the renames and copies
    as logrotate's ``dateext`` with ``dateformat -%Y%m%d-%s`` (``run.log-20240101-1704067201``, numbered up
    by the seconds), RotatingFileHandler's shift as ``run.log.1``, ``run.log.2``... Nothing is ever deleted."""

    log: Path
    number: int = 0
    shifted: int = 0
    rotations: int = 0

    def rotate(self, how: str) -> None:
        log = self.log
        self.rotations += 1
        if how == "rename":
            self.number += 1
            os.rename(log, self._dated())
            log.write_bytes(b"")
        elif how == "shift":  # .k -> .k+1, then the log -> .1
            for k in range(self.shifted, 0, -1):
                os.rename(log.with_name(f"{log.name}.{k}"), log.with_name(f"{log.name}.{k + 1}"))
            self.shifted += 1
            os.rename(log, log.with_name(f"{log.name}.1"))
            log.write_bytes(b"")
        elif how == "copytruncate":
            self.number += 1
            shutil.copyfile(log, self._dated())
            with log.open("r+b") as fh:
                fh.truncate(0)
        elif how == "copy-replace":  # put a copy aside, then a new file takes the log's name
            self.number += 1
            shutil.copyfile(log, self._dated())
            fresh = log.with_name(f".{log.name}.new")
            fresh.write_bytes(b"")
            os.replace(fresh, log)
        else:
            raise ValueError(f"unknown rotation {how!r}; expected one of {', '.join(KINDS)}")

    def _dated(self) -> Path:
        return self.log.with_name(f"{self.log.name}-20240101-{1_704_067_200 + self.number}")


class Log:
    def __init__(self, path: Path, lines: list[bytes], rng: random.Random) -> None:
        self.path, self.lines, self.rng = path, lines, rng
        self.rotator = Rotator(path)
        self.until_rotation = rng.randint(20, 80)  # not before the first watcher looks (see main)
        self.all = path.with_name("all-" + path.name).open("ab")  # not named as a rotation of it
        path.write_bytes(b"")

    def write(self, i: int) -> None:
        if i >= len(self.lines):
            return
        line = self.lines[i]
        if self.rng.random() < 0.25:  # flushed half-way: the watcher may look in between
            cut = self.rng.randint(1, len(line) - 1)
            self._append(line[:cut])
            time.sleep(0.0005)
            self._append(line[cut:])
        else:
            self._append(line)
        self.all.write(line)
        self.all.flush()
        self.until_rotation -= 1
        if self.until_rotation <= 0:
            self.rotator.rotate(self.rng.choice(KINDS))
            self.until_rotation = self.rng.randint(10, 80)

    def _append(self, data: bytes) -> None:
        with self.path.open("ab") as fh:
            fh.write(data)


def main() -> None:
    folder, steps, seed, rate = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    rng = random.Random(seed)
    # entropy collapses two thirds in, and the gradient spikes: findings that alert. Two seeds: two runs (the
    # same run logged twice would be recognised as one, and alerted once)
    sc = Scenario(steps=steps, seed=seed, collapse_at=steps * 2 // 3, grad_spike_at=steps // 3)
    other = Scenario(steps=steps, seed=seed + 1, collapse_at=steps // 2, grad_spike_at=None)
    logs = [Log(folder / "run.jsonl", [line + b"\n" for line in jsonl_lines(sc)], rng),
            Log(folder / "train.log", [(line + "\n").encode() for line in console_lines(other)], rng)]
    gap = 1.0 / rate
    head = 10  # the first lines (a console log's command and config come before its first step), then wait until
    for log in logs:  # a watcher follows both logs: what is rotated off before it first looks is history
        for i in range(head):
            log.write(i)
    go = folder / "go"
    for _ in range(60_000):
        if go.exists():
            break
        time.sleep(0.01)
    for i in range(head, max(len(log.lines) for log in logs)):
        for log in logs:
            log.write(i)
        time.sleep(gap)
    for log in logs:
        log.all.close()
    (folder / "written").write_text(" ".join(str(log.rotator.rotations) for log in logs))


if __name__ == "__main__":
    main()
