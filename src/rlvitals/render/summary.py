"""What ``rlvitals inspect`` reports about a Run and what ``rlvitals rollouts`` reports about a rollout
analysis, as plain data (their ``--json`` schemas)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..run.run import Run

if TYPE_CHECKING:
    from ..rollout.analysis import RolloutAnalysis

#: how many skip reasons ``inspect`` shows
SHOWN_SKIPS = 5


def run_summary(run: Run) -> dict[str, Any]:
    """The stable ``inspect --json`` object for one run.

    Example:
        >>> from rlvitals import load  # doctest: +SKIP
        >>> run_summary(load("run.log")[0])["steps"]  # doctest: +SKIP
        1120
    """
    train = run.train_steps
    return {
        "path": run.path,
        "format": run.format,
        "framework": run.framework,
        "framework_era": run.framework_era,
        "algorithm": run.algorithm,
        "algorithm_family": run.family,
        "algorithm_label": run.algorithm_label,
        "algorithm_given": run.algorithm_given,
        "steps": int(len(train)),
        "first_step": int(train[0]) if len(train) else None,
        "last_step": run.last_step,
        "eval_only_steps": int((~run.train_mask).sum()),
        "metrics": run.metrics,
        "unmapped": run.unmapped,
        "validation": {src: [c for c in df.columns if c != "step"] for src, df in run.validation.items()},
        "text_keys": sorted(run.text),
        "summary": run.summary,
        "config_keys": len(run.config),
        "crash": run.crash.to_json() if run.crash is not None else None,
        "notes": run.notes,
        "skipped": {"count": run.skipped.count, "reasons": run.skipped.reasons[:SHOWN_SKIPS]},
        "files": run.files,
        "bytes": run.bytes_read,
    }


def rollout_log(analysis: RolloutAnalysis) -> dict[str, Any]:
    """What a rollout analysis could not use or compute: the reader's skip log (the count and the
    first reasons it kept, with ``file:line``), the families and keys not computed with what they
    need, and the readers' notes.

    Example:
        >>> import rlvitals
        >>> rollout_log(rlvitals.analyze_rollouts([{"prompt": "p", "response": "4", "score": 1.0}]))["skipped"]
        {'count': 0, 'reasons': []}
    """
    skips = analysis.rollouts.skips if analysis.rollouts is not None else None
    return {"skipped": {"count": skips.count if skips else 0, "reasons": list(skips.reasons) if skips else []},
            "not_computed": list(analysis.skipped), "notes": list(analysis.notes)}


def rollout_summary(analysis: RolloutAnalysis, path: str, ks: Sequence[int]) -> dict[str, Any]:
    """The stable ``rollouts --json`` object for one path (``docs/rollouts.md``): the steps, the
    overall row (``"step"`` null) and :func:`rollout_log`.

    Example:
        >>> import rlvitals
        >>> a = rlvitals.analyze_rollouts([{"prompt": "p", "response": r, "score": s}
        ...                                for r, s in (("4", 1.0), ("5", 0.0))], ks=(1,))
        >>> doc = rollout_summary(a, "mine.jsonl", (1,))
        >>> doc["steps"][0]["pass@k"], doc["overall"]["step"]
        ({'1': 0.5}, None)
    """
    from ..rollout.analysis import step_json

    rows = [step_json(r, ks) for r in analysis.steps.iter_rows(named=True)]
    return {"path": path, "steps": rows, "overall": step_json({**analysis.overall, "step": None}, ks),
            **rollout_log(analysis)}


def fold_notes(summaries: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[tuple[str, list[str]]]]:
    """The notes said in the same words of several runs (a key whose meaning changed across a framework's
    versions, in every log of that framework) taken out of each run's summary, to be said once: the summaries
    without them, and each such note with the paths of the runs it is about, in the order first met.

    Example:
        >>> runs = [{"path": p, "notes": ["'reward_std' read as the group std", f"{p}: 3 lines"]} for p in "ab"]
        >>> kept, shared = fold_notes(runs)
        >>> [s["notes"] for s in kept], shared
        ([['a: 3 lines'], ['b: 3 lines']], [("'reward_std' read as the group std", ['a', 'b'])])
    """
    where: dict[str, list[str]] = {}
    said: dict[str, str] = {}
    for summary in summaries:
        for note in dict.fromkeys(summary["notes"]):
            said.setdefault(str(note), note)
            where.setdefault(str(note), []).append(summary["path"])
    shared = {text for text, paths in where.items() if len(paths) > 1}
    kept = [{**s, "notes": [n for n in s["notes"] if str(n) not in shared]} for s in summaries]
    return kept, [(said[text], where[text]) for text in where if text in shared]
