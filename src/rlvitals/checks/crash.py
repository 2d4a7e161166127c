"""L1: did the run die? The log ends in a traceback (``fail`` — crashed; docs/reading-rules.md#run-crashed).

The readers find the exception (:mod:`rlvitals.ingest._crash`): a traceback the training went on after (a
record, or its progress bar moving on, after it) is no crash, and the last step is the last one any line
of the log shows finished (docs/formats/consoles.md). This check says it with the last
step reached and the fix its kind points to: out of memory (GPU, TPU HBM, host), a signal
(Ctrl-C, a closed terminal's SIGHUP, a scheduler's SIGTERM), a worker process that died, a failed
import (the environment, not the training), or another exception (read it where it was raised).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._base import CheckFn, Outcome, RunView

#: an exception message is cut to this many characters in the finding's words (the evidence keeps it whole)
MESSAGE_CHARS = 200


def _cut(text: str) -> str:
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 1].rstrip() + "…"


def run_crashed(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """A ``fail`` when the log ends in an exception (``warn`` when the training had printed its end
    before it); ``ok`` when a console log ends without one; nothing (skipped) for a format that
    carries no console output."""
    run = view.run
    crash = run.crash
    if crash is None:
        if not run.crash_scanned:
            return []
        return [Outcome("ok", "ok", {"last": run.last_step if run.last_step is not None else 0})]
    # the log's own words: "torch.OutOfMemoryError: CUDA out of memory. …", or the bare name
    raised = f"{crash.exception}: {_cut(crash.message)}" if crash.message else crash.exception
    values = {"raised": raised, "exception": crash.exception, "where": crash.where,
              "origin": crash.origin or "?", "step": crash.last_step}
    onset = crash.last_step if crash.last_step is not None else 0
    evidence = crash.to_json()
    if crash.after_end:
        return [Outcome("warn", "after_end", values, onset_step=onset, evidence=evidence)]
    when = "" if crash.last_step is not None else "_start"
    return [Outcome("fail", f"{crash.kind}{when}", values, onset_step=onset, evidence=evidence)]


FUNCTIONS: dict[str, CheckFn] = {"run_crashed": run_crashed}
