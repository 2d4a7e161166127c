"""veRL's ``console`` logger: ``step:N - key:value - key:value ...`` lines in a captured stdout.

The line comes from ``LocalLogger`` (``f"{k}:{v:.3f}"`` before July 2025, the value's repr
after, so ``np.float64(0.007)`` occurs), usually behind a Ray prefix such as
``\\x1b[36m(TaskRunner pid=678203)\\x1b[0m``, among tqdm bars, model output and warnings. Keys
may hold ``/``, ``@`` and ``(1e-4)``, so a pair is split at its last ``:``. A validation-only
line (``step:0 - val-core/...``) is a record of its own; the Run merges it with the training
line of the same step. The SFT trainer prints the same format.

The config comes from the places the log has: the pprint'ed config dict veRL prints at start
(one dict over many Ray-prefixed lines, other workers' lines interleaved), the Hydra overrides
on the ``python3 -m verl.trainer.main_ppo ...`` command line, those Hydra repeats when the job
fails (``Error executing job with overrides: [...]``) and a Hydra ``overrides.yaml`` beside the
log (see :func:`rlvitals.ingest._config.sibling_overrides`). The dump wins where they differ.

A log that ends in a traceback gets the crash (:mod:`rlvitals.ingest._crash`); a log holding
only a traceback through veRL's own code (a run that died before its first step) is read too. The
trainer's ``Training Progress: 3%|...| 3/100 [`` bar shows steps finished when the metrics went to a
tracker only: a traceback it was drawn past was survived, and a crash after it came after step 3
(docs/formats/consoles.md). Two launches appended to one log are two runs (:mod:`rlvitals.run.trainings`).

A one-shot load reads the log with :func:`read_columns` (its step lines straight into
:class:`~rlvitals.ingest.columnar.Columns`, a large log by two processes); :func:`read` stays for a
watcher's windows.
"""

from __future__ import annotations

import re
import shlex
import sys
from array import array
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from ...words import Words
from .._config import hydra_scalar, sibling_overrides
from .._crash import FRAMEWORK_FRAMES, CrashScanner
from .._reader import Reader
from ..columnar import SPLIT_BYTES, Block, Columns, halves
from ..pyrepr import ReprError, flatten, parse, parse_dump
from ..record import STEP_RANGE, Record, SkipLog, SourceMeta, Value
from ..text import ANSI, cut_note, integer, iter_lines, line_blocks, parse_number, search_file, strip_ansi

FORMAT = "verl-console"

#: how far past the 64 KiB head ``sniff`` looks for a first line (startup output can be long)
_SNIFF = re.compile(
    rb"(?:^|[\r\n])(?:[\d:.,/+TZ\[\] -]{8,40} )?(?:\x1b\[[0-9;]*m)*"
    rb"(?:\([^()\r\n]*pid=\d+[^()\r\n]*\)(?:\x1b\[[0-9;]*m)* ?)?step:\d+ - [^\s:]+:"
)
#: a timestamp a tool such as ``ts`` or a logging wrapper put before the line
_TIMESTAMP = re.compile(r"[\d:.,/+TZ\[\] -]{8,40}")
#: the same, or a traceback through veRL's own code (a run that died before it logged a step)
_SNIFF_ANY = re.compile(_SNIFF.pattern + b"|" + FRAMEWORK_FRAMES["verl"].pattern)
_STEP = re.compile(r"step:(\d+)(?= - |\s*$)")
#: a frame of the trainer's bar over the training steps (``initial`` is the step it resumed from)
_PROGRESS = re.compile(r"Training Progress:\s*\d+%\|[^|\r\n]*\|\s*(\d+)/(\d+) \[")
#: Hydra's last words when the job raised: the overrides it was started with
_FAILED_JOB = re.compile(r"Error executing job with overrides: (\[.*\])\s*$")
_RAY_PREFIX = re.compile(r"\((?:[^()]*\s)?pid=\d+[^()]*\) ?")
_REPEATED = re.compile(r"\s*\[repeated \d+x across cluster\]\s*$")
_CONFIG_SECTIONS = frozenset({"actor_rollout_ref", "algorithm", "critic", "data", "trainer", "reward_model",
                              "custom_reward_function", "model", "optim", "ray_init", "global_profiler"})
