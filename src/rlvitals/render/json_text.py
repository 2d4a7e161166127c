"""The JSON rlvitals writes for people and programs (``--json``, the report's embedded data, the dashboard's
API): NumPy values as numbers, NaN as null, and names from the file system that are not UTF-8 shown escaped.

Python keeps a file name's bytes that are not UTF-8 as lone surrogates (``run\\udcff.jsonl`` for the bytes
``run\\xff.jsonl``); JSON cannot hold them, and one such name in a folder made every ``--json`` output and every
report exit 3. Such a string is written as :func:`shown` gives it, ``run\\xff.jsonl``, as ``ls -b`` would.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["json_dumps", "shown"]

_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


def json_dumps(obj: Any) -> bytes:
    """``obj`` as JSON; its strings that hold bytes that are not UTF-8 escaped (:func:`shown`).

    Example:
        >>> json_dumps({"run": "run\\udcff.jsonl", "steps": 3})
        b'{"run":"run\\\\\\\\xff.jsonl","steps":3}'
    """
    try:
        return orjson.dumps(obj, option=_OPTIONS)
    except TypeError as exc:  # only then is every string looked at: a name that is not UTF-8 is rare
        if "surrogates" not in str(exc):
            raise
        return orjson.dumps(_escaped(obj), option=_OPTIONS)


def shown(text: str) -> str:
    r"""``text`` as it can be shown and written: each byte that is not UTF-8 as ``\xNN`` (any other lone
    surrogate as ``\udNNN``); a valid string unchanged.

    Example:
        >>> shown("run\udcff.jsonl"), shown("跑.log")
        ('run\\xff.jsonl', '跑.log')
    """
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")


def _escaped(obj: Any) -> Any:
    if isinstance(obj, str):
        return shown(obj)
    if isinstance(obj, dict):
        return {shown(k) if isinstance(k, str) else k: _escaped(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_escaped(v) for v in obj]
    return obj
