"""What a rollout metric needs that the rollouts may lack: for each key a computed family leaves out, the reason
it could not be computed ("needs the rollout column 'answer' …"), in English and Chinese, for the analysis'
"not computed" list.

>>> [keys for family, keys, need in KEY_NEEDS if need(RolloutOptions(), frozenset()) is None]
[]
"""

from __future__ import annotations

from collections.abc import Callable

from ..words import Words
from .options import RolloutOptions
from .schema import (
    ACTIONS,
    ADVANTAGE,
    ANSWER,
    CORRECT,
    LENGTH,
    SCORE,
    STATES,
    TOKEN_ADVANTAGE,
    TOKEN_ENTROPY,
    TOKEN_LOGPROB,
    TRUNCATED,
)

__all__ = ["KEY_NEEDS", "Need", "states_needed"]

#: a key that a computed family leaves out → what it needs, given the options and the chunks' columns
Need = Callable[[RolloutOptions, frozenset[str]], str | None]


def _columns(*needed: str, hint: str = "", hint_zh: str = "") -> Need:
    """A need satisfied when the chunks carried every column of ``needed``."""
    def need(o: RolloutOptions, columns: frozenset[str]) -> str | None:
        missing = [c for c in needed if c not in columns]
        if not missing:
            return None
        names = " and ".join(repr(c) for c in missing)
        return Words(f"needs the rollout column{'s' if len(missing) > 1 else ''} {names}{hint}",
                     f"需要 rollout 列 {'、'.join(repr(c) for c in missing)}{hint_zh}")
    return need


def states_needed(o: RolloutOptions, columns: frozenset[str] | list[str], where: str | None = None) -> Words | None:
    """Why the rollouts cannot be analysed with a state-space size (``n_states``, ``--n-states``): they have no
    ``states`` column to count the visited states in (None when they have one, or no size was given); ``where``
    names the rollouts (a path).

    >>> print(states_needed(RolloutOptions(n_states=9), ["response"], "dump/"))  # doctest: +ELLIPSIS
    --n-states 9 (n_states): ... but the rollouts in dump/ have no 'states' column ...
    """
    n = o.n_states
    if n is None or STATES in columns:
        return None
    at, at_zh = (f" in {where}", f" {where} 里的 ") if where else ("", "这些 ")
    return Words(f"--n-states {n} (n_states): diversity/state_coverage divides the distinct states a group visits "
                 f"by the size of the state space, but the rollouts{at} have no 'states' column (the states each "
                 "rollout visited); name that column 'states' in the table or map it (ColumnMap(states=...)), "
                 "or drop --n-states",
                 f"--n-states {n}（n_states）：diversity/state_coverage 是一组访问到的不同状态数除以状态空间的大小，"
                 f"但{at_zh}rollout 没有 'states' 列（每条 rollout 访问过的状态）；请把表中这一列命名为 'states' "
                 "或映射它（ColumnMap(states=...)），或者去掉 --n-states")


def _truncation_need(o: RolloutOptions, columns: frozenset[str]) -> str | None:
    if TRUNCATED in columns or (o.max_response_length is not None and LENGTH in columns):
        return None
    if o.max_response_length is not None:
        return Words("--max-response-length counts tokens, but the rollouts carry no token counts (their lengths "
                     "are characters); map a token-count column (--length COLUMN) or a truncation flag "
                     "(--truncated COLUMN)",
                     "--max-response-length 以 token 计，但 rollout 没有 token 数（长度是字符数）；请映射 token "
                     "数列（--length COLUMN）或截断标记（--truncated COLUMN）")
    return Words("needs a 'truncated' column (--truncated COLUMN), or --max-response-length N with token counts in "
                 "'length'",
                 "需要 'truncated' 列（--truncated COLUMN），或 --max-response-length N 且 'length' 里是 token 数")


#: (family, the keys it leaves out, what they need)
KEY_NEEDS: tuple[tuple[str, str, Need], ...] = (
    ("group", "maj@{k}, reasoning/self_consistency_gap@{k}",
     _columns(ANSWER, hint=" (extracted final answers: veRL pred, a \\boxed{…} or '#### N' in the responses, "
                           "--answer COLUMN); they are NaN without it",
              hint_zh="（抽取出的最终答案：veRL 的 pred、回复中的 \\boxed{…} 或 '#### N'，或 --answer COLUMN）；"
                      "没有它，这些值为 NaN")),
    ("step_groups", "group/step_groups/multi_action_share", _columns(ACTIONS)),
    ("diversity", "diversity/answer_entropy",
     _columns(ANSWER, hint=" (veRL pred, a \\boxed{…} or '#### N' in the responses, --answer COLUMN)",
              hint_zh="（veRL 的 pred、回复中的 \\boxed{…} 或 '#### N'，或 --answer COLUMN）")),
    ("diversity", "diversity/action_edit_distance", _columns(ACTIONS)),
    ("diversity", "diversity/state_coverage", _columns(STATES)),
    ("length", "rollout/truncation_share", _truncation_need),
    ("prompts", "prompt/reward_gini, prompt/top_share", _columns(SCORE)),
    ("prompts", "prompt/difficulty/{easy,medium,hard}/share", _columns(CORRECT)),
    ("prompts", "prompt/difficulty/{easy,medium,hard}/adv_share",
     _columns(CORRECT, ADVANTAGE, hint=" (the sequence advantage: TRL completions carry it)",
              hint_zh="（序列级 advantage：TRL completions 带有这一列）")),
    ("tokens", "token/entropy_high_share", _columns(TOKEN_ENTROPY)),
    ("tokens", "token/logp_adv_cov", _columns(TOKEN_LOGPROB, TOKEN_ADVANTAGE)),
    ("segments", "rollout/tool_calls/at_cap",
     lambda o, c: None if o.tool_call_cap is not None else
     Words("needs the rollouts' tool-call cap: --tool-cap N", "需要 rollout 的工具调用上限：--tool-cap N")),
    ("sources", "source/{source}/id_gap",
     lambda o, c: None if o.id_sources else
     Words("needs the in-distribution data sources: --id-source NAME", "需要分布内的数据来源：--id-source NAME")),
)