_ENTRY_WORDS = ("main_ppo", "sft_trainer")
_ENTRY = re.compile(r"(?:[\w./-]*[./])?(?:main_ppo\w*|\w*sft_trainer\w*)(?:\.py)?")
_OVERRIDE = re.compile(r"\+{0,2}([A-Za-z_][\w-]*(?:\.[\w-]+)*)=(.*)", re.S)
#: a config dump longer than this is cut (veRL's full config is ~20 KiB)
MAX_DUMP_LINES = 20_000


def sniff(path: Path, head: bytes) -> bool:
    return search_file(path, head, _SNIFF_ANY)


def split_prefix(line: str) -> tuple[str, str]:
    """``(ray_prefix, text)`` of one console line, ANSI codes removed from both."""
    line = strip_ansi(line)
    if line.startswith("("):
        m = _RAY_PREFIX.match(line)
        if m:
            return m.group().rstrip(), line[m.end():]
    return "", line


def _head_ok(head: str) -> bool:
    """What precedes ``step:`` on a real step line: nothing, a timestamp, a Ray prefix, a tqdm bar."""
    head = strip_ansi(head)
    if "\r" in head:
        head = head.rsplit("\r", 1)[1]
    stamp = _TIMESTAMP.match(head)
    if stamp and head[stamp.end():stamp.end() + 1] in ("", " ", "("):
        head = head[stamp.end():].lstrip()
    m = _RAY_PREFIX.match(head)
    head = (head[m.end():] if m else head).strip()
    return not head or (head.endswith("]") and "|" in head)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        pass
    if text.startswith("np.") and text.endswith(")"):
        try:
            return float(text[text.index("(") + 1:-1])
        except ValueError:
            pass
    return parse_number(text)


def _unwrap(text: str) -> float:
    """``np.float64(0.5)`` -> 0.5; ValueError unless the repr is whole."""
    if not text.endswith(")"):
        raise ValueError(text)
    return float(text[text.index("(") + 1:-1])


def _pairs_slow(pairs: list[str]) -> tuple[dict[str, Value], list[Words]]:
    values: dict[str, Value] = {}
    problems: list[Words] = []
    for pair in pairs:
        key, sep, raw = pair.rpartition(":")
        key, raw = key.strip(), raw.strip()
        if not sep or not key:
            problems.append(Words(f"{pair.strip()!r} is not a key:value pair", f"{pair.strip()!r} 不是 key:value 对"))
            continue
        value = _number(raw)
        if value is None:
            problems.append(Words(f"value {raw!r} for {key!r} is not a number", f"{key!r} 的值 {raw!r} 不是数字"))
        else:
            values[key] = value
    return values, problems


def parse_step_line(text: str, step: int, where: str, skips: SkipLog, cut: Words | None = None) -> Record | None:
    """The record of one ``step:N - k:v - ...`` text (starting at ``step:``). With ``cut`` (why the
    line's end was cut off) the last pair is skipped, said so, and the others are kept: a value cut
    short may still parse, as the wrong number."""
    pairs = text.split(" - ")
    del pairs[0]
    if cut is not None and pairs:
        last = pairs.pop()
        key, sep, _ = last.rpartition(":")
        lost = (key if sep else last).strip()
        skips.skip(where, Words(f"{cut}: the last value ({lost!r}) was cut off and skipped; the {len(pairs)} values "
                                "before it were kept",
                                f"{cut.zh}：最后一个值（{lost!r}）被截断，已跳过；"
                                f"它前面的 {len(pairs)} 个值保留了下来"))
    values: dict[str, Value]
    problems: list[Words] = []
    try:
        split = [p.rpartition(":") for p in pairs]
        if "np." in text:
            values = {k: _unwrap(v) if v.startswith("np.") else float(v) for k, _, v in split}
        else:
            values = {k: float(v) for k, _, v in split}
        if "" in values:
            raise ValueError
    except ValueError:
        values, problems = _pairs_slow(pairs)
    if not values:
        why, why_zh = (f" ({problems[0]})", f"（{problems[0].zh}）") if problems else ("", "")
        skips.skip(where, Words(f"no readable key:value pair after 'step:{step}'{why}; the line was skipped",
                                f"'step:{step}' 之后没有可读的 key:value 对{why_zh}；这一行已跳过"))
        return None
    for problem in problems:
        skips.skip(where, Words(f"{problem}; the value was skipped", f"{problem.zh}；这个值已跳过"))
    return Record(step, values, where)


