"""Text helpers: line iteration (chunk boundaries, bad bytes, CRLF), ANSI, number parsing."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlvitals.ingest import SourceMeta
from rlvitals.ingest import text as text_module
from rlvitals.ingest.text import iter_lines, line_blocks, parse_number, strip_ansi


def test_lines_across_chunk_boundaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text_module, "CHUNK", 7)
    f = tmp_path / "a.log"
    f.write_bytes(b"first line\r\nsecond \xff\xfe line\nthird-without-newline")
    meta = SourceMeta("x")
    lines = list(iter_lines(f, meta))
    assert lines == [(1, "first line"), (2, "second \ufffd\ufffd line"), (3, "third-without-newline")]
    assert meta.bytes_read == f.stat().st_size


def test_overlong_line_is_cut_and_noted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text_module, "CHUNK", 8)
    monkeypatch.setattr(text_module, "MAX_LINE", 10)
    f = tmp_path / "a.log"
    f.write_bytes(b"x" * 50 + b"\nok\n")
    meta = SourceMeta("x")
    lines = list(iter_lines(f, meta))
    assert lines[-1] == (2, "ok") and len(lines[0][1]) <= 18
    assert any("longer than 10 bytes" in n for n in meta.notes)


@given(st.lists(st.sampled_from([b"", b"{}", b"\r", b"ab\r", b"\xef\xbb\xbf", b"x" * 30]), max_size=12),
       st.booleans(), st.integers(3, 20), st.integers(0, 40))
def test_lines_with_their_ends_are_the_lines_and_their_newlines(lines: list[bytes], last: bool, chunk: int,
                                                                 start: int) -> None:
    """``ends=True`` gives the lines, each with its newline (the last without, where the file has none), with
    the same numbers, cuts and notes, from the file's start or from a byte within it."""
    import tempfile

    data = b"\n".join(lines) + (b"\n" if last else b"")
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        mp.setattr(text_module, "CHUNK", chunk)
        mp.setattr(text_module, "MAX_LINE", 25)
        f = Path(tmp) / "a.jsonl"
        f.write_bytes(data)
        at = min(start, len(data))
        plain, ended = SourceMeta("x", window=(at, len(data))), SourceMeta("x", window=(at, len(data)))
        want = [(n, [line.removesuffix(b"\n") for line in block]) for n, block in line_blocks(f, plain)]
        got = list(line_blocks(f, ended, ends=True))
        assert [(n, [line.removesuffix(b"\n") for line in block]) for n, block in got] == want
        assert all(line.endswith(b"\n") for _, block in got[:-1] for line in block)
        assert (plain.notes, plain.bytes_read) == (ended.notes, ended.bytes_read)


def test_strip_ansi() -> None:
    assert strip_ansi("\x1b[2m\x1b[36m(TaskRunner pid=1)\x1b[0m step:1") == "(TaskRunner pid=1) step:1"


@pytest.mark.parametrize(("text", "expected"), [
    ("0.5", 0.5), ("-0.000", -0.0), ("1e-4", 1e-4), ("np.float64(0.0070)", 0.007), ("np.int64(3)", 3.0),
    ("inf", math.inf), ("-inf", -math.inf), ("np.float32(-inf)", -math.inf), ("True", 1.0),
])
def test_parse_number(text: str, expected: float) -> None:
    assert parse_number(text) == expected


@pytest.mark.parametrize("text", ["nan", "NaN", "np.float64(nan)"])
def test_parse_number_nan(text: str) -> None:
    value = parse_number(text)
    assert value is not None and math.isnan(value)


@pytest.mark.parametrize("text", ["np.float64(nan", "abc", "", "tensor([1, 2])", "0.5.1"])
def test_parse_number_rejects(text: str) -> None:
    assert parse_number(text) is None


@given(st.floats(allow_nan=False))
def test_parse_number_roundtrips_repr(x: float) -> None:
    assert parse_number(repr(x)) == x
    assert parse_number(f"np.float64({x!r})") == x


def test_json_objects_is_the_one_way_json_lines_are_read(tmp_path: Path) -> None:
    """Blank lines passed over; NaN and Infinity read; every other line a counted skip naming file:line."""
    from rlvitals.ingest.record import SkipLog
    from rlvitals.ingest.text import json_objects

    path = tmp_path / "rows.jsonl"
    deep = "[" * 100_000 + "]" * 100_000
    path.write_text('{"a": NaN, "b": Infinity}\n\n  \n[1, 2]\nnot json\n' + deep + '\n{"c": 1}\n{"d": ',
                    encoding="utf-8")
    skips = SkipLog()
    got = list(json_objects(path, SourceMeta(format="jsonl"), skips, "one row", cut_at_end=True))
    assert [(n, sorted(o)) for n, _, o in got] == [(1, ["a", "b"]), (7, ["c"])]
    assert math.isnan(got[0][2]["a"]) and got[0][2]["b"] == math.inf and got[1][1] == '{"c": 1}'
    assert skips.reasons == [
        f"{path}:4: expected one row, got list; the line was skipped",
        f"{path}:5: invalid JSON (Expecting value at column 1); the line was skipped",
        f"{path}:6: invalid JSON (RecursionError); the line was skipped",
        f"{path}:8: invalid JSON (Expecting value at column 7) - the file ends mid-line (still being written?); "
        "the line was skipped",
    ]
