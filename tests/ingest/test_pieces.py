"""A large log read by this process and a forked worker sharing its pieces gives the one-process read, figure
for figure: whoever reads which piece, however long this process was busy meanwhile, and when the worker
dies part way."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import orjson
import pytest

from rlvitals.ingest import SkipLog, SourceMeta, generic_jsonl, pieces, verl_jsonl
from rlvitals.synthetic.simulate import Scenario, jsonl_lines

from .test_columnar import BAD_JSONL, _bits, _jsonl, by_columns, by_records


def _log(tmp_path: Path, steps: int = 400) -> Path:
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"\n".join(jsonl_lines(Scenario(steps=steps))) + b"\n")
    return path


def test_the_cuts_are_just_past_newlines_and_no_piece_is_empty(tmp_path: Path) -> None:
    path = _log(tmp_path, 50)
    data = path.read_bytes()
    starts = pieces.cuts(path, len(data))
    assert starts[0] == 0 and starts[-1] == len(data) and starts == sorted(set(starts))
    assert all(data[at - 1: at] == b"\n" for at in starts[1:-1])
    assert len(starts) - 1 == pieces.PIECES
    short = tmp_path / "short.jsonl"
    short.write_bytes(b'{"step": 1, "data": {"a": 1.0}}\n{"step": 2, "data": {"a": 2.0}}\n')
    assert pieces.cuts(short, short.stat().st_size) == [0, 32, 64]  # 16 cuts asked, two lines there


def test_the_work_meanwhile_runs_here_while_the_worker_reads(tmp_path: Path) -> None:
    path = _log(tmp_path)
    seen: list[tuple[int, int]] = []
    pieces.while_reading(lambda: seen.append((os.getpid(), len(multiprocessing.active_children()))))
    want, _ = by_records(path, verl_jsonl.READER)
    got, _ = by_columns(path, verl_jsonl.READER, 0)
    assert seen == [(os.getpid(), 1)]  # done once, here, with the worker running
    assert _bits(got) == _bits(want)
    small, _ = by_columns(path, verl_jsonl.READER, 1 << 62)  # read by one process: the work is done too
    pieces.while_reading(lambda: seen.append((os.getpid(), -1)))
    by_columns(path, verl_jsonl.READER, 1 << 62)
    assert seen[-1] == (os.getpid(), -1) and _bits(small) == _bits(want)


def test_work_no_read_did_is_done_by_done_reading_once() -> None:
    done: list[int] = []
    pieces.while_reading(lambda: done.append(1))
    pieces.done_reading()
    pieces.done_reading()
    assert done == [1]


def _taken_by(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each piece's reader's pid, one line per piece, in a file both processes append to."""
    log = tmp_path / "taken.txt"
    real = pieces._piece

    def logged(path: Path, meta: SourceMeta, parse: object, starts: list[int], i: int,
               progress: object = None) -> object:
        with log.open("a") as fh:
            fh.write(f"{os.getpid()} {i}\n")
        return real(path, meta, parse, starts, i, progress)  # type: ignore[arg-type]

    monkeypatch.setattr(pieces, "_piece", logged)
    return log


def test_a_long_wait_here_leaves_the_worker_the_most_pieces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """This process waits (a minute at most) until the worker has read all but two pieces: the counter they
    share hands it the rest, and the pieces still join in file order."""
    path = _log(tmp_path)
    log = _taken_by(tmp_path, monkeypatch)

    def wait() -> None:
        for _ in range(6000):
            if log.exists() and len(log.read_text().splitlines()) >= pieces.PIECES - 2:
                return
            multiprocessing.connection.wait([], timeout=0.01)

    pieces.while_reading(wait)
    want, _ = by_records(path, verl_jsonl.READER)
    got, _ = by_columns(path, verl_jsonl.READER, 0)
    assert _bits(got) == _bits(want)
    readers = [line.split() for line in log.read_text().splitlines()]
    theirs = sorted(int(i) for pid, i in readers if int(pid) != os.getpid())
    mine = sorted(int(i) for pid, i in readers if int(pid) == os.getpid())
    assert len(theirs) >= pieces.PIECES - 2 and theirs == list(range(pieces.PIECES - len(theirs), pieces.PIECES))
    assert mine == list(range(1, pieces.PIECES - len(theirs)))


def test_a_worker_that_dies_part_way_leaves_its_pieces_to_this_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _log(tmp_path)
    here = os.getpid()
    real = pieces._piece

    def dies(path: Path, meta: SourceMeta, parse: object, starts: list[int], i: int, progress: object = None) -> object:
        if os.getpid() != here and i < pieces.PIECES - 2:
            os._exit(3)  # killed after two pieces, before it said where they are
        return real(path, meta, parse, starts, i, progress)  # type: ignore[arg-type]

    monkeypatch.setattr(pieces, "_piece", dies)
    want, _ = by_records(path, verl_jsonl.READER)
    got, _ = by_columns(path, verl_jsonl.READER, 0)
    assert _bits(got) == _bits(want)


