"""Token-scale metrics over the per-token lists: high-entropy ("forking") token share and the
Clip-Cov covariance between token log-prob and advantage."""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from rlvitals.rollout.schema import STEP, TOKEN_ADVANTAGE, TOKEN_ENTROPY, TOKEN_LOGPROB

FORKING_QUANTILE = 0.8


def _require(df: pl.DataFrame, *cols: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"this metric needs the rollout column(s) {missing}; the table has {df.columns}")


def high_entropy_share(entropy: np.ndarray, threshold: float) -> float:
    """Share of tokens with entropy strictly above ``threshold``; NaN for no tokens."""
    entropy = np.asarray(entropy, float)
    return float((entropy > threshold).mean()) if entropy.size else math.nan


def forking_threshold(entropy: np.ndarray, quantile: float = FORKING_QUANTILE) -> float:
    """The ``quantile`` (default 0.8: the top 20% of tokens are 'forking') of token entropies."""
    entropy = np.asarray(entropy, float)
    if entropy.size == 0:
        raise ValueError("forking_threshold needs at least one token entropy")
    return float(np.quantile(entropy, quantile))


def logp_adv_cov(logprob: np.ndarray, advantage: np.ndarray) -> float:
    """Mean over tokens of Cov_i = (A_i - mean A)(log p_i - mean log p), means over all tokens
    given (the Clip-Cov / KL-Cov quantity, batch-level means as in verl); NaN for no tokens."""
    lp, adv = np.asarray(logprob, float), np.asarray(advantage, float)
    if lp.shape != adv.shape:
        raise ValueError(f"log-probs and advantages differ in length: {lp.shape} vs {adv.shape}")
    if lp.size == 0:
        return math.nan
    return float(np.mean((adv - adv.mean()) * (lp - lp.mean())))


def _flat(part: pl.DataFrame, col: str) -> np.ndarray:
    return part[col].explode().drop_nulls().to_numpy().astype(float)


def tokens_table(df: pl.DataFrame, threshold: float | None = None,
                 quantile: float = FORKING_QUANTILE) -> pl.DataFrame:
    """Per-step ``token/entropy_high_share`` (with ``token_entropy``) and ``token/logp_adv_cov``
    (with ``token_logprob`` and ``token_advantage``, whose lists must have equal lengths per row).

    The entropy threshold is ``threshold`` if given, else the ``quantile`` of the token entropies
    of the *first* step: the share is then 1 - quantile at the first step by construction and
    shows how the forking tokens thin out (a per-step quantile would be constant).
    """
    has_ent = TOKEN_ENTROPY in df.columns
    has_cov = TOKEN_LOGPROB in df.columns and TOKEN_ADVANTAGE in df.columns
    if not has_ent and not has_cov:
        _require(df, TOKEN_ENTROPY, TOKEN_LOGPROB, TOKEN_ADVANTAGE)
    _require(df, STEP)
    df = df.sort(STEP)
    if has_cov:
        lens = df.select(pl.col(TOKEN_LOGPROB).list.len().fill_null(0).alias("a"),
                         pl.col(TOKEN_ADVANTAGE).list.len().fill_null(0).alias("b"))
        bad = lens.with_row_index().filter(pl.col("a") != pl.col("b"))
        if bad.height:
            raise ValueError(f"row {bad['index'][0]}: token_logprob has {bad['a'][0]} values but "
                             f"token_advantage has {bad['b'][0]}; they must align token by token")
    rows = []
    for (step,), part in df.group_by(STEP, maintain_order=True):
        row: dict[str, float] = {STEP: step}
        if has_ent:
            ent = _flat(part, TOKEN_ENTROPY)
            if threshold is None and ent.size:
                threshold = forking_threshold(ent, quantile)
            row["token/entropy_high_share"] = high_entropy_share(ent, threshold) if threshold is not None else math.nan
        if has_cov:
            both = part.select(TOKEN_LOGPROB, TOKEN_ADVANTAGE).explode(TOKEN_LOGPROB, TOKEN_ADVANTAGE).drop_nulls()
            row["token/logp_adv_cov"] = logp_adv_cov(both[TOKEN_LOGPROB].to_numpy(), both[TOKEN_ADVANTAGE].to_numpy())
        rows.append(row)
    out = pl.DataFrame(rows, schema_overrides={STEP: df.schema[STEP]})
    return out.with_columns(pl.exclude(STEP).cast(pl.Float64).fill_nan(None))
