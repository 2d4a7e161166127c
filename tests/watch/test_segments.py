"""A log followed through a symlink that the trainer re-points at each new segment (``latest.jsonl ->
segments/seg-3.jsonl``), every segment left on the disk.

The watched path changes file at each switch, and no file beside the link is named after it: before, the
lines the trainer appended to a segment after the watcher's last look and before the switch were lost
(and the watcher said the old file was gone). Now the segment the link pointed at is read to its end,
then the segments written since (the link moved more than once between two looks), then the new one from
its first line; a link pointed back at a segment already read, or at an old file of another run, brings
none of their lines in again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rlvitals.synthetic.simulate import Scenario, jsonl_lines
from rlvitals.watch.watcher import Watcher
from watch.test_watcher import LINES, SC, Clock, _append, _watcher


def _point(link: Path, target: Path) -> None:
    """Re-point ``link`` at ``target`` the way a trainer does it atomically: a new link, renamed over."""
    fresh = link.with_name(f".{link.name}.new")
    os.symlink(os.path.relpath(target, link.parent), fresh)
    os.replace(fresh, link)


def _steps(w: Watcher, link: Path) -> list[int]:
    return [r.step for r in w.state.records(str(link)) if r.kind != "summary"]


class Trainer:
    """Writes ``LINES`` into numbered segments under ``segments/`` and keeps ``link`` pointed at the one
    it writes; it deletes nothing."""

    def __init__(self, folder: Path, link: Path) -> None:
        self.folder, self.link = folder, link
        folder.mkdir(exist_ok=True)
        self.n, self.written = 0, 0

    @property
    def segment(self) -> Path:
        return self.folder / f"seg-{self.n}.jsonl"

    def write(self, upto: int) -> None:
        _append(self.segment, b"".join(LINES[self.written:upto]))
        self.written = upto

    def switch(self, first: str = "written, then pointed at") -> None:
        """A new segment: its first line written before the link is moved to it, or after."""
        self.n += 1
        self.segment.write_bytes(b"")
        if first == "written, then pointed at":
            self.write(self.written + 1)
            _point(self.link, self.segment)
        else:
            _point(self.link, self.segment)
            self.write(self.written + 1)


def _stored_once(w: Watcher, link: Path) -> None:
    steps = _steps(w, link)
    assert len(steps) == len(set(steps)), "a step stored twice"
    assert sorted(steps) == list(range(1, SC.steps + 1)), "steps lost"


@pytest.mark.parametrize("order", ["written, then pointed at", "pointed at, then written"])
def test_a_link_repointed_at_each_new_segment_loses_and_repeats_no_step(tmp_path: Path, order: str) -> None:
    link = tmp_path / "latest.jsonl"
    trainer = Trainer(tmp_path / "segments", link)
    trainer.switch(order)
    clock = Clock()
    w, _, err = _watcher(tmp_path, link, [], clock)
    per = 50  # steps in a segment: the watcher looks after 40 of them, the other 10 come before the switch
    for k in range(SC.steps // per):
        trainer.write(k * per + 40)
        clock.now += 1.0
        w.cycle()
        trainer.write((k + 1) * per)  # appended to the segment, never seen through the link
        if trainer.written < SC.steps:
            trainer.switch(order)
    clock.now += 1.0
    w.cycle()
    _stored_once(w, link)
    said = err.getvalue()
    assert "gone" not in said and "not seen" not in said and "were not read" not in said, said
    assert f"{link}: now points at seg-2.jsonl (was seg-1.jsonl, read to line 40); read the rest of seg-1.jsonl; " \
        "following seg-2.jsonl from its first line" in said, said
    w.close()


def test_segments_the_link_went_through_between_two_looks_or_while_the_watcher_was_down(tmp_path: Path) -> None:
    link = tmp_path / "latest.jsonl"
    trainer = Trainer(tmp_path / "segments", link)
    trainer.switch()
    clock = Clock()
    w, _, err = _watcher(tmp_path, link, [], clock)
    trainer.write(30)
    w.cycle()
    trainer.write(45)
    for upto in (70, 90):  # seg-2 and seg-3 are never pointed at when the watcher looks
        trainer.switch()
        trainer.write(upto)
    trainer.switch()
    trainer.write(110)
    clock.now += 1.0
    w.cycle()
    w.close()  # killed; the trainer goes on through two more segments
    trainer.write(120)
    for upto in (150, 170):
        trainer.switch()
        trainer.write(upto)
    w2, _, err2 = _watcher(tmp_path, link, [], clock)
    clock.now += 1.0
    w2.cycle()
    trainer.switch()
    trainer.write(SC.steps)
    clock.now += 1.0
    w2.cycle()
    _stored_once(w2, link)
    said = err.getvalue() + err2.getvalue()
    assert "gone" not in said and "were not read" not in said, said
    assert "read seg-2.jsonl whole" in said and "read seg-3.jsonl whole" in said, said
    w2.close()


def test_a_link_pointed_at_an_old_file_or_back_at_a_segment_read_brings_nothing_in_twice(tmp_path: Path) -> None:
    """The reverse risk: someone points the link at an unrelated old log (another run's), then back at the
    segment being written; or the trainer points it back at an earlier segment. None of their lines is
    taken as new, and what the trainer wrote meanwhile is read once."""
    link = tmp_path / "latest.jsonl"
    other = tmp_path / "old-run.jsonl"
    other.write_bytes(b"".join(line + b"\n" for line in jsonl_lines(Scenario(steps=300, seed=5))))
    os.utime(other, ns=(1_600_000_000 * 10**9,) * 2)  # written long before this run
    trainer = Trainer(tmp_path / "segments", link)
    trainer.switch()
    clock = Clock()
    w, _, err = _watcher(tmp_path, link, [], clock)
    trainer.write(60)
    w.cycle()
    trainer.write(70)
    _point(link, other)  # a detour: the trainer writes on in its segment meanwhile
    clock.now += 1.0
    w.cycle()
    trainer.write(80)
    _point(link, trainer.segment)
    clock.now += 1.0
    w.cycle()
    first = trainer.segment
    trainer.write(100)
    trainer.switch()
    trainer.write(140)
    clock.now += 1.0
    w.cycle()
    _point(link, first)  # back at a segment read to its end
    clock.now += 1.0
    w.cycle()
    _point(link, trainer.segment)
    trainer.write(SC.steps)
    clock.now += 1.0
    w.cycle()
    _stored_once(w, link)  # not one of old-run.jsonl's 300 steps, none of seg-1's twice
    assert "now points at old-run.jsonl, last written before" in err.getvalue(), err.getvalue()
    w.close()
