"""The tail pass: the sudden checks on the last steps of a long run, between its full diagnoses.

A full diagnosis of a 30,000-step run takes about half a second, and the watcher waits twice
its cost before the next one (``WatchOptions.diagnose_gap``), so a spike written just after a
diagnosis would wait two seconds or more for its alert. Between two full diagnoses, whenever a
log brought new steps, the watcher therefore also reads its last ``WatchOptions.tail_steps``
steps with the checks marked ``sudden`` in ``checks/*.toml`` only — spikes, jumps, NaN, clip
bursts, entropy collapse and surges, which those checks read against a window of recent steps,
so the last steps show them as the whole run does. That costs a tenth of a full diagnosis.

What a tail pass may change is one-sided, because it sees less than a full diagnosis does:

- it can only **raise**: its warn and fail findings are merged into the latest full diagnosis
  per alert key, the worse status winning; a key it reports ``ok``, as a note or not at all
  stays as the full diagnosis left it, and the alert policy is told not to clear anything
  (``Observation.partial``);
- a finding of a check the full diagnosis already reports at warn or fail under another key
  (``nan_inf`` names the metrics that went non-finite, and the last steps may hold fewer of
  them) is read as more of that finding, not as a new one;
- a key a full diagnosis cleared is raised again only on evidence after the step it was cleared
  at (the end of the finding's span): a tail finding the full diagnosis did not confirm is not
  raised again at every pass while it stays in the window;
- what it raised is held until the next full diagnosis of the run, which then decides alone:
  it confirms the finding (same key, so nothing is sent again unless it is worse) or clears it
  (and the policy's cooldown keeps a key that comes back soon quiet).

>>> tails = TailPass(2000)  # doctest: +SKIP
>>> shown = tails.read(run.tail(2000), full, keys)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from ..checks import STATUS_RANK, VERDICT_STATUSES, sudden_checks
from ..checks.config import DiagnoseConfig
from ..diagnosis import Diagnosis, Finding, assemble, diagnose
from ..live.alerts import KeyState, alert_key, finding_key
from ..run.run import Run

__all__ = ["TailPass", "merge", "raised"]

#: what a tail pass may raise: what alerts (a note never does)
_ALERTING = VERDICT_STATUSES
_SAID = {
    "en": " (seen in the last {n} steps, {first}–{last}, before the full diagnosis)",
    "zh": "（在最近 {n} 步（第 {first}–{last} 步）中发现，完整诊断随后进行）",
}


def _evidence_end(f: Finding) -> int | None:
    if f.span is not None:
        return f.span[1]
    return f.onset_step


def _marked(f: Finding, run: Run) -> Finding:
    """``f`` saying that it was read on the last steps only (in its words and its evidence)."""
    steps = run.steps
    first, last = (int(steps[0]), int(steps[-1])) if len(steps) else (0, 0)
    said = {lang: text + _SAID.get(lang, _SAID["en"]).format(n=len(steps), first=first, last=last)
            for lang, text in f.message.items()}
    return replace(f, message=said, evidence={**f.evidence, "tail_window": [first, last]})


def raised(full: Diagnosis, tail: Diagnosis, keys: Mapping[str, KeyState]) -> list[Finding]:
    """The findings of ``tail`` (the sudden checks on the last steps of ``full``'s run) that
    raise a key above what ``full`` says of it, given the alert policy's memory ``keys``.

    Example:
        >>> raised(full, diagnose(run.tail(2000), checks=sudden_checks()), {})  # doctest: +SKIP
        [Finding(check='kl_jump', ...)]
    """
    path = full.path
    held = {finding_key(path, f): f for f in full.findings}
    alerting = {f.check: f for f in sorted(full.findings, key=lambda f: STATUS_RANK[f.status])
                if f.status in _ALERTING}  # of each check, its worst finding
    out = []
    for f in tail.findings:
        if f.status not in _ALERTING:
            continue
        key = finding_key(path, f)
        if key not in held and f.check in alerting:
            f = replace(f, metrics=alerting[f.check].metrics)
            key = finding_key(path, f)
        known = held.get(key)
        if known is not None and STATUS_RANK[known.status] >= STATUS_RANK[f.status]:
            continue
        state = keys.get(alert_key(path, f.check))
        if state is not None and not state.active and state.cleared_step is not None:
            end = _evidence_end(f)
            if end is None or end <= state.cleared_step:
                continue  # the full diagnosis that cleared it had seen this already
        out.append(_marked(f, tail.run))
    return out


def merge(full: Diagnosis, findings: Mapping[str, Finding]) -> Diagnosis:
    """``full`` with ``findings`` (alert key -> finding) in place of its own of the same key.

    Example:
        >>> merge(full, {}) == full  # doctest: +SKIP
        True
    """
    kept = [f for f in full.findings if finding_key(full.path, f) not in findings]
    return assemble(full.run, [*kept, *findings.values()])


class TailPass:
    """The tail passes of one watcher: ``steps`` steps read, what they raised held per run until
    its next full diagnosis."""

    def __init__(self, steps: int, config: DiagnoseConfig | None = None) -> None:
        self.steps = steps
        self.config = config
        self.held: dict[str, dict[str, Finding]] = {}

    def reset(self, path: str) -> None:
        """A full diagnosis of ``path`` was made: it decides alone from now on."""
        self.held.pop(path, None)

    def read(self, tail: Run, full: Diagnosis, keys: Mapping[str, KeyState]) -> Diagnosis:
        """Diagnose ``tail`` (the last steps of ``full``'s run) with the sudden checks, hold what
        raises, and return ``full`` with everything held since it merged in."""
        found = diagnose(tail, self.config, sudden_checks())
        held = self.held.setdefault(full.path, {})
        for f in raised(full, found, keys):
            key = finding_key(full.path, f)
            before = held.get(key)
            if before is None or STATUS_RANK[f.status] >= STATUS_RANK[before.status]:
                held[key] = f
        return merge(full, held)
