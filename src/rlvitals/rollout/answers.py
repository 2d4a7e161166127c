"""The final answer a response states, and whether two answers are the same.

One extractor for everything that reads answers out of text: the bundled word problems' reward, the
faithfulness probes (``rlvitals probe``) and, where a rollout dump has no answer column, the rollout
analysis. Pure Python; ``math-verify`` (the ``rlvitals[probe]`` extra) decides equivalence of
mathematical answers where it is installed, and exact canonical text decides otherwise.

>>> extract_answer("4 + 3 = 7. The answer is 7.")
'7'
>>> same_answer("1,200", "1200.0"), same_answer("7", "8"), same_answer(None, "7")
(True, False, False)
"""

from __future__ import annotations

import importlib.util
import re
from functools import cache, lru_cache
from typing import Any

__all__ = ["extract_answer", "forced_answer", "same_answer"]

_NUMBER = re.compile(r"(?<![\w.])[-−]?\d+(?:,\d{3})*(?:\.\d+)?")
_BOXED = re.compile(r"\\boxed\s*\{([^{}]*)\}")
_TAGGED = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_PHRASE = re.compile(r"answer\s*(?:is|:|=)|####", re.IGNORECASE)
_SENTENCE_END = re.compile(r"\.(?:\s|$)|\n")


def _number(text: str) -> str:
    """A number as canonical text: no thousands commas, no leading ``+``/zeros, ``7.0`` -> ``7``."""
    clean = text.replace(",", "").replace("−", "-")
    value = float(clean)
    if value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return clean


def _last_number(part: str) -> str | None:
    found = _NUMBER.findall(part)
    return _number(found[-1]) if found else None


def extract_answer(text: str | None, *, last_number: bool = False) -> str | None:
    """The final answer of a response as canonical number text, or None when it states none.

    Looked for in this order, the last occurrence of each winning: ``\\boxed{…}``,
    ``<answer>…</answer>``, then "answer is" / "answer:" / ``####`` followed by the rest of
    that sentence. Within the part found, the last number is the answer ("The answer is
    3 + 4 = 7." gives 7). A response with none of these markers has no answer, even if it holds
    numbers (a model that does not state its answer gets no credit for one), unless
    ``last_number`` asks for the last number of the whole text as a last resort.

    >>> extract_answer("so 3 * 4 = 12 eggs.\\n#### 12")
    '12'
    >>> extract_answer("\\\\boxed{1,200}") , extract_answer("The answer is: -3.") , extract_answer("I think 5")
    ('1200', '-3', None)
    >>> extract_answer("I think 5", last_number=True)
    '5'
    """
    if not text:
        return None
    for pattern in (_BOXED, _TAGGED):
        parts = pattern.findall(text)
        if parts:
            found = _last_number(parts[-1])
            if found is not None:
                return found
    for mark in reversed(list(_PHRASE.finditer(text))):
        rest = text[mark.end():]
        end = _SENTENCE_END.search(rest.lstrip())
        offset = len(rest) - len(rest.lstrip())
        part = rest if end is None else rest[:offset + end.start()]
        found = _last_number(part)
        if found is not None:
            return found
    return _last_number(text) if last_number else None


def forced_answer(continuation: str | None) -> str | None:
    """The answer a model gave when its text was cut and it was made to answer: ``continuation`` is what
    it wrote after a prompt ending in "The answer is", so the answer is in its first sentence (a
    ``\\boxed{}`` anywhere in it wins, as in :func:`extract_answer`).

    >>> forced_answer(" 7.\\n\\nThe answer is 9"), forced_answer(" \\\\boxed{12}"), forced_answer(" unknown.")
    ('7', '12', None)
    """
    if not continuation:
        return None
    boxed = _BOXED.findall(continuation)
    if boxed and _last_number(boxed[-1]) is not None:
        return _last_number(boxed[-1])
    first = _SENTENCE_END.search(continuation.lstrip())
    offset = len(continuation) - len(continuation.lstrip())
    return _last_number(continuation if first is None else continuation[:offset + first.start()])


@cache
def _math_verify() -> Any:
    if importlib.util.find_spec("math_verify") is None:
        return None
    import math_verify  # type: ignore[import-untyped]

    return math_verify


def same_answer(a: str | None, b: str | None) -> bool:
    """Whether two extracted answers are the same: equal canonical text, equal numbers, or (with
    ``math-verify`` installed) mathematically equivalent expressions. A missing answer equals nothing.
    Two plain numbers are compared as numbers only (no parser is needed to tell 7 from 8)."""
    if a is None or b is None:
        return False
    return _same(a.strip(), b.strip())


@lru_cache(maxsize=65536)
def _same(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        return _number(a) == _number(b)
    except ValueError:
        pass
    verifier = _math_verify()
    if verifier is None:
        return False
    try:
        return bool(verifier.verify(verifier.parse(f"${a}$"), verifier.parse(f"${b}$")))
    except Exception:  # noqa: BLE001 — a parse failure of a third-party parser means "not shown equal"
        return False
