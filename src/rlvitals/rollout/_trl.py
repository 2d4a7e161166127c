"""TRL completions: ``<output_dir>/completions/completions_{step:05d}.parquet`` (``log_completions=True``,
TRL >= 1.0).

Columns: ``step`` (TRL writes it as text), ``prompt`` (text, or a list of chat messages),
``completion`` (text or messages), one column per reward function, extra columns, and
``advantage``. Mapping: prompt = the last user message of a chat (groups are formed by the
whole conversation), response = ``completion``, correct = the one accuracy-type reward column
(:func:`accuracy_like`) >= 1.0 — with several reward functions and not exactly one such column,
correctness is unknown (a summed score >= 1 may be format credit alone) —, score = ``reward`` when present, else the
weighted sum of the reward-function columns (every numeric column but ``step`` and
``advantage``), ignoring NaN as TRL's ``nansum`` does (a rollout whose every reward is NaN has
no score). TRL weights reward functions by its ``reward_weights`` argument, which the file does
not record: pass the same ``reward_weights`` (a mapping name → weight, or a list in column
order); without it unit weights are assumed and, with several functions, a note says so.
Reward-function columns are kept. A column map (the CLI's ``--correct`` ...) overrides single fields of
this mapping. At a step that also evaluates, TRL overwrites the
train file with the eval completions; a file whose row count differs from the others is noted.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from ..errors import InputError
from ..ingest.record import SkipLog
from ..words import Words
from ._columns import WHERE
from ._core import (
    KEY,
    ColumnMap,
    Progress,
    RolloutSet,
    ShardRead,
    apply_map,
    chat_columns,
    files_told,
    finish,
    override,
)
from .tally import merged, row_counts

FORMAT = "trl-completions"
NAME = re.compile(r"^completions_(\d+)\.parquet$")
_NOT_REWARD = {"step", "advantage", "reward"}


def file_step(path: Path) -> int | None:
    m = NAME.match(path.name)
    return int(m.group(1)) if m else None


def literal(df: pl.DataFrame, name: str) -> pl.Expr:
    """The column ``name`` of ``df`` as an expression, by position: ``pl.col`` reads a name that starts
    with ``^`` and ends with ``$`` as a regular expression, and a reward function may be named so.

    >>> df = pl.DataFrame({"^r$": [1], "r": [2]})
    >>> df.select(literal(df, "^r$")).item(), df.select(pl.col("^r$")).item()
    (1, 2)
    """
    return pl.nth(df.columns.index(name))


def _read_files(paths: list[Path], skips: SkipLog, progress: Progress | None) -> list[tuple[Path, pl.DataFrame]]:
    frames = []
    for path in files_told(paths, progress):
        try:
            df = pl.read_parquet(path)
        except (Exception, pl.exceptions.PanicException) as exc:  # polars raises several types, or panics
            why = f"{type(exc).__name__}: {exc}"
            skips.skip(str(path), Words(f"cannot be read as Parquet ({why}); the file was skipped",
                                        f"无法按 Parquet 读取（{why}）；已跳过这个文件"))
            continue
        df = df.with_columns(pl.format("{}#{}", pl.lit(str(path)), pl.int_range(1, pl.len() + 1)).alias(WHERE))
        if "step" not in df.columns:
            df = df.with_columns(pl.lit(file_step(path), pl.Int64).alias("step"))
        frames.append((path, df.with_columns(pl.col("step").cast(pl.Utf8))))
    return frames


RewardWeights = Mapping[str, float] | Sequence[float]


def parse_reward_weights(text: str) -> RewardWeights:
    """The CLI form of ``reward_weights``: ``name=weight`` pairs or bare weights in column order,
    comma-separated.

    >>> parse_reward_weights("accuracy_reward=1, format_reward=0.5")
    {'accuracy_reward': 1.0, 'format_reward': 0.5}
    >>> parse_reward_weights("1,0.5")
    [1.0, 0.5]
    """
    items = [t.strip() for t in text.split(",") if t.strip()]
    named = [t.partition("=") for t in items]
    try:
        if items and all(sep and name.strip() for name, sep, _ in named):
            return {name.strip(): float(value) for name, _, value in named}
        if items and not any(sep for _, sep, _ in named):
            return [float(t) for t in items]
    except ValueError:
        pass
    raise InputError(Words(f"--reward-weights {text!r}: expected name=weight pairs like "
                           "accuracy_reward=1,format_reward=0.5 or weights in reward-column order like 1,0.5",
                           f"--reward-weights {text!r}：应为 name=weight 形式的若干对，如 "
                           "accuracy_reward=1,format_reward=0.5，或按 reward 列的顺序给出的权重，如 1,0.5"))


def _reward_columns(df: pl.DataFrame, other: frozenset[str] = frozenset()) -> list[str]:
    """The reward-function columns: numeric, and not ``step``/``advantage``/``reward`` nor a column
    the column map gives another meaning (``other``: a length, a group id ...)."""
    return [c for c, t in df.schema.items()
            if t.is_numeric() and c not in _NOT_REWARD and c not in other and not c.startswith("_")]


def weights_for(funcs: list[str], weights: RewardWeights, where: str, columns: list[str]) -> list[float]:
    """One weight per reward-function column, in column order; an InputError naming ``where``, the
    columns found and the fix when ``weights`` does not fit.

    >>> weights_for(["acc", "fmt"], {"fmt": 0.5, "acc": 1.0}, "f.parquet", [])
    [1.0, 0.5]
    """
    example = dict.fromkeys(funcs, 1.0)
    fix = Words(f"give one weight per reward function, e.g. reward_weights={example} "
                f"or a list of {len(funcs)} numbers in that order",
                f"请为每个 reward 函数给一个权重，例如 reward_weights={example}，或按这个顺序给出 {len(funcs)} 个数")
    if isinstance(weights, Mapping):
        unknown = sorted(set(weights) - set(funcs))
        missing = [f for f in funcs if f not in weights]
        if unknown or missing:
            what = (Words(f"names {unknown} that are not reward-function columns", f"中的 {unknown} 不是 reward 函数列")
                    if unknown else Words(f"lacks {missing}", f"缺少 {missing}"))
            raise InputError(Words(f"{where}: reward_weights {what}; the file's columns are {columns} and its reward "
                                   f"functions {funcs}; {fix}",
                                   f"{where}：reward_weights {what.zh}；文件的列是 {columns}，其中的 reward 函数是 "
                                   f"{funcs}；{fix.zh}"))
        values = [weights[f] for f in funcs]
    else:
        values = list(weights)
        if len(values) != len(funcs):
            raise InputError(Words(f"{where}: reward_weights has {len(values)} weight(s) but the file has "
                                   f"{len(funcs)} reward-function column(s) {funcs} (columns: {columns}); {fix}",
                                   f"{where}：reward_weights 有 {len(values)} 个权重，但文件有 {len(funcs)} 个 "
                                   f"reward 函数列 {funcs}（全部列：{columns}）；{fix.zh}"))
    bad = [v for v in values if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)]
    if bad:
        raise InputError(Words(f"{where}: reward_weights {bad} are not finite numbers; {fix}",
                               f"{where}：reward_weights 中的 {bad} 不是有限的数；{fix.zh}"))
    return [float(v) for v in values]


def _score(df: pl.DataFrame, notes: list[str], weights: RewardWeights | None,
           what: str, other: frozenset[str]) -> tuple[pl.DataFrame, str | None]:
    if "reward" in df.columns:
        if weights is not None:
            notes.append(Words("the files have a 'reward' column (the weighted total): it is the score, and "
                               "reward_weights were not needed",
                               "文件里有 'reward' 列（加权后的总分）：以它为分数，用不到 reward_weights"))
        return df, "reward"
    funcs = _reward_columns(df, other)
    if not funcs:
        notes.append(Words("no reward column found: the table has no score", "没有找到 reward 列：表里没有分数"))
        return df, None
    cols = [c for c in df.columns if not c.startswith("_")]
    w = weights_for(funcs, weights, what, cols) if weights is not None else [1.0] * len(funcs)
    # TRL: (rewards_per_func * weights).nansum(dim=1); NaN marks a function that gave no reward
    vals = [pl.when(col.is_nan()).then(None).otherwise(col.cast(pl.Float64) * wi)
            for col, wi in zip((literal(df, c) for c in funcs), w, strict=True)]
    total = pl.when(pl.all_horizontal([v.is_null() for v in vals])).then(None).otherwise(pl.sum_horizontal(vals))
    if weights is not None:
        weighed = dict(zip(funcs, w, strict=True))
        notes.append(Words(f"score = weighted sum of the reward functions {weighed}, NaN ignored as TRL's nansum",
                           f"分数 = 各 reward 函数的加权和 {weighed}，与 TRL 的 nansum 一样忽略 NaN"))
    elif len(funcs) > 1:
        notes.append(Words(f"score = plain sum of the reward functions {funcs}: TRL weights them by reward_weights, "
                           "which the completions file does not record; equal unit weights were assumed "
                           "(pass reward_weights, CLI --reward-weights, if the run used others)",
                           f"分数 = 各 reward 函数的直接求和 {funcs}：TRL 按 reward_weights 加权，而 "
                           "completions_<step>.parquet 不记录这些权重，这里假定权重都是 1（若训练用了别的权重，"
                           "请传入 reward_weights，命令行用 --reward-weights）"))
    return df.with_columns(total.alias("_score")), "_score"


_ACC_WORD = re.compile(r"(?:^|[^a-z])acc(?:[^a-z]|$)")


def accuracy_like(name: str) -> bool:
    """Whether a reward function's name says it scores correctness: it contains ``accuracy`` or
    ``correct``, or has ``acc`` as a word (TRL's ``accuracy_reward``, ``correctness_reward_func``,
    ``acc_reward``; not ``format_reward`` nor ``accept_rate``).

    >>> [accuracy_like(n) for n in ("accuracy_reward", "correctness_reward_func", "acc", "format_reward")]
    [True, True, True, False]
    """
    low = name.lower()
    return "accuracy" in low or "correct" in low or _ACC_WORD.search(low) is not None


def _correctness(df: pl.DataFrame, funcs: list[str], notes: list[str]) -> tuple[pl.DataFrame, str | None]:
    """Correctness from the reward-function columns: the one accuracy-type column (correct = value
    >= 1.0, NaN unknown); with several reward functions and not exactly one accuracy-type column,
    unknown (null), since a summed score >= 1 can be format credit alone. None: one reward function,
    whose score the usual score rule reads."""
    acc = [f for f in funcs if accuracy_like(f)]
    if len(acc) == 1:
        v = literal(df, acc[0]).cast(pl.Float64)
        notes.append(Words(f"correctness from the accuracy-type reward column {acc[0]!r} (correct = {acc[0]} >= 1.0, "
                           "NaN unknown; a reward column whose name holds 'accuracy', 'correct' or the word 'acc'); "
                           "give --correct COLUMN to choose another",
                           f"对错取自准确率类的 reward 列 {acc[0]!r}（{acc[0]} >= 1.0 为对，NaN 为未知；准确率类指列名"
                           "含 'accuracy'、'correct' 或单词 'acc' 的 reward 列）；要换一列请用 --correct COLUMN"))
        return df.with_columns(pl.when(v.is_null() | v.is_nan()).then(None).otherwise(v >= 1.0).alias("_correct")), \
            "_correct"
    if len(funcs) < 2 and not acc:
        return df, None
    why = Words(f"several accuracy-type reward columns {acc}", f"有多个准确率类的 reward 列 {acc}") if acc else \
        Words(f"several reward functions {funcs} and none is accuracy-type (a name holding 'accuracy', 'correct' or "
              "the word 'acc')",
              f"有多个 reward 函数 {funcs}，但没有一个是准确率类（列名含 'accuracy'、'correct' 或单词 'acc'）")
    notes.append(Words(f"{why}: correctness is unknown rather than guessed from the summed score, so pass@k, maj@k, "
                       "G-Pass@k and the all-correct / all-wrong split are not computed; give --correct COLUMN",
                       f"{why.zh}：对错记为未知，不从总分去猜，因此 pass@k、maj@k、G-Pass@k 以及全对/全错拆分都不"
                       "计算；请用 --correct COLUMN 指定对错列"))
    return df.with_columns(pl.lit(None, pl.Boolean).alias("_correct")), "_correct"


def _check_weights(frames: Sequence[tuple[Path | str, pl.DataFrame]], weights: RewardWeights | None,
                   other: frozenset[str]) -> None:
    """Check ``weights`` against every file's reward columns, so an error names the file."""
    for path, df in frames:
        if weights is not None and "reward" not in df.columns:
            weights_for(_reward_columns(df, other), weights, str(path),
                        [c for c in df.columns if not c.startswith("_")])


