"""Shared machinery of the rollout readers: the column map, the result, and the steps every
reader ends with (mapping and typing the columns with :mod:`._columns`, dropping bad rows,
grouping, numbering samples).

Every reader first builds a polars frame of raw columns plus ``_where`` (``file:line`` of the
row, for skip reasons) and ``_key`` (the grouping key, normally the prompt text), then calls
:func:`finish`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Literal, Protocol, TypeAlias

import numpy as np
import polars as pl

from ..errors import EmptyInputError, InputError
from ..ingest.record import SkipLog
from ..words import Words, in_lang
from . import schema as S
from . import tally
from ._columns import WHERE, json_text, to_bool, to_list, to_number, to_text
from .answers import default_answer
from .tally import correct_tally

KEY = "_key"
Grouping = Literal["text", "consecutive"]
#: how far a long read or analysis got, as plain data: ``(phase, done, total)``; ``total`` is None when it
#: is not known. The readers tell ``("reading", files read, files in all)``.
Progress: TypeAlias = Callable[[str, int, int | None], None]


def files_told(paths: Sequence[Path], progress: Progress | None) -> Iterator[Path]:
    """``paths`` one by one, telling ``progress`` ``("reading", files read, of how many)`` before each
    file and once more after the last.

    >>> seen = []
    >>> [p.name for p in files_told([Path("1.jsonl"), Path("2.jsonl")], lambda *a: seen.append(a))], seen
    (['1.jsonl', '2.jsonl'], [('reading', 0, 2), ('reading', 1, 2), ('reading', 2, 2)])
    """
    for done, path in enumerate(paths):
        if progress is not None:
            progress("reading", done, len(paths))
        yield path
    if progress is not None:
        progress("reading", len(paths), len(paths))


@dataclass(frozen=True)
class ColumnMap:
    """Which source column holds each rollout-table column (None: the source has none).

    >>> ColumnMap(prompt="question", response="completion", score="reward").mapping()
    {'prompt': 'question', 'response': 'completion', 'score': 'reward'}
    """

    step: str | None = None
    group: str | None = None
    sample: str | None = None
    prompt: str | None = None
    response: str | None = None
    score: str | None = None
    correct: str | None = None
    answer: str | None = None
    target: str | None = None
    source: str | None = None
    split: str | None = None
    length: str | None = None
    truncated: str | None = None
    advantage: str | None = None
    tool_calls: str | None = None
    actions: str | None = None
    states: str | None = None
    token_entropy: str | None = None
    token_logprob: str | None = None
    token_advantage: str | None = None
    token_old_logprob: str | None = None
    token_rollout_logprob: str | None = None
    tokens: str | None = None

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None and (not isinstance(value, str) or not value):
                raise InputError(Words(f"column map: {f.name}={value!r} is not a column name; "
                                       "give the source column's name as a non-empty string or None",
                                       f"列映射：{f.name}={value!r} 不是列名；请以非空字符串给出源数据的列名，"
                                       "或设为 None"))

    def mapping(self) -> dict[str, str]:
        """``{table column: source column}`` for the columns that are set."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}

    def missing(self, absent: Sequence[str], where: str, columns: Sequence[str]) -> InputError:
        """The error for mapped source columns (``absent``) that the data at ``where`` lacks."""
        return InputError(Words(f"{where}: column(s) {sorted(absent)} named in the column map are not in the data; "
                                f"its columns are {list(columns)}; fix the column names",
                                f"{where}：列映射中的列 {sorted(absent)} 不在数据里；数据的列是 {list(columns)}；"
                                "请改正列名"))


@dataclass(frozen=True)
class ColumnFlags(ColumnMap):
    """A column map given as the command line's column options (``rlvitals rollouts --correct acc``):
    the same map, with errors that name the option the user typed.

    >>> str(ColumnFlags(correct="acc").missing(["acc"], "dump/", ["input", "score"]))
    "--correct acc: no column 'acc' in dump/; its columns are ['input', 'score']; fix the column name"
    """

    def missing(self, absent: Sequence[str], where: str, columns: Sequence[str]) -> InputError:
        given = [(k, v) for k, v in self.mapping().items() if v in absent]
        flags = ", ".join(f"--{k} {v}" for k, v in given)
        distinct = list(dict.fromkeys(v for _, v in given))  # --score r --correct r: one column lacking
        names, plural = " and ".join(repr(v) for v in distinct), "s" if len(distinct) > 1 else ""
        return InputError(Words(f"{flags}: no column{plural} {names} in {where}; its columns are {list(columns)}; "
                                f"fix the column name{plural}",
                                f"{flags}：{where} 中没有列 {'、'.join(repr(v) for v in distinct)}；"
                                f"它的列是 {list(columns)}；请改正列名"))


