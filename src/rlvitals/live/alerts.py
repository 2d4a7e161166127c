"""The alert policy: which findings become alerts, once each, as a pure function.

An alert's identity (its key) is ``(run path, check id)``: one fault of a run, whatever metrics it
is read on — a reward collapse that later shows on a third metric is the same alert, updated, not a
new one. The findings of one check in one diagnosis are read as one (:func:`one_per_check`: the
worst status, the earliest onset, every metric). The first ``warn`` or ``fail`` of a key raises an
alert, and so does an escalation ``warn -> fail``. A ``note`` (could be better, such as a low MFU)
never alerts: it is advice, read in ``diagnose`` and the dashboard, and a key that falls from warn
to note is cleared as if it were ``ok``. While the key stays at or below the level already alerted
nothing more is sent, however many steps pass.

When the check reports ``ok`` for the run (or reports nothing at warn or fail while still running),
the key is *cleared*. Once it has stayed away for the cooldown (``seconds`` of wall time **and**
``steps`` of training since it cleared) one ``cleared`` alert says so on every sink — only for a
key whose alert was sent (a finding that rode under its root cause's alert is withdrawn with it);
if it comes back after that, it is alerted ``again``. A key that comes back sooner never went
away: it is silently re-armed at its old level, and nothing was said of it. A ``skipped`` check says
nothing and changes nothing, and neither does the silence of a diagnosis of part of a run
(``Observation.partial``: the watcher's tail pass) nor of a run whose findings are held
(``Observation.held``: its steps are an estimate a later look may change).
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
from .causes import Standing, Told, by_cause

AlertKind = Literal["new", "escalated", "again", "cleared"]
#: what alerts: the statuses a verdict is made of (never a note)
_ALERTING = VERDICT_STATUSES


@dataclass(frozen=True)
class Cooldown:
    """How long a cleared finding must stay away before it is said cleared (and may alert again)."""

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
    #: the run's findings are held, neither raised nor cleared: its steps are an estimate that a later look
    #: may change (a TRL console whose buffered progress bar ran ahead of its metric dicts)
    held: bool = False
    #: the run's steps are an estimate (stable enough to alert on): its alerts say so
    estimated: bool = False
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
    #: whether this key's own alert was sent (False: it rode under its root cause's alert)
    told: bool = True
    #: whether its clearing was said (a ``cleared`` alert went out)
    said_cleared: bool = False
    #: the onset the finding was alerted with, and its title, for the ``cleared`` alert
    onset: int | None = None
    title: Mapping[str, str] = field(default_factory=dict)
    layer: str = ""
    #: the key of the root cause under whose alert it was last said as what followed ("": never)
    rode: str = ""

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["metrics"], out["title"] = list(self.metrics), dict(self.title)
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
        if self.kind == "cleared":
            return self._cleared_headline(lang)
        if lang == "zh":
            words = STATUS_WORDS["zh"]
            by = self.evidence.get("escalated_by")
            was = f"（之前是{words[self.previous]}" + (f"，随后出现 {by['check']}" if by else "") + "）" \
                if self.previous in words else ""
            what = {"new": "", "escalated": was, "again": "（再次出现）"}[self.kind]
            when = f"第 {self.step} 步" if onset is None or onset == self.step else \
                f"自第 {onset} 步起，第 {self.step} 步时发现"
            return f"{words[self.status]}{what} · {self.title.get('zh') or self.check}（{self.check}）· {when}"
        by = self.evidence.get("escalated_by")
        was = f" (was {self.previous}" + (f", {by['check']} followed" if by else "") + ")"
        what = {"new": "", "escalated": was, "again": " (again)"}[self.kind]
        when = f"at step {self.step}" if onset is None or onset == self.step else \
            f"since step {onset}, seen at step {self.step}"
        return f"{self.status.upper()}{what} {self.check} {when}"

    def _cleared_headline(self, lang: str) -> str:
        """``CLEARED entropy_collapse (was FAIL since step 181): no longer holds at step 240``."""
        previous = self.previous or "warn"
        if lang == "zh":
            since = f"自第 {self.onset_step} 步起" if self.onset_step is not None else ""
            return (f"已解除 · {self.title.get('zh') or self.check}（{self.check}）· 之前{since}为"
                    f"{STATUS_WORDS['zh'][previous]}，第 {self.step} 步时已不再成立")
        since = f" since step {self.onset_step}" if self.onset_step is not None else ""
        return f"CLEARED {self.check} (was {previous.upper()}{since}): no longer holds at step {self.step}"

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


def _joined(items: Sequence[tuple[Status, Mapping[str, str]]]) -> dict[str, str]:
    """Several findings' messages as one: ``N findings:`` then one line each (with its status when they
    differ), in every language any of them has."""
    mixed = len({status for status, _ in items}) > 1
    langs = dict.fromkeys(lang for _, message in items for lang in message)
    heads = {"zh": f"{len(items)} 项发现："}
    words = {lang: STATUS_WORDS.get(lang, STATUS_WORDS["en"]) for lang in langs}
    return {lang: heads.get(lang, f"{len(items)} findings:") + "\n" + "\n".join(
        "• " + (f"{words[lang][status]} " if mixed else "") + (message.get(lang) or message.get("en", ""))
        for status, message in items) for lang in langs}


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
    onsets = [a.onset_step for a in alerts if a.onset_step is not None]
    return replace(worst, message=_joined([(a.status, a.message) for a in alerts]),
                   onset_step=min(onsets) if onsets else None,
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
    """The identity of one finding across cycles (a check read on one set of metrics): what the tail pass
    merges by. An alert's identity is coarser: :func:`alert_key`.

    Example:
        >>> from rlvitals.diagnosis import Finding
        >>> finding_key("run.log", Finding("kl_spike", "L1", "warn", {}, {}, {}, ("actor/ppo_kl",)))
        '["run.log","kl_spike",["actor/ppo_kl"]]'
    """
    return json.dumps([run, finding.check, list(finding.metrics)], separators=(",", ":"))


def alert_key(run: str, check: str) -> str:
    """The identity of an alert across cycles: one fault of one run, whatever metrics it is read on.

    Example:
        >>> alert_key("run.log", "kl_spike")
        '["run.log","kl_spike"]'
    """
    return json.dumps([run, check], separators=(",", ":"))


def key_of(run: str, finding: Finding) -> str:
    """:func:`alert_key` of a finding: how :func:`.causes.story_of` keys the story the policy reads."""
    return alert_key(run, finding.check)


def one_per_check(findings: Iterable[Finding]) -> list[Finding]:
    """The warn and fail findings, one per check, as the policy reads them: a check's worst finding with
    every metric of its findings, their earliest onset and their messages one per line.

    Example:
        >>> from rlvitals.diagnosis import Finding
        >>> a = Finding("nan_inf", "L1", "fail", {}, {"en": "loss is NaN"}, {}, ("actor/loss",), onset_step=9)
        >>> b = Finding("nan_inf", "L1", "warn", {}, {"en": "kl is inf"}, {}, ("actor/kl",), onset_step=7)
        >>> (f,) = one_per_check([a, b])
        >>> f.status, f.metrics, f.onset_step
        ('fail', ('actor/loss', 'actor/kl'), 7)
    """
    by_check: dict[str, list[Finding]] = {}
    for f in findings:
        if f.status in _ALERTING:
            by_check.setdefault(f.check, []).append(f)
    out = []
    for group in by_check.values():
        if len(group) == 1:
            out.append(group[0])
            continue
        worst = max(group, key=lambda f: STATUS_RANK[f.status])
        onsets = [f.onset_step for f in group if f.onset_step is not None]
        out.append(replace(worst, metrics=tuple(dict.fromkeys(m for f in group for m in f.metrics)),
                           onset_step=min(onsets) if onsets else None,
                           message=_joined([(f.status, f.message) for f in group]),
                           evidence={**worst.evidence, "findings": [
                               {"status": f.status, "metrics": list(f.metrics), "onset_step": f.onset_step}
                               for f in group]}))
    return out


_ESTIMATED = {"en": " (steps estimated: the log's progress bar ran ahead of its metric dicts)",
              "zh": "（步数为估计：日志的进度条跑在了指标 dict 前面）"}


def _alert(key: str, kind: AlertKind, obs: Observation, f: Finding, previous: Status | None, now: float) -> Alert:
    message, evidence = f.message, f.evidence
    if obs.estimated:
        message = {lang: text + _ESTIMATED.get(lang, _ESTIMATED["en"]) for lang, text in message.items()}
        evidence = {**evidence, "steps_estimated": True}
    return Alert(key, kind, obs.run, f.check, f.layer, f.status, previous, obs.step, now, f.onset_step,
                 f.title, message, f.advice, f.metrics, evidence)


def _cooled(old: KeyState, step: int, now: float, cooldown: Cooldown) -> bool:
    if old.cleared_at is None or old.cleared_step is None:
        return False
    return now - old.cleared_at >= cooldown.seconds and step - old.cleared_step >= cooldown.steps


def _raise(old: KeyState | None, key: str, obs: Observation, f: Finding, now: float,
           cooldown: Cooldown) -> tuple[Alert | None, KeyState]:
    """The alert (if any) and the new state of a key that is at warn or fail now."""
    fresh = KeyState(obs.run, f.check, f.metrics, f.status, f.status, True, now, obs.step, told=False,
                     onset=f.onset_step, title=dict(f.title), layer=f.layer)
    if old is None:
        return _alert(key, "new", obs, f, None, now), fresh
    if not old.active:
        if old.said_cleared or _cooled(old, obs.step, now, cooldown):
            return _alert(key, "again", obs, f, None, now), fresh
        old = replace(old, active=True, cleared_at=None, cleared_step=None)  # flapping: re-armed quietly
    metrics = tuple(dict.fromkeys((*old.metrics, *f.metrics)))
    if STATUS_RANK[f.status] > STATUS_RANK[old.alerted]:
        state = replace(old, alerted=f.status, current=f.status, alerted_at=now, alerted_step=obs.step,
                        metrics=metrics, title=dict(f.title))
        return _alert(key, "escalated", obs, f, old.alerted, now), state
    return None, replace(old, current=f.status, metrics=metrics)


def decide(previous: Mapping[str, KeyState], observed: Iterable[Observation], now: float,
           cooldown: Cooldown | None = None, quiet: Mapping[str, int] | None = None) -> tuple[list[Alert],
                                                                                          dict[str, KeyState]]:
    """The alerts the new observations raise (and the ``cleared`` alerts now due), and the policy state
    after them. ``quiet``: runs not observed this time, with their last step, whose cleared keys may
    have stayed away long enough by now to be said cleared.

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
    settled = dict(quiet or {})
    for obs in observed:
        if obs.held:
            continue
        reps = one_per_check(obs.findings)
        seen = {alert_key(obs.run, f.check) for f in reps}
        reported = {f.check for f in obs.findings if f.status != "skipped"}  # the checks that judged
        before = {k: s.alerted for k, s in state.items() if s.active and s.told}  # alerts that still stand
        mine = []
        for f in reps:
            key = alert_key(obs.run, f.check)
            old = state.get(key)
            alert, state[key] = _raise(old, key, obs, f, now, cooldown)
            if alert is None and old is not None and old.active and not old.told and _orphan(obs, key, before):
                alert = _alert(key, "new", obs, f, None, now)  # its cause's alert no longer covers it
            if alert is not None:
                mine.append(alert)
        said = by_cause(mine, obs.story, before, _escalate_cause(state, obs, reps, now), _standing(state, obs, reps))
        for a in said:
            state[a.key] = replace(state[a.key], told=True)
            for c in a.consequences:  # said under this cause: a later alert of it says only what followed since
                if (k := alert_key(obs.run, c["check"])) in state:
                    state[k] = replace(state[k], rode=a.key)
        alerts.extend(said)
        if obs.partial:
            continue
        for key, old in list(state.items()):
            if old.run == obs.run and old.active and key not in seen and old.check in reported:
                state[key] = replace(old, active=False, current="ok", cleared_at=now, cleared_step=obs.step)
        settled[obs.run] = obs.step
    return alerts + settle(state, now, cooldown, settled), state


