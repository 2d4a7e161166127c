"""TRL completions: ``<output_dir>/completions/completions_{step:05d}.parquet`` (``log_completions=True``,
TRL >= 1.0).

Columns: ``step`` (TRL writes it as text), ``prompt`` (text, or a list of chat messages),
``completion`` (text or messages), one column per reward function, extra columns, and
``advantage``. Mapping: prompt = the last user message of a chat (groups are formed by the
whole conversation), response = ``completion``, score = ``reward`` when present, else the
plain sum of the reward-function columns (every numeric column but ``step`` and
``advantage``), ignoring NaN as TRL does. TRL weights reward functions by ``reward_weights``,
which the file does not record, so a plain sum is only right for equal unit weights; a note
says so. Reward-function columns are kept. At a step that also evaluates, TRL overwrites the
train file with the eval completions; a file whose row count differs from the others is noted.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import polars as pl

from ..ingest._record import SkipLog
from ._core import KEY, WHERE, ColumnMap, RolloutSet, apply_map, chat_columns, finish

FORMAT = "trl-completions"
NAME = re.compile(r"^completions_(\d+)\.parquet$")
_NOT_REWARD = {"step", "advantage", "reward"}


def file_step(path: Path) -> int | None:
    m = NAME.match(path.name)
    return int(m.group(1)) if m else None


def _read_files(paths: list[Path], skips: SkipLog) -> list[tuple[Path, pl.DataFrame]]:
    frames = []
    for path in paths:
        try:
            df = pl.read_parquet(path)
        except Exception as exc:  # polars raises several types for a damaged file
            skips.skip(str(path), f"cannot be read as Parquet ({type(exc).__name__}: {exc}); the file was skipped")
            continue
        df = df.with_columns(pl.format("{}#{}", pl.lit(str(path)), pl.int_range(1, pl.len() + 1)).alias(WHERE))
        if "step" not in df.columns:
            df = df.with_columns(pl.lit(file_step(path), pl.Int64).alias("step"))
        frames.append((path, df.with_columns(pl.col("step").cast(pl.Utf8))))
    return frames


def _score(df: pl.DataFrame, notes: list[str]) -> tuple[pl.DataFrame, str | None]:
    if "reward" in df.columns:
        return df, "reward"
    funcs = [c for c, t in df.schema.items() if t.is_numeric() and c not in _NOT_REWARD]
    if not funcs:
        notes.append("no reward column found: the table has no score")
        return df, None
    vals = [pl.when(pl.col(c).is_nan()).then(None).otherwise(pl.col(c).cast(pl.Float64)) for c in funcs]
    total = pl.when(pl.all_horizontal([v.is_null() for v in vals])).then(None).otherwise(pl.sum_horizontal(vals))
    if len(funcs) > 1:
        notes.append(f"score = plain sum of the reward functions {funcs}: TRL weights them by reward_weights, "
                     "which the completions file does not record; equal unit weights were assumed")
    return df.with_columns(total.alias("_score")), "_score"


def read(paths: list[Path], *, group_size: int | None, split: str | None, what: str) -> RolloutSet:
    skips, notes = SkipLog(), list[str]()
    frames = _read_files(paths, skips)
    counts = Counter(f.height for _, f in frames)
    if len(counts) > 1:
        usual = counts.most_common(1)[0][0]
        odd = [str(p) for p, f in frames if f.height != usual]
        notes.append(f"{len(odd)} file(s) have a row count other than {usual} (e.g. {odd[0]}): at a step that also "
                     "evaluates, TRL overwrites the train completions with the eval ones")
    df = pl.concat([f for _, f in frames], how="diagonal_relaxed") if frames else pl.DataFrame()
    if df.height:
        df = chat_columns(df, "prompt", "completion", notes)
        key = "prompt_messages" if "prompt_messages" in df.columns else "prompt"
        df = df.with_columns(pl.col(key).alias(KEY)) if key in df.columns else df
    df, score = _score(df, notes) if df.height else (df, None)
    fields = {"step": "step", "prompt": "prompt", "response": "completion", "advantage": "advantage",
              "score": score}
    cmap = ColumnMap(**{k: v for k, v in fields.items() if v is not None and v in df.columns})
    df = apply_map(df, cmap, what, skips, notes)
    table = finish(df, grouping="text", group_size=group_size, split=split, notes=notes, what=what)
    return RolloutSet(table, skips, FORMAT, [str(p) for p in paths], notes)