def _step_text(line: str, at: int) -> tuple[int, str] | None:
    """``(step, text from 'step:' on)`` when ``line`` is a step line, else None."""
    text = line[at:] if at else line
    if "\r" in text:  # a tqdm bar redrawn after the line
        text = text.split("\r", 1)[0]
    m = _STEP.match(text)
    if m is None:
        return None
    if "\x1b" in text:
        text = ANSI.sub("", text)
    if "cluster]" in text:
        text = _REPEATED.sub("", text)
    return integer(m.group(1)), text


class _Head:
    """Config evidence in the startup output: the pprint'ed dump and command-line overrides."""

    def __init__(self, path: Path, meta: SourceMeta) -> None:
        self.path = path
        self.meta = meta
        self.dump: list[str] | None = None  # lines of a dump being collected
        self.dump_prefix = ""
        self.dump_at: list[int] = []  # the file line of each dump line
        self.dump_done = False
        self.command: list[str] | None = None  # a command line continued with '\'
        self.overrides: dict[str, Any] = {}
        self.config: dict[str, Any] = {}

    def feed(self, lineno: int, line: str) -> None:
        if self.command is not None:
            self._command_line(split_prefix(line)[1])
            return
        if self.dump is not None:
            prefix, text = split_prefix(line)
            if prefix != self.dump_prefix:
                return  # another worker's line between two lines of the dump
            if text[:1].isspace() and len(self.dump) < MAX_DUMP_LINES:
                glued = _RAY_PREFIX.search(text) if "pid=" in text else None
                self.dump.append(text[:glued.start()] if glued else text)
                self.dump_at.append(lineno)
                return
            self._close_dump()
        if not self.dump_done and "{'" in line:
            prefix, text = split_prefix(line)
            if text.startswith("{'") and text[2:text.find("'", 2)] in _CONFIG_SECTIONS:
                self.dump, self.dump_prefix, self.dump_at = [text], prefix, [lineno]
                return
        if any(word in line for word in _ENTRY_WORDS):
            text = split_prefix(line)[1].lstrip("+ ").lstrip("$ ")
            self.command = []
            self._command_line(text)
            return
        if "Error executing job" in line:
            self.failed_job(line)

    def failed_job(self, line: str) -> None:
        """The overrides Hydra lists when the job raised (the run's only config when it died early)."""
        m = _FAILED_JOB.search(split_prefix(line)[1])
        if m is None:
            return
        try:
            items = parse(m.group(1))
        except ReprError:
            return
        for item in items if isinstance(items, list) else ():
            hit = _OVERRIDE.fullmatch(item) if isinstance(item, str) else None
            if hit is not None:
                self.overrides.setdefault(hit.group(1), _hydra_value(hit.group(2)))

    def _command_line(self, text: str) -> None:
        assert self.command is not None
        stripped = text.rstrip()
        if stripped.endswith("\\") and len(self.command) < 1000:
            self.command.append(stripped[:-1])
            return
        self.command.append(stripped)
        self.overrides.update(hydra_overrides(" ".join(self.command)))
        self.command = None

    def _close_dump(self) -> None:
        assert self.dump is not None
        where = f"{self.path}:{self.dump_at[0]}"
        text = "\n".join(self.dump)
        self.dump, self.dump_done = None, True
        try:
            dump = parse_dump(text)
        except ReprError as exc:
            self.meta.notes.append(Words(f"{where}: the config dump could not be read ({exc}); it was ignored",
                                         f"{where}：配置转储读不出来（{exc}）；已忽略"))
            return
        self.config = flatten(dump.value)
        if dump.cut is not None:
            line = self.dump_at[text.count("\n", 0, dump.cut)]
            self.meta.notes.append(Words(
                f"{where}: the config dump breaks off at line {line}; "
                f"the {len(self.config)} settings before that were kept",
                f"{where}：配置转储在第 {line} 行中断；保留了此前的 {len(self.config)} 项设置"))
        if dump.repairs:
            self.meta.notes.append(Words(
                f"{where}: lines of the config dump are missing (Ray drops lines that repeat other "
                "processes' output); settings were placed by their indentation and those on the "
                "missing lines are absent",
                f"{where}：配置转储缺了几行（Ray 会丢掉与其他进程输出重复的行）；各项设置按缩进归位，"
                "缺失行上的设置没有读到"))

    def close(self) -> None:
        if self.command is not None:
            self._command_line("")
        if self.dump is not None:
            self._close_dump()
        for key, value in sibling_overrides(self.path, self.meta).items():
            self.overrides.setdefault(key, value)
        self.meta.config.update(self.overrides)
        self.meta.config.update(self.config)


