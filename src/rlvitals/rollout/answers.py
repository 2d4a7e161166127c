"""The final answer a response states, and whether two answers are the same.

One extractor for everything that reads answers out of text: the bundled word problems' reward, the
faithfulness probes (``rlvitals probe``) and, where a rollout dump has no answer column, the rollout
readers (:func:`default_answer`). Pure Python; ``math-verify`` (the ``rlvitals[probe]`` extra) decides
equivalence of mathematical answers where it is installed, and exact canonical text decides otherwise.

A ``\\boxed{…}`` answer is read the way veRL's math reward reads it (``verl/utils/reward_score/math_reward.py``,
described in ``docs/rollouts.md``): the last ``\\boxed`` of the text decides, its argument runs to the
brace that balances the opening one (so ``\\boxed{\\frac{1}{2}}`` is ``\\frac{1}{2}``), ``\\boxed 5`` (no
brace) runs to the next ``$`` or line end, and ``\\fbox{…}`` counts only in a text with no ``\\boxed``.

>>> extract_answer("4 + 3 = 7. The answer is 7.")
'7'
>>> extract_answer("so x = \\\\boxed{\\\\dfrac{1}{2}}"), extract_answer("\\\\boxed{\\\\text{(A)}}")
('\\\\frac{1}{2}', '(A)')
>>> same_answer("1,200", "1200.0"), same_answer("7", "8"), same_answer(None, "7")
(True, False, False)
"""

from __future__ import annotations

import importlib.util
import re
from functools import cache, lru_cache
from string import ascii_letters
from typing import Any

__all__ = ["default_answer", "extract_answer", "forced_answer", "last_boxed", "same_answer"]

_NUMBER = re.compile(r"(?<![\w.])[-−]?\d+(?:,\d{3})*(?:\.\d+)?")
_TAGGED = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_PHRASE = re.compile(r"answer\s*(?:is|:|=)|####", re.IGNORECASE)
_HASHES = re.compile(r"####\s*([-−]?[\d.,]*\d)")
_SENTENCE_END = re.compile(r"\.(?:\s|$)|\n")
#: LaTeX that wraps an answer's text without changing it (\text{(A)} is "(A)")
_WRAPPERS = re.compile(r"\\(?:text|textbf|textrm|mathrm|mathbf|mbox|operatorname)\s*\{")
#: LaTeX that only spaces, sizes or decorates: dropped before answers are compared
_NOISE = re.compile(r"\\[,!;:> ]|\\(?:left|right|displaystyle)(?![A-Za-z])|\^\s*\{?\\circ\}?|\\?[%$]|~")
#: what a number in an answer may not touch for the answer to be that number ("2x", "x^2", "\pi")
_MATHS = re.compile(r"[\\{}^_+*/=()\[\]|<>]|\d")


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


def _argument(text: str, at: int) -> str | None:
    """The brace-balanced argument of a command whose name ends at ``at`` (whitespace may come
    first), or for a command followed by a space and no brace, the text up to the next ``$`` or line
    end (veRL's ``\boxed 5``). None when the argument never closes (a response cut mid-answer)."""
    i = at
    while i < len(text) and text[i] in " \t":
        i += 1
    if i == len(text) or text[i] != "{":
        rest = text[at:i] and text[i:].split("$", 1)[0].split("\n", 1)[0]
        return rest.strip() or None
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1 : j]
    return None


def last_boxed(text: str | None) -> str | None:
    """The argument of the last ``\\boxed`` of ``text`` (of the last ``\\fbox`` when it has no
    ``\\boxed``), nested braces included; None when there is none or it never closes. Whatever the
    input, it returns and never raises.

    >>> last_boxed("\\\\boxed{1} then \\\\boxed{x^{2}+1}"), last_boxed("\\\\boxed{\\\\frac{1")
    ('x^{2}+1', None)
    >>> last_boxed("\\\\fbox{3}"), last_boxed("no box")
    ('3', None)
    """
    if not text:
        return None
    for command in ("\\boxed", "\\fbox"):
        end = len(text)
        # searched from the end: the last one decides, and a long response is not scanned from its start
        while (i := text.rfind(command, 0, end)) >= 0:
            after = i + len(command)
            if after == len(text) or text[after] not in ascii_letters:  # \boxedfoo is another command
                return _argument(text, after)
            end = i
    return None


