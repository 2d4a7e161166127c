"""The rollouts to probe: read with the rollout readers, turned into chains, and cut to a budget.

``--max-rollouts N`` takes rollouts round-robin over the training steps (the first rollout of every step,
then the second …), so a small budget still covers the whole run and a step's faithfulness can be followed
over training. Rollouts without a prompt or a response cannot be probed and are counted.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from ..rollout import PROMPT, RESPONSE, STEP, TARGET, RolloutSet, read_rollouts
from .chain import Chain, chain_of

__all__ = ["chains_of"]


def _picked(steps: list[int | None], budget: int | None) -> list[int]:
    by_step: dict[int | None, list[int]] = defaultdict(list)
    for i, s in enumerate(steps):
        by_step[s].append(i)
    order = sorted(by_step, key=lambda s: (s is None, s or 0))
    picked: list[int] = []
    depth = 0
    while len(picked) < (budget if budget is not None else len(steps)):
        row = [by_step[s][depth] for s in order if depth < len(by_step[s])]
        if not row:
            break
        picked.extend(row)
        depth += 1
    return sorted(picked[:budget] if budget is not None else picked)


def chains_of(source: str | Path | RolloutSet, max_rollouts: int | None = None) -> tuple[list[Chain], int]:
    """The chains to probe (at most ``max_rollouts``) and how many rollouts had no prompt or response."""
    rs = source if isinstance(source, RolloutSet) else read_rollouts(source)
    table = rs.table
    n = table.height
    get = {c: (table.get_column(c).to_list() if c in table.columns else [None] * n)
           for c in (PROMPT, RESPONSE, STEP, TARGET)}
    usable = [i for i in range(n) if get[PROMPT][i] and get[RESPONSE][i]]
    steps = [get[STEP][i] for i in usable]
    chains = [chain_of(str(get[PROMPT][usable[k]]), str(get[RESPONSE][usable[k]]), id=f"r{usable[k]}",
                       target=None if get[TARGET][usable[k]] is None else str(get[TARGET][usable[k]]),
                       step=steps[k])
              for k in _picked(steps, max_rollouts)]
    return chains, n - len(usable)
