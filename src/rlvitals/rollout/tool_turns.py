"""Tool calls inside a response: whether their arguments parse, and what a tool's response does to the
reasoning that follows it (docs/reading-rules.md#tool-call-args, docs/reading-rules.md#after-tool-response).

- **Argument validity** (:func:`call_arguments`): a call is valid when its arguments parse as JSON — the call
  is a JSON object whose ``arguments`` (or ``parameters``) is an object or a string holding one (the Hermes /
  Qwen ``{"name": …, "arguments": {…}}`` and OpenAI's string form), an object with neither key (the arguments
  themselves), or ``name({…})``; with a schema for the tool's name (a JSON-Schema subset: ``required``,
  ``properties`` with ``type`` and ``enum``, ``additionalProperties: false``) they must also fit it.
- **The reasoning around a tool response** (:func:`tool_turns`): a response is cut into its free text, its
  tool-call segments and its ``<tool_response>…</tool_response>`` segments (multi-turn dumps decode the
  whole conversation after the prompt: veRL's SGLang rollouts). The reasoning of a stretch of free text is its
  think segments when it has any, else the text without the chat's bare role lines (``user``,
  ``assistant``). For every run of tool responses: the words of the reasoning before the call that asked for
  it, of the reasoning right after it, and the share of the response's distinct word tokens (lower-cased
  ``\\w+``) that the reasoning after it uses — whether the next reasoning reads the tool's output.

Streaming: ``update(state | None, chunk, tags=, schemas=)``, ``merge(a, b)``, ``compute(state)``. The state
keeps integer counts and sums and each pair's overlap (averaged with ``math.fsum``), so a sharded result equals
the unsharded one bit for bit.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from ..words import Words
from .schema import RESPONSE, STEP, TOOL_CALLS
from .segments import segments
from .tags import SegmentTags

__all__ = ["TOOL_RESPONSE", "ToolTurnState", "call_arguments", "compute", "merge", "tool_turns", "tool_turns_table",
           "update"]

#: the tags of a tool's response in the decoded conversation (Hermes / Qwen chat templates, veRL's SGLang tools)
TOOL_RESPONSE = ("<tool_response>", "</tool_response>")
#: a line holding only a chat role: what a chat template decoded without special tokens leaves between turns
_ROLE_LINE = re.compile(r"(?m)^[ \t]*(?:assistant|user|tool|system|ipython|observation)[ \t]*$")
_WORD = re.compile(r"\w+")
_CALL_FORM = re.compile(r"\s*[A-Za-z_][\w.\-]*\s*\((.*)\)\s*", re.DOTALL)
_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "number": (int, float),
                                       "boolean": (bool,), "object": (dict,), "array": (list,), "null": (type(None),)}

Schemas = Mapping[str, Mapping[str, Any]]


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def call_arguments(call: str) -> tuple[str | None, dict[str, Any] | None]:
    """``(tool name or None, arguments)`` of one tool call; the arguments are None when they do not parse
    as a JSON object.

    >>> call_arguments('{"name": "search", "arguments": {"query": "rl"}}')
    ('search', {'query': 'rl'})
    >>> call_arguments('{"name": "search", "arguments": "{\\\\"query\\\\": \\\\"rl\\\\"}"}')
    ('search', {'query': 'rl'})
    >>> call_arguments('search({"query": "rl"})'), call_arguments('{"name": "search", "arguments": {"query": }}')
    ((None, {'query': 'rl'}), (None, None))
    """
    obj = _loads(call)
    if obj is None:
        m = _CALL_FORM.fullmatch(call)
        obj = _loads(m[1]) if m else None
        return None, obj if isinstance(obj, dict) else None
    if not isinstance(obj, dict):
        return None, None
    name = obj.get("name") if isinstance(obj.get("name"), str) else None
    key = "arguments" if "arguments" in obj else "parameters" if "parameters" in obj else None
    if key is None:
        return name, obj if name is None else {}
    args = obj[key]
    if isinstance(args, str):
        args = _loads(args)
    return name, args if isinstance(args, dict) else None


def fits(args: Mapping[str, Any], schema: Mapping[str, Any]) -> bool:
    """Whether ``args`` fit a JSON-Schema object (``required``, ``properties`` with ``type`` and ``enum``,
    ``additionalProperties: false``; other keywords are not judged).

    >>> s = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    >>> fits({"answer": "15"}, s), fits({"answer": 15}, s), fits({}, s)
    (True, False, False)
    """
    props = schema.get("properties") or {}
    if any(k not in args for k in schema.get("required") or ()):
        return False
    if schema.get("additionalProperties") is False and any(k not in props for k in args):
        return False
    for k, v in args.items():
        spec = props.get(k)
        if not isinstance(spec, Mapping):
            continue
        kinds = spec.get("type")
        kinds = [kinds] if isinstance(kinds, str) else list(kinds or [])
        known = [_TYPES[t] for t in kinds if t in _TYPES]
        bool_as_number = isinstance(v, bool) and "boolean" not in kinds
        if known and (bool_as_number or not any(isinstance(v, t) for t in known)):
            return False
        if spec.get("enum") and v not in spec["enum"]:
            return False
    return True


def valid_call(call: str, schemas: Schemas | None = None) -> bool:
    """Whether one call's arguments parse as a JSON object (and fit ``schemas[name]`` when there is one)."""
    name, args = call_arguments(call)
    if args is None:
        return False
    schema = (schemas or {}).get(name or "")
    return schema is None or fits(args, schema)