def _unwrap(text: str) -> str:
    """``text`` with every wrapper command (``\\text{…}``) replaced by its argument."""
    while (m := _WRAPPERS.search(text)) is not None:
        inner = _argument(text, m.end() - 1)
        if inner is None:  # unbalanced: drop the command word, keep the rest as it is
            return text[: m.start()] + text[m.end() - 1 :]
        text = text[: m.start()] + inner + text[m.end() + len(inner) + 1 :]
    return text


def _canonical(part: str) -> str | None:
    """A stated answer as canonical text: the number it states (``x = 5``, ``$1,200``, ``5 eggs``
    are 5 and 1200), else the expression with spacing, sizing and wrappers removed
    (``\\dfrac{1}{2}`` is ``\\frac{1}{2}``, ``\\text{(A)}`` is ``(A)``). None when nothing is left."""
    text = _NOISE.sub(" ", _unwrap(part)).replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    if text.count("=") == 1:  # "x = 5": the value; a chain "a = b = 5" or a pair "x=1, y=2" is kept whole
        text = text.split("=")[1]
    numbers = list(_NUMBER.finditer(text))
    if len(numbers) == 1:
        m = numbers[0]
        around = text[: m.start()] + " " + text[m.end() :]
        touching = text[m.end() : m.end() + 1].isalpha() or text[m.start() - 1 : m.start()].isalpha()
        if not _MATHS.search(around) and not touching:
            return _number(m.group())
    compact = "".join(text.split())
    return compact or None


def default_answer(text: str | None) -> str | None:
    """The final answer as veRL's default rewards read it, canonical (see :func:`_canonical`): the
    last ``\\boxed{…}`` (its math reward; :func:`last_boxed`), else the number after the last
    ``####`` (its GSM8K reward). None when the response states neither: this is what the rollout
    readers put in the ``answer`` column of a dump that has none (for maj@k and self-consistency).

    >>> default_answer("so \\\\boxed{x^{2} + 1}."), default_answer("#### 1,234"), default_answer("I think 5")
    ('x^{2}+1', '1234', None)
    """
    boxed = last_boxed(text)
    if boxed is not None:
        return _canonical(boxed)
    found = _HASHES.findall(text or "")
    return _canonical(found[-1]) if found else None


def extract_answer(text: str | None, *, last_number: bool = False) -> str | None:
    """The final answer of a response as canonical text, or None when it states none.

    Looked for in this order, the last occurrence of each winning: ``\\boxed{…}`` (read as veRL
    reads it, :func:`last_boxed`), ``<answer>…</answer>``, then "answer is" / "answer:" / ``####``
    followed by the rest of that sentence. A boxed or tagged answer is the number it states (``x = 5``
    is 5) or, when it states an expression, that expression (``\\frac{1}{2}``, ``(A)``); after a
    phrase the last number is the answer ("The answer is 3 + 4 = 7." gives 7). A response with none
    of these markers has no answer, even if it holds numbers (a model that does not state its answer
    gets no credit for one), unless ``last_number`` asks for the last number of the whole text as a
    last resort.

    >>> extract_answer("so 3 * 4 = 12 eggs.\\n#### 12")
    '12'
    >>> extract_answer("\\\\boxed{1,200}") , extract_answer("The answer is: -3.") , extract_answer("I think 5")
    ('1200', '-3', None)
    >>> extract_answer("I think 5", last_number=True)
    '5'
    """
    if not text:
        return None
    boxed = last_boxed(text)
    if boxed is not None and (found := _canonical(boxed)) is not None:
        return found
    tagged = _TAGGED.findall(text)
    if tagged and (found := _canonical(tagged[-1])) is not None:
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
    boxed = last_boxed(continuation)
    if boxed is not None and (found := _canonical(boxed)) is not None:
        return found
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
