"""Read rollouts (sampled responses with their rewards) into the rollout table.

:func:`read_rollouts` recognises, in this order:

* a veRL generation dump: a folder of ``<step>.jsonl`` files (``rollout_data_dir`` /
  ``validation_data_dir``), or one such file, or a ``.jsonl`` whose first object has
  ``input`` and ``output`` keys (see :mod:`._verl`);
* TRL completions: a folder of ``completions_<step>.parquet`` files (or a TRL
  ``output_dir`` holding a ``completions/`` folder), one such file, or a Parquet file with
  ``prompt`` and ``completion`` columns (see :mod:`._trl`);
* a generic JSONL / Parquet / CSV file, whose columns are named by a :class:`ColumnMap`, or
  already carry the table's names (``prompt``, ``response``, ``score`` ...).

A ``columns`` map overrides single fields of a recognised veRL or TRL reader (``correct="my_acc"``
names a reward function's own key in a veRL dump, or a reward column of TRL completions); only a
file (or the JSONL/Parquet/CSV files of a folder) that is neither is read as a generic table
with that map. Without a group column, rollouts with the same prompt in a step
form a group; without a sample column, samples are numbered in file order within the group;
without a step column, everything is at step 0. Bad lines or rows are skipped and counted in
``RolloutSet.skips`` with ``file:line`` (``file#row`` for Parquet); they never stop the read.

>>> rs = rollouts_from_records([{"prompt": "1+1?", "response": "2", "score": 1.0}])
>>> rs.table.select("step", "group", "sample", "correct").row(0)
(0, '0', 0, True)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

import numpy as np
import polars as pl

from ..errors import EmptyInputError, InputError, MissingInputError, UnknownFormatError
from ..ingest import holds_tables, refusal, special_kind
from ..ingest.record import SkipLog, SourceMeta
from ..ingest.text import json_objects
from ..words import Words
from . import _tables, _trl, _verl
from . import schema as S
from ._columns import WHERE, frame_from_rows
from ._core import (
    KEY,
    ColumnFlags,
    ColumnMap,
    Progress,
    RolloutSet,
    RolloutSource,
    ShardRead,
    apply_map,
    chat_columns,
    empty_error,
    files_told,
    finish,
)
from ._python import frame_from_columns, frame_from_scores, frame_from_structured, is_tensor, plain
from ._trl import RewardWeights, parse_reward_weights
from .probe_results import PROBES_FILE
from .tally import merged

__all__ = ["ColumnFlags", "ColumnMap", "Located", "Progress", "RewardWeights", "RolloutSet", "RolloutSource",
           "ShardRead", "dump_files", "locate", "parse_reward_weights", "read_located", "read_rollouts",
           "rollouts_from_frame", "rollouts_from_python", "rollouts_from_records", "rollouts_from_scores"]

_JSONL = {".jsonl", ".ndjson", ".json"}
_TABLES = _JSONL | {".parquet", ".csv"}


def read_rollouts(path: str | Path, *, columns: ColumnMap | None = None, group_size: int | None = None,
                  split: str | None = None, reward_weights: RewardWeights | None = None,
                  progress: Progress | None = None) -> RolloutSet:
    """Read a rollout file or folder into a :class:`RolloutSet`.

    ``group_size`` (GRPO's G, veRL's ``rollout.n``) is checked against every group, and a
    mismatch is noted; ``split`` (``"train"``, ``"val"`` ...) fills the split column.
    ``reward_weights`` (TRL completions only: a mapping reward function → weight, or a list in
    column order, as given to TRL's ``GRPOConfig.reward_weights``) makes the score the weighted
    sum TRL trained on; without it the reward functions are summed with unit weights.
    ``progress`` is told ``("reading", files read, files in all)`` as the files are read.

    >>> rs = read_rollouts("rollouts/")            # doctest: +SKIP
    >>> rs.format, rs.table.height, rs.skips.count  # doctest: +SKIP
    ('verl-dump', 2560, 0)
    """
    if group_size is not None and group_size < 1:
        raise InputError(Words(f"group_size={group_size} must be a positive number of samples per prompt",
                               f"group_size={group_size} 应为每个 prompt 的采样数，必须是正数"))
    found = locate(path, columns, reward_weights)
    return read_located(found, found.files, columns=columns, group_size=group_size, split=split,
                        reward_weights=reward_weights, progress=progress)


@dataclass(frozen=True)
class Located:
    """What :func:`read_rollouts` found at ``what``: the reader (``kind``) and its files, in read order."""

    kind: Literal["verl", "trl", "tables", "generic"]
    files: tuple[Path, ...]
    what: str


def locate(path: str | Path, columns: ColumnMap | None = None,
           reward_weights: RewardWeights | None = None) -> Located:
    """Which reader reads ``path`` and which files, without reading them (see the module docstring)."""
    p = Path(path)
    if not p.exists() and holds_tables(p):  # <db>#<run>: one run of a Trackio database
        return Located("tables", (p,), str(p))
    if not p.exists():
        raise MissingInputError(Words(f"{p}: no such file or folder; give the path of a rollout dump",
                                      f"{p}：没有这个文件或文件夹；请给出 rollout 文件或文件夹的路径"))
    special = special_kind(p)
    if special is not None:  # a FIFO would wait for a writer forever, a device never end
        raise UnknownFormatError(*refusal(p, special).args)
    found = _located_folder(p, columns) if p.is_dir() else _located_file(p)
    if reward_weights is not None and found.kind != "trl":
        _weighted(found, p)
    return found


def read_located(found: Located, files: Sequence[Path], *, columns: ColumnMap | None = None,
                 group_size: int | None = None, split: str | None = None,
                 reward_weights: RewardWeights | None = None, progress: Progress | None = None,
                 shard: ShardRead | None = None) -> RolloutSet:
    """``files`` (all of ``found.files``, or one shard of them) read by ``found``'s reader."""
    kw: dict[str, Any] = {"group_size": group_size, "split": split, "what": found.what}
    if found.kind == "verl":
        return _verl.read(list(files), **kw, columns=columns, progress=progress, shard=shard)
    if found.kind == "trl":
        return _trl.read(list(files), **kw, reward_weights=reward_weights, columns=columns, progress=progress,
                         shard=shard)
    if found.kind == "tables":
        return _logged(files[0], columns, kw, reward_weights, shard)
    return _generic(list(files), columns, {**kw, "shard": shard} if shard is not None else kw, progress)


def _located_file(p: Path) -> Located:
    # a column map overrides fields of the veRL / TRL readers; it does not turn them off
    if _verl.file_step(p) is not None or (p.suffix in _JSONL and _verl.looks_like_dump(p)):
        return Located("verl", (p,), str(p))
    if _trl.file_step(p) is not None or (p.suffix == ".parquet" and _is_trl_parquet(p)):
        return Located("trl", (p,), str(p))
    if p.suffix in _TABLES:
        return Located("generic", (p,), str(p))
    if holds_tables(p):
        return Located("tables", (p,), str(p))
    raise UnknownFormatError(Words(f"{p}: not a rollout file rlvitals knows (a veRL <step>.jsonl dump, TRL "
                                   "completions_<step>.parquet, or JSONL/Parquet/CSV with a column map)",
                                   f"{p}：不是 rlvitals 认识的 rollout 文件（应为 veRL 的 <step>.jsonl、TRL 的 "
                                   "completions_<step>.parquet，或带列映射的 JSONL/Parquet/CSV）"))


def dump_files(paths: Iterable[Path]) -> list[Path]:
    """The rollout dumps among ``paths`` (the files of one folder), as :func:`read_rollouts` reads
    that folder: veRL's ``<step>.jsonl`` when the first of them holds veRL's ``input``/``output``
    keys, and TRL's ``completions_<step>.parquet``; by step, veRL's before TRL's. A file's name and
    the first veRL dump's head are all that is looked at, so a folder of thousands of dumps costs one
    read; a metrics log named ``3.jsonl`` is not taken for a dump.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp()); _ = (d / "train.log").write_text("step:1 - x:1")
    >>> _ = (d / "2.jsonl").write_text('{"input": "q", "output": "a", "score": 1.0}')
    >>> [p.name for p in dump_files(sorted(d.iterdir()))]
    ['2.jsonl']
    """
    files = [f for f in paths if f.is_file()]  # never a FIFO named 1.jsonl: opened, it would wait forever
    verl = sorted((f for f in files if _verl.file_step(f) is not None), key=lambda f: _verl.file_step(f) or 0)
    verl = verl if verl and _verl_dump(verl[0]) else []
    trl = sorted((f for f in files if _trl.file_step(f) is not None), key=lambda f: _trl.file_step(f) or 0)
    return verl + trl


def _verl_dump(p: Path) -> bool:
    """A veRL dump by its head: veRL writes ``input`` first, so a prompt longer than the sniffed head
    still shows; an empty file (being written) is not told yet."""
    try:
        with p.open("rb") as fh:
            head = fh.read(64)
        return head.lstrip().startswith(b'{"input":') or _verl.looks_like_dump(p)
    except OSError:
        return False  # unreadable now; looked at again at the next scan


def _is_trl_parquet(p: Path) -> bool:
    try:
        names = pl.read_parquet_schema(p)
    except (Exception, pl.exceptions.PanicException):  # a damaged file is not ours to recognise
        return False
    return "prompt" in names and "completion" in names


def _weighted(found: Located, p: Path) -> None:
    """Reward weights only mean something for TRL completions: the error for any other input (a tracker's
    tables are told when read)."""
    if found.kind != "tables":
        raise _weights_error(p, _verl.FORMAT if found.kind == "verl" else _generic_format(found.files))


def _weights_error(p: Path, fmt: str) -> InputError:
    return InputError(Words(f"{p}: reward_weights apply to TRL completions (one column per reward function), but "
                           f"this was read as {fmt!r}; drop reward_weights, or map the total reward column "
                           "as the score",
                           f"{p}：reward_weights 只适用于 TRL 的 completions_<step>.parquet（每个 reward 函数"
                           f"一列），而这里是按 {fmt!r} 读取的；请去掉 reward_weights，或把总 reward 列映射"
                           "为分数"))


def _located_folder(p: Path, columns: ColumnMap | None) -> Located:
    files = sorted(f for f in p.iterdir() if f.is_file() and not f.name.startswith("."))
    verl = sorted((f for f in files if _verl.file_step(f) is not None), key=lambda f: _verl.file_step(f) or 0)
    if verl:
        return Located("verl", tuple(verl), str(p))
    sub = p / "completions"
    pool = files + (sorted(sub.iterdir()) if sub.is_dir() else [])
    trl = sorted((f for f in pool if _trl.file_step(f) is not None), key=lambda f: _trl.file_step(f) or 0)
    if trl:
        return Located("trl", tuple(trl), str(p))
    tables = [f for f in files if f.suffix in _TABLES and f.name != PROBES_FILE]  # our own results, not rollouts
    if columns is not None and tables:
        return Located("generic", tuple(tables), str(p))
    if holds_tables(p):
        return Located("tables", (p,), str(p))
    raise _empty_or_unknown(p, columns is not None)


def _entries(folder: Path, limit: int = 6) -> Words:
    names = sorted(e.name + ("/" if e.is_dir() else "") for e in folder.iterdir() if not e.name.startswith("."))
    more = len(names) > limit
    return Words(", ".join(names[:limit]) + (f" … ({len(names)} in all)" if more else ""),
                 "、".join(names[:limit]) + (f" …（共 {len(names)} 个）" if more else ""))


def _empty_or_unknown(p: Path, mapped: bool) -> Exception:
    """The error for a folder with no rollout files: what it holds, and what was looked for."""
    if not any(not e.name.startswith(".") for e in p.iterdir()):
        return EmptyInputError(Words(f"{p}: the folder is empty; point at a folder of rollout dumps",
                                     f"{p}：文件夹是空的；请指向存放 rollout 文件的文件夹"))
    sub = p / "completions"
    held = _entries(sub) if sub.is_dir() else None
    if held is None:
        inside = Words("", "")
    elif held:
        inside = Words(f"; its completions/ folder holds {held}", f"；其中的 completions/ 文件夹里有 {held.zh}")
    else:
        inside = Words("; its completions/ folder holds nothing", "；其中的 completions/ 文件夹是空的")
    if mapped:
        generic = Words("JSONL/Parquet/CSV files (read with the column options)",
                        "JSONL/Parquet/CSV 文件（按列选项读取）")
    else:
        generic = Words("JSONL/Parquet/CSV files with a column map (--score/--group …)",
                        "带列映射（--score/--group …）的 JSONL/Parquet/CSV 文件")
    entries = _entries(p)
    return UnknownFormatError(Words(
        f"{p}: no rollout files found: the folder holds {entries}{inside}; expected veRL <step>.jsonl files, TRL "
        f"completions_<step>.parquet (here or in completions/), or {generic}",
        f"{p}：没有找到 rollout 文件：文件夹里有 {entries.zh}{inside.zh}；应为 veRL 的 <step>.jsonl 文件、TRL 的 "
        f"completions_<step>.parquet（在这里或在 completions/ 中），或{generic.zh}"))


# --- generic tables --------------------------------------------------------------------------

def _read_jsonl(path: Path, skips: SkipLog) -> pl.DataFrame:
    rows: list[dict[str, Any]] = []
    for lineno, _, obj in json_objects(path, SourceMeta(format="jsonl"), skips):
        obj[WHERE] = f"{path}:{lineno}"
        rows.append(obj)
    return frame_from_rows(rows)


def _read_table(path: Path, skips: SkipLog, rows: tuple[int, int] | None = None) -> pl.DataFrame:
    """A generic table's raw frame, with each row's place (``file:line``, ``file#row``); ``rows`` reads a
    slice ``(offset, length)`` of a Parquet file only (its rows keep their numbers in the whole file)."""
    if path.suffix in _JSONL:
        return _read_jsonl(path, skips)
    try:
        if path.suffix == ".csv":
            df = pl.read_csv(path, infer_schema=False, encoding="utf8-lossy")
            return df.with_columns(pl.format("{}:{}", pl.lit(str(path)), pl.int_range(2, pl.len() + 2)).alias(WHERE))
        if path.suffix == ".parquet":
            first = 1 if rows is None else rows[0] + 1
            df = pl.read_parquet(path) if rows is None else pl.scan_parquet(path).slice(*rows).collect()
            return df.with_columns(pl.format("{}#{}", pl.lit(str(path)),
                                             pl.int_range(first, pl.len() + first)).alias(WHERE))
    except (Exception, pl.exceptions.PanicException) as exc:  # polars raises several types, or panics
        kind, why = path.suffix[1:].upper(), f"{type(exc).__name__}: {exc}"
        raise InputError(Words(f"{path}: cannot be read as {kind} ({why}); check the file",
                               f"{path}：无法按 {kind} 读取（{why}）；请检查这个文件")) from exc
    raise UnknownFormatError(Words(f"{path}: suffix {path.suffix!r} is not .jsonl, .parquet or .csv; "
                                   "convert the file or read it yourself and use rollouts_from_frame",
                                   f"{path}：后缀 {path.suffix!r} 不是 .jsonl、.parquet 或 .csv；请转换文件，"
                                   "或自己读取后用 rollouts_from_frame"))


def _identity_map(df: pl.DataFrame, what: str, given: ColumnMap | None = None) -> ColumnMap:
    """The columns named as rollout-table columns, with ``given`` overriding any of them: a map that names
    only the score column still reads a table's own ``step`` and ``prompt`` columns. A column a given
    field already reads is not also read under its own name."""
    names = {f.name for f in fields(ColumnMap)}
    chosen = {k: v for k, v in (given.mapping() if given is not None else {}).items()}
    used = set(chosen.values())
    found = {c: c for c in df.columns if c in names and c not in chosen and c not in used}
    merged = {**found, **chosen}
    if given is None and S.RESPONSE not in merged and S.SCORE not in merged:
        shown = [c for c in df.columns if not c.startswith("_")][:12]
        raise UnknownFormatError(Words(f"{what}: columns {shown} name no rollout response or score; name them "
                                       "with --response COLUMN and --score COLUMN (and --group COLUMN for the prompt "
                                       "group)",
                                       f"{what}：列 {shown} 中没有 rollout 的回答或分数；请用 --response COLUMN 和 "
                                       "--score COLUMN 指出（prompt 分组用 --group COLUMN）"))
    # the given map's kind is kept: command-line column options name the option in their errors
    return type(given)(**merged) if given is not None else ColumnMap(**merged)


def _from_table(df: pl.DataFrame, columns: ColumnMap | None, skips: SkipLog, notes: list[str],
                kw: dict[str, Any], fmt: str, files: list[str]) -> RolloutSet:
    if df.height == 0:
        if kw.get("shard") is not None:
            return RolloutSet(finish(df, grouping="text", notes=notes, skips=skips, **kw), skips, fmt, files,
                              merged([notes]), notes)
        raise empty_error(kw["what"], skips)
    cmap = _identity_map(df, kw["what"], columns)
    df = chat_columns(df, cmap.prompt, cmap.response, notes)
    if cmap.group is None and cmap.prompt is not None:
        key = "prompt_messages" if "prompt_messages" in df.columns else cmap.prompt
        if key in df.columns:  # an absent column is apply_map's to report; by name, not as a pattern ('^q$')
            df = df.with_columns(df.get_column(key).alias(KEY))
    df = apply_map(df, cmap, kw["what"], skips, notes)
    table = finish(df, grouping="text", notes=notes, skips=skips, **kw)
    return RolloutSet(table, skips, fmt, files, merged([notes]), notes)


def _generic(paths: list[Path], columns: ColumnMap | None, kw: dict[str, Any],
             progress: Progress | None = None) -> RolloutSet:
    skips, notes = SkipLog(), list[str]()
    shard = kw.get("shard")
    rows = shard.rows if isinstance(shard, ShardRead) else None
    frames = [_read_table(p, skips, rows) for p in files_told(paths, progress)]
    df = pl.concat([f for f in frames if f.width], how="diagonal_relaxed") if any(f.width for f in frames) \
        else pl.DataFrame()
    return _from_table(df, columns, skips, notes, kw, _generic_format(paths), [str(p) for p in paths])


def _logged(path: Path, columns: ColumnMap | None, kw: dict[str, Any], reward_weights: RewardWeights | None,
            shard: ShardRead | None) -> RolloutSet:
    """The rollouts a tracker run logged as tables (:mod:`._tables`); veRL's generations are ``val`` samples,
    OpenRLHF's ``train`` samples."""
    skips, notes = SkipLog(), list[str]()
    kind, frames, fmt = _tables.read(path, skips, notes)
    if kind == "trl":
        return _trl.from_frames(frames, **kw, reward_weights=reward_weights, columns=columns, shard=shard,
                                skips=skips, files=[str(path)], fmt=fmt, notes=notes)
    if reward_weights is not None:
        raise _weights_error(path, fmt)
    split = "train" if kind in ("openrlhf", "openrlhf-text") else "val"  # OpenRLHF's PPO samples are training samples
    kw = {**kw, "split": kw.get("split") or split} | ({"shard": shard} if shard is not None else {})
    return _from_table(frames[0][1], columns, skips, notes, kw, fmt, [str(path)])


def _generic_format(paths: Sequence[Path]) -> str:
    return paths[0].suffix[1:] if len({p.suffix for p in paths}) == 1 else "mixed"


# --- Python objects --------------------------------------------------------------------------

def rollouts_from_records(records: Iterable[Mapping[str, Any]], *, columns: ColumnMap | None = None,
                          group_size: int | None = None, split: str | None = None) -> RolloutSet:
    """Rollouts from Python dicts (one per sampled response), a list or any iterable (a generator);
    NumPy scalars and arrays and torch tensors among the values are read as Python numbers and lists.
    A record that is not a mapping is skipped as ``record <i>``.

    >>> rollouts_from_records([{"q": "1+1?", "a": "2", "r": 0.0}],
    ...     columns=ColumnMap(prompt="q", response="a", score="r")).table["correct"].to_list()
    [False]
    """
    skips, rows = SkipLog(), []
    for i, rec in enumerate(records):
        if not isinstance(rec, Mapping):
            kind = type(rec).__name__
            skips.skip(f"record {i}", Words(f"expected a dict, got {kind}; the record was skipped",
                                            f"应为 dict，读到的是 {kind}；这条记录已跳过"))
            continue
        rows.append({**plain(rec), WHERE: f"record {i}"})
    kw = {"group_size": group_size, "split": split, "what": "records"}
    return _from_table(frame_from_rows(rows), columns, skips, [], kw, "records", [])


def rollouts_from_frame(frame: Any, *, columns: ColumnMap | None = None, group_size: int | None = None,
                        split: str | None = None) -> RolloutSet:
    """Rollouts from a polars DataFrame or LazyFrame (collected), a pandas DataFrame, a NumPy
    structured array (its fields are the columns), or a dict of equal-length columns (lists, NumPy
    arrays, tensors). Rows are named ``row <i>`` in skip reasons.

    >>> rollouts_from_frame({"prompt": ["a", "a"], "score": [1.0, 0.0]}).table["group"].to_list()
    ['0', '0']
    """
    if isinstance(frame, pl.LazyFrame):
        frame = frame.collect()
    if isinstance(frame, pl.DataFrame):
        df = frame
    elif isinstance(frame, Mapping):
        df = frame_from_columns(frame)
    elif isinstance(frame, np.ndarray) and frame.dtype.names:
        df = frame_from_structured(frame)
    elif type(frame).__module__.split(".")[0] == "pandas":
        df = pl.from_pandas(frame)  # polars imports pandas only here, when given a pandas frame
    else:
        kind = type(frame).__name__
        raise InputError(Words(f"rollouts_from_frame: got {kind}; expected a polars or pandas "
                               "DataFrame, a NumPy structured array or a dict of columns",
                               f"rollouts_from_frame：收到的是 {kind}；应为 polars 或 pandas 的 DataFrame、"
                               "NumPy 结构化数组，或由各列组成的 dict"))
    df = df.with_columns(pl.format("row {}", pl.int_range(pl.len())).alias(WHERE))
    kw = {"group_size": group_size, "split": split, "what": "frame"}
    return _from_table(df, columns, SkipLog(), [], kw, "frame", [])


def rollouts_from_scores(scores: Any, *, group_size: int | None = None, split: str | None = None) -> RolloutSet:
    """Rollouts from a bare array (NumPy, or a torch tensor) of shape (groups, samples) — one step,
    a row per prompt group, a column per sample — or (steps, groups, samples), the step being the
    index along the first axis. Numbers are scores, booleans correctness; NaN marks a missing sample
    (pad ragged groups with NaN). Entries are named ``array[step, group, sample]`` in skip reasons.

    >>> rs = rollouts_from_scores(np.array([[1.0, 0.0, 0.0], [1.0, 1.0, np.nan]]))
    >>> rs.table.group_by("group", maintain_order=True).len().rows()
    [('0', 3), ('1', 2)]
    """
    df, col = frame_from_scores(scores)
    cmap = ColumnMap(step=S.STEP, group=S.GROUP, sample=S.SAMPLE, **{col: col})
    kw = {"group_size": group_size, "split": split, "what": "array of scores"}
    return _from_table(df, cmap, SkipLog(), [], kw, "array", [])


def rollouts_from_python(source: Any, *, columns: ColumnMap | None = None, group_size: int | None = None,
                         split: str | None = None) -> RolloutSet:
    """Rollouts from any Python object :func:`analyze_rollouts` takes: a polars/pandas frame or
    LazyFrame, a dict of columns, a NumPy structured array, a numeric or boolean array or tensor of
    scores (:func:`rollouts_from_scores`), or an iterable of dicts (list, tuple, generator).

    >>> rollouts_from_python(iter([{"prompt": "p", "score": 1.0}])).table.height
    1
    """
    if isinstance(source, (str, bytes)):
        kind, head = type(source).__name__, repr(source[:60])
        raise InputError(Words(f"got the {kind} {head}; give a path as pathlib.Path or read it "
                               "with read_rollouts, or give records or a frame",
                               f"收到的是 {kind} {head}；路径请以 pathlib.Path 给出，或用 read_rollouts 读取；"
                               "也可以给出记录或数据帧"))
    structured = isinstance(source, np.ndarray) and source.dtype.names is not None
    if isinstance(source, (pl.DataFrame, pl.LazyFrame, Mapping)) or structured \
            or type(source).__module__.split(".")[0] == "pandas":
        return rollouts_from_frame(source, columns=columns, group_size=group_size, split=split)
    if (isinstance(source, np.ndarray) and source.dtype != object) or is_tensor(source):
        if columns is not None:
            raise InputError(Words("a column map names the columns of records or frames; an array of scores has none "
                                   "(rows are groups, columns samples): drop columns=",
                                   "列映射指定的是记录或数据帧的列；分数数组没有列（行是组，列是样本）："
                                   "请去掉 columns="))
        return rollouts_from_scores(source, group_size=group_size, split=split)
    if isinstance(source, Iterable):
        return rollouts_from_records(source, columns=columns, group_size=group_size, split=split)
    kind = type(source).__name__
    raise InputError(Words(f"got {kind}; expected a path, records (dicts), a polars or pandas "
                           "DataFrame, a dict of columns, or a NumPy array of scores",
                           f"收到的是 {kind}；应为路径、记录（dict）、polars 或 pandas 的 DataFrame、"
                           "由各列组成的 dict，或 NumPy 分数数组"))
