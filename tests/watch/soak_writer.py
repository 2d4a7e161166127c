"""A trainer for the soak test, run as its own process: it writes a veRL JSONL log, a veRL console log
and a veRL JSONL log followed through a symlink, line by line at a steady rate, flushes lines half-way at
random, and every few dozen lines changes each log's file the ways real writers do:

- ``run.jsonl`` and ``train.log`` (:class:`Rotator`): renamed numbered up, RotatingFileHandler's shift,
  copytruncate, a copy put aside before a new file replaces the log, logrotate's ``dateext`` + ``compress``
  (renamed, then gzip'd), ``delaycompress`` (shifted, the older files gzip'd), ``olddir`` (moved into
  ``old/``, gzip'd half the time), and a rewrite in place (the same file written again, its bytes changed
  but not its records);
- ``latest.jsonl`` (:class:`Segments`): a symlink re-pointed at each new segment ``segs/seg-N.jsonl`` (its
  first line written before the switch or after), and now and then pointed for a few lines at
  ``old-run.jsonl``, another run's old log, then back.

It deletes nothing a log's steps are in, so every step stays in some file. It writes the first lines of
each log and waits for a file ``go`` beside them before the rest. Everything it wrote is also appended,
unrotated, to ``all-<log>``: what the watcher's run must equal; and the changes it made, of each kind, to
``written`` (JSON) at the end.

    python soak_writer.py FOLDER STEPS SEED LINES_PER_SECOND
"""

from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from rlvitals.synthetic.simulate import Scenario, console_lines, jsonl_lines

KINDS = ("rename", "shift", "copytruncate", "copy-replace", "compress", "delaycompress", "olddir", "rewrite")
#: the steps of ``old-run.jsonl`` start here: one of them in a watched run is a foreign record
FOREIGN = 1_000_000