@dataclass
class RolloutSet:
    """What a rollout reader returns: the table (conformed to :mod:`rlvitals.rollout.schema`),
    the rows it skipped, the format it recognised, the files it read, and notes about choices
    it made (how groups were formed, where correctness came from ...)."""

    table: pl.DataFrame
    skips: SkipLog
    format: str
    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: the notes as the reader made them, tallies that say nothing included: what a shard's notes are
    #: merged from with other shards' (:func:`.tally.merged`)
    said: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ShardRead:
    """A reader is reading one shard of a larger input: an empty shard is no error (the whole input is
    judged empty or not), ``binary`` (when not None) is the whole input's answer to whether its
    scores are a 0/1 reward (:func:`correct_from_score`), and ``rows`` a slice of a Parquet table."""

    binary: bool | None = None
    #: rows ``(offset, length)`` of a Parquet table, for a shard that is a slice of one large file
    rows: tuple[int, int] | None = None


class ArrayLike(Protocol):
    """Anything NumPy can turn into an array: a pandas DataFrame, a torch tensor, a NumPy array."""

    def __array__(self) -> np.ndarray: ...


#: what :func:`rlvitals.analyze_rollouts` reads: a path, a RolloutSet, a frame (polars, pandas), a dict of
#: columns, records (dicts, one per rollout), or an array or tensor of scores
RolloutSource: TypeAlias = (str | os.PathLike[str] | RolloutSet | pl.DataFrame | pl.LazyFrame | ArrayLike
                             | Mapping[str, object] | Iterable[Mapping[str, object]])


def override(fields: dict[str, str], columns: ColumnMap | None, fmt: str, notes: list[str]) -> ColumnMap:
    """A reader's own field mapping (of columns the data has) with the fields of ``columns`` put
    over it, as a map of the same kind as ``columns`` (so that an absent column given as a command-line
    option is reported as that option), and a note naming what changed (the veRL and TRL readers take
    a column map as overrides, not as a replacement).

    >>> notes = []
    >>> override({"score": "score", "correct": "acc"}, ColumnMap(correct="my_acc"), "verl-dump", notes).mapping()
    {'score': 'score', 'correct': 'my_acc'}
    >>> notes
    ["column options override the verl-dump fields: correct = 'my_acc' (was 'acc')"]
    """
    given = columns.mapping() if columns is not None else {}
    if columns is None or not given:
        return ColumnMap(**fields)
    was = {k: fields[k] for k, v in given.items() if fields.get(k) not in (None, v)}
    said = [f"{k} = {v!r}" + (f" (was {was[k]!r})" if k in was else "") for k, v in given.items()]
    said_zh = [f"{k} = {v!r}" + (f"（原为 {was[k]!r}）" if k in was else "") for k, v in given.items()]
    notes.append(Words(f"column options override the {fmt} fields: {', '.join(said)}",
                       f"列选项覆盖了 {fmt} 的字段：{'，'.join(said_zh)}"))
    return type(columns)(**{**fields, **given})


# --- chat messages ---------------------------------------------------------------------------

