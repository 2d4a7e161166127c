"""How a corpus run's files could have been written while it trained: the writers ``live_eval.py`` replays
each run with. A writer is a generator that writes into the replay folder and yields at each moment the
watcher is to look; the last look sees the whole file.

Modes (``plan`` picks them by the run's format):

- ``lines`` — an appendable text log (veRL, TRL and other consoles, CSV tables) written line by line: whole
  lines are appended in chunks that end after a record's line. About ``LOOKS`` looks spread evenly over the
  records (the reader's own records say which line holds which step), one at the end of the startup output
  before the first record, and a look after each record from ``DENSE`` records before to ``DENSE`` after each
  labelled step (the headline's onset window, the damage step), so onsets and lead times are
  read at the record, not at the nearest regular look.
- ``burst-4k`` / ``burst-8k`` — a console (TRL, veRL, OpenRLHF) whose stdout is a file or a pipe: the file is
  taken as the order in which the trainer wrote, and split into what goes to stderr — progress-bar updates
  (a ``\\r``-led segment holding a bar), the blanks tqdm clears a bar with, tracebacks, warnings and
  ``[rankN]`` lines — written at once (stderr is unbuffered), and everything else, which goes to stdout and
  is delayed as CPython delays it: each ``print`` is two writes (the text, then its newline) into the text
  layer, which passes its pending bytes on when the next write would take them past 8192; the binary layer
  holds up to its buffer size (4096: the st_blksize of a file or a pipe; 8192: io.DEFAULT_BUFFER_SIZE) and
  writes what it held when a chunk no longer fits, a chunk larger than itself straight through. So the
  dicts reach the file in blocks of about 8 KiB (with ``burst-8k`` one block later still), cut wherever a
  write ends — after a dict and before its newline too — while the bars run ahead; what stdout held at the
  end is written last, after a traceback (a process that dies of an exception flushes at exit). A file
  that was itself written through such a buffer is delayed once more: still a file such a trainer writes.
  The watcher looks just before and just after each block reaches the file (at most ``LOOKS // 4`` blocks,
  evenly chosen, and the end).
- ``checkpoints`` — a TRL ``trainer_state.json`` (or a saved ``log_history`` list) rewritten whole at
  checkpoints, as the Trainer writes it (``json.dumps(state, indent=2, sort_keys=True)``): the history up to
  the checkpoint's step and ``global_step`` at that step, at about ``LOOKS`` checkpoints spread over the
  logged steps plus one at each record near a labelled step; the last is the file's own bytes.
- ``records`` — a TensorBoard event file appended record by record (``length, crc, data, crc``), looked at
  after about ``LOOKS`` record ends spread over the file.
- ``blocks`` — a W&B offline run folder: its ``.wandb`` record log appended 32 KiB block by block (a
  record spanning two blocks may be cut: the reader must wait for its end), about ``LOOKS`` looks; the other
  files of the folder (``files/``) appear whole with the last block.

Notebooks are not replayed: Jupyter saves the whole notebook, and a training table the notebook callback
redraws in place holds, in the saved file, only its last state — what it showed at an earlier save is in
no file. ``NOT_REPLAYED`` gives each left-out format's reason.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: regular looks per run
LOOKS = 20
#: records looked after one by one on each side of a labelled step
DENSE = 2
TEXT = ("verl-console", "trl-console", "openrlhf-console", "verl-jsonl", "jsonl", "csv", "minimind-console",
        "deepspeed-chat-console", "posttraining-llm-small-console")
CONSOLES = ("trl-console", "verl-console", "openrlhf-console")
NOT_REPLAYED = {"notebook": "Jupyter saves the whole notebook, and the training table the notebook callback "
                            "redraws in place holds only its last state: what an earlier save showed is in no file"}
WANDB_BLOCK = 32 << 10
TEXT_CHUNK = 8192

Writer = Callable[[Path], Iterator[None]]


@dataclass(frozen=True)
class Plan:
    """One replay of one run: ``target`` (relative to the replay folder) is what the watcher follows,
    ``write(folder)`` writes it and yields at each look."""

    mode: str
    target: str
    write: Writer


def plan(source: Path, fmt: str, targets: Sequence[int]) -> list[Plan]:
    """The replays of the run read from ``source`` (a file or a folder) in format ``fmt``; ``targets`` are the
    labelled steps looked at densely. Empty for a format that is not replayed (``NOT_REPLAYED``)."""
    name = source.name
    if fmt in TEXT:
        plans = [Plan("lines", name, lambda d: lines(source, d / name, fmt, targets))]
        if fmt in CONSOLES:
            plans += [Plan(f"burst-{size >> 10}k", name, _burst(source, name, size)) for size in (4096, 8192)]
        return plans
    if fmt == "trl-state":
        return [Plan("checkpoints", name, lambda d: checkpoints(source, d / name, targets))]
    if fmt == "tensorboard":
        return [Plan("records", name, lambda d: tf_records(source, d / name))]
    if fmt == "wandb-offline":
        return [Plan("blocks", name, lambda d: wandb_blocks(source, d / name))]
    return []


def _burst(source: Path, name: str, size: int) -> Writer:
    return lambda d: burst(source, d / name, size)


# -- lines ----------------------------------------------------------------------------------------------


def record_lines(path: Path, fmt: str) -> list[tuple[int, int]]:
    """``(step, line)`` of each record the format's reader reads from ``path`` (lines count from 1): where to
    look, never a figure."""
    from rlvitals.ingest import SkipLog, SourceMeta, find_reader

    reader = find_reader(path, fmt)
    out = []
    for record in reader.read(path, SourceMeta(format=reader.format, files=[str(path)]), SkipLog()):
        line = record.where.rsplit(":", 1)[-1]
        if record.kind == "metrics" and line.isdigit():
            out.append((record.step, int(line)))
    return out


def chosen(count: int, steps: Sequence[int], targets: Sequence[int], looks: int = LOOKS) -> list[int]:
    """The indices (0 … count-1) of the records to look after: ``looks`` spread evenly, and ``DENSE`` on each
    side of the first record at or after each target step (``steps``: each record's step, in order)."""
    picked = {min(count - 1, (k * count) // looks) for k in range(1, looks + 1)} if count else set()
    order = sorted(range(count), key=lambda i: steps[i])
    by_step = [steps[i] for i in order]
    for target in targets:
        at = bisect_left(by_step, target)
        for i in range(at - DENSE, at + DENSE + 1):
            if 0 <= i < count:
                picked.add(order[i])
    return sorted(picked)


def lines(source: Path, target: Path, fmt: str, targets: Sequence[int]) -> Iterator[None]:
    """Append ``source``'s lines to ``target`` in chunks ending after chosen records' lines; a look after each."""
    data = source.read_bytes()
    ends = [m.end() for m in re.finditer(rb"\n", data)]
    records = record_lines(source, fmt)
    cuts = set()
    if records and records[0][1] > 1:
        cuts.add(ends[records[0][1] - 2])  # the startup output, before the first record
    for i in chosen(len(records), [s for s, _ in records], targets):
        line = records[i][1]
        if line <= len(ends):
            cuts.add(ends[line - 1])
    yield from _appended(data, target, sorted(c for c in cuts if 0 < c < len(data)))


def _appended(data: bytes, target: Path, cuts: Sequence[int]) -> Iterator[None]:
    done = 0
    with target.open("ab") as fh:
        for cut in [*cuts, len(data)]:
            if cut > done:
                fh.write(data[done:cut])
                fh.flush()
                done = cut
                yield


# -- bursts ---------------------------------------------------------------------------------------------

_BAR = re.compile(rb"\d+/\d+ \[|\d+%\|")
_STDERR_LINE = re.compile(rb"^(?:\w*(?:Error|Exception|Warning|Interrupt)\b.*:|\[rank\d+\]|  warnings\.warn|Killed)")


class Stdout:
    """CPython's stdout to a file or a pipe: a text layer that passes its pending bytes on when the next write
    would take them past ``chunk``, over a binary buffer of ``size`` bytes. ``write`` returns what reaches
    the file."""

    def __init__(self, size: int, chunk: int = TEXT_CHUNK) -> None:
        self.size, self.chunk = size, chunk
        self.pending, self.held = bytearray(), bytearray()

    def write(self, data: bytes) -> list[bytes]:
        out: list[bytes] = []
        if self.pending and len(self.pending) + len(data) > self.chunk:
            out += self._pass(bytes(self.pending))
            self.pending.clear()
        self.pending += data
        if len(self.pending) >= self.chunk:
            out += self._pass(bytes(self.pending))
            self.pending.clear()
        return out

    def _pass(self, data: bytes) -> list[bytes]:
        if len(self.held) + len(data) <= self.size:
            self.held += data
            return []
        out = [bytes(self.held)] if self.held else []
        self.held.clear()
        if len(data) > self.size:
            out.append(data)  # more than the buffer holds: written straight through
        else:
            self.held += data
        return out

    def close(self) -> list[bytes]:
        out = self._pass(bytes(self.pending)) if self.pending else []
        self.pending.clear()
        if self.held:
            out.append(bytes(self.held))
            self.held.clear()
        return out


def streams(data: bytes) -> list[tuple[str, bytes]]:
    """``data`` as the writes that made it, in order: ``("err", piece)`` for stderr, ``("out", piece)`` for each
    write to stdout (a line's text and its newline are two)."""
    out: list[tuple[str, bytes]] = []
    in_traceback = False
    open_line = False  # the last stdout write was a line's text whose newline has not come yet
    for m in re.finditer(rb"\r[^\r\n]*|[^\r\n]*\n|[^\r\n]+", data):
        piece = m.group(0)
        if piece == b"\n" and out:  # a newline alone: stdout's, when a stdout line waits for it (its block was
            # cut between the text and the newline), else the end of the previous piece's line
            out.append(("out" if open_line else out[-1][0], piece))
            open_line = False
            continue
        body = piece.lstrip(b"\r")
        lead = piece[: len(piece) - len(body)]
        text = body.rstrip(b"\n")
        if text.startswith(b"Traceback (most recent call last)"):
            in_traceback = True
        err = in_traceback or not text.strip() or bool(_BAR.search(text)) or bool(_STDERR_LINE.match(text))
        if in_traceback and text and not text[:1].isspace() and not text.startswith((b"Traceback", b"During",
                                                                                     b"The above")):
            in_traceback = False  # the exception line ends the traceback
        if err:
            out.append(("err", piece))
            continue
        if lead:
            out.append(("err", lead))
        out.append(("out", text))
        open_line = not body.endswith(b"\n")
        if not open_line:
            out.append(("out", b"\n"))
    return out


def burst_writes(data: bytes, size: int) -> list[tuple[str, bytes]]:
    """What reaches the file, in order: ``("err", piece)`` at once, ``("block", bytes)`` when stdout writes, and
    ``("exit", bytes)`` for what stdout still held when the process exited (written back to back)."""
    stdout = Stdout(size)
    out: list[tuple[str, bytes]] = []
    for stream, piece in streams(data):
        if stream == "err":
            out.append(("err", piece))
        else:
            out += [("block", b) for b in stdout.write(piece)]
    out += [("exit", b) for b in stdout.close()]
    return out


def burst(source: Path, target: Path, size: int) -> Iterator[None]:
    """Write ``source`` to ``target`` as a trainer whose stdout is buffered in ``size`` bytes writes it; a look
    just before and just after each chosen stdout block (not between the blocks of the flush at exit: they come
    within microseconds of each other)."""
    writes = burst_writes(source.read_bytes(), size)
    blocks = [i for i, (kind, _) in enumerate(writes) if kind == "block"]
    keep = {blocks[i] for i in chosen(len(blocks), list(range(len(blocks))), (), LOOKS // 4)}
    with target.open("ab") as fh:
        wrote = False
        for i, (_, piece) in enumerate(writes):
            if i in keep and wrote:
                fh.flush()
                yield  # the bars ran ahead: the block is not there yet
            fh.write(piece)
            wrote = True
            if i in keep:
                fh.flush()
                wrote = False  # a look after this block; the next comes once something else was written
                yield
        fh.flush()
    yield


# -- whole files and records ----------------------------------------------------------------------------


def _entries(state: Any) -> list[dict[str, Any]]:
    return list(state["log_history"] if isinstance(state, dict) else state)


def checkpoints(source: Path, target: Path, targets: Sequence[int]) -> Iterator[None]:
    """Rewrite ``target`` whole at checkpoints: ``log_history`` up to the checkpoint's step, then the source."""
    raw = source.read_bytes()
    state = json.loads(raw)
    history = _entries(state)
    steps = sorted({int(e["step"]) for e in history if isinstance(e.get("step"), (int, float))})
    for i in chosen(len(steps), steps, targets)[:-1] if steps else []:
        at = steps[i]
        kept = [e for e in history if isinstance(e.get("step"), (int, float)) and e["step"] <= at]
        if isinstance(state, dict):
            epochs = [e["epoch"] for e in kept if isinstance(e.get("epoch"), (int, float))]
            now: Any = {**state, "log_history": kept, "global_step": at, "epoch": epochs[-1] if epochs else 0}
        else:
            now = kept
        target.write_text(json.dumps(now, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        yield
    target.write_bytes(raw)
    yield


def tf_records(source: Path, target: Path) -> Iterator[None]:
    """Append the event files of the TensorBoard folder ``source`` record by record (a look after about
    ``LOOKS`` of them, spread evenly)."""
    files = sorted(p for p in source.rglob("*") if p.is_file())
    target.mkdir(parents=True, exist_ok=True)
    for path in files:
        data = path.read_bytes()
        ends, at = [], 0
        while at + 12 <= len(data):
            (length,) = struct.unpack("<Q", data[at:at + 8])
            at += 12 + length + 4
            ends.append(min(at, len(data)))
        out = target / path.relative_to(source)
        out.parent.mkdir(parents=True, exist_ok=True)
        yield from _appended(data, out, [ends[i] for i in chosen(len(ends), list(range(len(ends))), ())])


def wandb_blocks(source: Path, target: Path) -> Iterator[None]:
    """Append the ``.wandb`` record log of the run folder ``source`` 32 KiB block by block; the rest of the
    folder is copied with the last block."""
    log = next(source.glob("*.wandb"))
    data = log.read_bytes()
    target.mkdir(parents=True, exist_ok=True)
    blocks = list(range(WANDB_BLOCK, len(data), WANDB_BLOCK))
    cuts = [blocks[i] for i in chosen(len(blocks), list(range(len(blocks))), ())]
    written = _appended(data, target / log.name, cuts)
    for _ in cuts:
        next(written)
        yield
    for path in source.rglob("*"):
        if path.is_file() and path != log:
            out = target / path.relative_to(source)
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, out)
    for _ in written:  # the last block
        pass
    yield
