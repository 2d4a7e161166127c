"""The tags that open and close the think, answer and tool-call segments of a response.

Kept apart from :mod:`.segments` (which counts them with numpy), so the command line and the probe's
chains take the tags without the analysis's imports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..words import Words


@dataclass(frozen=True)
class SegmentTags:
    """Opening and closing tags of the three segment kinds (defaults: R1-style XML tags)."""

    think: tuple[str, str] = ("<think>", "</think>")
    answer: tuple[str, str] = ("<answer>", "</answer>")
    tool_call: tuple[str, str] = ("<tool_call>", "</tool_call>")

    def __post_init__(self) -> None:
        for name in ("think", "answer", "tool_call"):
            pair = getattr(self, name)
            if len(pair) != 2 or not pair[0] or not pair[1] or pair[0] == pair[1]:
                raise ValueError(Words(f"SegmentTags.{name} must be two different non-empty tags, got {pair!r}",
                                       f"SegmentTags.{name} 必须是两个不同且非空的标签，给的是 {pair!r}"))
        tags = [t for name in ("think", "answer", "tool_call") for t in getattr(self, name)]
        if len(set(tags)) < len(tags):
            given = f"think={self.think!r}, answer={self.answer!r}, tool_call={self.tool_call!r}"
            raise ValueError(Words(f"SegmentTags: the think, answer and tool-call segments need tags of their own, "
                                   f"got {given}",
                                   f"SegmentTags：think、answer 和工具调用片段各自需要专用的标签，给的是 {given}"))


_TAG_NAME = re.compile(r"[A-Za-z_][\w.:-]*")


def parse_tag(text: str) -> tuple[str, str]:
    """A segment tag as the command line gives it: a name (``think`` → ``<think>``, ``</think>``) or
    the opening and closing tags separated by whitespace (``"[THINK] [/THINK]"``).

    >>> parse_tag("reasoning"), parse_tag("[THINK] [/THINK]")
    (('<reasoning>', '</reasoning>'), ('[THINK]', '[/THINK]'))
    """
    parts = text.split()
    if len(parts) == 1 and _TAG_NAME.fullmatch(parts[0]):
        return f"<{parts[0]}>", f"</{parts[0]}>"
    if len(parts) == 2 and parts[0] != parts[1]:
        return parts[0], parts[1]
    raise ValueError(Words(f"{text!r} is not a segment tag: give a tag name (think means <think>…</think>) or the "
                           "opening and closing tags separated by a space ('[THINK] [/THINK]')",
                           f"{text!r} 不是片段标签：请给出标签名（think 表示 <think>…</think>），"
                           "或用空格隔开的开始标签和结束标签（'[THINK] [/THINK]'）"))
