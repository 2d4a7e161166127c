"""Where a followed log's content went: the rules a user gives (``--rotated-into``, ``--rotation-pattern``),
the fingerprint that tells a log rewritten in place, and the segments a re-pointed symlink went through."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rlvitals.ingest import FileCursor, RotationRules, Sweep, advance, examine, segments
from rlvitals.ingest.cursor import PIECE
from rlvitals.synthetic.simulate import Scenario, jsonl_lines

LINES = [line + b"\n" for line in jsonl_lines(Scenario(steps=900, collapse_at=None, grad_spike_at=None))]


def test_a_pattern_that_does_not_compile_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match=r"RotationRules: pattern 'run.log.\(' is not a regular expression "
                                         r"\(missing \), unterminated subpattern at position 8\)"):
        RotationRules((), "run.log.(")


def test_the_rules_folders_are_the_logs_own_then_the_others_relative_to_it(tmp_path: Path) -> None:
    log = tmp_path / "runs" / "train.log"
    rules = RotationRules.of(["old", tmp_path / "archive", "old"], r"train\.log\.bak\d+")
    assert rules.folders(log) == [log.parent, log.parent / "old", tmp_path / "archive"]
    assert rules.named(log, "train.log.bak12") and rules.named(log, "train.log.3.gz")
    assert not rules.named(log, "train_eval.log") and not RotationRules().named(log, "train.log.bak12")


def _cursor(log: Path, *ends: int) -> FileCursor:
    """The cursor of a follower that read ``log`` up to each of ``ends`` in turn."""
    cursor = FileCursor.start(log)
    for end in ends:
        cursor = advance(cursor, log, log.stat(), end, 0)
    return cursor


def test_the_fingerprint_goes_on_from_where_it_stopped(tmp_path: Path) -> None:
    """Read in windows that end inside pieces and on their edges, the fingerprint is the one of a single read."""
    log = tmp_path / "run.jsonl"
    log.write_bytes(b"".join(LINES))
    size = log.stat().st_size
    assert size > 3 * PIECE
    whole = _cursor(log, size)
    assert whole.piece_count == -(-size // PIECE)
    assert _cursor(log, 1000, PIECE, PIECE + 7, 3 * PIECE - 1, 3 * PIECE, size).pieces == whole.pieces


def test_a_change_far_from_the_first_and_last_bytes_read_is_found_a_piece_a_look(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    log.write_bytes(b"".join(LINES))
    cursor = _cursor(log, log.stat().st_size)
    with log.open("r+b") as fh:  # a digit, in the second piece: the same size, the same first and last bytes
        fh.seek(PIECE + PIECE // 2)
        at = fh.tell() + fh.read(64).index(b"0.") + 2
        fh.seek(at)
        digit = fh.read(1)
        fh.seek(at)
        fh.write(b"1" if digit != b"1" else b"2")
    os.utime(log, ns=(1, 1))
    assert examine(cursor, log)[0] == "same"  # the first and last bytes alone do not see it
    sweep = Sweep()
    looks = [examine(cursor, log, sweep)[0] for _ in range(cursor.piece_count)]
    assert looks == ["same", "replaced"] + ["same"] * (cursor.piece_count - 2)


def test_an_unchanged_log_is_compared_a_round_then_no_more_until_it_changes(tmp_path: Path) -> None:
    sweep = Sweep()
    assert [sweep.next(7, 3) for _ in range(5)] == [0, 1, 2, None, None]
    assert [sweep.next(8, 3) for _ in range(4)] == [0, 1, 2, None]  # modified: one round again
    changing = Sweep()
    assert [changing.next(t, 2) for t in (1, 2, 3, 3, 3, 3)] == [0, 1, 0, 1, None, None]


def test_segments_between_are_the_ones_written_since_and_before_the_new_target(tmp_path: Path) -> None:
    """The link moved from seg-1 to seg-4: seg-2 and seg-3 were written in between; seg-5, written after the
    new target, and an older seg-0, and another shape of name (``eval-2.jsonl``) are not."""
    link = tmp_path / "latest.jsonl"
    times = {"seg-0.jsonl": 1, "seg-1.jsonl": 10, "seg-2.jsonl": 20, "seg-3.jsonl": 30, "seg-4.jsonl": 40,
             "seg-5.jsonl": 50, "eval-2.jsonl": 25}
    for i, (name, t) in enumerate(times.items()):
        (tmp_path / name).write_bytes(LINES[i])
        os.utime(tmp_path / name, ns=(t * 10**9,) * 2)
    os.symlink("seg-1.jsonl", link)
    seg1 = tmp_path / "seg-1.jsonl"
    cursor = advance(FileCursor(str(link), target=str(seg1)), seg1, seg1.stat(), seg1.stat().st_size, 1)
    os.remove(link)
    os.symlink("seg-4.jsonl", link)
    found = segments(cursor, (tmp_path / "seg-4.jsonl").stat(), ())
    assert found.old is not None and found.old[0] == seg1
    assert [p.name for p, _ in found.between] == ["seg-2.jsonl", "seg-3.jsonl"]