def chat_text(value: object, *, last_user: bool) -> str | None:
    """A prompt or completion that may be a list of chat messages, as text.

    With ``last_user`` the content of the last ``user`` message is the prompt text (the
    question, without system prompt or few-shot turns); otherwise message contents are joined
    with newlines. Plain strings pass through."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return json_text(value)
    msgs = [m for m in value if isinstance(m, dict)]
    if last_user:
        users = [m for m in msgs if m.get("role") == "user"]
        if users:
            return json_text(users[-1].get("content"))
    return "\n".join(json_text(m.get("content")) for m in msgs if m.get("content") is not None)


def chat_columns(df: pl.DataFrame, prompt: str | None, response: str | None,
                 notes: list[str]) -> pl.DataFrame:
    """Turn chat-list prompt/response columns into text; the full prompt chat is kept as JSON
    in ``prompt_messages`` and is what groups are formed by."""
    out = df
    if prompt is not None and prompt in df.columns and isinstance(df.schema[prompt], (pl.List, pl.Struct)):
        chats = df[prompt].to_list()
        out = out.with_columns(
            pl.Series(prompt, [chat_text(c, last_user=True) for c in chats], dtype=pl.Utf8),
            pl.Series("prompt_messages", [None if c is None else json_text(c) for c in chats], dtype=pl.Utf8),
        )
        notes.append(Words("prompts are chat message lists: the prompt text is the last user message; "
                           "groups are formed by the whole conversation, kept as JSON in 'prompt_messages'",
                           "prompt 是聊天消息列表：prompt 文本取最后一条用户消息；分组按整段对话进行，"
                           "对话以 JSON 保存在 'prompt_messages' 中"))
    if response is not None and response in df.columns and isinstance(df.schema[response], (pl.List, pl.Struct)):
        out = out.with_columns(pl.Series(response, [chat_text(c, last_user=False) for c in df[response].to_list()],
                                         dtype=pl.Utf8))
        notes.append(Words("responses are chat message lists: their contents are joined with newlines",
                           "回复是聊天消息列表：各条消息的内容用换行拼接"))
    return out


def apply_map(df: pl.DataFrame, cmap: ColumnMap, where: str, skips: SkipLog, notes: list[str]) -> pl.DataFrame:
    """Rename mapped source columns to table names and type them; rows whose score or step is
    not a number are skipped. Unmapped source columns are kept (renamed ``raw_<name>`` when
    they would shadow a table column)."""
    mapping = cmap.mapping()
    absent = sorted({src for src in mapping.values() if src not in df.columns})
    if absent:
        raise cmap.missing(absent, where, [c for c in df.columns if not c.startswith("_")])
    used = set(mapping.values())
    extras = [c for c in df.columns if c not in used and c not in (WHERE, KEY)]
    # columns are taken by name as Series: pl.col reads a name like '^x$' as a pattern
    sel = [df.get_column(src).alias(dst) for dst, src in mapping.items()]
    sel += [df.get_column(c).alias(f"raw_{c}" if c in S.schema() else c) for c in extras]
    sel += [df.get_column(c) for c in (WHERE, KEY) if c in df.columns]
    out = pl.DataFrame(sel, height=df.height)
    for col in (S.STEP, S.SCORE):
        if col in out.columns:
            out = to_number(out, col, pl.Int64() if col == S.STEP else pl.Float64(), skips)
    for col, dtype in S.schema().items():
        if col not in out.columns or col in (S.STEP, S.SCORE):
            continue
        if isinstance(dtype, pl.List):
            out = to_list(out, col, dtype, skips, where, mapping[col])
        elif dtype == pl.Boolean:
            out = to_bool(out, col, notes)
        elif dtype == pl.Utf8:
            out = to_text(out, col)
        elif dtype in (pl.Int64, pl.Float64):
            out = to_number(out, col, dtype, None, notes)
    return out


def correct_from_score(df: pl.DataFrame, notes: list[str], binary: bool | None = None) -> pl.DataFrame:
    """Correctness where the source gives none: ``score >= 1.0`` if every score lies in [-1, 1]
    (a 0/1 or ±1 outcome reward, possibly with partial format credit) — for the whole table when it
    has no correctness column, else for the rows whose correctness is missing. Otherwise no value
    is made (the group family then counts a rollout correct when ``score >= 1.0`` if there is no
    column at all, and leaves a missing value out) and a note says so.

    ``binary`` decides instead of this table's scores whether they are such a reward: a shard of a larger
    input is given the whole input's answer (:mod:`.shards`). The note is a tally of the scores' range
    and the rows without correctness, so that shards' notes add up to the note of the whole input."""
    if S.SCORE not in df.columns:
        return df
    scores = df[S.SCORE].drop_nulls().drop_nans()
    if scores.len() == 0:
        return df
    lo, hi = scores.min(), scores.max()
    assert isinstance(lo, float) and isinstance(hi, float)  # non-empty Float64
    has_column = S.CORRECT in df.columns
    gaps = int(df.select((pl.col(S.CORRECT).is_null() & pl.col(S.SCORE).is_not_null()
                          & pl.col(S.SCORE).is_not_nan()).sum()).item()) if has_column else 0
    notes.append(correct_tally((has_column, scores.len(), gaps, lo, hi)))
    if binary is None:
        binary = lo >= -1.0 and hi <= 1.0
    derived = pl.when(pl.col(S.SCORE).is_nan()).then(None).otherwise(pl.col(S.SCORE) >= 1.0)
    if not binary or (has_column and not gaps):
        return df
    return df.with_columns(pl.col(S.CORRECT).fill_null(derived) if has_column else derived.alias(S.CORRECT))


