"""Alerts by root cause: the findings a cause explains ride in its alert, later ones add nothing unless worse,
and a finding no cause explains alerts on its own; the webhooks and the terminal say what followed."""

from __future__ import annotations

from rlvitals.diagnosis import Finding
from rlvitals.live.alerts import Alert, KeyState, Observation, decide, key_of
from rlvitals.live.causes import Told
from rlvitals.watch.webhook import discord_body, slack_body

RUN = "run.log"


def _f(check: str, status: str, onset: int) -> Finding:
    return Finding(check, "L1", status, {"en": check.replace("_", " "), "zh": check}, {"en": f"{check} found",
                   "zh": f"{check} 发现"}, {"en": "do this", "zh": "这样做"}, (f"m/{check}",), onset)


LR, KL, ENT = _f("lr_schedule", "fail", 30), _f("kl_jump", "warn", 30), _f("entropy_collapse", "warn", 31)


def _told(f: Finding, root: Finding, step: int) -> dict[str, Told]:
    return {key_of(RUN, f): Told(key_of(RUN, root), step, f.status, dict(f.title),
                                      {"en": f"because of {root.check}", "zh": "因为"})}


def test_the_findings_a_cause_explains_ride_in_its_alert() -> None:
    story = {**_told(KL, LR, 30), **_told(ENT, LR, 31)}
    alerts, _ = decide({}, [Observation(RUN, 33, [LR, KL, ENT], story=story)], now=0.0)
    assert [a.check for a in alerts] == ["lr_schedule"]
    (a,) = alerts
    assert [c["check"] for c in a.consequences] == ["kl_jump", "entropy_collapse"]
    assert a.text().splitlines()[1:] == ["  then step 30: WARN kl jump — because of lr_schedule",
                                         "  then step 31: WARN entropy collapse — because of lr_schedule"]
    assert "随后 第 31 步：警告 entropy_collapse——因为" in a.text("zh")
    assert Alert.from_json(a.payload()).consequences == a.consequences


def test_a_later_consequence_adds_nothing_unless_it_is_worse() -> None:
    first, state = decide({}, [Observation(RUN, 33, [LR], story={})], now=0.0)
    assert [a.check for a in first] == ["lr_schedule"]
    later, state = decide(state, [Observation(RUN, 36, [LR, ENT], story=_told(ENT, LR, 31))], now=1.0)
    assert later == [], "the cause's alert already says as much"
    warn_root = _f("lr_schedule", "warn", 30)
    _, state = decide({}, [Observation(RUN, 33, [warn_root], story={})], now=0.0)
    worse = _f("grad_norm_vanishing", "fail", 31)
    (again,) = decide(state, [Observation(RUN, 36, [warn_root, worse], story=_told(worse, warn_root, 31))],
                      now=1.0)[0]
    assert (again.check, again.kind, again.status, again.previous) == ("lr_schedule", "escalated", "fail", "warn")
    assert [c["check"] for c in again.consequences] == ["grad_norm_vanishing"]
    # the fail is what followed, not the cause's own level: the alert says which
    assert again.evidence["own_status"] == "warn"
    assert again.evidence["escalated_by"] == {"check": "grad_norm_vanishing", "status": "fail"}
    assert again.headline() == ("FAIL (was warn, grad_norm_vanishing followed) lr_schedule since step 30, seen at "
                                "step 36")
    assert again.headline("zh").startswith("失败（之前是警告，随后出现 grad_norm_vanishing） · lr_schedule（")


