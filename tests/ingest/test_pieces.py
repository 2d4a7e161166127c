"""A large log read by this process and a forked worker sharing its pieces gives the one-process read, figure
for figure: whoever reads which piece, however long this process was busy meanwhile, and when the worker
dies part way."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import orjson
import pytest

from rlvitals.ingest import SkipLog, SourceMeta, pieces, verl_jsonl
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
