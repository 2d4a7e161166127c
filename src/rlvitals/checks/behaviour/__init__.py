"""L2 policy behaviour: entropy, response and prompt length, aborted samples, turns and tool calls.

Every level is read against the run's own scale (its start, its recent median, its reward
range), so the same defaults serve a 0.05-nat run and a 2-nat one; only shares that are
fractions by definition (truncation, aborted, clip fraction) use fixed bands.

One module per metric family: :mod:`.entropy` (collapse, flat, surge, entropy with the clip fraction),
:mod:`.length` (truncated responses and prompts, aborted samples, length against reward, length collapse) and
:mod:`.agent` (turns and tool calls). The words of every check are in ``behaviour.toml`` beside this package.
"""

from __future__ import annotations

from .._base import CheckFn
from .agent import tool_calls_at_cap, turns_collapse, turns_surge
from .entropy import entropy_clip_joint, entropy_collapse, entropy_flat, entropy_surge
from .length import aborted_high, length_reward_hacking, prompt_clip_high, response_clip_high, response_length_collapse

__all__ = ["FUNCTIONS"]

FUNCTIONS: dict[str, CheckFn] = {
    "entropy_collapse": entropy_collapse,
    "entropy_flat": entropy_flat,
    "entropy_surge": entropy_surge,
    "entropy_clip_joint": entropy_clip_joint,
    "response_clip_high": response_clip_high,
    "prompt_clip_high": prompt_clip_high,
    "aborted_high": aborted_high,
    "length_reward_hacking": length_reward_hacking,
    "response_length_collapse": response_length_collapse,
    "turns_surge": turns_surge,
    "turns_collapse": turns_collapse,
    "tool_calls_at_cap": tool_calls_at_cap,
}
