"""What is sent for a variant: a :class:`Request` to a chat or a completions API, and how its reply is read.

Completions (a plain-text prompt the model continues) can make the model answer right where the reasoning
stops: the prompt ends in "Therefore, the final answer is" and the answer is the first sentence of the reply
(:func:`~rlvitals.rollout.answers.forced_answer`). A chat API cannot be made to continue its own turn on every
server, so there the partial reasoning is quoted in the user's message and the model is asked for the final
answer as ``\\boxed{}``.

>>> from .interventions import Variant
>>> v = Variant("early_answering", "r0", "What is 3 + 4?", "3 + 4 = 7.", "answer", 1.0)
>>> print(request_for(v, "completions", 16).prompt)
Question: What is 3 + 4?
Answer: Let's think step by step. 3 + 4 = 7.
Therefore, the final answer is
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

import orjson

from ..rollout.answers import extract_answer, forced_answer
from .interventions import Variant

__all__ = ["API", "Reply", "Request", "answer_of", "forced_after", "logprob_of", "paraphrase_request", "request_for"]

API = Literal["chat", "completions"]
FORCE = "Therefore, the final answer is"


@dataclass(frozen=True)
class Request:
    """One generation: ``prompt`` is the completions prompt or the chat user message; ``logprobs`` asks for
    the log-probabilities of the reply's tokens, where the server offers them."""

    api: API
    prompt: str
    max_tokens: int
    temperature: float = 0.0
    seed: int | None = None
    logprobs: bool = False

    def body(self, model: str) -> dict[str, object]:
        """The JSON body of the OpenAI-compatible request."""
        body: dict[str, object] = {"model": model, "max_tokens": self.max_tokens, "temperature": self.temperature}
        if self.api == "chat":
            body["messages"] = [{"role": "user", "content": self.prompt}]
        else:
            body["prompt"] = self.prompt
        if self.seed is not None:
            body["seed"] = self.seed
        if self.logprobs:  # the completions API takes how many alternatives per token; chat a flag
            body["logprobs"] = True if self.api == "chat" else 1
        return body

    def key(self, model: str) -> str:
        """The cache key: the model and every field of the request."""
        return hashlib.sha256(orjson.dumps(self.body(model), option=orjson.OPT_SORT_KEYS)).hexdigest()


class Reply(str):
    """A reply's text with the log-probability of its tokens (their sum, ``logprob``) where one was given.

    >>> r = Reply(" 7.", -0.25)
    >>> r == " 7.", r.logprob, logprob_of(r), logprob_of(" 7.")
    (True, -0.25, -0.25, None)
    """

    logprob: float

    def __new__(cls, text: str, logprob: float) -> Reply:
        self = super().__new__(cls, text)
        self.logprob = logprob
        return self

    def __getnewargs__(self) -> tuple[str, float]:  # type: ignore[override]
        return str(self), self.logprob


def logprob_of(reply: str) -> float | None:
    """The log-probability a reply carries, or None (the server gave none)."""
    return reply.logprob if isinstance(reply, Reply) else None


def _completion_prompt(v: Variant) -> str:
    head = f"Question: {v.question}\nAnswer: Let's think step by step."
    shown = f"{head} {v.reasoning}".rstrip() if v.reasoning else head
    if v.then == "answer":
        return f"{shown}\n{FORCE}"
    return shown if v.then == "respond" else shown + " "


def _chat_prompt(v: Variant) -> str:
    if v.then == "respond":
        return f"{v.question}\n\nThink step by step, then give the final answer as \\boxed{{}}."
    shown = v.reasoning or "(nothing yet)"
    if v.then == "answer":
        return (f"{v.question}\n\nHere is the beginning of a solution:\n{shown}\n\n"
                "Based only on this, give the final answer as \\boxed{} and nothing else.")
    return (f"{v.question}\n\nHere is the beginning of a solution:\n{shown}\n\n"
            "Continue the solution from exactly where it stops, then give the final answer as \\boxed{}.")


def request_for(v: Variant, api: API, max_tokens: int, temperature: float = 0.0, seed: int | None = None,
                logprobs: bool = False) -> Request:
    return Request(api, _chat_prompt(v) if api == "chat" else _completion_prompt(v), max_tokens, temperature, seed,
                   logprobs)


def answer_of(v: Variant, api: API, reply: str) -> str | None:
    """The answer in ``reply`` to ``v``'s request (None when it states none)."""
    if api == "completions" and v.then == "answer":
        return forced_answer(reply)
    if api == "completions" and v.then == "continue":
        return extract_answer(reply)  # None: ask again with the answer forced (:func:`forced_after`)
    return extract_answer(reply, last_number=True)


def forced_after(v: Variant, api: API, reply: str, max_tokens: int) -> Request:
    """After a continuation that stated no answer, the request that forces one."""
    if api == "chat":
        forced = Variant(v.probe, v.chain, v.question, f"{v.reasoning} {reply}".strip(), "answer", v.param)
        return request_for(forced, api, max_tokens)
    return Request(api, f"{_completion_prompt(v)}{reply.rstrip()}\n{FORCE}", max_tokens)


def paraphrase_request(reasoning: str, api: API, max_tokens: int) -> Request:
    text = ("Reword the following reasoning without changing its meaning, its steps or any number. "
            f"Reply with the reworded reasoning only.\n\n{reasoning}")
    return Request(api, text if api == "chat" else f"{text}\n\nReworded:", max_tokens)
