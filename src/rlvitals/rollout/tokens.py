"""Token-scale metrics over the per-token lists: high-entropy ("forking") token share, the
Clip-Cov covariance between token log-prob and advantage, and the two ways the log-probs the update
uses can part from the ones the data was sampled with (docs/reading-rules.md#rollout-mismatch):

* ``token/mismatch_logp_abs_diff``: the rollout engine against the trainer on the same weights, mean
  |log p_old − log p_rollout| (``token_old_logprob``, ``token_rollout_logprob``): precision, kernels, a
  weight sync that failed;
* ``token/staleness_logp_abs_diff``: the policy being updated against the policy that sampled, mean
  |log p_current − log p_old| (``token_logprob``, ``token_old_logprob``): off-policy lag (async steps,
  several minibatches or epochs per batch), not a disagreement of two engines.

Streaming: ``update(state | None, chunk, threshold=, quantile=)``, ``merge(a, b)``, ``compute(state)``.
The state keeps the step's tokens; quantiles depend only on the set of values and sums use
``math.fsum``, so a sharded result equals the unsharded one bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from ..words import Words
from .schema import STEP, TOKEN_ADVANTAGE, TOKEN_ENTROPY, TOKEN_LOGPROB, TOKEN_OLD_LOGPROB, TOKEN_ROLLOUT_LOGPROB

FORKING_QUANTILE = 0.8
MISMATCH = "token/mismatch_logp_abs_diff"
STALENESS = "token/staleness_logp_abs_diff"
#: other names a dump gives the per-token log-probs (veRL's batch keys, singular forms), read as the schema's
_SAME = {TOKEN_OLD_LOGPROB: ("old_log_probs", "old_logprob", "old_logprobs"),
         TOKEN_ROLLOUT_LOGPROB: ("rollout_log_probs", "rollout_logprob", "rollout_logprobs")}


def _require(df: pl.DataFrame, *cols: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(Words(f"this metric needs the rollout column(s) {missing}; the table has {df.columns}",
                               f"这个指标需要 rollout 列 {missing}；表中只有这些列：{df.columns}"))


def high_entropy_share(entropy: np.ndarray, threshold: float) -> float:
    """Share of tokens with entropy strictly above ``threshold``; NaN for no tokens."""
    entropy = np.asarray(entropy, float)
    return float((entropy > threshold).mean()) if entropy.size else math.nan


def forking_threshold(entropy: np.ndarray, quantile: float = FORKING_QUANTILE) -> float:
    """The ``quantile`` (default 0.8: the top 20% of tokens are 'forking') of token entropies."""
    entropy = np.asarray(entropy, float)
    if entropy.size == 0:
        raise ValueError(Words("forking_threshold needs at least one token entropy",
                               "forking_threshold 至少需要一个 token 熵值"))
    return float(np.quantile(entropy, quantile))


def logp_adv_cov(logprob: np.ndarray, advantage: np.ndarray) -> float:
    """Mean over tokens of Cov_i = (A_i - mean A)(log p_i - mean log p), means over all tokens
    given (the Clip-Cov / KL-Cov quantity, batch-level means as in verl); NaN for no tokens."""
    lp, adv = np.asarray(logprob, float), np.asarray(advantage, float)
    if lp.shape != adv.shape:
        raise ValueError(Words(f"log-probs and advantages differ in length: {lp.shape} vs {adv.shape}",
                               f"log-prob 与 advantage 的长度不同：{lp.shape} 对 {adv.shape}"))
    if lp.size == 0:
        return math.nan
    # math.fsum is exact, so the result does not depend on the order of the tokens (or on sharding)
    n = lp.size
    lp_c, adv_c = lp - math.fsum(lp.tolist()) / n, adv - math.fsum(adv.tolist()) / n
    return math.fsum((adv_c * lp_c).tolist()) / n


def named(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` with a dump's own name for the old or rollout log-probs (``old_log_probs``, ``rollout_log_probs``
    …) read as ``token_old_logprob`` / ``token_rollout_logprob`` where the table has no column of that name.

    >>> named(pl.DataFrame({"rollout_log_probs": [[-0.5]]})).columns
    ['token_rollout_logprob']
    """
    for col, others in _SAME.items():
        found = next((o for o in others if o in df.columns), None) if col not in df.columns else None
        if found is not None:
            df = df.rename({found: col}).with_columns(pl.col(col).cast(pl.List(pl.Float64)))
    return df


def abs_diff(part: pl.DataFrame, a: str, b: str) -> np.ndarray:
    """|a − b| token by token over rows whose lists ``a`` and ``b`` have the same length, finite pairs only
    (a dump's masked positions are null or non-finite)."""
    both = part.select(a, b).filter(pl.col(a).list.len() == pl.col(b).list.len()).explode(a, b).drop_nulls()
    x, y = both[a].cast(pl.Float64).to_numpy(), both[b].cast(pl.Float64).to_numpy()
    keep = np.isfinite(x) & np.isfinite(y)
    out: np.ndarray = np.abs(x[keep] - y[keep])
    return out


