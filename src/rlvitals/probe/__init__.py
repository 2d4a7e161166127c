"""L6 faithfulness probes: does a correct answer come from its chain of thought, or despite it?

The face of the stage: :func:`run_probe` reads rollouts (:mod:`.source`), asks a model about interventions on
their reasoning (:mod:`.interventions`, :mod:`.runner`, through :mod:`.backends` or :mod:`.local`), verifies
their intermediate steps (:mod:`.steps`) and sums it all up (:mod:`.summary`), overall and per training step.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import orjson

from ..errors import ProbeError
from ..rollout import RolloutSet
from ..words import Words
from .backends import Backend, Cache, Cached, HttpBackend
from .chain import Chain, chain_of
from .interventions import FRACTIONS, PROBES
from .local import LocalBackend
from .prompts import FORCE, Request
from .runner import ProbeOptions, Progress, probe_chains
from .source import chains_of
from .steps import Arithmetic, Combined, KnownStates, States, StepCheck, Verifier, verification_summary
from .summary import per_step, summarise

__all__ = ["FORCE", "FRACTIONS", "PROBES", "Arithmetic", "Backend", "Cache", "Cached", "Chain", "Combined",
           "HttpBackend", "Request", "KnownStates", "LocalBackend", "ProbeOptions", "Progress", "States",
           "StepCheck", "Verifier", "chain_of", "VERIFIERS", "run_probe", "verifier_for", "write_steps"]


def _step_checks(chains: Sequence[Chain], verifier: Verifier) -> dict[int, float]:
    by_step: dict[int, list[Chain]] = {}
    for c in chains:
        if c.step is not None:
            by_step.setdefault(c.step, []).append(c)
    out: dict[int, float] = {}
    for step, mine in by_step.items():
        right = verification_summary(mine, verifier)["right"]
        if isinstance(right, float):
            out[step] = right
    return out


DEFAULT_OPTIONS = ProbeOptions()
ARITHMETIC = Arithmetic()
#: the step verifiers ``rlvitals probe --verify`` offers
VERIFIERS = ("arithmetic", "word-problems")


def verifier_for(choice: str, states: States) -> Verifier:
    """The verifier named ``choice`` (:data:`VERIFIERS`): ``arithmetic`` checks every ``a op b = c``;
    ``word-problems`` checks that and, in order, the results against the known states ``states`` of the
    bundled word problems (:func:`rlvitals.synthetic.word_problems.known_states`; the caller passes it, as
    the probes do not import the made-up data).

    >>> verifier_for("word-problems", {"q": (12, 17)})(chain_of("q", "3 * 4 = 12. The answer is 12."))
    ... # doctest: +NORMALIZE_WHITESPACE
    [StepCheck(step=0, text='3 * 4 = 12', right=True), StepCheck(step=0, text='state 1/2: 12 (known 12)', right=True)]
    """
    if choice not in VERIFIERS:
        raise ProbeError(Words(f"--verify {choice!r}: expected one of {', '.join(VERIFIERS)}",
                               f"--verify {choice!r}：应为 {', '.join(VERIFIERS)} 之一"))
    return ARITHMETIC if choice == "arithmetic" else Combined(ARITHMETIC, KnownStates(states))


def run_probe(source: str | Path | RolloutSet | Sequence[Chain], backend: Backend,
              options: ProbeOptions = DEFAULT_OPTIONS, *, max_rollouts: int | None = None,
              verifier: Verifier = ARITHMETIC, progress: Progress | None = None) -> dict[str, object]:
    """Probe the rollouts of ``source`` (a rollout path, a RolloutSet, or chains) with ``backend``; the
    result as ``rlvitals probe --json`` prints it."""
    if isinstance(source, (str, Path, RolloutSet)):
        chains, no_text = chains_of(source, max_rollouts)
    else:
        chains, no_text = list(source)[:max_rollouts], 0
    rows, sent = probe_chains(chains, backend, options, progress)
    checks = _step_checks(chains, verifier)
    steps = per_step(rows)
    for record in steps:
        step = record["step"]
        if isinstance(step, int) and step in checks:
            record["reasoning/step_verification"] = checks[step]
    return {"model": backend.model, "rollouts": len(rows), "requests": sent, "api": options.api,
            "not_probed": {"no_prompt_or_response": no_text, "no_reference_answer": len(chains) - len(rows)},
            **summarise(rows), "step_verification": verification_summary(chains, verifier), "steps": steps,
            "per_rollout": rows}


def write_steps(result: dict[str, object], path: Path) -> int:
    """The per-step records of ``result`` as JSONL at ``path`` (replaced whole: a re-run rewrites it); how
    many were written."""
    steps = result.get("steps")
    records = steps if isinstance(steps, list) else []
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(b"".join(orjson.dumps({"model": result["model"], **r}) + b"\n" for r in records))
        tmp.replace(path)
    except OSError as exc:
        raise ProbeError(Words(f"{path}: the probe results cannot be written ({exc.strerror or exc}); give --out",
                               f"{path}：无法写入探针结果（{exc.strerror or exc}）；请用 --out 指定位置")) from None
    return len(records)