def gzip_away(path: Path) -> Path:
    """What logrotate's ``compress`` does: gzip ``path`` beside it (keeping its modification time, as gzip
    does), then remove it."""
    packed = path.with_name(path.name + ".gz")
    st = path.stat()
    with path.open("rb") as src, gzip.open(packed, "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.utime(packed, ns=(st.st_atime_ns, st.st_mtime_ns))
    path.unlink()
    return packed


def rewritten(line: bytes) -> bytes:
    """The same record in other bytes: a JSON line with or without spaces after its separators, a console
    line's ``pid=4242`` as ``pid=04242`` and back."""
    if line.startswith(b"{"):
        row = json.loads(line)
        spaced = b'": ' in line
        return json.dumps(row, separators=(",", ":") if spaced else (", ", ": ")).encode()
    if b"pid=04242" in line:
        return line.replace(b"pid=04242", b"pid=4242")
    return line.replace(b"pid=4242", b"pid=04242")


@dataclass
class Rotator:
    """Rotates one log each of the :data:`KINDS` ways, under the names the real tools give: the renames and
    copies as logrotate's ``dateext`` with ``dateformat -%Y%m%d-%s`` (``run.log-20240101-1704067201``,
    numbered up by the seconds), RotatingFileHandler's shift as ``run.log.1``, ``run.log.2``... (``.2.gz`` and
    on after a ``delaycompress``). Nothing is ever deleted but a file gzip'd into its ``.gz``."""

    log: Path
    number: int = 0
    shifted: int = 0
    rotations: int = 0
    kinds: dict[str, int] = field(default_factory=dict)  # how many of each kind

    @property
    def writing(self) -> Path:
        return self.log

    def wrote(self) -> None:
        """A line was written (a symlinked log's detour ends after a few)."""

    def rotate(self, how: str) -> None:
        log = self.log
        self.rotations += 1
        self.kinds[how] = self.kinds.get(how, 0) + 1
        if how == "rename":
            self.number += 1
            os.rename(log, self._dated())
            log.write_bytes(b"")
        elif how in ("shift", "delaycompress"):  # .k -> .k+1 (or .k.gz -> .k+1.gz), then the log -> .1
            for k in range(self.shifted, 0, -1):
                for suffix in ("", ".gz"):
                    older = log.with_name(f"{log.name}.{k}{suffix}")
                    if older.exists():
                        os.rename(older, log.with_name(f"{log.name}.{k + 1}{suffix}"))
            self.shifted += 1
            os.rename(log, log.with_name(f"{log.name}.1"))
            log.write_bytes(b"")
            if how == "delaycompress" and log.with_name(f"{log.name}.2").exists():
                gzip_away(log.with_name(f"{log.name}.2"))  # the newest rotated file stays plain
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
        elif how == "compress":  # dateext + compress, no delaycompress
            self.number += 1
            os.rename(log, self._dated())
            log.write_bytes(b"")
            gzip_away(self._dated())
        elif how == "olddir":  # olddir old (the watcher is told: --rotated-into old), compressed every other time
            self.number += 1
            old = log.parent / "old"
            old.mkdir(exist_ok=True)
            moved = old / self._dated().name
            os.rename(log, moved)
            log.write_bytes(b"")
            if self.number % 2:
                gzip_away(moved)
        elif how == "rewrite":  # the same file written again, every line in other bytes
            lines = log.read_bytes().split(b"\n")[:-1]
            with log.open("r+b") as fh:
                fh.write(b"".join(rewritten(line) + b"\n" for line in lines))
                fh.truncate()
        else:
            raise ValueError(f"unknown rotation {how!r}; expected one of {', '.join(KINDS)}")

    def _dated(self) -> Path:
        return self.log.with_name(f"{self.log.name}-20240101-{1_704_067_200 + self.number}")


@dataclass
class Segments:
    """Keeps the symlink ``link`` pointed at the segment written (``segs/seg-N.jsonl``): at each ``segment``
    a new one, its first line written before the link is moved (``first``) or after; at a ``detour`` the
    link points at ``foreign`` for a few lines while the segment is written on, then back."""

    link: Path
    foreign: Path
    rng: random.Random
    rotations: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    n: int = 0
    back_in: int = 0  # lines until the detour ends
    pending: bool = False  # the link moves to the new segment once its first line is written
    folder: Path = field(init=False)

    def __post_init__(self) -> None:
        self.folder = self.link.parent / "segs"
        self.folder.mkdir()
        self.rotate("segment")
        self.rotations, self.kinds = 0, {}

    @property
    def writing(self) -> Path:
        return self.folder / f"seg-{self.n}.jsonl"

    @property
    def idle(self) -> bool:
        return not self.back_in and not self.pending

    def rotate(self, how: str) -> None:
        self.rotations += 1
        self.kinds[how] = self.kinds.get(how, 0) + 1
        if how == "detour":
            _point(self.link, self.foreign)
            self.back_in = self.rng.randint(1, 6)
            return
        self.n += 1
        self.writing.write_bytes(b"")
        self.pending = self.rng.random() < 0.5 and self.n > 1
        if not self.pending:
            _point(self.link, self.writing)

    def wrote(self) -> None:
        if self.pending:
            self.pending = False
            _point(self.link, self.writing)
        elif self.back_in:
            self.back_in -= 1
            if not self.back_in:
                _point(self.link, self.writing)


def _point(link: Path, target: Path) -> None:
    """Re-point ``link`` at ``target`` atomically: a new link renamed over it."""
    fresh = link.with_name(f".{link.name}.new")
    os.symlink(os.path.relpath(target, link.parent), fresh)
    os.replace(fresh, link)


class Log:
    def __init__(self, path: Path, lines: list[bytes], rng: random.Random, rotator: Rotator | Segments,
                 kinds: tuple[str, ...]) -> None:
        self.path, self.lines, self.rng, self.rotator, self.kinds = path, lines, rng, rotator, kinds
        self.until_rotation = rng.randint(20, 80)  # not before the first watcher looks (see main)
        self.all = path.with_name("all-" + path.name).open("ab")  # not named as a rotation of it
        if isinstance(rotator, Rotator):
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
        self.rotator.wrote()
        self.until_rotation -= 1
        if self.until_rotation <= 0 and (isinstance(self.rotator, Rotator) or self.rotator.idle):
            self.rotator.rotate(self.rng.choice(self.kinds))
            self.until_rotation = self.rng.randint(10, 80)

    def _append(self, data: bytes) -> None:
        with self.rotator.writing.open("ab") as fh:
            fh.write(data)


def main() -> None:
    folder, steps, seed, rate = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    rng = random.Random(seed)
    # entropy collapses two thirds in, and the gradient spikes: findings that alert. Three seeds: three runs (the
    # same run logged twice would be recognised as one, and alerted once)
    sc = Scenario(steps=steps, seed=seed, collapse_at=steps * 2 // 3, grad_spike_at=steps // 3)
    other = Scenario(steps=steps, seed=seed + 1, collapse_at=steps // 2, grad_spike_at=None)
    third = Scenario(steps=steps, seed=seed + 2, collapse_at=steps // 2, grad_spike_at=steps // 4)
    foreign = folder / "old-run.jsonl"  # another run's log, written long before this one
    foreign.write_bytes(b"".join(json.dumps({**json.loads(line), "step": FOREIGN + i}).encode() + b"\n"
                                 for i, line in enumerate(jsonl_lines(Scenario(steps=200, seed=seed + 3)))))
    os.utime(foreign, ns=(1_600_000_000 * 10**9,) * 2)
    logs = [Log(folder / "run.jsonl", [line + b"\n" for line in jsonl_lines(sc)], rng, Rotator(folder / "run.jsonl"),
                KINDS),
            Log(folder / "train.log", [(line + "\n").encode() for line in console_lines(other)], rng,
                Rotator(folder / "train.log"), KINDS),
            Log(folder / "latest.jsonl", [line + b"\n" for line in jsonl_lines(third)], rng,
                Segments(folder / "latest.jsonl", foreign, rng), ("segment", "segment", "segment", "detour"))]
    gap = 1.0 / rate
    head = 10  # the first lines (a console log's command and config come before its first step), then wait until
    for log in logs:  # a watcher follows the logs: what is rotated off before it first looks is history
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
    (folder / "written").write_text(json.dumps({log.path.name: log.rotator.kinds for log in logs}))


if __name__ == "__main__":
    main()