def test_the_pieces_a_worker_said_before_it_died_are_taken_not_read_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker says each piece as it writes it: killed while reading its third, the two it said are taken
    from the spool and only the third is read here, after this process's own."""
    path = _log(tmp_path)
    log = tmp_path / "taken.txt"
    here, real = os.getpid(), pieces._piece

    def dies(path: Path, meta: SourceMeta, parse: object, starts: list[int], i: int, progress: object = None) -> object:
        with log.open("a") as fh:
            fh.write(f"{os.getpid()} {i}\n")
        if os.getpid() != here and i < pieces.PIECES - 2:
            os._exit(3)
        return real(path, meta, parse, starts, i, progress)  # type: ignore[arg-type]

    def wait() -> None:  # until the worker took its third piece (a minute at most)
        for _ in range(6000):
            if log.exists() and sum(int(pid) != here for pid, _ in map(str.split, log.read_text().splitlines())) >= 3:
                return
            multiprocessing.connection.wait([], timeout=0.01)

    monkeypatch.setattr(pieces, "_piece", dies)
    pieces.while_reading(wait)
    want, _ = by_records(path, verl_jsonl.READER)
    got, _ = by_columns(path, verl_jsonl.READER, 0)
    assert _bits(got) == _bits(want)
    read = [line.split() for line in log.read_text().splitlines()]
    mine = [int(i) for pid, i in read if int(pid) == here]
    assert sorted(int(i) for pid, i in read if int(pid) != here) == [pieces.PIECES - 3, pieces.PIECES - 2,
                                                                     pieces.PIECES - 1]
    assert mine == [*range(1, pieces.PIECES - 3), pieces.PIECES - 3]


def test_the_pieces_the_worker_said_are_taken_in_between_this_process_s_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Taking in the worker's pieces is work of the read: this process does it between two of its own pieces,
    while the worker still reads, not all at the end. Here this process waits before its first piece until the
    worker finished two (said, before it took its third), and the worker waits in its third until this process
    read its second: the two said are taken in between this process's first piece and its second."""
    path = _log(tmp_path)
    log = tmp_path / "order.txt"
    here, real_piece, real_unpickled = os.getpid(), pieces._piece, pieces._unpickled

    def until(seen: str, times: int) -> None:  # a minute at most
        for _ in range(6000):
            if log.exists() and log.read_text().count(seen) >= times:
                return
            multiprocessing.connection.wait([], timeout=0.01)

    def piece(path: Path, meta: SourceMeta, parse: object, starts: list[int], i: int,
              progress: object = None) -> object:
        if os.getpid() == here and i == 1:
            until("worker", 2)
        if os.getpid() != here and log.exists() and log.read_text().count("worker") == 2:
            until("read 2", 1)
        out = real_piece(path, meta, parse, starts, i, progress)  # type: ignore[arg-type]
        with log.open("a") as fh:
            fh.write(("read" if os.getpid() == here else "worker") + f" {i}\n")
        return out

    def unpickled(spool: int, at: int, size: int) -> object:
        with log.open("a") as fh:
            fh.write("taken\n")
        return real_unpickled(spool, at, size)

    monkeypatch.setattr(pieces, "_piece", piece)
    monkeypatch.setattr(pieces, "_unpickled", unpickled)
    want, _ = by_records(path, verl_jsonl.READER)
    got, _ = by_columns(path, verl_jsonl.READER, 0)
    assert _bits(got) == _bits(want)
    events = [line for line in log.read_text().splitlines() if not line.startswith("worker")]
    assert events[:4] == ["read 1", "taken", "taken", "read 2"], events


def test_bad_lines_in_the_workers_pieces_are_named_by_their_line_in_the_file(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, BAD_JSONL)
    want, _ = by_records(path, verl_jsonl.READER)
    got, _ = by_columns(path, verl_jsonl.READER, 0)
    assert got.skipped.count == want.skipped.count > 0
    assert got.skipped.reasons == want.skipped.reasons


def test_the_rows_this_process_read_are_told_in_order(tmp_path: Path) -> None:
    path = _log(tmp_path)
    told: list[int] = []
    meta = SourceMeta(format="verl-jsonl", files=[str(path)])
    first, later = pieces.read_shared(path, meta, SkipLog(), verl_jsonl._parse, min_bytes=0, progress=told.append)
    assert told == sorted(told) and told[-1] <= 400 and len(later) == pieces.PIECES - 1
    assert sum(len(s.value.steps) for s in later) + len(first.steps) == 400
    assert orjson.loads(path.read_bytes().split(b"\n")[0])["step"] == first.steps[0]