def _standing(state: Mapping[str, KeyState], obs: Observation, reps: Sequence[Finding]) -> list[Standing]:
    """The findings of ``obs`` a root cause's alert said now may carry as what followed (:func:`.causes.by_cause`):
    those not said under that cause's alert already."""
    out = []
    for f in reps:
        key, told = key_of(obs.run, f), obs.story.get(key_of(obs.run, f))
        if told is not None and (key not in state or state[key].rode != told.root):
            out.append(Standing(key, f.check, f.status))
    return out


def _orphan(obs: Observation, key: str, standing: Mapping[str, Status]) -> bool:
    """Whether a finding that rode under its root cause's alert is left uncovered: the story no longer names
    a cause for it whose alert still stands."""
    told = obs.story.get(key)
    return told is None or told.root == key or told.root not in standing


def settle(state: dict[str, KeyState], now: float, cooldown: Cooldown, steps: Mapping[str, int]) -> list[Alert]:
    """The ``cleared`` alerts due now for the runs of ``steps`` (run -> its last step), marking them said in
    ``state``: keys whose alert was sent, cleared and away for the cooldown, not said cleared yet.

    Example:
        >>> from rlvitals.diagnosis import Finding
        >>> f = Finding("kl_spike", "L1", "warn", {"en": "KL spike"}, {"en": "KL spiked"}, {})
        >>> _, state = decide({}, [Observation("run.log", 40, [f])], now=0.0)
        >>> _, state = decide(state, [Observation("run.log", 41, [replace(f, status="ok")])], now=1.0)
        >>> [a.headline() for a in settle(state, 700.0, Cooldown(), {"run.log": 60})]
        ['CLEARED kl_spike (was WARN): no longer holds at step 60']
    """
    out = []
    for key, old in list(state.items()):
        step = steps.get(old.run)
        if (step is None or old.active or not old.told or old.said_cleared or old.cleared_step is None
                or not _cooled(old, step, now, cooldown)):
            continue
        state[key] = replace(old, said_cleared=True)
        out.append(_cleared(key, old, step, now))
    return out


