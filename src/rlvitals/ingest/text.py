"""Shared helpers for text logs: bounded-memory line iteration, JSON lines, ANSI stripping, number parsing."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ..errors import InputError
from ..words import Words, in_lang
from ._files import open_file
from .record import SkipLog, SourceMeta

CHUNK = 1 << 20
#: the UTF-8 byte-order mark some Windows tools write first; it is not part of the first line
BOM = b"\xef\xbb\xbf"
#: a single line longer than this is cut (and reported) so one bad line cannot take all memory
MAX_LINE = 16 << 20

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_NUMBER = re.compile(
    r"^\s*(?:np\.(?:float|int|uint)\d*\((?P<inner>[^()]*)\)|(?P<plain>[^()\s]+))\s*$"
)
_SPECIAL = {"nan": float("nan"), "-nan": float("nan"), "inf": float("inf"), "+inf": float("inf"),
            "-inf": float("-inf"), "infinity": float("inf"), "-infinity": float("-inf"),
            "true": 1.0, "false": 0.0}


def iter_lines(path: Path, meta: SourceMeta, *, start: int = 0) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` for every line, decoded as UTF-8 with invalid bytes
    replaced (so a stray byte costs one character, never the line). Reads in 1 MiB chunks.

    With ``meta.window = (a, b)`` only the bytes ``[a, b)`` are read and the first line is
    numbered ``meta.line_base + 1``: a watcher passes the complete lines appended since its
    last poll and gets exactly their records, with their true ``file:line``.

    Example (a file holding ``a\\nb\\nc\\npart``, whose first line was read before)::

        meta = SourceMeta(format="verl-jsonl", window=(2, 6), line_base=1)
        list(iter_lines(path, meta))  # [(2, "b"), (3, "c")]; "part" waits for its newline
    """
    for first, lines in line_blocks(path, meta, start=start):
        for lineno, raw in enumerate(lines, first):
            yield lineno, raw.decode("utf-8", "replace").rstrip("\r")


def line_blocks(path: Path, meta: SourceMeta, *, start: int = 0,
                ends: bool = False) -> Iterator[tuple[int, list[bytes]]]:
    """The lines :func:`iter_lines` yields, undecoded (a ``\\r`` before the newline kept), a chunk's
    lines at a time: ``(number of the first line, lines)``. A parser that takes bytes (orjson) skips
    the decoding and a generator step per line. With ``ends``, each line keeps its newline (the last
    line of a file that does not end with one has none): the lines are found by ``memchr`` instead of a
    look at every byte (``bytes.split``), 40 % less time for a parser that reads past the newline (JSON).

    Chunks are read on the file's 1 MiB grid whatever the first byte read, so a read of the bytes
    from ``a`` (a worker's share of a file) cuts an over-long line exactly where a read of the whole
    file does.
    """
    lineno = meta.line_base if meta.window is not None else 0
    if meta.window is not None:
        start, end = meta.window
        left: int | None = max(end - start, 0)
    else:
        left = None
    pending = b""
    at_start = not start  # a byte-order mark is read only where the file begins
    size = CHUNK - start % CHUNK
    with open_file(path) as fh:
        if start:
            fh.seek(start)
        while True:
            chunk = fh.read(size if left is None else min(size, left))
            size = CHUNK
            if not chunk:
                break
            if left is not None:
                left -= len(chunk)
            meta.bytes_read += len(chunk)
            if at_start:
                chunk, at_start = chunk.removeprefix(BOM), False
            if ends:
                lines = io.BytesIO(chunk).readlines()  # the buffer shared, not copied
                if pending:  # the line the last chunk left unfinished: its start before its first line
                    lines[:1] = [pending + b"".join(lines[:1])]
                pending = lines.pop() if lines and not lines[-1].endswith(b"\n") else b""
            else:
                lines = (pending + chunk if pending else chunk).split(b"\n")
                pending = lines.pop()
            if len(pending) > MAX_LINE:
                at = lineno + len(lines) + 1
                meta.notes.append(Words(f"{path}:{at}: line longer than {MAX_LINE} bytes was cut",
                                        f"{path} 第 {at} 行：这一行超过 {MAX_LINE} 字节，已截断"))
                pending = pending[:MAX_LINE]
            if lines:
                yield lineno + 1, lines
                lineno += len(lines)
    if pending:
        yield lineno + 1, [pending]


