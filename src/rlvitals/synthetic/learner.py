"""The demo's policy: a softmax over what to do with a word problem's two numbers, from the question's words.

:mod:`.demo` trains it by policy gradient and :mod:`.probed_learner` probes it; both take it from here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from .word_problems import Problem

__all__ = ["ACTIONS", "Learner", "respond"]

#: what the policy can do with the two numbers of a question
ACTIONS = ("add", "sub", "mul", "first", "second")
_WORD = re.compile(r"[a-z]+")
_INT = re.compile(r"\d+")


def respond(problem: Problem, action: int) -> str:
    """The answer text an action produces (scored by the exact-answer extractor).

    Example:
        >>> from rlvitals.synthetic.word_problems import extract_answer, make_problems
        >>> p = make_problems(1, seed=0)[0]
        >>> extract_answer(respond(p, ACTIONS.index(p.template))) == p.target
        True
    """
    a, b = (int(x) for x in _INT.findall(problem.question)[:2])
    name = ACTIONS[action]
    if name == "first":
        return f"It says {a}. The answer is {a}."
    if name == "second":
        return f"It says {b}. The answer is {b}."
    sign, value = {"add": ("+", a + b), "sub": ("-", a - b), "mul": ("*", a * b)}[name]
    return f"{a} {sign} {b} = {value}. The answer is {value}."


class Learner:
    """The policy: logits = sum of the weight rows of the question's words (plus a bias row)."""

    def __init__(self, problems: Sequence[Problem], seed: int) -> None:
        words = sorted({w for p in problems for w in _WORD.findall(p.question.lower())})
        self.vocab = {w: i + 1 for i, w in enumerate(words)}  # 0 is the bias
        self.weights = np.zeros((len(self.vocab) + 1, len(ACTIONS)))
        self.rng = np.random.default_rng(seed)

    def features(self, question: str) -> np.ndarray:
        ids = {self.vocab[w] for w in _WORD.findall(question.lower()) if w in self.vocab}
        return np.array([0, *sorted(ids)], dtype=np.int64)

    def probs(self, feats: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        logits = (self.weights if weights is None else weights)[feats].sum(axis=0)
        z = np.exp(logits - logits.max())
        out: np.ndarray = z / z.sum()
        return out