def _cleared(key: str, old: KeyState, step: int, now: float) -> Alert:
    """The alert that withdraws ``old``'s: the finding no longer holds."""
    title = {lang: old.title.get(lang) or old.check for lang in ("en", "zh")}
    words = STATUS_WORDS["zh"]
    message = {"en": f"{title['en']}: alerted {old.alerted.upper()} at step {old.alerted_step}; "
                     f"not seen since step {old.cleared_step}",
               "zh": f"{title['zh']}：第 {old.alerted_step} 步告警为{words[old.alerted]}；"
                     f"自第 {old.cleared_step} 步起不再出现"}
    return Alert(key, "cleared", old.run, old.check, old.layer, "ok", old.alerted, step, now, old.onset,
                 title, message, {}, old.metrics)


def _escalate_cause(state: dict[str, KeyState], obs: Observation, reps: Sequence[Finding], now: float) -> Any:
    """How :func:`.causes.by_cause` raises a root cause again: an escalation of its key to the status of the
    worse finding it now explains, its words still the cause's own (None when the root is not among the
    findings observed). Its evidence says so: ``escalated_by`` (that finding's check and status) and
    ``own_status`` (the cause's own, which is lower)."""
    def escalate(root: str, worse: Alert) -> Alert | None:
        f = next((f for f in reps if key_of(obs.run, f) == root), None)
        old = state.get(root)
        if f is None or old is None:
            return None
        state[root] = replace(old, alerted=worse.status, alerted_at=now, alerted_step=obs.step)
        alert = _alert(root, "escalated", obs, f, old.alerted, now)
        by = {"check": worse.check, "status": worse.status}
        return replace(alert, status=worse.status,
                       evidence={**alert.evidence, "own_status": f.status, "escalated_by": by})
    return escalate