# --- groups and samples ----------------------------------------------------------------------

def _runs(df: pl.DataFrame) -> pl.Series:
    changed = (pl.col(KEY) != pl.col(KEY).shift(1)) | (pl.col(S.STEP) != pl.col(S.STEP).shift(1))
    return df.select(changed.fill_null(True).cum_sum().alias("_run"))["_run"]


def assign_groups(df: pl.DataFrame, grouping: Grouping, group_size: int | None, notes: list[str]) -> pl.DataFrame:
    """Group ids (``"0"``, ``"1"`` ... in order of first appearance within the step).

    ``text``: rows with the same key in a step form a group. ``consecutive``: a run of equal
    consecutive keys is a group (veRL training dumps); if a key comes back in a later run of
    the same step the dump is not run-ordered (validation dumps), so that step is grouped by
    text instead, unless every run has exactly ``group_size`` rows (a prompt drawn twice)."""
    n = df.height
    df = df.with_row_index("_row").with_columns(
        pl.when(pl.col(KEY).is_null()).then(pl.format("\x00row{}", pl.col("_row"))).otherwise(pl.col(KEY)).alias(KEY))
    if grouping == "consecutive" and n:
        df = df.with_columns(_runs(df).alias("_run"))
        per = df.group_by(S.STEP, KEY).agg(pl.col("_run").n_unique().alias("_nruns"), pl.len().alias("_n"))
        split_steps = per.filter(pl.col("_nruns") > 1)
        if group_size is not None:
            run_len = df.group_by("_run").agg(pl.len().alias("_len"), pl.col(S.STEP).first())
            odd_steps = run_len.filter(pl.col("_len") != group_size)[S.STEP].unique()
            split_steps = split_steps.filter(pl.col(S.STEP).is_in(odd_steps.implode()))
        text_steps = sorted(split_steps[S.STEP].unique().to_list())
        if text_steps:
            notes.append(tally.text_steps(text_steps))
        label = pl.when(pl.col(S.STEP).is_in(text_steps)).then(pl.col(KEY)).otherwise(pl.col("_run").cast(pl.Utf8))
        df = df.with_columns(label.alias("_gkey"))
    else:
        df = df.with_columns(pl.col(KEY).alias("_gkey"))
    first = pl.col("_row").min().over(S.STEP, "_gkey")
    df = df.with_columns(first.rank("dense").over(S.STEP).sub(1).cast(pl.Utf8).alias(S.GROUP))
    return df.drop("_row", "_gkey", "_run", strict=False)


def check_sizes(df: pl.DataFrame, group_size: int | None, notes: list[str]) -> None:
    """A tally of the group sizes: with ``group_size``, the groups of another size; without, the sizes seen."""
    sizes = df.group_by(S.STEP, S.GROUP).agg(pl.len().alias("_n"))
    if group_size is not None:
        bad = sizes.filter(pl.col("_n") != group_size).sort(S.STEP, S.GROUP)
        eg = tuple((int(s), str(g), int(k)) for s, g, k in bad.head(3).iter_rows())
        notes.append(tally.sizes_tally(group_size, (sizes.height, bad.height, eg)))
    else:
        notes.append(tally.sizes_tally(None, tuple(sorted(set(sizes["_n"].to_list())))))


def empty_error(what: str, skips: SkipLog, shown: int = 5) -> EmptyInputError:
    """The error for an input with no readable rollout; it lists the first skip reasons, since a
    caller that gets the error never sees the skip log.

    >>> log = SkipLog()
    >>> log.skip("3.jsonl:1", "invalid JSON; the line was skipped")
    >>> str(empty_error("3.jsonl", log))
    '3.jsonl: no rollout could be read: 1 line(s) or row(s) were skipped: 3.jsonl:1: invalid JSON; the line was skipped'
    """
    if skips.count == 0:
        return EmptyInputError(Words(f"{what}: no rollout could be read: the input holds no rows; "
                                     "point at a file or folder with rollouts",
                                     f"{what}：读不到任何 rollout：输入里没有数据行；"
                                     "请指向含有 rollout 的文件或文件夹"))
    listed = "; ".join(skips.reasons[:shown])
    listed_zh = "；".join(in_lang(r, "zh") for r in skips.reasons[:shown])
    more = skips.count - min(len(skips.reasons), shown)
    return EmptyInputError(Words(f"{what}: no rollout could be read: {skips.count} line(s) or row(s) were skipped: "
                                 f"{listed}" + (f" … and {more} more" if more else ""),
                                 f"{what}：读不到任何 rollout：跳过了 {skips.count} 行：{listed_zh}"
                                 + (f" … 另有 {more} 行" if more else "")))


