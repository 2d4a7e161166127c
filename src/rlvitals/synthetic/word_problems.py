"""Arithmetic word problems with exact integer answers, and the answer extractor that scores them.

The answer extractor is the one the rollout analysis and the probes share
(:func:`rlvitals.rollout.answers.extract_answer`). Two families, each its own ``source``:
``arith/one_step`` (one addition, subtraction or multiplication; the in-distribution split
``train``) and ``arith/two_step`` (two operations chained; a harder, out-of-distribution split
``ood``), so rollout metrics can be compared between what a policy is trained on and what it is
not. Names, objects and numbers vary.

Problem ``i`` of a seed and source is drawn from its own generator (seeded with the text
``"{seed}/{source}/{i}"``, which ``random.Random`` hashes the same way on every platform), so
a problem does not change when more problems are asked for, and a seed always gives the same
list. Numbers are small (mostly one digit): the 135M model used to sample rollouts gets
some of these right, so rewards are mixed. Pure Python, no model imports.

A problem knows its intermediate ``states``: the value after each operation, in the order the
operations are done (``a + b × c``: the product, then the sum, which is the answer).
:func:`known_states` reads them back from a question's text, so a rollout's prompt is
recognised as a bundled problem whatever seed made it.

>>> [p.question for p in make_problems(1, seed=0)] == [p.question for p in make_problems(1, seed=0)]
True
>>> extract_answer("4 + 3 = 7. The answer is 7.")
'7'
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..rollout.answers import extract_answer
from ..words import Words

__all__ = ["SOURCES", "SPLITS", "Problem", "extract_answer", "known_states", "make_problems"]

ONE_STEP = "arith/one_step"
TWO_STEP = "arith/two_step"
SOURCES = (ONE_STEP, TWO_STEP)
SPLITS = {ONE_STEP: "train", TWO_STEP: "ood"}

_PEOPLE = (("Ann", "She"), ("Tom", "He"), ("Mia", "She"), ("Sam", "He"), ("Lena", "She"), ("Omar", "He"),
           ("Priya", "She"), ("Jack", "He"), ("Yuki", "She"), ("Leo", "He"))
_THINGS = ("apples", "pencils", "marbles", "stickers", "cookies", "books", "coins", "shells", "cards", "stamps")


@dataclass(frozen=True)
class Problem:
    """One word problem: its text, exact answer, family (``source``), split, template and ``states``
    (the value after each operation, the last one the answer; empty for a problem made by hand without them).

    >>> Problem("p0", "1 + 1?", 2, ONE_STEP, "train", "add").target
    '2'
    >>> p = make_problems(2, seed=0, sources=SOURCES)[1]
    >>> p.template, p.states, p.answer
    ('sub_add', (7, 9), 9)
    """

    id: str
    question: str
    answer: int
    source: str
    split: str
    template: str
    states: tuple[int, ...] = ()

    @property
    def target(self) -> str:
        """The answer as the text an extracted answer must equal."""
        return str(self.answer)


# A template draws its numbers from ``rng`` and returns (template name, question, states).
Template = Callable[[random.Random, str, str, str], tuple[str, str, tuple[int, ...]]]

# The states of each template from its numbers in the order the question gives them.
_STATES: dict[str, Callable[..., tuple[int, ...]]] = {
    "add": lambda a, b: (a + b,), "sub": lambda a, b: (a - b,), "mul": lambda a, b: (a * b,),
    "add_mul": lambda a, b, c: (b * c, a + b * c), "sub_add": lambda a, b, c: (a - b, a - b + c),
    "mul_sub": lambda a, b, c: (a * b, a * b - c),
}


def _add(rng: random.Random, name: str, pron: str, obj: str) -> tuple[str, str, tuple[int, ...]]:
    a, b = rng.randint(2, 12), rng.randint(2, 9)
    q = f"{name} has {a} {obj}. {pron} gets {b} more {obj}. How many {obj} does {name} have now?"
    return "add", q, _STATES["add"](a, b)


def _sub(rng: random.Random, name: str, pron: str, obj: str) -> tuple[str, str, tuple[int, ...]]:
    b = rng.randint(2, 9)
    a = b + rng.randint(1, 9)  # a > b: the answer is never zero or negative
    q = f"{name} has {a} {obj}. {pron} gives {b} {obj} to a friend. How many {obj} does {name} have left?"
    return "sub", q, _STATES["sub"](a, b)


def _mul(rng: random.Random, name: str, pron: str, obj: str) -> tuple[str, str, tuple[int, ...]]:
    a, b = rng.randint(2, 5), rng.randint(2, 5)
    q = f"{name} has {a} bags with {b} {obj} in each bag. How many {obj} does {name} have?"
    return "mul", q, _STATES["mul"](a, b)


def _add_mul(rng: random.Random, name: str, pron: str, obj: str) -> tuple[str, str, tuple[int, ...]]:
    a, b, c = rng.randint(2, 9), rng.randint(2, 4), rng.randint(2, 5)
    q = f"{name} has {a} {obj}. {pron} buys {b} bags with {c} {obj} in each bag. How many {obj} does {name} have now?"
    return "add_mul", q, _STATES["add_mul"](a, b, c)


def _sub_add(rng: random.Random, name: str, pron: str, obj: str) -> tuple[str, str, tuple[int, ...]]:
    b = rng.randint(2, 9)
    a, c = b + rng.randint(1, 9), rng.randint(2, 9)
    q = (f"{name} has {a} {obj}. {pron} gives away {b} {obj} and then finds {c} more {obj}. "
         f"How many {obj} does {name} have now?")
    return "sub_add", q, _STATES["sub_add"](a, b, c)


def _mul_sub(rng: random.Random, name: str, pron: str, obj: str) -> tuple[str, str, tuple[int, ...]]:
    a, b = rng.randint(2, 5), rng.randint(2, 5)
    c = rng.randint(1, a * b - 1)
    q = (f"{name} buys {a} boxes with {b} {obj} in each box. {pron} gives {c} {obj} to a friend. "
         f"How many {obj} does {name} have left?")
    return "mul_sub", q, _STATES["mul_sub"](a, b, c)


_TEMPLATES: dict[str, tuple[Template, ...]] = {ONE_STEP: (_add, _sub, _mul), TWO_STEP: (_add_mul, _sub_add, _mul_sub)}

_W = r"[A-Za-z]+"
_N, _O = rf"\b(?P<n>{_W})", rf"(?P<o>{_W})"
_HOW = r"How many (?P=o) does (?P=n) have"
# each template's question with its numbers as groups a, b, c (the same text as the templates above write)
_QUESTIONS = {name: re.compile(text) for name, text in {
    "add": rf"{_N} has (?P<a>\d+) {_O}\. {_W} gets (?P<b>\d+) more (?P=o)\. {_HOW} now\?",
    "sub": rf"{_N} has (?P<a>\d+) {_O}\. {_W} gives (?P<b>\d+) (?P=o) to a friend\. {_HOW} left\?",
    "mul": rf"{_N} has (?P<a>\d+) bags with (?P<b>\d+) {_O} in each bag\. {_HOW}\?",
    "add_mul": rf"{_N} has (?P<a>\d+) {_O}\. {_W} buys (?P<b>\d+) bags with (?P<c>\d+) (?P=o) in each bag\. "
               rf"{_HOW} now\?",
    "sub_add": rf"{_N} has (?P<a>\d+) {_O}\. {_W} gives away (?P<b>\d+) (?P=o) and then finds (?P<c>\d+) more "
               rf"(?P=o)\. {_HOW} now\?",
    "mul_sub": rf"{_N} buys (?P<a>\d+) boxes with (?P<b>\d+) {_O} in each box\. {_W} gives (?P<c>\d+) (?P=o) to a "
               rf"friend\. {_HOW} left\?",
}.items()}


def known_states(text: str) -> tuple[int, ...] | None:
    """The states of the bundled problem that ``text`` asks (the last one in it, so a prompt rendered
    with a worked example before the question is read right); None when it asks none.

    >>> known_states("Ann has 5 apples. She buys 3 bags with 4 apples in each bag. How many apples does Ann have now?")
    (12, 17)
    >>> known_states("What is 2 + 2?") is None
    True
    """
    found = [(m.end(), name, m) for name, pattern in _QUESTIONS.items() for m in pattern.finditer(text)]
    if not found:
        return None
    _, name, m = max(found, key=lambda f: f[0])
    return _STATES[name](*(int(v) for k, v in sorted(m.groupdict().items()) if k in ("a", "b", "c")))


def make_problems(n: int, *, seed: int, sources: Sequence[str] = (ONE_STEP,)) -> list[Problem]:
    """``n`` problems; problem ``i`` comes from ``sources[i % len(sources)]``.

    >>> ps = make_problems(4, seed=1, sources=SOURCES)
    >>> [(p.source, p.split) for p in ps[:2]]
    [('arith/one_step', 'train'), ('arith/two_step', 'ood')]
    >>> all(p.answer > 0 for p in ps)
    True
    """
    if n < 0:
        raise ValueError(Words(f"make_problems: n={n} must be zero or a positive number of problems",
                               f"make_problems：n={n}，题目数应为 0 或正整数"))
    unknown = [s for s in sources if s not in _TEMPLATES]
    if unknown or not sources:
        raise ValueError(Words(f"make_problems: sources={list(sources)!r}; expected one or more of {list(SOURCES)}",
                               f"make_problems：sources={list(sources)!r}；应为 {list(SOURCES)} 中的一个或多个"))
    out = []
    for i in range(n):
        source = sources[i % len(sources)]
        rng = random.Random(f"{seed}/{source}/{i}")
        name, pron = rng.choice(_PEOPLE)
        template, question, states = rng.choice(_TEMPLATES[source])(rng, name, pron, rng.choice(_THINGS))
        out.append(Problem(f"{source}/{seed}/{i}", question, states[-1], source, SPLITS[source], template, states))
    return out
