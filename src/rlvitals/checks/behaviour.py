"""L2 policy behaviour: entropy, response and prompt length, aborted samples, turns and tool calls."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import signals
from ._base import CheckFn, Outcome, RunView


def entropy_collapse(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Entropy losing ``drop`` of its level within ``within`` steps and staying down
    (seed-000 §2.3 "熵突然骤降"; seed-004 §六: a collapse in the first 50 steps versus a
    smooth decay). The scale is the run's own, so a 0.05-nat run is read like a 2-nat one."""
    s = view.series("actor/entropy")
    if s is None:
        return []
    event = signals.collapse(s.values, drop=p["drop"], within=p["within"])
    if event is None:
        values = {"first": float(s.values[: max(1, len(s) // 10)].mean()),
                  "last": float(s.values[-max(1, len(s) // 10):].mean())}
        return [Outcome("ok", "ok", values, metrics=(s.key,))]
    onset, low = s.step(event.start), s.step(event.end)
    early = onset - s.step(0) <= p["early_steps"]
    values = {"onset": onset, "low_step": low, "before": event.baseline, "after": event.value,
              "drop": event.score, "steps": low - onset + 1, "early_steps": p["early_steps"]}
    return [Outcome("fail", "fail_early" if early else "fail", values, onset_step=onset, span=(onset, low), metrics=(s.key,),
                    evidence={"baseline": event.baseline, "value": event.value, "drop": event.score,
                              "threshold": p["drop"]})]


FUNCTIONS: dict[str, CheckFn] = {
    "entropy_collapse": entropy_collapse,
}
