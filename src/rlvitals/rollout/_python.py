"""Python objects as raw rollout frames: records and columns holding NumPy or torch values, lazy
and pandas frames, NumPy structured arrays, and bare score arrays.

Values from a training loop are rarely plain: a step is ``np.int64``, a score ``np.float32`` or a
0-d tensor, a token list an ``ndarray``. :func:`plain` turns them into Python values before
the typing in ``_columns``, which would otherwise read them as text. torch is never imported: a
tensor is recognised by its type's module and converted with its own methods.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl

from ..errors import InputError
from ..words import Words
from . import schema as S
from ._columns import WHERE, column

#: exact types: NumPy's float64 and str_ subclass float and str but are converted too
_PLAIN = frozenset({str, bool, int, float, type(None)})


def is_tensor(value: object) -> bool:
    """A torch tensor, told by its type's module so that torch need not be imported."""
    return type(value).__module__.split(".")[0] == "torch" and hasattr(value, "detach")


def plain(value: Any) -> Any:
    """``value`` with NumPy scalars and arrays and torch tensors made Python numbers and lists,
    in nested lists, tuples and dicts too (tuples become lists).

    >>> plain({"step": np.int64(3), "score": np.float32(0.5), "toks": np.array([1.5, 2.0])})
    {'step': 3, 'score': 0.5, 'toks': [1.5, 2.0]}
    """
    if type(value) in _PLAIN:
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        items = value.tolist()
        return plain(items) if value.dtype == object else items
    if is_tensor(value):
        return value.detach().cpu().tolist()
    if isinstance(value, (list, tuple)):
        if all(type(x) in _PLAIN for x in value):
            return value if isinstance(value, list) else list(value)
        return [plain(x) for x in value]
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    return value


def _numpy(value: Any) -> np.ndarray:
    """An array-like as a NumPy array; a tensor is detached and moved to the CPU first (bfloat16,
    which NumPy lacks, is widened to float32)."""
    if is_tensor(value):
        value = value.detach().cpu()
        if str(value.dtype) == "torch.bfloat16":
            value = value.float()
        return np.asarray(value.numpy())
    return np.asarray(value)


def _series(name: str, values: Any) -> pl.Series:
    if is_tensor(values):
        values = _numpy(values)
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype != object:
        return pl.Series(name, values)
    if isinstance(values, pl.Series):
        return values.alias(name)
    if isinstance(values, (np.ndarray, list, tuple)) or type(values).__module__.split(".")[0] == "pandas":
        return column(name, [plain(v) for v in values])
    kind = type(values).__name__
    raise InputError(Words(f"column {name!r}: got {kind}; expected a list, NumPy array, tensor or "
                           "Series of values, one per rollout",
                           f"列 {name!r}：收到的是 {kind}；应为列表、NumPy 数组、tensor 或 Series，"
                           "每个 rollout 一个值"))


def frame_from_columns(columns: Mapping[str, Any]) -> pl.DataFrame:
    """A dict of equal-length columns (lists, NumPy arrays, tensors, Series) as a frame."""
    series = [_series(str(name), values) for name, values in columns.items()]
    lengths = {s.name: s.len() for s in series}
    if len(set(lengths.values())) > 1:
        raise InputError(Words(f"dict of columns: the columns have different lengths {lengths}; give one value per "
                               "rollout in every column",
                               f"由各列组成的 dict：各列长度不同 {lengths}；每一列都应为每个 rollout 给一个值"))
    return pl.DataFrame(series)


def frame_from_structured(array: np.ndarray) -> pl.DataFrame:
    """A NumPy structured array: each field is a column."""
    names = array.dtype.names or ()
    return frame_from_columns({name: array[name].reshape(-1) for name in names})


def frame_from_scores(array: Any) -> tuple[pl.DataFrame, str]:
    """A bare array of scores, shape (groups, samples) at step 0 or (steps, groups, samples) with
    step = index along the first axis; booleans are correctness, numbers scores. NaN entries are
    missing samples (ragged groups padded with NaN) and are left out. Returns the frame and the
    value column's name (``score`` or ``correct``).

    >>> df, col = frame_from_scores(np.array([[1.0, 0.0], [1.0, np.nan]]))
    >>> col, df.select("step", "group", "sample", "score").rows()
    ('score', [(0, '0', 0, 1.0), (0, '0', 1, 0.0), (0, '1', 0, 1.0)])
    """
    a = _numpy(array)
    if a.ndim not in (2, 3):
        fix = Words(" (e.g. rewards.reshape(-1, G) for G samples per prompt)",
                    "（例如每个 prompt 有 G 个样本时用 rewards.reshape(-1, G)）") if a.ndim == 1 else Words("", "")
        raise InputError(Words(f"array of scores: shape {a.shape} is not (groups, samples) or (steps, groups, "
                               f"samples); reshape it{fix}, or give records or a frame with a group column",
                               f"分数数组：形状 {a.shape} 既不是 (组, 样本) 也不是 (步, 组, 样本)；请调整形状{fix.zh}，"
                               "或给出带分组列的记录或数据帧"))
    if a.dtype.kind not in "biuf":
        raise InputError(Words(f"array of scores: dtype {a.dtype} is neither numbers (scores) nor booleans "
                               "(correctness); give a numeric or boolean array, or records / a frame for other values",
                               f"分数数组：dtype {a.dtype} 既不是数值（分数）也不是布尔值（对错）；"
                               "请给出数值或布尔数组，其他值请用记录或数据帧"))
    a3 = a if a.ndim == 3 else a[None]
    steps, groups, samples = a3.shape
    values = a3.reshape(-1)
    idx = np.indices(a3.shape).reshape(3, -1)
    keep = ~np.isnan(values) if values.dtype.kind == "f" else np.ones(values.shape, dtype=bool)
    col = S.CORRECT if a.dtype.kind == "b" else S.SCORE
    where = (np.char.mod("[%d, ", idx[0]) if a.ndim == 3 else np.full(values.shape, "[")) \
        + np.char.mod("%d, ", idx[1]) + np.char.mod("%d]", idx[2])
    df = pl.DataFrame({S.STEP: idx[0][keep], S.GROUP: idx[1][keep].astype(str), S.SAMPLE: idx[2][keep],
                       col: values[keep] if col == S.CORRECT else values[keep].astype(np.float64),
                       WHERE: np.char.add("array", where[keep])})
    return df.with_columns(pl.col(S.STEP, S.SAMPLE).cast(pl.Int64)), col