def changed_keys(before: Mapping[str, KeyState], after: Mapping[str, KeyState]) -> dict[str, KeyState]:
    """The keys a decision changed: all a watcher may write, so that another one sharing the state
    file (its own logs, its own keys) is not overwritten with this one's stale copy of them.

    Example:
        >>> changed_keys({}, {})
        {}
    """
    return {k: v for k, v in after.items() if before.get(k) != v}


def upgraded(keys: Mapping[str, KeyState]) -> dict[str, KeyState]:
    """Policy state written by an older watcher, whose keys also named the metrics, keyed by
    :func:`alert_key`: of the keys of one run and check, the active one alerted highest is kept. A key
    cleared under the old rules was cleared silently: it is not said cleared now.

    Example:
        >>> old = KeyState("run.log", "kl_spike", ("actor/kl",), "warn", "warn", True, 0.0, 4)
        >>> list(upgraded({'["run.log","kl_spike",["actor/kl"]]': old}))
        ['["run.log","kl_spike"]']
    """
    out: dict[str, KeyState] = {}
    for key, s in keys.items():
        new = alert_key(s.run, s.check)
        if key == new:
            out[new] = s
            continue
        s = s if s.active else replace(s, said_cleared=True)
        kept = out.get(new)
        if kept is None or (s.active, STATUS_RANK[s.alerted]) > (kept.active, STATUS_RANK[kept.alerted]):
            out[new] = s
    return out
