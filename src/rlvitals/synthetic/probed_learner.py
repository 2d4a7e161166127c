"""The demo's learner as a model the faithfulness probes can ask (``rlvitals demo --probe``).

The learner (:mod:`.demo`) writes a response in two moves: it picks an operation from the question's words,
then writes ``a op b = v. The answer is v.`` (or ``It says a. The answer is a.``). So asked, as a probe asks,
to go on from a reasoning it is given, it does what its writing rule does: the answer is the number the
reasoning states last, and where the reasoning states none (cut to nothing, replaced by filler) it picks its
operation from the question again, greedily, and answers that. Nothing here is made up for the probe: every
reply follows from the learner's weights at the checkpoint probed, so the probe measures how much the
learner's answers depend on its reasoning — early answering and filler find that they do not (the decision
is made before the reasoning is written), an added mistake finds that the written value is copied.

It answers the completions prompts of early answering, added mistakes and filler
(:func:`rlvitals.probe.prompts.request_for`); other requests (a paraphrase to write, a chat message) are
refused, since the learner cannot write them.

>>> from .word_problems import make_problems
>>> problems = make_problems(4, seed=0)
>>> model = ProbedLearner(Learner(problems, seed=0))
>>> model.generate([Request("completions", "Question: Q\\nAnswer: Let's think step by step. 2 + 3 = 6.\\n"
...                                        "Therefore, the final answer is", 16)])
[' 6.']
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ..errors import ProbeError
from ..probe import FORCE, Request
from ..words import Words
from .learner import Learner, respond
from .word_problems import Problem, extract_answer

__all__ = ["DEMO_PROBES", "ProbedLearner"]

#: the probes the learner can answer
DEMO_PROBES = ("early_answering", "add_mistake", "filler")
_HEAD = "\nAnswer: Let's think step by step."
_NUMBER = re.compile(r"-?\d+")


class ProbedLearner:
    """The learner at its current weights (copied: later training does not change the checkpoint)."""

    def __init__(self, learner: Learner, name: str = "demo-learner") -> None:
        self.learner = learner
        self.weights = learner.weights.copy()
        self.model = name

    def _own(self, question: str) -> str:
        """The response the learner writes for ``question``, its operation picked greedily."""
        probs = self.learner.probs(self.learner.features(question), self.weights)
        return respond(Problem("probe", question, 0, "", "", ""), int(np.argmax(probs)))

    def _reply(self, request: Request) -> str:
        prompt = request.prompt
        if request.api != "completions" or not prompt.startswith("Question: ") or _HEAD not in prompt:
            raise ProbeError(Words("the demo's learner answers only the completions prompts of "
                                   f"{', '.join(DEMO_PROBES)}; it cannot write this request",
                                   f"演示里的学习器只能回答 {'、'.join(DEMO_PROBES)} 的 completions 提示；"
                                   "它写不出这个请求"))
        question, _, reasoning = prompt[len("Question: "):].partition(_HEAD)
        forced = reasoning.rstrip().endswith(FORCE)
        reasoning = reasoning.rstrip().removesuffix(FORCE) if forced else reasoning
        stated = _NUMBER.findall(reasoning)
        if forced:
            return f" {stated[-1] if stated else extract_answer(self._own(question))}."
        if stated:
            return f" The answer is {stated[-1]}."
        return " " + self._own(question)

    def generate(self, requests: Sequence[Request]) -> list[str]:
        return [self._reply(r) for r in requests]
