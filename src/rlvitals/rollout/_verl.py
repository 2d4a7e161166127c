"""veRL generation dumps: ``trainer.rollout_data_dir`` / ``trainer.validation_data_dir``.

``RayPPOTrainer._dump_generations`` writes ``{dir}/{global_steps}.jsonl`` with one
``json.dumps(ensure_ascii=False)`` object per sample: ``input``, ``output``, ``gts``,
``score``, ``step`` and the reward function's extra info (``acc``, ``pred``,
``request_id`` ...). There is no group id: training dumps list the ``n`` samples of a prompt
consecutively (``repeat(interleave=True)``), so a group is a run of equal ``input`` in a step;
validation dumps need not, and are grouped by ``input`` text (see ``_core.assign_groups``).

Mapping: prompt = ``input``, response = ``output``, target = ``gts`` (a list or number is
kept as JSON text), score = ``score``, correct = ``acc`` (bool or 0/1) else score >= 1.0 when
every score lies in [-1, 1], answer = ``pred``, source = ``data_source``; the per-token lists ``token_entropy``,
``token_logprob`` and ``tokens`` (the writers' extra info) are read under their names. Other keys stay as columns.
A column map (the CLI's ``--correct`` ...) overrides single fields of this mapping.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..errors import UnknownFormatError
from ..ingest.record import SkipLog, SourceMeta
from ..ingest.text import json_objects
from ..words import Words
from ._columns import WHERE, frame_from_rows
from ._core import KEY, ColumnMap, Progress, RolloutSet, ShardRead, apply_map, files_told, finish, override
from .tally import file_note, merged

FORMAT = "verl-dump"
NAME = re.compile(r"^(\d+)\.jsonl$")
EXPECTED = Words("a JSON object with input/output/score", "JSON 对象（含 input/output/score）")
_FIELDS = {"step": "step", "prompt": "input", "response": "output", "target": "gts", "score": "score",
           "correct": "acc", "answer": "pred", "source": "data_source",
           # per-token lists a dump may carry as extra info (rlvitals sample writes them): read under their names
           "token_entropy": "token_entropy", "token_logprob": "token_logprob", "tokens": "tokens",
           "token_old_logprob": "token_old_logprob", "token_rollout_logprob": "token_rollout_logprob"}


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
    before, replaced, read = skips.count, 0, 0
    for lineno, text, obj in json_objects(path, meta, skips, EXPECTED, cut_at_end=not _ends_with_newline(path)):
        read += 1
        replaced += "\ufffd" in text
        if not isinstance(obj.get("step"), int) or isinstance(obj.get("step"), bool):
            obj["step"] = step
        obj[WHERE] = f"{path}:{lineno}"
        rows.append(obj)
    notes.extend(file_note(n) if isinstance(n, Words) else n for n in meta.notes)
    if not read and skips.count == before:
        notes.append(file_note(Words(f"{path} holds no samples", f"{path} 里没有样本")))
    if replaced:
        notes.append(file_note(Words(
            f"{path}: {replaced} line(s) hold U+FFFD (bytes that are not UTF-8 are read as U+FFFD)",
            f"{path}：有 {replaced} 行含 U+FFFD（不是 UTF-8 的字节读作 U+FFFD）")))


def read(paths: list[Path], *, group_size: int | None, split: str | None, what: str,
         columns: ColumnMap | None = None, progress: Progress | None = None,
         shard: ShardRead | None = None) -> RolloutSet:
    """The dump as a rollout table; ``columns`` overrides single fields of the mapping above
    (e.g. ``correct="my_acc"`` for a reward function's own key), the rest stay veRL's. ``progress`` is
    told the step files read (:func:`._core.files_told`)."""
    skips, notes = SkipLog(), list[str]()
    rows: list[dict[str, Any]] = []
    for path in files_told(paths, progress):
        _read_file(path, rows, skips, notes)
    if rows and not any("output" in r or "input" in r for r in rows):
        raise UnknownFormatError(Words(f"{what}: named like a veRL generation dump ({{step}}.jsonl) but its lines "
                                       "have no 'input'/'output' keys; pass a column map for a generic JSONL file",
                                       f"{what}：文件名像 veRL 的生成结果（{{step}}.jsonl），但各行没有 "
                                       "'input'/'output' 键；通用 JSONL 文件请传入列映射"))
    df = frame_from_rows(rows)
    cmap = override({k: v for k, v in _FIELDS.items() if v in df.columns}, columns, FORMAT, notes)
    key = cmap.prompt
    # by name, as a Series: pl.col would read a key like '^p$' as a pattern
    df = df.with_columns(df.get_column(key).alias(KEY)) if key is not None and key in df.columns else df
    df = apply_map(df, cmap, what, skips, notes)
    table = finish(df, grouping="consecutive", group_size=group_size, split=split, notes=notes, what=what,
                   skips=skips, shard=shard)
    return RolloutSet(table, skips, FORMAT, [str(p) for p in paths], merged([notes]), notes)