#: how far past the 64 KiB head a text reader's sniff may look (startup output can be long)
SNIFF_LIMIT = 32 << 20


def search_file(path: Path, head: bytes, pattern: re.Pattern[bytes], limit: int = SNIFF_LIMIT) -> bool:
    """Whether ``pattern`` occurs in the first ``limit`` bytes of ``path`` (``head`` first,
    then the rest in 1 MiB chunks, overlapping so a match across chunks is found)."""
    if pattern.search(head):
        return True
    if len(head) < (64 << 10) or not path.is_file():
        return False
    overlap = 4096
    with open_file(path) as fh:
        fh.seek(max(len(head) - overlap, 0))
        tail = b""
        read = 0
        while read < limit:
            chunk = fh.read(1 << 20)
            if not chunk:
                return False
            read += len(chunk)
            if pattern.search(tail + chunk):
                return True
            tail = chunk[-overlap:]
    return False


#: line lengths at which capture tools cut a console line: W&B's console capture (``output.log``) keeps
#: the first 4,096 characters of a line
CUT_LENGTHS = frozenset({4096})


def cut_note(line: str) -> Words | None:
    """Why the end of ``line`` is not to be trusted (it is exactly as long as a capture tool cuts
    lines), or None."""
    if len(line) in CUT_LENGTHS:
        return Words(f"the line is {len(line)} characters long, where W&B's console capture cuts lines",
                     f"这一行长 {len(line)} 个字符，正是 W&B 控制台捕获截断行的长度")
    return None


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text) if "\x1b" in text else text


#: an integer written with more digits than this is out of any step's range (int64 has 19): it is
#: not converted (Python refuses strings over 4,300 digits), but given as one past int64's range, so
#: the record check skips it with its ``file:line`` like any other step out of range
_DIGITS = 40
OUT_OF_RANGE = 1 << 63


def integer(text: str) -> int:
    """The integer a regex matched as digits (``\\d+``, maybe signed), however many there are.

    Example:
        >>> integer("42"), integer("9" * 5000) == OUT_OF_RANGE, integer("-" + "9" * 5000) == -OUT_OF_RANGE
        (42, True, True)
    """
    digits = text.strip().lstrip("+-")
    if len(digits) > _DIGITS:
        return -OUT_OF_RANGE if text.strip().startswith("-") else OUT_OF_RANGE
    return int(text)


def parse_number(text: str) -> float | None:
    """A logged value as a float: ``0.5``, ``1e-4``, ``nan``, ``-inf``, ``np.float64(0.1)``,
    ``np.int64(3)``. Returns None when the text is not a number."""
    try:
        return float(text)
    except ValueError:
        pass
    m = _NUMBER.match(text)
    if m is None:
        return None
    body = (m.group("inner") if m.group("inner") is not None else m.group("plain")).strip()
    special = _SPECIAL.get(body.lower())
    if special is not None:
        return special
    try:
        return float(body)
    except ValueError:
        return None


