"""One probe of a rollout dump, whole: the chains probed through a backend, their steps verified, and the
result ``rlvitals probe --json`` prints, overall and per training step (:func:`run_probe`); its per-step
records written as JSONL (:func:`write_steps`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import orjson

from ..errors import ProbeError
from ..rollout import RolloutSet
from ..words import Words
from .backends import Backend
from .chain import Chain
from .runner import ProbeOptions, Progress, probe_chains
from .source import chains_of
from .steps import ARITHMETIC, Verifier, verification_summary
from .summary import per_step, summarise

__all__ = ["DEFAULT_OPTIONS", "run_probe", "write_steps"]

DEFAULT_OPTIONS = ProbeOptions()


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
