"""Following growing logs: partial writes, truncation, rotation, replacement, rewrite, restart.

Every case ends by comparing the followed Run's frame with ``load()`` of the final file (or of
the concatenation of what the trainer wrote, for a rotated or truncated log): no step lost,
none duplicated, every value the same.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from wandb_env import offline_wandb

from rlvitals import load
from rlvitals.errors import InputError
from rlvitals.ingest import find_reader
from rlvitals.ingest.cursor import FileCursor, advance, complete_end, count_lines, examine
from rlvitals.ingest.rotated import rotations
from rlvitals.run.follow import Follow, LineSource, SnapshotSource
from rlvitals.run.run import Run
from rlvitals.synthetic.simulate import Scenario, console_lines, jsonl_lines
from rlvitals.watch.state import WatchState

SC = Scenario(steps=60, collapse_at=40, grad_spike_at=None)


def _jsonl(sc: Scenario = SC) -> list[bytes]:
    return [line + b"\n" for line in jsonl_lines(sc)]


def _console(sc: Scenario = SC) -> list[bytes]:
    return [(line + "\n").encode() for line in console_lines(sc)]


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as fh:
        fh.write(data)


def _same(run: Run | None, expected: Path) -> None:
    """The followed run equals a fresh load of ``expected``, with no step logged twice."""
    assert run is not None
    loaded = load(expected)[0]
    assert run.frame.shape == loaded.frame.shape
    assert run.frame.equals(loaded.frame), "the followed frame differs from load() of the file"
    assert run.steps.tolist() == sorted(set(run.steps.tolist()))
    assert not [n for n in run.notes if "logged twice" in n], run.notes
    assert run.framework == loaded.framework and run.config == loaded.config


def _follow(path: Path) -> LineSource:
    return LineSource(path, find_reader(path), records=())  # records=(): it keeps them to be stored


def _restarted(src: LineSource, folder: Path) -> LineSource:
    """What a watcher restarted on the same state file rebuilds: ``src``'s state and records are
    committed to a real state file, and a new source is made from that file alone."""
    key = str(src.path)
    state = WatchState(folder / "state.sqlite")
    state.commit({key: src.state()}, {}, [], [], {key: src.pending()})
    state.close()
    state = WatchState(folder / "state.sqlite")
    again = LineSource(src.path, find_reader(src.path), state.sources()[key], state.packed(key))
    state.close()
    return again


def test_cursor_examine_names_growth_truncation_replacement_and_absence(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    assert examine(FileCursor.start(log))[0] == "missing"
    log.write_bytes(b"a\nb\npart")
    change, st = examine(FileCursor.start(log))
    assert change == "grown" and st is not None
    end = complete_end(log, 0, st.st_size)
    assert end == 4  # "part" has no newline yet
    cursor = advance(FileCursor.start(log), log, st, end, count_lines(log, 0, end))
    assert (cursor.offset, cursor.lines) == (4, 2)
    assert examine(cursor)[0] == "grown"  # the partial line is there, complete_end decides
    log.write_bytes(b"a\n")
    assert examine(cursor)[0] == "truncated"
    log.write_bytes(b"X\nb\npart and more")
    assert examine(cursor)[0] == "replaced"  # same inode, longer, other first bytes
    os.replace(tmp_path / "run.log", tmp_path / "run.log.1")
    (tmp_path / "run.log").write_bytes(b"a\nb\n")
    st2 = log.stat()
    moved = FileCursor(str(log), cursor.device, cursor.inode, 4, 2, cursor.head)
    assert examine(moved)[0] == ("replaced" if st2.st_ino != cursor.inode else "same")
    # the renamed file was rewritten before it went: by content it is not what was read
    assert rotations(moved, (st2.st_dev, st2.st_ino), ()).old is None
    (tmp_path / "run.log.1").write_bytes(b"a\nb\nmore\n")  # what a rename rotation leaves: the same bytes, and on
    found = rotations(moved, (st2.st_dev, st2.st_ino), ())
    assert found.old is not None and found.old[0] == tmp_path / "run.log.1"


def test_complete_end_scans_back_across_chunks(tmp_path: Path) -> None:
    log = tmp_path / "long.log"
    log.write_bytes(b"x" * 10 + b"\n" + b"y" * 200_000)
    assert complete_end(log, 0, log.stat().st_size) == 11
    assert complete_end(log, 11, log.stat().st_size) == 11


@pytest.mark.parametrize("lines", [_jsonl, _console], ids=["verl-jsonl", "verl-console"])
def test_partial_writes_are_read_once_complete(tmp_path: Path, lines: object) -> None:
    data = b"".join(lines())  # type: ignore[operator]
    log = tmp_path / ("run.jsonl" if data.startswith(b"{") else "run.log")
    cut = [0, 700, 701, 5_000, len(data) // 2, len(data) // 2 + 13, len(data) - 40, len(data)]
    log.write_bytes(data[: cut[1]] if data.startswith(b"{") else data[: data.index(b"step:2 ")])
    src = _follow(log)
    log.write_bytes(b"")
    steps_seen: list[int] = []
    for a, b in zip(cut, cut[1:], strict=False):
        _append(log, data[a:b])
        src.poll()
        run = src.run()
        if run is not None:
            steps_seen.append(len(run.steps))
    assert steps_seen == sorted(steps_seen)
    _same(src.run(), log)
    assert src.cursor.offset == len(data) and src.cursor.lines == data.count(b"\n")


def test_half_a_line_stays_unread_until_its_newline(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    lines = _jsonl()
    log.write_bytes(lines[0] + lines[1][:30])
    src = _follow(log)
    assert src.poll()
    run = src.run()
    assert run is not None and run.steps.tolist() == [1] and run.skipped.count == 0
    assert not src.poll()  # nothing complete was added
    _append(log, lines[1][30:])
    assert src.poll()
    run = src.run()
    assert run is not None and run.steps.tolist() == [1, 2] and run.skipped.count == 0
    assert run.raw.height == 2


def test_window_records_point_at_their_true_line(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    lines = _jsonl()
    log.write_bytes(b"".join(lines[:5]))
    src = _follow(log)
    src.poll()
    _append(log, b"not json\n" + lines[5])
    src.poll()
    reason = "invalid JSON (Expecting value at column 1); the line was skipped"
    assert src.builder.skipped.reasons == [f"{log}:6: {reason}"]


def test_truncation_after_a_poll_keeps_old_steps_and_reads_the_new_content(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    lines = _jsonl()
    log.write_bytes(b"".join(lines[:30]))
    src = _follow(log)
    src.poll()
    log.write_bytes(b"".join(lines[30:]))  # same inode, shorter: "> run.jsonl" then the trainer goes on
    assert log.stat().st_size < src.cursor.offset
    src.poll()
    whole = tmp_path / "whole.jsonl"
    whole.write_bytes(b"".join(lines))
    _same(src.run(), whole)
    assert any("truncated" in m for m in src.messages)


def test_copytruncate_recovers_lines_written_after_the_last_poll(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    lines = _console()
    log.write_bytes(b"".join(lines[:20]))
    src = _follow(log)
    src.poll()
    _append(log, b"".join(lines[20:35]))  # written, never polled
    shutil.copyfile(log, tmp_path / "run.log.1")  # logrotate copytruncate
    with log.open("r+b") as fh:
        fh.truncate(0)
    _append(log, b"".join(lines[35:]))
    src.poll()
    whole = tmp_path / "whole.log"
    whole.write_bytes(b"".join(lines))
    _same(src.run(), whole)
    assert any("run.log.1" in m for m in src.messages)


def test_rotation_finishes_the_renamed_file_first(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    lines = _jsonl()
    log.write_bytes(b"".join(lines[:25]))
    src = _follow(log)
    src.poll()
    _append(log, b"".join(lines[25:31]) + lines[31][:17])  # more lines and a half one, never polled
    _append(log, lines[31][17:])
    os.rename(log, tmp_path / "run.jsonl.1")
    assert not src.poll()  # between the rename and the new file: nothing to read, nothing lost
    log.write_bytes(b"".join(lines[32:50]))
    src.poll()
    _append(log, b"".join(lines[50:]))
    src.poll()
    whole = tmp_path / "whole.jsonl"
    whole.write_bytes(b"".join(lines))
    _same(src.run(), whole)
    assert any("read the rest of the old content from run.jsonl.1" in m for m in src.messages)


def test_replacement_with_other_content_starts_again_without_duplicates(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    first = _jsonl(Scenario(steps=30, seed=1, collapse_at=None, grad_spike_at=None))
    resumed = _jsonl(Scenario(steps=60, seed=2, collapse_at=None, grad_spike_at=None))[20:]  # resumed at step 21
    log.write_bytes(b"".join(first))
    src = _follow(log)
    src.poll()
    tmp = tmp_path / "new.jsonl"
    tmp.write_bytes(b"".join(resumed))
    os.replace(tmp, log)  # a new inode at the same path; the old file is gone
    src.poll()
    run = src.run()
    concat = tmp_path / "concat.jsonl"
    concat.write_bytes(b"".join(first) + b"".join(resumed))
    loaded = load(concat)[0]
    assert run is not None and run.frame.equals(loaded.frame)
    assert run.steps.tolist() == list(range(1, 61))  # steps 21-30 replayed: one row each, later value kept
    assert any("replaced" in m and "not seen" in m for m in src.messages)


def test_rewrite_in_place_with_other_first_bytes_is_a_replacement(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    lines = _jsonl()
    log.write_bytes(b"".join(lines[:10]))
    src = _follow(log)
    src.poll()
    with log.open("r+b") as fh:  # same inode, longer, different start
        fh.write(b"".join(lines[10:40]))
    src.poll()
    assert any("replaced" in m for m in src.messages)
    run = src.run()
    assert run is not None and run.steps.tolist() == list(range(1, 41))


def test_restart_rebuilds_from_persisted_cursor_including_rotated_file(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    lines = _jsonl()
    log.write_bytes(b"".join(lines[:20]))
    src = _follow(log)
    src.poll()
    os.rename(log, tmp_path / "run.jsonl.1")
    log.write_bytes(b"".join(lines[20:30]))
    src.poll()
    _append(log, b"".join(lines[30:45]))  # written while the watcher was down
    again = _restarted(src, tmp_path)
    again.poll()
    _append(log, b"".join(lines[45:]))
    again.poll()
    whole = tmp_path / "whole.jsonl"
    whole.write_bytes(b"".join(lines))
    _same(again.run(), whole)


def test_restart_after_a_rotation_while_down(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    lines = _jsonl()
    log.write_bytes(b"".join(lines[:20]))
    src = _follow(log)
    src.poll()
    _append(log, b"".join(lines[20:28]))
    os.rename(log, tmp_path / "run.jsonl.1")
    log.write_bytes(b"".join(lines[28:]))
    again = _restarted(src, tmp_path)
    again.poll()
    whole = tmp_path / "whole.jsonl"
    whole.write_bytes(b"".join(lines))
    _same(again.run(), whole)


def _trl_state(shape: dict[str, object], history: list[dict[str, object]], step: int) -> dict[str, object]:
    """A trainer_state.json of the real file's shape, as a checkpoint at ``step`` writes it."""
    return {**{k: v for k, v in shape.items() if k != "log_history"}, "global_step": step, "log_history": history}