def _history(rows: int, *, clock: str | None = "_timestamp", timed_from: int = 0, step_key: str = "train/global_step",
             extras: bool = True) -> list[bytes]:
    """W&B-history-like lines: a step key, W&B's counters and clock, side logs between steps (``_step`` only),
    and, with ``extras``, a NaN literal, a bad line, a text value, a nested object and eval rows."""
    lines: list[bytes] = []
    for i in range(rows):
        row: dict[str, object] = {"_step": len(lines), step_key: i, "train/loss": 1.0 / (i + 1), "train/reward": i % 7}
        if clock and i >= timed_from:
            row["_runtime"] = 10.0 + i
            if clock == "_timestamp":
                row["_timestamp"] = 1_700_000_000.0 + i
        if extras and i % 50 == 7:
            row["eval/acc"] = 0.5
            row["epoch"] = i / 100
        if extras and i % 97 == 3:
            row["notes"] = {"phase": "warm", "lr": 0.001}
        lines.append(orjson.dumps(row))
        if extras and i % 13 == 5:
            lines.append(orjson.dumps({"_step": len(lines), "timing/gen": 0.25, "_timestamp": 1_700_000_000.5 + i}))
    if extras:
        lines[120] = b'{"train/global_step": 999, "train/loss": NaN, "_step": 1}'
        lines[260] = b"not json at all"
        lines[300] = lines[300][:-1] + b', "tag": "text"}'
    return lines


@pytest.mark.parametrize("case", ["history", "late_clock", "runtime_only", "no_clock", "clock_after_look",
                                  "runtime_then_timestamp", "no_step_key", "plain_step"])
def test_a_generic_jsonl_read_in_pieces_is_the_one_read(tmp_path: Path, case: str) -> None:
    """The step key and the clock are settled from the first rows before the pieces are shared, the side logs
    are counted over every piece and said once: figure for figure the one-process read."""
    lines = {"history": lambda: _history(1600), "late_clock": lambda: _history(1600, timed_from=40),
             "runtime_only": lambda: _history(1600, clock="_runtime"),
             "no_clock": lambda: _history(1500, clock=None, extras=False),
             # the whole read gives up on a clock after 1000 rows without one: later pieces must not find one
             "clock_after_look": lambda: _history(2000, timed_from=1100, extras=False),
             # the first timed row has only _runtime: every row is read on that clock, whatever later rows carry
             "runtime_then_timestamp": lambda: _history(40, clock="_runtime", extras=False) + _history(1600),
             "no_step_key": lambda: [orjson.dumps({"loss": 1.0 / (i + 1)}) for i in range(1600)],
             "plain_step": lambda: _history(1600, step_key="step")}[case]()
    path = tmp_path / "history.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    want, want_meta = by_records(path, generic_jsonl.READER)
    got, got_meta = by_columns(path, generic_jsonl.READER, 0)
    assert _bits(got) == _bits(want)
    assert (got_meta.clock, got_meta.clock_epoch, got_meta.started) == (want_meta.clock, want_meta.clock_epoch,
                                                                        want_meta.started)
    if case == "history":
        assert any("had W&B's _step but no train/global_step" in n for n in got.notes)
        assert got.skipped.count == want.skipped.count > 0
        assert want.wall is not None


def test_a_generic_jsonl_is_shared_only_once_its_first_rows_settled_it(tmp_path: Path) -> None:
    """What the first 1000 records settle, on a copy of the run's meta, and where they end (the first piece
    holds them whole: a whole read takes them first, so their JSON skips come before their rows')."""
    path = tmp_path / "h.jsonl"
    lines = _history(1200)
    path.write_bytes(b"\n".join(lines) + b"\n")
    meta = SourceMeta(format="jsonl", files=[str(path)])
    settled = generic_jsonl._settled(path, meta)
    assert settled is not None and settled[0] == "train/global_step" and settled[1].key == "_timestamp"
    objects = [n for n, line in enumerate(lines, 1) if line.startswith(b"{") and b"NaN" not in line]
    head = settled[2]
    assert path.read_bytes()[:head].count(b"\n") >= objects[999 - 1] and path.read_bytes()[head - 1] == 10
    assert pieces.cuts(path, path.stat().st_size, head=head)[1] >= head
    assert meta.clock is None  # settled on a copy
    few = tmp_path / "few.jsonl"  # the file ends within its first 1000 records: read whole here
    few.write_bytes(b"\n".join(_history(300)) + b"\n")
    assert generic_jsonl._settled(few, SourceMeta(format="jsonl", files=[str(few)])) is None
    none = tmp_path / "none.jsonl"
    none.write_bytes(b"".join(orjson.dumps({"loss": float(i)}) + b"\n" for i in range(1200)))
    assert generic_jsonl._settled(none, SourceMeta(format="jsonl", files=[str(none)])) is None