def _mean(values: np.ndarray) -> float:
    return math.fsum(values.tolist()) / values.size if values.size else math.nan


def _needs(columns: list[str]) -> Words:
    """What the token metrics need; the log-prob gaps' columns are named once the table holds one of them."""
    if TOKEN_OLD_LOGPROB not in columns and TOKEN_ROLLOUT_LOGPROB not in columns:
        return Words(f"token metrics need '{TOKEN_ENTROPY}', or '{TOKEN_LOGPROB}' with '{TOKEN_ADVANTAGE}' "
                     f"(per-token lists); the table has {columns}",
                     f"token 指标需要 '{TOKEN_ENTROPY}'，或者 '{TOKEN_LOGPROB}' 加 '{TOKEN_ADVANTAGE}'"
                     f"（逐 token 的列表）；表中只有这些列：{columns}")
    return Words(f"token metrics need '{TOKEN_ENTROPY}', '{TOKEN_LOGPROB}' with '{TOKEN_ADVANTAGE}', or "
                 f"'{TOKEN_OLD_LOGPROB}' with '{TOKEN_ROLLOUT_LOGPROB}' (engine against trainer) or with "
                 f"'{TOKEN_LOGPROB}' (staleness) (per-token lists); the table has {columns}",
                 f"token 指标需要 '{TOKEN_ENTROPY}'、'{TOKEN_LOGPROB}' 加 '{TOKEN_ADVANTAGE}'，或者 "
                 f"'{TOKEN_OLD_LOGPROB}' 加 '{TOKEN_ROLLOUT_LOGPROB}'（引擎与训练端之差）或加 '{TOKEN_LOGPROB}'"
                 f"（陈旧度）（逐 token 的列表）；表中只有这些列：{columns}")


def _flat(part: pl.DataFrame, col: str) -> np.ndarray:
    return part[col].explode().drop_nulls().to_numpy().astype(float)


@dataclass(frozen=True)
class StepTokens:
    """One step's partial state: every token entropy, the aligned (log-prob, advantage) pairs, and the
    per-token |old − rollout| and |current − old| log-prob gaps."""

    entropy: np.ndarray
    logprob: np.ndarray
    advantage: np.ndarray
    mismatch: np.ndarray = field(default_factory=lambda: np.empty(0))
    staleness: np.ndarray = field(default_factory=lambda: np.empty(0))

    def __add__(self, o: StepTokens) -> StepTokens:
        return StepTokens(*(np.concatenate([getattr(self, f), getattr(o, f)])
                            for f in ("entropy", "logprob", "advantage", "mismatch", "staleness")))


@dataclass(frozen=True)
class TokenState:
    """Mergeable partial state of :func:`tokens_table`: settings, which token columns the chunks had,
    and one :class:`StepTokens` per step. Tokens are kept because the forking threshold is a
    quantile over the first step's tokens, known only once every shard is in."""

    threshold: float | None = None
    quantile: float = FORKING_QUANTILE
    entropy: bool = False
    cov: bool = False
    steps: dict[int, StepTokens] = field(default_factory=dict)
    mismatch: bool = False
    staleness: bool = False


def _check_aligned(df: pl.DataFrame) -> None:
    lens = df.select(pl.col(TOKEN_LOGPROB).list.len().fill_null(0).alias("a"),
                     pl.col(TOKEN_ADVANTAGE).list.len().fill_null(0).alias("b"))
    bad = lens.with_row_index().filter(pl.col("a") != pl.col("b"))
    if bad.height:
        row, a, b = bad["index"][0], bad["a"][0], bad["b"][0]
        raise ValueError(Words(f"row {row}: token_logprob has {a} values but token_advantage has {b}; "
                               "they must align token by token",
                               f"第 {row} 行：token_logprob 有 {a} 个值，token_advantage 却有 {b} 个；"
                               "两者必须逐个 token 对齐"))


