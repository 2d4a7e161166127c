"""The alert policy: which findings become alerts, once each, as a pure function.

A finding's key is ``(run path, check id, metrics)``. The first ``warn`` or ``fail`` of a key
raises an alert, and so does an escalation ``warn -> fail``. A ``note`` (could be better, such
as a low MFU) never alerts: it is advice, read in ``diagnose`` and the dashboard, and a
key that falls from warn to note is cleared as if it were ``ok``. While the key stays at or below
the level already alerted nothing more is sent, however many steps pass. When the check
reports ``ok`` for the run (or no longer reports that key while still running), the key is
*cleared*; if it comes back after a cooldown (``seconds`` of wall time **and** ``steps`` of
training since it cleared) it is alerted again, sooner it is silently re-armed at its old
level. A ``skipped`` check says nothing and changes nothing, and neither does the silence of a
diagnosis of part of a run (``Observation.partial``: the watcher's tail pass).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from ..checks import STATUS_RANK, VERDICT_STATUSES, Status
from ..diagnosis import Finding
from ..render.diagnosis import STATUS_WORDS
from .causes import Told, by_cause

AlertKind = Literal["new", "escalated", "again"]
#: what alerts: the statuses a verdict is made of (never a note)
_ALERTING = VERDICT_STATUSES


@dataclass(frozen=True)
class Cooldown:
    """How long a cleared finding must stay away before it may alert again."""

    seconds: float = 600.0
    steps: int = 0


@dataclass(frozen=True)
class Observation:
    """One diagnosis of one run: its path, its last step, its findings. ``partial``: a diagnosis
    of part of the run only (the watcher's tail pass), whose findings may raise keys but whose
    silence clears none."""

    run: str
    step: int
    findings: Sequence[Finding]
    partial: bool = False
    #: the diagnosis's story by finding key: which root cause explains which finding (:func:`.causes.story_of`)
    story: Mapping[str, Told] = field(default_factory=dict)


@dataclass(frozen=True)
class KeyState:
    """What the policy remembers about one finding key."""

    run: str
    check: str
    metrics: tuple[str, ...]
    alerted: Status  # the highest level alerted in the current episode
    current: Status
    active: bool
    alerted_at: float
    alerted_step: int
    cleared_at: float | None = None
    cleared_step: int | None = None

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["metrics"] = list(self.metrics)
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> KeyState:
        return cls(**{**obj, "metrics": tuple(obj["metrics"])})


@dataclass(frozen=True)
class Alert:
    """A finding that appeared or escalated, ready for the sinks."""

    key: str
    kind: AlertKind
    run: str
    check: str
    layer: str
    status: Status
    previous: Status | None
    step: int
    at: float
    onset_step: int | None
    title: Mapping[str, str]
    message: Mapping[str, str]
    advice: Mapping[str, str]
    metrics: tuple[str, ...] = ()
    evidence: Mapping[str, Any] = field(default_factory=dict)
    #: the findings this root cause explains, in step order: ``{check, step, status, title, because}``
    consequences: tuple[Mapping[str, Any], ...] = ()

    @property
    def alert_id(self) -> str:
        """The same for this alert however often it is delivered (a redelivery after a restart, a command
        killed mid-call and run again), different for any other: a receiver deduplicates by it.

        Example:
            >>> a = Alert("k", "new", "run.log", "kl_spike", "L1", "fail", None, 40, 1.5, 38, {}, {}, {})
            >>> a.alert_id == Alert.from_json(a.to_json()).alert_id, len(a.alert_id)
            (True, 16)
        """
        said = json.dumps([self.run, self.key, self.kind, self.status, self.step, self.at], separators=(",", ":"))
        return hashlib.sha256(said.encode()).hexdigest()[:16]

    def payload(self) -> dict[str, Any]:
        """What a sink hands on (the JSONL line, a webhook's ``rlvitals`` object): the alert and its id."""
        return {"alert_id": self.alert_id, **self.to_json()}

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "kind": self.kind, "run": self.run, "check": self.check, "layer": self.layer,
                "status": self.status, "previous": self.previous, "step": self.step, "at": self.at,
                "onset_step": self.onset_step, "title": dict(self.title), "message": dict(self.message),
                "advice": dict(self.advice), "metrics": list(self.metrics), "evidence": dict(self.evidence),
                "consequences": [dict(c) for c in self.consequences]}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Alert:
        """The alert of :meth:`to_json`, or of a sink's :meth:`payload` (its ``alert_id`` is derived, not read)."""
        fields = {k: v for k, v in obj.items() if k != "alert_id"}
        return cls(**{**fields, "metrics": tuple(obj.get("metrics", ())), "evidence": obj.get("evidence", {}),
                      "consequences": tuple(obj.get("consequences", ()))})

    def headline(self, lang: str = "en") -> str:
        """``FAIL entropy_collapse since step 181, seen at step 190``: what, since when, when it was seen
        (``at step 190`` when the finding has no onset of its own or began there); in Chinese with the
        check's title: ``失败 · 熵坍缩（entropy_collapse）· 自第 181 步起，第 190 步时发现``."""
        onset = self.onset_step
        if lang == "zh":
            words = STATUS_WORDS["zh"]
            was = f"（之前是{words[self.previous]}）" if self.previous in words else ""
            what = {"new": "", "escalated": was, "again": "（再次出现）"}[self.kind]
            when = f"第 {self.step} 步" if onset is None or onset == self.step else \
                f"自第 {onset} 步起，第 {self.step} 步时发现"
            return f"{words[self.status]}{what} · {self.title.get('zh') or self.check}（{self.check}）· {when}"
        what = {"new": "", "escalated": f" (was {self.previous})", "again": " (again)"}[self.kind]
        when = f"at step {self.step}" if onset is None or onset == self.step else \
            f"since step {onset}, seen at step {self.step}"
        return f"{self.status.upper()}{what} {self.check} {when}"

    def text(self, lang: str = "en") -> str:
        """``FAIL entropy_collapse since step 181, seen at step 190 (run.log): <message>``, then a line per
        finding this root cause explains (``  then step 183: Low entropy with a high clip fraction — <why>``)."""
        lang = lang if lang in self.message else "en"
        if lang == "zh":
            head = f"{self.headline(lang)}（{self.run}）：{self.message.get(lang, '')}"
        else:
            head = f"{self.headline()} ({self.run}): {self.message.get(lang, '')}"
        return "\n".join([head, *self.followed(lang)])

    def followed(self, lang: str = "en") -> list[str]:
        """A line per finding this root cause explains, in step order (none for an alert without any)."""
        words = STATUS_WORDS.get(lang, STATUS_WORDS["en"])
        lines = []
        for c in self.consequences:
            title, why = c["title"].get(lang) or c["check"], c["because"].get(lang, "")
            if lang == "zh":
                lines.append(f"  随后 第 {c['step']} 步：{words[c['status']]} {title}" + (f"——{why}" if why else ""))
            else:
                lines.append(f"  then step {c['step']}: {words[c['status']]} {title}" + (f" — {why}" if why else ""))
        return lines


def combine(alerts: Sequence[Alert]) -> Alert:
    """Alerts of one check raised together (one per metric: a diversity collapse over distinct-n,
    edit distance and answer entropy) as one, for the sinks a person reads: the worst status, the
    metrics joined, each finding's message on its own line (with its status when they differ), the
    onset the earliest, each finding's key and evidence kept under ``evidence["alerts"]``. One alert
    is returned as it is.

    Example:
        >>> a = Alert("k1", "new", "run.log", "diversity_collapse", "L4", "fail", None, 40, 0.0, 31,
        ...           {"en": "Diversity collapse"}, {"en": "distinct_2 fell"}, {"en": "..."}, ("diversity/distinct_2",))
        >>> b = replace(a, key="k2", onset_step=28, message={"en": "distinct_3 fell"},
        ...             metrics=("diversity/distinct_3",))
        >>> c = combine([a, b])
        >>> c.metrics, c.onset_step, c.message["en"]
        (('diversity/distinct_2', 'diversity/distinct_3'), 28, '2 findings:\\n• distinct_2 fell\\n• distinct_3 fell')
    """
    if len(alerts) == 1:
        return alerts[0]
    worst = max(alerts, key=lambda a: STATUS_RANK[a.status])
    mixed = len({a.status for a in alerts}) > 1
    langs = dict.fromkeys(lang for a in alerts for lang in a.message)
    heads = {"zh": f"{len(alerts)} 项发现："}
    words = {lang: STATUS_WORDS.get(lang, STATUS_WORDS["en"]) for lang in langs}
    message = {lang: heads.get(lang, f"{len(alerts)} findings:") + "\n" + "\n".join(
        "• " + (f"{words[lang][a.status]} " if mixed else "") + (a.message.get(lang) or a.message.get("en", ""))
        for a in alerts) for lang in langs}
    onsets = [a.onset_step for a in alerts if a.onset_step is not None]
    return replace(worst, message=message, onset_step=min(onsets) if onsets else None,
                   metrics=tuple(dict.fromkeys(m for a in alerts for m in a.metrics)),
                   evidence={"alerts": [{"key": a.key, "status": a.status, "metrics": list(a.metrics), **a.evidence}
                                        for a in alerts]})


def grouped(items: Sequence[tuple[int, Alert]]) -> list[tuple[list[int], Alert]]:
    """``(alert id, alert)`` pairs grouped by what a person would read as one event (the same run,
    check, kind and step), each group as its ids and :func:`combine` of its alerts, in the order
    of their first alert."""
    groups: dict[tuple[str, str, str, int], list[tuple[int, Alert]]] = {}
    for alert_id, alert in items:
        groups.setdefault((alert.run, alert.check, alert.kind, alert.step), []).append((alert_id, alert))
    return [([i for i, _ in group], combine([a for _, a in group])) for group in groups.values()]


def finding_key(run: str, finding: Finding) -> str:
    """The identity of a finding across cycles.

    Example:
        >>> from rlvitals.diagnosis import Finding
        >>> finding_key("run.log", Finding("kl_spike", "L1", "warn", {}, {}, {}, ("actor/ppo_kl",)))
        '["run.log","kl_spike",["actor/ppo_kl"]]'
    """
    return json.dumps([run, finding.check, list(finding.metrics)], separators=(",", ":"))


def _alert(key: str, kind: AlertKind, obs: Observation, f: Finding, previous: Status | None, now: float) -> Alert:
    return Alert(key, kind, obs.run, f.check, f.layer, f.status, previous, obs.step, now, f.onset_step,
                 f.title, f.message, f.advice, f.metrics, f.evidence)


def _cooled(old: KeyState, obs: Observation, now: float, cooldown: Cooldown) -> bool:
    if old.cleared_at is None or old.cleared_step is None:
        return False
    return now - old.cleared_at >= cooldown.seconds and obs.step - old.cleared_step >= cooldown.steps


def _raise(old: KeyState | None, key: str, obs: Observation, f: Finding, now: float,
           cooldown: Cooldown) -> tuple[Alert | None, KeyState]:
    """The alert (if any) and the new state of a key that is at warn or fail now."""
    fresh = KeyState(obs.run, f.check, f.metrics, f.status, f.status, True, now, obs.step)
    if old is None:
        return _alert(key, "new", obs, f, None, now), fresh
    if not old.active:
        if _cooled(old, obs, now, cooldown):
            return _alert(key, "again", obs, f, None, now), fresh
        old = replace(old, active=True, cleared_at=None, cleared_step=None)  # flapping: re-armed quietly
    if STATUS_RANK[f.status] > STATUS_RANK[old.alerted]:
        state = replace(old, alerted=f.status, current=f.status, alerted_at=now, alerted_step=obs.step)
        return _alert(key, "escalated", obs, f, old.alerted, now), state
    return None, replace(old, current=f.status)


def decide(previous: Mapping[str, KeyState], observed: Iterable[Observation], now: float,
           cooldown: Cooldown | None = None) -> tuple[list[Alert], dict[str, KeyState]]:
    """The alerts the new observations raise, and the policy state after them.

    Example:
        >>> from rlvitals.diagnosis import Finding
        >>> f = Finding("kl_spike", "L1", "warn", {}, {"en": "KL spiked"}, {})
        >>> alerts, state = decide({}, [Observation("run.log", 40, [f])], now=0.0)
        >>> [a.kind for a in alerts], decide(state, [Observation("run.log", 41, [f])], now=1.0)[0]
        (['new'], [])
    """
    cooldown = cooldown or Cooldown()
    state = dict(previous)
    alerts: list[Alert] = []
    for obs in observed:
        seen: set[str] = set()
        reported: set[str] = set()  # checks that said something other than "skipped"
        mine: list[Alert] = []
        before = {k: s.alerted for k, s in state.items() if s.active}
        for f in obs.findings:
            if f.status != "skipped":
                reported.add(f.check)
            if f.status not in _ALERTING:
                continue
            key = finding_key(obs.run, f)
            seen.add(key)
            alert, state[key] = _raise(state.get(key), key, obs, f, now, cooldown)
            if alert is not None:
                mine.append(alert)
        alerts.extend(by_cause(mine, obs.story, before, _escalate_cause(state, obs, now)))
        if obs.partial:
            continue
        for key, old in list(state.items()):
            if old.run == obs.run and old.active and key not in seen and old.check in reported:
                state[key] = replace(old, active=False, current="ok", cleared_at=now, cleared_step=obs.step)
    return alerts, state


def _escalate_cause(state: dict[str, KeyState], obs: Observation, now: float) -> Any:
    """How :func:`.causes.by_cause` raises a root cause again: an escalation of its key to the status of the
    worse finding it now explains, its words still the cause's own (None when the root is not among the
    findings observed)."""
    def escalate(root: str, worse: Alert) -> Alert | None:
        f = next((f for f in obs.findings if finding_key(obs.run, f) == root), None)
        old = state.get(root)
        if f is None or old is None:
            return None
        state[root] = replace(old, alerted=worse.status, alerted_at=now, alerted_step=obs.step)
        return replace(_alert(root, "escalated", obs, f, old.alerted, now), status=worse.status)
    return escalate


def changed_keys(before: Mapping[str, KeyState], after: Mapping[str, KeyState]) -> dict[str, KeyState]:
    """The keys a decision changed: all a watcher may write, so that another one sharing the state
    file (its own logs, its own keys) is not overwritten with this one's stale copy of them.

    Example:
        >>> changed_keys({}, {})
        {}
    """
    return {k: v for k, v in after.items() if before.get(k) != v}
