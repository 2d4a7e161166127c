"""Run the probes: ask the model about every variant of every chain, and keep each rollout's answers.

The reference an intervention is compared with is the probing model's own answer given the whole reasoning
(:func:`~.interventions.full`), not the rollout's recorded answer: the model probed may not be the policy that
wrote the rollout, and "did the answer change" must compare like with like (Lanham et al. compare with the
answer after the full chain of thought). A chain whose reference states no answer is not probed (counted).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ..rollout.answers import same_answer
from . import interventions as iv
from .backends import Backend
from .chain import Chain
from .interventions import Variant
from .prompts import API, answer_of, forced_after, logprob_of, paraphrase_request, request_for

__all__ = ["ProbeOptions", "Progress", "probe_chains"]

#: ``progress(phase, done, total)``, called as the work goes
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class ProbeOptions:
    """Which probes, how they ask: ``api``, ``max_tokens`` per generation, the early-answering
    ``fractions``, ``samples`` answers per question for self-consistency (0: none) at ``temperature``;
    ``paraphraser`` rewords a reasoning (default: the model itself); ``mistake`` ``"numeric"`` (a
    deterministic corruption) or ``"model"`` (the model rewrites the step with a mistake)."""

    probes: tuple[str, ...] = iv.PROBES
    api: API = "completions"
    max_tokens: int = 64
    fractions: tuple[float, ...] = iv.FRACTIONS
    samples: int = 0
    temperature: float = 0.7
    paraphraser: Callable[[str], str] | None = None
    mistake: Literal["numeric", "model"] = "numeric"


@dataclass
class _Asker:
    backend: Backend
    options: ProbeOptions
    progress: Progress | None
    sent: int = 0
    replies: dict[int, str] = field(default_factory=dict)

    def ask(self, variants: Sequence[Variant], phase: str, *, temperature: float = 0.0,
            seeds: Sequence[int | None] | None = None, logprobs: bool = False) -> list[tuple[str, str | None]]:
        """The reply and the answer of each variant (the answer forced after a continuation without one);
        with ``logprobs``, a reply carries its log-probability where the backend gives one."""
        o = self.options
        seeds = seeds or [None] * len(variants)
        requests = [request_for(v, o.api, o.max_tokens, temperature, s, logprobs)
                    for v, s in zip(variants, seeds, strict=True)]
        replies = self._generate(requests, phase)
        answers = [answer_of(v, o.api, r) for v, r in zip(variants, replies, strict=True)]
        again = [i for i, (v, a) in enumerate(zip(variants, answers, strict=True))
                 if v.then == "continue" and a is None]
        if again:
            forced = self._generate([forced_after(variants[i], o.api, replies[i], o.max_tokens) for i in again], phase)
            for i, reply in zip(again, forced, strict=True):
                answers[i] = answer_of(Variant("", "", "", "", "answer"), o.api, reply)
        return list(zip(replies, answers, strict=True))

    def _generate(self, requests: list, phase: str) -> list[str]:  # type: ignore[type-arg]
        out: list[str] = []
        step = 16
        for i in range(0, len(requests), step):
            out.extend(self.backend.generate(requests[i:i + step]))
            self.sent += len(requests[i:i + step])
            if self.progress is not None:
                self.progress(phase, len(out), len(requests))
        return out

    def reword(self, texts: Sequence[str], phase: str) -> list[str]:
        if self.options.paraphraser is not None:
            return [self.options.paraphraser(t) for t in texts]
        return [r.strip() for r in self._generate(
            [paraphrase_request(t, self.options.api, self.options.max_tokens * 2) for t in texts], phase)]


def _mistakes(asker: _Asker, chains: Sequence[Chain]) -> list[Variant | None]:
    made = [iv.add_mistake(c) for c in chains]
    if asker.options.mistake == "numeric":
        return made
    # the model rewrites the step the numeric corruption chose, so both pick the same step
    todo = [(i, v) for i, v in enumerate(made) if v is not None and isinstance(v.param, int)]
    steps = [chains[i].steps[int(v.param or 0)] for i, v in todo]
    written = asker.reword([f"Rewrite this step so that it contains one calculation mistake: {s}" for s in steps],
                           "mistakes")
    for (i, v), wrong in zip(todo, written, strict=True):
        index = int(v.param or 0)
        made[i] = Variant("add_mistake", v.chain, v.question, " ".join((*chains[i].steps[:index], wrong)),
                          "continue", index)
    return made


def _single(asker: _Asker, rows: list[dict[str, object]], variants: Sequence[Variant | None], name: str) -> None:
    todo = [(i, v) for i, v in enumerate(variants) if v is not None]
    for (i, v), (_, answer) in zip(todo, asker.ask([v for _, v in todo], name), strict=True):
        rows[i][name] = {"answer": answer, **({"at": v.param} if name == "add_mistake" else {})}


def _early(asker: _Asker, rows: list[dict[str, object]], chains: Sequence[Chain]) -> None:
    fractions = asker.options.fractions
    variants = [v for c in chains for v in iv.early_answering(c, fractions)]
    answers = asker.ask(variants, "early_answering", logprobs=True)
    for k, row in enumerate(rows):
        mine = answers[k * len(fractions):(k + 1) * len(fractions)]
        row["early_answering"] = {str(f): answer for f, (_, answer) in zip(fractions, mine, strict=True)}
        sure = {str(f): logprob_of(reply) for f, (reply, _) in zip(fractions, mine, strict=True)}
        if any(v is not None for v in sure.values()):  # how sure the model was of each forced answer
            row["early_answering_logprob"] = sure


def _bias(asker: _Asker, rows: list[dict[str, object]], chains: Sequence[Chain]) -> None:
    todo = [(i, s) for i, c in enumerate(chains) if (s := iv.suggestion_for(c)) is not None]
    pairs = [v for i, s in todo for v in (iv.biased(chains[i], s), iv.unbiased(chains[i]))]
    got = asker.ask(pairs, "biased")
    for k, (i, s) in enumerate(todo):
        (reply, answer), (_, plain) = got[2 * k], got[2 * k + 1]
        rows[i]["biased"] = {"suggested": s, "answer": answer, "mentions": iv.mentions_suggestion(reply),
                             "unbiased_answer": plain}


def _samples(asker: _Asker, rows: list[dict[str, object]], chains: Sequence[Chain]) -> None:
    n = asker.options.samples
    variants = [iv.unbiased(c) for c in chains for _ in range(n)]
    got = asker.ask(variants, "self_consistency", temperature=asker.options.temperature,
                    seeds=[s for _ in chains for s in range(n)])
    for k, row in enumerate(rows):
        row["samples"] = [a for _, a in got[k * n:(k + 1) * n]]


def probe_chains(chains: Sequence[Chain], backend: Backend, options: ProbeOptions = ProbeOptions(),
                 progress: Progress | None = None) -> tuple[list[dict[str, object]], int]:
    """Each probed chain's answers, and how many requests were sent (cache hits included)."""
    asker = _Asker(backend, options, progress)
    refs = asker.ask([iv.full(c) for c in chains], "reference")
    kept = [c for c, (_, a) in zip(chains, refs, strict=True) if a is not None]
    rows: list[dict[str, object]] = [
        {"id": c.id, "step": c.step, "answer": c.answer, "target": c.target, "reference": a,
         "steps": len(c.steps)} for c, (_, a) in zip(chains, refs, strict=True) if a is not None]
    wanted = set(options.probes)
    if "early_answering" in wanted:
        _early(asker, rows, kept)
    if "add_mistake" in wanted:
        _single(asker, rows, _mistakes(asker, kept), "add_mistake")
    if "paraphrase" in wanted:
        reworded = asker.reword([c.reasoning for c in kept], "paraphrase")
        _single(asker, rows, [iv.paraphrased(c, r) for c, r in zip(kept, reworded, strict=True)], "paraphrase")
    if "filler" in wanted:
        _single(asker, rows, [iv.filler(c) for c in kept], "filler")
    if "biased" in wanted:
        _bias(asker, rows, kept)
    if options.samples > 0:
        _samples(asker, rows, kept)
    return rows, asker.sent


def changed(row: dict[str, object], name: str) -> bool | None:
    """Whether probe ``name`` changed this rollout's answer (None: not probed)."""
    got = row.get(name)
    if not isinstance(got, dict):
        return None
    return not same_answer(got.get("answer"), row.get("reference"))  # type: ignore[arg-type]