def test_a_cause_said_again_tells_the_whole_chain_so_far() -> None:
    warn_root = _f("lr_schedule", "warn", 30)
    story = {**_told(KL, warn_root, 30), **_told(ENT, warn_root, 31)}
    (first,), state = decide({}, [Observation(RUN, 33, [warn_root, KL], story=_told(KL, warn_root, 30))], now=0.0)
    assert [c["check"] for c in first.consequences] == ["kl_jump"]
    # the entropy collapse follows at the cause's level: nothing is said, the warning already covers it
    later, state = decide(state, [Observation(RUN, 36, [warn_root, KL, ENT], story=story)], now=1.0)
    assert later == []
    # the cause now fails on its own: its update carries what followed since its warning (what rode under the
    # warning was said there), and a key alerted on its own before is carried under its cause once
    (again,), after = decide(state, [Observation(RUN, 40, [LR, KL, ENT], story=story)], now=2.0)
    assert (again.check, again.kind, again.status) == ("lr_schedule", "escalated", "fail")
    assert [c["check"] for c in again.consequences] == ["entropy_collapse"]
    assert after[key_of(RUN, ENT)].rode == after[key_of(RUN, KL)].rode == key_of(RUN, LR)
    assert KeyState.from_json(after[key_of(RUN, ENT)].to_json()) == after[key_of(RUN, ENT)]
    # a finding the story no longer puts under the cause is not carried: it is said on its own
    said, _ = decide(state, [Observation(RUN, 40, [LR, KL, ENT], story=_told(KL, warn_root, 30))], now=2.0)
    assert [(a.check, [c["check"] for c in a.consequences]) for a in said] == [
        ("lr_schedule", []), ("entropy_collapse", [])]
    # a finding alerted on its own before its cause: the cause's alert names it among what followed
    (alone,), state = decide({}, [Observation(RUN, 33, [KL], story={})], now=0.0)
    assert alone.check == "kl_jump"
    (cause,), _ = decide(state, [Observation(RUN, 36, [warn_root, KL], story=_told(KL, warn_root, 30))], now=1.0)
    assert (cause.check, [c["check"] for c in cause.consequences]) == ("lr_schedule", ["kl_jump"])


def test_what_followed_is_said_at_the_level_it_was_confirmed_at() -> None:
    """The diagnosis fails the reward 4 steps before the look, too recent a failure to be said as one
    (rlvitals.live.confirm: the observation holds it at warn); under its cause it is the warning it also is, not
    the diagnosis's FAIL (a live replay of the corpus's gpt-oss 2048-game run said "then step 35: FAIL" under a
    warning the run later took back)."""
    shape, reward = _f("kl_shape", "warn", 23), _f("reward_collapse", "warn", 35)
    story = {key_of(RUN, reward): Told(key_of(RUN, shape), 35, "fail", dict(reward.title), {"en": "after it"})}
    (a,), _ = decide({}, [Observation(RUN, 39, [shape, reward], story=story)], now=0.0)
    assert [(c["check"], c["status"]) for c in a.consequences] == [("reward_collapse", "warn")]
    assert a.text().splitlines()[1] == "  then step 35: WARN reward collapse — after it"


def test_a_finding_no_cause_explains_alerts_on_its_own() -> None:
    alone = _f("nan_inf", "fail", 50)
    alerts, _ = decide({}, [Observation(RUN, 60, [LR, alone], story={})], now=0.0)
    assert sorted(a.check for a in alerts) == ["lr_schedule", "nan_inf"]
    assert all(a.consequences == () for a in alerts)
    # a cause never alerted (only a note, or not among the findings): its consequence alerts itself
    note = _f("mfu_low", "note", 1)
    alerts, _ = decide({}, [Observation(RUN, 60, [note, ENT], story=_told(ENT, note, 31))], now=0.0)
    assert [a.check for a in alerts] == ["entropy_collapse"]


def test_the_webhooks_say_what_followed() -> None:
    (a,) = decide({}, [Observation(RUN, 33, [LR, KL], story=_told(KL, LR, 30))], now=0.0)[0]
    blocks = slack_body(a)["blocks"]
    assert blocks[0]["type"] == "header" and "What followed" in blocks[2]["text"]["text"]
    assert "then step 30: WARN kl jump" in blocks[2]["text"]["text"]
    fields = discord_body(a, "zh")["embeds"][0]["fields"]
    assert any(f["name"] == "随后发生" and "第 30 步" in f["value"] for f in fields)
