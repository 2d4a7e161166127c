"""A Parquet table of metrics: one row per logged step, one column per key.

The step column is chosen as for JSONL (:data:`~rlvitals.ingest.formats.generic_jsonl.STEP_KEYS`);
without one the rows are numbered. A null cell means the key was not logged in that
row (pandas turns its NaN placeholders into nulls when it writes Parquet); a stored NaN
stays NaN. Number, boolean and string columns are read; list and struct columns
(media, tables) are not metrics and are named in a note.

A table of rollouts (a ``prompt`` column beside ``completion``/``response``/``output``, as
TRL's ``completions/completions_NNNNN.parquet``) is refused with a clear error.

Memory is bounded: rows are read in slices of about :data:`BATCH_CELLS` cells.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import InputError, UnknownFormatError
from ...words import Words
from .._reader import Reader
from ..record import Record, SkipLog, SourceMeta, Value
from .generic_jsonl import STEP_KEYS, WANDB_KEYS, as_step, choose_step_key, drop_eval_epoch, note_side_logs

if TYPE_CHECKING:  # polars is imported when a Parquet file is read, not with the readers
    import polars as pl

FORMAT = "parquet"
MAGIC = b"PAR1"
#: cells per slice read at once (about 40 MB of floats)
BATCH_CELLS = 5_000_000
ROLLOUT_TEXT = ("completion", "response", "output")


def sniff(path: Path, head: bytes) -> bool:
    return head.startswith(MAGIC)


def _scalar(dtype: pl.DataType) -> bool:
    import polars as pl

    return dtype.is_numeric() or dtype in (pl.Boolean, pl.String, pl.Categorical) or isinstance(dtype, pl.Enum)


def _schema(path: Path) -> pl.Schema:
    import polars as pl

    try:
        return pl.scan_parquet(path).collect_schema()
    except (pl.exceptions.PolarsError, OSError, pl.exceptions.PanicException) as exc:  # a panic: damaged bytes
        raise InputError(Words(f"{path}: not a readable Parquet file ({type(exc).__name__}: {exc}); "
                               "expected a table of metrics with one row per step",
                               f"{path}：不是可读的 Parquet 文件（{type(exc).__name__}: {exc}）；"
                               "这里应当是每步一行的指标表")) from exc


def _refuse_rollouts(path: Path, names: list[str]) -> None:
    texts = [n for n in ROLLOUT_TEXT if n in names]
    if "prompt" in names and texts:
        raise UnknownFormatError(Words(
            f"{path}: this Parquet file holds rollouts (columns 'prompt' and {texts[0]!r}), not training "
            "metrics; pass the run's metrics log instead (`rlvitals rollouts`, coming, will read this file)",
            f"{path}：这个 Parquet 文件里是 rollout 样本（有 'prompt' 和 {texts[0]!r} 列），不是训练指标；"
            "请改传这次运行的指标日志（即将推出的 `rlvitals rollouts` 会读这个文件）"))


def _batches(path: Path, columns: list[str], names: list[str]) -> Iterator[tuple[int, pl.DataFrame]]:
    import polars as pl

    # by position: polars reads a name written as ^…$ as a regular expression (a column "^.*$" is every column)
    lazy = pl.scan_parquet(path).select(pl.nth([names.index(c) for c in columns]))
    try:
        total = pl.scan_parquet(path).select(pl.len()).collect().item()
        size = max(1, BATCH_CELLS // max(len(columns), 1))
        for offset in range(0, total, size):
            yield offset, lazy.slice(offset, size).collect()
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException) as exc:
        raise InputError(Words(f"{path}: the Parquet data cannot be read ({type(exc).__name__}: {exc}); is the file "
                               "cut short?",
                               f"{path}：Parquet 数据读不出来（{type(exc).__name__}: {exc}）；"
                               "文件是不是不完整？")) from exc


def read(path: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    schema = _schema(path)
    names = schema.names()
    _refuse_rollouts(path, names)
    step_key = choose_step_key([names])
    counters = WANDB_KEYS | set(STEP_KEYS)  # not metrics (and "step" names the axis)
    keep = [n for n, dtype in schema.items() if _scalar(dtype) and n not in counters]
    ignored = [n for n, dtype in schema.items() if not _scalar(dtype)]
    if ignored:
        shown = ", ".join(ignored[:5]) + (" ..." if len(ignored) > 5 else "")
        meta.notes.append(Words(f"{path}: {len(ignored)} columns are not numbers or text and were ignored: {shown}",
                                f"{path}：有 {len(ignored)} 列既不是数字也不是文本，已忽略：{shown}"))
    if step_key is None:
        meta.notes.append(Words(f"{path}: no step column ({', '.join(STEP_KEYS)}); "
                                "the rows were numbered 1, 2, 3, ... as steps",
                                f"{path}：没有步数列（{', '.join(STEP_KEYS)}）；各行依次编为第 1、2、3…… 步"))
    meta.bytes_read += path.stat().st_size
    columns = keep if step_key is None else [step_key, *keep]
    side_rows = 0
    for offset, batch in _batches(path, columns, names):
        for i, row in enumerate(batch.iter_rows(), offset + 1):
            where = f"{path}#row {i}"
            if step_key is None:
                step = i
            else:
                raw_step, row = row[0], row[1:]
                found = as_step(raw_step)
                if found is None:
                    if raw_step is None and step_key == "train/global_step" and "_step" in names:
                        side_rows += 1
                        continue
                    skips.skip(where, Words(f"step {raw_step!r} is not an integer; the row was skipped",
                                            f"步数 {raw_step!r} 不是整数；这一行已跳过"))
                    continue
                step = found
            values: dict[str, Value] = {}
            for key, cell in zip(keep, row, strict=True):
                if cell is None:
                    continue
                values[key] = cell if isinstance(cell, str) else float(cell)
            drop_eval_epoch(values)
            if values:
                yield Record(step, values, where)
    note_side_logs(meta, path, side_rows, "rows")


READER = Reader(FORMAT, sniff, read,
                describes="a Parquet table of metrics, one row per logged step")