def update(state: TokenState | None, chunk: pl.DataFrame, *, threshold: float | None = None,
           quantile: float | None = None) -> TokenState:
    """Fold a chunk of rollouts into ``state`` (None: a new state with the given options)."""
    if state is None:
        state = TokenState(threshold, FORKING_QUANTILE if quantile is None else quantile)
    elif not (threshold in (None, state.threshold) and quantile in (None, state.quantile)):
        raise ValueError("update: threshold or quantile differ from the state's settings; build a new state instead")
    chunk = named(chunk)
    has_ent = TOKEN_ENTROPY in chunk.columns
    has_cov = TOKEN_LOGPROB in chunk.columns and TOKEN_ADVANTAGE in chunk.columns
    has_mis = TOKEN_OLD_LOGPROB in chunk.columns and TOKEN_ROLLOUT_LOGPROB in chunk.columns
    has_stale = TOKEN_LOGPROB in chunk.columns and TOKEN_OLD_LOGPROB in chunk.columns
    if not (has_ent or has_cov or has_mis or has_stale):
        raise ValueError(_needs(chunk.columns))
    _require(chunk, STEP)
    if has_cov:
        _check_aligned(chunk)
    none = np.empty(0)
    steps: dict[int, StepTokens] = {}
    for (step,), part in chunk.group_by(STEP):
        ent = _flat(part, TOKEN_ENTROPY) if has_ent else none
        both = (part.select(TOKEN_LOGPROB, TOKEN_ADVANTAGE).explode(TOKEN_LOGPROB, TOKEN_ADVANTAGE).drop_nulls()
                if has_cov else pl.DataFrame({TOKEN_LOGPROB: [], TOKEN_ADVANTAGE: []}))
        steps[int(step)] = StepTokens(ent, both[TOKEN_LOGPROB].cast(pl.Float64).to_numpy(),
                                      both[TOKEN_ADVANTAGE].cast(pl.Float64).to_numpy(),
                                      abs_diff(part, TOKEN_OLD_LOGPROB, TOKEN_ROLLOUT_LOGPROB) if has_mis else none,
                                      abs_diff(part, TOKEN_LOGPROB, TOKEN_OLD_LOGPROB) if has_stale else none)
    return merge(state, TokenState(state.threshold, state.quantile, has_ent, has_cov, steps, has_mis, has_stale))


def merge(a: TokenState, b: TokenState) -> TokenState:
    """Combine two states built from disjoint sets of rollouts."""
    if (a.threshold, a.quantile) != (b.threshold, b.quantile):
        raise ValueError("cannot merge token states built with different threshold or quantile")
    steps = dict(a.steps)
    for step, acc in b.steps.items():
        steps[step] = steps[step] + acc if step in steps else acc
    return TokenState(a.threshold, a.quantile, a.entropy or b.entropy, a.cov or b.cov, steps,
                      a.mismatch or b.mismatch, a.staleness or b.staleness)


def compute(state: TokenState) -> pl.DataFrame:
    """Per-step frame of :func:`tokens_table` from a state."""
    threshold, rows = state.threshold, []
    for step in sorted(state.steps):
        acc = state.steps[step]
        row: dict[str, float] = {STEP: step}
        if state.entropy:
            if threshold is None and acc.entropy.size:
                threshold = forking_threshold(acc.entropy, state.quantile)
            row["token/entropy_high_share"] = (high_entropy_share(acc.entropy, threshold)
                                               if threshold is not None else math.nan)
        if state.cov:
            row["token/logp_adv_cov"] = logp_adv_cov(acc.logprob, acc.advantage)
        if state.mismatch:
            row[MISMATCH] = _mean(acc.mismatch)
        if state.staleness:
            row[STALENESS] = _mean(acc.staleness)
        rows.append(row)
    names = [k for k, on in (("token/entropy_high_share", state.entropy), ("token/logp_adv_cov", state.cov),
                             (MISMATCH, state.mismatch), (STALENESS, state.staleness)) if on]
    schema = {STEP: pl.Int64(), **{k: pl.Float64() for k in names}}
    out = pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)
    return out.with_columns(pl.exclude(STEP).fill_nan(None))


def tokens_table(df: pl.DataFrame, threshold: float | None = None,
                 quantile: float = FORKING_QUANTILE) -> pl.DataFrame:
    """Per-step ``token/entropy_high_share`` (with ``token_entropy``) and ``token/logp_adv_cov``
    (with ``token_logprob`` and ``token_advantage``, whose lists must have equal lengths per row);
    ``token/mismatch_logp_abs_diff`` (with ``token_old_logprob`` and ``token_rollout_logprob``) and
    ``token/staleness_logp_abs_diff`` (with ``token_logprob`` and ``token_old_logprob``), over the rows whose
    two lists have equal lengths.

    The entropy threshold is ``threshold`` if given, else the ``quantile`` of the token entropies
    of the first step that has any token entropy: the share is then 1 - quantile at the first step by construction and
    shows how the forking tokens thin out (a per-step quantile would be constant).
    ``compute(update(None, df, threshold=threshold, quantile=quantile))``.

    >>> df = pl.DataFrame({"step": [0, 1], "token_entropy": [[0.1, 0.2, 0.3, 0.4, 0.5], [0.1, 0.9]]})
    >>> tokens_table(df)["token/entropy_high_share"].to_list()
    [0.2, 0.5]
    >>> lp = pl.DataFrame({"step": [0], "token_rollout_logprob": [[-1.0, -2.0]], "token_old_logprob": [[-1.5, -2.0]],
    ...                    "token_logprob": [[-1.5, -1.0]]})
    >>> tokens_table(lp).select("token/mismatch_logp_abs_diff", "token/staleness_logp_abs_diff").row(0)
    (0.25, 0.5)
    """
    return compute(update(None, df, threshold=threshold, quantile=quantile))
