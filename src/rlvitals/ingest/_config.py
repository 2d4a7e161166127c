"""A run's config: Hydra's ``overrides.yaml`` beside a console log, and a tracker's nested config dotted.

Config a console log does not print but keeps beside it: Hydra's ``overrides.yaml``.

Hydra writes the command-line overrides of every job to ``<output dir>/.hydra/overrides.yaml``
(one ``- key=value`` per line); veRL runs under Hydra, and a W&B run folder of a veRL run often
sits next to it. When a console log prints no config (a W&B ``output.log`` starts after the
dump; a run that died before it printed one), those overrides are the only record of what the
run was asked to do — the algorithm (``algorithm.adv_estimator=grpo``) among them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..words import Words
from .record import SourceMeta

OVERRIDES = "overrides.yaml"
_ITEM = re.compile(r"^- +(?P<quote>['\"]?)(?P<body>.*?)(?P=quote)\s*$")
_PAIR = re.compile(r"\+{0,2}([A-Za-z_][\w-]*(?:\.[\w-]+)*)=(.*)", re.S)
#: an overrides file is a few KiB; anything larger is not one
MAX_BYTES = 1 << 20


def hydra_scalar(text: str) -> Any:
    """A Hydra override's scalar value: a bool, None, an int, a float, else the text.

    >>> hydra_scalar("1e-6"), hydra_scalar("True"), hydra_scalar("null"), hydra_scalar("grpo")
    (1e-06, True, None, 'grpo')
    """
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("null", "none", "~"):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_overrides(text: str) -> dict[str, Any]:
    """``key -> value`` of a Hydra ``overrides.yaml`` (lines ``- key=value``; others are ignored).

    Example:
        >>> parse_overrides("- algorithm.adv_estimator=grpo\\n- +trainer.n_gpus=8\\n- 'data.x=[1, 2]'\\n")
        {'algorithm.adv_estimator': 'grpo', 'trainer.n_gpus': 8, 'data.x': '[1, 2]'}
    """
    out: dict[str, Any] = {}
    for line in text.splitlines():
        item = _ITEM.match(line)
        pair = _PAIR.fullmatch(item["body"]) if item else None
        if pair is not None:
            out[pair.group(1)] = hydra_scalar(pair.group(2).strip())
    return out


def sibling_overrides(log: Path, meta: SourceMeta) -> dict[str, Any]:
    """The overrides in an ``overrides.yaml`` beside ``log`` (or in ``.hydra/`` beside it), with a
    note naming the file; empty when there is none or it cannot be read."""
    for candidate in (log.parent / OVERRIDES, log.parent / ".hydra" / OVERRIDES):
        try:
            if not candidate.is_file() or candidate.stat().st_size > MAX_BYTES:
                continue
            text = candidate.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            meta.notes.append(Words(
                f"{candidate}: could not be read ({exc.strerror or exc}); its overrides were ignored",
                f"{candidate}：读不出来（{exc.strerror or exc}）；其中的覆盖项没有采用"))
            continue
        found = parse_overrides(text)
        if found:
            meta.notes.append(Words(
                f"{candidate}: {len(found)} Hydra overrides beside the log were read as its config",
                f"{candidate}：日志旁的 {len(found)} 个 Hydra 覆盖项已作为它的配置读入"))
            return found
    return {}


def dotted(key: str, value: Any, out: dict[str, Any]) -> None:
    """A tracker's config entry into ``out`` with dots between its keys (``{"a": {"b": 1}}`` is ``a.b``); an
    empty dict stays a value.

    >>> out = {}; dotted("algorithm", {"adv_estimator": "grpo", "kl": {}}, out); out
    {'algorithm.adv_estimator': 'grpo', 'algorithm.kl': {}}
    """
    if isinstance(value, dict) and value:
        for k, v in value.items():
            dotted(f"{key}.{k}", v, out)
    else:
        out[key] = value