#: a response that may state an answer the way veRL's default rewards read it (:func:`.answers.default_answer`):
#: the rest are not parsed, so that a large table of other text is read at the speed of one vectorised scan
_STATES_ANSWER = r"\\boxed|\\fbox|####"


def answers_from_responses(df: pl.DataFrame, notes: list[str]) -> pl.DataFrame:
    """An ``answer`` column read from the responses, where the source has none and some response states
    one as veRL's default rewards read it (the last ``\\boxed{}``, else ``#### N``): without it maj@k and
    self-consistency cannot be computed on a veRL dump whose reward returns a bare score. A response
    that states none has a null answer (a group where no response states one has no vote)."""
    if S.ANSWER in df.columns or S.RESPONSE not in df.columns or df.schema[S.RESPONSE] != pl.Utf8:
        return df
    texts = df.get_column(S.RESPONSE)
    may = texts.str.contains(_STATES_ANSWER).fill_null(False)
    if not may.any():
        return df
    found = [default_answer(t) if m else None for t, m in zip(texts.to_list(), may.to_list(), strict=True)]
    if all(a is None for a in found):
        return df
    notes.append(Words("the data has no answer column: each response's final answer is read from it as veRL's "
                       "default rewards read it (the last \\boxed{…}, else '#### N'), for maj@k and "
                       "self-consistency; give --answer COLUMN to use another",
                       "数据没有 answer 列：按 veRL 默认奖励的读法从每条回复中读出最终答案（最后一个 \\boxed{…}，"
                       "否则为 '#### N'），用于 maj@k 和自洽性；如需使用其他列，请给出 --answer COLUMN"))
    return df.with_columns(pl.Series(S.ANSWER, found, dtype=pl.Utf8))


def finish(df: pl.DataFrame, *, grouping: Grouping, group_size: int | None, split: str | None,
           notes: list[str], what: str, skips: SkipLog, derive_correct: bool = True,
           shard: ShardRead | None = None) -> pl.DataFrame:
    """Fill step, group and sample where the source has none, check group sizes, conform; with
    ``derive_correct`` fill correctness from the score where sound (:func:`correct_from_score`).
    ``shard``: the table is one shard of a larger input (:class:`ShardRead`)."""
    if df.height == 0:
        if shard is not None:
            return S.conform(pl.DataFrame(schema={S.STEP: pl.Int64, S.GROUP: pl.Utf8, S.SAMPLE: pl.Int64}))
        raise empty_error(what, skips)
    if S.STEP not in df.columns:
        df = df.with_columns(pl.lit(0, pl.Int64).alias(S.STEP))
        notes.append(Words("the data has no step column: every rollout is put at step 0",
                           "数据没有步数列：所有 rollout 都记在第 0 步"))
    if split is not None:
        if S.SPLIT in df.columns:
            notes.append(Words(f"the split column was replaced by split={split!r}",
                               f"split 列已替换为 split={split!r}"))
        df = df.with_columns(pl.lit(split, pl.Utf8).alias(S.SPLIT))
    df = df.sort(S.STEP, maintain_order=True)
    if S.GROUP not in df.columns:
        if KEY not in df.columns:
            key = pl.col(S.PROMPT) if S.PROMPT in df.columns else pl.lit(None, pl.Utf8)
            df = df.with_columns(key.alias(KEY))
            if S.PROMPT not in df.columns:
                notes.append(Words("the data has neither a group nor a prompt column: every rollout is its own group",
                                   "数据既没有分组列也没有 prompt 列：每个 rollout 单独成组"))
        df = assign_groups(df, grouping, group_size, notes)
    if S.SAMPLE not in df.columns:
        df = df.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over(S.STEP, S.GROUP).alias(S.SAMPLE))
    check_sizes(df, group_size, notes)
    if derive_correct:
        df = correct_from_score(df, notes, None if shard is None else shard.binary)
    df = answers_from_responses(df, notes)
    return S.conform(df.drop(WHERE, KEY, strict=False))