def parse_json(text: str | bytes) -> Any:
    """orjson first; the standard parser for the ``NaN``/``Infinity`` Python's json writes."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


#: what a JSON-lines line should be, unless its reader says more
A_JSON_OBJECT = Words("a JSON object", "JSON 对象")


def json_objects(path: Path, meta: SourceMeta, skips: SkipLog, expected: str = A_JSON_OBJECT, *,
                 cut_at_end: bool = False) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """``(line number, text, object)`` for each JSON object of a JSON-lines file: the one way every
    JSON-lines reader (metric logs and rollout dumps alike) reads its lines, through :func:`iter_lines`.

    Blank lines are passed over. A line that is not JSON (``NaN`` and ``Infinity`` are read, as
    Python's json writes them), nests deeper than a parser goes, or holds something other than an
    object is a counted skip naming ``file:line``, why, and ``expected`` (:class:`~rlvitals.words.Words`
    to have it in Chinese too). With ``cut_at_end`` (the
    file does not end with a newline: a writer may still be writing) a last line that is not JSON
    says so."""
    held: tuple[int, str] | None = None
    for lineno, text in iter_lines(path, meta):
        if not text.strip():
            continue
        if held is not None:
            yield from _json_object(path, held, skips, expected, False)
        held = (lineno, text)
    if held is not None:
        yield from _json_object(path, held, skips, expected, cut_at_end)


def json_dicts(path: Path, meta: SourceMeta, skips: SkipLog,
               expected: str = A_JSON_OBJECT) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` as :func:`json_objects` gives them (and its skips), parsed from the
    bytes of each line: a line orjson reads as an object costs no decoding (its newline is JSON whitespace)."""
    loads, decode_error = orjson.loads, orjson.JSONDecodeError
    for first, lines in line_blocks(path, meta, ends=True):
        for lineno, raw in enumerate(lines, first):
            try:
                obj = loads(raw)
            except decode_error:
                obj = None
            if type(obj) is not dict:
                obj = json_line(path, lineno, raw.removesuffix(b"\n"), skips, expected)
                if obj is None:
                    continue
            yield lineno, obj


def json_line(path: Path, lineno: int, raw: bytes, skips: SkipLog,
              expected: str = A_JSON_OBJECT) -> dict[str, Any] | None:
    """The object of one raw line of a JSON-lines file as :func:`json_objects` reads it (None for a
    blank line or a counted skip): the slow path of a reader that parses bytes itself."""
    text = raw.decode("utf-8", "replace").rstrip("\r")
    if not text.strip():
        return None
    for _, _, obj in _json_object(path, (lineno, text), skips, expected, False):
        return obj
    return None


def _json_object(path: Path, line: tuple[int, str], skips: SkipLog, expected: str,
                 last_cut: bool) -> Iterator[tuple[int, str, dict[str, Any]]]:
    lineno, text = line
    where = f"{path}:{lineno}"
    try:
        obj = parse_json(text)
    except (ValueError, RecursionError) as exc:
        why = (f"{exc.msg} at column {exc.colno}" if isinstance(exc, json.JSONDecodeError)
               else f"{str(exc)[:80]}" if isinstance(exc, ValueError) else type(exc).__name__)
        cut = " - the file ends mid-line (still being written?)" if last_cut else ""
        cut_zh = "——文件在一行中间结束（还在写入？）" if last_cut else ""
        skips.skip(where, Words(f"invalid JSON ({why}){cut}; the line was skipped",
                                f"不是有效的 JSON（{why}）{cut_zh}；这一行已跳过"))
        return
    if not isinstance(obj, dict):
        skips.skip(where, Words(f"expected {expected}, got {type(obj).__name__}; the line was skipped",
                                f"应为 {in_lang(expected, 'zh')}，读到的是 {type(obj).__name__}；这一行已跳过"))
        return
    yield lineno, text, obj


def json_document(path: Path, data: bytes, expected: str) -> Any:
    """A whole-file JSON document, parsed by :func:`parse_json`; an InputError naming the file,
    line and column (or the byte that is not UTF-8) and what the file should have been (``expected``,
    :class:`~rlvitals.words.Words` to have it in Chinese too)."""
    zh = in_lang(expected, "zh")
    try:
        return parse_json(data.removeprefix(BOM))
    except json.JSONDecodeError as exc:
        raise InputError(Words(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}); expected {expected} "
                               "— was the file cut short?",
                               f"{path} 第 {exc.lineno} 行第 {exc.colno} 列：不是有效的 JSON（{exc.msg}）；"
                               f"应为 {zh}——文件是不是不完整？")) from exc
    except UnicodeDecodeError as exc:
        raise InputError(Words(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); expected {expected}",
                               f"{path}：不是 UTF-8 文本（第 {exc.start} 字节处：{exc.reason}）；应为 {zh}")) from exc
    except ValueError as exc:  # the standard parser's other refusals: an integer of more than 4,300 digits
        raise InputError(Words(f"{path}: not valid JSON ({str(exc)[:120]}); expected {expected}",
                               f"{path}：不是有效的 JSON（{str(exc)[:120]}）；应为 {zh}")) from exc
    except RecursionError as exc:
        raise InputError(Words(f"{path}: JSON nested deeper than a parser goes; expected {expected}",
                               f"{path}：JSON 嵌套太深，解析器处理不了；应为 {zh}")) from exc