def _reasoning(text: str, tags: SegmentTags) -> str:
    think = segments(text, tags.think)
    return " ".join(think) if think else _ROLE_LINE.sub(" ", text)


def tool_turns(text: str, tags: SegmentTags = SegmentTags()) -> list[tuple[int, int, float]]:
    """One ``(words before, words after, overlap)`` per run of tool responses in ``text``: the reasoning
    before the call that asked for it, the reasoning right after it (0 when the response ends there), and the
    share of the responses' distinct word tokens the reasoning after it holds (NaN for a response with no word).

    >>> tool_turns('<think>add them</think><tool_call>{"name": "calc"}</tool_call>user\\n'
    ...            '<tool_response>result 15</tool_response>assistant\\n<think>so 15 it is</think>')
    [(2, 4, 0.5)]
    """
    (c0, c1), (r0, r1) = tags.tool_call, TOOL_RESPONSE
    pattern = re.compile(f"{re.escape(c0)}(.*?){re.escape(c1)}|{re.escape(r0)}(.*?){re.escape(r1)}", re.DOTALL)
    pieces: list[tuple[str, str]] = []
    at = 0
    for m in pattern.finditer(text):
        pieces.append(("text", _reasoning(text[at:m.start()], tags)))
        pieces.append(("call", m[1]) if m[1] is not None else ("resp", m[2]))
        at = m.end()
    pieces.append(("text", _reasoning(text[at:], tags)))
    # blank text between two segments is no reasoning; consecutive segments of a kind are one turn
    kept: list[tuple[str, str]] = []
    for kind, body in pieces:
        if kind == "text" and not body.split():
            continue
        if kept and kind != "text" and kept[-1][0] == kind:
            kept[-1] = (kind, kept[-1][1] + "\n" + body)
        else:
            kept.append((kind, body))
    out = []
    for j, (kind, body) in enumerate(kept):
        if kind != "resp":
            continue
        k = j - 2 if j >= 1 and kept[j - 1][0] == "call" else j - 1
        before = kept[k][1] if k >= 0 and kept[k][0] == "text" else ""
        after = kept[j + 1][1] if j + 1 < len(kept) and kept[j + 1][0] == "text" else ""
        said = set(_WORD.findall(body.lower()))
        used = set(_WORD.findall(after.lower()))
        out.append((len(before.split()), len(after.split()), len(said & used) / len(said) if said else math.nan))
    return out


@dataclass(frozen=True)
class StepTurns:
    """One step's partial state: call and valid-call counts, pair count and word sums, every pair's overlap."""

    calls: int = 0
    valid: int = 0
    pairs: int = 0
    before: int = 0
    after: int = 0
    overlap: np.ndarray = field(default_factory=lambda: np.empty(0))

    def __add__(self, o: StepTurns) -> StepTurns:
        return StepTurns(self.calls + o.calls, self.valid + o.valid, self.pairs + o.pairs, self.before + o.before,
                         self.after + o.after, np.concatenate([self.overlap, o.overlap]))


@dataclass(frozen=True)
class ToolTurnState:
    """Mergeable partial state of :func:`tool_turns_table`: the settings and one :class:`StepTurns` per step."""

    tags: SegmentTags = SegmentTags()
    schemas: tuple[tuple[str, str], ...] = ()
    steps: dict[int, StepTurns] = field(default_factory=dict)


def _frozen(schemas: Schemas | None) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, json.dumps(v, sort_keys=True)) for k, v in (schemas or {}).items()))