def read(paths: list[Path], *, group_size: int | None, split: str | None, what: str,
         reward_weights: RewardWeights | None = None, columns: ColumnMap | None = None,
         progress: Progress | None = None, shard: ShardRead | None = None) -> RolloutSet:
    """The completions as a rollout table; ``columns`` overrides single fields of the mapping in
    the module docstring (``score`` names the score column instead of summing the reward functions;
    a column given another meaning is no reward function). ``progress`` is told the files read."""
    skips = SkipLog()
    frames = _read_files(paths, skips, progress)
    return from_frames(list(frames), group_size=group_size, split=split, what=what, reward_weights=reward_weights,
                       columns=columns, shard=shard, skips=skips, files=[str(p) for p in paths])


def from_frames(frames: Sequence[tuple[Path | str, pl.DataFrame]], *, group_size: int | None, split: str | None,
                what: str, reward_weights: RewardWeights | None, columns: ColumnMap | None, shard: ShardRead | None,
                skips: SkipLog, files: list[str], fmt: str = FORMAT, notes: list[str] | None = None) -> RolloutSet:
    """:func:`read` of completions already in frames (one per file or logged table, named by where it is,
    each with TRL's columns, a text ``step`` and the rows' places): what a tracker's table of TRL's
    completions is read by."""
    given = columns.mapping() if columns is not None else {}
    if "score" in given and reward_weights is not None:
        raise InputError(Words(f"{what}: the score column is given ({given['score']!r}), so reward_weights have no "
                               "reward functions to weigh; give the score column or reward_weights, not both",
                               f"{what}：已经指定了分数列（{given['score']!r}），reward_weights 没有 reward 函数"
                               "可加权；分数列和 reward_weights 只能给其中一个"))
    other = frozenset(v for k, v in given.items() if k not in ("score", "correct"))
    notes = notes if notes is not None else []
    notes.append(row_counts([(str(p), f.height) for p, f in frames]))
    df = pl.concat([f for _, f in frames], how="diagonal_relaxed") if frames else pl.DataFrame()
    prompt, response = given.get("prompt", "prompt"), given.get("response", "completion")
    if df.height:
        df = chat_columns(df, prompt, response, notes)
        key = "prompt_messages" if "prompt_messages" in df.columns else prompt
        df = df.with_columns(df.get_column(key).alias(KEY)) if key in df.columns else df
    _check_weights(frames, reward_weights, other)
    df, score = _score(df, notes, reward_weights, what, other) if df.height and "score" not in given else (df, None)
    df, correct = _correctness(df, _reward_columns(df, other), notes) if df.height and "correct" not in given \
        else (df, None)
    fields = {"step": "step", "prompt": "prompt", "response": "completion", "advantage": "advantage",
              "score": score, "correct": correct}
    present = {k: v for k, v in fields.items() if v is not None and v in df.columns}
    df = apply_map(df, override(present, columns, FORMAT, notes), what, skips, notes)
    # correctness from the reward columns is not to be re-guessed from the summed score
    table = finish(df, grouping="text", group_size=group_size, split=split, notes=notes, what=what,
                   skips=skips, derive_correct=correct is None and "correct" not in given, shard=shard)
    return RolloutSet(table, skips, fmt, files, merged([notes]), notes)
