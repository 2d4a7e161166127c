"""The tools a policy was offered, as JSON schemas of their arguments (``--tool-schema FILE``), so that a tool
call's arguments are judged against them (docs/reading-rules.md#tool-call-args): a call whose arguments parse
but lack a required key, or give a string where the schema asks for an integer, fails in the environment too.

The file holds the tool list in any of the forms the frameworks use:

- OpenAI's and veRL's ``tools``: a JSON list of ``{"type": "function", "function": {"name": …,
  "parameters": {…}}}`` (or of ``{"name": …, "parameters": {…}}``), or an object with that list under ``tools``;
- the block a Hermes / Qwen chat template writes between ``<tools>`` and ``</tools>``: one such tool per line
  (the prompt's own text may be given: the block is found in it);
- a JSON object mapping each tool's name to its parameters' schema.

>>> tool_schemas_from_text('[{"type": "function", "function": {"name": "calc", '
...                        '"parameters": {"type": "object", "required": ["x"]}}}]', "tools.json")
{'calc': {'type': 'object', 'required': ['x']}}
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..words import Words

__all__ = ["read_tool_schemas", "tool_schemas_from_text"]

_BLOCK = re.compile(r"<tools>\s*\n(.*?)\n\s*</tools>", re.DOTALL)


def _bad(where: str, en: str, zh: str) -> InputError:
    return InputError(Words(f"{where}: {en}", f"{where}：{zh}"))


def _tool(item: Any, where: str) -> tuple[str, dict[str, Any]]:
    fn = item.get("function", item) if isinstance(item, Mapping) else None
    name = fn.get("name") if isinstance(fn, Mapping) else None
    params = fn.get("parameters", {"type": "object"}) if isinstance(fn, Mapping) else None
    if not isinstance(name, str) or not name or not isinstance(params, Mapping):
        shown = json.dumps(item)[:120]
        raise _bad(where, f"not a tool (a name and the JSON schema of its parameters): {shown}",
                   f"不是工具定义（应有名称和参数的 JSON schema）：{shown}")
    return name, dict(params)


def _from_list(items: list[Any], where: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for i, item in enumerate(items, 1):
        name, params = _tool(item, f"{where}: tool {i}")
        out[name] = params
    return out


def _lines(text: str, where: str, first_line: int) -> dict[str, dict[str, Any]]:
    items = []
    for n, line in enumerate(text.splitlines(), first_line):
        if line.strip():
            try:
                items.append(json.loads(line))
            except ValueError as exc:
                raise _bad(f"{where}: line {n}", f"not JSON ({exc})", f"不是 JSON（{exc}）") from None
    return _from_list(items, where)


def tool_schemas_from_text(text: str, where: str) -> dict[str, dict[str, Any]]:
    """The tools ``text`` describes (the forms above), name → the JSON schema of the arguments; an
    :class:`~rlvitals.errors.InputError` naming ``where`` (and the line) when it describes none."""
    block = _BLOCK.search(text)
    if block:
        return _lines(block[1], where, text.count("\n", 0, block.start(1)) + 1)
    try:
        doc = json.loads(text)
    except ValueError as exc:
        if text.lstrip().startswith("{") and "\n" in text.strip():
            return _lines(text, where, 1)  # one tool per line
        line = getattr(exc, "lineno", 1)
        raise _bad(f"{where}: line {line}", f"not JSON, nor a <tools> block ({exc})",
                   f"既不是 JSON，也不是 <tools> 块（{exc}）") from None
    if isinstance(doc, Mapping) and isinstance(doc.get("tools"), list):
        doc = doc["tools"]
    if isinstance(doc, list):
        found = _from_list(doc, where)
    elif isinstance(doc, Mapping) and doc and all(isinstance(v, Mapping) for v in doc.values()):
        found = {str(k): dict(v) for k, v in doc.items()}
    else:
        found = {}
    if not found:
        raise _bad(where, "holds no tool: expected a list of tools ({\"type\": \"function\", \"function\": {\"name\": "
                   "…, \"parameters\": {…}}}), a <tools> block, or an object mapping each tool's name to its "
                   "parameters' schema",
                   "里面没有工具：应为工具列表（{\"type\": \"function\", \"function\": {\"name\": …, \"parameters\": "
                   "{…}}}）、<tools> 块，或从工具名映射到其参数 schema 的对象")
    return found


def read_tool_schemas(path: str | Path) -> dict[str, dict[str, Any]]:
    """The tools of the file at ``path`` (:func:`tool_schemas_from_text`); a missing or unreadable file is an
    :class:`~rlvitals.errors.InputError` naming it."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise _bad(str(path), f"cannot read the tool schema ({reason})", f"无法读取工具 schema（{reason}）") from None
    return tool_schemas_from_text(text, str(path))