def _hydra_value(text: str) -> Any:
    if text.startswith("[") and text.endswith("]") and "[" not in text[1:]:
        inner = text[1:-1].strip()
        return [_hydra_value(item.strip().strip("'\"")) for item in inner.split(",")] if inner else []
    return hydra_scalar(text)


def hydra_overrides(command: str) -> dict[str, Any]:
    """``key.path -> value`` for the Hydra overrides after a veRL entry point on a command line.

    Example:
        >>> hydra_overrides("python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo +x.y=1")
        {'algorithm.adv_estimator': 'grpo', 'x.y': 1}
    """
    try:
        tokens = shlex.split(command, comments=False)
    except ValueError:  # an unbalanced quote: fall back to whitespace
        tokens = command.split()
    out: dict[str, Any] = {}
    started = False
    for token in tokens:
        if not started:
            started = _ENTRY.fullmatch(token) is not None
            continue
        m = _OVERRIDE.fullmatch(token)
        if m is not None:
            out[m.group(1)] = _hydra_value(m.group(2))
    return out


class _Scan:
    """One pass over a console log's lines: which are step lines, and what the others say (the config
    before the first step line, a traceback, the end of training)."""

    def __init__(self, path: Path, meta: SourceMeta, head: bool = True) -> None:
        self.head: _Head | None = _Head(path, meta) if head else None
        self.crash = CrashScanner(path)
        self.ok_heads: set[str] = {""}
        self.last_step_line = 0
        self.lineno = 0
        #: the number of every step line, and whether it gave a record (what a later scan of the same
        #: lines needs to follow the crash scanner without parsing them again)
        self.step_lines = array("q")
        self.progressed = bytearray()

    def progress(self, row: bool = True) -> None:
        """The last step line gave a record (``row``: one the Columns took, not one their check skipped)."""
        self.crash.progress(self.lineno)
        self.progressed[-1] = 1 if row else 2

    def step_line(self, lineno: int, line: str) -> tuple[int, str] | None:
        """``(step, text from 'step:' on)`` of a step line; any other line goes to the scanners."""
        self.lineno = lineno
        at = line.find("step:")
        if at >= 0:
            prefix = line[:at]
            found = _step_text(line, at) if prefix in self.ok_heads or _head_ok(prefix) else None
            if found is not None:
                if len(self.ok_heads) < 64:
                    self.ok_heads.add(prefix)
                if self.head is not None:
                    self.head.close()
                    self.head = None
                self.last_step_line = lineno
                self.step_lines.append(lineno)
                self.progressed.append(0)
                return found
        _other(self.crash, lineno, line)
        if self.head is not None:
            self.head.feed(lineno, line)
        return None

    def fresh(self) -> bool:
        """Whether the scan is where a scan starting at the next line without the head would be: the
        head closed, no traceback under way or seen (the crash scanner's history is taken over by
        :meth:`~rlvitals.ingest._crash.CrashScanner.absorb`)."""
        crash = self.crash
        return (self.head is None and not crash.in_traceback and crash.frame is None and crash.any_frame is None
                and not crash.seen and crash.ended_at is None)

    def finish(self, path: Path, meta: SourceMeta) -> None:
        if self.head is not None:
            self.head.close()
            self.head = None
        self.crash.into(meta)
        lineno = self.lineno
        if self.last_step_line and self.last_step_line == lineno and not _ends_with_newline(path):
            meta.notes.append(Words(f"{path}:{lineno}: the last line has no newline (was the log still being "
                                    "written?); its last value may be cut short",
                                    f"{path} 第 {lineno} 行：最后一行没有换行符（日志还在写入？）；"
                                    "它的最后一个值可能不完整"))


