"""A log whose earlier lines are rewritten in place: the same file (same inode), its earlier bytes changed
while it grew or kept its size — a trainer that writes its whole log again, a tool that edits it and
writes it back into the same file.

Before, a change that left the first and the last 4 KB read alone went unseen (the run kept the old
values), and one that did not was read as a new file on top of the old one (each step stored twice).
Now the watcher keeps a fingerprint of every byte it read, sees the change, says so once, and reads the
log again whole: the run and the stored records are what the file holds, what earlier files of the log
(rotated off before) gave included."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from rlvitals import load
from rlvitals.watch.watcher import Watcher
from watch.test_watcher import LINES, Clock, _append, _watcher

SAID = "rewritten in place"


def _edited(lines: list[bytes], steps: range, how: str) -> list[bytes]:
    """``lines`` with the entropy of ``steps`` changed: ``same size`` changes one digit, ``longer`` writes
    the value again with spaces after the separators (as ``json.dumps`` does)."""
    out = []
    for line in lines:
        row = orjson.loads(line)
        if row["step"] not in steps:
            out.append(line)
            continue
        if how == "same size":
            key = b'"actor/entropy":'
            at = line.index(key) + len(key) + 3  # a digit after "0."
            digit = b"7" if line[at:at + 1] != b"7" else b"3"
            out.append(line[:at] + digit + line[at + 1:])
        else:
            row["data"]["actor/entropy"] = row["data"]["actor/entropy"] * 2 + 0.125
            out.append(orjson.dumps(row).replace(b",", b", ").replace(b'":', b'": ') + b"\n")
    return out


def _write_in_place(log: Path, data: bytes) -> None:
    """Write ``data`` over the log's bytes in the same file (its inode kept)."""
    inode = log.stat().st_ino
    with log.open("r+b") as fh:
        fh.write(data)
        fh.truncate()
    assert log.stat().st_ino == inode


def _stored_once(w: Watcher, log: Path, expected: range) -> None:
    steps = [r.step for r in w.state.records(str(log)) if r.kind != "summary"]
    assert len(steps) == len(set(steps)), "a step stored twice"
    assert sorted(steps) == list(expected)


@pytest.mark.parametrize("how", ["same size", "longer"])
@pytest.mark.parametrize("where", [range(50, 61), range(1, 4), range(116, 121)])
def test_lines_rewritten_in_place_are_read_again_and_said_once(tmp_path: Path, how: str, where: range) -> None:
    log = tmp_path / "run.jsonl"
    log.write_bytes(b"".join(LINES[:120]))
    clock = Clock()
    w, _, err = _watcher(tmp_path, log, [], clock)
    w.cycle()
    lines = _edited(LINES[:120], where, how)
    _write_in_place(log, b"".join(lines))
    clock.now += 1.0
    w.cycle()
    _append(log, b"".join(LINES[120:160]))
    clock.now += 1.0
    w.cycle()
    run = w.follows[0].runs()[0]
    assert run.frame.equals(load(log)[0].frame), "the run is not what the file holds"
    _stored_once(w, log, range(1, 161))
    lines = _edited(lines + LINES[120:160], range(130, 135), how)  # a second rewrite: read again, not said again
    _write_in_place(log, b"".join(lines))
    clock.now += 1.0
    w.cycle()
    assert w.follows[0].runs()[0].frame.equals(load(log)[0].frame)
    w.close()
    w2, _, err2 = _watcher(tmp_path, log, [], clock)  # and a restarted watcher rebuilds that run
    clock.now += 1.0
    w2.cycle()
    assert w2.follows[0].runs()[0].frame.equals(load(log)[0].frame)
    _stored_once(w2, log, range(1, 161))
    said = err.getvalue()
    assert said.count(SAID) == 1, said
    assert "not seen" not in said and "replaced" not in said, said
    w2.close()


def test_a_rewrite_while_the_watcher_was_down_is_found_by_the_restarted_one(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    log.write_bytes(b"".join(LINES[:100]))
    clock = Clock()
    w, _, _ = _watcher(tmp_path, log, [], clock)
    w.cycle()
    w.close()
    _write_in_place(log, b"".join(_edited(LINES[:100], range(20, 40), "same size") + LINES[100:130]))
    w2, _, err = _watcher(tmp_path, log, [], clock)
    clock.now += 1.0
    w2.cycle()
    assert w2.follows[0].runs()[0].frame.equals(load(log)[0].frame)
    _stored_once(w2, log, range(1, 131))
    assert SAID in err.getvalue()
    w2.close()


def test_a_rewrite_after_a_rotation_keeps_what_the_rotated_file_gave(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    log.write_bytes(b"".join(LINES[:60]))
    clock = Clock()
    w, _, _ = _watcher(tmp_path, log, [], clock)
    w.cycle()
    os.rename(log, tmp_path / "run.jsonl.1")
    log.write_bytes(b"".join(LINES[60:140]))
    clock.now += 1.0
    w.cycle()
    _write_in_place(log, b"".join(_edited(LINES[60:140], range(90, 110), "longer")))
    clock.now += 1.0
    w.cycle()
    whole = tmp_path / "whole.jsonl"
    whole.write_bytes((tmp_path / "run.jsonl.1").read_bytes() + log.read_bytes())
    assert w.follows[0].runs()[0].frame.equals(load(whole)[0].frame)
    _stored_once(w, log, range(1, 141))
    w.close()


def test_a_new_training_written_over_the_log_is_not_a_rewrite(tmp_path: Path) -> None:
    """``> run.jsonl`` and the trainer goes on with later steps, longer than before by the next look: the
    steps read before stay (the file does not restate them), as before."""
    log = tmp_path / "run.jsonl"
    log.write_bytes(b"".join(LINES[:20]))
    clock = Clock()
    w, _, err = _watcher(tmp_path, log, [], clock)
    w.cycle()
    _write_in_place(log, b"".join(LINES[20:80]))
    clock.now += 1.0
    w.cycle()
    _stored_once(w, log, range(1, 81))
    assert SAID not in err.getvalue() and "replaced" in err.getvalue()
    w.close()
