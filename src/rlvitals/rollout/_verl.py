"""veRL generation dumps: ``trainer.rollout_data_dir`` / ``trainer.validation_data_dir``.

``RayPPOTrainer._dump_generations`` writes ``{dir}/{global_steps}.jsonl`` with one
``json.dumps(ensure_ascii=False)`` object per sample: ``input``, ``output``, ``gts``,
``score``, ``step`` and the reward function's extra info (``acc``, ``pred``,
``request_id`` ...). There is no group id: training dumps list the ``n`` samples of a prompt
consecutively (``repeat(interleave=True)``), so a group is a run of equal ``input`` in a step;
validation dumps need not, and are grouped by ``input`` text (see ``_core.assign_groups``).

Mapping: prompt = ``input``, response = ``output``, target = ``gts`` (a list or number is
kept as JSON text), score = ``score``, correct = ``acc`` (bool or 0/1) else score >= 1.0 when
every score lies in [-1, 1], answer = ``pred``, source = ``data_source``. Other keys stay as columns.
A column map (the CLI's ``--correct`` ...) overrides single fields of this mapping.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import polars as pl

from ..errors import UnknownFormatError
from ..ingest.record import SkipLog, SourceMeta
from ..ingest.text import iter_lines
from ._columns import WHERE, frame_from_rows
from ._core import KEY, ColumnMap, RolloutSet, apply_map, finish, override

FORMAT = "verl-dump"
NAME = re.compile(r"^(\d+)\.jsonl$")
_FIELDS = {"step": "step", "prompt": "input", "response": "output", "target": "gts", "score": "score",
           "correct": "acc", "answer": "pred", "source": "data_source"}


def file_step(path: Path) -> int | None:
    m = NAME.match(path.name)
    return int(m.group(1)) if m else None


def looks_like_dump(path: Path) -> bool:
    """A JSONL file whose first object has veRL's ``input``/``output`` keys."""
    with path.open("rb") as fh:
        head = fh.read(1 << 16)
    first = head.lstrip()[:8192]
    return first.startswith(b"{") and b'"input"' in first and b'"output"' in first


def _ends_with_newline(path: Path) -> bool:
    size = path.stat().st_size
    if size == 0:
        return True
    with path.open("rb") as fh:
        fh.seek(size - 1)
        return fh.read(1) == b"\n"


def _read_file(path: Path, rows: list[dict[str, Any]], skips: SkipLog, notes: list[str]) -> None:
    meta = SourceMeta(format=FORMAT)
    step = file_step(path)
    last_complete = _ends_with_newline(path)
    lines: list[tuple[int, str]] = [(n, t) for n, t in iter_lines(path, meta) if t.strip()]
    notes.extend(meta.notes)
    if not lines:
        notes.append(f"{path} holds no samples")
        return
    replaced = 0
    for i, (lineno, text) in enumerate(lines):
        where = f"{path}:{lineno}"
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            at_end = i == len(lines) - 1 and not last_complete
            cut = " - the file ends mid-line (still being written?)" if at_end else ""
            skips.skip(where, f"invalid JSON ({exc.msg} at column {exc.colno}){cut}; the line was skipped")
            continue
        if not isinstance(obj, dict):
            skips.skip(where, f"expected a JSON object with input/output/score, got {type(obj).__name__}; "
                              "the line was skipped")
            continue
        replaced += "\ufffd" in text
        if not isinstance(obj.get("step"), int) or isinstance(obj.get("step"), bool):
            obj["step"] = step
        obj[WHERE] = where
        rows.append(obj)
    if replaced:
        notes.append(f"{path}: {replaced} line(s) hold U+FFFD (bytes that are not UTF-8 are read as U+FFFD)")


def read(paths: list[Path], *, group_size: int | None, split: str | None, what: str,
         columns: ColumnMap | None = None) -> RolloutSet:
    """The dump as a rollout table; ``columns`` overrides single fields of the mapping above
    (e.g. ``correct="my_acc"`` for a reward function's own key), the rest stay veRL's."""
    skips, notes = SkipLog(), list[str]()
    rows: list[dict[str, Any]] = []
    for path in paths:
        _read_file(path, rows, skips, notes)
    if rows and not any("output" in r or "input" in r for r in rows):
        raise UnknownFormatError(f"{what}: named like a veRL generation dump ({{step}}.jsonl) but its lines "
                                 "have no 'input'/'output' keys; pass a column map for a generic JSONL file")
    df = frame_from_rows(rows)
    cmap = override({k: v for k, v in _FIELDS.items() if v in df.columns}, columns, FORMAT, notes)
    key = cmap.prompt
    df = df.with_columns(pl.col(key).alias(KEY)) if key is not None and key in df.columns else df
    df = apply_map(df, cmap, what, skips, notes)
    table = finish(df, grouping="consecutive", group_size=group_size, split=split, notes=notes, what=what,
                   skips=skips)
    return RolloutSet(table, skips, FORMAT, [str(p) for p in paths], notes)
