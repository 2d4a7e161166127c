"""What ``rlvitals inspect`` reports about a Run, as plain data (the ``--json`` schema)."""

from __future__ import annotations

from typing import Any

from .run import Run

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
        "steps": int(len(train)),
        "first_step": int(train[0]) if len(train) else None,
        "last_step": int(train[-1]) if len(train) else None,
        "eval_only_steps": int((~run.train_mask).sum()),
        "metrics": run.metrics,
        "unmapped": run.unmapped,
        "validation": {src: [c for c in df.columns if c != "step"] for src, df in run.validation.items()},
        "text_keys": sorted(run.text),
        "summary": run.summary,
        "config_keys": len(run.config),
        "notes": run.notes,
        "skipped": {"count": run.skipped.count, "reasons": run.skipped.reasons[:SHOWN_SKIPS]},
        "files": run.files,
        "bytes": run.bytes_read,
    }