def update(state: ToolTurnState | None, chunk: pl.DataFrame, *, tags: SegmentTags | None = None,
           schemas: Schemas | None = None) -> ToolTurnState:
    """Fold a chunk of rollouts into ``state`` (None: a new state with the given options). Tool calls come
    from the ``tool_calls`` column when present, else from the tool-call segments of ``response``."""
    frozen = _frozen(schemas)
    if state is None:
        state = ToolTurnState(tags or SegmentTags(), frozen)
    elif not (tags in (None, state.tags) and (schemas is None or frozen == state.schemas)):
        raise ValueError("update: tags or schemas differ from the state's settings; build a new state instead")
    missing = [c for c in (STEP, RESPONSE) if c not in chunk.columns]
    if missing:
        raise ValueError(Words(f"tool-call metrics need the rollout column(s) {missing}; the table has "
                               f"{chunk.columns}",
                               f"工具调用指标需要 rollout 列 {missing}；表中只有这些列：{chunk.columns}"))
    given = {k: json.loads(v) for k, v in state.schemas}
    lists = chunk[TOOL_CALLS].to_list() if TOOL_CALLS in chunk.columns else [None] * chunk.height
    steps: dict[int, StepTurns] = {}
    for step, text, calls in zip(chunk[STEP].to_list(), chunk[RESPONSE].fill_null("").to_list(), lists, strict=True):
        calls = segments(text, state.tags.tool_call) if calls is None else calls
        turns = tool_turns(text, state.tags)
        overlap = np.array([o for *_, o in turns if not math.isnan(o)], float)
        acc = StepTurns(len(calls), sum(valid_call(c, given) for c in calls), len(turns),
                        sum(b for b, _, _ in turns), sum(a for _, a, _ in turns), overlap)
        steps[int(step)] = steps[int(step)] + acc if int(step) in steps else acc
    return merge(state, ToolTurnState(state.tags, state.schemas, steps))


def merge(a: ToolTurnState, b: ToolTurnState) -> ToolTurnState:
    """Combine two states built from disjoint sets of rollouts."""
    if (a.tags, a.schemas) != (b.tags, b.schemas):
        raise ValueError("cannot merge tool-turn states built with different tags or schemas")
    steps = dict(a.steps)
    for step, acc in b.steps.items():
        steps[step] = steps[step] + acc if step in steps else acc
    return ToolTurnState(a.tags, a.schemas, steps)


KEYS = ("rollout/tool_calls/valid_args", "rollout/tool_response/think_before", "rollout/tool_response/think_after",
        "rollout/tool_response/overlap")


def _row(step: int, acc: StepTurns) -> dict[str, float | int | None]:
    return {STEP: step, KEYS[0]: acc.valid / acc.calls if acc.calls else None,
            KEYS[1]: acc.before / acc.pairs if acc.pairs else None,
            KEYS[2]: acc.after / acc.pairs if acc.pairs else None,
            KEYS[3]: math.fsum(acc.overlap.tolist()) / acc.overlap.size if acc.overlap.size else None}


def compute(state: ToolTurnState) -> pl.DataFrame:
    """Per-step frame of :func:`tool_turns_table` from a state."""
    rows = [_row(s, state.steps[s]) for s in sorted(state.steps)]
    schema = {STEP: pl.Int64(), **{k: pl.Float64() for k in KEYS}}
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)


def tool_turns_table(df: pl.DataFrame, tags: SegmentTags = SegmentTags(),
                     schemas: Schemas | None = None) -> pl.DataFrame:
    """Per-step ``rollout/tool_calls/valid_args`` (share of the step's tool calls whose arguments parse as a
    JSON object and fit ``schemas[tool name]`` when given), and over the runs of tool responses
    ``rollout/tool_response/think_before`` and ``/think_after`` (mean words of the reasoning before the call and
    after the response) and ``rollout/tool_response/overlap`` (mean share of the response's word tokens the
    reasoning after it uses). ``compute(update(None, df, tags=tags, schemas=schemas))``.

    >>> df = pl.DataFrame({"step": [0, 0], "response": ['<tool_call>{"name": "f", "arguments": {}}</tool_call>',
    ...                                                 '<tool_call>f(x=1)</tool_call>']})
    >>> tool_turns_table(df)["rollout/tool_calls/valid_args"].to_list()
    [0.5]
    """
    return compute(update(None, df, tags=tags, schemas=schemas))
