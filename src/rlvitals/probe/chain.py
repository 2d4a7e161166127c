"""A rollout as the probes see it: the question, the reasoning cut into steps, and the answer it reached.

The reasoning is the think segment when the response has one (``<think>…</think>`` or the tags given),
else the response up to the sentence that states the final answer. Steps are its lines, and within a line
its sentences (a full stop followed by a space; a decimal point is not a stop), so "3 + 4 = 7. Then 7 * 2 =
14." is two steps, as Lanham et al. 2023 cut a chain of thought into sentences.

>>> c = chain_of("Ann has 3 apples and gets 4.", "<think>3 + 4 = 7. So she has 7.</think> The answer is 7.")
>>> c.steps, c.answer
(('3 + 4 = 7.', 'So she has 7.'), '7')
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..rollout.answers import extract_answer
from ..rollout.tags import SegmentTags

__all__ = ["Chain", "chain_of", "split_steps"]

_TAGS = SegmentTags()
_STOP = re.compile(r"(?<=[.!?。！？])\s+(?=\S)")
#: where the answer sentence starts: a \boxed (or \fbox, which veRL's math reward also reads), the answer tag, a phrase
_ANSWER_SENTENCE = re.compile(r"(?:\\(?:boxed|fbox)(?![A-Za-z])|<answer>|the (?:final )?answer\s*(?:is|:|=)|####)",
                              re.IGNORECASE)


@dataclass(frozen=True)
class Chain:
    """One rollout for probing. ``answer`` is what the response itself concluded (extracted);
    ``target`` the ground truth where the dump has one; ``step`` the training step it was sampled at."""

    id: str
    question: str
    steps: tuple[str, ...]
    answer: str | None
    target: str | None = None
    step: int | None = None

    @property
    def reasoning(self) -> str:
        return " ".join(self.steps)

    def words(self) -> int:
        """The reasoning's length in whitespace words (what filler of matched length matches)."""
        return len(self.reasoning.split())


def split_steps(reasoning: str) -> tuple[str, ...]:
    """``reasoning`` cut into steps: lines, then sentences within a line; empty pieces dropped.

    >>> split_steps("First, 2.5 + 1 = 3.5. Next!\\n\\nDone")
    ('First, 2.5 + 1 = 3.5.', 'Next!', 'Done')
    """
    steps: list[str] = []
    for line in reasoning.splitlines():
        steps.extend(part.strip() for part in _STOP.split(line.strip()) if part.strip())
    return tuple(steps)


def _reasoning_of(response: str, tags: SegmentTags) -> str:
    start, end = tags.think
    if start in response:
        inner = response.split(start, 1)[1]
        return inner.split(end, 1)[0]
    cut = list(_ANSWER_SENTENCE.finditer(response))
    if not cut:
        return response
    head = response[:cut[-1].start()]
    # the answer sentence starts after the last stop before its marker ("So the answer is 7.")
    stops = list(re.finditer(r"[.!?\n]", head))
    return head[:stops[-1].end()] if stops else ""


def chain_of(question: str, response: str, *, id: str = "", target: str | None = None, step: int | None = None,
             tags: SegmentTags = _TAGS) -> Chain:
    """The chain of one rollout (see the module's text for where the reasoning ends)."""
    return Chain(id=id, question=question, steps=split_steps(_reasoning_of(response, tags)),
                 answer=extract_answer(response), target=target, step=step)