def _other(crash: CrashScanner, lineno: int, line: str) -> None:
    """A line that is no step line, as the crash scanner needs it: a traceback's, a frame of the training's
    progress bar (``Training Progress:  3%|...| 3/100 [``: step 3 finished, though its metrics went to a
    tracker only), the final validation (the training's end)."""
    crash.feed(lineno, line)
    if "Training Progress" in line:
        for m in _PROGRESS.finditer(line):
            crash.advanced(lineno, integer(m[1]), integer(m[2]))
    elif "Final validation metrics" in line:
        crash.finished(lineno)


def read(path: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    meta.framework = "verl"
    scan = _Scan(path, meta)
    for lineno, line in iter_lines(path, meta):
        found = scan.step_line(lineno, line)
        if found is not None:
            record = parse_step_line(found[1], found[0], f"{path}:{lineno}", skips, cut_note(line))
            if record is not None:
                scan.progress()
                yield record
    scan.finish(path, meta)


def _fast_row(text: str, fast: dict[tuple[str, ...], Block], steps: array[int], step: int) -> bool:
    """Put a step line of a plain layout whose every value is a number straight into its block (what
    :func:`parse_step_line` and the record check would make of it); False, nothing put, for any other."""
    pairs = text.split(" - ")
    del pairs[0]
    split = [p.rpartition(":") for p in pairs]
    block = fast.get(tuple([k for k, _, _ in split]))
    if block is None or not STEP_RANGE[0] <= step <= STEP_RANGE[1]:
        return False
    into = block.values
    have = len(into)
    try:
        if "np." in text:
            into.extend([_unwrap(v) if v.startswith("np.") else float(v) for _, _, v in split])
        else:
            into.extend(map(float, [v for _, _, v in split]))
    except ValueError:
        del into[have:]
        return False
    block.rows.append(len(steps))
    steps.append(step)
    return True


def _fill(path: Path, meta: SourceMeta, skips: SkipLog, scan: _Scan, cols: Columns) -> None:
    """The lines of ``meta.window`` into ``cols``, as :func:`read` reads them, continuing ``scan``."""
    steps, fast = cols.steps, cols.fast
    for first, lines in line_blocks(path, meta):
        cols.roll()
        for lineno, raw in enumerate(lines, first):
            line = raw.decode("utf-8", "replace").rstrip("\r")
            found = scan.step_line(lineno, line)
            if found is None:
                continue
            step, text = found
            cut = cut_note(line)
            if cut is None and _fast_row(text, fast, steps, step):
                scan.progress()
                continue
            record = parse_step_line(text, step, f"{path}:{lineno}", skips, cut)
            if record is None:
                continue
            rows = len(steps)
            cols.add(record, skips)
            scan.progress(len(steps) > rows)
            keys = tuple(p.rpartition(":")[0] for p in text.split(" - ")[1:])
            if cut is None and tuple(record.values) == keys:
                cols.approve(keys)


#: what a byte range gave: its records, its scan, and the number of lines before it
_Part = tuple[Columns, _Scan, int]


def _parse(path: Path, meta: SourceMeta, skips: SkipLog, progress: Callable[[int], None] | None = None) -> _Part:
    """One byte range into :class:`Columns`: the first with the head, a later one without (a worker's
    guess that the head closed before it, checked when the parts are put together)."""
    scan = _Scan(path, meta, head=meta.window is None or meta.window[0] == 0)
    cols = Columns(progress=progress)
    _fill(path, meta, skips, scan, cols)
    return cols, scan, meta.line_base


def _follow(path: Path, meta: SourceMeta, scan: _Scan, later: _Scan) -> None:
    """Carry ``scan`` (the first half's) over the lines of ``meta.window`` that ``later`` (a worker's
    scan of them, from a guessed start) found: the step lines are not parsed again, the others go to the
    crash scanner as :meth:`_Scan.step_line` would send them."""
    crash, step_lines, progressed = scan.crash, later.step_lines, later.progressed
    at, count = 0, len(step_lines)
    for first, lines in line_blocks(path, meta):
        for lineno, raw in enumerate(lines, first):
            if at < count and step_lines[at] == lineno:
                if progressed[at]:
                    crash.progress(lineno)
                at += 1
                continue
            _other(crash, lineno, raw.decode("utf-8", "replace").rstrip("\r"))
    scan.lineno, scan.last_step_line = later.lineno, later.last_step_line or scan.last_step_line


def read_columns(path: Path, meta: SourceMeta, skips: SkipLog, *, min_bytes: int = SPLIT_BYTES,
                 progress: Callable[[int], None] | None = None) -> Columns:
    """What :func:`read` yields, as :class:`Columns`; a file of ``min_bytes`` or more is read by two
    processes, each its half. Which lines are step lines and what they hold does not depend on the
    lines before, but what the others say does: the second worker starts as if the head had closed and
    no traceback were under way. When the first half ends otherwise, its scan is carried over the
    second half's other lines here (and when no step line came before the middle, the head still
    reading, the second half is read again)."""
    meta.framework = "verl"
    (cols, scan, _), second = halves(path, meta, skips, _parse, min_bytes, partial(_parse, progress=progress))
    lines: array[int] | None = None
    if second is not None:
        window = (second.start, sys.maxsize)
        part, later, line_base = second.value
        if scan.head is not None:  # the head reads the lines of the second half too: read it again
            meta.window, meta.line_base = window, line_base
            try:
                _fill(path, meta, skips, scan, cols)
            finally:
                meta.window, meta.line_base = None, 0
        else:
            second.merge(meta, skips)
            cols.extend(part)
            lines = _row_lines(scan, later)
            if scan.fresh() and scan.crash.absorb(later.crash):
                scan.lineno, scan.last_step_line = later.lineno, later.last_step_line or scan.last_step_line
            else:
                _follow(path, replace(meta, window=window, line_base=line_base, notes=[]), scan, later)
    scan.finish(path, meta)
    cols.lines = lines if lines is not None else _row_lines(scan)
    return cols


def _row_lines(*scans: _Scan) -> array[int]:
    """The line of each record the Columns took, in order: the step lines of ``scans`` that gave one."""
    import numpy as np  # here: a large log's second worker is forked before numpy is imported

    out: array[int] = array("q")
    for scan in scans:
        taken = np.frombuffer(scan.progressed, dtype=np.uint8) == 1
        out.frombytes(np.frombuffer(scan.step_lines, dtype=np.int64)[taken].tobytes())
    return out


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as fh:
        fh.seek(0, 2)
        if fh.tell() == 0:
            return True
        fh.seek(-1, 2)
        return fh.read(1) == b"\n"


READER = Reader(FORMAT, sniff, read, columns=read_columns, trainings=True,
                describes="veRL's console logger: step:N - key:value lines in a captured stdout")