def test_trainer_state_rewritten_at_checkpoints(tmp_path: Path, real: Path) -> None:
    shape = json.loads((real / "trl__UnslothGRPO__checkpoint-250_trainer_state.json").read_text())
    history = shape["log_history"]
    state = tmp_path / "trainer_state.json"
    state.write_text(json.dumps(_trl_state(shape, history[:100], 100), indent=2))
    follow = Follow(state, None, min_gap=5.0)
    assert follow.poll(now=0.0)
    assert isinstance(follow.inner, SnapshotSource)
    assert follow.runs()[0].steps.tolist() == list(range(1, 101))
    text = json.dumps(_trl_state(shape, history[:200], 200), indent=2)
    state.write_text(text[: len(text) // 2])  # caught mid-rewrite
    assert not follow.poll(now=1.0)  # throttled: 5 s have not passed
    assert not follow.poll(now=6.0)  # half a JSON file: the last complete read is kept
    assert any("kept the last complete read" in m for m in follow.messages)
    assert follow.runs()[0].steps.tolist() == list(range(1, 101))
    state.write_text(text)
    assert follow.poll(now=12.0)
    state.write_text(json.dumps(_trl_state(shape, history, 250), indent=2))
    assert follow.poll(now=18.0)
    run = follow.runs()[0]
    assert run.frame.equals(load(state)[0].frame) and len(run.steps) == 250


def test_tensorboard_growing_between_flushes(tmp_path: Path) -> None:
    tbx = pytest.importorskip("tensorboardX")
    folder = tmp_path / "tb"
    writer = tbx.SummaryWriter(str(folder))
    follow = Follow(folder, None, min_gap=0.0)
    assert not follow.poll(now=0.0)  # no event file with a scalar yet
    seen = []
    for chunk in range(4):
        for step in range(chunk * 10 + 1, chunk * 10 + 11):
            writer.add_scalar("actor/entropy", 0.5 - step / 200, step)
            writer.add_scalar("critic/score/mean", step / 40, step)
        writer.flush()
        follow.poll(now=float(chunk + 1))
        seen.append(len(follow.runs()[0].steps))
    writer.add_scalar("actor/entropy", 0.1, 41)  # one tag of step 41 only, then the other
    writer.flush()
    follow.poll(now=10.0)
    writer.add_scalar("critic/score/mean", 1.0, 41)
    writer.close()
    follow.poll(now=11.0)
    # tensorboardX writes from a background thread, so a poll sees what reached the disk so far
    assert seen == sorted(seen) and 0 < seen[0] <= 10 and seen[-1] <= 40
    run = follow.runs()[0]
    assert run.frame.equals(load(folder)[0].frame)
    assert run.frame.filter(pl.col("step") == 41).null_count().sum_horizontal().item() == 0


def test_waits_for_a_log_that_does_not_exist_yet(tmp_path: Path) -> None:
    log = tmp_path / "later.jsonl"
    follow = Follow(log, None, min_gap=0.0)
    assert not follow.poll(now=0.0)
    assert follow.messages == [f"{log}: no such file or folder; waiting for it to appear"]
    log.write_bytes(b"")
    assert not follow.poll(now=1.0)
    log.write_bytes(b"".join(_jsonl()[:3]))
    assert follow.poll(now=2.0)
    assert follow.runs()[0].steps.tolist() == [1, 2, 3]


def test_a_log_created_while_it_is_being_looked_up_is_waited_for(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer creates the file between the lookup finding nothing and the watcher reacting: the
    watcher waits (the next poll reads it) instead of treating the lookup's "no such file" as fatal."""
    import rlvitals.run.follow as sources

    log = tmp_path / "racing.jsonl"

    def lookup_then_create(path: Path, fmt: str | None = None) -> object:
        try:
            return find_reader(path, fmt)
        finally:
            log.write_bytes(b"".join(_jsonl()[:2]))

    monkeypatch.setattr(sources, "find_reader", lookup_then_create)
    follow = Follow(log, None, min_gap=0.0)
    assert not follow.poll(now=0.0)
    assert follow.messages == [f"{log}: no such file or folder; waiting for it to appear"]
    assert follow.poll(now=1.0)
    assert follow.runs()[0].steps.tolist() == [1, 2]


def test_an_unrecognised_file_is_reported_once_while_waiting(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo\nloading model...\n")
    follow = Follow(log, None, min_gap=0.0)
    assert not follow.poll(now=0.0) and not follow.poll(now=1.0)
    assert len(follow.messages) == 1
    assert follow.messages[0].startswith(f"{log}: this file is not a training log rlvitals can read")
    assert follow.messages[0].endswith("; waiting for it to be written")
    _append(log, _console()[-1])
    assert follow.poll(now=2.0) and follow.runs()[0].steps.tolist() == [60]


def test_a_path_that_exists_but_cannot_be_read_raises(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="unknown format 'nope'"):
        Follow(tmp_path, "nope", 0.0).poll(now=0.0)


def _wait(follow: Follow, now: float, enough: int, timeout: float = 20.0) -> int:
    """Poll until at least ``enough`` steps are visible (wandb's service writes 32 KiB blocks
    from another process, so when they reach the disk is not ours to choose)."""
    deadline = time.monotonic() + timeout
    seen = 0
    while time.monotonic() < deadline:
        follow.poll(now=now)
        seen = len(follow.runs()[0].steps) if follow.runs() else 0
        if seen >= enough:
            break
        time.sleep(0.1)
    return seen


@pytest.mark.tracker
def test_wandb_offline_growing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wandb = pytest.importorskip("wandb")
    offline_wandb(monkeypatch, tmp_path)
    run = wandb.init(mode="offline", dir=str(tmp_path), project="rlvitals-test",
                     config={"algorithm": {"adv_estimator": "grpo"}})
    folder = Path(run.dir).parent
    follow = Follow(folder, None, min_gap=0.0)
    seen = []
    for chunk in range(3):
        for step in range(chunk * 300 + 1, chunk * 300 + 301):
            run.log({**{f"extra/m{i}": step + i for i in range(20)}, "actor/entropy": 0.5 - step / 1000,
                     "critic/score/mean": step / 300}, step=step)
        seen.append(_wait(follow, float(chunk), chunk * 300 + 1))
    run.finish()
    _wait(follow, 100.0, 900)
    assert seen == sorted(seen) and seen[0] > 0 and seen[-1] > 600
    final = follow.runs()[0]
    assert len(final.steps) == 900 and final.frame.equals(load(folder)[0].frame)


def _rotate(log: Path, to: Path) -> None:
    """What logrotate (without copytruncate) and RotatingFileHandler do: rename, start a new file."""
    os.rename(log, to)
    log.write_bytes(b"")


@pytest.mark.parametrize("where", ["matches", "complete_end", "count_lines", "read"])
def test_a_rotation_between_the_stat_and_the_open_is_retried_not_raised(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """The trainer renames its log at the worst moment: after the poll looked at the file, before it
    opened it. The poll reports it once and reads nothing; the next polls read the rotated file and the
    new one, with no step lost or repeated."""
    import rlvitals.ingest.cursor as follow_mod
    import rlvitals.run.follow as sources

    log = tmp_path / "run.jsonl"
    lines = _jsonl()
    log.write_bytes(b"".join(lines[:20]))
    src = _follow(log)
    src.poll()
    _append(log, b"".join(lines[20:30]))
    fired: list[str] = []

    def racing(fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not fired:
                fired.append(where)
                os.rename(log, tmp_path / "run.jsonl.1")  # the new file comes a moment later
            return fn(*args, **kwargs)
        return wrapper

    if where == "matches":  # examine() compares the first and last bytes read
        monkeypatch.setattr(follow_mod.Generation, "matches", racing(follow_mod.Generation.matches))
    elif where == "read":
        import dataclasses

        src.reader = dataclasses.replace(src.reader, read=racing(src.reader.read))
    else:
        monkeypatch.setattr(sources, where, racing(getattr(sources, where)))
    assert not src.poll()  # must not raise
    assert fired == [where]
    raced = [m for m in src.messages if "renamed or removed while it was being read" in m]
    if where == "matches":  # examine() itself takes a file renamed before its first bytes as missing
        assert raced == []
    else:
        assert raced == [f"{log}: the file was renamed or removed while it was being read (No such file or "
                         f"directory: {log}); it is read again at the next poll (reported once)"]
    _append(log, b"".join(lines[30:]))
    src.poll()
    whole = tmp_path / "whole.jsonl"
    whole.write_bytes(b"".join(lines))
    _same(src.run(), whole)


def test_a_writer_rotating_every_few_lines_never_crashes_the_follower(tmp_path: Path) -> None:
    """A real writer thread rotating its log every 5 lines as fast as it can (so it often rotates
    several times between two polls), a follower polling as fast as it can: no exception escapes a
    poll, no step is read twice, and none is lost (the rotated files stay on the disk)."""
    import threading

    log = tmp_path / "run.jsonl"
    lines = _jsonl(Scenario(steps=600, collapse_at=None, grad_spike_at=None))
    log.write_bytes(lines[0])
    done, started = threading.Event(), threading.Event()

    def writer() -> None:
        started.wait(30)  # the follower has read the first line: it knows the file
        for i, line in enumerate(lines[1:], start=2):
            _append(log, line)
            if i % 5 == 0:
                _rotate(log, tmp_path / f"run.jsonl.{i}")
        done.set()

    src = _follow(log)
    thread = threading.Thread(target=writer)
    thread.start()
    polls = 0
    while not done.is_set():
        src.poll()
        polls += 1
        started.set()
    thread.join()
    src.poll()
    run = src.run()
    assert run is not None and polls > 0
    steps = run.steps.tolist()
    assert steps == list(range(1, 601)) and not [n for n in run.notes if "logged twice" in n]


def _shift(folder: Path, name: str, backups: int) -> None:
    """One rollover of Python's RotatingFileHandler (backupCount=``backups``): ``.k`` -> ``.k+1``,
    the oldest dropped, the log itself -> ``.1``, a new empty log."""
    for k in range(backups, 0, -1):
        src = folder / f"{name}.{k}"
        if src.exists():
            if k == backups:
                src.unlink()
            else:
                os.rename(src, folder / f"{name}.{k + 1}")
    _rotate(folder / name, folder / f"{name}.1")


def test_restart_finds_rotated_files_renamed_on_while_it_was_down(tmp_path: Path) -> None:
    """RotatingFileHandler with several backups: the file read as ``run.jsonl.1`` before the restart is
    ``run.jsonl.2`` after it. It is the same file (device, inode), so its steps are kept."""
    log = tmp_path / "run.jsonl"
    lines = _jsonl()
    log.write_bytes(b"".join(lines[:20]))
    src = _follow(log)
    src.poll()
    _shift(tmp_path, "run.jsonl", 3)
    _append(log, b"".join(lines[20:40]))
    src.poll()
    _shift(tmp_path, "run.jsonl", 3)  # while the watcher is down: .1 -> .2, run.jsonl -> .1
    _append(log, b"".join(lines[40:]))
    again = _restarted(src, tmp_path)
    again.poll()
    whole = tmp_path / "whole.jsonl"
    whole.write_bytes(b"".join(lines))
    _same(again.run(), whole)
    assert not [m for m in again.messages if "is gone" in m], again.messages


@pytest.mark.parametrize("names", [("run.jsonl.7", "run.jsonl.14"), ("run.jsonl.1", "run.jsonl.2")],
                         ids=["numbered", "RotatingFileHandler"])
def test_two_rotations_between_polls_read_the_file_in_the_middle(tmp_path: Path, names: tuple[str, str]) -> None:
    """The log is rotated, the new file written and rotated again, all between two polls: the file in
    the middle was never at the log's path when a poll looked. It is read whole, and said so."""
    log = tmp_path / "run.jsonl"
    lines = _jsonl()
    old_backup = tmp_path / "run.jsonl.0"  # a backup from long before: finished, not this run's concern
    old_backup.write_bytes(b"".join(_jsonl(Scenario(steps=80, seed=9))[70:]))
    os.utime(old_backup, (time.time() - 3600, time.time() - 3600))
    log.write_bytes(b"".join(lines[:10]))
    src = _follow(log)
    src.poll()
    _append(log, b"".join(lines[10:14]))
    if names[0].endswith(".1"):
        _shift(tmp_path, "run.jsonl", 5)
        _append(log, b"".join(lines[14:30]))
        _shift(tmp_path, "run.jsonl", 5)
    else:
        _rotate(log, tmp_path / names[0])
        _append(log, b"".join(lines[14:30]))
        _rotate(log, tmp_path / names[1])
    _append(log, b"".join(lines[30:]))
    src.poll()
    whole = tmp_path / "whole.jsonl"
    whole.write_bytes(b"".join(lines))
    _same(src.run(), whole)
    middle = "run.jsonl.1" if names[0].endswith(".1") else names[1]
    assert f"{log}: rotated more than once since the last poll; read {middle} whole, which was never seen at " \
           "the log's path" in src.messages


def test_a_new_file_rotated_before_a_line_of_it_was_read(tmp_path: Path) -> None:
    """Rotated, polled while the new file is still empty, then that file is written and rotated too: it is
    found by its identity, taken when it was empty."""
    log = tmp_path / "run.jsonl"
    lines = _jsonl()
    log.write_bytes(b"".join(lines[:10]))
    src = _follow(log)
    src.poll()
    _rotate(log, tmp_path / "run.jsonl.10")
    src.poll()  # the new file is there, empty
    _append(log, b"".join(lines[10:20]))
    _rotate(log, tmp_path / "run.jsonl.20")
    _append(log, b"".join(lines[20:]))
    src.poll()
    whole = tmp_path / "whole.jsonl"
    whole.write_bytes(b"".join(lines))
    _same(src.run(), whole)


def test_a_compressed_file_in_the_middle_is_named_as_missing(tmp_path: Path) -> None:
    """Compressed with zstd, which is not opened (gzip, bzip2 and xz are: tests/watch/test_compressed_rotation.py)."""
    log = tmp_path / "run.jsonl"
    lines = _jsonl()
    log.write_bytes(b"".join(lines[:10]))
    src = _follow(log)
    src.poll()
    _rotate(log, tmp_path / "run.jsonl.1")
    _append(log, b"".join(lines[10:20]))
    _rotate(log, tmp_path / "run.jsonl.2")
    _append(log, b"".join(lines[20:]))
    middle = tmp_path / "run.jsonl.2"
    os.rename(middle, tmp_path / "run.jsonl.2.zst")  # compressed as the poll comes (its bytes are never opened)
    src.poll()
    run = src.run()
    assert run is not None and run.steps.tolist() == list(range(1, 11)) + list(range(21, 61))
    assert f"{log}: the steps after 10 and before 21 were not read: run.jsonl.2.zst compressed, not opened" \
        in src.messages, src.messages


def test_a_compressed_file_already_read_is_not_called_missing(tmp_path: Path) -> None:
    """logrotate's ``delaycompress``: the file read as ``run.jsonl.1`` is compressed at the next rotation.
    Nothing is missing, so nothing is said to be."""
    import gzip

    log = tmp_path / "run.jsonl"
    lines = _jsonl()
    log.write_bytes(b"".join(lines[:10]))
    src = _follow(log)
    src.poll()
    _rotate(log, tmp_path / "run.jsonl.1")
    _append(log, b"".join(lines[10:20]))
    src.poll()
    os.rename(tmp_path / "run.jsonl.1", tmp_path / "run.jsonl.2")
    with gzip.open(tmp_path / "run.jsonl.2.gz", "wb") as fh:
        fh.write((tmp_path / "run.jsonl.2").read_bytes())
    (tmp_path / "run.jsonl.2").unlink()
    _rotate(log, tmp_path / "run.jsonl.1")
    _append(log, b"".join(lines[20:]))
    src.poll()
    whole = tmp_path / "whole.jsonl"
    whole.write_bytes(b"".join(lines))
    _same(src.run(), whole)
    assert not [m for m in src.messages if "were not read" in m], src.messages


def test_a_saved_cursor_without_its_records_reads_the_log_again(tmp_path: Path) -> None:
    """A caller that keeps only cursors (the dashboard's state file) gets the whole log again after a
    restart, not just what was written after the cursor."""
    log = tmp_path / "run.jsonl"
    lines = _jsonl()
    log.write_bytes(b"".join(lines[:30]))
    src = _follow(log)
    src.poll()
    saved = json.loads(json.dumps(src.state()))
    _append(log, b"".join(lines[30:]))
    again = Follow(log, None, 0.0, saved)
    assert again.poll(now=0.0)
    _same(again.runs()[0], log)
    assert again.pending() == (False, [])  # nor does it hold the records for a store that never comes


def _stepless(n: int = 60) -> list[bytes]:
    """A generic JSONL log without a step key (a custom loop's ``json.dumps(metrics)``): its records are
    numbered 1, 2, 3, ... by their place in the file."""
    return [json.dumps({"loss": round(1 / (i + 1), 6), "reward": i / 10}).encode() + b"\n" for i in range(n)]


@pytest.mark.parametrize("how", ["rename", "copytruncate", "truncate", "twice", "restart"])
def test_a_log_without_steps_keeps_its_numbering_across_rotation(tmp_path: Path, how: str) -> None:
    """Without a step key the file is re-read whole at each change; what it held before a rotation or
    truncation is kept, and the next file's records are numbered on after it, as ``load()`` numbers the
    files concatenated — nothing dropped, nothing numbered twice."""
    log = tmp_path / "metrics.jsonl"
    lines = _stepless()
    log.write_bytes(b"".join(lines[:20]))
    src = _follow(log)
    src.poll()
    assert src.state()["whole"]
    if how == "rename":
        _append(log, b"".join(lines[20:25]))  # written, never polled: read from the renamed file
        _rotate(log, tmp_path / "metrics.jsonl.1")
        _append(log, b"".join(lines[25:40]))
    elif how == "copytruncate":
        _append(log, b"".join(lines[20:25]))
        shutil.copyfile(log, tmp_path / "metrics.jsonl.1")
        with log.open("r+b") as fh:
            fh.truncate(0)
        _append(log, b"".join(lines[25:40]))
    elif how == "truncate":  # no copy: only what was polled before survives, and the message says so
        with log.open("r+b") as fh:
            fh.truncate(0)
        _append(log, b"".join(lines[20:40]))
    elif how == "twice":
        _rotate(log, tmp_path / "metrics.jsonl.1")
        _append(log, b"".join(lines[20:30]))
        _rotate(log, tmp_path / "metrics.jsonl.2")
        _append(log, b"".join(lines[30:40]))
    else:
        _rotate(log, tmp_path / "metrics.jsonl.1")
        _append(log, b"".join(lines[20:30]))
        src.poll()
        _append(log, b"".join(lines[30:35]))
        _rotate(log, tmp_path / "metrics.jsonl.2")  # while the watcher is down
        _append(log, b"".join(lines[35:40]))
        src = _restarted(src, tmp_path)
    src.poll()
    _append(log, b"".join(lines[40:]))
    src.poll()
    whole = tmp_path / "whole.jsonl"
    whole.write_bytes(b"".join(lines))
    _same(src.run(), whole)
    again = _restarted(src, tmp_path)  # and a restart now rebuilds the same run, carried part included
    _append(log, b"\n")
    again.poll()
    _same(again.run(), whole)
    if how == "truncate":
        assert any("after line 20; lines written after the last poll" in m for m in src.messages), src.messages
